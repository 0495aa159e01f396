//! The app server's wire types: params and results of the client's requests, the server's
//! notifications and requests, and the items a thread is made of. They follow codex's v2
//! app-server protocol: fields in camelCase, tagged unions by `type` with camelCase variants and
//! statuses, except `AskForApproval` and `SandboxMode`, which are kebab-case.
//!
//! Invariant: `schema/app-server.schema.json` is generated from these types (`schema()`); a unit
//! test fails when the checked-in file differs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON-RPC request id: a string or an integer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Integer(i64),
    /// A string id.
    String(String),
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Integer(n) => write!(f, "{n}"),
            Self::String(s) => f.write_str(s),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Client → server requests.

/// Every request a client may send, as `{id, method, params}`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "method", content = "params")]
pub enum ClientRequest {
    /// The handshake; answered with `InitializeResponse`. Must come first, and only once.
    #[serde(rename = "initialize")]
    Initialize(InitializeParams),
    /// Starts a new thread (a new session); answered with `ThreadStartResponse`, then
    /// `thread/started`.
    #[serde(rename = "thread/start")]
    ThreadStart(ThreadStartParams),
    /// Loads an earlier thread to continue it; answered with `ThreadStartResponse`.
    #[serde(rename = "thread/resume")]
    ThreadResume(ThreadResumeParams),
    /// Copies a thread (the original is untouched) and continues the copy; answered with
    /// `ThreadStartResponse`, then `thread/started`.
    #[serde(rename = "thread/fork")]
    ThreadFork(ThreadForkParams),
    /// Stored threads, newest first, a page at a time; answered with `ThreadListResponse`.
    #[serde(rename = "thread/list")]
    ThreadList(ThreadListParams),
    /// Starts a turn with the client's input; answered with `TurnStartResponse`, then
    /// `turn/started`, items, and `turn/completed`.
    #[serde(rename = "turn/start")]
    TurnStart(TurnStartParams),
    /// Stops the running turn; answered with `{}`, then `turn/completed` (`interrupted`).
    #[serde(rename = "turn/interrupt")]
    TurnInterrupt(TurnInterruptParams),
    /// Compacts the thread's conversation now, as a turn of its own; answered with `{}`, then
    /// `turn/started`, a `contextCompaction` item, `thread/compacted` and `turn/completed`.
    #[serde(rename = "thread/compact/start")]
    ThreadCompactStart(ThreadCompactStartParams),
}

/// The methods of `ClientRequest`.
pub const CLIENT_METHODS: &[&str] = &[
    "initialize",
    "thread/start",
    "thread/resume",
    "thread/fork",
    "thread/list",
    "turn/start",
    "turn/interrupt",
    "thread/compact/start",
];

/// Who the client is.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientInfo {
    /// The client's name.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The client's version.
    pub version: String,
}

/// What the client can do.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeCapabilities {
    /// Opts into codex's experimental methods; of those, this server sends
    /// `item/tool/requestUserInput` (the model's questions). Without it questions are not asked.
    #[serde(default)]
    pub experimental_api: bool,
    /// Notification methods the client does not want to receive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opt_out_notification_methods: Option<Vec<String>>,
}

/// `initialize` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// Who the client is.
    pub client_info: ClientInfo,
    /// What the client can do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<InitializeCapabilities>,
}

/// `initialize` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    /// `codecoder/VERSION`.
    pub user_agent: String,
    /// The server's home directory (`$CODECODER_HOME`; codex names it after its own).
    pub codex_home: String,
    /// `unix` or `windows`.
    pub platform_family: String,
    /// The operating system (`linux`, `macos`, …).
    pub platform_os: String,
}

/// When the person is asked before a call runs (kebab-case, as codex spells it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AskForApproval {
    /// Only known-safe read-only commands run without asking.
    Untrusted,
    /// Codex's deprecated mode; runs as `on-request`.
    OnFailure,
    /// Ask for what is destructive, leaves the workspace or reaches the network.
    OnRequest,
    /// Never ask: what needs a person is refused.
    Never,
}

/// What commands may touch (kebab-case, as codex spells it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Read anywhere, write nowhere.
    ReadOnly,
    /// Write in the workspace, /tmp and the added directories.
    WorkspaceWrite,
    /// No sandbox.
    DangerFullAccess,
}

/// The sandbox a thread runs under, as a tagged object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum SandboxPolicy {
    /// Read anywhere, write nowhere.
    ReadOnly,
    /// Write in the workspace, /tmp and the added directories.
    WorkspaceWrite,
    /// No sandbox.
    DangerFullAccess,
}

