//! The MCP side: `initialize`, `tools/list`, `tools/call`, and the table of this process's
//! sessions. A call's arguments become the runtime's `Overrides` and `SessionRequest`; the
//! session is assembled by `codecoder_app` on a blocking thread, and its turn is driven by
//! `turn::run`.
//!
//! Invariant: a session is in the table as `Idle` (ready for `codecoder-reply`) or `Busy` (a
//! call runs its turn); two calls never drive one session at once. A session not in the table
//! is resumed from its log.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use codecoder_app::{Overrides, RunningSession, SessionRequest, Start};
use codecoder_protocol::AgentEvent;
use codecoder_stdx::{JoinOnDrop, spawn_named};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::json;
use tokio::sync::mpsc;

use crate::Config;
use crate::params::{self, Invalid, REPLY_TOOL, START_TOOL, StartParams};
use crate::turn::{self, TurnEnd};

/// The handler rmcp serves; cheap to clone (rmcp clones it per request).
#[derive(Clone)]
pub(crate) struct Server {
    base: Arc<Overrides>,
    version: Arc<str>,
    sessions: Sessions,
}

/// This process's sessions, by full id.
#[derive(Clone, Default)]
pub(crate) struct Sessions(Arc<Mutex<HashMap<String, Slot>>>);

enum Slot {
    Idle(Box<Session>),
    Busy,
}

/// A running session and the stream of its events. `close` ends it; dropping it ends it too,
/// by the field order: the agent's command sender goes first, which shuts the agent down and
/// closes the event channel the forwarder reads.
pub(crate) struct Session {
    pub(crate) running: RunningSession,
    pub(crate) events: mpsc::UnboundedReceiver<AgentEvent>,
    /// Dropped to stop the forwarder without waiting for the agent's next event.
    stop_forwarder: crossbeam_channel::Sender<()>,
    forwarder: JoinOnDrop<()>,
}

impl Sessions {
    fn take(&self, id: &str) -> Option<Result<Box<Session>, ()>> {
        let mut table = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match table.get_mut(id)? {
            Slot::Busy => Some(Err(())),
            slot @ Slot::Idle(_) => match std::mem::replace(slot, Slot::Busy) {
                Slot::Idle(session) => Some(Ok(session)),
                Slot::Busy => Some(Err(())),
            },
        }
    }

    fn put(&self, id: String, slot: Slot) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).insert(id, slot);
    }

    fn remove(&self, id: &str) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
    }

    /// Shuts every idle session down (and waits for it). Busy ones belong to their calls.
    pub(crate) fn close_all(&self) {
        let table = std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner));
        for slot in table.into_values() {
            match slot {
                Slot::Idle(session) => session.close(),
                Slot::Busy => {}
            }
        }
    }
}

impl Server {
    pub(crate) fn new(config: Config) -> Self {
        Self {
            base: Arc::new(config.overrides),
            version: config.version.into(),
            sessions: Sessions::default(),
        }
    }

    pub(crate) fn sessions(&self) -> Sessions {
        self.sessions.clone()
    }

    async fn start(
        &self,
        params: StartParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let elicit = supports_elicitation(&context);
        let overrides = self.overrides_for(&params)?;
        let prompt = params.prompt.clone();
        let first_prompt = prompt.clone();
        let started = tokio::task::spawn_blocking(move || {
            let runtime = codecoder_app::Runtime::load(overrides).map_err(|err| {
                let field =
                    if err.to_string().contains("no profile named") { "profile" } else { "config" };
                Failure::Params(format!("{field}: {err}"))
            })?;
            let mut notices = runtime.notices();
            let running = runtime
                .start(&SessionRequest {
                    start: Start::New,
                    interactive: elicit,
                    first_prompt: Some(first_prompt),
                    ..SessionRequest::new()
                })
                .map_err(|err| Failure::Tool(err.to_string()))?;
            notices.extend(running.notices.iter().cloned());
            Ok::<_, Failure>((running, notices))
        })
        .await
        .map_err(|err| McpError::internal_error(format!("starting the session: {err}"), None))?;
        let (running, notices) = match started {
            Ok(started) => started,
            Err(Failure::Params(message)) => return Err(McpError::invalid_params(message, None)),
            Err(Failure::Tool(message)) => return Ok(tool_error(&message)),
        };
        let session = Session::new(running).map_err(|err| {
            McpError::internal_error(format!("starting the session: {err}"), None)
        })?;
        let id = session.running.agent.session_id().to_string();
        self.sessions.put(id.clone(), Slot::Busy);
        Ok(self.run(id, Box::new(session), prompt, notices, &context).await)
    }

