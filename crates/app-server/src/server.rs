//! The dispatcher: the one thread that owns the server's state — the handshake, the loaded
//! threads, the open server requests and their ids. It reads the client's messages (from the
//! reader thread) and the workers' reports, answers requests, and starts, resumes and forks
//! sessions through the runtime.
//!
//! Invariants: before `initialize` every request is answered "Not initialized", a second one
//! "Already initialized"; an unknown method gets -32601 and params that do not fit -32602 naming
//! the field; a thread runs at most one turn at a time, and `turn/completed` is written only
//! after the dispatcher marked the thread idle and settled the turn's open requests (so a client
//! may start the next turn the moment it reads it).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use codecoder_app::{
    ApprovalMode, Overrides, Runtime, SessionControls, SessionRequest, SessionSummary, Start,
    history::Viewer,
};
use codecoder_protocol::{AgentCommand, AskUserAnswer, ContentItem, Image};
use codecoder_stdx::{JoinOnDrop, spawn_named};
use crossbeam_channel::{Receiver, Sender, select};
use serde::Serialize;
use serde_json::Value;

use crate::thread::{Control, Internal, Worker};
use crate::types::{
    Account, AccountReadResponse, ApprovalDecision, ApprovalResponse, AskForApproval,
    ClientRequest, ConfigReadParams, ConfigReadResponse, ConfigRequirementsReadResponse,
    ConfigSnapshot, EmptyListResponse, ExperimentalFeatureListResponse, InitializeParams,
    InitializeResponse, Model, ModelListResponse, PluginListResponse, ReasoningEffortOption,
    RequestId, SandboxMode, SandboxPolicy, ServerNotification, ServerRequestResolvedNotification,
    SkillsListEntry, SkillsListResponse, Thread, ThreadListParams, ThreadListResponse,
    ThreadLoadedListResponse, ThreadReadParams, ThreadReadResponse, ThreadResumeParams,
    ThreadStartParams, ThreadStartResponse, ThreadStartedNotification, ThreadStatus,
    ThreadTurnsListParams, ThreadTurnsListResponse, ThreadUnsubscribeResponse,
    ToolRequestUserInputResponse, Turn, TurnInterruptParams, TurnInterruptResponse,
    TurnStartParams, TurnStartResponse, TurnStatus, TurnSteerParams, TurnSteerResponse, UserInput,
    WarningNotification,
};
use crate::wire::{INTERNAL_ERROR, Incoming, METHOD_NOT_FOUND, RpcError, params, to_value};
use crate::writer::WriterMsg;

/// Threads per `thread/list` page unless the client says otherwise, and the most it may ask.
const DEFAULT_PAGE: u32 = 25;
const MAX_PAGE: u32 = 100;
/// Characters of the first user message a thread's preview keeps.
const PREVIEW_CHARS: usize = 120;

/// A loaded thread.
struct LoadedThread {
    /// The agent's command channel (cancel).
    cmd: Sender<AgentCommand>,
    /// The worker's control channel. Declared before `worker`: dropping the entry closes it
    /// first, so the worker shuts its agent down and the join below returns.
    control: Sender<Control>,
    /// The approval mode can change per turn.
    controls: SessionControls,
    /// The running turn's id.
    active_turn: Option<String>,
    /// What `thread/resume` of a loaded thread answers, its turns read from the log again.
    response: ThreadStartResponse,
    /// The session's tools, which describe the calls its log replays.
    tools: Arc<dyn Viewer + Send + Sync>,
    /// What the session runs with; a turn that asks for others resumes it with them first.
    settings: Settings,
    /// Which load of the thread this is: a worker's `Closed` names its own, so the worker of an
    /// earlier load, ending after a reload, does not unload the later one.
    generation: u64,
    /// Joined on drop.
    _worker: JoinOnDrop<()>,
}

/// What a loaded thread's session runs with, as far as a turn may change it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Settings {
    model: String,
    provider: String,
    /// The reasoning effort asked for (or configured); `None`: the model's default.
    effort: Option<String>,
    cwd: String,
    sandbox: SandboxMode,
}

/// The reasoning efforts a client may ask for, weakest first.
const EFFORTS: [&str; 6] = ["none", "minimal", "low", "medium", "high", "xhigh"];

/// What the model is told when the client did not opt into questions.
const NO_QUESTIONS: &str = "the app driving this session (through codecoder app-server) does not \
     take questions: it did not opt into the experimental `item/tool/requestUserInput` request";

/// A server request waiting for the client's answer.
struct Pending {
    thread_id: String,
    waiting: Waiting,
}

/// What a server request waits to be answered with.
enum Waiting {
    /// An approval's decision.
    Approval(codecoder_protocol::Reply<codecoder_protocol::ApprovalDecision>),
    /// The answer to the question `question_id`.
    Question { question_id: String, reply: codecoder_protocol::Reply<AskUserAnswer> },
}

pub(crate) struct Server {
    config: crate::ServeConfig,
    initialized: bool,
    /// The client set `capabilities.experimentalApi`: it is sent the model's questions.
    questions: bool,
    threads: HashMap<String, LoadedThread>,
    pending: HashMap<RequestId, Pending>,
    next_request: i64,
    next_generation: u64,
    /// The modes the server's own settings resolve to (read at `initialize`): no thread's
    /// sandbox is looser than this one.
    limits: codecoder_app::Modes,
    out: Sender<WriterMsg>,
    internal_tx: Sender<Internal>,
}

impl Server {
    pub(crate) fn new(
        config: crate::ServeConfig,
        out: Sender<WriterMsg>,
        internal_tx: Sender<Internal>,
    ) -> Self {
        Self {
            config,
            initialized: false,
            questions: false,
            threads: HashMap::new(),
            pending: HashMap::new(),
            next_request: 0,
            next_generation: 0,
            // Until `initialize` reads the server's settings, nothing is started anyway.
            limits: codecoder_app::Modes {
                sandbox: codecoder_app::SandboxMode::ReadOnly,
                approval: ApprovalMode::OnRequest,
                bypass: false,
            },
            out,
            internal_tx,
        }
    }

