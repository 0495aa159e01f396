//! The client's requests: their params and results (`initialize`, `thread/*`, `turn/*`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::types::{
    ConfigReadParams, CwdsParams, ModelListParams, NoParams, Thread, ThreadReadParams,
    ThreadTurnsListParams, Turn,
};

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
    /// The ids of the threads loaded in this connection; answered with
    /// `ThreadLoadedListResponse`.
    #[serde(rename = "thread/loaded/list")]
    ThreadLoadedList(NoParams),
    /// The account model requests use; answered with `AccountReadResponse` (an API key's,
    /// needing no login).
    #[serde(rename = "account/read")]
    AccountRead(NoParams),
    /// The models of the server's provider (its catalog, not asked over the network); answered
    /// with `ModelListResponse`.
    #[serde(rename = "model/list")]
    ModelList(ModelListParams),
    /// The settings a thread started now runs with; answered with `ConfigReadResponse`.
    #[serde(rename = "config/read")]
    ConfigRead(ConfigReadParams),
    /// Administrator requirements; answered with `ConfigRequirementsReadResponse` (none).
    #[serde(rename = "configRequirements/read")]
    ConfigRequirementsRead(NoParams),
    /// Hooks the client could show; answered with `EmptyListResponse` (the server runs its
    /// own).
    #[serde(rename = "hooks/list")]
    HooksList(CwdsParams),
    /// Skills the client could insert; answered with `SkillsListResponse` (one empty entry per
    /// directory: the server offers its skills to the model itself).
    #[serde(rename = "skills/list")]
    SkillsList(CwdsParams),
    /// Collaboration mode presets; answered with `EmptyListResponse` (none).
    #[serde(rename = "collaborationMode/list")]
    CollaborationModeList(NoParams),
    /// Stops following a thread: a thread belongs to its connection, so it is unloaded (its
    /// agent shut down, a running turn cancelled); answered with `ThreadUnsubscribeResponse`.
    #[serde(rename = "thread/unsubscribe")]
    ThreadUnsubscribe(ThreadCompactStartParams),
    /// A thread's summary (and, loaded, its turns) without loading it; answered with
    /// `ThreadReadResponse`.
    #[serde(rename = "thread/read")]
    ThreadRead(ThreadReadParams),
    /// Plugins the client could install; answered with `PluginListResponse` (none).
    #[serde(rename = "plugin/list")]
    PluginList(CwdsParams),
    /// Experimental features the client could switch; answered with
    /// `ExperimentalFeatureListResponse` (none).
    #[serde(rename = "experimentalFeature/list")]
    ExperimentalFeatureList(NoParams),
    /// A loaded thread's turns from its log, a page at a time; answered with
    /// `ThreadTurnsListResponse`.
    #[serde(rename = "thread/turns/list")]
    ThreadTurnsList(ThreadTurnsListParams),
    /// Adds input to the running turn (the model sees it at its next step); answered with
    /// `TurnSteerResponse`, the input then shown as a `userMessage` item.
    #[serde(rename = "turn/steer")]
    TurnSteer(TurnSteerParams),
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
    "thread/loaded/list",
    "account/read",
    "model/list",
    "config/read",
    "configRequirements/read",
    "hooks/list",
    "skills/list",
    "collaborationMode/list",
    "thread/unsubscribe",
    "thread/read",
    "plugin/list",
    "experimentalFeature/list",
    "thread/turns/list",
    "turn/steer",
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
    /// Another model for this turn and the ones after it (the thread's session is resumed
    /// with it before the turn starts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Another reasoning effort (`none`, `minimal`, `low`, `medium`, `high`, `xhigh`) for this
    /// turn and the ones after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// Another working directory for this turn and the ones after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Another sandbox for this turn and the ones after it, never looser than the server's own
    /// (a looser one is tightened to it, with a `warning`). Other fields of codex's policy
    /// objects (`writableRoots`, `networkAccess`) are not taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_policy: Option<SandboxPolicy>,
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

/// `turn/steer` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnSteerParams {
    /// The thread.
    pub thread_id: String,
    /// The turn the client believes runs; refused when another (or none) does.
    pub expected_turn_id: String,
    /// What the person added.
    pub input: Vec<UserInput>,
}

/// `turn/steer` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnSteerResponse {
    /// The running turn, which takes the input.
    pub turn_id: String,
}
