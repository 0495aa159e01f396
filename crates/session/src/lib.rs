//! The append-only session log: the agent's memory and the only truth of what the model saw.
//!
//! One JSONL file per session under `$CODECODER_HOME/sessions/`, one `Record` per line, each
//! written with one `write` call. `SessionTrace` checks every record before it is written;
//! `load` reads a log back (dropping a torn last line and saying so), `closing_records` closes
//! what a crash or a cancel left open, `Projection` rebuilds the history the model sees, `fork`
//! branches a session without touching its parent, `BlobStore` keeps large content by SHA-256 (and, through `checkpoint`,
//! what the files a turn changed held before it),
//! and `Index` is a SQLite cache of session summaries that is rebuilt from the files.
//! A log has one writer at a time: every `SessionWriter` on a file holds its exclusive lock
//! (`lock`), so a second process is refused instead of interleaving records.
//!
//! Invariant: the JSONL files are the truth. Nothing here rewrites a complete record; repair and
//! fork only append, to the same file (repair) or to a new one (fork).

mod blob;
pub mod checkpoint;
mod error;
mod index;
mod load;
mod lock;
mod projection;
mod store;
mod trace;
mod writer;

pub use blob::{BlobStore, sha256_hex};
pub use error::{Error, Result};
pub use index::{Index, RefreshStats, SessionSummary};
pub use load::{CloseReason, Entry, LoadedSession, TornTail, UnknownRecord, closing_records, load};
pub use projection::Projection;
pub use store::{NewSession, SessionStore};
pub use trace::{PendingCall, SessionTrace, TraceError, Transition};
pub use writer::{FsyncPolicy, SessionWriter, WriterConfig};

#[cfg(test)]
mod tests;
