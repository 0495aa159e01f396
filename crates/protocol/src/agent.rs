//! The kernel's input (`AgentCommand`, on the low-volume `cmd` channel) and output (`AgentEvent`,
//! on the high-volume `events` channel), plus the one-shot `Reply` that approval and ask-user
//! requests carry (seed chapters 3.3, 3.6, 3.8).
//!
//! Invariant: replies never travel on `cmd`. A request event owns its `Reply`; the tool executor
//! blocks on the other end. Dropping a `Reply` without answering means "cancelled".

use std::fmt;

use crossbeam_channel::{Receiver, Sender};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{RequestId, SessionId, StepId, ToolCallId, TurnId};
use crate::message::{ContentItem, ToolCall, ToolResult};
use crate::usage::Usage;
use crate::view::CallView;

/// What the person typed or attached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserInput {
    /// Text and images, in order.
    pub content: Vec<ContentItem>,
}

impl UserInput {
    /// Input holding one text item.
    pub fn text(text: impl Into<String>) -> Self {
        Self { content: vec![ContentItem::Text { text: text.into() }] }
    }
}

/// Client → agent: the person's intent. Low volume; never a reply to a request.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentCommand {
    /// Start a turn with this input; queued and injected at the next step boundary when a turn
    /// is running. Causes `TurnStarted`, then step events, then `TurnDone`.
    Submit(UserInput),
    /// Add input to the running turn at the next step boundary (like `Submit` when idle).
    /// Causes no event of its own; the input shows up in the next request.
    Steer(UserInput),
    /// Compact the conversation now (`/compact [focus]`): a summary replaces the history. Idle,
    /// it runs as a turn of its own (`TurnStarted`, `Compacted`, `TurnDone`); during a turn, at
    /// the next step boundary.
    Compact {
        /// What the summary should focus on.
        focus: Option<String>,
    },
    /// Log a rewind that a front-end carried out (files restored through the runtime, and/or the
    /// conversation taken back to before a turn): appended as a `rewind` record when no turn
    /// runs, and from then on requests carry the history it leaves. Causes no event; during a
    /// turn it is refused with a `Warning`.
    Rewind(crate::record::RewindRecord),
    /// Cancel the running turn: stream dropped, tools cancelled, pending requests resolved as
    /// cancelled. Causes `TurnDone { outcome: Cancelled }` (nothing when idle).
    Cancel,
    /// Cancel whatever runs, close the session log, join every thread. Causes `ShutdownComplete`.
    Shutdown,
}

/// Where an event comes from: the session itself or one of its subagents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventSource {
    /// The session (log) whose agent emitted the event.
    pub session_id: SessionId,
    /// For a subagent: the chain of `agent` tool calls from the root session down to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subagent_path: Vec<ToolCallId>,
}

/// Agent → client. High volume: one per token delta.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentEvent {
    /// Which agent emitted it.
    pub source: EventSource,
    /// What happened.
    pub kind: AgentEventKind,
}

/// A stream of a running command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Coarse state for a status line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// Waiting for input.
    Idle,
    /// Waiting for the model.
    Thinking,
    /// Running tools.
    RunningTools,
    /// Waiting for the person to answer a request.
    WaitingForUser,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TurnOutcome {
    /// The model finished without asking for more tools.
    Completed,
    /// The person cancelled.
    Cancelled,
    /// The turn could not go on (provider error after retries, step limit, …).
    Failed {
        /// What went wrong, for the person.
        message: String,
    },
    /// The process stopped before the turn ended; closed by repair on load.
    Interrupted,
}

