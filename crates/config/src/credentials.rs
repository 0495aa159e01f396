//! Stored API keys: `$CODECODER_HOME/credentials.toml`, mode `0600`, written by
//! `codecoder login --provider ID`. The environment variable of a provider wins over a stored
//! key. Invariant: keys are never printed, logged or put into events; this module only reads and
//! writes the file.

use std::path::Path;

use toml::{Table, Value};

use crate::HomeFile;
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
///
/// # Errors
/// When the file is not valid TOML (nothing is written then: the keys it holds would be
/// lost), or cannot be read or written.
pub fn store_credential(home: &Path, provider: &str, key: &str) -> Result<()> {
    let file = HomeFile::lock(&home.join(CREDENTIALS_FILE))?;
    let text = file.read()?;
    let mut table: Table =
        toml::from_str(&text).map_err(|err| crate::Error::toml(file.path(), &text, &err))?;
    let providers = table.entry("providers").or_insert_with(|| Value::Table(Table::new()));
    if let Value::Table(providers) = providers {
        let mut entry = Table::new();
        entry.insert("api_key".to_owned(), Value::String(key.to_owned()));
        providers.insert(provider.to_owned(), Value::Table(entry));
    }
    file.write_private(&toml::to_string(&table).map_err(std::io::Error::other)?)?;
    Ok(())
}
