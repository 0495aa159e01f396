//! The synchronous facade over the MCP runtime thread.
//!
//! One named thread (`mcp-runtime`) runs a current-thread tokio runtime that owns every server
//! connection. The facade sends it requests over an unbounded tokio channel (sending needs no
//! runtime, and a request is only ever followed by a blocking wait for its answer, so the queue
//! stays as short as the number of calls in flight) and waits for answers on crossbeam channels.
//! What the runtime learns on its own (a server ready or failed, a changed tool list) goes into
//! a shared state the facade reads; what a server asks during a call (progress, elicitation,
//! sampling) goes to the calling thread, which owns the call's context.
//!
//! Invariants: `launch` returns at once, the servers start in parallel behind it, each ready,
//! failed or timed out within its startup timeout (`wait_started` blocks for that); dropping
//! the manager closes the request channel, the runtime drops every connection (killing stdio
//! servers) and the thread is joined; a server whose transport closed is started again once,
//! at its next call; a cancelled or timed-out call drops its request future, which sends the
//! server `notifications/cancelled`; the elicitation capability is declared only when a person
//! can answer, sampling only for a server whose configuration allows it and when the session's
//! model is at hand.

use std::cell::RefCell;
use std::collections::HashMap;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::rc::Rc;
use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use codecoder_stdx::JoinOnDrop;
use crossbeam_channel::{Receiver, Sender, select};
use rmcp::model::JsonObject;
use rmcp::model::ProtocolVersion;
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, ServerResult};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, PeerRequestOptions, RoleClient, RunningService,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::client::{Calls, Client, Interaction, Internal, Logger};
use crate::config::{ServerConfig, Transport};
use crate::error::{Error, Result};
use crate::interact::{CallHost, Sampler};

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

/// What the session offers the servers beyond their tools' calls.
#[derive(Clone)]
pub struct Options {
    /// A person can answer questions (the TUI, an editor): the elicitation capability is
    /// declared and a server's form is asked field by field.
    pub elicitation: bool,
    /// The session's model, for servers whose configuration allows sampling.
    pub sampler: Option<Arc<Sampler>>,
    /// Where the servers' log messages (`notifications/message`), their start outcomes and
    /// tool-list changes are written, a line each; `None`: nowhere.
    pub log: Option<PathBuf>,
}

impl Options {
    /// No person, no model, no log (`doctor`, tests).
    pub fn none() -> Self {
        Self { elicitation: false, sampler: None, log: None }
    }
}

enum Request {
    Call {
        server: String,
        tool: String,
        arguments: JsonObject,
        timeout: Duration,
        cancel: oneshot::Receiver<()>,
        interactions: Sender<Interaction>,
        reply: Sender<CallOutcome>,
    },
}

type Service = RunningService<RoleClient, Client>;

/// What the runtime learned, read by the facade. Locked only to copy or update, never across
/// an await or a channel operation.
#[derive(Default)]
pub(crate) struct Shared {
    /// Ready servers in the order they became ready, each with the tools it offers now.
    pub(crate) ready: Vec<(String, Vec<McpToolInfo>)>,
    /// Start outcomes, as they come.
    pub(crate) reports: Vec<Report>,
    /// Messages for the person not shown yet (a server that did not start).
    pub(crate) notices: Vec<String>,
    /// The protocol revision each ready server negotiated.
    pub(crate) protocols: Vec<(String, String)>,
}

/// The running servers, behind a blocking API.
pub struct McpManager {
    // Field order: the request sender drops first, which ends the runtime's loop; then the
    // thread is joined.
    requests: mpsc::UnboundedSender<Request>,
    shared: Arc<Mutex<Shared>>,
    order: Vec<String>,
    sampler: Option<Arc<Sampler>>,
    started: Receiver<()>,
    _thread: JoinOnDrop<()>,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpManager").field("servers", &self.order).finish_non_exhaustive()
    }
}

