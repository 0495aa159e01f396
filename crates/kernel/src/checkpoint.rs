//! The checkpoint seam: what lets a turn's file changes be undone.
//!
//! The root agent's loop tells `Checkpoints` when a turn begins and ends, and logs the
//! `checkpoint` record `turn_ended` returns before the turn's `turn_end`. A file tool calls
//! `ToolContext::checkpoint(path)` before it writes a path; the implementation keeps the path's
//! prior content the first time in the turn. A tool that runs a command calls
//! `ToolContext::before_command()` first, since a command may change files nobody names. Subagents share their root's `Checkpoints`, so
//! their writes belong to the root's open turn.
//!
//! Invariant: `before_write` never fails the write: what it cannot keep, it notes in the record.

use std::path::Path;

use codecoder_protocol::{CheckpointRecord, TurnId};

/// Keeps what a turn's writes replace.
pub trait Checkpoints: Send + Sync {
    /// A turn began (the root agent's; after its `turn_start` is logged).
    fn turn_started(&self, turn: TurnId);
    /// A tool is about to write `path` (absolute). Called from tool worker threads.
    fn before_write(&self, path: &Path);
    /// A tool is about to run a command, which may change any file (called from tool worker
    /// threads). The first call of a turn is where a snapshot of the work tree pays off.
    fn before_command(&self);
    /// The turn is ending: its `checkpoint` record, `None` when it changed nothing.
    fn turn_ended(&self, turn: TurnId) -> Option<CheckpointRecord>;
}