/// What happened. Each variant carries the ids a client needs to render it without the log.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEventKind {
    /// A turn began.
    TurnStarted {
        /// The turn.
        turn: TurnId,
    },
    /// A step (one model request and its tool calls) began.
    StepStarted {
        /// The turn.
        turn: TurnId,
        /// The step.
        step: StepId,
    },
    /// Model text.
    TextDelta {
        /// The turn.
        turn: TurnId,
        /// The step.
        step: StepId,
        /// The new text.
        delta: String,
    },
    /// Model reasoning.
    ReasoningDelta {
        /// The turn.
        turn: TurnId,
        /// The step.
        step: StepId,
        /// The new text.
        delta: String,
    },
    /// A tool call is about to run (after approval).
    ToolStarted {
        /// The turn.
        turn: TurnId,
        /// The step.
        step: StepId,
        /// The call, with its arguments.
        call: ToolCall,
        /// What the call is, as its tool describes it.
        view: CallView,
    },
    /// The model's text of this step is complete: its stream ended and the message was logged.
    /// Sent before the step's tool calls run, only for a step with text, and never for a step
    /// that was cut off (cancelled, failed) or retried. The text is what the `TextDelta`s of the
    /// step's last attempt add up to; `StepFinished` carries it again.
    AgentMessage {
        /// The turn.
        turn: TurnId,
        /// The step.
        step: StepId,
        /// The whole text.
        text: String,
    },
    /// A call the model is still writing, as its tool can describe it so far (for a patch: the
    /// files it changes, with their changes up to the last complete line). Sent at most every
    /// 500 ms while the arguments stream in, only for tools that read partial arguments; the
    /// call's own `ToolStarted` or `ToolFinished` follows with the whole view. A call that turns
    /// out invalid ends like any other, with `ToolFinished`.
    CallProgress {
        /// The turn.
        turn: TurnId,
        /// The step.
        step: StepId,
        /// The call, by the provider's id.
        call_id: ToolCallId,
        /// The tool's name.
        name: String,
        /// The call so far.
        view: CallView,
    },
    /// Output of a running tool, for example a command's stdout.
    ToolOutputDelta {
        /// The call.
        call_id: ToolCallId,
        /// Which stream.
        stream: OutputStream,
        /// The new output.
        chunk: String,
    },
    /// A tool call ended (every call the model made ends here once, run or not).
    ToolFinished {
        /// The turn.
        turn: TurnId,
        /// The step.
        step: StepId,
        /// The call.
        call_id: ToolCallId,
        /// The call as it ran or was refused, with its arguments (a hook may have rewritten
        /// them): a call refused before it ran (unknown tool, bad arguments, a deny) had no
        /// `ToolStarted`, and this is where a client learns what it was.
        call: ToolCall,
        /// What the call is, as its tool describes it (the generic view for an unknown tool).
        view: CallView,
        /// The result, or why there is none.
        result: Result<ToolResult, ToolError>,
        /// For a call of an MCP server's tool: the `CallToolResult` as the server sent it
        /// (content blocks, `structuredContent`), for clients that show MCP calls as such.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mcp_result: Option<serde_json::Value>,
    },
    /// The model stream broke after partial output; the step's request is sent again. What was
    /// streamed for this step so far is void (it was never logged).
    StepRetried {
        /// The turn.
        turn: TurnId,
        /// The step.
        step: StepId,
        /// Why, for the person.
        reason: String,
    },
    /// The conversation was compacted: a `compaction` record replaced the history the model
    /// sees (with a summary, or trimmed without one when the summary request failed).
    Compacted {
        /// The turn it happened in.
        turn: TurnId,
        /// `auto` or `manual`.
        trigger: String,
        /// Whether the model wrote a summary (false: a deterministic trim).
        summarized: bool,
        /// Estimated tokens of the history before and after.
        tokens_before: u64,
        /// Estimated tokens after.
        tokens_after: u64,
        /// For the person: what happened.
        message: String,
    },
    /// A step ended.
    StepFinished {
        /// The turn.
        turn: TurnId,
        /// The step.
        step: StepId,
        /// Tokens of this step's request.
        usage: Usage,
        /// The model's text of this step as logged (a retried step's void text is not in it);
        /// empty when the step only called tools. The text of a turn's last step is the turn's
        /// final message.
        text: String,
    },
    /// The state changed.
    Status(AgentStatus),
    /// A tool needs the person's approval; answer through the request's `reply`.
    ApprovalRequest(ApprovalRequest),
    /// The model asks the person a question; answer through the request's `reply`.
    AskUser(AskUserRequest),
    /// Tokens so far.
    Usage {
        /// The turn.
        turn: TurnId,
        /// Summed over the turn so far.
        turn_total: Usage,
    },
    /// Something the person should know that does not stop the turn.
    Warning {
        /// The text.
        message: String,
    },
    /// A hook's message for the person (its `systemMessage`, or the `stopReason` of a hook
    /// that stopped the turn). Not model-visible.
    HookMessage {
        /// The hook event that produced it (`PreToolUse`, `Stop`, …).
        event: String,
        /// The text.
        message: String,
    },
    /// The turn ended.
    TurnDone {
        /// The turn.
        turn: TurnId,
        /// True when cancelled.
        cancelled: bool,
        /// How it ended.
        outcome: TurnOutcome,
        /// Tokens of the whole turn.
        usage: Usage,
    },
    /// The agent stopped after `Shutdown`; no event follows.
    ShutdownComplete,
    /// A prompt some client sent to a session several clients share (`codecoder serve`), as a
    /// client of that server passes it to its UI. The kernel never emits it: a front-end knows
    /// its own input.
    UserPrompt {
        /// What was sent.
        input: UserInput,
        /// Added to the running turn rather than a turn of its own.
        steer: bool,
    },
}