    /// Serves until the client closes its end, then shuts every thread down.
    pub(crate) fn run(mut self, incoming: &Receiver<String>, internal: &Receiver<Internal>) {
        loop {
            select! {
                recv(incoming) -> line => match line {
                    Ok(line) => self.line(&line),
                    Err(_) => break,
                },
                recv(internal) -> message => match message {
                    Ok(message) => self.internal(message),
                    // Never: the server holds a sender itself.
                    Err(_) => break,
                },
            }
        }
        // Unanswered requests count as cancelled; each worker shuts its agent down (running
        // commands are killed) and is joined when its entry drops.
        self.pending.clear();
        for thread in self.threads.values() {
            let _ = thread.control.send(Control::Shutdown);
        }
        self.threads.clear();
    }

    fn send(&self, message: WriterMsg) {
        let _ = self.out.send(message);
    }

    fn notify(&self, notification: ServerNotification) {
        self.send(WriterMsg::Notification(notification));
    }

    fn respond(&self, id: RequestId, result: Result<Value, RpcError>) {
        match result {
            Ok(result) => self.send(WriterMsg::Response { id, result }),
            Err(error) => self.send(WriterMsg::Error { id: Some(id), error }),
        }
    }

    fn line(&mut self, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        match crate::wire::decode(line) {
            Err(err) => self.send(WriterMsg::Error { id: err.id, error: err.error }),
            Ok(Incoming::Request { id, method, params }) => {
                let result = self.request(&method, params);
                self.respond(id, result);
            }
            // `initialized` and anything else a client tells us need no answer.
            Ok(Incoming::Notification { .. }) => {}
            Ok(Incoming::Response { id, result }) => self.resolve(&id, Some(result)),
            // An error answer declines.
            Ok(Incoming::Error { id, .. }) => self.resolve(&id, None),
        }
    }

    fn request(&mut self, method: &str, raw: Value) -> Result<Value, RpcError> {
        let request = match method {
            "initialize" => ClientRequest::Initialize(params(raw)?),
            "thread/start" => ClientRequest::ThreadStart(params(raw)?),
            "thread/resume" => ClientRequest::ThreadResume(params(raw)?),
            "thread/fork" => ClientRequest::ThreadFork(params(raw)?),
            "thread/list" => ClientRequest::ThreadList(params(raw)?),
            "turn/start" => ClientRequest::TurnStart(params(raw)?),
            "turn/interrupt" => ClientRequest::TurnInterrupt(params(raw)?),
            "thread/compact/start" => ClientRequest::ThreadCompactStart(params(raw)?),
            "thread/loaded/list" => ClientRequest::ThreadLoadedList(params(raw)?),
            "account/read" => ClientRequest::AccountRead(params(raw)?),
            "model/list" => ClientRequest::ModelList(params(raw)?),
            "config/read" => ClientRequest::ConfigRead(params(raw)?),
            "configRequirements/read" => ClientRequest::ConfigRequirementsRead(params(raw)?),
            "hooks/list" => ClientRequest::HooksList(params(raw)?),
            "skills/list" => ClientRequest::SkillsList(params(raw)?),
            "collaborationMode/list" => ClientRequest::CollaborationModeList(params(raw)?),
            "thread/unsubscribe" => ClientRequest::ThreadUnsubscribe(params(raw)?),
            "thread/read" => ClientRequest::ThreadRead(params(raw)?),
            "thread/turns/list" => ClientRequest::ThreadTurnsList(params(raw)?),
            "turn/steer" => ClientRequest::TurnSteer(params(raw)?),
            "config/batchWrite" | "config/value/write" => {
                return Err(RpcError::invalid_request(
                    "codecoder app-server does not change its configuration for a client: a \
                     model, effort or policy chosen applies to this thread's turns from the \
                     next one",
                ));
            }
            "plugin/list" => ClientRequest::PluginList(params(raw)?),
            "experimentalFeature/list" => ClientRequest::ExperimentalFeatureList(params(raw)?),
            _ => {
                return Err(RpcError::new(METHOD_NOT_FOUND, format!("method not found: {method}")));
            }
        };
        match (request, self.initialized) {
            (ClientRequest::Initialize(params), false) => self.initialize(params),
            (ClientRequest::Initialize(_), true) => {
                Err(RpcError::invalid_request("Already initialized"))
            }
            (_, false) => Err(RpcError::invalid_request("Not initialized")),
            (ClientRequest::ThreadStart(params), true) => self.thread_start(params),
            (ClientRequest::ThreadResume(params), true) => self.thread_resume(params),
            (ClientRequest::ThreadFork(params), true) => self.thread_fork(params),
            (ClientRequest::ThreadList(params), true) => self.thread_list(&params),
            (ClientRequest::TurnStart(params), true) => self.turn_start(params),
            (ClientRequest::TurnInterrupt(params), true) => self.turn_interrupt(&params),
            (ClientRequest::ThreadCompactStart(params), true) => {
                self.thread_compact_start(&params.thread_id)
            }
            (ClientRequest::ThreadLoadedList(_), true) => ok(&ThreadLoadedListResponse {
                data: self.threads.keys().cloned().collect(),
                next_cursor: None,
            }),
            (ClientRequest::AccountRead(_), true) => ok(&AccountReadResponse {
                account: Some(Account::ApiKey),
                requires_openai_auth: false,
            }),
            (ClientRequest::ModelList(_), true) => self.model_list(),
            (ClientRequest::ThreadUnsubscribe(params), true) => {
                self.thread_unsubscribe(&params.thread_id)
            }
            (ClientRequest::ThreadRead(params), true) => self.thread_read(&params),
            (ClientRequest::ThreadTurnsList(params), true) => self.thread_turns_list(&params),
            (ClientRequest::TurnSteer(params), true) => self.turn_steer(params),
            (ClientRequest::PluginList(_), true) => ok(&PluginListResponse::default()),
            (ClientRequest::ExperimentalFeatureList(_), true) => {
                ok(&ExperimentalFeatureListResponse::default())
            }
            (ClientRequest::ConfigRead(params), true) => self.config_read(params),
            (ClientRequest::ConfigRequirementsRead(_), true) => {
                ok(&ConfigRequirementsReadResponse { requirements: None })
            }
            (ClientRequest::HooksList(_) | ClientRequest::CollaborationModeList(_), true) => {
                ok(&EmptyListResponse::default())
            }
            (ClientRequest::SkillsList(params), true) => ok(&SkillsListResponse {
                data: params
                    .cwds
                    .unwrap_or_default()
                    .into_iter()
                    .map(|cwd| SkillsListEntry { cwd, skills: Vec::new(), errors: Vec::new() })
                    .collect(),
            }),
        }
    }

