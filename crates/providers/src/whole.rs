//! Non-streaming requests: for servers that cannot stream (or cannot stream tool calls: llama.cpp's
//! server answers "Cannot use tools with stream", llama-cpp-python ends the stream early; the
//! client finds out by behaviour, see `client`), a request is sent with `"stream": false` and its
//! one JSON answer becomes the same neutral events a stream gives.
//!
//! Invariant: the events of an answer are those the equivalent stream produces, in the same
//! order (reasoning, then text, then tool calls, then usage, then `Completed`), so the kernel
//! cannot tell the two apart; an answer the API marks as failed is an `Error`.

use codecoder_kernel::ResponseEvent;
use codecoder_protocol::{StopReason, ToolCallId, Usage};
use serde_json::Value;

use crate::config::WireApi;
use crate::error::Error;
use crate::wire::{args_text, str_field, u64_field};
use crate::{chat, responses};

/// The events of one whole JSON answer of `api`.
pub(crate) fn parse(
    api: WireApi,
    text: &str,
    out: &mut dyn FnMut(ResponseEvent),
) -> Result<(), Error> {
    let value: Value = serde_json::from_str(text)
        .map_err(|err| Error::Protocol { message: format!("malformed JSON answer: {err}") })?;
    match api {
        WireApi::Responses => parse_responses(&value, out),
        WireApi::Chat => parse_chat(&value, out),
        WireApi::Anthropic => parse_anthropic(&value, out),
    }
}

fn stream_error(error: &Value) -> Error {
    let error_type =
        error.get("type").or_else(|| error.get("code")).and_then(Value::as_str).map(str::to_owned);
    Error::Stream { error_type, message: str_field(error, "message").to_owned() }
}

fn texts<'a>(parts: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    parts
        .as_array()
        .into_iter()
        .flatten()
        .filter(move |part| kind.is_empty() || str_field(part, "type") == kind)
        .map(|part| str_field(part, "text"))
        .filter(|text| !text.is_empty())
}

fn parse_responses(value: &Value, out: &mut dyn FnMut(ResponseEvent)) -> Result<(), Error> {
    if str_field(value, "status") == "failed" || value.get("error").is_some_and(Value::is_object) {
        return Err(stream_error(value.get("error").unwrap_or(value)));
    }
    let mut saw_tool_call = false;
    for item in value["output"].as_array().into_iter().flatten() {
        match str_field(item, "type") {
            "reasoning" => {
                let summary: Vec<&str> = texts(&item["summary"], "").collect();
                let text = if summary.is_empty() {
                    texts(&item["content"], "").collect::<Vec<_>>().join("\n\n")
                } else {
                    summary.join("\n\n")
                };
                if !text.is_empty() {
                    out(ResponseEvent::ReasoningDelta(text));
                }
                out(ResponseEvent::ReasoningDone {
                    signature: None,
                    encrypted_content: item
                        .get("encrypted_content")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                });
            }
            "message" => {
                for text in texts(&item["content"], "output_text") {
                    out(ResponseEvent::TextDelta(text.to_owned()));
                }
            }
            "function_call" => {
                saw_tool_call = true;
                let id = ToolCallId::new(str_field(item, "call_id"));
                out(ResponseEvent::ToolCallStart {
                    id: id.clone(),
                    name: str_field(item, "name").to_owned(),
                });
                out(ResponseEvent::ToolCallArgsDelta {
                    id: id.clone(),
                    delta: str_field(item, "arguments").to_owned(),
                });
                out(ResponseEvent::ToolCallDone { id });
            }
            _ => {}
        }
    }
    if let Some(usage) = responses::usage(value) {
        out(ResponseEvent::Usage(usage));
    }
    let stop_reason = match (str_field(value, "status"), saw_tool_call) {
        ("incomplete", _) => match str_field(&value["incomplete_details"], "reason") {
            "max_output_tokens" => StopReason::MaxTokens,
            _ => StopReason::Other,
        },
        (_, true) => StopReason::ToolUse,
        (_, false) => StopReason::EndTurn,
    };
    out(ResponseEvent::Completed { stop_reason });
    Ok(())
}

