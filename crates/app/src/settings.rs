//! The configuration as people manage it by hand: the merged settings `config show` lists (one
//! dotted key per value, with the layer it came from), config.toml's JSON Schema, trusting a
//! project, storing a provider's API key.
//!
//! Invariant: a header value that looks like a credential is never in a listing, only a mask.

use std::path::{Path, PathBuf};

use toml::Value;

use crate::Runtime;
use crate::error::Result;

/// One value of the merged configuration, as `config show` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// Its dotted key (`model_providers.local.base_url`); a key part that is not a bare TOML
    /// key is quoted.
    pub key: String,
    /// Its value as TOML (`"********"` for a header that looks like a credential).
    pub value: String,
    /// The layer it came from (a file, a profile, `-c`).
    pub origin: Option<String>,
}

impl Runtime {
    /// Every value of the merged configuration, in key order.
    pub fn settings(&self) -> Vec<Setting> {
        let loaded = self.loaded();
        let mut leaves = Vec::new();
        collect_leaves(&Value::Table(loaded.table.clone()), "", &mut leaves);
        leaves
            .into_iter()
            .map(|(key, value)| Setting {
                value: if is_secret(&key) { "\"********\"".to_owned() } else { value.to_string() },
                origin: loaded.origins.get(&key).map(ToString::to_string),
                key,
            })
            .collect()
    }
}

fn collect_leaves(value: &Value, path: &str, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Table(table) => {
            for (key, value) in table {
                let key = if key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                {
                    key.clone()
                } else {
                    format!("{key:?}")
                };
                let path = if path.is_empty() { key } else { format!("{path}.{key}") };
                collect_leaves(value, &path, out);
            }
        }
        other => out.push((path.to_owned(), other.clone())),
    }
}

/// Header values that look like credentials are masked.
fn is_secret(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    (lower.contains("http_headers.") && !lower.contains("env_http_headers."))
        && ["auth", "key", "token", "secret", "cookie"]
            .iter()
            .any(|word| lower.rsplit('.').next().is_some_and(|name| name.contains(word)))
}

/// The JSON Schema of config.toml.
pub fn config_schema() -> String {
    codecoder_config::json_schema()
}

/// Trusts the project `dir` is in (its git root, else `dir`), so its `.codecoder/config.toml`
/// and `.mcp.json` are read; returns the directory recorded.
///
/// # Errors
/// When the directory does not exist or the trust file cannot be written.
pub fn trust_project(home: &Path, dir: &Path) -> Result<PathBuf> {
    let root = codecoder_config::project_root(dir);
    Ok(codecoder_config::trust(home, &root)?)
}

/// Stores `key` as the API key of `provider` in the credentials file; returns the file.
///
/// # Errors
/// When the file cannot be written.
pub fn store_api_key(home: &Path, provider: &str, key: &str) -> Result<PathBuf> {
    codecoder_config::store_credential(home, provider, key)?;
    Ok(home.join(codecoder_config::CREDENTIALS_FILE))
}
