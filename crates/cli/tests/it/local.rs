//! A local model server as a person sets one up: a temporary home whose `config.toml` makes
//! `local`, a Chat Completions server, the provider of one model, and a workspace beside it.
//! The tests of local models (`models`, `provider_fallback`, `text_tool_calls`, `llama_cpp`)
//! share it.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::exec::Run;

/// A temporary home configured for a local provider, and an empty workspace.
pub(crate) struct LocalHome {
    pub(crate) home: TempDir,
    pub(crate) cwd: TempDir,
}

impl LocalHome {
    /// `model` served by the Chat server at `base_url` (its root, without `/v1`); `table` goes
    /// on inside `[model_providers.local]`: more of its keys, then any later tables.
    pub(crate) fn new(base_url: &str, model: &str, table: &str) -> Self {
        let home = tempfile::tempdir().unwrap();
        write_local_provider(home.path(), base_url, model, table);
        Self { home, cwd: tempfile::tempdir().unwrap() }
    }

    /// Runs the binary in the workspace with this home.
    pub(crate) fn run(&self) -> Run<'_> {
        Run { home: self.home.path(), cwd: self.cwd.path(), env: Vec::new() }
    }

    /// The home's session log; there is exactly one.
    pub(crate) fn session_log(&self) -> PathBuf {
        let logs: Vec<PathBuf> = std::fs::read_dir(self.home.path().join("sessions"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
            .collect();
        assert_eq!(logs.len(), 1, "{logs:?}");
        logs[0].clone()
    }
}

/// Writes `home/config.toml` as `LocalHome::new` does: `base_url` and `wire_api` are its lines
/// 4 and 5, and `table` starts at line 6.
pub(crate) fn write_local_provider(home: &Path, base_url: &str, model: &str, table: &str) {
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model = {model:?}\nmodel_provider = \"local\"\n[model_providers.local]\n\
             base_url = \"{base_url}/v1\"\nwire_api = \"chat\"\n{table}"
        ),
    )
    .unwrap();
}