    /// A loaded thread as `thread/resume` would answer it (its turns when asked for), else the
    /// index's summary of a stored one.
    fn thread_read(&self, params: &ThreadReadParams) -> Result<Value, RpcError> {
        let mut loaded = self.threads.iter().filter(|(id, _)| id.starts_with(&params.thread_id));
        if let (Some((id, thread)), None) = (loaded.next(), loaded.next()) {
            let mut read = thread.response.thread.clone();
            read.status = self.status(id);
            if let (true, Some(path)) = (params.include_turns, &read.path) {
                read.turns =
                    crate::history::turns(Path::new(path), &read.id, &read.cwd, &*thread.tools);
            }
            return ok(&ThreadReadResponse { thread: read });
        }
        let summary = summary_of(&params.thread_id).ok_or_else(|| {
            RpcError::invalid_params(format!(
                "invalid params: `threadId`: no thread {}",
                params.thread_id
            ))
        })?;
        ok(&ThreadReadResponse { thread: self.stored_thread(&summary) })
    }

    /// A page of a loaded thread's turns, newest first unless `asc` is asked; the cursor is
    /// the number of turns the earlier pages held.
    fn thread_turns_list(&self, params: &ThreadTurnsListParams) -> Result<Value, RpcError> {
        let thread =
            self.threads.get(&params.thread_id).ok_or_else(|| not_loaded(&params.thread_id))?;
        let response = &thread.response.thread;
        let mut turns = match &response.path {
            Some(path) => {
                crate::history::turns(Path::new(path), &response.id, &response.cwd, &*thread.tools)
            }
            None => Vec::new(),
        };
        if params.sort_direction.as_deref() != Some("asc") {
            turns.reverse();
        }
        let skip = match &params.cursor {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().map_err(|_| {
                RpcError::invalid_params(format!(
                    "invalid params: `cursor`: not a cursor: {cursor}"
                ))
            })?,
        };
        let limit = params.limit.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
        let total = turns.len();
        let data: Vec<Turn> = turns.into_iter().skip(skip).take(limit).collect();
        let end = skip + data.len();
        let next_cursor = (end < total).then(|| end.to_string());
        ok(&ThreadTurnsListResponse { data, next_cursor })
    }

    /// A stored thread, as `thread/list` shows it.
    fn stored_thread(&self, s: &SessionSummary) -> Thread {
        Thread {
            id: s.id.clone(),
            preview: preview(&s.title),
            model_provider: s.provider.clone(),
            created_at: secs(s.created_ms),
            updated_at: secs(s.updated_ms),
            path: Some(s.path.to_string_lossy().into_owned()),
            cwd: s.cwd.clone(),
            cli_version: self.config.version.clone(),
            source: "appServer".to_owned(),
            ephemeral: false,
            session_id: s.id.clone(),
            project_id: None,
            status: self.status(&s.id),
            turns: Vec::new(),
        }
    }

    /// Unloads the thread: dropping its entry ends its worker, which shuts the agent down
    /// (cancelling a running turn) and is joined; its open requests are withdrawn.
    fn thread_unsubscribe(&mut self, thread_id: &str) -> Result<Value, RpcError> {
        let Some(thread) = self.threads.remove(thread_id) else {
            return ok(&ThreadUnsubscribeResponse { status: "notLoaded".to_owned() });
        };
        drop(thread);
        self.pending.retain(|_, pending| pending.thread_id != thread_id);
        ok(&ThreadUnsubscribeResponse { status: "unsubscribed".to_owned() })
    }

    /// The configured model first, then the catalog's models of the server's provider.
    fn model_list(&self) -> Result<Value, RpcError> {
        let runtime = Runtime::load(self.config.overrides.clone()).map_err(app_error)?;
        let choices = runtime.model_choices();
        let data = choices
            .models
            .iter()
            .enumerate()
            .map(|(n, choice)| {
                let efforts: &[&str] = if choice.reasoning { &EFFORTS[1..] } else { &["none"] };
                let default_effort = match &choices.reasoning_effort {
                    Some(effort) if n == 0 => effort.clone(),
                    _ if choice.reasoning => "medium".to_owned(),
                    _ => "none".to_owned(),
                };
                Model {
                    id: choice.id.clone(),
                    model: choice.id.clone(),
                    display_name: choice.id.clone(),
                    description: match choice.context_window {
                        Some(tokens) => format!("{} · context {tokens} tokens", choices.provider),
                        None => format!("{} · context window unknown", choices.provider),
                    },
                    hidden: false,
                    is_default: n == 0,
                    supported_reasoning_efforts: efforts
                        .iter()
                        .map(|effort| ReasoningEffortOption {
                            reasoning_effort: (*effort).to_owned(),
                            description: format!("{effort} reasoning"),
                        })
                        .collect(),
                    default_reasoning_effort: default_effort,
                    input_modalities: vec!["text".to_owned(), "image".to_owned()],
                }
            })
            .collect();
        ok(&ModelListResponse { data, next_cursor: None })
    }

