//! OpenAI-compatible Chat Completions: `POST {base}/chat/completions` with `"stream": true`.
//!
//! Spoken by OpenAI, DeepSeek, OpenRouter, Ollama, LM Studio, vLLM and llama.cpp. Tool calls
//! arrive as fragments keyed by `index` (several may interleave); the first fragment of an index
//! carries its id and name. Reasoning arrives as `reasoning_content` or `reasoning`. Usage comes
//! in a last chunk with no choices, or on the finish chunk. `data: [DONE]` ends the stream; a
//! stream that ends after a `finish_reason` without `[DONE]` is accepted (some servers omit it).

use codecoder_kernel::{ModelRequest, ResponseEvent};
use codecoder_protocol::{ContentItem, MessageItem, Role, StopReason, ToolCallId, Usage};
use std::borrow::Cow;
use std::mem::take;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Error;
use crate::sse::SseEvent;
use crate::wire::{
    StreamParser, args_text, blob_text, content_text, data_url, parse_typed, str_field, u64_field,
};

/// The request body, borrowing from the request: serialized straight to bytes, with no
/// intermediate JSON value tree (tool schemas and texts are not copied).
#[derive(Debug, Serialize)]
pub(crate) struct RequestBody<'a> {
    model: &'a str,
    messages: Vec<ChatMessage<'a>>,
    pub(crate) stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
}

#[derive(Debug, Serialize)]
pub(crate) struct StreamOptions {
    include_usage: bool,
}

/// One message, tagged by its role.
#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum ChatMessage<'a> {
    System {
        content: UserContent<'a>,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        content: Option<Cow<'a, str>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<Cow<'a, str>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: Cow<'a, str>,
    },
}

/// A plain string (understood by every server), or parts when an image needs them.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Part<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Debug, Serialize)]
struct ToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionCall<'a>,
}

#[derive(Debug, Serialize)]
struct FunctionCall<'a> {
    name: &'a str,
    arguments: Cow<'a, str>,
}

#[derive(Debug, Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Debug, Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Debug, Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: JsonSchema<'a>,
}

#[derive(Debug, Serialize)]
struct JsonSchema<'a> {
    name: &'static str,
    schema: &'a Value,
    strict: bool,
}

/// Appends `more` to `text`, borrowing while there is only one piece.
fn append<'a>(text: &mut Option<Cow<'a, str>>, more: &'a str) {
    match text {
        None => *text = Some(Cow::Borrowed(more)),
        Some(text) => text.to_mut().push_str(more),
    }
}