impl McpManager {
    /// Starts `servers` in parallel (stdio servers in `cwd` unless they name their own) and
    /// blocks until each is ready, failed or past its startup timeout: a report per server, in
    /// configuration order. No person, no sampling, no log (`doctor`, tests).
    ///
    /// # Errors
    /// When the runtime thread cannot start.
    pub fn start(servers: Vec<ServerConfig>, cwd: &Path) -> Result<(Self, Vec<Report>)> {
        let manager = Self::launch(servers, cwd, Options::none())?;
        let reports = manager.wait_started();
        Ok((manager, reports))
    }

    /// Starts `servers` in parallel and returns at once; each server's tools become available
    /// (`list_tools`, `take_notices`) once it is ready.
    ///
    /// # Errors
    /// When the runtime thread cannot start.
    pub fn launch(servers: Vec<ServerConfig>, cwd: &Path, options: Options) -> Result<Self> {
        // The HTTP transport's TLS uses the process-wide provider: ring, the one ureq uses. A
        // provider installed earlier stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (requests, inbox) = mpsc::unbounded_channel();
        // One message per server when its start is decided; nobody may be listening.
        let (started_tx, started) = crossbeam_channel::unbounded();
        let shared = Arc::new(Mutex::new(Shared::default()));
        let order = servers.iter().map(|s| s.name.clone()).collect();
        let sampler = options.sampler.clone();
        let cwd = cwd.to_owned();
        let runtime_shared = Arc::clone(&shared);
        let thread = codecoder_stdx::spawn_named("mcp-runtime", move || {
            let logger = Logger::new(options.log.clone());
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime,
                Err(err) => {
                    let message = format!("the MCP runtime did not start: {err}");
                    logger.line("codecoder", "error", &message);
                    let mut shared = lock(&runtime_shared);
                    for config in &servers {
                        shared.reports.push(Report {
                            server: config.name.clone(),
                            outcome: ReportOutcome::Failed { message: message.clone() },
                        });
                        let _ = started_tx.send(());
                    }
                    shared.notices.push(message);
                    return;
                }
            };
            let runtime_context =
                Runtime { cwd, options, logger, shared: runtime_shared, started: started_tx };
            runtime.block_on(run(servers, runtime_context, inbox));
        })?;
        Ok(Self { requests, shared, order, sampler, started, _thread: thread })
    }

    /// Each server in configuration order with how its start went, `None` while it is still
    /// starting; never waits.
    pub fn statuses(&self) -> Vec<(String, Option<ReportOutcome>)> {
        let shared = lock(&self.shared);
        self.order
            .iter()
            .map(|name| {
                let report = shared.reports.iter().find(|r| &r.server == name);
                (name.clone(), report.map(|r| r.outcome.clone()))
            })
            .collect()
    }

    /// Blocks until every server is ready, failed or past its startup timeout; the reports in
    /// configuration order.
    pub fn wait_started(&self) -> Vec<Report> {
        loop {
            {
                let shared = lock(&self.shared);
                if shared.reports.len() >= self.order.len() {
                    return self
                        .order
                        .iter()
                        .filter_map(|name| shared.reports.iter().find(|r| &r.server == name))
                        .cloned()
                        .collect();
                }
            }
            if self.started.recv().is_err() {
                // The runtime is gone: what it reported is all there will be.
                let shared = lock(&self.shared);
                return shared.reports.clone();
            }
        }
    }

    /// Whether every server is ready, failed or past its startup timeout; never waits.
    pub fn all_started(&self) -> bool {
        lock(&self.shared).reports.len() >= self.order.len()
    }

    /// As [`McpManager::wait_started`], but gives up as soon as `stop` is ready (a cancel, a
    /// signal): `Ok` once every server has a report, else `Err` with what `stop` gave (`None`:
    /// it disconnected).
    pub fn wait_started_or<T>(&self, stop: &Receiver<T>) -> std::result::Result<(), Option<T>> {
        loop {
            if self.all_started() {
                return Ok(());
            }
            select! {
                recv(self.started) -> started => {
                    if started.is_err() {
                        // The runtime is gone: what it reported is all there will be.
                        return Ok(());
                    }
                }
                recv(stop) -> message => return Err(message.ok()),
                // Another waiter may have taken the last start's message; look again.
                default(Duration::from_millis(200)) => {}
            }
        }
    }

    /// The tools the ready servers offer now: servers in configuration order, each server's
    /// tools in its order, with its `enabled_tools`/`disabled_tools` applied.
    pub fn list_tools(&self) -> Vec<McpToolInfo> {
        let shared = lock(&self.shared);
        let mut tools = Vec::new();
        for name in &self.order {
            if let Some((_, offered)) = shared.ready.iter().find(|(server, _)| server == name) {
                tools.extend(offered.iter().cloned());
            }
        }
        tools
    }

    /// The ready servers' tools in the order the servers became ready (and, within a server,
    /// its order; tools a server added later at the end of its list).
    pub(crate) fn tools_in_arrival_order(&self) -> Vec<McpToolInfo> {
        let shared = lock(&self.shared);
        shared.ready.iter().flat_map(|(_, tools)| tools.iter().cloned()).collect()
    }

    /// Whether `server` offers `tool` now (a server may drop a tool from its list).
    pub fn offers(&self, server: &str, tool: &str) -> bool {
        let shared = lock(&self.shared);
        shared
            .ready
            .iter()
            .any(|(name, tools)| name == server && tools.iter().any(|t| t.name == tool))
    }

    /// The protocol revision `server` negotiated (`2026-07-28`: stateless), once it is ready.
    pub fn protocol_version(&self, server: &str) -> Option<String> {
        let shared = lock(&self.shared);
        shared.protocols.iter().find(|(name, _)| name == server).map(|(_, v)| v.clone())
    }

    /// Messages for the person not taken yet (servers that did not start), each once.
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut lock(&self.shared).notices)
    }

    /// Calls `tool` of `server` and blocks for the result: `Err(Cancelled)` as soon as `cancel`
    /// fires (the server is told), `Err(Timeout)` after `timeout`. What the server asks while
    /// the call runs goes to `host` (progress, questions for the person) or, for sampling, to
    /// the session's model.
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
        host: &dyn CallHost,
    ) -> CallOutcome {
        let (reply, answer) = crossbeam_channel::bounded(1);
        let (cancel_tx, cancel_rx) = oneshot::channel();
        // Unbounded: the server's notifications must not block the runtime; a call sees few.
        let (interactions, asked) = crossbeam_channel::unbounded();
        let request = Request::Call {
            server: server.to_owned(),
            tool: tool.to_owned(),
            arguments,
            timeout,
            cancel: cancel_rx,
            interactions,
            reply,
        };
        self.requests.send(request).map_err(|_| Error::RuntimeGone)?;
        loop {
            select! {
                recv(answer) -> outcome => return outcome.map_err(|_| Error::RuntimeGone)?,
                recv(cancel) -> _ => {
                    let _ = cancel_tx.send(());
                    return Err(Error::Cancelled);
                }
                recv(asked) -> interaction => {
                    let Ok(interaction) = interaction else { continue };
                    crate::interact::serve(interaction, host, self.sampler.as_deref(), cancel);
                }
            }
        }
    }
}