    /// The settings a thread started now (in `cwd`) runs with.
    fn config_read(&self, params: ConfigReadParams) -> Result<Value, RpcError> {
        let mut overrides = self.config.overrides.clone();
        if let Some(cwd) = params.cwd {
            overrides.cwd = Some(PathBuf::from(cwd));
        }
        let runtime = Runtime::load(overrides).map_err(app_error)?;
        let choices = runtime.model_choices();
        let context_window = choices.models.first().and_then(|choice| choice.context_window);
        ok(&ConfigReadResponse {
            config: ConfigSnapshot {
                model: Some(choices.model),
                model_provider: Some(choices.provider),
                model_reasoning_effort: choices.reasoning_effort,
                model_context_window: context_window,
                approval_policy: Some(ask_for_approval(self.limits.approval)),
                sandbox_mode: Some(self.ceiling()),
            },
            origins: serde_json::Map::new(),
            layers: params.include_layers.unwrap_or(false).then(Vec::new),
        })
    }

    /// The loosest sandbox the server lets a thread run under: its own.
    fn ceiling(&self) -> SandboxMode {
        if self.limits.bypass {
            return SandboxMode::DangerFullAccess;
        }
        match self.limits.sandbox {
            codecoder_app::SandboxMode::ReadOnly => SandboxMode::ReadOnly,
            codecoder_app::SandboxMode::WorkspaceWrite => SandboxMode::WorkspaceWrite,
            codecoder_app::SandboxMode::DangerFullAccess => SandboxMode::DangerFullAccess,
        }
    }

    /// `asked`, unless it is looser than the server's own sandbox: then the server's, and the
    /// client is told with a `warning`.
    fn within_limits(&self, asked: SandboxMode, thread_id: Option<&str>) -> SandboxMode {
        let rank = |mode: SandboxMode| match mode {
            SandboxMode::ReadOnly => 0,
            SandboxMode::WorkspaceWrite => 1,
            SandboxMode::DangerFullAccess => 2,
        };
        let ceiling = self.ceiling();
        if rank(asked) <= rank(ceiling) {
            return asked;
        }
        self.notify(ServerNotification::Warning(WarningNotification {
            thread_id: thread_id.map(str::to_owned),
            message: format!(
                "this server allows at most the {} sandbox (its own setting); the thread runs \
                 under it, not {}",
                sandbox_name(ceiling),
                sandbox_name(asked)
            ),
        }));
        ceiling
    }

    fn initialize(&mut self, params: InitializeParams) -> Result<Value, RpcError> {
        self.initialized = true;
        let capabilities = params.capabilities.unwrap_or_default();
        self.questions = capabilities.experimental_api;
        if let Some(methods) = capabilities.opt_out_notification_methods {
            self.send(WriterMsg::OptOut(methods));
        }
        let home = codecoder_app::home().map_err(app_error)?;
        // A configuration that does not load fails each thread's start with its error; until
        // then the strictest limits hold.
        if let Ok(runtime) = Runtime::load(self.config.overrides.clone()) {
            self.limits = runtime.modes(true);
        }
        ok(&InitializeResponse {
            user_agent: format!("codecoder/{}", self.config.version),
            codex_home: home.to_string_lossy().into_owned(),
            platform_family: std::env::consts::FAMILY.to_owned(),
            platform_os: std::env::consts::OS.to_owned(),
        })
    }

    fn thread_start(&mut self, params: ThreadStartParams) -> Result<Value, RpcError> {
        let sandbox = params.sandbox.map(|asked| self.within_limits(asked, None));
        let overrides = self.overrides(params.cwd.as_deref(), params.approval_policy, sandbox);
        let request = SessionRequest {
            start: Start::New,
            model: params.model,
            provider: params.model_provider,
            ephemeral: params.ephemeral.unwrap_or(false),
            interactive: true,
            ..SessionRequest::new()
        };
        let response = self.load(overrides, &request, None)?;
        self.notify(ServerNotification::ThreadStarted(ThreadStartedNotification {
            thread: response.thread.clone(),
        }));
        ok(&response)
    }

    fn thread_resume(&mut self, params: ThreadResumeParams) -> Result<Value, RpcError> {
        // A loaded thread (by id or unique prefix) is answered as it is: its log is ours.
        let mut loaded = self.threads.iter().filter(|(id, _)| id.starts_with(&params.thread_id));
        if let (Some((id, thread)), None) = (loaded.next(), loaded.next()) {
            let mut response = thread.response.clone();
            response.thread.status = self.status(id);
            // The turns it ran since it was loaded are in its log.
            if let Some(path) = &response.thread.path {
                let thread_id = response.thread.id.clone();
                response.thread.turns = crate::history::turns(
                    Path::new(path),
                    &thread_id,
                    &response.thread.cwd,
                    &*thread.tools,
                );
            }
            return ok(&response);
        }
        let summary = summary_of(&params.thread_id);
        let cwd = params.cwd.clone().or_else(|| summary.as_ref().map(|s| s.cwd.clone()));
        let sandbox = params.sandbox.map(|asked| self.within_limits(asked, None));
        let overrides = self.overrides(cwd.as_deref(), params.approval_policy, sandbox);
        let request = SessionRequest {
            start: Start::Resume(Some(params.thread_id)),
            model: params.model,
            provider: params.model_provider,
            interactive: true,
            ..SessionRequest::new()
        };
        ok(&self.load(overrides, &request, summary.as_ref())?)
    }

    fn thread_fork(&mut self, params: ThreadResumeParams) -> Result<Value, RpcError> {
        let summary = summary_of(&params.thread_id);
        let cwd = params.cwd.clone().or_else(|| summary.as_ref().map(|s| s.cwd.clone()));
        let sandbox = params.sandbox.map(|asked| self.within_limits(asked, None));
        let overrides = self.overrides(cwd.as_deref(), params.approval_policy, sandbox);
        let request = SessionRequest {
            start: Start::Fork(params.thread_id),
            model: params.model,
            provider: params.model_provider,
            interactive: true,
            ..SessionRequest::new()
        };
        let response = self.load(overrides, &request, summary.as_ref())?;
        self.notify(ServerNotification::ThreadStarted(ThreadStartedNotification {
            thread: response.thread.clone(),
        }));
        ok(&response)
    }