/// `thread/start` params.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartParams {
    /// The model, over config.toml.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider id, over config.toml.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_provider: Option<String>,
    /// The working directory; the server's own when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The approval policy, over config.toml.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<AskForApproval>,
    /// The sandbox mode, over config.toml.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
    /// Keep no session log (the thread cannot be resumed or listed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral: Option<bool>,
}

/// `thread/resume` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadResumeParams {
    /// The thread (session id, a unique prefix of it, or its log's path).
    pub thread_id: String,
    /// The model, over the one config.toml names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_provider: Option<String>,
    /// The working directory; the thread's own when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The approval policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<AskForApproval>,
    /// The sandbox mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
}

/// `thread/fork` params: like `thread/resume`'s; the new thread gets an id of its own.
pub type ThreadForkParams = ThreadResumeParams;

/// `thread/start`, `thread/resume` and `thread/fork` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartResponse {
    /// The thread.
    pub thread: Thread,
    /// The model it runs with.
    pub model: String,
    /// The provider id.
    pub model_provider: String,
    /// The working directory.
    pub cwd: String,
    /// The approval policy in force.
    pub approval_policy: AskForApproval,
    /// Who answers approval requests: always `user` (the client).
    pub approvals_reviewer: String,
    /// The sandbox in force.
    pub sandbox: SandboxPolicy,
}

/// `thread/list` params.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadListParams {
    /// Where the previous page ended (its `nextCursor`); absent for the first page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Threads per page (default 25, at most 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Only threads run in this directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Only threads of these providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_providers: Option<Vec<String>>,
}

/// `thread/list` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadListResponse {
    /// The page, newest first.
    pub data: Vec<Thread>,
    /// The cursor of the next page; `null` on the last one.
    pub next_cursor: Option<String>,
}

/// One input item of a turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum UserInput {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image as a `data:` URL (`data:image/png;base64,…`).
    Image {
        /// The URL.
        url: String,
    },
    /// An image file on the server's machine.
    LocalImage {
        /// Its path.
        path: String,
    },
}

/// `turn/start` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnStartParams {
    /// The thread.
    pub thread_id: String,
    /// What the person typed or attached.
    pub input: Vec<UserInput>,
    /// A new approval policy for this turn and the ones after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<AskForApproval>,
}

/// `turn/start` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnStartResponse {
    /// The turn, in progress.
    pub turn: Turn,
}

/// `turn/interrupt` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnInterruptParams {
    /// The thread.
    pub thread_id: String,
    /// The running turn.
    pub turn_id: String,
}

/// `thread/compact/start` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadCompactStartParams {
    /// The thread.
    pub thread_id: String,
}

/// `thread/compact/start` result: empty.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ThreadCompactStartResponse {}

/// `turn/interrupt` result: empty.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct TurnInterruptResponse {}

// ---------------------------------------------------------------------------------------------
// Threads, turns and items.

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum PatchChangeKind {
    /// A new file.
    Add,
    /// A removed file.
    Delete,
    /// A changed file.
    Update,
}

/// One file of a file change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileUpdateChange {
    /// The file.
    pub path: String,
    /// What happens to it.
    pub kind: PatchChangeKind,
    /// The change as the model wrote it (a patch, or the replaced and new text).
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

// ---------------------------------------------------------------------------------------------
// Server → client notifications.

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

// ---------------------------------------------------------------------------------------------
// Server → client requests.

/// Every request the server sends, as `{id, method, params}`; the approvals are answered with
/// `ApprovalResponse`, a question with `ToolRequestUserInputResponse`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "method", content = "params")]
pub enum ServerRequest {
    /// May this command run?
    #[serde(rename = "item/commandExecution/requestApproval")]
    CommandExecutionRequestApproval(CommandExecutionRequestApprovalParams),
    /// May these files change?
    #[serde(rename = "item/fileChange/requestApproval")]
    FileChangeRequestApproval(FileChangeRequestApprovalParams),
    /// May this tool run? (codecoder's own, for tools that are neither commands nor edits; a
    /// client that does not know it answers with an error, which declines.)
    #[serde(rename = "item/toolCall/requestApproval")]
    ToolCallRequestApproval(ToolCallRequestApprovalParams),
    /// The model asks the person (codex's experimental request, sent only to a client that set
    /// `capabilities.experimentalApi`).
    #[serde(rename = "item/tool/requestUserInput")]
    ToolRequestUserInput(ToolRequestUserInputParams),
}

/// `item/tool/requestUserInput` params: questions for the person, answered by
/// `ToolRequestUserInputResponse`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestUserInputParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The item of the tool call that asks.
    pub item_id: String,
    /// The questions (this server asks one at a time).
    pub questions: Vec<ToolRequestUserInputQuestion>,
    /// The tool waits for the answer (always, here).
    pub is_blocking: bool,
    /// Deprecated in codex (`isBlocking` replaces it); never sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_resolution_ms: Option<u64>,
}

