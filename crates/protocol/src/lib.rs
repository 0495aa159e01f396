//! Pure data shared by every codecoder crate.
//!
//! This crate holds the provider-neutral message model (`Message`, `MessageItem`), the kernel's
//! input and output (`AgentCommand`, `AgentEvent`), id newtypes and the session-log records.
//! Invariant: it contains no logic beyond constructors, `Display`/`FromStr` and serde, and it
//! depends on no other crate of ours. Only this crate derives `Serialize`/`Deserialize` for types
//! that cross a crate boundary.
#![warn(missing_docs)]

pub mod agent;
pub mod env;
pub mod exec_event;
pub mod ids;
pub mod message;
pub mod permission;
pub mod reasoning;
pub mod record;
pub mod settings;
pub mod usage;
pub mod view;

pub use agent::{
    AgentCommand, AgentEvent, AgentEventKind, AgentStatus, ApprovalDecision, ApprovalRequest,
    AskUserAnswer, AskUserRequest, EventSource, OutputStream, Reply, ToolError, TurnOutcome,
    UserInput,
};
pub use ids::{MessageId, RequestId, SessionId, StepId, ToolCallId, TurnId};
pub use message::{
    BlobRef, CommandExit, ContentItem, Image, Message, MessageItem, Reasoning, Role, ToolCall,
    ToolResult, ToolResultStatus,
};
pub use permission::{
    ApprovalMode, CLAUDE_TOOL_ALIASES, CLAUDE_TOOL_NAMES, DecidedBy, PermissionMode, SandboxMode,
    ToolKind, UnknownValue, Verdict, claude_tool_name, our_tool_name,
};
pub use reasoning::{ReasoningEffort, ReasoningSettings, ReasoningSummary};
pub use record::{
    ChangedBy, CheckpointRecord, ContextRecord, FORMAT_VERSION, FileCheckpoint, ForkOrigin,
    ParentLink, PromptSection, Record, RecordBody, RewindRecord, SessionMeta, StopReason,
    SyntheticReason, ToolSpec, join_sections,
};
pub use settings::{BackendPreference, FsyncPolicy, Inherit, ToolCallFormat, WireApi};
pub use usage::Usage;
pub use view::{
    CallKind, CallView, ChangeKind, FileChange, PlanStep, PlanView, TextEdit, compact_args,
    first_line, truncate,
};

/// `value` with every object's keys in sorted order, so that checked-in JSON (schemas, goldens)
/// is the same text whether or not serde_json keeps insertion order (its `preserve_order`
/// feature, which the ACP SDK turns on for every crate of a build that includes it).
pub fn sorted_json(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<(String, serde_json::Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            serde_json::Value::Object(
                entries.into_iter().map(|(k, v)| (k, sorted_json(v))).collect(),
            )
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.into_iter().map(sorted_json).collect())
        }
        other => other,
    }
}

#[cfg(test)]
mod tests;
