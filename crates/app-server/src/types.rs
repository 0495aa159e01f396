//! The app server's wire types: params and results of the client's requests, the server's
//! notifications and requests, and the items a thread is made of. They follow codex's v2
//! app-server protocol: fields in camelCase, tagged unions by `type` with camelCase variants and
//! statuses, except `AskForApproval` and `SandboxMode`, which are kebab-case.
//!
//! Invariant: `schema/app-server.schema.json` is generated from these types (`schema()`); a unit
//! test fails when the checked-in file differs.
//!
//! One file per side of the protocol: `client` (the client's requests and their results),
//! `info` (what a client reads about the server: account, models, configuration),
//! `thread` (threads, turns, items), `notification` and `server_request` (what the server sends).

mod client;
mod info;
mod notification;
mod server_request;
mod thread;

pub use client::{
    AskForApproval, CLIENT_METHODS, ClientInfo, ClientRequest, InitializeCapabilities,
    InitializeParams, InitializeResponse, SandboxMode, SandboxPolicy, ThreadCompactStartParams,
    ThreadCompactStartResponse, ThreadForkParams, ThreadListParams, ThreadListResponse,
    ThreadResumeParams, ThreadStartParams, ThreadStartResponse, TurnInterruptParams,
    TurnInterruptResponse, TurnStartParams, TurnStartResponse, TurnSteerParams, TurnSteerResponse,
    UserInput,
};
pub use info::{
    Account, AccountReadResponse, ConfigReadParams, ConfigReadResponse,
    ConfigRequirementsReadResponse, ConfigSnapshot, CwdsParams, EmptyListResponse,
    ExperimentalFeatureListResponse, Model, ModelListParams, ModelListResponse, NoParams,
    PluginListResponse, ReasoningEffortOption, SkillsListEntry, SkillsListResponse,
    ThreadLoadedListResponse, ThreadReadParams, ThreadReadResponse, ThreadTurnsListParams,
    ThreadTurnsListResponse, ThreadUnsubscribeResponse,
};
pub use notification::{
    CompactedNotification, DeltaNotification, ErrorNotification,
    FileChangePatchUpdatedNotification, ItemCompletedNotification, ItemStartedNotification,
    ReasoningTextDeltaNotification, ServerNotification, ServerRequestResolvedNotification,
    ThreadStartedNotification, ThreadTokenUsage, TokenUsageBreakdown, TokenUsageNotification,
    TurnNotification, WarningNotification,
};
pub use server_request::{
    ApprovalDecision, ApprovalResponse, CommandExecutionRequestApprovalParams,
    FileChangeRequestApprovalParams, ServerRequest, ToolCallRequestApprovalParams,
    ToolRequestUserInputAnswer, ToolRequestUserInputOption, ToolRequestUserInputParams,
    ToolRequestUserInputQuestion, ToolRequestUserInputResponse,
};
pub use thread::{
    FileUpdateChange, ItemStatus, PatchChangeKind, Thread, ThreadItem, ThreadStatus,
    ToolOutputContentItem, Turn, TurnError, TurnStatus,
};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    #[serde(rename = "thread/loaded/list")]
    thread_loaded_list: ThreadLoadedListResponse,
    #[serde(rename = "account/read")]
    account_read: AccountReadResponse,
    #[serde(rename = "model/list")]
    model_list: ModelListResponse,
    #[serde(rename = "config/read")]
    config_read: ConfigReadResponse,
    #[serde(rename = "configRequirements/read")]
    config_requirements_read: ConfigRequirementsReadResponse,
    #[serde(rename = "hooks/list")]
    hooks_list: EmptyListResponse,
    #[serde(rename = "skills/list")]
    skills_list: SkillsListResponse,
    #[serde(rename = "collaborationMode/list")]
    collaboration_mode_list: EmptyListResponse,
    #[serde(rename = "thread/unsubscribe")]
    thread_unsubscribe: ThreadUnsubscribeResponse,
    #[serde(rename = "thread/read")]
    thread_read: ThreadReadResponse,
    #[serde(rename = "thread/turns/list")]
    thread_turns_list: ThreadTurnsListResponse,
    #[serde(rename = "turn/steer")]
    turn_steer: TurnSteerResponse,
    #[serde(rename = "plugin/list")]
    plugin_list: PluginListResponse,
    #[serde(rename = "experimentalFeature/list")]
    experimental_feature_list: ExperimentalFeatureListResponse,
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
