//! The provider cache in codecoder's home (`cache/providers.json`): what a session learnt about
//! a model server that the next session should know from its first request. Today that is the
//! servers (provider id, base URL, model) that cannot stream requests that offer tools: a
//! session found a streamed request with tools failing before any answer while the same request
//! unstreamed worked, and later sessions send such requests unstreamed from the start.
//!
//! ```json
//! {"unstreamed_tools": [{"provider": "local", "base_url": "http://127.0.0.1:8080/v1", "model": "smollm2"}]}
//! ```
//!
//! Undoing one: delete its entry (or the file). `stream = true` set in `[model_providers.ID]`
//! makes a session try streaming first whatever the cache says; `stream = false` never streams.
//!
//! Invariants: the file is read once when a session starts; a file that cannot be read or
//! parsed is ignored with a warning and replaced at the next write, never fatal. A write reads
//! the file again under its lock (`HomeFile`) and adds to what is there, then renames a
//! temporary file over it, so two sessions writing at once both keep their entry and a reader
//! never sees half a file.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use codecoder_providers::{ProviderMemory, ServerKey};
use serde::{Deserialize, Serialize};

#[cfg(test)]
mod tests;

/// The cache's path under the home.
pub(crate) const PROVIDER_CACHE: &str = "cache/providers.json";

/// The file's content.
#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    /// The servers that cannot stream requests with tools.
    #[serde(default)]
    unstreamed_tools: Vec<Entry>,
}

/// One server and model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    provider: String,
    base_url: String,
    model: String,
}

impl Entry {
    fn of(server: &ServerKey<'_>) -> Self {
        Self {
            provider: server.provider.to_owned(),
            base_url: server.base_url.to_owned(),
            model: server.model.to_owned(),
        }
    }
}

/// The provider cache of one home, as a client's `ProviderMemory`.
#[derive(Debug)]
pub(crate) struct ProviderCache {
    path: PathBuf,
    location: String,
    /// False when `stream = true` is set for the provider: the cache is written, not read.
    consult: bool,
    // The entries known to this process. A Mutex because the provider's worker thread adds to
    // it while the kernel's thread looks up; held only to look up or push.
    entries: Mutex<Vec<Entry>>,
}

impl ProviderCache {
    /// The cache of `home`, read now, and a warning when the file is there but unusable.
    /// `consult` false: lookups answer no (the person asked for streaming).
    pub(crate) fn open(home: &Path, consult: bool) -> (Self, Option<String>) {
        let path = home.join(PROVIDER_CACHE);
        let (entries, warning) = match read(&path) {
            Ok(file) => (file.unstreamed_tools, None),
            Err(err) => (
                Vec::new(),
                Some(format!(
                    "ignoring the provider cache {}: {err} (it is rewritten when a provider is next remembered; deleting it is safe)",
                    path.display()
                )),
            ),
        };
        let location = path.display().to_string();
        (Self { path, location, consult, entries: Mutex::new(entries) }, warning)
    }

    /// Every remembered entry, as `provider (base_url), model` lines for `doctor`.
    pub(crate) fn describe(home: &Path) -> Vec<String> {
        read(&home.join(PROVIDER_CACHE))
            .map(|file| {
                file.unstreamed_tools
                    .iter()
                    .map(|e| format!("{} ({}), model {}", e.provider, e.base_url, e.model))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The file's content; an empty cache when there is none.
fn read(path: &Path) -> io::Result<CacheFile> {
    match fs_err::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map_err(io::Error::other),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(CacheFile::default()),
        Err(err) => Err(err),
    }
}

impl ProviderMemory for ProviderCache {
    fn unstreamed_tools(&self, server: &ServerKey<'_>) -> bool {
        let entry = Entry::of(server);
        self.consult && self.entries.lock().is_ok_and(|entries| entries.contains(&entry))
    }

    fn remember_unstreamed_tools(&self, server: &ServerKey<'_>) -> io::Result<()> {
        let entry = Entry::of(server);
        if let Ok(mut entries) = self.entries.lock()
            && !entries.contains(&entry)
        {
            entries.push(entry.clone());
        }
        let file = codecoder_config::HomeFile::lock(&self.path)?;
        // What another session wrote since this one started is kept; a corrupt file is replaced.
        let text = file.read()?;
        let mut cache: CacheFile = serde_json::from_str(&text).unwrap_or_default();
        if cache.unstreamed_tools.contains(&entry) {
            return Ok(());
        }
        cache.unstreamed_tools.push(entry);
        let mut text = serde_json::to_string_pretty(&cache).map_err(io::Error::other)?;
        text.push('\n');
        file.write(&text)
    }

    fn location(&self) -> &str {
        &self.location
    }
}