/// Why a tool call produced no result. Shown to the model as an error result it can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolError {
    /// No tool has that name.
    UnknownTool {
        /// The name the model used.
        name: String,
    },
    /// The arguments do not fit the tool's schema.
    InvalidArguments {
        /// What is wrong, precisely enough to fix.
        message: String,
    },
    /// The approval chain or the person refused.
    PermissionDenied {
        /// Why, including the person's feedback if any.
        reason: String,
    },
    /// The tool ran and failed.
    Failed {
        /// What went wrong.
        message: String,
    },
    /// The tool panicked; the agent lives.
    Panicked {
        /// The panic message.
        message: String,
    },
    /// The tool took longer than allowed.
    TimedOut {
        /// The limit, in milliseconds.
        limit_ms: u64,
    },
    /// Cancelled before or while running.
    Cancelled,
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownTool { name } => write!(f, "unknown tool `{name}`"),
            Self::InvalidArguments { message } => write!(f, "invalid arguments: {message}"),
            Self::PermissionDenied { reason } => write!(f, "permission denied: {reason}"),
            Self::Failed { message } => write!(f, "{message}"),
            Self::Panicked { message } => write!(f, "the tool crashed: {message}"),
            Self::TimedOut { limit_ms } => write!(f, "timed out after {limit_ms} ms"),
            Self::Cancelled => f.write_str("cancelled"),
        }
    }
}

impl std::error::Error for ToolError {}

/// The one-shot answer channel a request carries. The receiving end is the tool executor.
pub struct Reply<T> {
    sender: Sender<T>,
}

impl<T> Reply<T> {
    /// A reply and the receiver the requester blocks on.
    pub fn pair() -> (Self, Receiver<T>) {
        let (sender, receiver) = crossbeam_channel::bounded(1);
        (Self { sender }, receiver)
    }

    /// Answers the request. Returns false when the requester is gone (cancelled meanwhile).
    pub fn send(self, answer: T) -> bool {
        self.sender.send(answer).is_ok()
    }
}

/// A reply nobody waits on (answering it does nothing): what a request read back from its JSON
/// carries until the reader gives it a reply of its own.
impl<T> Default for Reply<T> {
    fn default() -> Self {
        Self::pair().0
    }
}

impl<T> fmt::Debug for Reply<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Reply")
    }
}

/// A person's answer to an approval request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run this call.
    AllowOnce,
    /// Run this call and the like of it (same permission keys) for the rest of the session.
    AllowForSession,
    /// Do not run it.
    Deny,
    /// Do not run it, and tell the model why.
    DenyWithFeedback {
        /// The person's words for the model.
        feedback: String,
    },
    /// The request was withdrawn (turn cancelled) before an answer.
    Cancelled,
}

/// A tool asks for approval before it runs.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    /// The request.
    pub id: RequestId,
    /// The turn.
    pub turn: TurnId,
    /// The step.
    pub step: StepId,
    /// The call, with its arguments.
    pub call: ToolCall,
    /// What the call is, as its tool describes it.
    pub view: CallView,
    /// One line for the person: what will happen.
    pub summary: String,
    /// The keys a session grant would cover (`shell:git status`, `edit:src/**`).
    pub permission_keys: Vec<String>,
    /// Why the person is asked: the rule, hook or default behind the question
    /// (`ask — project rule ask \`run_command(git push*)\``), or the sandbox denial an
    /// escalation would retry past. `None` when nothing more specific than "the policy asks".
    pub reason: Option<String>,
    /// Where to send the decision.
    #[serde(skip)]
    pub reply: Reply<ApprovalDecision>,
}

/// The model asks the person a question.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AskUserRequest {
    /// The request.
    pub id: RequestId,
    /// The call that asks.
    pub call_id: ToolCallId,
    /// The question.
    pub question: String,
    /// Suggested answers; may be empty for free text.
    pub options: Vec<String>,
    /// Where to send the answer.
    #[serde(skip)]
    pub reply: Reply<AskUserAnswer>,
}

/// A person's answer to a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AskUserAnswer {
    /// The answer text.
    Answer {
        /// The text.
        text: String,
    },
    /// The person chose not to answer.
    Declined,
    /// No one can be asked: the front-end has no way to show the question (a client that does
    /// not take questions, `exec`). The tool tells the model why.
    Unavailable {
        /// Why, in a sentence for the model (`the editor cannot show questions`).
        reason: String,
    },
}
