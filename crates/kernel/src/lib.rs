//! The kernel: the AgentLoop on OS threads (seed chapter 3; design.md "Runtime model", "A turn").
//!
//! `spawn_agent` starts one AgentLoop on its own named thread and returns an `AgentHandle`: a
//! `cmd` sender (client intent: submit, steer, cancel, shutdown) and an `events` receiver (token
//! deltas, tool progress, approval and ask-user requests carrying their own one-shot `Reply`,
//! usage, turn done). The loop `select!`s over the model stream (read on its own thread), `cmd`
//! and tool completions, so a cancel is seen at once whatever the loop is doing.
//!
//! The kernel knows only traits: `ModelClient`, `PromptBuilder`, `Tool` (in a `ToolRegistry`),
//! `ApprovalPolicy`, `StepInterceptor`, and a `SessionFactory` that makes session writers. It
//! names no concrete provider, tool, sandbox or front-end; the one tool it ships is `AgentTool`
//! (subagents), because a subagent is a kernel concept.
//!
//! Invariants:
//! - Model-visible ⟺ logged: everything a request shows the model is appended to the session
//!   log before the request is sent, and the request's history is the log's projection.
//! - Every turn that starts ends in the log (`turn_end`) and on the event stream (`TurnDone`),
//!   whatever happens: completion, cancel, failure, shutdown. After a cancel the log is valid.
//! - Every thread the kernel starts is named and joined; a panicking tool or subagent becomes an
//!   error result and the loop lives.

mod agent;
mod approval;
mod cancel;
mod checkpoint;
mod compact;
mod error;
mod exec;
mod hooks;
mod model;
mod pool;
mod prompt;
mod redact;
mod schema;
mod stream;
mod subagent;
mod tool;
mod turn;

pub use agent::{
    AgentConfig, AgentDeps, AgentHandle, AgentType, BUDGET_REACHED, Budget, Prices, ReportedInput,
    STEP_LIMIT_REACHED, SessionFactory, StepInfo, StepInterceptor, StepVerdict, SubagentConfig,
    spawn_agent, spawn_agent_on,
};
pub use approval::{AllowAll, ApprovalPolicy, ApprovalQuery, PolicyAnswer};
pub use cancel::CancelToken;
pub use checkpoint::Checkpoints;
pub use compact::{CompactTrigger, Compactor, SummaryRequest};
pub use error::{Error, Result};
pub use hooks::{
    HookReport, HookScope, HookStack, HookVerdict, Hooks, NoHooks, PermissionAnswer,
    PermissionDeniedHook, PermissionHook, PostToolUse, PreToolUse, PromptSubmit, SessionStartHook,
    StopHook,
};
pub use model::{ModelClient, ModelError, ModelRequest, ResponseEvent, ResponseStream, ToolSpec};
pub use prompt::{PromptBuilder, PromptInput, StaticPrompt};
pub use redact::{MIN_VALUE_LEN, Redactor, Secret, redaction_note};
pub use schema::validate as validate_schema;
pub use subagent::AgentTool;
pub use tool::{
    Approver, EscalationRequest, InputReader, LateTools, Tool, ToolContext, ToolKind, ToolOutput,
    ToolRegistry, ToolSource,
};

#[cfg(test)]
mod tests;
