//! Threads, turns and the items a turn is made of, as requests' results and notifications
//! carry them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::types::UserInput;

/// A thread: one session of the log.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    /// The session id.
    pub id: String,
    /// The first user message, shortened.
    pub preview: String,
    /// The provider id.
    pub model_provider: String,
    /// When it was created, in Unix seconds.
    pub created_at: i64,
    /// When it last changed, in Unix seconds.
    pub updated_at: i64,
    /// The session log's path; `null` for an ephemeral thread.
    pub path: Option<String>,
    /// The working directory.
    pub cwd: String,
    /// The server's version.
    pub cli_version: String,
    /// Who started it: `appServer`.
    pub source: String,
    /// Kept without a session log.
    pub ephemeral: bool,
    /// The session tree it belongs to: its own id (subagents have logs of their own).
    pub session_id: String,
    /// Always `null`: threads are not assigned to projects.
    pub project_id: Option<String>,
    /// Whether it is loaded in this server, and running a turn.
    pub status: ThreadStatus,
    /// A resumed or forked thread's earlier turns, read back from its log, with their items
    /// (ids `log_item_N`; a turn's id is its number in the log). Empty in `thread/list` and for
    /// a new thread.
    pub turns: Vec<Turn>,
}

/// Whether a thread is loaded in this server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ThreadStatus {
    /// Only in the log.
    NotLoaded,
    /// Loaded, no turn running.
    Idle,
    /// Loaded, running a turn.
    #[serde(rename_all = "camelCase")]
    Active {
        /// What it waits for (none are reported).
        active_flags: Vec<String>,
    },
}

/// How a turn stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TurnStatus {
    /// Running.
    InProgress,
    /// The model finished.
    Completed,
    /// Stopped by `turn/interrupt` or a `cancel` decision.
    Interrupted,
    /// It could not go on (`error` says why).
    Failed,
}

/// Why a turn failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnError {
    /// For the person.
    pub message: String,
}

/// A turn.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Turn {
    /// The turn's id.
    pub id: String,
    /// Its items (empty in notifications: they come as `item/*` notifications).
    pub items: Vec<ThreadItem>,
    /// How it stands.
    pub status: TurnStatus,
    /// Why it failed.
    pub error: Option<TurnError>,
}

/// How a command or file change stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ItemStatus {
    /// Waiting for approval or running.
    InProgress,
    /// Ran and succeeded.
    Completed,
    /// Ran and failed, or was refused by the policy.
    Failed,
    /// The person declined it.
    Declined,
}

/// What a file change does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum PatchChangeKind {
    /// A new file.
    Add,
    /// A removed file.
    Delete,
    /// A changed file, moved to `move_path` when it moves (snake_case, as codex spells it).
    Update {
        /// Where the file goes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        move_path: Option<String>,
    },
}

/// One file of a file change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileUpdateChange {
    /// The file.
    pub path: String,
    /// What happens to it.
    pub kind: PatchChangeKind,
    /// The change as diff lines (`+`, `-`, ` ` and `@@` lines, as the model wrote them).
    pub diff: String,
}

/// Part of a tool's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ToolOutputContentItem {
    /// Text.
    InputText {
        /// The text.
        text: String,
    },
}

/// One thing that happened in a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ThreadItem {
    /// The client's input.
    #[serde(rename_all = "camelCase")]
    UserMessage {
        /// The item's id.
        id: String,
        /// The input.
        content: Vec<UserInput>,
    },
    /// The model's text.
    #[serde(rename_all = "camelCase")]
    AgentMessage {
        /// The item's id.
        id: String,
        /// The whole text (deltas came as `item/agentMessage/delta`).
        text: String,
    },
    /// The model's reasoning.
    #[serde(rename_all = "camelCase")]
    Reasoning {
        /// The item's id.
        id: String,
        /// Summaries (none from this server).
        summary: Vec<String>,
        /// The reasoning text.
        content: Vec<String>,
    },
    /// A shell command (`run_command`).
    #[serde(rename_all = "camelCase")]
    CommandExecution {
        /// The item's id (the model's tool call id).
        id: String,
        /// The command.
        command: String,
        /// Its working directory.
        cwd: String,
        /// How it stands.
        status: ItemStatus,
        /// Parsed actions (none from this server).
        command_actions: Vec<Value>,
        /// Its output, stdout and stderr together.
        aggregated_output: Option<String>,
        /// Its exit code.
        exit_code: Option<i32>,
        /// How long it ran, in milliseconds.
        duration_ms: Option<i64>,
    },
    /// File edits (`apply_patch`, `edit`, `write_file`).
    #[serde(rename_all = "camelCase")]
    FileChange {
        /// The item's id (the model's tool call id).
        id: String,
        /// The files.
        changes: Vec<FileUpdateChange>,
        /// How it stands.
        status: ItemStatus,
    },
    /// Any other tool (reads, searches, MCP tools, subagents).
    #[serde(rename_all = "camelCase")]
    DynamicToolCall {
        /// The item's id (the model's tool call id).
        id: String,
        /// The tool's name.
        tool: String,
        /// Its arguments.
        arguments: Value,
        /// How it stands (`inProgress`, `completed`, `failed`, `declined`).
        status: ItemStatus,
        /// Its output.
        content_items: Option<Vec<ToolOutputContentItem>>,
        /// Whether it succeeded.
        success: Option<bool>,
        /// How long it ran, in milliseconds.
        duration_ms: Option<i64>,
    },
    /// The conversation was compacted.
    #[serde(rename_all = "camelCase")]
    ContextCompaction {
        /// The item's id.
        id: String,
    },
}

impl ThreadItem {
    /// The item's id.
    pub fn id(&self) -> &str {
        match self {
            Self::UserMessage { id, .. }
            | Self::AgentMessage { id, .. }
            | Self::Reasoning { id, .. }
            | Self::CommandExecution { id, .. }
            | Self::FileChange { id, .. }
            | Self::DynamicToolCall { id, .. }
            | Self::ContextCompaction { id } => id,
        }
    }
}
