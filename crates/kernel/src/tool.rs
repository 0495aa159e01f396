//! The tool seam: the `Tool` trait, the `ToolContext` a call runs with, and the `ToolRegistry`.
//!
//! Invariants: a tool runs on a worker thread of its own, under `catch_unwind`; it must honour
//! `ctx.cancel()` (return soon after it fires, killing what it started); it never touches the
//! session log (the loop logs its result). A failure is a `ToolError` or an output with
//! `is_error`, data for the model, never a kernel error.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use codecoder_protocol::{
    AgentEvent, AgentEventKind, ApprovalDecision, AskUserAnswer, AskUserRequest, CallKind,
    CallView, CommandExit, ContentItem, EventSource, OutputStream, Reply, RequestId, StepId,
    ToolCallId, ToolError, TurnId,
};
use crossbeam_channel::{Sender, select};

use crate::agent::AgentEnv;
use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::model::ToolSpec;

/// How much a tool can change; approval policies decide by it (the shared word).
pub use codecoder_protocol::ToolKind;

/// What a tool returns.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The content the model sees.
    pub content: Vec<ContentItem>,
    /// True when the tool ran but the outcome is a failure the model should see as one (a
    /// command's non-zero exit, say).
    pub is_error: bool,
    /// How the command ended, for tools that run one.
    pub exit: Option<CommandExit>,
}

impl ToolOutput {
    /// A successful output holding one text item.
    pub fn text(text: impl Into<String>) -> Self {
        Self { content: vec![ContentItem::Text { text: text.into() }], is_error: false, exit: None }
    }

    /// A failed output holding one text item.
    pub fn error(text: impl Into<String>) -> Self {
        Self { content: vec![ContentItem::Text { text: text.into() }], is_error: true, exit: None }
    }
}

/// A tool the model can call.
pub trait Tool: Send + Sync {
    /// The name the model calls it by; unique in a registry.
    fn name(&self) -> &str;
    /// What it does, for the model.
    fn description(&self) -> &str;
    /// The JSON Schema of the arguments; calls are checked against it before they run.
    fn schema(&self) -> serde_json::Value;
    /// How much it can change.
    fn kind(&self) -> ToolKind;
    /// Whether calls of one response may run in parallel with other such calls. Default:
    /// read-only tools do.
    fn runs_in_parallel(&self) -> bool {
        self.kind() == ToolKind::ReadOnly
    }
    /// The keys a session grant for this call covers (`shell:git status`, `edit:src/**`).
    /// Default: the tool's name, so "allow for session" allows the tool.
    fn permission_keys(&self, args: &serde_json::Value) -> Vec<String> {
        let _ = args;
        vec![self.name().to_owned()]
    }
    /// Whether the model is offered the tool in the next request (a tool of one mode, such as
    /// `exit_plan_mode`, is hidden outside it). Default: always.
    fn offered(&self) -> bool {
        true
    }
    /// For a tool of an MCP server: the server's name and the tool's name on that server
    /// (front-ends show its calls as MCP tool calls). Default: none.
    fn mcp_origin(&self) -> Option<(&str, &str)> {
        None
    }
    /// One line for the person: what this call will do.
    fn summary(&self, args: &serde_json::Value) -> String {
        format!("{} {args}", self.name())
    }
    /// What this call is, for front-ends and the policy: a pure function of the arguments
    /// (unchecked: any JSON), never touching the filesystem. Default: the generic view of the
    /// name and arguments, of kind `Mcp` for a tool of an MCP server, read-only when the tool
    /// is.
    fn view(&self, args: &serde_json::Value) -> CallView {
        let mut view = CallView::generic(self.name(), args);
        if let Some((server, tool)) = self.mcp_origin() {
            view.kind = CallKind::Mcp { server: server.to_owned(), tool: tool.to_owned() };
        }
        view.read_only = self.kind() == ToolKind::ReadOnly;
        view
    }
    /// Checks what the schema cannot say about the arguments (a patch's syntax), before the call
    /// is approved or run: `Err` refuses the call as invalid arguments, with the message for the
    /// model. Default: nothing more to check.
    fn check(&self, args: &serde_json::Value) -> std::result::Result<(), String> {
        let _ = args;
        Ok(())
    }
    /// For a tool whose calls are worth showing while the model still writes them (a patch):
    /// a reader that takes the arguments' JSON text piece by piece and says what the call is
    /// so far. Default: none, and the call shows once it is whole.
    fn input_reader(&self) -> Option<Box<dyn InputReader>> {
        None
    }
    /// Runs the call. Blocks; honours `ctx.cancel()`.
    fn execute(
        &self,
        ctx: &ToolContext,
        args: serde_json::Value,
    ) -> std::result::Result<ToolOutput, ToolError>;
}

