//! Non-streaming answers (`"stream": false` in the request): the whole JSON response an API
//! returns, folded from the SSE events `render` gives for the same reply, so a streamed and a
//! non-streamed answer to one reply always say the same thing.
//!
//! Invariant: pure (like `render`); mid-stream faults (stalls, drops, error events) do not
//! apply to a whole answer.

use serde_json::{Map, Value, json};

use crate::script::Reply;
use crate::wire::{Api, Ctx, render};

/// The JSON body of `api`'s non-streaming answer to `reply`.
pub(crate) fn answer(api: Api, reply: &Reply, ctx: &Ctx) -> Value {
    // A whole Chat answer always carries usage, as the APIs do.
    let ctx = Ctx { include_usage: true, ..ctx.clone() };
    let events: Vec<Value> = render(api, reply, &ctx)
        .iter()
        .filter_map(|event| {
            let text = String::from_utf8_lossy(&event.bytes);
            let data = text.lines().find_map(|line| line.strip_prefix("data: "))?;
            serde_json::from_str(data).ok()
        })
        .collect();
    match api {
        Api::Responses => responses(&events),
        Api::Chat => chat(&events),
        Api::Anthropic => anthropic(&events),
    }
}

fn kind(event: &Value) -> &str {
    event.get("type").and_then(Value::as_str).unwrap_or("")
}

fn responses(events: &[Value]) -> Value {
    events
        .iter()
        .rev()
        .find(|e| matches!(kind(e), "response.completed" | "response.incomplete"))
        .map(|e| e["response"].clone())
        .unwrap_or(Value::Null)
}

fn append(target: &mut Value, key: &str, text: &str) {
    let old = target.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
    target[key] = Value::String(old + text);
}

fn chat(events: &[Value]) -> Value {
    let mut message = json!({"role": "assistant", "content": null});
    let mut calls: Vec<Value> = Vec::new();
    let mut finish = Value::Null;
    let mut usage = Value::Null;
    let mut id = Value::Null;
    let mut model = Value::Null;
    for event in events {
        if id.is_null() {
            id = event.get("id").cloned().unwrap_or(Value::Null);
            model = event.get("model").cloned().unwrap_or(Value::Null);
        }
        if let Some(u) = event.get("usage").filter(|u| u.is_object()) {
            usage = u.clone();
        }
        for choice in event["choices"].as_array().into_iter().flatten() {
            let delta = &choice["delta"];
            for key in ["content", "reasoning_content", "reasoning"] {
                if let Some(text) = delta.get(key).and_then(Value::as_str).filter(|t| !t.is_empty())
                {
                    append(&mut message, key, text);
                }
            }
            for fragment in delta["tool_calls"].as_array().into_iter().flatten() {
                let index = fragment["index"].as_u64().unwrap_or(0) as usize;
                while calls.len() <= index {
                    calls.push(json!({"type": "function", "function": {"arguments": ""}}));
                }
                let call = &mut calls[index];
                if let Some(call_id) = fragment.get("id") {
                    call["id"] = call_id.clone();
                }
                if let Some(name) = fragment["function"].get("name") {
                    call["function"]["name"] = name.clone();
                }
                if let Some(args) = fragment["function"]["arguments"].as_str() {
                    append(&mut call["function"], "arguments", args);
                }
            }
            if let Some(reason) = choice.get("finish_reason").filter(|r| !r.is_null()) {
                finish = reason.clone();
            }
        }
    }
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": id,
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    })
}

fn anthropic(events: &[Value]) -> Value {
    let mut message = Value::Null;
    let mut blocks: Map<String, Value> = Map::new();
    let mut order: Vec<String> = Vec::new();
    let mut partial_json: Map<String, Value> = Map::new();
    for event in events {
        let index = event["index"].as_u64().unwrap_or(0).to_string();
        match kind(event) {
            "message_start" => message = event["message"].clone(),
            "content_block_start" => {
                order.push(index.clone());
                blocks.insert(index, event["content_block"].clone());
            }
            "content_block_delta" => {
                let Some(block) = blocks.get_mut(&index) else { continue };
                let delta = &event["delta"];
                match kind(delta) {
                    "text_delta" => append(block, "text", delta["text"].as_str().unwrap_or("")),
                    "thinking_delta" => {
                        append(block, "thinking", delta["thinking"].as_str().unwrap_or(""));
                    }
                    "signature_delta" => {
                        append(block, "signature", delta["signature"].as_str().unwrap_or(""));
                    }
                    "input_json_delta" => {
                        let old = partial_json.get(&index).and_then(Value::as_str).unwrap_or("");
                        let text = old.to_owned() + delta["partial_json"].as_str().unwrap_or("");
                        partial_json.insert(index, Value::String(text));
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = event["delta"].get("stop_reason") {
                    message["stop_reason"] = reason.clone();
                }
                if let Some(output) = event["usage"].get("output_tokens") {
                    message["usage"]["output_tokens"] = output.clone();
                }
            }
            _ => {}
        }
    }
    let content: Vec<Value> = order
        .iter()
        .filter_map(|index| {
            let mut block = blocks.get(index)?.clone();
            if let Some(text) = partial_json.get(index).and_then(Value::as_str) {
                block["input"] = serde_json::from_str(text).unwrap_or(Value::String(text.into()));
            }
            Some(block)
        })
        .collect();
    if message.is_object() {
        message["content"] = Value::Array(content);
    }
    message
}
