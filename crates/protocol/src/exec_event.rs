//! The JSON lines of `codecoder exec --json`: codex's `exec --json` events, so tools written
//! for `codex exec --json` (and codex's TypeScript SDK) read codecoder unchanged. Field names
//! are codex's (snake_case); MCP servers' tools are `mcp_tool_call`; items of tools codex has no
//! item for are `tool_call`.
//!
//! Invariant: one `ThreadEvent` per line; `schema/exec-event.schema.json` is generated from
//! these types.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One line of `exec --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum ThreadEvent {
    /// The session is known: its id is what `exec resume` takes.
    #[serde(rename = "thread.started")]
    ThreadStarted {
        /// The session id.
        thread_id: String,
    },
    /// A turn began.
    #[serde(rename = "turn.started")]
    TurnStarted {},
    /// The turn completed, with the tokens of the whole turn.
    #[serde(rename = "turn.completed")]
    TurnCompleted {
        /// Tokens used.
        usage: TurnUsage,
    },
    /// The turn failed.
    #[serde(rename = "turn.failed")]
    TurnFailed {
        /// Why.
        error: ThreadError,
    },
    /// An item began (commands and other tools while they run).
    #[serde(rename = "item.started")]
    ItemStarted {
        /// The item so far.
        item: ThreadItem,
    },
    /// An item changed while running.
    #[serde(rename = "item.updated")]
    ItemUpdated {
        /// The item now.
        item: ThreadItem,
    },
    /// An item ended.
    #[serde(rename = "item.completed")]
    ItemCompleted {
        /// The item as it ended.
        item: ThreadItem,
    },
    /// A fatal error of the stream.
    #[serde(rename = "error")]
    Error {
        /// What went wrong.
        message: String,
    },
}

/// Token totals of a turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnUsage {
    /// Input tokens, cached ones included.
    pub input_tokens: u64,
    /// Input tokens served from the provider's cache.
    pub cached_input_tokens: u64,
    /// Output tokens, reasoning included.
    pub output_tokens: u64,
    /// Output tokens spent on reasoning.
    pub reasoning_output_tokens: u64,
}

/// A failure's message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadError {
    /// What went wrong.
    pub message: String,
}

/// One item of a turn: `{id: "item_N", type, …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadItem {
    /// `item_0`, `item_1`, … in the order items begin.
    pub id: String,
    /// What the item is.
    #[serde(flatten)]
    pub details: ItemDetails,
}

/// The kinds of item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ItemDetails {
    /// Text of the assistant (a JSON string under `--output-schema`).
    AgentMessage {
        /// The text.
        text: String,
    },
    /// The model's reasoning (or its summary).
    Reasoning {
        /// The text.
        text: String,
    },
    /// A shell command.
    CommandExecution {
        /// The command line.
        command: String,
        /// Its output, stdout and stderr merged.
        aggregated_output: String,
        /// Its exit code, once it ended by itself.
        exit_code: Option<i32>,
        /// Where it stands.
        status: ItemStatus,
    },
    /// Files written, edited or patched (only ever completed).
    FileChange {
        /// Each file.
        changes: Vec<FileChange>,
        /// Completed or failed.
        status: ItemStatus,
    },
    /// A call of an MCP server's tool.
    McpToolCall {
        /// The server's name.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// Its arguments.
        arguments: serde_json::Value,
        /// What the server returned, once the call completed; while it runs (`item.updated`),
        /// the progress it reported so far, as one text block.
        result: Option<McpToolCallResult>,
        /// Why it failed: the server's error result, a transport failure or a refusal.
        error: Option<ThreadError>,
        /// In progress, completed or failed (codex has no `declined` for MCP calls).
        status: ItemStatus,
    },
    /// The plan (`update_plan`).
    TodoList {
        /// Its steps.
        items: Vec<TodoItem>,
    },
    /// A tool codex has no item for.
    ToolCall {
        /// The tool.
        name: String,
        /// Its arguments.
        arguments: serde_json::Value,
        /// Its result, as text, once it ended; while it runs (`item.updated`), the output it
        /// streamed so far (an MCP server's progress).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<String>,
        /// Where it stands.
        status: ItemStatus,
    },
    /// The conversation was compacted (codex's `context_compaction` item): a summary, or a
    /// trim without one, replaced the history the model sees.
    ContextCompaction {
        /// `auto` or `manual`.
        trigger: String,
        /// Whether the model wrote a summary.
        summarized: bool,
        /// What happened, for the person.
        message: String,
    },
    /// A non-fatal problem (a retried step, a warning, a declined request).
    Error {
        /// What happened.
        message: String,
    },
}

/// An MCP tool call's result, as codex shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpToolCallResult {
    /// The MCP content blocks (`{"type": "text", "text": …}`, `{"type": "image", "data": …,
    /// "mimeType": …}`, …).
    pub content: Vec<serde_json::Value>,
    /// The call's `structuredContent`, when the server sent one.
    pub structured_content: Option<serde_json::Value>,
}

/// Where an item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    /// Running.
    InProgress,
    /// Ended well.
    Completed,
    /// Ended badly.
    Failed,
    /// Refused before it ran.
    Declined,
}

/// One file of a `file_change`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileChange {
    /// The path as the tool was given it.
    pub path: String,
    /// What happened to it.
    pub kind: FileChangeKind,
}

/// What happened to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileChangeKind {
    /// Created.
    Add,
    /// Removed.
    Delete,
    /// Changed.
    Update,
}

/// One step of a `todo_list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TodoItem {
    /// The step.
    pub text: String,
    /// Whether it is done.
    pub completed: bool,
}