    /// The server's overrides with a thread's own on top (`sandbox` already within the
    /// server's limits).
    fn overrides(
        &self,
        cwd: Option<&str>,
        approval: Option<AskForApproval>,
        sandbox: Option<SandboxMode>,
    ) -> Overrides {
        let mut overrides = self.config.overrides.clone();
        if let Some(cwd) = cwd {
            overrides.cwd = Some(PathBuf::from(cwd));
        }
        if approval.is_some() || sandbox.is_some() {
            // `--full-auto` and `--yolo` set both modes: the thread's sandbox is then named, the
            // server's own when the client asks only for an approval policy.
            overrides.full_auto = false;
            overrides.bypass = false;
            overrides.sandbox = Some(app_sandbox(sandbox.unwrap_or_else(|| self.ceiling())));
        }
        if let Some(approval) = approval {
            overrides.approval = Some(approval_mode(approval));
        }
        overrides
    }

    /// Starts a session and its worker; the thread is then loaded.
    fn load(
        &mut self,
        overrides: Overrides,
        request: &SessionRequest,
        summary: Option<&SessionSummary>,
    ) -> Result<ThreadStartResponse, RpcError> {
        let runtime = Runtime::load(overrides).map_err(app_error)?;
        let session = runtime.start(request).map_err(app_error)?;
        let configured_effort =
            runtime.loaded().config.model_reasoning_effort.map(|effort| effort.as_str().to_owned());
        let thread_id = session.agent.session_id().to_string();
        for notice in runtime.notices().iter().chain(&session.notices) {
            self.notify(ServerNotification::Warning(WarningNotification {
                thread_id: Some(thread_id.clone()),
                message: notice.to_string(),
            }));
        }
        let cwd = session.cwd.to_string_lossy().into_owned();
        let now = now_secs();
        let thread = Thread {
            id: thread_id.clone(),
            preview: summary.map(|s| preview(&s.title)).unwrap_or_default(),
            model_provider: session.provider_id.clone(),
            created_at: summary.map_or(now, |s| secs(s.created_ms)),
            updated_at: now,
            path: session.agent.session_path().map(|p| p.to_string_lossy().into_owned()),
            cwd: cwd.clone(),
            cli_version: self.config.version.clone(),
            source: "appServer".to_owned(),
            ephemeral: request.ephemeral,
            session_id: thread_id.clone(),
            project_id: None,
            status: ThreadStatus::Idle,
            // A resumed or forked thread shows its earlier turns, read back from its log.
            turns: match (&request.start, session.agent.session_path()) {
                (Start::Resume(_) | Start::Fork(_), Some(path)) => {
                    crate::history::turns(path, &thread_id, &cwd, &*session.tools)
                }
                _ => Vec::new(),
            },
        };
        let modes = session.modes;
        let response = ThreadStartResponse {
            thread,
            model: session.model.clone(),
            model_provider: session.provider_id.clone(),
            cwd: cwd.clone(),
            approvals_reviewer: "user".to_owned(),
            approval_policy: match modes.approval {
                ApprovalMode::Untrusted => AskForApproval::Untrusted,
                ApprovalMode::OnRequest => AskForApproval::OnRequest,
                ApprovalMode::Never => AskForApproval::Never,
            },
            sandbox: match (modes.bypass, modes.sandbox) {
                (true, _) | (false, codecoder_app::SandboxMode::DangerFullAccess) => {
                    SandboxPolicy::DangerFullAccess
                }
                (false, codecoder_app::SandboxMode::ReadOnly) => SandboxPolicy::ReadOnly,
                (false, codecoder_app::SandboxMode::WorkspaceWrite) => {
                    SandboxPolicy::WorkspaceWrite
                }
            },
        };
        let settings = Settings {
            model: session.model.clone(),
            provider: session.provider_id.clone(),
            effort: request.reasoning_effort.clone().or(configured_effort),
            cwd: cwd.clone(),
            sandbox: match response.sandbox {
                SandboxPolicy::ReadOnly => SandboxMode::ReadOnly,
                SandboxPolicy::WorkspaceWrite => SandboxMode::WorkspaceWrite,
                SandboxPolicy::DangerFullAccess => SandboxMode::DangerFullAccess,
            },
        };
        let generation = self.next_generation;
        self.next_generation += 1;
        let (control_tx, control_rx) = crossbeam_channel::bounded::<Control>(4);
        let worker = Worker::new(
            thread_id.clone(),
            generation,
            cwd,
            session.context_window,
            self.out.clone(),
            self.internal_tx.clone(),
        );
        let cmd = session.agent.cmd.clone();
        let tools: Arc<dyn Viewer + Send + Sync> = session.tools.clone();
        let agent = session.agent;
        let short: String = thread_id.chars().rev().take(8).collect();
        let worker = spawn_named(format!("app-thread-{short}"), move || {
            worker.run(agent, &control_rx);
        })
        .map_err(|err| RpcError::new(INTERNAL_ERROR, format!("starting the thread: {err}")))?;
        self.threads.insert(
            thread_id,
            LoadedThread {
                cmd,
                control: control_tx,
                controls: session.controls,
                active_turn: None,
                response: response.clone(),
                tools,
                settings,
                generation,
                _worker: worker,
            },
        );
        Ok(response)
    }

    /// Whether the thread is loaded here, and running a turn.
    fn status(&self, thread_id: &str) -> ThreadStatus {
        match self.threads.get(thread_id) {
            None => ThreadStatus::NotLoaded,
            Some(LoadedThread { active_turn: None, .. }) => ThreadStatus::Idle,
            Some(LoadedThread { active_turn: Some(_), .. }) => {
                ThreadStatus::Active { active_flags: Vec::new() }
            }
        }
    }

