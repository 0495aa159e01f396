//! The crate's error types: [`ParseError`] for text that is not a patch, [`ApplyError`] for a
//! patch that could not be applied, and [`Error`] wrapping both for callers that do both.
//!
//! Invariant: every variant carries structured fields (1-based patch line numbers, the path as
//! written in the patch); messages are lowercase and have no trailing period.

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::apply::Change;

/// Any failure of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The text is not a valid patch; nothing was changed.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// Applying failed part-way; see [`ApplyError::applied`].
    #[error(transparent)]
    Apply(#[from] ApplyError),
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a patch text could not be parsed. Line numbers are 1-based lines of the patch text as
/// given (before any heredoc wrapper is stripped).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The text is empty or only whitespace.
    #[error("empty patch")]
    Empty,
    /// The first line is not `*** Begin Patch`.
    #[error(
        "invalid patch at line {line}: the first line must be '*** Begin Patch', found '{found}'"
    )]
    MissingBegin {
        /// The offending line.
        line: usize,
        /// Its text, trimmed.
        found: String,
    },
    /// The last line is not `*** End Patch`.
    #[error("invalid patch at line {line}: the last line must be '*** End Patch', found '{found}'")]
    MissingEnd {
        /// The offending line.
        line: usize,
        /// Its text, trimmed.
        found: String,
    },
    /// `*** Begin Patch` is directly followed by `*** End Patch`.
    #[error("empty patch: no hunks before '*** End Patch' at line {line}")]
    NoHunks {
        /// The line of `*** End Patch`.
        line: usize,
    },
    /// A hunk does not start with a known header.
    #[error(
        "invalid hunk at line {line}: expected '*** Add File', '*** Delete File' or '*** Update File', found '{found}'"
    )]
    UnknownHeader {
        /// The offending line.
        line: usize,
        /// Its text, trimmed.
        found: String,
    },
    /// A header has nothing after the colon.
    #[error("invalid hunk at line {line}: missing path after '{marker}'")]
    MissingPath {
        /// The header line.
        line: usize,
        /// The header, e.g. `*** Add File:`.
        marker: &'static str,
    },
    /// An update hunk has no `@@` chunk and no change line.
    #[error("invalid hunk at line {line}: the update of '{}' has no chunks", path.display())]
    EmptyUpdate {
        /// The `*** Update File` line.
        line: usize,
        /// The file to update.
        path: PathBuf,
    },
    /// An `@@` chunk header is not followed by any change line.
    #[error("invalid hunk at line {line}: a chunk in the update of '{}' has no lines", path.display())]
    EmptyChunk {
        /// The `@@` line.
        line: usize,
        /// The file to update.
        path: PathBuf,
    },
    /// A line inside an update hunk that is neither a change line nor a marker.
    #[error(
        "invalid hunk at line {line}: expected a line starting with ' ', '+', '-' or '@@' in the update of '{}', found '{found}'",
        path.display()
    )]
    InvalidLine {
        /// The offending line.
        line: usize,
        /// The file to update.
        path: PathBuf,
        /// Its text.
        found: String,
    },
}

/// What a hunk was doing when it met a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Operation {
    /// `*** Add File`.
    Add,
    /// `*** Delete File`.
    Delete,
    /// `*** Update File`.
    Update,
    /// `*** Move to`.
    Move,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::Add => "add",
            Operation::Delete => "delete",
            Operation::Update => "update",
            Operation::Move => "move to",
        })
    }
}

/// Why one hunk could not be applied. Paths are as written in the patch.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApplyFailure {
    /// `*** Delete File` of a path that does not exist.
    #[error("cannot delete {}: no such file", path.display())]
    DeleteMissing {
        /// The path.
        path: PathBuf,
    },
    /// `*** Update File` of a path that does not exist.
    #[error("cannot update {}: no such file", path.display())]
    UpdateMissing {
        /// The path.
        path: PathBuf,
    },
    /// The path is a directory where a file was expected.
    #[error("cannot {operation} {}: it is a directory", path.display())]
    IsDirectory {
        /// The path.
        path: PathBuf,
        /// What the hunk tried to do.
        operation: Operation,
    },
    /// The file to update is not UTF-8 text.
    #[error("cannot update {}: the file is not valid UTF-8", path.display())]
    NotUtf8 {
        /// The path.
        path: PathBuf,
    },
    /// The `@@ context` line of a chunk was not found.
    #[error(
        "failed to find context '{context}' in {} (chunk at patch line {patch_line})",
        path.display()
    )]
    ContextNotFound {
        /// The file being updated.
        path: PathBuf,
        /// The patch line of the chunk.
        patch_line: usize,
        /// The text after `@@ `.
        context: String,
    },
    /// The old lines (context and removed lines) of a chunk were not found.
    #[error(
        "failed to find the expected lines in {} (chunk at patch line {patch_line}{}):\n{}",
        path.display(),
        if *end_of_file { ", anchored at the end of the file" } else { "" },
        lines.join("\n")
    )]
    LinesNotFound {
        /// The file being updated.
        path: PathBuf,
        /// The patch line of the chunk.
        patch_line: usize,
        /// The lines that were sought, without their prefix.
        lines: Vec<String>,
        /// Whether the chunk was anchored with `*** End of File`.
        end_of_file: bool,
    },
    /// Reading or writing failed; the message names the path.
    #[error("{error}")]
    Io {
        /// The path as written in the patch.
        path: PathBuf,
        /// The error from `fs_err`.
        error: io::Error,
    },
}

/// A patch that failed part-way. Applying is not atomic: the hunks before the failing one
/// stay applied, and [`ApplyError::applied`] lists what they changed.
#[derive(Debug, thiserror::Error)]
#[error("{failure}{}", ChangedBefore(applied))]
pub struct ApplyError {
    pub(crate) applied: Vec<Change>,
    pub(crate) failure: ApplyFailure,
}

impl ApplyError {
    /// The changes made before the failure (in patch order); they were not rolled back.
    pub fn applied(&self) -> &[Change] {
        &self.applied
    }

    /// What went wrong.
    pub fn failure(&self) -> &ApplyFailure {
        &self.failure
    }
}

/// Formats the "changed before the failure" note, or nothing when nothing was changed.
struct ChangedBefore<'a>(&'a [Change]);

impl fmt::Display for ChangedBefore<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return Ok(());
        }
        write!(f, "\nthese files were changed before the failure and were not rolled back:")?;
        for change in self.0 {
            write!(f, "\n{change}")?;
        }
        Ok(())
    }
}