/// Reads a call's arguments while the model writes them (`Tool::input_reader`).
pub trait InputReader: Send {
    /// Takes the next piece of the arguments' JSON text, as the provider streamed it.
    fn push(&mut self, delta: &str);
    /// The call as far as it is written, when that changed since the last `view`: the kernel
    /// asks at most every 500 ms and sends what it gets as `CallProgress`.
    fn view(&mut self) -> Option<CallView>;
}

/// What a running call can reach: its ids, the cancel token, the event stream (output deltas,
/// questions to the person).
pub struct ToolContext {
    pub(crate) call_id: ToolCallId,
    pub(crate) turn: TurnId,
    pub(crate) step: StepId,
    pub(crate) cancel: CancelToken,
    pub(crate) source: EventSource,
    pub(crate) events: Sender<AgentEvent>,
    pub(crate) env: Arc<AgentEnv>,
    /// Where `request_approval` sends its requests: the loop, which decides and logs them.
    pub(crate) escalations: Sender<PendingEscalation>,
    /// Set when a hook asked to stop the turn while the call ran: the turn's failure message.
    pub(crate) halt: OnceLock<String>,
    /// Set when the call asked to end the turn after this step (`end_turn`).
    pub(crate) ends_turn: AtomicBool,
    /// The MCP result the call reported for clients (`report_mcp_result`).
    pub(crate) mcp_result: OnceLock<serde_json::Value>,
    /// Output not yet sent to the client, per stream, while secrets are redacted: the end of a
    /// chunk that may be the start of a secret the next chunk completes. A mutex because a tool
    /// may stream from several threads of its own (stdout and stderr readers); it is never held
    /// while an event is sent.
    pub(crate) held_output: Mutex<Vec<(OutputStream, String)>>,
}

/// The longest partial line held back from the client while waiting for its end.
const MAX_HELD_LINE: usize = 4096;

/// The longest private key block held back from the client while waiting for its end.
const MAX_HELD_BLOCK: usize = 64 * 1024;

/// Where to cut `text`, output held for the client, so that what comes before can be redacted
/// on its own: after its last line end, unless that leaves a partial line longer than
/// [`MAX_HELD_LINE`] (then all of it), and before a private key block that has not ended yet
/// (unless longer than [`MAX_HELD_BLOCK`]). Secrets other than key blocks hold no line end, so
/// none is cut in two.
fn release_point(text: &str) -> usize {
    let mut cut = text.rfind(['\n', '\r']).map_or(0, |at| at + 1);
    if text.len() - cut > MAX_HELD_LINE {
        cut = text.len();
    }
    if let Some(begin) = text[..cut].rfind("-----BEGIN ") {
        let block = &text[begin..];
        let first_line = block.split(['\n', '\r']).next().unwrap_or_default();
        if first_line.contains("PRIVATE KEY-----")
            && !block.contains("-----END ")
            && block.len() <= MAX_HELD_BLOCK
        {
            cut = begin;
        }
    }
    cut
}

/// What a tool asks for beyond its call's approval (see `ToolContext::request_approval`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EscalationRequest {
    /// One line for the person: what would run (`run `make` again without the sandbox`).
    pub summary: String,
    /// The keys a session grant covers (`escalate:cargo test`); logged with the decision.
    pub permission_keys: Vec<String>,
    /// Why it is needed, for the person.
    pub reason: Option<String>,
    /// False when the approval mode never asks: the request is refused without asking (and
    /// logged as decided by the mode).
    pub may_ask: bool,
    /// Whether the person's approval of the call itself covers this request (running the same
    /// command again outside the sandbox). False for what approving the call did not show them,
    /// such as a host a command wants to reach: such a request is asked even right after the
    /// call was approved, though a session grant of its keys still covers it.
    pub covered_by_call_approval: bool,
}