fn parse_chat(value: &Value, out: &mut dyn FnMut(ResponseEvent)) -> Result<(), Error> {
    if let Some(error) = value.get("error").filter(|e| e.is_object()) {
        return Err(stream_error(error));
    }
    let choice = &value["choices"][0];
    let message = &choice["message"];
    let reasoning = message
        .get("reasoning_content")
        .or_else(|| message.get("reasoning"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if !reasoning.is_empty() {
        out(ResponseEvent::ReasoningDelta(reasoning.to_owned()));
        out(ResponseEvent::ReasoningDone { signature: None, encrypted_content: None });
    }
    let text = str_field(message, "content");
    if !text.is_empty() {
        out(ResponseEvent::TextDelta(text.to_owned()));
    }
    let calls = message["tool_calls"].as_array().map(Vec::as_slice).unwrap_or_default();
    for (index, call) in calls.iter().enumerate() {
        let raw_id = str_field(call, "id");
        let id = ToolCallId::new(if raw_id.is_empty() {
            format!("call_{index}")
        } else {
            raw_id.to_owned()
        });
        let function = &call["function"];
        out(ResponseEvent::ToolCallStart {
            id: id.clone(),
            name: str_field(function, "name").to_owned(),
        });
        // Some servers give the arguments as an object rather than JSON text.
        let arguments = match function.get("arguments") {
            Some(Value::String(text)) => text.clone(),
            Some(other) => args_text(other).into_owned(),
            None => String::new(),
        };
        out(ResponseEvent::ToolCallArgsDelta { id: id.clone(), delta: arguments });
        out(ResponseEvent::ToolCallDone { id });
    }
    if let Some(usage) = value.get("usage").filter(|u| u.is_object()) {
        out(ResponseEvent::Usage(chat::usage(usage)));
    }
    let stop_reason = match str_field(choice, "finish_reason") {
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        "stop" | "" if calls.is_empty() => StopReason::EndTurn,
        "stop" | "" => StopReason::ToolUse,
        _ => StopReason::Other,
    };
    out(ResponseEvent::Completed { stop_reason });
    Ok(())
}

fn parse_anthropic(value: &Value, out: &mut dyn FnMut(ResponseEvent)) -> Result<(), Error> {
    if str_field(value, "type") == "error" {
        return Err(stream_error(&value["error"]));
    }
    for block in value["content"].as_array().into_iter().flatten() {
        match str_field(block, "type") {
            "text" => {
                let text = str_field(block, "text");
                if !text.is_empty() {
                    out(ResponseEvent::TextDelta(text.to_owned()));
                }
            }
            "thinking" => {
                let text = str_field(block, "thinking");
                if !text.is_empty() {
                    out(ResponseEvent::ReasoningDelta(text.to_owned()));
                }
                out(ResponseEvent::ReasoningDone {
                    signature: block
                        .get("signature")
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned),
                    encrypted_content: None,
                });
            }
            "redacted_thinking" => out(ResponseEvent::ReasoningDone {
                signature: None,
                encrypted_content: block.get("data").and_then(Value::as_str).map(str::to_owned),
            }),
            "tool_use" => {
                let id = ToolCallId::new(str_field(block, "id"));
                out(ResponseEvent::ToolCallStart {
                    id: id.clone(),
                    name: str_field(block, "name").to_owned(),
                });
                let input = block.get("input").cloned().unwrap_or(Value::Null);
                out(ResponseEvent::ToolCallArgsDelta {
                    id: id.clone(),
                    delta: args_text(&input).into_owned(),
                });
                out(ResponseEvent::ToolCallDone { id });
            }
            _ => {}
        }
    }
    let usage = &value["usage"];
    let cache_read = u64_field(usage, "cache_read_input_tokens");
    out(ResponseEvent::Usage(Usage {
        input_tokens: u64_field(usage, "input_tokens")
            + cache_read
            + u64_field(usage, "cache_creation_input_tokens"),
        cached_input_tokens: cache_read,
        output_tokens: u64_field(usage, "output_tokens"),
        reasoning_output_tokens: 0,
    }));
    let stop_reason = match str_field(value, "stop_reason") {
        "end_turn" | "stop_sequence" | "" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        _ => StopReason::Other,
    };
    out(ResponseEvent::Completed { stop_reason });
    Ok(())
}
