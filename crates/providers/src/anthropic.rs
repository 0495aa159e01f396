//! Anthropic Messages: `POST {base}/v1/messages` with `"stream": true`.
//!
//! History becomes alternating user/assistant messages of content blocks: tool results travel in
//! user messages, thinking blocks go back with their signatures (redacted thinking with its
//! data), and consecutive messages of one side are merged. Prompt caching: `cache_control`
//! breakpoints on the system prompt, on the last tool, on the last block before the newest user
//! input, and on the last block of the request (so the next step of a turn hits the cache).
//! Messages has no structured-output option: `output_schema` is not sent (exec validates the
//! final message itself).

use std::collections::HashMap;

use codecoder_kernel::{ModelRequest, ResponseEvent};
use codecoder_protocol::{
    ContentItem, Image, MessageItem, ReasoningEffort, ReasoningSettings, Role, StopReason,
    ToolCallId, ToolResultStatus, Usage,
};
use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Error;
use crate::sse::SseEvent;
use crate::wire::{StreamParser, blob_text, parse_data, parse_typed, str_field, u64_field};

/// The API version header value.
pub(crate) const API_VERSION: &str = "2023-06-01";
/// `max_tokens` is required; this is used when the request sets none.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The request body, borrowing from the request: serialized straight to bytes, with no
/// intermediate JSON value tree (tool schemas and texts are not copied).
#[derive(Debug, Serialize)]
pub(crate) struct RequestBody<'a> {
    model: &'a str,
    max_tokens: u32,
    system: [BodyBlock<'a>; 1],
    messages: Vec<AnthropicMessage<'a>>,
    pub(crate) stream: bool,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<ToolChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig>,
}

/// `thinking`: a budget, or adaptive (the model decides, guided by `output_config.effort`).
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Thinking {
    Enabled { budget_tokens: u32 },
    Adaptive,
}

/// `output_config` of adaptive thinking.
#[derive(Debug, Serialize)]
struct OutputConfig {
    effort: &'static str,
}

#[derive(Debug, Serialize)]
struct AnthropicMessage<'a> {
    role: &'static str,
    content: Vec<BodyBlock<'a>>,
}

/// A content block, and whether it carries a cache breakpoint.
#[derive(Debug, Serialize)]
struct BodyBlock<'a> {
    #[serde(flatten)]
    kind: BlockKind<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockKind<'a> {
    Text {
        text: Cow<'a, str>,
    },
    Image {
        source: ImageSource<'a>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: Vec<BodyBlock<'a>>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

#[derive(Debug, Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

#[derive(Debug, Clone, Copy, Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

#[derive(Debug, Serialize)]
struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Debug, Serialize)]
struct ToolChoice {
    #[serde(rename = "type")]
    kind: &'static str,
}

/// The empty object sent as the input of a call whose arguments were not an object.
static EMPTY_INPUT: std::sync::LazyLock<Value> =
    std::sync::LazyLock::new(|| Value::Object(serde_json::Map::new()));

fn block(kind: BlockKind<'_>) -> BodyBlock<'_> {
    BodyBlock { kind, cache_control: None }
}

fn image_block(image: &Image) -> BodyBlock<'_> {
    block(BlockKind::Image {
        source: ImageSource {
            kind: "base64",
            media_type: &image.media_type,
            data: &image.data_base64,
        },
    })
}

fn cache_last_block(message: &mut AnthropicMessage<'_>) {
    if let Some(last) = message.content.last_mut() {
        last.cache_control = Some(EPHEMERAL);
    }
}

/// The smallest thinking budget the API accepts.
pub(crate) const MIN_THINKING_BUDGET: u32 = 1024;

/// The thinking budget an effort maps to on models that take a budget.
fn thinking_budget(effort: ReasoningEffort) -> Option<u32> {
    match effort {
        ReasoningEffort::None => None,
        ReasoningEffort::Minimal => Some(MIN_THINKING_BUDGET),
        ReasoningEffort::Low => Some(4_096),
        ReasoningEffort::Medium => Some(10_000),
        ReasoningEffort::High => Some(24_000),
        ReasoningEffort::XHigh => Some(32_000),
    }
}

/// `thinking` (and `output_config` for adaptive thinking) for `reasoning`; `max_tokens` is
/// raised above a budget that does not fit under it (the API requires
/// `budget_tokens < max_tokens`).
fn apply_thinking(body: &mut RequestBody<'_>, model: &str, reasoning: &ReasoningSettings) {
    if crate::catalog::adaptive_thinking(model) && reasoning.budget_tokens.is_none() {
        let Some(effort) = reasoning.effort.filter(|e| *e != ReasoningEffort::None) else {
            return;
        };
        let effort = match effort {
            ReasoningEffort::None | ReasoningEffort::Minimal | ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
            ReasoningEffort::XHigh => "max",
        };
        body.thinking = Some(Thinking::Adaptive);
        body.output_config = Some(OutputConfig { effort });
        return;
    }
    let budget = match (reasoning.budget_tokens, reasoning.effort) {
        (Some(budget), _) => budget.max(MIN_THINKING_BUDGET),
        (None, Some(effort)) => match thinking_budget(effort) {
            Some(budget) => budget,
            None => return,
        },
        (None, None) => return,
    };
    if budget >= body.max_tokens {
        body.max_tokens = budget.saturating_add(DEFAULT_MAX_TOKENS);
    }
    body.thinking = Some(Thinking::Enabled { budget_tokens: budget });
}

