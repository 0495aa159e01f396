//! The kernel's one error type. Tool failures are not here: they are `ToolError`, data for the
//! model. These are failures of the kernel itself (session log, threads, setup).

use std::io;

/// A failure of the kernel.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The session log refused or failed a write.
    #[error("session log: {0}")]
    Session(#[from] codecoder_session::Error),
    /// A thread could not be started.
    #[error("could not start a thread: {0}")]
    Thread(#[from] io::Error),
    /// Two tools share a name.
    #[error("a tool named `{name}` is already registered")]
    DuplicateTool {
        /// The name.
        name: String,
    },
    /// The secret redactor's expression could not be built.
    #[error("secret redaction: {0}")]
    Redaction(#[from] regex::Error),
}

/// The kernel's result.
pub type Result<T> = std::result::Result<T, Error>;
