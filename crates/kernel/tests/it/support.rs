//! Test support: a scripted model, test tools, policies, and a harness that runs an agent on a
//! session store in a temp dir. Shared with the bench binary through `#[path]`.
//!
//! Invariant: every harness holds the read side of `SERIAL`; the thread-leak test takes the
//! write side, so it counts threads while no other agent runs in this process.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard};
use std::time::Duration;

use codecoder_kernel::{
    AgentConfig, AgentDeps, AgentHandle, AllowAll, ApprovalPolicy, ApprovalQuery, ModelClient,
    ModelError, ModelRequest, PolicyAnswer, ResponseEvent, ResponseStream, StaticPrompt, Tool,
    ToolContext, ToolKind, ToolOutput, ToolRegistry, spawn_agent,
};
use codecoder_protocol::{
    AgentCommand, AgentEvent, AgentEventKind, OutputStream, StopReason, ToolCallId, ToolError,
    TurnOutcome, Usage, UserInput,
};
use codecoder_sandbox::{CommandSpec, Outcome, SpawnConfig, Stream, Wait};
use codecoder_session::{FsyncPolicy, SessionStore, WriterConfig};
use crossbeam_channel::{Receiver, Sender, after, bounded, select};
use serde_json::{Value, json};

pub(crate) static SERIAL: RwLock<()> = RwLock::new(());

/// How long a test waits for an event before failing.
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------------------
// The scripted model.

/// What the scripted model answers to one request.
pub(crate) enum Response {
    /// These events, in order.
    Events(Vec<ResponseEvent>),
    /// `tokens` text deltas of one token each, then `Completed`.
    Flood { tokens: usize },
    /// `before`, then wait for the gate, then `after`.
    Gated { before: Vec<ResponseEvent>, gate: Receiver<()>, after: Vec<ResponseEvent> },
    /// `stream` fails at once.
    Fail(String),
    /// `stream` panics (on the agent's thread).
    Panic,
}

type Responder = Box<dyn Fn(&ModelRequest) -> Response + Send + Sync>;

pub(crate) struct ScriptedModel {
    responder: Responder,
    requests: Mutex<Vec<ModelRequest>>,
}

impl ScriptedModel {
    pub(crate) fn new(
        responder: impl Fn(&ModelRequest) -> Response + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(Self { responder: Box::new(responder), requests: Mutex::new(Vec::new()) })
    }

    /// Answers requests with `responses` in order; then with a short text.
    pub(crate) fn queue(responses: Vec<Response>) -> Arc<Self> {
        let queue = Mutex::new(VecDeque::from(responses));
        Self::new(move |_| {
            queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop_front()
                .unwrap_or_else(|| Response::Events(answer("(script exhausted)")))
        })
    }

