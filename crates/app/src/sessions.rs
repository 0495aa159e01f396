//! The session logs of a codecoder home as front-ends see them: listed from the index, found by
//! id, prefix or path, loaded, validated, forked and removed.
//!
//! Invariant: this is the one place the session index is opened and refreshed; every listing
//! (`sessions list`, `resume --last`, the TUI's picker, the servers' thread lists) goes through
//! [`list_sessions`]. What went wrong with the index file (it is then rebuilt, or kept in
//! memory) is a warning pushed to the caller's notices even when the listing then fails; only
//! the logs' directory failing fails.

use std::io::Write;
use std::path::{Path, PathBuf};

use codecoder_protocol::{RecordBody, SessionId};
use codecoder_session::{BlobStore, Entry, Index, LoadedSession, SessionStore, WriterConfig};
use serde_json::json;

use crate::Notice;
use crate::error::{Error, Result};

pub use codecoder_session::SessionSummary;

/// Sessions newest first, as the index lists them.
#[derive(Debug, Clone)]
pub struct SessionList {
    /// The sessions, at most the limit asked for.
    pub sessions: Vec<SessionSummary>,
    /// How many sessions match in all (more than `sessions.len()` when the limit cut them).
    pub total: usize,
    /// The logs' directory.
    pub dir: PathBuf,
}

/// Whether a listed log is a subagent's (its `session_meta` names the parent call that started
/// it), which lists of sessions for people leave out: its events reach its parent's front-end
/// marked by their source. Only logs the index gives a parent (forks and subagents) are read,
/// their first line only.
pub fn is_subagent_log(summary: &SessionSummary) -> bool {
    if summary.parent.is_none() {
        return false;
    }
    let Ok(file) = fs_err::File::open(&summary.path) else { return false };
    let mut first = String::new();
    if std::io::BufRead::read_line(&mut std::io::BufReader::new(file), &mut first).is_err() {
        return false;
    }
    serde_json::from_str::<serde_json::Value>(&first)
        .ok()
        .and_then(|meta| meta.get("parent").cloned())
        .is_some_and(|parent| !parent.is_null())
}

/// The index of `store`, up to date with its logs.
fn refreshed_index(store: &SessionStore, warnings: &mut Vec<Notice>) -> Result<Index> {
    let mut index = Index::open(store)?;
    let refreshed = index.refresh(store);
    warnings.extend(index.warnings().iter().map(|w| Notice::Warning(w.clone())));
    refreshed?;
    Ok(index)
}

/// The sessions of the directory `dir` (its real path), for `list_sessions`' `cwd`.
///
/// # Errors
/// `Io` when the directory cannot be resolved.
pub fn sessions_dir(dir: &Path) -> Result<String> {
    let real = fs_err::canonicalize(dir)
        .map_err(|source| Error::Io { context: format!("--cwd {}", dir.display()), source })?;
    Ok(real.to_string_lossy().into_owned())
}

/// The sessions of `home` (only those that ran in `cwd`, when given), newest first, at most
/// `limit` of them.
///
/// # Errors
/// When the index cannot be opened or the logs' directory cannot be read.
pub fn list_sessions(
    home: &Path,
    cwd: Option<&str>,
    limit: Option<usize>,
    warnings: &mut Vec<Notice>,
) -> Result<SessionList> {
    let store = SessionStore::new(home);
    let index = refreshed_index(&store, warnings)?;
    let sessions = index.list_newest(cwd, limit)?;
    let total = match limit {
        Some(limit) if sessions.len() >= limit => index.count(cwd)?,
        Some(_) | None => sessions.len(),
    };
    Ok(SessionList { sessions, total, dir: store.sessions_dir() })
}

/// Deletes the log of session `query` (id, unique prefix or path) and returns its path.
///
/// # Errors
/// When no session or several match, it is in use by another process (`Error::is_usage`), or
/// the file cannot be removed.
pub fn remove_session(home: &Path, query: &str, warnings: &mut Vec<Notice>) -> Result<PathBuf> {
    let store = SessionStore::new(home);
    let path = store.remove(query)?;
    refreshed_index(&store, warnings)?;
    Ok(path)
}

/// A session forked from another.
#[derive(Debug, Clone)]
pub struct Forked {
    /// The new session.
    pub id: SessionId,
    /// Its log.
    pub path: Option<PathBuf>,
}

/// Branches session `query` into a new one, keeping the parent's records up to `at` (all when
/// `None`); the parent is not modified.
///
/// # Errors
/// When the parent cannot be found or read, `at` is past its end, or the new log cannot be
/// written.
pub fn fork_session(
    home: &Path,
    query: &str,
    at: Option<u64>,
    warnings: &mut Vec<Notice>,
) -> Result<Forked> {
    let store = SessionStore::new(home);
    let writer = store.fork(query, at, WriterConfig::standard())?;
    let forked = Forked { id: writer.session_id(), path: writer.path().map(Path::to_owned) };
    // The writer's lock is released before the index reads the new log.
    drop(writer);
    refreshed_index(&store, warnings)?;
    Ok(forked)
}

