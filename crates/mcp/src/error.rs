//! The crate's error type.

use std::path::PathBuf;

/// What can go wrong configuring or talking to MCP servers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A `.mcp.json` file could not be read.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A `.mcp.json` file is not what Claude Code writes.
    #[error("{}:{line}:{column}: {message}", path.display())]
    McpJson { path: PathBuf, line: usize, column: usize, message: String },
    /// The runtime thread could not start or is gone.
    #[error("the MCP runtime is not running")]
    RuntimeGone,
    /// No server of that name is running.
    #[error("no MCP server `{server}` is running")]
    UnknownServer { server: String },
    /// The server did not answer within the tool timeout.
    #[error("MCP server `{server}` did not answer `{tool}` within {seconds} s")]
    Timeout { server: String, tool: String, seconds: u64 },
    /// The call was cancelled (the server was told).
    #[error("cancelled")]
    Cancelled,
    /// The server failed the request (a protocol error, a dead transport).
    #[error("MCP server `{server}`: {message}")]
    Server { server: String, message: String },
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;
