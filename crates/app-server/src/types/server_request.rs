//! The server's requests to the client (approvals and questions) and their answers.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
