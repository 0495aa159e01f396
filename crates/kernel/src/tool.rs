//! The tool seam: the `Tool` trait, the `ToolContext` a call runs with, and the `ToolRegistry`.
//!
//! Invariants: a tool runs on a worker thread of its own, under `catch_unwind`; it must honour
//! `ctx.cancel()` (return soon after it fires, killing what it started); it never touches the
//! session log (the loop logs its result). A failure is a `ToolError` or an output with
//! `is_error`, data for the model, never a kernel error.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use codecoder_protocol::{
    AgentEvent, AgentEventKind, ApprovalDecision, AskUserAnswer, AskUserRequest, CommandExit,
    ContentItem, EventSource, OutputStream, Reply, RequestId, StepId, ToolCallId, ToolError,
    TurnId,
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
    /// One line for the person: what this call will do.
    fn summary(&self, args: &serde_json::Value) -> String {
        format!("{} {args}", self.name())
    }
    /// Runs the call. Blocks; honours `ctx.cancel()`.
    fn execute(
        &self,
        ctx: &ToolContext,
        args: serde_json::Value,
    ) -> std::result::Result<ToolOutput, ToolError>;
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
}

/// An escalation on its way to the loop, with where the answer goes.
pub(crate) struct PendingEscalation {
    pub(crate) call_id: ToolCallId,
    pub(crate) request: EscalationRequest,
    pub(crate) reply: Sender<ApprovalDecision>,
}

impl ToolContext {
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

    /// Tells the person something about the call that is not its output (a `Warning` event;
    /// not model-visible).
    pub fn warn(&self, message: impl Into<String>) {
        let kind = AgentEventKind::Warning { message: message.into() };
        let _ = self.events.send(AgentEvent { source: self.source.clone(), kind });
    }

    /// Sends output of the running call to the client (not to the model: only the result is
    /// model-visible).
    pub fn output(&self, stream: OutputStream, chunk: impl Into<String>) {
        let kind = AgentEventKind::ToolOutputDelta {
            call_id: self.call_id.clone(),
            stream,
            chunk: chunk.into(),
        };
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
        let pending = PendingEscalation { call_id: self.call_id.clone(), request, reply };
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

/// The tools an agent may call, in registration order (the order the model sees them in).
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    by_name: HashMap<String, usize>,
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

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.by_name.get(name).map(|&index| &self.tools[index])
    }

    /// The tools, in order.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    /// The specs the model sees, in order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .map(|tool| ToolSpec {
                name: tool.name().to_owned(),
                description: tool.description().to_owned(),
                schema: tool.schema(),
            })
            .collect()
    }

    /// A registry with only the tools named in `allow`, in this registry's order.
    pub fn only(&self, allow: &[String]) -> Self {
        let mut out = Self::new();
        for tool in &self.tools {
            if allow.iter().any(|name| name == tool.name()) {
                out.by_name.insert(tool.name().to_owned(), out.tools.len());
                out.tools.push(Arc::clone(tool));
            }
        }
        out
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.iter().map(|tool| tool.name())).finish()
    }
}