    async fn reply(
        &self,
        params: params::ReplyParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let session = match self.sessions.take(&params.session) {
            Some(Ok(session)) => session,
            Some(Err(())) => {
                return Ok(tool_error(&format!(
                    "session {} is running a turn for another call; wait for its result or cancel that call",
                    params.session
                )));
            }
            None => match self.resume(&params.session, supports_elicitation(&context)).await? {
                Ok(session) => session,
                Err(message) => return Ok(tool_error(&message)),
            },
        };
        let id = session.running.agent.session_id().to_string();
        self.sessions.put(id.clone(), Slot::Busy);
        Ok(self.run(id, session, params.prompt, Vec::new(), &context).await)
    }

    /// A session of an earlier server (or one this server never saw) from its log.
    async fn resume(
        &self,
        query: &str,
        elicit: bool,
    ) -> Result<Result<Box<Session>, String>, McpError> {
        let overrides = (*self.base).clone();
        let query = query.to_owned();
        let resumed = tokio::task::spawn_blocking(move || {
            let runtime = codecoder_app::Runtime::load(overrides)
                .map_err(|err| Failure::Tool(err.to_string()))?;
            runtime
                .start(&SessionRequest {
                    start: Start::Resume(Some(query.clone())),
                    interactive: elicit,
                    ..SessionRequest::new()
                })
                .map_err(|err| {
                    if err.is_unknown_session() {
                        // The id names no session (or several): the caller's argument is wrong.
                        Failure::Params(format!("threadId: {err}"))
                    } else {
                        // In use by another process, unreadable, a provider that will not start.
                        Failure::Tool(err.to_string())
                    }
                })
        })
        .await
        .map_err(|err| McpError::internal_error(format!("resuming the session: {err}"), None))?;
        match resumed {
            Ok(running) => Session::new(running).map(|s| Ok(Box::new(s))).map_err(|err| {
                McpError::internal_error(format!("resuming the session: {err}"), None)
            }),
            Err(Failure::Params(message)) => Err(McpError::invalid_params(message, None)),
            Err(Failure::Tool(message)) => Ok(Err(message)),
        }
    }

    /// Runs one turn and files the session back as idle (or drops it when its agent stopped).
    async fn run(
        &self,
        id: String,
        mut session: Box<Session>,
        prompt: String,
        notices: Vec<codecoder_app::Notice>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let end = turn::run(&mut session, prompt, context, supports_elicitation(context)).await;
        let result = turn::result(&id, &end, &notices);
        match end {
            TurnEnd::AgentStopped => {
                self.sessions.remove(&id);
                // Joining the agent's threads may wait for its commands to be killed.
                let _ = tokio::task::spawn_blocking(move || session.close()).await;
            }
            TurnEnd::Done { .. } => self.sessions.put(id, Slot::Idle(session)),
        }
        result
    }