pub(crate) fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

struct Server {
    config: ServerConfig,
    service: Option<Rc<Service>>,
    calls: Arc<Mutex<Calls>>,
    restarted: bool,
}

/// What the runtime's tasks share (one thread: `Rc`).
struct Runtime {
    cwd: PathBuf,
    options: Options,
    logger: Logger,
    shared: Arc<Mutex<Shared>>,
    started: Sender<()>,
}

type Servers = Rc<RefCell<HashMap<String, Server>>>;

async fn run(
    configs: Vec<ServerConfig>,
    runtime: Runtime,
    mut inbox: mpsc::UnboundedReceiver<Request>,
) {
    let runtime = Rc::new(runtime);
    let names: Vec<String> = configs.iter().map(|c| c.name.clone()).collect();
    let closing = Rc::clone(&runtime);
    let servers: Servers = Rc::default();
    // Notifications the servers' handlers pass on (a changed tool list).
    let (internal_tx, mut internal) = mpsc::unbounded_channel();
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            for config in configs {
                let runtime = Rc::clone(&runtime);
                let servers = Rc::clone(&servers);
                let internal_tx = internal_tx.clone();
                tokio::task::spawn_local(async move {
                    let calls = Arc::new(Mutex::new(Calls::default()));
                    let name = config.name.clone();
                    let outcome =
                        start_one(&config, &runtime, Arc::clone(&calls), internal_tx).await;
                    let report = match outcome {
                        StartOutcome::Ready(service, listed) => {
                            let offered: Vec<McpToolInfo> =
                                listed.into_iter().filter(|t| config.offers(&t.name)).collect();
                            let count = offered.len();
                            let protocol = negotiated(service.peer());
                            runtime.logger.line(&name, "info", &format!("protocol {protocol}"));
                            lock(&runtime.shared).protocols.push((name.clone(), protocol));
                            servers.borrow_mut().insert(
                                name.clone(),
                                Server { config, service: Some(Rc::new(service)), calls, restarted: false },
                            );
                            lock(&runtime.shared).ready.push((name.clone(), offered));
                            Report { server: name, outcome: ReportOutcome::Ready { tools: count } }
                        }
                        StartOutcome::Failed(message) => {
                            Report { server: name, outcome: ReportOutcome::Failed { message } }
                        }
                        StartOutcome::TimedOut => Report {
                            server: name,
                            outcome: ReportOutcome::TimedOut {
                                seconds: config.startup_timeout.as_secs_f64(),
                            },
                        },
                    };
                    let ready = matches!(report.outcome, ReportOutcome::Ready { .. });
                    runtime.logger.line(
                        &report.server,
                        if ready { "info" } else { "error" },
                        &report.to_string(),
                    );
                    {
                        let mut shared = lock(&runtime.shared);
                        if !ready {
                            shared.notices.push(report.to_string());
                        }
                        shared.reports.push(report);
                    }
                    let _ = runtime.started.send(());
                });
            }
            loop {
                tokio::select! {
                    request = inbox.recv() => {
                        let Some(request) = request else { break };
                        handle(request, &servers, &runtime, &internal_tx).await;
                    }
                    Some(event) = internal.recv() => match event {
                        Internal::ToolsChanged { server } => {
                            tokio::task::spawn_local(relist(server, Rc::clone(&servers), Rc::clone(&runtime)));
                        }
                    },
                }
            }
        })
        .await;
    // A server still starting is reported too, in the log.
    let reported: Vec<String> =
        lock(&closing.shared).reports.iter().map(|r| r.server.clone()).collect();
    for name in names.iter().filter(|name| !reported.contains(name)) {
        closing.logger.line(
            name,
            "error",
            &format!("MCP server `{name}` was still starting when the session ended"),
        );
    }
    // The connections drop here: stdio servers are killed (kill on drop).
}

