//! OpenAI Responses API: `POST {base}/responses` with `"stream": true`.
//!
//! Requests are stateless (`store: false`) and ask for `reasoning.encrypted_content`, so
//! reasoning is passed back as it came. `prompt_cache_key` is the session id. The stream's
//! `response.output_item.*`, text and argument deltas become neutral events; a stream without
//! `response.completed` (or `.incomplete`) is broken.

use std::collections::HashMap;

use codecoder_kernel::{ModelRequest, ResponseEvent};
use codecoder_protocol::{
    ContentItem, MessageItem, ReasoningSummary, Role, StopReason, ToolCallId, Usage,
};
use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Error;
use crate::sse::SseEvent;
use crate::wire::{
    StreamParser, args_text, blob_text, content_text, data_url, parse_data, parse_typed, str_field,
    u64_field,
};

/// The request body, borrowing from the request: serialized straight to bytes, with no
/// intermediate JSON value tree (tool schemas and texts are not copied).
#[derive(Debug, Serialize)]
pub(crate) struct RequestBody<'a> {
    model: &'a str,
    instructions: &'a str,
    input: Vec<InputItem<'a>>,
    store: bool,
    pub(crate) stream: bool,
    include: [&'static str; 1],
    prompt_cache_key: String,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<TextOptions<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningOptions>,
}

/// `reasoning`: the effort, and the summary a person can read (asked for unless turned off).
#[derive(Debug, Serialize)]
struct ReasoningOptions {
    effort: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'static str>,
}

/// One item of `input`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InputItem<'a> {
    Message { role: &'static str, content: Vec<InputContent<'a>> },
    Reasoning { summary: Vec<SummaryText<'a>>, encrypted_content: &'a str },
    FunctionCall { call_id: &'a str, name: &'a str, arguments: Cow<'a, str> },
    FunctionCallOutput { call_id: &'a str, output: Cow<'a, str> },
}

/// One part of a message's `content`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InputContent<'a> {
    InputText { text: Cow<'a, str> },
    OutputText { text: &'a str },
    InputImage { image_url: String },
}

#[derive(Debug, Serialize)]
struct SummaryText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Debug, Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    strict: bool,
}

#[derive(Debug, Serialize)]
struct TextOptions<'a> {
    format: JsonSchemaFormat<'a>,
}

#[derive(Debug, Serialize)]
struct JsonSchemaFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'static str,
    schema: &'a Value,
    strict: bool,
}