/// The request body.
pub(crate) fn request_body(request: &ModelRequest) -> RequestBody<'_> {
    let mut messages: Vec<AnthropicMessage<'_>> = Vec::new();
    // Index in `messages` of the message holding the newest genuine user input.
    let mut newest_user: Option<usize> = None;
    for message in &request.history {
        let role = match message.role {
            Role::Assistant => "assistant",
            Role::User | Role::Tool | Role::System => "user",
        };
        let mut blocks = Vec::new();
        for item in &message.items {
            match item {
                MessageItem::Text { text } if !text.is_empty() => {
                    blocks.push(block(BlockKind::Text { text: Cow::Borrowed(text) }));
                }
                MessageItem::Text { .. } => {}
                MessageItem::Image(image) => blocks.push(image_block(image)),
                MessageItem::BlobRef(blob) => {
                    blocks.push(block(BlockKind::Text { text: Cow::Owned(blob_text(blob)) }));
                }
                MessageItem::Reasoning(reasoning) => {
                    match (&reasoning.signature, &reasoning.encrypted_content) {
                        (Some(signature), _) => blocks.push(block(BlockKind::Thinking {
                            thinking: &reasoning.text,
                            signature,
                        })),
                        (None, Some(data)) => {
                            blocks.push(block(BlockKind::RedactedThinking { data }));
                        }
                        // Unsigned reasoning (from another provider) cannot be sent back.
                        (None, None) => {}
                    }
                }
                MessageItem::ToolCall(call) => {
                    let input = if call.args.is_object() { &call.args } else { &*EMPTY_INPUT };
                    blocks.push(block(BlockKind::ToolUse {
                        id: call.id.as_str(),
                        name: &call.name,
                        input,
                    }));
                }
                MessageItem::ToolResult(result) => {
                    let content = result
                        .content
                        .iter()
                        .filter_map(|c| match c {
                            ContentItem::Text { text } if text.is_empty() => None,
                            ContentItem::Text { text } => {
                                Some(block(BlockKind::Text { text: Cow::Borrowed(text) }))
                            }
                            ContentItem::Image(image) => Some(image_block(image)),
                            ContentItem::BlobRef(blob) => {
                                Some(block(BlockKind::Text { text: Cow::Owned(blob_text(blob)) }))
                            }
                        })
                        .collect();
                    blocks.push(block(BlockKind::ToolResult {
                        tool_use_id: result.tool_call_id.as_str(),
                        content,
                        is_error: result.status != ToolResultStatus::Success,
                    }));
                }
            }
        }
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => messages.push(AnthropicMessage { role, content: blocks }),
        }
        if message.role == Role::User {
            newest_user = Some(messages.len() - 1);
        }
    }
    if let Some(index) = newest_user.filter(|&i| i > 0) {
        cache_last_block(&mut messages[index - 1]);
    }
    if let Some(last) = messages.last_mut() {
        cache_last_block(last);
    }
    let mut tools: Vec<Tool<'_>> = request
        .tools
        .iter()
        .map(|tool| Tool {
            name: &tool.name,
            description: &tool.description,
            input_schema: &tool.schema,
            cache_control: None,
        })
        .collect();
    if let Some(last) = tools.last_mut() {
        last.cache_control = Some(EPHEMERAL);
    }
    let has_tools = !tools.is_empty();
    let mut body = RequestBody {
        model: &request.model,
        max_tokens: request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        system: [BodyBlock {
            kind: BlockKind::Text { text: Cow::Borrowed(&request.instructions) },
            cache_control: Some(EPHEMERAL),
        }],
        messages,
        stream: true,
        tools,
        tool_choice: has_tools.then_some(ToolChoice { kind: "auto" }),
        thinking: None,
        output_config: None,
    };
    apply_thinking(&mut body, &request.model, &request.reasoning);
    body
}

/// The fields of an event the delta hot path needs, borrowed from the event's text.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    delta: Option<DeltaHead<'a>>,
}

#[derive(Deserialize, Default)]
struct DeltaHead<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<Cow<'a, str>>,
}

#[derive(Debug)]
enum Block {
    Text,
    ToolUse(ToolCallId),
    Thinking { signature: Option<String> },
    Redacted(Option<String>),
    Other,
}

/// Stream state.
#[derive(Debug, Default)]
pub(crate) struct Parser {
    blocks: HashMap<u64, Block>,
    usage: Usage,
    stop_reason: Option<StopReason>,
}

impl Parser {
    pub(crate) fn new() -> Self {
        Self::default()
    }
}

