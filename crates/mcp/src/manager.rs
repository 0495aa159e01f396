//! The synchronous facade over the MCP runtime thread.
//!
//! One named thread (`mcp-runtime`) runs a current-thread tokio runtime that owns every server
//! connection. The facade sends it requests over an unbounded tokio channel (sending needs no
//! runtime, and a request is only ever followed by a blocking wait for its answer, so the queue
//! stays as short as the number of calls in flight) and waits for answers on crossbeam channels.
//!
//! Invariants: `start` returns once every server is ready or has failed, and no later than the
//! longest startup timeout; dropping the manager closes the request channel, the runtime drops
//! every connection (killing stdio servers) and the thread is joined; a server whose transport
//! closed is started again once, at its next call; a cancelled or timed-out call drops its
//! request future, which sends the server `notifications/cancelled`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::str::FromStr;
use std::time::Duration;

use codecoder_stdx::JoinOnDrop;
use crossbeam_channel::{Receiver, Sender, select};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ServiceExt, model::JsonObject};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::config::{ServerConfig, Transport};
use crate::error::{Error, Result};

/// A tool a running server offers.
#[derive(Debug, Clone, PartialEq)]
pub struct McpToolInfo {
    /// The server's name.
    pub server: String,
    /// The tool's name on the server.
    pub name: String,
    /// Its description.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
    /// `annotations.readOnlyHint`.
    pub read_only: bool,
    /// `annotations.destructiveHint` (the protocol's default is true when not read-only).
    pub destructive: Option<bool>,
    /// How long a call may take.
    pub timeout: Duration,
}

/// How a server's start went.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The server's name.
    pub server: String,
    /// What happened.
    pub outcome: ReportOutcome,
}

/// What happened to a server at start.
#[derive(Debug, Clone, PartialEq)]
pub enum ReportOutcome {
    /// It answered and listed its tools.
    Ready {
        /// How many of its tools are offered.
        tools: usize,
    },
    /// It could not start or answer.
    Failed {
        /// Why.
        message: String,
    },
    /// It did not answer within its startup timeout.
    TimedOut {
        /// The timeout, in seconds.
        seconds: f64,
    },
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let server = &self.server;
        match &self.outcome {
            ReportOutcome::Ready { tools } => {
                write!(f, "MCP server `{server}`: ready, {tools} tools")
            }
            ReportOutcome::Failed { message } => {
                write!(f, "MCP server `{server}` did not start: {message}")
            }
            ReportOutcome::TimedOut { seconds } => write!(
                f,
                "MCP server `{server}` did not start within {seconds} s (startup_timeout_sec); going on without it"
            ),
        }
    }
}

/// A call's outcome: the `CallToolResult` as JSON.
pub type CallOutcome = Result<Value>;

enum Request {
    Call {
        server: String,
        tool: String,
        arguments: JsonObject,
        timeout: Duration,
        cancel: oneshot::Receiver<()>,
        reply: Sender<CallOutcome>,
    },
}

type Service = RunningService<RoleClient, ()>;

/// The running servers, behind a blocking API.
pub struct McpManager {
    // Field order: the request sender drops first, which ends the runtime's loop; then the
    // thread is joined.
    requests: mpsc::UnboundedSender<Request>,
    tools: Vec<McpToolInfo>,
    _thread: JoinOnDrop<()>,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpManager").field("tools", &self.tools.len()).finish_non_exhaustive()
    }
}