/// The request body.
pub(crate) fn request_body<'a>(request: &'a ModelRequest) -> RequestBody<'a> {
    let mut input = Vec::new();
    // A tool result's images go to the model as a user message after the whole run of
    // function call outputs, never between two of them (the calls and their outputs stay
    // together, as the API expects).
    let mut deferred: Vec<InputItem<'a>> = Vec::new();
    for message in &request.history {
        let role = match message.role {
            Role::User | Role::Tool => "user",
            Role::Assistant => "assistant",
            Role::System => "developer",
        };
        let mut content: Vec<InputContent<'a>> = Vec::new();
        let flush = |content: &mut Vec<InputContent<'a>>,
                     input: &mut Vec<InputItem<'a>>,
                     deferred: &mut Vec<InputItem<'a>>| {
            if !content.is_empty() {
                input.append(deferred);
                input.push(InputItem::Message { role, content: std::mem::take(content) });
            }
        };
        for item in &message.items {
            match item {
                MessageItem::Text { text } => {
                    content.push(if message.role == Role::Assistant {
                        InputContent::OutputText { text }
                    } else {
                        InputContent::InputText { text: Cow::Borrowed(text) }
                    });
                }
                MessageItem::Image(image) => {
                    content.push(InputContent::InputImage { image_url: data_url(image) });
                }
                MessageItem::BlobRef(blob) => {
                    content.push(InputContent::InputText { text: Cow::Owned(blob_text(blob)) });
                }
                MessageItem::Reasoning(reasoning) => {
                    flush(&mut content, &mut input, &mut deferred);
                    input.append(&mut deferred);
                    // Without its encrypted payload, reasoning cannot be replayed statelessly.
                    if let Some(encrypted) = &reasoning.encrypted_content {
                        let summary = if reasoning.text.is_empty() {
                            Vec::new()
                        } else {
                            vec![SummaryText { kind: "summary_text", text: &reasoning.text }]
                        };
                        input.push(InputItem::Reasoning { summary, encrypted_content: encrypted });
                    }
                }
                MessageItem::ToolCall(call) => {
                    flush(&mut content, &mut input, &mut deferred);
                    input.append(&mut deferred);
                    input.push(InputItem::FunctionCall {
                        call_id: call.id.as_str(),
                        name: &call.name,
                        arguments: args_text(&call.args),
                    });
                }
                MessageItem::ToolResult(result) => {
                    flush(&mut content, &mut input, &mut deferred);
                    input.push(InputItem::FunctionCallOutput {
                        call_id: result.tool_call_id.as_str(),
                        output: content_text(&result.content),
                    });
                    for item in &result.content {
                        if let ContentItem::Image(image) = item {
                            deferred.push(InputItem::Message {
                                role: "user",
                                content: vec![InputContent::InputImage {
                                    image_url: data_url(image),
                                }],
                            });
                        }
                    }
                }
            }
        }
        flush(&mut content, &mut input, &mut deferred);
    }
    input.append(&mut deferred);
    let tools: Vec<Tool<'_>> = request
        .tools
        .iter()
        .map(|tool| Tool {
            kind: "function",
            name: &tool.name,
            description: &tool.description,
            parameters: &tool.schema,
            strict: false,
        })
        .collect();
    let has_tools = !tools.is_empty();
    RequestBody {
        model: &request.model,
        instructions: &request.instructions,
        input,
        store: false,
        stream: true,
        include: ["reasoning.encrypted_content"],
        prompt_cache_key: request.session_id.to_string(),
        tools,
        tool_choice: has_tools.then_some("auto"),
        parallel_tool_calls: has_tools.then_some(true),
        max_output_tokens: request.max_output_tokens,
        text: request.output_schema.as_ref().map(|schema| TextOptions {
            format: JsonSchemaFormat { kind: "json_schema", name: "output", schema, strict: false },
        }),
        reasoning: request.reasoning.effort.map(|effort| ReasoningOptions {
            effort: effort.as_str(),
            summary: match request.reasoning.summary.unwrap_or(ReasoningSummary::Auto) {
                ReasoningSummary::None => None,
                summary => Some(summary.as_str()),
            },
        }),
    }
}

/// The fields of an event the delta hot path needs, borrowed from the event's text.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    item_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
}

/// Stream state: which output items are which.
#[derive(Debug, Default)]
pub(crate) struct Parser {
    /// item_id → the call's id, for argument deltas.
    calls: HashMap<String, ToolCallId>,
    /// Function-call items whose arguments arrived as deltas.
    args_streamed: std::collections::HashSet<String>,
    /// Message items whose text arrived as deltas.
    text_streamed: std::collections::HashSet<String>,
    saw_tool_call: bool,
}

impl Parser {
    pub(crate) fn new() -> Self {
        Self::default()
    }
}

pub(crate) fn usage(response: &Value) -> Option<Usage> {
    let usage = response.get("usage")?;
    Some(Usage {
        input_tokens: u64_field(usage, "input_tokens"),
        cached_input_tokens: usage
            .get("input_tokens_details")
            .map_or(0, |d| u64_field(d, "cached_tokens")),
        output_tokens: u64_field(usage, "output_tokens"),
        reasoning_output_tokens: usage
            .get("output_tokens_details")
            .map_or(0, |d| u64_field(d, "reasoning_tokens")),
    })
}

fn provider_error(value: &Value) -> Error {
    let error = value.get("error").unwrap_or(value);
    let error_type =
        error.get("code").or_else(|| error.get("type")).and_then(Value::as_str).map(str::to_owned);
    Error::Stream { error_type, message: str_field(error, "message").to_owned() }
}