/// The request body.
pub(crate) fn request_body(
    request: &ModelRequest,
    send_reasoning_content: bool,
) -> RequestBody<'_> {
    let mut messages = vec![ChatMessage::System {
        content: UserContent::Text(Cow::Borrowed(&request.instructions)),
    }];
    // A tool result's images go to the model as one user message after the whole run of tool
    // messages: the API wants every tool message right after the assistant message that made
    // the calls, with nothing between them.
    let mut images: Vec<Part<'_>> = Vec::new();
    for message in &request.history {
        if message.role != Role::Tool && !images.is_empty() {
            messages.push(ChatMessage::User { content: UserContent::Parts(take(&mut images)) });
        }
        match message.role {
            Role::User | Role::System => {
                let mut parts = Vec::new();
                let mut text_only = true;
                for item in &message.items {
                    match item {
                        MessageItem::Text { text } => {
                            parts.push(Part::Text { text: Cow::Borrowed(text) });
                        }
                        MessageItem::BlobRef(blob) => {
                            parts.push(Part::Text { text: Cow::Owned(blob_text(blob)) });
                        }
                        MessageItem::Image(image) => {
                            text_only = false;
                            parts.push(Part::ImageUrl {
                                image_url: ImageUrl { url: data_url(image) },
                            });
                        }
                        MessageItem::Reasoning(_)
                        | MessageItem::ToolCall(_)
                        | MessageItem::ToolResult(_) => {}
                    }
                }
                // Plain strings are understood by every server; parts only when needed.
                let content = if text_only {
                    let mut joined: Option<Cow<'_, str>> = None;
                    for part in parts {
                        if let Part::Text { text } = part {
                            match &mut joined {
                                None => joined = Some(text),
                                Some(joined) => {
                                    let joined = joined.to_mut();
                                    joined.push('\n');
                                    joined.push_str(&text);
                                }
                            }
                        }
                    }
                    UserContent::Text(joined.unwrap_or_default())
                } else {
                    UserContent::Parts(parts)
                };
                messages.push(if message.role == Role::User {
                    ChatMessage::User { content }
                } else {
                    ChatMessage::System { content }
                });
            }
            Role::Assistant => {
                let mut text = None;
                let mut reasoning = None;
                let mut tool_calls = Vec::new();
                for item in &message.items {
                    match item {
                        MessageItem::Text { text: t } => append(&mut text, t),
                        MessageItem::Reasoning(r) => append(&mut reasoning, &r.text),
                        MessageItem::ToolCall(call) => tool_calls.push(ToolCall {
                            id: call.id.as_str(),
                            kind: "function",
                            function: FunctionCall {
                                name: &call.name,
                                arguments: args_text(&call.args),
                            },
                        }),
                        MessageItem::Image(_)
                        | MessageItem::BlobRef(_)
                        | MessageItem::ToolResult(_) => {}
                    }
                }
                // An empty string rather than null: servers whose chat templates read the
                // field (llama-cpp-python) refuse a null content beside tool calls.
                messages.push(ChatMessage::Assistant {
                    content: Some(text.unwrap_or_default()),
                    tool_calls,
                    reasoning_content: reasoning
                        .filter(|r| send_reasoning_content && !r.is_empty()),
                });
            }
            Role::Tool => {
                for item in &message.items {
                    if let MessageItem::ToolResult(result) = item {
                        messages.push(ChatMessage::Tool {
                            tool_call_id: result.tool_call_id.as_str(),
                            content: content_text(&result.content),
                        });
                        images.extend(result.content.iter().filter_map(|c| match c {
                            ContentItem::Image(image) => Some(Part::ImageUrl {
                                image_url: ImageUrl { url: data_url(image) },
                            }),
                            ContentItem::Text { .. } | ContentItem::BlobRef(_) => None,
                        }));
                    }
                }
            }
        }
    }
    if !images.is_empty() {
        messages.push(ChatMessage::User { content: UserContent::Parts(images) });
    }
    let tools: Vec<Tool<'_>> = request
        .tools
        .iter()
        .map(|tool| Tool {
            kind: "function",
            function: Function {
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.schema,
            },
        })
        .collect();
    let has_tools = !tools.is_empty();
    RequestBody {
        model: &request.model,
        messages,
        stream: true,
        stream_options: Some(StreamOptions { include_usage: true }),
        tools,
        tool_choice: has_tools.then_some("auto"),
        parallel_tool_calls: has_tools.then_some(true),
        max_tokens: request.max_output_tokens,
        response_format: request.output_schema.as_ref().map(|schema| ResponseFormat {
            kind: "json_schema",
            json_schema: JsonSchema { name: "output", schema, strict: false },
        }),
        reasoning_effort: request.reasoning.effort.map(|effort| effort.as_str()),
    }
}

/// One `chat.completion.chunk`, borrowing its strings where they have no escapes. Only the
/// fields we read are named; serde skips the rest without building values for them.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Delta<'a>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<Fragment<'a>>>,
}

#[derive(Deserialize)]
struct Fragment<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionFragment<'a>>,
}

#[derive(Deserialize, Default)]
struct FunctionFragment<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

/// Stream state.
#[derive(Debug, Default)]
pub(crate) struct Parser {
    /// Calls by fragment index, in order of first appearance.
    calls: Vec<(u64, ToolCallId)>,
    finish: Option<StopReason>,
    usage: Option<Usage>,
    in_reasoning: bool,
}