/// An escalation on its way to the loop, with where the answer goes.
pub(crate) struct PendingEscalation {
    pub(crate) call_id: ToolCallId,
    pub(crate) request: EscalationRequest,
    pub(crate) reply: Sender<ApprovalDecision>,
    /// Receives or disconnects when the requester stops waiting (the command that asked has
    /// ended): the loop then withdraws the question instead of holding the turn for it.
    pub(crate) withdrawn: crossbeam_channel::Receiver<()>,
}

/// A call's way to request approvals from threads of its own that outlive a borrow of its
/// `ToolContext` (a proxy's connection thread asking about a host for a running command).
/// Requests go to the loop like `ToolContext::request_approval`'s; they are answered only
/// while the call runs (the loop drops a request of a call that has ended: `Cancelled`).
#[derive(Clone)]
pub struct Approver {
    call_id: ToolCallId,
    cancel: CancelToken,
    escalations: Sender<PendingEscalation>,
}

impl Approver {
    /// The call it asks for.
    pub fn call_id(&self) -> &ToolCallId {
        &self.call_id
    }

    /// As `ToolContext::request_approval`; also `Cancelled` once `stop` disconnects or
    /// receives (the requester gave up waiting).
    pub fn request_approval(
        &self,
        request: EscalationRequest,
        stop: &crossbeam_channel::Receiver<()>,
    ) -> ApprovalDecision {
        let (reply, answer) = crossbeam_channel::bounded(1);
        let pending = PendingEscalation {
            call_id: self.call_id.clone(),
            request,
            reply,
            withdrawn: stop.clone(),
        };
        // The loop's channel holds one request per running call: a command asking about
        // several hosts at once waits here for room, or for the requester to give up.
        let sent = select! {
            send(self.escalations, pending) -> sent => sent.is_ok(),
            recv(self.cancel.signal()) -> _ => false,
            recv(stop) -> _ => false,
        };
        if !sent {
            return ApprovalDecision::Cancelled;
        }
        select! {
            recv(answer) -> answer => answer.unwrap_or(ApprovalDecision::Cancelled),
            recv(self.cancel.signal()) -> _ => ApprovalDecision::Cancelled,
            recv(stop) -> _ => ApprovalDecision::Cancelled,
        }
    }
}

impl ToolContext {
    /// A handle that requests approvals for this call from other threads (see [`Approver`]).
    pub fn approver(&self) -> Approver {
        Approver {
            call_id: self.call_id.clone(),
            cancel: self.cancel.clone(),
            escalations: self.escalations.clone(),
        }
    }

    /// The call being run.
    pub fn call_id(&self) -> &ToolCallId {
        &self.call_id
    }

    /// The turn.
    pub fn turn(&self) -> TurnId {
        self.turn
    }

    /// The step.
    pub fn step(&self) -> StepId {
        self.step
    }

    /// Fires when the turn is cancelled.
    pub fn cancel(&self) -> &CancelToken {
        &self.cancel
    }

    /// The session's secret redactor, if it has one: for what a tool writes outside its result
    /// (the file a command's full output is spilled to), which the kernel never sees.
    pub fn redactor(&self) -> Option<&Arc<crate::redact::Redactor>> {
        self.env.config.redactor.as_ref()
    }

    /// Tells the person something about the call that is not its output (a `Warning` event;
    /// not model-visible).
    pub fn warn(&self, message: impl Into<String>) {
        let kind = AgentEventKind::Warning { message: message.into() };
        let _ = self.events.send(AgentEvent { source: self.source.clone(), kind });
    }