impl StreamParser for Parser {
    fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut dyn FnMut(ResponseEvent),
    ) -> Result<bool, Error> {
        // The hot path (deltas) reads a typed, borrowing view; other events parse into a Value.
        let head: Head<'_> = parse_typed(event)?;
        let kind = event.event.as_deref().or(head.kind.as_deref()).unwrap_or("");
        match kind {
            "response.output_text.delta" => {
                if let Some(item_id) = &head.item_id
                    && !self.text_streamed.contains(item_id.as_ref())
                {
                    self.text_streamed.insert(item_id.to_string());
                }
                let delta = head.delta.unwrap_or_default();
                if !delta.is_empty() {
                    out(ResponseEvent::TextDelta(delta.into_owned()));
                }
                return Ok(false);
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let delta = head.delta.unwrap_or_default();
                if !delta.is_empty() {
                    out(ResponseEvent::ReasoningDelta(delta.into_owned()));
                }
                return Ok(false);
            }
            "response.function_call_arguments.delta" => {
                let item_id = head.item_id.unwrap_or_default();
                if let Some(id) = self.calls.get(item_id.as_ref()) {
                    let id = id.clone();
                    if !self.args_streamed.contains(item_id.as_ref()) {
                        self.args_streamed.insert(item_id.into_owned());
                    }
                    out(ResponseEvent::ToolCallArgsDelta {
                        id,
                        delta: head.delta.unwrap_or_default().into_owned(),
                    });
                }
                return Ok(false);
            }
            _ => {}
        }
        let data = parse_data(event)?;
        match kind {
            "response.output_item.added" => {
                let item = &data["item"];
                if str_field(item, "type") == "function_call" {
                    let id = ToolCallId::new(str_field(item, "call_id"));
                    self.calls.insert(str_field(item, "id").to_owned(), id.clone());
                    self.saw_tool_call = true;
                    out(ResponseEvent::ToolCallStart {
                        id,
                        name: str_field(item, "name").to_owned(),
                    });
                }
            }
            "response.output_item.done" => {
                let item = &data["item"];
                let item_id = str_field(item, "id");
                match str_field(item, "type") {
                    "function_call" => {
                        let id = match self.calls.get(item_id) {
                            Some(id) => id.clone(),
                            None => {
                                // Announced only when done: start it now.
                                let id = ToolCallId::new(str_field(item, "call_id"));
                                self.saw_tool_call = true;
                                out(ResponseEvent::ToolCallStart {
                                    id: id.clone(),
                                    name: str_field(item, "name").to_owned(),
                                });
                                id
                            }
                        };
                        if !self.args_streamed.contains(item_id) {
                            out(ResponseEvent::ToolCallArgsDelta {
                                id: id.clone(),
                                delta: str_field(item, "arguments").to_owned(),
                            });
                        }
                        out(ResponseEvent::ToolCallDone { id });
                    }
                    "reasoning" => out(ResponseEvent::ReasoningDone {
                        signature: None,
                        encrypted_content: item
                            .get("encrypted_content")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                    }),
                    "message" if !self.text_streamed.contains(item_id) => {
                        for part in item["content"].as_array().into_iter().flatten() {
                            let text = str_field(part, "text");
                            if !text.is_empty() {
                                out(ResponseEvent::TextDelta(text.to_owned()));
                            }
                        }
                    }
                    _ => {}
                }
            }
            "response.completed" => {
                if let Some(usage) = usage(&data["response"]) {
                    out(ResponseEvent::Usage(usage));
                }
                let stop_reason =
                    if self.saw_tool_call { StopReason::ToolUse } else { StopReason::EndTurn };
                out(ResponseEvent::Completed { stop_reason });
                return Ok(true);
            }
            "response.incomplete" => {
                let response = &data["response"];
                if let Some(usage) = usage(response) {
                    out(ResponseEvent::Usage(usage));
                }
                let stop_reason = match str_field(&response["incomplete_details"], "reason") {
                    "max_output_tokens" => StopReason::MaxTokens,
                    _ => StopReason::Other,
                };
                out(ResponseEvent::Completed { stop_reason });
                return Ok(true);
            }
            "response.failed" => return Err(provider_error(&data["response"])),
            "error" => return Err(provider_error(&data)),
            _ => {}
        }
        Ok(false)
    }

    fn on_eof(&mut self, _out: &mut dyn FnMut(ResponseEvent)) -> Result<(), Error> {
        Err(Error::Connection { message: "the stream ended before response.completed".to_owned() })
    }
}