    fn thread_list(&self, params: &ThreadListParams) -> Result<Value, RpcError> {
        let limit = params.limit.unwrap_or(DEFAULT_PAGE);
        if limit == 0 {
            return Err(RpcError::invalid_params("invalid params: `limit` must be at least 1"));
        }
        let limit = usize::try_from(limit.min(MAX_PAGE)).unwrap_or(usize::MAX);
        let after = match &params.cursor {
            None => None,
            Some(cursor) => Some(parse_cursor(cursor).ok_or_else(|| {
                RpcError::invalid_params(format!(
                    "invalid params: `cursor`: not a cursor: {cursor}"
                ))
            })?),
        };
        let sessions = list_sessions(params.cwd.as_deref())?;
        let mut rest = sessions
            .into_iter()
            .filter(|s| s.problem.is_none())
            // An empty list is no filter, as in codex.
            .filter(|s| {
                params
                    .model_providers
                    .as_ref()
                    .is_none_or(|p| p.is_empty() || p.contains(&s.provider))
            })
            // A subagent's log is part of its parent's thread, not a thread of its own.
            .filter(|s| !codecoder_app::is_subagent_log(s))
            // Newest first: (updated, id) descending, so the next page holds what sorts below
            // the cursor. A cursor stays valid while threads are added or touched.
            .filter(|s| after.as_ref().is_none_or(|(ms, id)| (s.updated_ms, &s.id) < (*ms, id)));
        let page: Vec<SessionSummary> = rest.by_ref().take(limit).collect();
        let next_cursor = match (rest.next(), page.last()) {
            (Some(_), Some(last)) => Some(format!("{}:{}", last.updated_ms, last.id)),
            _ => None,
        };
        let data = page.iter().map(|s| self.stored_thread(s)).collect();
        ok(&ThreadListResponse { data, next_cursor })
    }

    fn turn_start(&mut self, params: TurnStartParams) -> Result<Value, RpcError> {
        let thread =
            self.threads.get(&params.thread_id).ok_or_else(|| not_loaded(&params.thread_id))?;
        if let Some(turn) = &thread.active_turn {
            return Err(RpcError::invalid_request(format!(
                "a turn is already running in this thread: {turn}"
            )));
        }
        if params.input.is_empty() {
            return Err(RpcError::invalid_params("invalid params: `input` is empty"));
        }
        if let Some(effort) = params.effort.as_deref().filter(|e| !EFFORTS.contains(e)) {
            return Err(RpcError::invalid_params(format!(
                "invalid params: `effort`: {effort} is not one of {}",
                EFFORTS.join(", ")
            )));
        }
        let current = thread.settings.clone();
        let approval = params.approval_policy.unwrap_or(thread.response.approval_policy);
        let ephemeral = thread.response.thread.ephemeral;
        let wanted = Settings {
            model: params.model.clone().unwrap_or_else(|| current.model.clone()),
            provider: current.provider.clone(),
            effort: params.effort.clone().or_else(|| current.effort.clone()),
            // Resolved as the runtime resolves it, so the same directory spelled otherwise
            // (relative, through a symlink) does not resume the session.
            cwd: params.cwd.as_deref().map_or_else(
                || current.cwd.clone(),
                |cwd| {
                    let joined = Path::new(&current.cwd).join(cwd);
                    fs_err::canonicalize(&joined).unwrap_or(joined).to_string_lossy().into_owned()
                },
            ),
            sandbox: params.sandbox_policy.map_or(current.sandbox, |policy| {
                self.within_limits(sandbox_mode(policy), Some(&params.thread_id))
            }),
        };
        if wanted != current {
            if ephemeral {
                return Err(RpcError::invalid_params(
                    "invalid params: an ephemeral thread keeps its model, effort, cwd and \
                     sandbox (its session has no log to resume with others)",
                ));
            }
            self.reload(&params.thread_id, &wanted, approval, current)?;
        }
        let thread =
            self.threads.get_mut(&params.thread_id).ok_or_else(|| not_loaded(&params.thread_id))?;
        thread.response.approval_policy = approval;
        let cwd = PathBuf::from(&thread.response.cwd);
        let content = params
            .input
            .iter()
            .map(|item| content_item(item, &cwd))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(approval) = params.approval_policy {
            thread.controls.set_approval(approval_mode(approval));
        }
        let turn_id = uuid::Uuid::now_v7().to_string();
        let control = Control::Start {
            turn_id: turn_id.clone(),
            input: codecoder_protocol::UserInput { content },
            items: params.input,
        };
        thread.control.send(control).map_err(|_| not_loaded(&params.thread_id))?;
        thread.active_turn = Some(turn_id.clone());
        ok(&TurnStartResponse {
            turn: Turn {
                id: turn_id,
                items: Vec::new(),
                status: TurnStatus::InProgress,
                error: None,
            },
        })
    }

    /// Resumes a loaded, idle thread's session with other settings: its agent is shut down
    /// (releasing the log), then the log is resumed with `wanted`. When that fails the thread is
    /// loaded again with `previous`, and the error answered.
    fn reload(
        &mut self,
        thread_id: &str,
        wanted: &Settings,
        approval: AskForApproval,
        previous: Settings,
    ) -> Result<(), RpcError> {
        // Dropping the entry ends its worker, which shuts the agent down and is joined.
        drop(self.threads.remove(thread_id));
        let start = |server: &mut Self, settings: &Settings| {
            let overrides =
                server.overrides(Some(&settings.cwd), Some(approval), Some(settings.sandbox));
            let request = SessionRequest {
                start: Start::Resume(Some(thread_id.to_owned())),
                model: Some(settings.model.clone()),
                provider: Some(settings.provider.clone()),
                reasoning_effort: settings.effort.clone(),
                interactive: true,
                ..SessionRequest::new()
            };
            server.load(overrides, &request, summary_of(thread_id).as_ref())
        };
        match start(self, wanted) {
            Ok(_) => Ok(()),
            Err(err) => {
                let _ = start(self, &previous);
                Err(err)
            }
        }
    }

