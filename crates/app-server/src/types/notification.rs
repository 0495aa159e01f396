//! The server's notifications: `{method, params}` with one params type per method.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::types::{FileUpdateChange, RequestId, Thread, ThreadItem, Turn, TurnError};

/// Every notification the server sends, as `{method, params}`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "method", content = "params")]
pub enum ServerNotification {
    /// A thread was started or forked.
    #[serde(rename = "thread/started")]
    ThreadStarted(ThreadStartedNotification),
    /// A turn began.
    #[serde(rename = "turn/started")]
    TurnStarted(TurnNotification),
    /// A turn ended: `completed`, `interrupted` or `failed`.
    #[serde(rename = "turn/completed")]
    TurnCompleted(TurnNotification),
    /// An item began.
    #[serde(rename = "item/started")]
    ItemStarted(ItemStartedNotification),
    /// An item ended.
    #[serde(rename = "item/completed")]
    ItemCompleted(ItemCompletedNotification),
    /// More of an agent message's text.
    #[serde(rename = "item/agentMessage/delta")]
    AgentMessageDelta(DeltaNotification),
    /// More of a reasoning item's text.
    #[serde(rename = "item/reasoning/textDelta")]
    ReasoningTextDelta(ReasoningTextDeltaNotification),
    /// More of a running command's output.
    #[serde(rename = "item/commandExecution/outputDelta")]
    CommandExecutionOutputDelta(DeltaNotification),
    /// The files of a file change as the model has written them so far.
    #[serde(rename = "item/fileChange/patchUpdated")]
    FileChangePatchUpdated(FileChangePatchUpdatedNotification),
    /// The thread's token counts after a model request.
    #[serde(rename = "thread/tokenUsage/updated")]
    ThreadTokenUsageUpdated(TokenUsageNotification),
    /// The conversation was compacted (also a `contextCompaction` item).
    #[serde(rename = "thread/compacted")]
    ThreadCompacted(CompactedNotification),
    /// A turn failed, or a model request is retried.
    #[serde(rename = "error")]
    Error(ErrorNotification),
    /// Something the person should know that stops nothing.
    #[serde(rename = "warning")]
    Warning(WarningNotification),
    /// A server request was answered, or withdrawn because its turn ended.
    #[serde(rename = "serverRequest/resolved")]
    ServerRequestResolved(ServerRequestResolvedNotification),
}

impl ServerNotification {
    /// The method name.
    pub fn method(&self) -> &'static str {
        match self {
            Self::ThreadStarted(_) => "thread/started",
            Self::TurnStarted(_) => "turn/started",
            Self::TurnCompleted(_) => "turn/completed",
            Self::ItemStarted(_) => "item/started",
            Self::ItemCompleted(_) => "item/completed",
            Self::AgentMessageDelta(_) => "item/agentMessage/delta",
            Self::ReasoningTextDelta(_) => "item/reasoning/textDelta",
            Self::CommandExecutionOutputDelta(_) => "item/commandExecution/outputDelta",
            Self::FileChangePatchUpdated(_) => "item/fileChange/patchUpdated",
            Self::ThreadTokenUsageUpdated(_) => "thread/tokenUsage/updated",
            Self::ThreadCompacted(_) => "thread/compacted",
            Self::Error(_) => "error",
            Self::Warning(_) => "warning",
            Self::ServerRequestResolved(_) => "serverRequest/resolved",
        }
    }
}

/// `thread/started`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartedNotification {
    /// The thread.
    pub thread: Thread,
}

/// `turn/started` and `turn/completed`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn: Turn,
}

/// `item/started`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ItemStartedNotification {
    /// The item.
    pub item: ThreadItem,
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// When it started, in Unix milliseconds.
    pub started_at_ms: i64,
}

/// `item/completed`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ItemCompletedNotification {
    /// The item.
    pub item: ThreadItem,
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// When it completed, in Unix milliseconds.
    pub completed_at_ms: i64,
}

/// `item/*/delta`: more text of an item.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeltaNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The item.
    pub item_id: String,
    /// The new text.
    pub delta: String,
}

/// `item/fileChange/patchUpdated`: a file change's files, whole, as written so far.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileChangePatchUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The `fileChange` item.
    pub item_id: String,
    /// Every file so far, replacing those of the item and of earlier updates.
    pub changes: Vec<FileUpdateChange>,
}

/// `item/reasoning/textDelta`: more reasoning text.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningTextDeltaNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The item.
    pub item_id: String,
    /// The new text.
    pub delta: String,
    /// Which part of the item's `content` it extends (always 0: one part per item).
    pub content_index: i64,
}

/// Token counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsageBreakdown {
    /// Input and output.
    pub total_tokens: u64,
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// The cached part of the input.
    pub cached_input_tokens: u64,
    /// Generated tokens, reasoning included.
    pub output_tokens: u64,
    /// The reasoning part of the output.
    pub reasoning_output_tokens: u64,
}

/// A thread's token counts.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTokenUsage {
    /// Summed over the thread since it was loaded.
    pub total: TokenUsageBreakdown,
    /// The last model request's.
    pub last: TokenUsageBreakdown,
    /// The model's context window.
    pub model_context_window: Option<u64>,
}

/// `thread/tokenUsage/updated`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsageNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The counts.
    pub token_usage: ThreadTokenUsage,
}

/// `thread/compacted`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
}

/// `error`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorNotification {
    /// What went wrong.
    pub error: TurnError,
    /// True when the request is sent again (the turn goes on).
    pub will_retry: bool,
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
}

/// `warning`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WarningNotification {
    /// The thread it concerns, if any.
    pub thread_id: Option<String>,
    /// The text.
    pub message: String,
}

/// `serverRequest/resolved`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerRequestResolvedNotification {
    /// The thread.
    pub thread_id: String,
    /// The request that is settled.
    pub request_id: RequestId,
}