    /// Sends output of the running call to the client (not to the model: only the result is
    /// model-visible). With a redactor, secrets are replaced first, and the end of a chunk
    /// that may continue in the next (a partial line) waits for it or for the call's end.
    pub fn output(&self, stream: OutputStream, chunk: impl Into<String>) {
        let chunk = chunk.into();
        let Some(redactor) = &self.env.config.redactor else {
            self.send_output(stream, chunk);
            return;
        };
        let ready = {
            let mut held = self.held_output.lock().unwrap_or_else(PoisonError::into_inner);
            let at = match held.iter().position(|(s, _)| *s == stream) {
                Some(at) => at,
                None => {
                    held.push((stream, String::new()));
                    held.len() - 1
                }
            };
            let text = &mut held[at].1;
            text.push_str(&chunk);
            let rest = text.split_off(release_point(text));
            std::mem::replace(text, rest)
        };
        if !ready.is_empty() {
            self.send_output(stream, redactor.redact(&ready).0.into_owned());
        }
    }

    /// Sends what `output` held back, redacted: the call has ended, nothing follows.
    pub(crate) fn flush_output(&self) {
        let held =
            std::mem::take(&mut *self.held_output.lock().unwrap_or_else(PoisonError::into_inner));
        for (stream, text) in held {
            if text.is_empty() {
                continue;
            }
            let text = match &self.env.config.redactor {
                Some(redactor) => redactor.redact(&text).0.into_owned(),
                None => text,
            };
            self.send_output(stream, text);
        }
    }

    fn send_output(&self, stream: OutputStream, chunk: String) {
        let kind = AgentEventKind::ToolOutputDelta { call_id: self.call_id.clone(), stream, chunk };
        let _ = self.events.send(AgentEvent { source: self.source.clone(), kind });
    }

    /// Asks for something this call needs beyond what it was approved for (running a command
    /// again outside the sandbox, say) and blocks for the answer. The loop decides, in this
    /// order: refused when `may_ask` is false (the approval mode never asks); allowed when the
    /// person approved this very call in this turn (they were asked and said yes); allowed when
    /// a session grant covers every key; otherwise the person is asked, and "for this session"
    /// grants the keys. Every answer is logged as an `approval` record of the call, with who
    /// decided. `Cancelled` when the turn is cancelled meanwhile.
    pub fn request_approval(&self, request: EscalationRequest) -> ApprovalDecision {
        let (reply, answer) = crossbeam_channel::bounded(1);
        let pending = PendingEscalation {
            call_id: self.call_id.clone(),
            request,
            reply,
            withdrawn: crossbeam_channel::never(),
        };
        if self.escalations.send(pending).is_err() {
            return ApprovalDecision::Cancelled;
        }
        select! {
            recv(answer) -> answer => answer.unwrap_or(ApprovalDecision::Cancelled),
            recv(self.cancel.signal()) -> _ => ApprovalDecision::Cancelled,
        }
    }

    /// Keeps `path`'s content for undo before the call writes it (absolute, resolved as it
    /// will be written). Cheap after the first call for a path in a turn; never fails.
    pub fn checkpoint(&self, path: &std::path::Path) {
        if let Some(checkpoints) = &self.env.deps.checkpoints {
            checkpoints.before_write(path);
        }
    }

    /// Says the call is about to run a command that may change files (for undo: the work tree
    /// is snapshotted before the turn's first command). Never fails.
    pub fn before_command(&self) {
        if let Some(checkpoints) = &self.env.deps.checkpoints {
            checkpoints.before_command();
        }
    }

    /// Hands clients the `CallToolResult` an MCP server returned for this call, as it sent it
    /// (content blocks, `structuredContent`): it travels with `ToolFinished`, not to the model
    /// (which sees the tool's output). The first report wins.
    pub fn report_mcp_result(&self, result: serde_json::Value) {
        let _ = self.mcp_result.set(result);
    }

    /// Asks the loop to end the turn, completed, once this step's results are logged: no
    /// further model request follows (a plan presented that nobody is there to approve).
    pub fn end_turn(&self) {
        self.ends_turn.store(true, Ordering::Relaxed);
    }

    /// Asks the loop to stop the turn once this call's result is logged (a hook of `event`
    /// said `continue: false` while the call ran). The first request wins.
    pub(crate) fn stop_turn(&self, event: &str, reason: &str) {
        let _ = self.halt.set(format!("a {event} hook stopped the turn: {reason}"));
    }