    fn turn_steer(&mut self, params: TurnSteerParams) -> Result<Value, RpcError> {
        let thread =
            self.threads.get(&params.thread_id).ok_or_else(|| not_loaded(&params.thread_id))?;
        if thread.active_turn.as_deref() != Some(params.expected_turn_id.as_str()) {
            return Err(RpcError::invalid_params(format!(
                "invalid params: `expectedTurnId`: turn {} is not running in this thread",
                params.expected_turn_id
            )));
        }
        if params.input.is_empty() {
            return Err(RpcError::invalid_params("invalid params: `input` is empty"));
        }
        let cwd = PathBuf::from(&thread.response.cwd);
        let content = params
            .input
            .iter()
            .map(|item| content_item(item, &cwd))
            .collect::<Result<Vec<_>, _>>()?;
        let control = Control::Steer {
            input: codecoder_protocol::UserInput { content },
            items: params.input,
        };
        thread.control.send(control).map_err(|_| not_loaded(&params.thread_id))?;
        ok(&TurnSteerResponse { turn_id: params.expected_turn_id })
    }

    fn thread_compact_start(&mut self, thread_id: &str) -> Result<Value, RpcError> {
        let thread = self.threads.get_mut(thread_id).ok_or_else(|| not_loaded(thread_id))?;
        if let Some(turn) = &thread.active_turn {
            return Err(RpcError::invalid_request(format!(
                "a turn is already running in this thread: {turn}"
            )));
        }
        let turn_id = uuid::Uuid::now_v7().to_string();
        thread
            .control
            .send(Control::Compact { turn_id: turn_id.clone() })
            .map_err(|_| not_loaded(thread_id))?;
        thread.active_turn = Some(turn_id);
        ok(&crate::types::ThreadCompactStartResponse {})
    }

    fn turn_interrupt(&self, params: &TurnInterruptParams) -> Result<Value, RpcError> {
        let thread =
            self.threads.get(&params.thread_id).ok_or_else(|| not_loaded(&params.thread_id))?;
        if thread.active_turn.as_deref() != Some(params.turn_id.as_str()) {
            return Err(RpcError::invalid_params(format!(
                "invalid params: `turnId`: turn {} is not running in this thread",
                params.turn_id
            )));
        }
        let _ = thread.cmd.send(AgentCommand::Cancel);
        ok(&TurnInterruptResponse {})
    }

    fn internal(&mut self, message: Internal) {
        match message {
            Internal::Approval { thread_id, request, reply } => {
                let id = RequestId::Integer(self.next_request);
                self.next_request += 1;
                self.pending
                    .insert(id.clone(), Pending { thread_id, waiting: Waiting::Approval(reply) });
                self.send(WriterMsg::Request { id, request });
            }
            Internal::Question { thread_id, request, question_id, reply } => {
                if !self.questions {
                    reply.send(AskUserAnswer::Unavailable { reason: NO_QUESTIONS.to_owned() });
                    return;
                }
                let id = RequestId::Integer(self.next_request);
                self.next_request += 1;
                let waiting = Waiting::Question { question_id, reply };
                self.pending.insert(id.clone(), Pending { thread_id, waiting });
                self.send(WriterMsg::Request { id, request });
            }
            Internal::TurnEnded { thread_id, turn } => {
                let withdrawn: Vec<RequestId> = self
                    .pending
                    .iter()
                    .filter(|(_, pending)| pending.thread_id == thread_id)
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in withdrawn {
                    self.pending.remove(&id);
                    self.resolved(&thread_id, id);
                }
                if let Some(thread) = self.threads.get_mut(&thread_id) {
                    thread.active_turn = None;
                }
                self.notify(ServerNotification::TurnCompleted(crate::types::TurnNotification {
                    thread_id,
                    turn,
                }));
            }
            Internal::Closed { thread_id, generation } => {
                if self.threads.get(&thread_id).is_some_and(|t| t.generation == generation) {
                    self.threads.remove(&thread_id);
                    self.pending.retain(|_, pending| pending.thread_id != thread_id);
                }
            }
        }
    }

    /// The client answered a server request: with its result, or `None` for an error answer
    /// (which declines, as a result that does not fit does).
    fn resolve(&mut self, id: &RequestId, result: Option<Value>) {
        let Some(Pending { thread_id, waiting }) = self.pending.remove(id) else { return };
        match waiting {
            Waiting::Approval(reply) => {
                let decision = result
                    .and_then(|result| serde_json::from_value::<ApprovalResponse>(result).ok())
                    .map_or(ApprovalDecision::Decline, |response| response.decision);
                reply.send(self.decision(&thread_id, decision));
            }
            Waiting::Question { question_id, reply } => {
                reply.send(question_answer(result, &question_id));
            }
        }
        self.resolved(&thread_id, id.clone());
    }

    /// The agent's decision for the client's; `cancel` also interrupts the turn.
    fn decision(
        &self,
        thread_id: &str,
        decision: ApprovalDecision,
    ) -> codecoder_protocol::ApprovalDecision {
        match decision {
            ApprovalDecision::Accept => codecoder_protocol::ApprovalDecision::AllowOnce,
            ApprovalDecision::AcceptForSession => {
                codecoder_protocol::ApprovalDecision::AllowForSession
            }
            ApprovalDecision::Decline => codecoder_protocol::ApprovalDecision::Deny,
            ApprovalDecision::Cancel => {
                // The call is not run and the turn is interrupted.
                if let Some(thread) = self.threads.get(thread_id) {
                    let _ = thread.cmd.send(AgentCommand::Cancel);
                }
                codecoder_protocol::ApprovalDecision::Deny
            }
        }
    }

    fn resolved(&self, thread_id: &str, request_id: RequestId) {
        self.notify(ServerNotification::ServerRequestResolved(ServerRequestResolvedNotification {
            thread_id: thread_id.to_owned(),
            request_id,
        }));
    }
}