/// One question of `item/tool/requestUserInput`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestUserInputQuestion {
    /// The key of its answer in the response.
    pub id: String,
    /// A short label for the question.
    pub header: String,
    /// The question.
    pub question: String,
    /// The person may answer in their own words besides the options.
    #[serde(default)]
    pub is_other: bool,
    /// The answer should not be shown (never, here).
    #[serde(default)]
    pub is_secret: bool,
    /// Suggested answers; `null` for a free-text question.
    #[serde(default)]
    pub options: Option<Vec<ToolRequestUserInputOption>>,
}

/// A suggested answer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestUserInputOption {
    /// The answer.
    pub label: String,
    /// More about it (empty when the model gave none).
    pub description: String,
}

/// The answer to `item/tool/requestUserInput`: each question's answers by its id.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestUserInputResponse {
    /// Answers by question id.
    pub answers: std::collections::BTreeMap<String, ToolRequestUserInputAnswer>,
}

/// The answers to one question.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestUserInputAnswer {
    /// The chosen options or the person's own words.
    pub answers: Vec<String>,
}

/// `item/commandExecution/requestApproval` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecutionRequestApprovalParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The `commandExecution` item.
    pub item_id: String,
    /// When the item started, in Unix milliseconds.
    pub started_at_ms: i64,
    /// Why the person is asked (the rule, or the sandbox denial a retry would pass).
    pub reason: Option<String>,
    /// The command.
    pub command: Option<String>,
    /// Its working directory.
    pub cwd: Option<String>,
}

/// `item/fileChange/requestApproval` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileChangeRequestApprovalParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The `fileChange` item.
    pub item_id: String,
    /// When the item started, in Unix milliseconds.
    pub started_at_ms: i64,
    /// Why the person is asked.
    pub reason: Option<String>,
}

/// `item/toolCall/requestApproval` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallRequestApprovalParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The `dynamicToolCall` item.
    pub item_id: String,
    /// When the item started, in Unix milliseconds.
    pub started_at_ms: i64,
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub arguments: Value,
    /// Why the person is asked.
    pub reason: Option<String>,
}

/// The client's answer to an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ApprovalDecision {
    /// Run it.
    Accept,
    /// Run it and the like of it for the rest of the thread.
    AcceptForSession,
    /// Do not run it; the turn goes on.
    Decline,
    /// Do not run it, and interrupt the turn.
    Cancel,
}

/// The result of every approval request.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalResponse {
    /// The decision.
    pub decision: ApprovalDecision,
}

// ---------------------------------------------------------------------------------------------
// The whole protocol, for the schema.

/// The app-server protocol: what each side sends. Only a schema root; never on the wire.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // Only its schema is used.
pub(crate) struct AppServerProtocol {
    client_request: ClientRequest,
    client_notification: ClientNotification,
    server_notification: ServerNotification,
    server_request: ServerRequest,
    results: Results,
}

/// Notifications a client sends.
#[derive(JsonSchema)]
#[serde(tag = "method")]
#[allow(dead_code)] // Only its schema is used.
enum ClientNotification {
    /// The client has read `initialize`'s result.
    #[serde(rename = "initialized")]
    Initialized,
}

/// The result of each request, by method.
#[derive(JsonSchema)]
#[allow(dead_code)] // Only its schema is used.
struct Results {
    #[serde(rename = "initialize")]
    initialize: InitializeResponse,
    #[serde(rename = "thread/start")]
    thread_start: ThreadStartResponse,
    #[serde(rename = "thread/resume")]
    thread_resume: ThreadStartResponse,
    #[serde(rename = "thread/fork")]
    thread_fork: ThreadStartResponse,
    #[serde(rename = "thread/list")]
    thread_list: ThreadListResponse,
    #[serde(rename = "turn/start")]
    turn_start: TurnStartResponse,
    #[serde(rename = "turn/interrupt")]
    turn_interrupt: TurnInterruptResponse,
    #[serde(rename = "thread/compact/start")]
    thread_compact_start: ThreadCompactStartResponse,
    #[serde(rename = "item/commandExecution/requestApproval")]
    command_execution_request_approval: ApprovalResponse,
    #[serde(rename = "item/fileChange/requestApproval")]
    file_change_request_approval: ApprovalResponse,
    #[serde(rename = "item/toolCall/requestApproval")]
    tool_call_request_approval: ApprovalResponse,
    #[serde(rename = "item/tool/requestUserInput")]
    tool_request_user_input: ToolRequestUserInputResponse,
}

/// Now, in Unix milliseconds.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The protocol's JSON Schema (`schema/app-server.schema.json`).
pub fn schema() -> schemars::Schema {
    schemars::schema_for!(AppServerProtocol)
}