impl Parser {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn end_reasoning(&mut self, out: &mut dyn FnMut(ResponseEvent)) {
        if self.in_reasoning {
            self.in_reasoning = false;
            out(ResponseEvent::ReasoningDone { signature: None, encrypted_content: None });
        }
    }

    fn complete(&mut self, out: &mut dyn FnMut(ResponseEvent)) {
        self.end_reasoning(out);
        for (_, id) in std::mem::take(&mut self.calls) {
            out(ResponseEvent::ToolCallDone { id });
        }
        if let Some(usage) = self.usage.take() {
            out(ResponseEvent::Usage(usage));
        }
        let stop_reason = self.finish.take().unwrap_or(StopReason::EndTurn);
        out(ResponseEvent::Completed { stop_reason });
    }
}

pub(crate) fn usage(value: &Value) -> Usage {
    Usage {
        input_tokens: u64_field(value, "prompt_tokens"),
        cached_input_tokens: value
            .get("prompt_tokens_details")
            .map_or(0, |d| u64_field(d, "cached_tokens")),
        output_tokens: u64_field(value, "completion_tokens"),
        reasoning_output_tokens: value
            .get("completion_tokens_details")
            .map_or(0, |d| u64_field(d, "reasoning_tokens")),
    }
}

impl StreamParser for Parser {
    fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut dyn FnMut(ResponseEvent),
    ) -> Result<bool, Error> {
        if event.data.trim() == "[DONE]" {
            self.complete(out);
            return Ok(true);
        }
        let chunk: Chunk<'_> = parse_typed(event)?;
        if let Some(error) = chunk.error {
            let error_type = error
                .get("type")
                .or_else(|| error.get("code"))
                .and_then(|t| t.as_str().map(str::to_owned));
            return Err(Error::Stream {
                error_type,
                message: str_field(&error, "message").to_owned(),
            });
        }
        if let Some(u) = chunk.usage.filter(Value::is_object) {
            self.usage = Some(usage(&u));
        }
        for choice in chunk.choices {
            let delta = choice.delta;
            let reasoning = delta.reasoning_content.or(delta.reasoning).unwrap_or_default();
            if !reasoning.is_empty() {
                self.in_reasoning = true;
                out(ResponseEvent::ReasoningDelta(reasoning.into_owned()));
            }
            let text = delta.content.unwrap_or_default();
            if !text.is_empty() {
                self.end_reasoning(out);
                out(ResponseEvent::TextDelta(text.into_owned()));
            }
            for fragment in delta.tool_calls.unwrap_or_default() {
                self.end_reasoning(out);
                let index = fragment.index.unwrap_or(self.calls.len() as u64);
                let function = fragment.function.unwrap_or_default();
                let id = match self.calls.iter().find(|(i, _)| *i == index) {
                    Some((_, id)) => id.clone(),
                    None => {
                        let raw_id = fragment.id.unwrap_or_default();
                        let id = ToolCallId::new(if raw_id.is_empty() {
                            format!("call_{index}")
                        } else {
                            raw_id.into_owned()
                        });
                        self.calls.push((index, id.clone()));
                        out(ResponseEvent::ToolCallStart {
                            id: id.clone(),
                            name: function.name.unwrap_or_default().into_owned(),
                        });
                        id
                    }
                };
                let args = function.arguments.unwrap_or_default();
                if !args.is_empty() {
                    out(ResponseEvent::ToolCallArgsDelta { id, delta: args.into_owned() });
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(match reason.as_ref() {
                    "stop" => StopReason::EndTurn,
                    "tool_calls" | "function_call" => StopReason::ToolUse,
                    "length" => StopReason::MaxTokens,
                    _ => StopReason::Other,
                });
            }
        }
        Ok(false)
    }

    fn on_eof(&mut self, out: &mut dyn FnMut(ResponseEvent)) -> Result<(), Error> {
        if self.finish.is_some() {
            self.complete(out);
            return Ok(());
        }
        Err(Error::Connection {
            message: "the stream ended before a finish_reason or [DONE]".to_owned(),
        })
    }
}
