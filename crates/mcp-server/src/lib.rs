//! `codecoder mcp-server`: codecoder as a Model Context Protocol server over stdio, as `codex
//! mcp-server` and `claude mcp serve` offer. Two tools: `codecoder {prompt, model?, profile?,
//! cwd?, approval-policy?, sandbox?, config?}` runs a new session's turn to its end and returns
//! the final message with the session id in `structuredContent {threadId, sessionId, content}`;
//! `codecoder-reply {threadId | sessionId, prompt}` runs the next turn of that session.
//!
//! Built on the official SDK `rmcp`. Its tokio runtime (current-thread) lives only inside
//! `serve_stdio`, which blocks the calling thread until the client closes stdin; the sessions
//! themselves are the runtime crate's (`codecoder_app::Runtime::start`), each read on a thread
//! of its own, so this crate is a translation and holds no agent loop.
//!
//! Invariants: stdout carries only MCP (this crate never prints; the sessions' commands have
//! their own pipes). Every session this server started is shut down (its commands killed)
//! before `serve_stdio` returns. A call's `notifications/cancelled` cancels its turn through
//! the same `AgentCommand::Cancel` the TUI's Esc sends.

mod error;
mod params;
mod server;
mod turn;

pub use error::{Error, Result};

/// What the server starts its sessions with.
#[derive(Debug, Clone)]
pub struct Config {
    /// The command line's overrides (`-C`, `-p`, `-c`, the modes); a call's arguments go over
    /// them.
    pub overrides: codecoder_app::Overrides,
    /// The version `initialize` reports.
    pub version: String,
}

/// Serves MCP on stdin/stdout until the client closes stdin, then shuts every session down.
///
/// # Errors
/// When the runtime cannot be built or the client's handshake fails.
pub fn serve_stdio(config: Config) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("mcp-server-runtime")
        .build()
        .map_err(Error::Runtime)?;
    let server = server::Server::new(config);
    let sessions = server.sessions();
    let served = runtime.block_on(async move {
        use rmcp::ServiceExt as _;
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|err| Error::Handshake(err.to_string()))?;
        service.waiting().await.map_err(|err| Error::Serve(err.to_string()))?;
        Ok(())
    });
    // Calls still running are dropped with the runtime; their sessions shut down with them.
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    sessions.close_all();
    served
}

#[cfg(test)]
mod tests;
