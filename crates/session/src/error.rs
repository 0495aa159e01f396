//! The session crate's one error type.

use std::io;
use std::path::PathBuf;

use crate::trace::TraceError;

/// A failure of the session log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The record does not fit the log; nothing was written.
    #[error("refused record: {0}")]
    Trace(#[from] TraceError),
    /// Reading or writing failed (the message names the path).
    #[error(transparent)]
    Io(#[from] io::Error),
    /// A line that is not a record, and not the last line.
    #[error("{}:{line}: not a session record: {message}", path.display())]
    Corrupt {
        /// The log file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What the parser said.
        message: String,
    },
    /// A well-formed record that breaks the log's grammar.
    #[error("{}:{line}: invalid record (seq {seq}): {source}", path.display())]
    Invalid {
        /// The log file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The record's seq.
        seq: u64,
        /// The rule it breaks.
        source: TraceError,
    },
    /// The file holds no complete record at all.
    #[error("{}: empty session log", path.display())]
    Empty {
        /// The log file.
        path: PathBuf,
    },
    /// No session has that id (or id prefix).
    #[error("no session matches `{query}`")]
    NotFound {
        /// What was asked for.
        query: String,
    },
    /// More than one session starts with that prefix.
    #[error("`{query}` matches {count} sessions; give more of the id")]
    Ambiguous {
        /// What was asked for.
        query: String,
        /// How many match.
        count: usize,
    },
    /// `--at` names a seq the parent does not have.
    #[error("session {session} has no record with seq {seq}")]
    NoSuchSeq {
        /// The session.
        session: String,
        /// The seq asked for.
        seq: u64,
    },
    /// Another writer holds the log: another process, or another writer in this one.
    #[error(
        "session {session} is in use by another codecoder process ({}); to continue it \
         elsewhere, fork it: codecoder sessions fork {session}",
        pid.map_or_else(|| "pid unknown".to_owned(), |pid| format!("pid {pid}"))
    )]
    Locked {
        /// The session id (the log's file name without its extension).
        session: String,
        /// The log file.
        path: PathBuf,
        /// The holder's pid, from the sidecar `<id>.lock` it wrote; `None` when none was found.
        pid: Option<u32>,
    },
    /// No checkpointed change is left to undo (at or after the turn, when one is named).
    #[error("{}", match turn {
        Some(turn) => format!("turn {turn} and later changed no file codecoder can restore"),
        None => "no turn changed a file codecoder can restore".to_owned(),
    })]
    NothingToUndo {
        /// The turn asked for.
        turn: Option<codecoder_protocol::TurnId>,
    },
    /// A blob whose content does not hash to its name (cut short by a machine crash).
    #[error("{}: damaged blob (its content does not match its name)", path.display())]
    BlobDamaged {
        /// The blob file.
        path: PathBuf,
    },
    /// The SQLite index failed.
    #[error("session index: {0}")]
    Index(#[from] rusqlite::Error),
    /// A record could not be serialized (should not happen with our types).
    #[error("could not serialize a record: {0}")]
    Serialize(#[from] serde_json::Error),
}

/// The session crate's result.
pub type Result<T> = std::result::Result<T, Error>;