    /// Asks the person a question and blocks for the answer. `Err(Cancelled)` when the turn is
    /// cancelled meanwhile or the client drops the request unanswered.
    pub fn ask_user(
        &self,
        question: impl Into<String>,
        options: Vec<String>,
    ) -> std::result::Result<AskUserAnswer, ToolError> {
        let (reply, answer) = Reply::pair();
        let request = AskUserRequest {
            id: RequestId::new(),
            call_id: self.call_id.clone(),
            question: question.into(),
            options,
            reply,
        };
        let event =
            AgentEvent { source: self.source.clone(), kind: AgentEventKind::AskUser(request) };
        if self.events.send(event).is_err() {
            return Err(ToolError::Cancelled);
        }
        select! {
            recv(answer) -> answer => answer.map_err(|_| ToolError::Cancelled),
            recv(self.cancel.signal()) -> _ => Err(ToolError::Cancelled),
        }
    }
}

/// The tools an agent may call, in registration order (the order the model sees them in),
/// followed by the tools that joined later (`LateTools`) in the order they joined.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    by_name: HashMap<String, usize>,
    late: Option<LateTools>,
}

/// Tools that join a registry after the agent started (an MCP server that finished starting
/// after the first request, a server's new tools), and notices about them for the person.
///
/// Invariants: tools are only appended, never reordered or removed, so the tool list a request
/// shows only grows at its end and the prompt prefix stays stable; a late tool whose name the
/// registry already has is ignored; a clone shares the same list.
#[derive(Clone, Default)]
pub struct LateTools {
    // Shared between the agents' loops and workers that read the tools and the source that
    // adds them; the lock is held only to copy or push, never across a channel operation or a
    // call.
    inner: Arc<Mutex<Late>>,
    source: Option<Arc<dyn ToolSource>>,
}

/// Where late tools come from: asked at each step boundary, on the agent's thread, for what
/// joined since it was last asked.
pub trait ToolSource: Send + Sync {
    /// Adds to `late` the tools and notices that arrived since the last call.
    fn poll(&self, late: &LateTools);

    /// Whether a step may be built without waiting (see [`ToolSource::wait_ready`]). Default:
    /// always.
    fn is_ready(&self) -> bool {
        true
    }

    /// Blocks until what the first request should offer has arrived (an MCP server's start) or
    /// `cancel` fires, whichever comes first; the kernel calls it before a step while
    /// [`ToolSource::is_ready`] is false, on a helper thread, and fires `cancel` when the turn
    /// is cancelled. After a cancel it is asked again at the next turn's first step. Default:
    /// nothing to wait for.
    fn wait_ready(&self, cancel: &CancelToken) {
        let _ = cancel;
    }
}

#[derive(Default)]
struct Late {
    tools: Vec<Arc<dyn Tool>>,
    by_name: HashMap<String, usize>,
    notices: Vec<String>,
}

impl LateTools {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty list filled from `source` at each step boundary.
    pub fn with_source(source: Arc<dyn ToolSource>) -> Self {
        Self { inner: Arc::default(), source: Some(source) }
    }

    /// Whether the source, if any, has what a step needs without waiting.
    pub fn is_ready(&self) -> bool {
        self.source.as_ref().is_none_or(|source| source.is_ready())
    }

    /// Waits for the source, if any, to be ready, or for `cancel` ([`ToolSource::wait_ready`]).
    pub fn wait_ready(&self, cancel: &CancelToken) {
        if let Some(source) = &self.source {
            source.wait_ready(cancel);
        }
    }

    /// Asks the source, if any, for what arrived.
    pub fn poll(&self) {
        if let Some(source) = &self.source {
            source.poll(self);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Late> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends a tool; returns false (and drops it) when a late tool of that name exists.
    pub fn add(&self, tool: Arc<dyn Tool>) -> bool {
        let mut late = self.lock();
        let name = tool.name().to_owned();
        if late.by_name.contains_key(&name) {
            return false;
        }
        let index = late.tools.len();
        late.by_name.insert(name, index);
        late.tools.push(tool);
        true
    }

    /// Queues a notice for the person, shown as a warning at the agent's next step.
    pub fn notify(&self, message: impl Into<String>) {
        self.lock().notices.push(message.into());
    }

    /// How many tools joined so far (a generation: it only grows).
    pub fn len(&self) -> usize {
        self.lock().tools.len()
    }

    /// Whether no tool joined yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The queued notices, taken.
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut self.lock().notices)
    }

    fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let late = self.lock();
        late.by_name.get(name).map(|&index| Arc::clone(&late.tools[index]))
    }

    fn snapshot(&self) -> Vec<Arc<dyn Tool>> {
        self.lock().tools.clone()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool. Fails when the name is taken.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<()> {
        let name = tool.name().to_owned();
        if self.by_name.contains_key(&name) {
            return Err(Error::DuplicateTool { name });
        }
        self.by_name.insert(name, self.tools.len());
        self.tools.push(tool);
        Ok(())
    }

    /// Lets tools join after the agent started: `late`'s tools follow the registered ones.
    pub fn attach_late(&mut self, late: LateTools) {
        self.late = Some(late);
    }

    /// The late tools' list, when one is attached.
    pub fn late(&self) -> Option<&LateTools> {
        self.late.as_ref()
    }

    /// How many late tools joined so far: when it changed, `specs` changed.
    pub fn generation(&self) -> usize {
        self.late.as_ref().map_or(0, LateTools::len)
    }

    /// The registered tool with this name (late tools not included: see `find`).
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.by_name.get(name).map(|&index| &self.tools[index])
    }

    /// The tool with this name, registered or late.
    pub fn find(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.get(name).cloned().or_else(|| self.late.as_ref()?.get(name))
    }

    /// What a call of the tool `name` is: the tool's own view of `args`, or the generic view
    /// when no tool has that name (a call of a tool that is gone, in a resumed log).
    pub fn view(&self, name: &str, args: &serde_json::Value) -> CallView {
        match self.find(name) {
            Some(tool) => tool.view(args),
            None => CallView::generic(name, args),
        }
    }

    /// A reader of a streaming call of the tool `name`, when that tool reads partial
    /// arguments (see `Tool::input_reader`).
    pub fn input_reader(&self, name: &str) -> Option<Box<dyn InputReader>> {
        self.find(name)?.input_reader()
    }

    /// The registered tools, in order (late tools not included: see `all`).
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    /// Every tool, registered then late, in order.
    pub fn all(&self) -> Vec<Arc<dyn Tool>> {
        let mut all = self.tools.clone();
        if let Some(late) = &self.late {
            all.extend(
                late.snapshot().into_iter().filter(|t| !self.by_name.contains_key(t.name())),
            );
        }
        all
    }

    /// The specs the model sees, in order: the registered tools, then the late ones.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.all()
            .iter()
            .map(|tool| ToolSpec {
                name: tool.name().to_owned(),
                description: tool.description().to_owned(),
                schema: tool.schema(),
            })
            .collect()
    }

    /// `specs` (this registry's) less the tools not offered now; borrowed when every tool is.
    pub fn offered<'a>(&self, specs: &'a [ToolSpec]) -> std::borrow::Cow<'a, [ToolSpec]> {
        if self.tools.iter().all(|tool| tool.offered()) {
            return std::borrow::Cow::Borrowed(specs);
        }
        std::borrow::Cow::Owned(
            specs
                .iter()
                .filter(|spec| self.get(&spec.name).is_none_or(|tool| tool.offered()))
                .cloned()
                .collect(),
        )
    }

    /// A registry with only the tools named in `allow` (late ones that joined so far
    /// included), in this registry's order. An entry ending in `*` names every tool starting
    /// with what precedes it (`mcp__github__*`: the tools of the MCP server `github`).
    pub fn only(&self, allow: &[String]) -> Self {
        let mut out = Self::new();
        for tool in self.all() {
            let named = |entry: &String| match entry.strip_suffix('*') {
                Some(prefix) => tool.name().starts_with(prefix),
                None => entry == tool.name(),
            };
            if allow.iter().any(named) {
                out.by_name.insert(tool.name().to_owned(), out.tools.len());
                out.tools.push(tool);
            }
        }
        out
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let all = self.all();
        f.debug_list().entries(all.iter().map(|tool| tool.name())).finish()
    }
}