async fn handle(
    request: Request,
    servers: &Servers,
    runtime: &Rc<Runtime>,
    internal: &mpsc::UnboundedSender<Internal>,
) {
    match request {
        Request::Call { server, tool, arguments, timeout, cancel, interactions, reply } => {
            let service = match ensure_running(servers, &server, runtime, internal).await {
                Ok(service) => service,
                Err(err) => {
                    let _ = reply.send(Err(err));
                    return;
                }
            };
            let Some(calls) = servers.borrow().get(&server).map(|s| Arc::clone(&s.calls)) else {
                let _ = reply.send(Err(Error::UnknownServer { server }));
                return;
            };
            tokio::task::spawn_local(call(
                service,
                server,
                tool,
                arguments,
                timeout,
                cancel,
                calls,
                interactions,
                reply,
            ));
        }
    }
}

/// Lists a server's tools again after its `notifications/tools/list_changed`: the shared list
/// becomes the new one (the facade appends what is new and refuses what is gone).
async fn relist(server: String, servers: Servers, runtime: Rc<Runtime>) {
    let Some((peer, config)) = servers
        .borrow()
        .get(&server)
        .and_then(|s| Some((s.service.as_ref()?.peer().clone(), s.config.clone())))
    else {
        return;
    };
    match list_tools(&peer, &config).await {
        Ok(listed) => {
            let offered: Vec<McpToolInfo> =
                listed.into_iter().filter(|t| config.offers(&t.name)).collect();
            let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
            runtime.logger.line(&server, "info", &format!("tools changed: {}", names.join(", ")));
            let mut shared = lock(&runtime.shared);
            if let Some(entry) = shared.ready.iter_mut().find(|(name, _)| *name == server) {
                entry.1 = offered;
            }
        }
        Err(message) => {
            runtime.logger.line(
                &server,
                "error",
                &format!("listing its changed tools failed: {message}"),
            );
        }
    }
}