    /// The runtime's overrides for a `codecoder` call: the server's own, the call's over them.
    fn overrides_for(&self, params: &StartParams) -> Result<Overrides, McpError> {
        let mut overrides = (*self.base).clone();
        if let Some(cwd) = &params.cwd {
            let base = match &overrides.cwd {
                Some(dir) => dir.clone(),
                None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            };
            let dir = base.join(cwd);
            if !dir.is_dir() {
                return Err(invalid(&Invalid(format!(
                    "cwd: {} is not a directory",
                    dir.display()
                ))));
            }
            overrides.cwd = Some(dir);
        }
        if params.profile.is_some() {
            overrides.profile.clone_from(&params.profile);
        }
        if params.model.is_some() {
            overrides.model.clone_from(&params.model);
        }
        // A mode the call names replaces the server's shortcut flags that set both.
        if params.sandbox.is_some() || params.approval_policy.is_some() {
            overrides.full_auto = false;
            overrides.bypass = false;
        }
        if params.sandbox.is_some() {
            overrides.sandbox = params.sandbox;
        }
        if params.approval_policy.is_some() {
            overrides.approval = params.approval_policy;
        }
        overrides.config.extend(params.config.iter().cloned());
        Ok(overrides)
    }
}

/// Why a session did not start: the caller's arguments, or something the tool reports.
enum Failure {
    Params(String),
    Tool(String),
}

impl Session {
    fn new(running: RunningSession) -> std::io::Result<Self> {
        let (sender, events) = mpsc::unbounded_channel();
        let source = running.agent.events.clone();
        let (stop_forwarder, stop) = crossbeam_channel::bounded::<()>(0);
        let forwarder = spawn_named("mcp-session-events", move || {
            loop {
                // A stop is seen before the next event, so `close` leaves the rest to the
                // agent's own shutdown.
                if let Err(crossbeam_channel::TryRecvError::Disconnected) = stop.try_recv() {
                    break;
                }
                crossbeam_channel::select! {
                    recv(source) -> event => {
                        let Ok(event) = event else { break };
                        if sender.send(event).is_err() {
                            break;
                        }
                    }
                    recv(stop) -> _ => break,
                }
            }
        })?;
        Ok(Self { running, events, stop_forwarder, forwarder })
    }

    /// Ends the session: stops the forwarder (joined, so no event is read behind the agent's
    /// back), then `AgentHandle::shutdown` cancels what runs and waits for the agent's end.
    fn close(self) {
        let Self { running, events, stop_forwarder, forwarder } = self;
        drop(stop_forwarder);
        drop(forwarder);
        drop(events);
        let _ = running.agent.shutdown();
    }
}

fn supports_elicitation(context: &RequestContext<RoleServer>) -> bool {
    context.peer.supported_elicitation_modes().contains(&ElicitationMode::Form)
}

fn invalid(err: &Invalid) -> McpError {
    McpError::invalid_params(err.to_string(), None)
}

pub(crate) fn tool_error(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

fn tools() -> Vec<Tool> {
    let output = Arc::new(params::output_schema());
    let mut start = Tool::new(
        START_TOOL,
        "Run a codecoder session: a coding agent works on the prompt in a directory (reading, \
         editing, running commands under codecoder's sandbox and approval policy) until it is \
         done, and returns its final message. structuredContent.threadId names the session for \
         codecoder-reply.",
        Arc::new(params::start_schema()),
    );
    start.output_schema = Some(Arc::clone(&output));
    let mut reply = Tool::new(
        REPLY_TOOL,
        "Continue a codecoder session with another prompt: the agent sees the whole \
         conversation so far. Give the threadId (or sessionId) of an earlier result.",
        Arc::new(params::reply_schema()),
    );
    reply.output_schema = Some(output);
    vec![start, reply]
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("codecoder", self.version.as_ref()))
            .with_instructions(
                "Call `codecoder` with a prompt to have codecoder do a coding task; continue the \
                 session with `codecoder-reply` and the threadId of the result.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools().into_iter().find(|tool| tool.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            START_TOOL => {
                let params = params::parse_start(&args).map_err(|err| invalid(&err))?;
                self.start(params, context).await?
            }
            REPLY_TOOL => {
                let params = params::parse_reply(&args).map_err(|err| invalid(&err))?;
                self.reply(params, context).await?
            }
            other => {
                return Err(McpError::invalid_params(
                    format!(
                        "unknown tool `{other}`: this server has `{START_TOOL}` and `{REPLY_TOOL}`"
                    ),
                    Some(json!({ "tools": [START_TOOL, REPLY_TOOL] })),
                ));
            }
        };
        Ok(result.into())
    }
}
