//! `codecoder app-server`: codex's app-server protocol — JSON-RPC 2.0 shapes without the
//! `"jsonrpc"` field, one message per line on stdio, or per text frame over WebSocket
//! (`listen`) — over the runtime's sessions. Threads are
//! sessions of the log (`thread/start`, `thread/resume`, `thread/fork`, `thread/list` with
//! cursor paging); `turn/start`, `turn/steer` and `turn/interrupt` drive the session's agent
//! (a turn naming another model, effort, cwd or sandbox resumes the session with them first);
//! the agent's events become item, delta, token-usage and compaction notifications; approvals
//! become server requests the client answers. What codex's TUI reads as it starts (account,
//! models, configuration, lists) is answered from the runtime (`types/info.rs`).
//!
//! Threads of the server: a reader (`app-server-reader`, lines from the client), the dispatcher
//! (the caller's thread: handshake, loaded threads, open requests), a writer
//! (`app-server-writer`, the only one that writes to the client) and one worker per loaded
//! thread (`app-thread-*`, owning its session's agent). No async runtime.
//!
//! Invariants: the crate never prints (it writes only to the `output` it is given); every turn
//! runs in the kernel's agent loop, this crate only translates; when the client closes its
//! input, every thread's agent is shut down (running commands killed) and joined before `serve`
//! returns; no thread runs under a looser sandbox than the server's own settings give.

mod history;
pub mod listen;
mod server;
mod thread;
mod translate;
pub mod types;
pub mod wire;
mod writer;

use std::io::BufRead;
use std::io::Write;

use codecoder_stdx::spawn_named;

pub use types::schema;

/// What the server needs besides its streams.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The command line's overrides; each thread's own (cwd, model, modes) go on top.
    pub overrides: codecoder_app::Overrides,
    /// The version the server reports (`userAgent`, `cliVersion`).
    pub version: String,
}

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A thread of the server could not be started.
    #[error("starting the {name} thread")]
    Spawn {
        /// The thread's name.
        name: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// A non-loopback listener was asked for without `--ws-auth`.
    #[error(
        "refusing to listen on {addr} without auth: it is not a loopback address; pass \
         --ws-auth capability-token (with --ws-token-file or --ws-token-sha256) or --ws-auth \
         signed-bearer-token (with --ws-shared-secret-file)"
    )]
    NonLoopbackWithoutAuth {
        /// The address asked for.
        addr: std::net::SocketAddr,
    },
    /// The listener's address could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// Why (taken, not an address of this machine).
        source: std::io::Error,
    },
    /// The listener's unix socket could not be bound.
    #[error("cannot listen on unix://{path}", path = path.display())]
    BindUnix {
        /// The socket's path.
        path: std::path::PathBuf,
        /// Why (a server listens there, the folder cannot be made).
        source: std::io::Error,
    },
    /// The access log could not be opened.
    #[error("opening the access log")]
    AccessLog {
        /// Why (the error names the path).
        source: std::io::Error,
    },
    /// A token or shared secret file could not be read.
    #[error("reading the WebSocket secret")]
    ReadSecret {
        /// Why (the error names the path).
        source: std::io::Error,
    },
    /// A token or shared secret is too short to be safe.
    #[error("the secret in {path} is shorter than {min} bytes", path = path.display())]
    ShortSecret {
        /// The file.
        path: std::path::PathBuf,
        /// The least accepted.
        min: usize,
    },
    /// `--ws-token-sha256` is not a SHA-256.
    #[error("--ws-token-sha256 must be 64 hex digits (a SHA-256)")]
    BadSha256,
}

/// This crate's result.
pub type Result<T> = std::result::Result<T, Error>;

/// Serves one client on `input` and `output` until it closes `input`.
///
/// # Errors
/// When a thread of the server cannot be started.
pub fn serve(
    config: ServeConfig,
    input: Box<dyn BufRead + Send>,
    output: Box<dyn Write + Send>,
) -> Result<()> {
    // Bounded: a client that stops reading slows the agents down rather than filling memory.
    let (out_tx, out_rx) = crossbeam_channel::bounded::<writer::WriterMsg>(1024);
    let (line_tx, line_rx) = crossbeam_channel::bounded::<String>(64);
    // Unbounded: workers report to the dispatcher while it may be joining them at shutdown; a
    // bounded queue could deadlock there. At most one message per agent event.
    let (internal_tx, internal_rx) = crossbeam_channel::unbounded::<thread::Internal>();
    let writer = spawn_named("app-server-writer", move || writer::run(output, &out_rx))
        .map_err(|source| Error::Spawn { name: "writer", source })?;
    // It ends at the end of the client's input, which is also what ends the dispatcher, so
    // joining it at the end does not wait.
    let reader = spawn_named("app-server-reader", move || {
        let mut input = input;
        let mut bytes = Vec::new();
        loop {
            bytes.clear();
            match input.read_until(b'\n', &mut bytes) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            // A line that is not UTF-8 is still a line: it gets its parse error answer.
            let line = String::from_utf8_lossy(&bytes).into_owned();
            if line_tx.send(line).is_err() {
                break;
            }
        }
    })
    .map_err(|source| Error::Spawn { name: "reader", source })?;
    server::Server::new(config, out_tx, internal_tx).run(&line_rx, &internal_rx);
    // The server and its workers dropped their senders: the writer drains what is left and ends.
    drop(reader);
    drop(writer);
    Ok(())
}

#[cfg(test)]
mod tests;