/// The server's peer, starting it again first (once per session) when its transport closed.
async fn ensure_running(
    servers: &Servers,
    server: &str,
    runtime: &Rc<Runtime>,
    internal: &mpsc::UnboundedSender<Internal>,
) -> Result<Rc<Service>> {
    let (alive, restarted, config, calls) = {
        let servers = servers.borrow();
        let Some(state) = servers.get(server) else {
            return Err(Error::UnknownServer { server: server.to_owned() });
        };
        let alive = state.service.as_ref().is_some_and(|s| !s.is_transport_closed());
        (alive, state.restarted, state.config.clone(), Arc::clone(&state.calls))
    };
    let failed = |message: String| Error::Server { server: server.to_owned(), message };
    if !alive {
        if restarted {
            return Err(failed("the server exited and was already restarted once".to_owned()));
        }
        if let Some(state) = servers.borrow_mut().get_mut(server) {
            state.restarted = true;
            state.service = None;
        }
        match start_one(&config, runtime, calls, internal.clone()).await {
            StartOutcome::Ready(service, _) => {
                if let Some(state) = servers.borrow_mut().get_mut(server) {
                    state.service = Some(Rc::new(service));
                }
            }
            StartOutcome::Failed(message) => {
                return Err(failed(format!("the server exited; restarting it failed: {message}")));
            }
            StartOutcome::TimedOut => {
                return Err(failed("the server exited; its restart timed out".to_owned()));
            }
        }
    }
    servers
        .borrow()
        .get(server)
        .and_then(|s| s.service.clone())
        .ok_or_else(|| failed("not running".to_owned()))
}

