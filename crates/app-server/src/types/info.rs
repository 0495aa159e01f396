//! What a client reads about the server before and beside its threads: the account
//! (`account/read`), the models (`model/list`), the configuration (`config/read`,
//! `configRequirements/read`), and the server's hooks, skills and collaboration modes as lists.
//! codex's TUI reads all of them while it starts and stops at the first that fails.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::types::{AskForApproval, SandboxMode};

/// `account/read` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccountReadResponse {
    /// The account the server's model requests use: always an API key's (the provider's key
    /// lives in the server's configuration, never with the client).
    pub account: Option<Account>,
    /// Always `false`: the client never logs in to OpenAI for this server.
    pub requires_openai_auth: bool,
}

/// An account, as codex's protocol names its kinds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Account {
    /// The server's provider key.
    ApiKey,
}

/// `model/list` params.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelListParams {
    /// Where the previous page ended (the list is one page: always absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Models per page (the whole list comes in one page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Also models hidden from the picker (none are).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_hidden: Option<bool>,
}

/// `model/list` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelListResponse {
    /// The models, the configured one first.
    pub data: Vec<Model>,
    /// Always `null`: one page.
    pub next_cursor: Option<String>,
}

/// A model a thread may run with.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    /// The model's id (as `thread/start`'s and `turn/start`'s `model` take it).
    pub id: String,
    /// The same id.
    pub model: String,
    /// The name shown.
    pub display_name: String,
    /// Its context window, for the person.
    pub description: String,
    /// Always `false`.
    pub hidden: bool,
    /// Whether a thread that names no model runs with it.
    pub is_default: bool,
    /// The reasoning efforts it takes (none for a model without reasoning).
    pub supported_reasoning_efforts: Vec<ReasoningEffortOption>,
    /// The effort a thread that names none runs with.
    pub default_reasoning_effort: String,
    /// What its input may hold: `text`, `image`.
    pub input_modalities: Vec<String>,
}

/// One reasoning effort of a model.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningEffortOption {
    /// `minimal`, `low`, `medium`, `high`, `xhigh` (or `none`).
    pub reasoning_effort: String,
    /// For the person.
    pub description: String,
}

/// `config/read` params.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigReadParams {
    /// Also the layers the configuration was merged from (none are reported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_layers: Option<bool>,
    /// The directory whose project configuration applies; the server's own when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// `config/read` result: the settings a thread started now would run with.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigReadResponse {
    /// The settings, with codex's (snake_case) key names.
    pub config: ConfigSnapshot,
    /// Where each setting came from: left empty.
    pub origins: serde_json::Map<String, serde_json::Value>,
    /// The layers, when asked for: left empty (codecoder's layers are its own files).
    pub layers: Option<Vec<serde_json::Value>>,
}

/// The settings `config/read` reports, in codex's key names.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ConfigSnapshot {
    /// The model.
    pub model: Option<String>,
    /// The provider id.
    pub model_provider: Option<String>,
    /// The reasoning effort, when configured.
    pub model_reasoning_effort: Option<String>,
    /// The model's context window.
    pub model_context_window: Option<u64>,
    /// The approval policy.
    pub approval_policy: Option<AskForApproval>,
    /// The most the server lets a thread's sandbox allow.
    pub sandbox_mode: Option<SandboxMode>,
}

/// `configRequirements/read` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigRequirementsReadResponse {
    /// Always `null`: no administrator requirements (the server's own limits apply to each
    /// thread it starts).
    pub requirements: Option<serde_json::Value>,
}

/// `hooks/list`, `skills/list` and `collaborationMode/list` params: the directories asked
/// about, where the method takes them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CwdsParams {
    /// The directories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwds: Option<Vec<String>>,
}

/// `skills/list` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillsListResponse {
    /// One entry per directory asked about.
    pub data: Vec<SkillsListEntry>,
}

/// The skills of one directory. codecoder finds a thread's skills when it starts, and offers
/// them to the model itself, so none are listed for the client to insert.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillsListEntry {
    /// The directory.
    pub cwd: String,
    /// Its skills: none.
    pub skills: Vec<serde_json::Value>,
    /// Skills that failed to load: none.
    pub errors: Vec<serde_json::Value>,
}

/// `hooks/list` and `collaborationMode/list` result: empty lists (codecoder's hooks run on the
/// server from its own configuration; it has no collaboration modes).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct EmptyListResponse {
    /// Nothing.
    pub data: Vec<serde_json::Value>,
}

/// `thread/loaded/list` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadLoadedListResponse {
    /// The ids of the threads loaded in this connection.
    pub data: Vec<String>,
    /// Always `null`: one page.
    pub next_cursor: Option<String>,
}

/// Params of a method that takes none the server reads (`account/read`'s `refreshToken`,
/// `configRequirements/read`'s absent ones).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct NoParams {}

/// `thread/unsubscribe` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadUnsubscribeResponse {
    /// `unsubscribed` (the thread was unloaded: its agent shut down, a running turn
    /// cancelled) or `notLoaded`.
    pub status: String,
}

/// `plugin/list` result: no plugins (codecoder's plugins are its own, installed on the server).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginListResponse {
    /// None.
    pub marketplaces: Vec<serde_json::Value>,
    /// None.
    pub marketplace_load_errors: Vec<serde_json::Value>,
    /// None.
    pub featured_plugin_ids: Vec<String>,
}

/// `experimentalFeature/list` result: none to switch.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExperimentalFeatureListResponse {
    /// None.
    pub data: Vec<serde_json::Value>,
    /// Always `null`.
    pub next_cursor: Option<String>,
}

/// `thread/read` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadParams {
    /// The thread (session id or a unique prefix of it).
    pub thread_id: String,
    /// Also its turns, read back from its log (a loaded thread's only).
    #[serde(default)]
    pub include_turns: bool,
}

/// `thread/read` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ThreadReadResponse {
    /// The thread, without loading it.
    pub thread: crate::types::Thread,
}

/// `thread/turns/list` params.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTurnsListParams {
    /// The loaded thread.
    pub thread_id: String,
    /// Where the previous page ended (its `nextCursor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Turns per page (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// `asc` (oldest first) or `desc` (newest first, the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_direction: Option<String>,
}

/// `thread/turns/list` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTurnsListResponse {
    /// The page of turns, read back from the thread's log.
    pub data: Vec<crate::types::Turn>,
    /// The cursor of the next page; `null` on the last one.
    pub next_cursor: Option<String>,
}