impl McpManager {
    /// Starts `servers` in parallel (stdio servers in `cwd` unless they name their own) and
    /// returns once each is ready, failed or past its startup timeout, with a report per server.
    ///
    /// # Errors
    /// When the runtime thread cannot start.
    pub fn start(servers: Vec<ServerConfig>, cwd: &Path) -> Result<(Self, Vec<Report>)> {
        // The HTTP transport's TLS uses the process-wide provider: ring, the one ureq uses. A
        // provider installed earlier stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (requests, inbox) = mpsc::unbounded_channel();
        let (started_tx, started_rx) = crossbeam_channel::bounded(1);
        let cwd = cwd.to_owned();
        let thread = codecoder_stdx::spawn_named("mcp-runtime", move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime,
                Err(err) => {
                    let _ = started_tx.send(Err(Error::Io(err)));
                    return;
                }
            };
            runtime.block_on(run(servers, cwd, inbox, started_tx));
        })?;
        let (tools, reports) = started_rx.recv().map_err(|_| Error::RuntimeGone)??;
        Ok((Self { requests, tools, _thread: thread }, reports))
    }

    /// The tools of the servers that started, in configuration order (each server's tools in
    /// its order), with the server's `enabled_tools`/`disabled_tools` applied.
    pub fn list_tools(&self) -> &[McpToolInfo] {
        &self.tools
    }

    /// Calls `tool` of `server` and blocks for the result: `Err(Cancelled)` as soon as `cancel`
    /// fires (the server is told), `Err(Timeout)` after `timeout`.
    ///
    /// # Errors
    /// Timeout, cancellation, an unknown server, a protocol or transport failure.
    pub fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: JsonObject,
        cancel: &Receiver<Infallible>,
        timeout: Duration,
    ) -> CallOutcome {
        let (reply, answer) = crossbeam_channel::bounded(1);
        let (cancel_tx, cancel_rx) = oneshot::channel();
        let request = Request::Call {
            server: server.to_owned(),
            tool: tool.to_owned(),
            arguments,
            timeout,
            cancel: cancel_rx,
            reply,
        };
        self.requests.send(request).map_err(|_| Error::RuntimeGone)?;
        select! {
            recv(answer) -> outcome => outcome.map_err(|_| Error::RuntimeGone)?,
            recv(cancel) -> _ => {
                let _ = cancel_tx.send(());
                Err(Error::Cancelled)
            }
        }
    }
}

struct Server {
    config: ServerConfig,
    service: Option<Service>,
    restarted: bool,
}

async fn run(
    configs: Vec<ServerConfig>,
    cwd: PathBuf,
    mut inbox: mpsc::UnboundedReceiver<Request>,
    started: Sender<Result<(Vec<McpToolInfo>, Vec<Report>)>>,
) {
    let mut starts = tokio::task::JoinSet::new();
    for (index, config) in configs.iter().cloned().enumerate() {
        let cwd = cwd.clone();
        starts.spawn(async move { (index, start_one(config, cwd).await) });
    }
    let mut outcomes: Vec<Option<StartOutcome>> = configs.iter().map(|_| None).collect();
    while let Some(joined) = starts.join_next().await {
        if let Ok((index, outcome)) = joined {
            outcomes[index] = Some(outcome);
        }
    }
    let mut servers = HashMap::new();
    let mut tools = Vec::new();
    let mut reports = Vec::new();
    for (config, outcome) in configs.into_iter().zip(outcomes) {
        let name = config.name.clone();
        let outcome = match outcome {
            Some(StartOutcome::Ready(service, listed)) => {
                let offered: Vec<McpToolInfo> =
                    listed.into_iter().filter(|t| config.offers(&t.name)).collect();
                let count = offered.len();
                tools.extend(offered);
                servers.insert(
                    name.clone(),
                    Server { config, service: Some(service), restarted: false },
                );
                ReportOutcome::Ready { tools: count }
            }
            Some(StartOutcome::Failed(message)) => ReportOutcome::Failed { message },
            Some(StartOutcome::TimedOut) => {
                ReportOutcome::TimedOut { seconds: config.startup_timeout.as_secs_f64() }
            }
            None => ReportOutcome::Failed { message: "its start panicked".to_owned() },
        };
        reports.push(Report { server: name, outcome });
    }
    if started.send(Ok((tools, reports))).is_err() {
        return;
    }
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            while let Some(request) = inbox.recv().await {
                match request {
                    Request::Call { server, tool, arguments, timeout, cancel, reply } => {
                        let Some(state) = servers.get_mut(&server) else {
                            let _ = reply.send(Err(Error::UnknownServer { server }));
                            continue;
                        };
                        let peer = match ensure_running(state, &cwd).await {
                            Ok(peer) => peer,
                            Err(message) => {
                                let _ = reply.send(Err(Error::Server { server, message }));
                                continue;
                            }
                        };
                        tokio::task::spawn_local(call(
                            peer, server, tool, arguments, timeout, cancel, reply,
                        ));
                    }
                }
            }
        })
        .await;
    // The connections drop here: stdio servers are killed (kill on drop).
}

/// The server's peer, starting it again first (once per session) when its transport closed.
async fn ensure_running(
    state: &mut Server,
    cwd: &Path,
) -> std::result::Result<rmcp::Peer<RoleClient>, String> {
    let alive = state.service.as_ref().is_some_and(|s| !s.is_transport_closed());
    if !alive {
        if state.restarted {
            return Err("the server exited and was already restarted once".to_owned());
        }
        state.restarted = true;
        state.service = None;
        match start_one(state.config.clone(), cwd.to_owned()).await {
            StartOutcome::Ready(service, _) => state.service = Some(service),
            StartOutcome::Failed(message) => {
                return Err(format!("the server exited; restarting it failed: {message}"));
            }
            StartOutcome::TimedOut => {
                return Err("the server exited; its restart timed out".to_owned());
            }
        }
    }
    state.service.as_ref().map(|s| s.peer().clone()).ok_or_else(|| "not running".to_owned())
}

