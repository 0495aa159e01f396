//! The crate's one error type: what can stop the server as a whole (a single call's failure is
//! an MCP error or an `isError` result, never this).

/// What stopped the server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The async runtime could not be built.
    #[error("starting the MCP server's runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The client's `initialize` failed.
    #[error("the MCP client's handshake failed: {0}")]
    Handshake(String),
    /// The service's task ended abnormally.
    #[error("the MCP server stopped: {0}")]
    Serve(String),
}

/// This crate's result.
pub type Result<T> = std::result::Result<T, Error>;
