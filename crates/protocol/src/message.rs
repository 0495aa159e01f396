//! The provider-neutral message model (seed chapter 3.5).
//!
//! A `Message` has a role and a list of items, so one assistant message can hold several text
//! segments, reasoning and several tool calls, as providers produce them. Reasoning keeps the
//! provider's signature or encrypted payload so it can be sent back verbatim. Invariant: every
//! `ToolResult` answers a `ToolCall` of an earlier assistant message by `tool_call_id`; the
//! session log (`SessionTrace`) enforces it, not these types.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{MessageId, ToolCallId};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions from the harness (rare in history: most instructions live in prompt sections).
    System,
    /// The person, or text injected on their behalf.
    User,
    /// The model.
    Assistant,
    /// Tool results going back to the model.
    Tool,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Unique within the session.
    pub id: MessageId,
    /// Who wrote it.
    pub role: Role,
    /// What it says, in order.
    pub items: Vec<MessageItem>,
}

impl Message {
    /// A message with a fresh id.
    pub fn new(role: Role, items: Vec<MessageItem>) -> Self {
        Self { id: MessageId::new(), role, items }
    }

    /// A user message holding one text item.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![MessageItem::Text { text: text.into() }])
    }

    /// The tool calls among the items, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.items.iter().filter_map(|item| match item {
            MessageItem::ToolCall(call) => Some(call),
            MessageItem::Text { .. }
            | MessageItem::Reasoning(_)
            | MessageItem::ToolResult(_)
            | MessageItem::Image(_)
            | MessageItem::BlobRef(_) => None,
        })
    }

    /// The text items joined, without reasoning.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for item in &self.items {
            if let MessageItem::Text { text } = item {
                out.push_str(text);
            }
        }
        out
    }
}

/// One part of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MessageItem {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// The model's reasoning.
    Reasoning(Reasoning),
    /// The model asks for a tool to run.
    ToolCall(ToolCall),
    /// What a tool returned.
    ToolResult(ToolResult),
    /// An image (user attachment).
    Image(Image),
    /// An attachment too large for the log, stored in the blob store.
    BlobRef(BlobRef),
}

/// Reasoning as the provider produced it, with whatever it needs to have it sent back.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reasoning {
    /// The readable reasoning or its summary (may be empty when the provider hides it).
    pub text: String,
    /// Anthropic's thinking-block signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// OpenAI's `encrypted_content`, or Anthropic's redacted-thinking data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
}

/// A tool call as the model produced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The provider's id for the call; results refer to it.
    pub id: ToolCallId,
    /// The tool's name.
    pub name: String,
    /// The arguments. When the model wrote invalid JSON, the raw text as a JSON string.
    pub args: serde_json::Value,
}

/// The outcome class of a tool result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolResultStatus {
    /// The tool ran and did what was asked.
    Success,
    /// The tool failed, or was refused; the content says why.
    Error,
    /// The user or the harness cancelled it.
    Cancelled,
}

/// What a tool returned, as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// The call this answers.
    pub tool_call_id: ToolCallId,
    /// The content, in order.
    pub content: Vec<ContentItem>,
    /// Success, error or cancelled.
    pub status: ToolResultStatus,
    /// How the command ended, for tools that run one (`run_command`); front-ends read the exit
    /// code and duration here rather than from the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<CommandExit>,
}

impl ToolResult {
    /// A result holding one text item.
    pub fn text(
        tool_call_id: ToolCallId,
        status: ToolResultStatus,
        text: impl Into<String>,
    ) -> Self {
        Self {
            tool_call_id,
            content: vec![ContentItem::Text { text: text.into() }],
            status,
            exit: None,
        }
    }
}

/// How a command a tool ran ended, as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandExit {
    /// The exit code; `None` when a signal ended it, or it timed out or was cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// The signal that ended it, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Wall time from start to end, in milliseconds.
    pub duration_ms: u64,
}

/// One part of a tool result or of user input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentItem {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An inline image.
    Image(Image),
    /// Content too large for the log, stored in the blob store.
    BlobRef(BlobRef),
}

impl ContentItem {
    /// The text items of `items`, joined by newlines (images and blob references left out).
    pub fn joined_text(items: &[ContentItem]) -> String {
        let texts: Vec<&str> = items
            .iter()
            .filter_map(|item| match item {
                ContentItem::Text { text } => Some(text.as_str()),
                ContentItem::Image(_) | ContentItem::BlobRef(_) => None,
            })
            .collect();
        texts.join("\n")
    }
}

/// An image, inline as base64.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    /// The MIME type (`image/png`, …).
    pub media_type: String,
    /// The bytes, base64-encoded.
    pub data_base64: String,
}

/// A pointer into the content-addressed blob store, with enough to show without loading it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlobRef {
    /// Lowercase hex SHA-256 of the bytes.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
    /// `text/plain; charset=utf-8` for text, the image's MIME type for images.
    pub media_type: String,
    /// The first few hundred characters (text only), for display and for the model.
    #[serde(default)]
    pub preview: String,
}
