//! Stored API keys: `$CODECODER_HOME/credentials.toml`, mode `0600`, written by
//! `codecoder login --provider ID`. The environment variable of a provider wins over a stored
//! key. Invariant: keys are never printed, logged or put into events; this module only reads and
//! writes the file.

use std::io::Write;
use std::path::Path;

use toml::{Table, Value};

use crate::error::Result;

/// The file name under `$CODECODER_HOME`.
pub const CREDENTIALS_FILE: &str = "credentials.toml";

/// The stored key of `provider`, if any.
pub fn load_credential(home: &Path, provider: &str) -> Option<String> {
    let text = fs_err::read_to_string(home.join(CREDENTIALS_FILE)).ok()?;
    let table: Table = toml::from_str(&text).ok()?;
    table.get("providers")?.get(provider)?.get("api_key")?.as_str().map(str::to_owned)
}

/// Stores `key` for `provider`, creating the file with mode `0600`.
pub fn store_credential(home: &Path, provider: &str, key: &str) -> Result<()> {
    let path = home.join(CREDENTIALS_FILE);
    let mut table: Table = fs_err::read_to_string(&path)
        .ok()
        .and_then(|text| toml::from_str(&text).ok())
        .unwrap_or_default();
    let providers = table.entry("providers").or_insert_with(|| Value::Table(Table::new()));
    if let Value::Table(providers) = providers {
        let mut entry = Table::new();
        entry.insert("api_key".to_owned(), Value::String(key.to_owned()));
        providers.insert(provider.to_owned(), Value::Table(entry));
    }
    fs_err::create_dir_all(home)?;
    let tmp = home.join(format!(".{CREDENTIALS_FILE}.tmp"));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = options
        .open(&tmp)
        .map_err(|e| std::io::Error::new(e.kind(), format!("creating {}: {e}", tmp.display())))?;
    let mut file = fs_err::File::from_parts(file, &tmp);
    file.write_all(toml::to_string(&table).unwrap_or_default().as_bytes())?;
    file.sync_all()?;
    drop(file);
    fs_err::rename(&tmp, &path)?;
    Ok(())
}
