//! Parse and apply patches in the codex `*** Begin Patch` format.
//!
//! [`parse`] turns patch text into a typed [`Patch`] (leniently: padded markers, a heredoc
//! wrapper and a first chunk without `@@` are accepted); [`apply`] writes it to the filesystem
//! relative to a working directory and returns a [`Report`] of the files it touched; [`run`] is
//! the standalone `apply-patch` command on top of both.
//!
//! Where the codex tool is silent or rough, this crate chooses (each is tested by a scenario):
//! a file whose first line ends with CRLF keeps CRLF; context lines keep the file's text after
//! a fuzzy match instead of taking the patch's; a pure addition after an `@@ context` line is
//! inserted after that line (without `@@` context it is appended at the end of the file); a
//! chunk that repeats its `@@` line as its first context line still matches; blank lines that
//! end a chunk are dropped (all of them, not just one) when the chunk does not match with them.
//!
//! Invariants: nothing here prints or spawns; every filesystem error names its path (through
//! `fs_err`); applying is hunk by hunk and NOT atomic, so a failure reports the files that were
//! already changed ([`ApplyError::applied`]).

mod apply;
mod error;
mod parse;
mod run;
mod seek;

pub use apply::{Change, ChangeKind, Report, apply, update_text};
pub use error::{ApplyError, ApplyFailure, Error, Operation, ParseError, Result};
pub use parse::{Chunk, Hunk, Patch, PatchStream, declared_paths, parse};
pub use run::run;