#[allow(clippy::too_many_arguments)]
async fn call(
    service: Rc<Service>,
    server: String,
    tool: String,
    arguments: JsonObject,
    timeout: Duration,
    cancel: oneshot::Receiver<()>,
    calls: Arc<Mutex<Calls>>,
    interactions: Sender<Interaction>,
    reply: Sender<CallOutcome>,
) {
    let params = CallToolRequestParams::new(tool.clone()).with_arguments(arguments);
    let failed = |message: String| Error::Server { server: server.clone(), message };
    let timed_out = || Error::Timeout {
        server: server.clone(),
        tool: tool.clone(),
        seconds: timeout.as_secs(),
    };
    let peer = service.peer().clone();
    if is_stateless(&peer) {
        // The stateless revision: what the server needs from the person or the model comes
        // back as an `input_required` result; rmcp answers it through this connection's
        // handler (to the newest call, this one) and sends the call again. Dropping the future
        // (timeout, cancel) tells the server.
        let token = Calls::register_untracked(&calls, interactions);
        let outcome = tokio::select! {
            result = tokio::time::timeout(timeout, service.call_tool(params)) => match result {
                Ok(Ok(result)) => serde_json::to_value(&result).map_err(|err| failed(err.to_string())),
                Ok(Err(err)) => Err(failed(service_error(&err))),
                Err(_) => Err(timed_out()),
            },
            _ = cancel => Err(Error::Cancelled),
        };
        Calls::unregister(&calls, &token);
        let _ = reply.send(outcome);
        return;
    }
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle =
        match peer.send_request_with_option(request, PeerRequestOptions::no_options()).await {
            Ok(handle) => handle,
            Err(err) => {
                let _ = reply.send(Err(failed(service_error(&err))));
                return;
            }
        };
    // The server's progress notifications carry the token the peer put in the request's
    // `_meta`; its questions during the call go to the newest call in flight.
    let token = handle.progress_token.clone();
    let id = handle.id.clone();
    Calls::register(&calls, token.clone(), interactions);
    let outcome = tokio::select! {
        result = tokio::time::timeout(timeout, handle.await_response()) => match result {
            Ok(Ok(ServerResult::CallToolResult(result))) => {
                serde_json::to_value(&result).map_err(|err| failed(err.to_string()))
            }
            Ok(Ok(other)) => Err(failed(format!(
                "unexpected answer to tools/call: {}",
                serde_json::to_string(&other).unwrap_or_default()
            ))),
            Ok(Err(err)) => Err(failed(service_error(&err))),
            Err(_) => {
                cancel_request(&peer, id, "timed out").await;
                Err(timed_out())
            }
        },
        _ = cancel => {
            cancel_request(&peer, id, "cancelled by the user").await;
            Err(Error::Cancelled)
        }
    };
    Calls::unregister(&calls, &token);
    let _ = reply.send(outcome);
}

/// Whether the connection negotiated the stateless revision (2026-07-28 or newer).
pub(crate) fn is_stateless(peer: &rmcp::Peer<RoleClient>) -> bool {
    peer.peer_info().is_some_and(|info| info.protocol_version >= ProtocolVersion::V_2026_07_28)
}

/// The protocol revision a server negotiated, once started.
pub(crate) fn negotiated(peer: &rmcp::Peer<RoleClient>) -> String {
    peer.peer_info().map_or_else(|| "unknown".to_owned(), |info| info.protocol_version.to_string())
}

/// Tells the server to stop working on request `id` (`notifications/cancelled`).
async fn cancel_request(peer: &rmcp::Peer<RoleClient>, id: rmcp::model::RequestId, reason: &str) {
    let params = rmcp::model::CancelledNotificationParam::new(Some(id), Some(reason.to_owned()));
    let _ = peer.notify_cancelled(params).await;
}

enum StartOutcome {
    Ready(Service, Vec<McpToolInfo>),
    Failed(String),
    TimedOut,
}

async fn start_one(
    config: &ServerConfig,
    runtime: &Runtime,
    calls: Arc<Mutex<Calls>>,
    internal: mpsc::UnboundedSender<Internal>,
) -> StartOutcome {
    let timeout = config.startup_timeout;
    let client = Client::new(config, &runtime.options, runtime.logger.clone(), calls, internal);
    match tokio::time::timeout(timeout, connect_and_list(config, &runtime.cwd, client)).await {
        Ok(Ok((service, tools))) => StartOutcome::Ready(service, tools),
        Ok(Err(message)) => StartOutcome::Failed(message),
        Err(_) => StartOutcome::TimedOut,
    }
}

async fn connect_and_list(
    config: &ServerConfig,
    cwd: &Path,
    client: Client,
) -> std::result::Result<(Service, Vec<McpToolInfo>), String> {
    let service = connect(config, cwd, client).await?;
    let tools = list_tools(service.peer(), config).await?;
    Ok((service, tools))
}

async fn list_tools(
    peer: &rmcp::Peer<RoleClient>,
    config: &ServerConfig,
) -> std::result::Result<Vec<McpToolInfo>, String> {
    let listed = peer.list_all_tools().await.map_err(|err| service_error(&err))?;
    let mut tools = Vec::with_capacity(listed.len());
    for tool in listed {
        let json = serde_json::to_value(&tool).map_err(|err| err.to_string())?;
        tools.push(tool_info(&config.name, &json, config.tool_timeout));
    }
    Ok(tools)
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

/// How a connection starts: `server/discover` first (the stateless 2026-07-28 revision), and
/// the `initialize` handshake when the server answers it as a legacy server does (an error for
/// the unknown method).
fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: None,
    }
}

