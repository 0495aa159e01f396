//! The tool seam: the `Tool` trait, the `ToolContext` a call runs with, and the `ToolRegistry`.
//!
//! Invariants: a tool runs on a worker thread of its own, under `catch_unwind`; it must honour
//! `ctx.cancel()` (return soon after it fires, killing what it started); it never touches the
//! session log (the loop logs its result). A failure is a `ToolError` or an output with
//! `is_error`, data for the model, never a kernel error.

use std::collections::HashMap;
use std::sync::Arc;

use codecoder_protocol::{
    AgentEvent, AgentEventKind, ApprovalDecision, ApprovalRequest, AskUserAnswer, AskUserRequest,
    CommandExit, ContentItem, EventSource, OutputStream, Reply, RequestId, StepId, ToolCall,
    ToolCallId, ToolError, TurnId,
};
use crossbeam_channel::{Sender, select};

use crate::agent::AgentEnv;
use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::model::ToolSpec;

/// How much a tool can change; approval policies decide by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolKind {
    /// Reads only (files, search). Runs in parallel with other read-only calls.
    ReadOnly,
    /// Edits files.
    Edit,
    /// Runs commands.
    Exec,
    /// Reaches the network.
    Network,
    /// Talks to the person.
    Interactive,
}

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
    /// The call as it runs (after any hook rewrite).
    pub(crate) call: ToolCall,
    pub(crate) turn: TurnId,
    pub(crate) step: StepId,
    pub(crate) cancel: CancelToken,
    pub(crate) source: EventSource,
    pub(crate) events: Sender<AgentEvent>,
    pub(crate) env: Arc<AgentEnv>,
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

    /// Asks the person to approve something this call needs beyond what it was approved for
    /// (running a command again outside the sandbox, say) and blocks for the answer:
    /// `Cancelled` when the turn is cancelled meanwhile or nobody answers. The decision is the
    /// tool's to act on and to cache; the session log sees its effect in the call's result.
    pub fn request_approval(
        &self,
        summary: impl Into<String>,
        permission_keys: Vec<String>,
        reason: Option<String>,
    ) -> ApprovalDecision {
        let (reply, answer) = Reply::pair();
        self.env.deps.hooks.notification(
            &format!("codecoder needs your permission to use {}", self.call.name),
            "permission_prompt",
        );
        let request = ApprovalRequest {
            id: RequestId::new(),
            turn: self.turn,
            step: self.step,
            call: self.call.clone(),
            summary: summary.into(),
            permission_keys,
            reason,
            reply,
        };
        let event = AgentEvent {
            source: self.source.clone(),
            kind: AgentEventKind::ApprovalRequest(request),
        };
        if self.events.send(event).is_err() {
            return ApprovalDecision::Cancelled;
        }
        select! {
            recv(answer) -> answer => answer.unwrap_or(ApprovalDecision::Cancelled),
            recv(self.cancel.signal()) -> _ => ApprovalDecision::Cancelled,
        }
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