    pub(crate) fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl ModelClient for ScriptedModel {
    fn stream(&self, request: ModelRequest) -> Result<ResponseStream, ModelError> {
        let response = (self.responder)(&request);
        self.requests.lock().unwrap_or_else(PoisonError::into_inner).push(request);
        let stream = match response {
            Response::Events(events) => ResponseStream::spawn("model-script", 1024, move |tx| {
                for event in events {
                    if tx.send(event).is_err() {
                        return;
                    }
                }
            }),
            Response::Flood { tokens } => ResponseStream::spawn("model-flood", 1024, move |tx| {
                for _ in 0..tokens {
                    if tx.send(ResponseEvent::TextDelta("tok ".to_owned())).is_err() {
                        return;
                    }
                }
                let _ = tx.send(ResponseEvent::Usage(Usage {
                    input_tokens: 10,
                    output_tokens: tokens as u64,
                    ..Usage::default()
                }));
                let _ = tx.send(ResponseEvent::Completed { stop_reason: StopReason::EndTurn });
            }),
            Response::Gated { before, gate, after } => {
                // The abort hook drops `abort_tx`, which wakes a producer waiting on the gate.
                let (abort_tx, abort_rx) = bounded::<()>(0);
                let stream = ResponseStream::spawn("model-gated", 1024, move |tx| {
                    for event in before {
                        if tx.send(event).is_err() {
                            return;
                        }
                    }
                    select! {
                        recv(gate) -> _ => {}
                        recv(abort_rx) -> _ => return,
                    }
                    for event in after {
                        if tx.send(event).is_err() {
                            return;
                        }
                    }
                });
                stream.map(|stream| stream.with_abort(move || drop(abort_tx)))
            }
            Response::Fail(message) => return Err(ModelError::new(message)),
            Response::Panic => panic!("scripted model panicked"),
        };
        stream.map_err(|err| ModelError::new(err.to_string()))
    }
}

pub(crate) fn text(delta: &str) -> ResponseEvent {
    ResponseEvent::TextDelta(delta.to_owned())
}

pub(crate) fn usage(input: u64, output: u64) -> ResponseEvent {
    ResponseEvent::Usage(Usage { input_tokens: input, output_tokens: output, ..Usage::default() })
}

pub(crate) fn completed(stop_reason: StopReason) -> ResponseEvent {
    ResponseEvent::Completed { stop_reason }
}

/// The events of a tool call, with the arguments split in two deltas.
pub(crate) fn call(id: &str, name: &str, args: Value) -> Vec<ResponseEvent> {
    let args = args.to_string();
    let (first, second) = args.split_at(args.len() / 2);
    vec![
        ResponseEvent::ToolCallStart { id: ToolCallId::new(id), name: name.to_owned() },
        ResponseEvent::ToolCallArgsDelta { id: ToolCallId::new(id), delta: first.to_owned() },
        ResponseEvent::ToolCallArgsDelta { id: ToolCallId::new(id), delta: second.to_owned() },
        ResponseEvent::ToolCallDone { id: ToolCallId::new(id) },
    ]
}

/// A text answer that ends the turn.
pub(crate) fn answer(words: &str) -> Vec<ResponseEvent> {
    let mut events: Vec<ResponseEvent> = words.split_inclusive(' ').map(text).collect();
    events.push(usage(100, 10));
    events.push(completed(StopReason::EndTurn));
    events
}

/// A response asking for these calls: `(id, name, args)`.
pub(crate) fn calls(list: &[(&str, &str, Value)]) -> Vec<ResponseEvent> {
    let mut events = Vec::new();
    for (id, name, args) in list {
        events.extend(call(id, name, args.clone()));
    }
    events.push(usage(100, 20));
    events.push(completed(StopReason::ToolUse));
    events
}

/// The text of the first message of a request's history (who is asking).
pub(crate) fn first_user_text(request: &ModelRequest) -> String {
    request.history.first().map(|m| m.text()).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Tools.

fn object_schema(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

/// Returns `text`; read-only; optional `sleep_ms` (honours cancel).
pub(crate) struct EchoTool;

impl Tool for EchoTool {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Echoes its text."
    }
    fn schema(&self) -> Value {
        object_schema(
            json!({ "text": { "type": "string" }, "sleep_ms": { "type": "integer" } }),
            &["text"],
        )
    }
    fn kind(&self) -> ToolKind {
        ToolKind::ReadOnly
    }
    fn execute(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        if let Some(ms) = args["sleep_ms"].as_u64() {
            select! {
                recv(after(Duration::from_millis(ms))) -> _ => {}
                recv(ctx.cancel().signal()) -> _ => return Err(ToolError::Cancelled),
            }
        }
        Ok(ToolOutput::text(args["text"].as_str().unwrap_or_default()))
    }
}

/// An edit tool that records the order of starts and ends and the peak concurrency.
#[derive(Default)]
pub(crate) struct WriteTool {
    pub(crate) log: Mutex<Vec<String>>,
    active: AtomicUsize,
    pub(crate) peak: AtomicUsize,
}

impl Tool for WriteTool {
    fn name(&self) -> &str {
        "write"
    }
    fn description(&self) -> &str {
        "Writes (pretends to)."
    }
    fn schema(&self) -> Value {
        object_schema(json!({ "path": { "type": "string" } }), &["path"])
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }
    fn permission_keys(&self, args: &Value) -> Vec<String> {
        vec![format!("edit:{}", args["path"].as_str().unwrap_or_default())]
    }
    fn execute(&self, _ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let path = args["path"].as_str().unwrap_or_default().to_owned();
        let now = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        self.log.lock().unwrap().push(format!("start {path}"));
        std::thread::sleep(Duration::from_millis(30));
        self.log.lock().unwrap().push(format!("end {path}"));
        self.active.fetch_sub(1, Ordering::SeqCst);
        Ok(ToolOutput::text(format!("wrote {path}")))
    }
}

/// Runs `argv` through the sandbox; reports each started process group on `pgids`.
pub(crate) struct CommandTool {
    pub(crate) pgids: Sender<u32>,
}

impl Tool for CommandTool {
    fn name(&self) -> &str {
        "run"
    }
    fn description(&self) -> &str {
        "Runs a command."
    }
    fn schema(&self) -> Value {
        object_schema(
            json!({ "argv": { "type": "array", "items": { "type": "string" }, "minItems": 1 } }),
            &["argv"],
        )
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Exec
    }
    fn execute(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let argv: Vec<String> = args["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_owned())
            .collect();
        let spec = CommandSpec::new(&argv[0], &argv[1..]);
        let config =
            SpawnConfig { kill_grace: Duration::from_millis(500), ..SpawnConfig::standard() };
        let mut child = codecoder_sandbox::spawn(&spec, &config)
            .map_err(|err| ToolError::Failed { message: err.to_string() })?;
        let _ = self.pgids.try_send(child.pid());
        let mut output = String::new();
        let outcome = child
            .wait(&Wait::new().cancel_on(ctx.cancel().signal()), &mut |chunk| {
                let piece = String::from_utf8_lossy(&chunk.bytes).into_owned();
                let stream = match chunk.stream {
                    Stream::Stdout => OutputStream::Stdout,
                    Stream::Stderr => OutputStream::Stderr,
                };
                ctx.output(stream, piece.clone());
                output.push_str(&piece);
            })
            .map_err(|err| ToolError::Failed { message: err.to_string() })?;
        match outcome {
            Outcome::Cancelled | Outcome::TimedOut | Outcome::Killed => Err(ToolError::Cancelled),
            Outcome::Exited(status) if status.success() => Ok(ToolOutput::text(output)),
            Outcome::Exited(status) => {
                Ok(ToolOutput::error(format!("{output}\nexit status {status}")))
            }
        }
    }
}

/// Always panics.
pub(crate) struct PanicTool;

impl Tool for PanicTool {
    fn name(&self) -> &str {
        "explode"
    }
    fn description(&self) -> &str {
        "Panics."
    }
    fn schema(&self) -> Value {
        json!({ "type": "object" })
    }
    fn kind(&self) -> ToolKind {
        ToolKind::ReadOnly
    }
    fn execute(&self, _ctx: &ToolContext, _args: Value) -> Result<ToolOutput, ToolError> {
        panic!("the tool exploded")
    }
}

/// Always fails; counts its runs.
#[derive(Default)]
pub(crate) struct FailTool {
    pub(crate) runs: AtomicUsize,
}

impl Tool for FailTool {
    fn name(&self) -> &str {
        "fail"
    }
    fn description(&self) -> &str {
        "Fails."
    }
    fn schema(&self) -> Value {
        json!({ "type": "object" })
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Exec
    }
    fn execute(&self, _ctx: &ToolContext, _args: Value) -> Result<ToolOutput, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Err(ToolError::Failed { message: "no such file".to_owned() })
    }
}

/// Asks the person `question`.
pub(crate) struct AskTool;

impl Tool for AskTool {
    fn name(&self) -> &str {
        "ask"
    }
    fn description(&self) -> &str {
        "Asks the user."
    }
    fn schema(&self) -> Value {
        object_schema(json!({ "question": { "type": "string" } }), &["question"])
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Interactive
    }
    fn execute(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let question = args["question"].as_str().unwrap_or_default();
        match ctx.ask_user(question, vec!["yes".to_owned(), "no".to_owned()])? {
            codecoder_protocol::AskUserAnswer::Answer { text } => Ok(ToolOutput::text(text)),
            codecoder_protocol::AskUserAnswer::Declined
            | codecoder_protocol::AskUserAnswer::Unavailable { .. } => {
                Ok(ToolOutput::error("declined"))
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Policies.

/// Asks for everything but read-only tools.
pub(crate) struct AskUnlessReadOnly;

impl ApprovalPolicy for AskUnlessReadOnly {
    fn decide(&self, query: &ApprovalQuery<'_>) -> PolicyAnswer {
        match query.kind {
            ToolKind::ReadOnly | ToolKind::Interactive => PolicyAnswer::allow(),
            ToolKind::Edit | ToolKind::Exec | ToolKind::Network | ToolKind::Other => {
                PolicyAnswer::ask()
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The harness.

pub(crate) struct Harness {
    pub(crate) handle: AgentHandle,
    pub(crate) store: SessionStore,
    _home: tempfile::TempDir,
    _serial: Option<RwLockReadGuard<'static, ()>>,
}

pub(crate) fn registry(tools: Vec<Arc<dyn Tool>>) -> Arc<ToolRegistry> {
    let mut registry = ToolRegistry::new();
    for tool in tools {
        registry.register(tool).unwrap();
    }
    Arc::new(registry)
}

pub(crate) fn config() -> AgentConfig {
    AgentConfig::standard("test-model", "scripted", "/tmp")
}

pub(crate) fn deps(
    model: Arc<dyn ModelClient>,
    tools: Arc<ToolRegistry>,
    approval: Arc<dyn ApprovalPolicy>,
    store: &SessionStore,
) -> AgentDeps {
    let store = SessionStore::new(store.home());
    AgentDeps {
        model,
        prompt: Arc::new(StaticPrompt {
            instructions: "You are a test.".to_owned(),
            max_output_tokens: None,
        }),
        tools,
        approval,
        hooks: Arc::new(codecoder_kernel::NoHooks),
        sessions: Arc::new(move |new| {
            let config = WriterConfig { fsync: FsyncPolicy::Never, ..WriterConfig::standard() };
            store.create(new, config)
        }),
        interceptors: Vec::new(),
        compactor: None,
        checkpoints: None,
    }
}

impl Harness {
    pub(crate) fn start(model: Arc<dyn ModelClient>, tools: Vec<Arc<dyn Tool>>) -> Self {
        Self::with(model, tools, Arc::new(AllowAll), config(), |_| {})
    }

    pub(crate) fn with(
        model: Arc<dyn ModelClient>,
        tools: Vec<Arc<dyn Tool>>,
        approval: Arc<dyn ApprovalPolicy>,
        config: AgentConfig,
        adjust: impl FnOnce(&mut AgentDeps),
    ) -> Self {
        let serial = SERIAL.read().unwrap_or_else(PoisonError::into_inner);
        Self::unserialized(model, tools, approval, config, adjust, Some(serial))
    }

    /// Like `with`, for a test that already holds `SERIAL` (or its write side).
    pub(crate) fn unserialized(
        model: Arc<dyn ModelClient>,
        tools: Vec<Arc<dyn Tool>>,
        approval: Arc<dyn ApprovalPolicy>,
        config: AgentConfig,
        adjust: impl FnOnce(&mut AgentDeps),
        serial: Option<RwLockReadGuard<'static, ()>>,
    ) -> Self {
        let home = tempfile::tempdir().unwrap();
        let store = SessionStore::new(home.path());
        let mut deps = deps(model, registry(tools), approval, &store);
        adjust(&mut deps);
        let handle = spawn_agent(config, deps).unwrap();
        Self { handle, store, _home: home, _serial: serial }
    }

    pub(crate) fn submit(&self, text: &str) {
        self.handle.cmd.send(AgentCommand::Submit(UserInput::text(text))).unwrap();
    }

    pub(crate) fn next(&self) -> AgentEvent {
        match self.handle.events.recv_timeout(PATIENCE) {
            Ok(event) => event,
            Err(err) => panic!("no event within {PATIENCE:?}: {err}"),
        }
    }

    /// Events until the root agent's `TurnDone` (included).
    pub(crate) fn turn(&self) -> Vec<AgentEvent> {
        let mut events = Vec::new();
        loop {
            let event = self.next();
            let done = is_root_turn_done(&event);
            events.push(event);
            if done {
                return events;
            }
        }
    }

    /// Sends `Shutdown`, drains to `ShutdownComplete`, joins, then loads every session log of
    /// the store (asserting each is closed and valid).
    pub(crate) fn shutdown(self) -> Logs {
        let root_id = self.handle.session_id();
        self.handle.cmd.send(AgentCommand::Shutdown).unwrap();
        loop {
            let event = self.next();
            if event.source.subagent_path.is_empty()
                && matches!(event.kind, AgentEventKind::ShutdownComplete)
            {
                break;
            }
        }
        let Self { handle, store, _home, _serial } = self;
        handle.join().unwrap();
        let mut root = None;
        let mut children = Vec::new();
        for (id, path) in store.session_files().unwrap() {
            if id == root_id {
                root = Some(load_closed(&path));
            } else {
                children.push(codecoder_session::load(&path).unwrap());
            }
        }
        Logs { root: root.unwrap(), children }
    }
}

/// The session logs of a harness after shutdown.
pub(crate) struct Logs {
    pub(crate) root: codecoder_session::LoadedSession,
    /// Loaded as they are: a crashed child's log may be left open (repair closes it).
    pub(crate) children: Vec<codecoder_session::LoadedSession>,
}

pub(crate) fn is_root_turn_done(event: &AgentEvent) -> bool {
    event.source.subagent_path.is_empty() && matches!(event.kind, AgentEventKind::TurnDone { .. })
}

/// A short tag per event, for order assertions; status and usage events are left out and
/// consecutive deltas of one kind merge.
pub(crate) fn tags(events: &[AgentEvent]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for event in events {
        let prefix =
            if event.source.subagent_path.is_empty() { String::new() } else { "child ".to_owned() };
        let tag = match &event.kind {
            AgentEventKind::TurnStarted { turn } => format!("turn_started {turn}"),
            AgentEventKind::StepStarted { step, .. } => format!("step_started {step}"),
            // The whole message follows its deltas: one `text` tag with them.
            AgentEventKind::TextDelta { .. } | AgentEventKind::AgentMessage { .. } => {
                "text".to_owned()
            }
            AgentEventKind::ReasoningDelta { .. } => "reasoning".to_owned(),
            AgentEventKind::ToolStarted { call, .. } => format!("tool_started {}", call.id),
            AgentEventKind::ToolOutputDelta { call_id, .. } => format!("output {call_id}"),
            AgentEventKind::ToolFinished { call_id, result, .. } => match result {
                Ok(result) => format!("tool_finished {call_id} {:?}", result.status),
                Err(err) => format!("tool_finished {call_id} error: {err}"),
            },
            AgentEventKind::StepFinished { step, .. } => format!("step_finished {step}"),
            AgentEventKind::StepRetried { step, .. } => format!("step_retried {step}"),
            AgentEventKind::ApprovalRequest(request) => format!("approval {}", request.call.id),
            AgentEventKind::AskUser(request) => format!("ask {}", request.call_id),
            AgentEventKind::Warning { message } => format!("warning {message}"),
            AgentEventKind::HookMessage { event, message } => format!("hook {event}: {message}"),
            AgentEventKind::TurnDone { outcome, cancelled, .. } => match outcome {
                TurnOutcome::Failed { message } => format!("turn_done failed: {message}"),
                other => format!("turn_done {other:?} cancelled={cancelled}"),
            },
            AgentEventKind::ShutdownComplete => "shutdown_complete".to_owned(),
            AgentEventKind::UserPrompt { steer, .. } => format!("user_prompt steer={steer}"),
            AgentEventKind::CallProgress { call_id, .. } => format!("progress {call_id}"),
            AgentEventKind::Compacted { trigger, summarized, .. } => {
                format!("compacted {trigger} summarized={summarized}")
            }
            AgentEventKind::Status(_) | AgentEventKind::Usage { .. } => continue,
        };
        let tag = format!("{prefix}{tag}");
        if out.last() == Some(&tag)
            && (tag.ends_with("text") || tag.ends_with("reasoning") || tag.starts_with("output"))
        {
            continue;
        }
        out.push(tag);
    }
    out
}

/// Loads a session log back and checks nothing is left open.
pub(crate) fn load_closed(path: &std::path::Path) -> codecoder_session::LoadedSession {
    let loaded = codecoder_session::load(path).unwrap();
    assert!(!loaded.trace.needs_repair(), "log left open: {:?}", loaded.trace);
    assert!(loaded.torn_tail.is_none());
    loaded
}

/// The record bodies of a log, in order.
pub(crate) fn bodies(
    loaded: &codecoder_session::LoadedSession,
) -> Vec<codecoder_protocol::RecordBody> {
    loaded.records().map(|record| record.body.clone()).collect()
}

/// The type tags of a log's records, in order.
pub(crate) fn record_types(loaded: &codecoder_session::LoadedSession) -> Vec<&'static str> {
    loaded.records().map(|record| record.body.type_name()).collect()
}