async fn connect(
    config: &ServerConfig,
    cwd: &Path,
    client: Client,
) -> std::result::Result<Service, String> {
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
            client
                .serve_with_lifecycle(transport, lifecycle())
                .await
                .map_err(|err| init_error(&err))
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
            client
                .serve_with_lifecycle(transport, lifecycle())
                .await
                .map_err(|err| init_error(&err))
        }
        Transport::InProcess(bridge) => {
            let (ours, theirs) = tokio::io::duplex(BRIDGE_BUFFER);
            tokio::spawn(pump_bridge(theirs, bridge.clone()));
            client
                .serve_with_lifecycle(ours, lifecycle())
                .await
                .map_err(|err| format!("in-process server: {}", init_error(&err)))
        }
        Transport::Sse { url, bearer_token, headers } => {
            let transport = crate::sse::connect(url, bearer_token.as_deref(), headers).await?;
            client
                .serve_with_lifecycle(transport, lifecycle())
                .await
                .map_err(|err| format!("SSE `{url}`: {}", init_error(&err)))
        }
    }
}

/// Bytes buffered each way between the client and an in-process server's pump.
const BRIDGE_BUFFER: usize = 1 << 20;

/// Carries an in-process server's traffic: each line the client writes goes to the bridge on a
/// blocking thread (several at once, as the client may have several requests in flight), and
/// each response comes back as a line. A message the bridge cannot answer gets a JSON-RPC
/// error, so the call waiting for it ends.
async fn pump_bridge(stream: tokio::io::DuplexStream, bridge: crate::config::Bridge) {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
    let (read, mut write) = tokio::io::split(stream);
    let mut lines = tokio::io::BufReader::new(read).lines();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        while let Some(mut line) = rx.recv().await {
            line.push('\n');
            if write.write_all(line.as_bytes()).await.is_err() {
                return;
            }
        }
    });
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
        let id = message.get("id").cloned();
        let bridge = bridge.clone();
        let tx = tx.clone();
        tokio::spawn(async move {
            let answer = tokio::task::spawn_blocking(move || bridge.0.send(message)).await;
            let response = match (answer, id) {
                (Ok(Ok(Some(response))), _) => response,
                (Ok(Ok(None)), _) | (_, None) => return,
                (Ok(Err(error)), Some(id)) => serde_json::json!({
                    "jsonrpc": "2.0", "id": id,
                    "error": {"code": -32603, "message": error},
                }),
                (Err(join), Some(id)) => serde_json::json!({
                    "jsonrpc": "2.0", "id": id,
                    "error": {"code": -32603, "message": join.to_string()},
                }),
            };
            let _ = tx.send(response.to_string());
        });
    }
    drop(tx);
    let _ = writer.await;
}

/// What went wrong with a request, in words: rmcp's own text names the transport's Rust type.
fn service_error(err: &rmcp::ServiceError) -> String {
    match err {
        rmcp::ServiceError::McpError(data) => {
            format!("the server answered with an error: {} (code {})", data.message, data.code.0)
        }
        rmcp::ServiceError::TransportSend(transport) => {
            format!("the connection to the server failed: {}", transport.error)
        }
        rmcp::ServiceError::TransportClosed => "the server closed the connection".to_owned(),
        other => other.to_string(),
    }
}

/// Why the handshake failed, in words (see `service_error`).
fn init_error(err: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError;
    match err {
        ClientInitializeError::TransportError { error, context } => {
            format!("{context}: {}", error.error)
        }
        ClientInitializeError::ConnectionClosed(why) => {
            format!("the server closed the connection ({why})")
        }
        other => other.to_string(),
    }
}
