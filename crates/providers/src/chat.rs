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

use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::Error;
use crate::sse::SseEvent;
use crate::wire::{
    StreamParser, args_text, blob_text, content_text, data_url, parse_typed, str_field, u64_field,
};

/// The request body.
pub(crate) fn request_body(request: &ModelRequest, send_reasoning_content: bool) -> Value {
    let mut messages = vec![json!({"role": "system", "content": request.instructions})];
    for message in &request.history {
        match message.role {
            Role::User | Role::System => {
                let role = if message.role == Role::User { "user" } else { "system" };
                let mut parts = Vec::new();
                let mut text_only = true;
                for item in &message.items {
                    match item {
                        MessageItem::Text { text } => {
                            parts.push(json!({"type": "text", "text": text}))
                        }
                        MessageItem::BlobRef(blob) => {
                            parts.push(json!({"type": "text", "text": blob_text(blob)}))
                        }
                        MessageItem::Image(image) => {
                            text_only = false;
                            parts.push(
                                json!({"type": "image_url", "image_url": {"url": data_url(image)}}),
                            );
                        }
                        MessageItem::Reasoning(_)
                        | MessageItem::ToolCall(_)
                        | MessageItem::ToolResult(_) => {}
                    }
                }
                // Plain strings are understood by every server; parts only when needed.
                let content = if text_only {
                    Value::String(
                        parts.iter().map(|p| str_field(p, "text")).collect::<Vec<_>>().join("\n"),
                    )
                } else {
                    Value::Array(parts)
                };
                messages.push(json!({"role": role, "content": content}));
            }
            Role::Assistant => {
                let mut text = String::new();
                let mut reasoning = String::new();
                let mut tool_calls = Vec::new();
                for item in &message.items {
                    match item {
                        MessageItem::Text { text: t } => text.push_str(t),
                        MessageItem::Reasoning(r) => reasoning.push_str(&r.text),
                        MessageItem::ToolCall(call) => tool_calls.push(json!({
                            "id": call.id.as_str(),
                            "type": "function",
                            "function": {"name": call.name, "arguments": args_text(&call.args)},
                        })),
                        MessageItem::Image(_)
                        | MessageItem::BlobRef(_)
                        | MessageItem::ToolResult(_) => {}
                    }
                }
                let mut m = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { Value::String(text) }});
                if !tool_calls.is_empty() {
                    m["tool_calls"] = Value::Array(tool_calls);
                }
                if send_reasoning_content && !reasoning.is_empty() {
                    m["reasoning_content"] = Value::String(reasoning);
                }
                messages.push(m);
            }
            Role::Tool => {
                for item in &message.items {
                    if let MessageItem::ToolResult(result) = item {
                        messages.push(json!({
                            "role": "tool",
                            "tool_call_id": result.tool_call_id.as_str(),
                            "content": content_text(&result.content),
                        }));
                        let images: Vec<Value> = result
                            .content
                            .iter()
                            .filter_map(|c| match c {
                                ContentItem::Image(image) => Some(json!({"type": "image_url", "image_url": {"url": data_url(image)}})),
                                ContentItem::Text { .. } | ContentItem::BlobRef(_) => None,
                            })
                            .collect();
                        if !images.is_empty() {
                            messages.push(json!({"role": "user", "content": images}));
                        }
                    }
                }
            }
        }
    }
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|tool| json!({"type": "function", "function": {"name": tool.name, "description": tool.description, "parameters": tool.schema}}))
            .collect();
        body["tool_choice"] = json!("auto");
        body["parallel_tool_calls"] = json!(true);
    }
    if let Some(max) = request.max_output_tokens {
        body["max_tokens"] = json!(max);
    }
    if let Some(effort) = request.reasoning.effort {
        body["reasoning_effort"] = json!(effort.as_str());
    }
    if let Some(schema) = &request.output_schema {
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": {"name": "output", "schema": schema, "strict": false},
        });
    }
    body
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
