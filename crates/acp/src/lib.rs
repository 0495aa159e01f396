//! `codecoder acp`: an Agent Client Protocol (v1) agent, for editors such as Zed, built on the
//! official SDK (`agent-client-protocol`) and the runtime's sessions (`codecoder_app`).
//!
//! The SDK is runtime neutral; this crate drives it with `futures::executor::block_on` on the
//! caller's thread, over a line transport of its own: the `acp-stdin` thread reads the input
//! line by line into a bounded channel, and the output is written line by line from the
//! connection's future. The connection's handlers only forward each request to the
//! `acp-sessions` thread (`server`), which owns the sessions; each session's agent is driven
//! by its own `acp-session-*` thread (`bridge`), whose translator (`live`) turns events into
//! `session/update`s (with `translate`); `session/load` feeds the runtime's replay of the log
//! (`codecoder_app::history`) through a translator of the same kind. File reads and writes of
//! the built-in tools go through the client when it offers `fs/*` (`files`).
//!
//! Invariants: no async runtime beyond the SDK's futures and this one executor; nothing here
//! prints (the output is the protocol; notices go to the caller's callback); every request gets
//! one answer; when the input ends, every session is shut down (its turn cancelled, its
//! processes killed) before `serve` returns.

mod bridge;
mod files;
mod live;
mod server;
mod translate;

use std::io::{BufRead, Write};
use std::sync::Arc;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Agent, Client, Lines};
use codecoder_app::Overrides;
use futures::SinkExt as _;

use crate::server::{Op, Server};

/// Lines read ahead of the connection.
const INPUT_LINES: usize = 64;

/// This crate's errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A thread could not be started.
    #[error("starting the {name} thread: {source}")]
    Thread {
        /// The thread.
        name: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// The connection failed (a broken transport, malformed traffic it could not survive).
    #[error("the ACP connection failed: {message}")]
    Connection {
        /// The SDK's message.
        message: String,
    },
}

/// This crate's result.
pub type Result<T> = std::result::Result<T, Error>;

/// What `serve` needs besides its input and output.
#[derive(Clone)]
pub struct ServeConfig {
    /// The command line's overrides; each session sets its own working directory on top.
    pub overrides: Overrides,
    /// Called with each notice for the person (config notes, safety warnings, MCP servers
    /// left out); the cli writes them to stderr, which editors keep as the agent's log.
    pub notice: Arc<dyn Fn(&str) + Send + Sync>,
}

impl std::fmt::Debug for ServeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeConfig").field("overrides", &self.overrides).finish_non_exhaustive()
    }
}

/// Serves one ACP client over `input`/`output` (newline-delimited JSON-RPC) until the input
/// ends; then shuts every session down.
///
/// # Errors
/// When a thread cannot start or the connection fails.
pub fn serve(
    config: ServeConfig,
    input: Box<dyn BufRead + Send>,
    output: Box<dyn Write + Send>,
) -> Result<()> {
    let (lines, incoming) = futures::channel::mpsc::channel(INPUT_LINES);
    // Not joined: it may be blocked reading an input that never ends (a client that keeps its
    // end open after the connection failed); it holds nothing but the input.
    let reader = std::thread::Builder::new()
        .name("acp-stdin".to_owned())
        .spawn(move || read_lines(input, lines))
        .map_err(|source| Error::Thread { name: "acp-stdin", source })?;
    drop(reader);
    // Unbounded: the handlers run on the SDK's dispatch loop, which must never wait on the
    // session table; the table serves one request at a time, as fast as sessions start.
    let (ops, received) = crossbeam_channel::unbounded();
    let server = Server::new(config);
    let table = codecoder_stdx::spawn_named("acp-sessions", move || server.run(&received))
        .map_err(|source| Error::Thread { name: "acp-sessions", source })?;
    let outgoing = futures::sink::unfold(output, async |mut output, line: String| {
        output.write_all(line.as_bytes())?;
        output.write_all(b"\n")?;
        output.flush()?;
        Ok::<_, std::io::Error>(output)
    });
    let transport = Lines::new(Box::pin(outgoing), incoming);
    let forward = |ops: &crossbeam_channel::Sender<Op>, op: Op| {
        ops.send(op).map_err(|_| agent_client_protocol::Error::internal_error())
    };
    let (o1, o2, o3, o4, o5, o6, o7) =
        (ops.clone(), ops.clone(), ops.clone(), ops.clone(), ops.clone(), ops.clone(), ops);
    let agent = Agent
        .v1()
        .name("codecoder")
        .on_receive_request(
            async move |request: acp::InitializeRequest,
                        responder: Responder<acp::InitializeResponse>,
                        _connection: ConnectionTo<Client>| {
                forward(&o1, Op::Initialize(Box::new(request), responder))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_request: acp::AuthenticateRequest,
                        responder: Responder<acp::AuthenticateResponse>,
                        _connection: ConnectionTo<Client>| {
                forward(&o2, Op::Authenticate(responder))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: acp::NewSessionRequest,
                        responder: Responder<acp::NewSessionResponse>,
                        connection: ConnectionTo<Client>| {
                forward(&o3, Op::NewSession(request, responder, connection))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: acp::LoadSessionRequest,
                        responder: Responder<acp::LoadSessionResponse>,
                        connection: ConnectionTo<Client>| {
                forward(&o4, Op::LoadSession(request, responder, connection))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: acp::PromptRequest,
                        responder: Responder<acp::PromptResponse>,
                        _connection: ConnectionTo<Client>| {
                forward(&o5, Op::Prompt(request, responder))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: acp::SetSessionModeRequest,
                        responder: Responder<acp::SetSessionModeResponse>,
                        _connection: ConnectionTo<Client>| {
                forward(&o6, Op::SetMode(request, responder))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: acp::CancelNotification,
                        _connection: ConnectionTo<Client>| {
                forward(&o7, Op::Cancel(notification))
            },
            agent_client_protocol::on_receive_notification!(),
        );
    let result = futures::executor::block_on(agent.connect_to(transport));
    // The handlers (and their senders) are gone with the connection: the table shuts down.
    let _ = table.join();
    result.map_err(|err| Error::Connection { message: err.to_string() })
}

/// Reads lines into the connection's channel until the input ends or the connection is gone.
fn read_lines(
    mut input: Box<dyn BufRead + Send>,
    mut lines: futures::channel::mpsc::Sender<std::io::Result<String>>,
) {
    loop {
        let mut line = String::new();
        let read = input.read_line(&mut line);
        let end = matches!(read, Ok(0) | Err(_));
        let item = read.map(|_| line.trim_end_matches(['\r', '\n']).to_owned());
        if end {
            if let Err(err) = item {
                let _ = futures::executor::block_on(lines.send(Err(err)));
            }
            return;
        }
        if futures::executor::block_on(lines.send(item)).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