/// The answer to the question `question_id` in a `ToolRequestUserInputResponse` (several
/// answers one per line); an error answer, a result that does not fit or no non-blank answer
/// declines.
pub(crate) fn question_answer(result: Option<Value>, question_id: &str) -> AskUserAnswer {
    let answer = result
        .and_then(|result| serde_json::from_value::<ToolRequestUserInputResponse>(result).ok())
        .and_then(|mut response| response.answers.remove(question_id))
        .map(|answer| {
            let answers: Vec<&str> = answer
                .answers
                .iter()
                .map(|text| text.trim())
                .filter(|text| !text.is_empty())
                .collect();
            answers.join("\n")
        })
        .filter(|text| !text.is_empty());
    match answer {
        Some(text) => AskUserAnswer::Answer { text },
        None => AskUserAnswer::Declined,
    }
}

fn ok(value: &impl Serialize) -> Result<Value, RpcError> {
    Ok(to_value(value))
}

fn not_loaded(thread_id: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "invalid params: `threadId`: thread {thread_id} is not loaded (thread/start, thread/resume or thread/fork it first)"
    ))
}

/// A runtime error: the caller's (-32602) or the server's (-32603), with its causes.
fn app_error(err: codecoder_app::Error) -> RpcError {
    let mut message = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message = format!("{message}: {text}");
        }
        source = cause.source();
    }
    let code = if err.is_usage() || matches!(err, codecoder_app::Error::Session(_)) {
        crate::wire::INVALID_PARAMS
    } else {
        INTERNAL_ERROR
    };
    RpcError::new(code, message)
}

fn ask_for_approval(approval: ApprovalMode) -> AskForApproval {
    match approval {
        ApprovalMode::Untrusted => AskForApproval::Untrusted,
        ApprovalMode::OnRequest => AskForApproval::OnRequest,
        ApprovalMode::Never => AskForApproval::Never,
    }
}

fn app_sandbox(sandbox: SandboxMode) -> codecoder_app::SandboxMode {
    match sandbox {
        SandboxMode::ReadOnly => codecoder_app::SandboxMode::ReadOnly,
        SandboxMode::WorkspaceWrite => codecoder_app::SandboxMode::WorkspaceWrite,
        SandboxMode::DangerFullAccess => codecoder_app::SandboxMode::DangerFullAccess,
    }
}

fn sandbox_mode(policy: SandboxPolicy) -> SandboxMode {
    match policy {
        SandboxPolicy::ReadOnly => SandboxMode::ReadOnly,
        SandboxPolicy::WorkspaceWrite => SandboxMode::WorkspaceWrite,
        SandboxPolicy::DangerFullAccess => SandboxMode::DangerFullAccess,
    }
}

fn sandbox_name(sandbox: SandboxMode) -> &'static str {
    match sandbox {
        SandboxMode::ReadOnly => "read-only",
        SandboxMode::WorkspaceWrite => "workspace-write",
        SandboxMode::DangerFullAccess => "danger-full-access",
    }
}

fn approval_mode(approval: AskForApproval) -> ApprovalMode {
    match approval {
        AskForApproval::Untrusted => ApprovalMode::Untrusted,
        AskForApproval::OnFailure | AskForApproval::OnRequest => ApprovalMode::OnRequest,
        AskForApproval::Never => ApprovalMode::Never,
    }
}

/// One input item as the agent takes it.
fn content_item(item: &UserInput, cwd: &Path) -> Result<ContentItem, RpcError> {
    let invalid =
        |message: String| RpcError::invalid_params(format!("invalid params: `input`: {message}"));
    match item {
        UserInput::Text { text } => Ok(ContentItem::Text { text: text.clone() }),
        UserInput::Image { url } => {
            let Some((header, data)) =
                url.strip_prefix("data:").and_then(|rest| rest.split_once(','))
            else {
                return Err(invalid(format!(
                    "only data: URLs are accepted for images (use localImage for files): {}",
                    url.chars().take(40).collect::<String>()
                )));
            };
            let Some(media_type) = header.strip_suffix(";base64") else {
                return Err(invalid("an image data: URL must be base64".to_owned()));
            };
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data)
                .map_err(|err| invalid(format!("the image data is not base64: {err}")))?;
            let detected = codecoder_app::image_type(&bytes)
                .ok_or_else(|| invalid("the image is not a PNG, JPEG, GIF or WebP".to_owned()))?;
            if media_type != detected {
                return Err(invalid(format!("the image is {detected}, not {media_type}")));
            }
            Ok(ContentItem::Image(Image {
                media_type: detected.to_owned(),
                data_base64: data.to_owned(),
            }))
        }
        UserInput::LocalImage { path } => codecoder_app::read_image(&cwd.join(path))
            .map(ContentItem::Image)
            .map_err(|err| invalid(err.to_string())),
    }
}

/// Sessions newest first from the index (refreshed from the files first).
fn list_sessions(cwd: Option<&str>) -> Result<Vec<SessionSummary>, RpcError> {
    let home = codecoder_app::home().map_err(app_error)?;
    // Warnings about the index file (rebuilt, or kept in memory) have no place in the answer.
    let mut warnings = Vec::new();
    let list = codecoder_app::list_sessions(&home, cwd, None, &mut warnings).map_err(|err| {
        RpcError::new(INTERNAL_ERROR, format!("reading the session index: {err}"))
    })?;
    Ok(list.sessions)
}

/// The index's summary of a session, by id or unique prefix.
fn summary_of(thread_id: &str) -> Option<SessionSummary> {
    let sessions = list_sessions(None).ok()?;
    let mut matching = sessions.into_iter().filter(|s| s.id.starts_with(thread_id));
    let first = matching.next()?;
    matching.next().is_none().then_some(first)
}

fn parse_cursor(cursor: &str) -> Option<(u64, String)> {
    let (ms, id) = cursor.split_once(':')?;
    Some((ms.parse().ok()?, id.to_owned()))
}

fn preview(title: &str) -> String {
    title.chars().take(PREVIEW_CHARS).collect()
}

fn secs(ms: u64) -> i64 {
    i64::try_from(ms / 1000).unwrap_or(i64::MAX)
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