/// Rebuilds the session index from the logs; returns how many logs it read.
///
/// # Errors
/// When the index or the logs' directory cannot be read or written.
pub fn reindex_sessions(home: &Path, warnings: &mut Vec<Notice>) -> Result<usize> {
    let store = SessionStore::new(home);
    let mut index = Index::open(&store)?;
    let stats = index.rebuild(&store)?;
    warnings.extend(index.warnings().iter().map(|w| Notice::Warning(w.clone())));
    Ok(stats.files)
}

/// One session's log, read whole.
#[derive(Debug)]
pub struct SessionLog {
    loaded: LoadedSession,
    blobs: BlobStore,
}

impl SessionLog {
    /// Reads the log of session `query` (id, unique prefix or path).
    ///
    /// # Errors
    /// When no session or several match, or the log cannot be read or breaks the log grammar.
    pub fn open(home: &Path, query: &str) -> Result<Self> {
        let store = SessionStore::new(home);
        let loaded = codecoder_session::load(&store.find(query)?)?;
        Ok(Self { loaded, blobs: store.blobs() })
    }

    /// The log as read (for `Runtime::request_body`).
    pub fn loaded(&self) -> &LoadedSession {
        &self.loaded
    }

    /// The log as one JSON document: its path, session id, every record (unknown ones as
    /// written), the torn last line and whether repair has anything to close.
    ///
    /// # Errors
    /// When a record cannot be encoded.
    pub fn to_json(&self) -> Result<serde_json::Value> {
        let loaded = &self.loaded;
        let records: Vec<serde_json::Value> = loaded
            .entries
            .iter()
            .map(|entry| match entry {
                Entry::Record(record) => serde_json::to_value(record),
                Entry::Unknown(unknown) => Ok(unknown.raw.clone()),
            })
            .collect::<std::result::Result<_, _>>()
            .map_err(|err| Error::Io {
                context: "encoding a record".to_owned(),
                source: err.into(),
            })?;
        Ok(json!({
            "path": loaded.path,
            "sessionId": loaded.meta.session_id,
            "records": records,
            "tornTail": loaded.torn_tail.map(|t| json!({"line": t.line, "bytes": t.len})),
            "needsRepair": loaded.trace.needs_repair(),
        }))
    }

    /// Writes a readable transcript of the log.
    ///
    /// # Errors
    /// When `out` fails.
    pub fn write_transcript(&self, out: &mut dyn Write) -> Result<()> {
        crate::write_transcript(&self.blobs, &self.loaded, out)
    }
}

/// What `sessions validate` found.
#[derive(Debug, Clone)]
pub enum Validation {
    /// The log breaks the log grammar (or cannot be parsed): why.
    Invalid(String),
    /// The log is valid, perhaps cut short by a crash.
    Valid(ValidLog),
}

/// A valid log, as `sessions validate` reports it.
#[derive(Debug, Clone)]
pub struct ValidLog {
    /// The file.
    pub path: PathBuf,
    /// Its complete records (unknown ones too).
    pub record_count: usize,
    /// The number of its last turn.
    pub last_turn: u32,
    /// The seq of its last record.
    pub last_seq: u64,
    /// The session was ended.
    pub ended: bool,
    /// Records of a type this version does not know: line and type.
    pub unknown: Vec<(usize, String)>,
    /// A last line cut by a crash: line and bytes (repair drops it).
    pub torn_tail: Option<(usize, u64)>,
    /// The records repair would append to close what the log left open.
    pub repair_plan: Vec<RecordBody>,
}

/// Checks the log of session `query` against the log grammar.
///
/// # Errors
/// When no session or several match, or the file cannot be read.
pub fn validate_session(home: &Path, query: &str) -> Result<Validation> {
    use codecoder_session::Error::{Corrupt, Empty, Invalid};
    let path = SessionStore::new(home).find(query)?;
    let loaded = match codecoder_session::load(&path) {
        Ok(loaded) => loaded,
        Err(err @ (Corrupt { .. } | Invalid { .. } | Empty { .. })) => {
            return Ok(Validation::Invalid(err.to_string()));
        }
        Err(err) => return Err(err.into()),
    };
    let trace = &loaded.trace;
    Ok(Validation::Valid(ValidLog {
        path,
        record_count: loaded.entries.len(),
        last_turn: trace.last_turn(),
        last_seq: trace.last_seq(),
        ended: trace.is_ended(),
        unknown: loaded.unknown().map(|u| (u.line, u.type_name.clone())).collect(),
        torn_tail: loaded.torn_tail.map(|torn| (torn.line, torn.len)),
        repair_plan: loaded.repair_plan(),
    }))
}

#[cfg(test)]
mod tests;