async fn call(
    peer: rmcp::Peer<RoleClient>,
    server: String,
    tool: String,
    arguments: JsonObject,
    timeout: Duration,
    cancel: oneshot::Receiver<()>,
    reply: Sender<CallOutcome>,
) {
    let params = CallToolRequestParams::new(tool.clone()).with_arguments(arguments);
    let outcome = tokio::select! {
        result = tokio::time::timeout(timeout, peer.call_tool(params)) => match result {
            Ok(Ok(result)) => serde_json::to_value(&result)
                .map_err(|err| Error::Server { server, message: err.to_string() }),
            Ok(Err(err)) => Err(Error::Server { server, message: err.to_string() }),
            Err(_) => Err(Error::Timeout { server, tool, seconds: timeout.as_secs() }),
        },
        // Dropping the call's future above tells the server (`notifications/cancelled`).
        _ = cancel => Err(Error::Cancelled),
    };
    let _ = reply.send(outcome);
}

enum StartOutcome {
    Ready(Service, Vec<McpToolInfo>),
    Failed(String),
    TimedOut,
}

async fn start_one(config: ServerConfig, cwd: PathBuf) -> StartOutcome {
    let timeout = config.startup_timeout;
    match tokio::time::timeout(timeout, connect_and_list(&config, &cwd)).await {
        Ok(Ok((service, tools))) => StartOutcome::Ready(service, tools),
        Ok(Err(message)) => StartOutcome::Failed(message),
        Err(_) => StartOutcome::TimedOut,
    }
}

async fn connect_and_list(
    config: &ServerConfig,
    cwd: &Path,
) -> std::result::Result<(Service, Vec<McpToolInfo>), String> {
    let service = connect(config, cwd).await?;
    let listed = service.peer().list_all_tools().await.map_err(|err| err.to_string())?;
    let mut tools = Vec::with_capacity(listed.len());
    for tool in listed {
        let json = serde_json::to_value(&tool).map_err(|err| err.to_string())?;
        tools.push(tool_info(&config.name, &json, config.tool_timeout));
    }
    Ok((service, tools))
}

/// A `tools/list` entry (as JSON) as a `McpToolInfo`.
pub(crate) fn tool_info(server: &str, tool: &Value, timeout: Duration) -> McpToolInfo {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_owned();
    let annotations = tool.get("annotations");
    let hint = |name: &str| annotations.and_then(|a| a.get(name)).and_then(Value::as_bool);
    let mut description = text(tool.get("description"));
    if description.is_empty() {
        description = text(tool.get("title"));
    }
    McpToolInfo {
        server: server.to_owned(),
        name: text(tool.get("name")),
        description,
        input_schema: tool
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"type": "object"})),
        read_only: hint("readOnlyHint").unwrap_or(false),
        destructive: hint("destructiveHint"),
        timeout,
    }
}

async fn connect(config: &ServerConfig, cwd: &Path) -> std::result::Result<Service, String> {
    match &config.transport {
        Transport::Stdio { command, args, env, cwd: own_cwd } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args)
                .env_clear()
                .envs(env)
                .current_dir(own_cwd.as_deref().unwrap_or(cwd))
                .kill_on_drop(true);
            codecoder_sandbox::die_with_parent(cmd.as_std_mut());
            let (transport, _) = TokioChildProcess::builder(cmd)
                .stderr(Stdio::null())
                .spawn()
                .map_err(|err| format!("cannot run `{command}`: {err}"))?;
            ().serve(transport).await.map_err(|err| err.to_string())
        }
        Transport::Http { url, bearer_token, headers } => {
            let mut transport_config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            transport_config.auth_header = bearer_token.clone();
            for (name, value) in headers {
                let name = http::HeaderName::from_str(name)
                    .map_err(|err| format!("header `{name}`: {err}"))?;
                let value = http::HeaderValue::from_str(value)
                    .map_err(|err| format!("header `{name}`: {err}"))?;
                transport_config.custom_headers.insert(name, value);
            }
            let transport = StreamableHttpClientTransport::from_config(transport_config);
            ().serve(transport).await.map_err(|err| err.to_string())
        }
    }
}