impl StreamParser for Parser {
    fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut dyn FnMut(ResponseEvent),
    ) -> Result<bool, Error> {
        // The hot path (content_block_delta) reads a typed, borrowing view; other events parse
        // into a Value.
        let head: Head<'_> = parse_typed(event)?;
        let kind = event.event.as_deref().or(head.kind.as_deref()).unwrap_or("");
        let index = head.index.unwrap_or(0);
        if kind == "content_block_delta" {
            let delta = head.delta.unwrap_or_default();
            match (delta.kind.as_deref().unwrap_or(""), self.blocks.get_mut(&index)) {
                ("text_delta", _) => {
                    let text = delta.text.unwrap_or_default();
                    if !text.is_empty() {
                        out(ResponseEvent::TextDelta(text.into_owned()));
                    }
                }
                ("input_json_delta", Some(Block::ToolUse(id))) => {
                    let partial = delta.partial_json.unwrap_or_default();
                    if !partial.is_empty() {
                        out(ResponseEvent::ToolCallArgsDelta {
                            id: id.clone(),
                            delta: partial.into_owned(),
                        });
                    }
                }
                ("thinking_delta", _) => {
                    let text = delta.thinking.unwrap_or_default();
                    if !text.is_empty() {
                        out(ResponseEvent::ReasoningDelta(text.into_owned()));
                    }
                }
                ("signature_delta", Some(Block::Thinking { signature })) => {
                    signature
                        .get_or_insert_with(String::new)
                        .push_str(&delta.signature.unwrap_or_default());
                }
                _ => {}
            }
            return Ok(false);
        }
        let data = parse_data(event)?;
        match kind {
            "message_start" => {
                let usage = &data["message"]["usage"];
                let cache_read = u64_field(usage, "cache_read_input_tokens");
                self.usage = Usage {
                    input_tokens: u64_field(usage, "input_tokens")
                        + cache_read
                        + u64_field(usage, "cache_creation_input_tokens"),
                    cached_input_tokens: cache_read,
                    output_tokens: u64_field(usage, "output_tokens"),
                    reasoning_output_tokens: 0,
                };
            }
            "content_block_start" => {
                let block = &data["content_block"];
                let state = match str_field(block, "type") {
                    "text" => {
                        let text = str_field(block, "text");
                        if !text.is_empty() {
                            out(ResponseEvent::TextDelta(text.to_owned()));
                        }
                        Block::Text
                    }
                    "tool_use" => {
                        let id = ToolCallId::new(str_field(block, "id"));
                        out(ResponseEvent::ToolCallStart {
                            id: id.clone(),
                            name: str_field(block, "name").to_owned(),
                        });
                        Block::ToolUse(id)
                    }
                    "thinking" => {
                        let text = str_field(block, "thinking");
                        if !text.is_empty() {
                            out(ResponseEvent::ReasoningDelta(text.to_owned()));
                        }
                        Block::Thinking {
                            signature: block
                                .get("signature")
                                .and_then(Value::as_str)
                                .filter(|s| !s.is_empty())
                                .map(str::to_owned),
                        }
                    }
                    "redacted_thinking" => Block::Redacted(
                        block.get("data").and_then(Value::as_str).map(str::to_owned),
                    ),
                    _ => Block::Other,
                };
                self.blocks.insert(index, state);
            }
            "content_block_stop" => match self.blocks.remove(&index) {
                Some(Block::ToolUse(id)) => out(ResponseEvent::ToolCallDone { id }),
                Some(Block::Thinking { signature }) => {
                    out(ResponseEvent::ReasoningDone { signature, encrypted_content: None })
                }
                Some(Block::Redacted(data)) => {
                    out(ResponseEvent::ReasoningDone { signature: None, encrypted_content: data })
                }
                Some(Block::Text | Block::Other) | None => {}
            },
            "message_delta" => {
                if let Some(reason) = data["delta"].get("stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(match reason {
                        "end_turn" | "stop_sequence" => StopReason::EndTurn,
                        "tool_use" => StopReason::ToolUse,
                        "max_tokens" => StopReason::MaxTokens,
                        _ => StopReason::Other,
                    });
                }
                if let Some(output) =
                    data.get("usage").and_then(|u| u.get("output_tokens")).and_then(Value::as_u64)
                {
                    self.usage.output_tokens = output;
                }
            }
            "message_stop" => {
                out(ResponseEvent::Usage(self.usage));
                out(ResponseEvent::Completed {
                    stop_reason: self.stop_reason.unwrap_or(StopReason::EndTurn),
                });
                return Ok(true);
            }
            "error" => {
                let error = &data["error"];
                return Err(Error::Stream {
                    error_type: error.get("type").and_then(Value::as_str).map(str::to_owned),
                    message: str_field(error, "message").to_owned(),
                });
            }
            // `ping` and anything newer.
            _ => {}
        }
        Ok(false)
    }

    fn on_eof(&mut self, _out: &mut dyn FnMut(ResponseEvent)) -> Result<(), Error> {
        Err(Error::Connection { message: "the stream ended before message_stop".to_owned() })
    }
}
