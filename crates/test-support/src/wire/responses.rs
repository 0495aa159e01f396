//! OpenAI Responses SSE: `event: <type>` + `data: {"type": <type>, "sequence_number": …}`.
//!
//! Order: `response.created`, `response.in_progress`, then one output item at a time (reasoning,
//! message, function calls; items never interleave in this API), each opened by
//! `response.output_item.added` and closed by `response.output_item.done` carrying the complete
//! item, then `response.completed` (or `response.incomplete` for `max_tokens`) with the whole
//! output and usage.

use serde_json::{Value, json};

use crate::script::{Reply, StopReason, StreamError, split_chars};
use crate::wire::{Ctx, Event, mark_endless, named_event, with_empty_deltas};

pub(super) fn render(reply: &Reply, ctx: &Ctx) -> Vec<Event> {
    let mut stream = Stream { events: Vec::new(), seq: 0 };
    let n = ctx.n;
    let stop = reply.stop_reason();
    stream.emit("response.created", json!({"response": response(ctx, "in_progress", &[], None)}));
    stream
        .emit("response.in_progress", json!({"response": response(ctx, "in_progress", &[], None)}));
    let mut output: Vec<Value> = Vec::new();

    if let Some(reasoning) = &reply.reasoning {
        let output_index = output.len();
        let item_id = format!("rs_fake_{n}_{output_index}");
        let signature = reasoning.signature.clone().unwrap_or_else(|| ctx.default_signature());
        stream.emit(
            "response.output_item.added",
            json!({
                "output_index": output_index,
                "item": {"id": item_id, "type": "reasoning", "summary": []},
            }),
        );
        let deltas =
            with_empty_deltas(split_chars(&reasoning.text, reasoning.chunks), reply.empty_deltas);
        let item = if reasoning.raw {
            for delta in deltas {
                stream.emit(
                    "response.reasoning_text.delta",
                    json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "delta": delta}),
                );
            }
            stream.emit(
                "response.reasoning_text.done",
                json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "text": reasoning.text}),
            );
            json!({
                "id": item_id,
                "type": "reasoning",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": reasoning.text}],
                "encrypted_content": signature,
            })
        } else {
            let part = |text: &str| json!({"type": "summary_text", "text": text});
            stream.emit(
                "response.reasoning_summary_part.added",
                json!({"item_id": item_id, "output_index": output_index, "summary_index": 0, "part": part("")}),
            );
            for delta in deltas {
                stream.emit(
                    "response.reasoning_summary_text.delta",
                    json!({"item_id": item_id, "output_index": output_index, "summary_index": 0, "delta": delta}),
                );
            }
            stream.emit(
                "response.reasoning_summary_text.done",
                json!({"item_id": item_id, "output_index": output_index, "summary_index": 0, "text": reasoning.text}),
            );
            stream.emit(
                "response.reasoning_summary_part.done",
                json!({"item_id": item_id, "output_index": output_index, "summary_index": 0, "part": part(&reasoning.text)}),
            );
            json!({
                "id": item_id,
                "type": "reasoning",
                "summary": [part(&reasoning.text)],
                "encrypted_content": signature,
            })
        };
        stream
            .emit("response.output_item.done", json!({"output_index": output_index, "item": item}));
        output.push(item);
    }

    if let (Some(deltas), Some(text)) = (reply.text_deltas(), reply.full_text()) {
        let output_index = output.len();
        let item_id = format!("msg_fake_{n}_{output_index}");
        let part = |text: &str| json!({"type": "output_text", "text": text, "annotations": []});
        stream.emit(
            "response.output_item.added",
            json!({
                "output_index": output_index,
                "item": {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []},
            }),
        );
        stream.emit(
            "response.content_part.added",
            json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "part": part("")}),
        );
        let mut delta_indexes = Vec::new();
        for delta in with_empty_deltas(deltas, reply.empty_deltas) {
            delta_indexes.push(stream.events.len());
            stream.emit(
                "response.output_text.delta",
                json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "delta": delta}),
            );
        }
        if reply.endless {
            mark_endless(&mut stream.events, &delta_indexes);
        }
        stream.emit(
            "response.output_text.done",
            json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "text": text}),
        );
        stream.emit(
            "response.content_part.done",
            json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "part": part(&text)}),
        );
        let status = match stop {
            StopReason::MaxTokens => "incomplete",
            StopReason::EndTurn | StopReason::ToolUse => "completed",
        };
        let item = json!({
            "id": item_id,
            "type": "message",
            "status": status,
            "role": "assistant",
            "content": [part(&text)],
        });
        stream
            .emit("response.output_item.done", json!({"output_index": output_index, "item": item}));
        output.push(item);
    }

    for call in &reply.tool_calls {
        let output_index = output.len();
        let item_id = format!("fc_fake_{n}_{output_index}");
        let arguments = call.arguments_text();
        let item = |status: &str, arguments: &str| {
            json!({
                "id": item_id,
                "type": "function_call",
                "status": status,
                "arguments": arguments,
                "call_id": call.id,
                "name": call.name,
            })
        };
        stream.emit(
            "response.output_item.added",
            json!({"output_index": output_index, "item": item("in_progress", "")}),
        );
        let fragments =
            with_empty_deltas(split_chars(&arguments, reply.arg_fragments), reply.empty_deltas);
        for fragment in fragments {
            stream.emit(
                "response.function_call_arguments.delta",
                json!({"item_id": item_id, "output_index": output_index, "delta": fragment}),
            );
        }
        stream.emit(
            "response.function_call_arguments.done",
            json!({"item_id": item_id, "output_index": output_index, "arguments": arguments}),
        );
        let done = item("completed", &arguments);
        stream
            .emit("response.output_item.done", json!({"output_index": output_index, "item": done}));
        output.push(done);
    }

    let usage = usage(reply);
    match stop {
        StopReason::MaxTokens => {
            let mut response = response(ctx, "incomplete", &output, Some(usage));
            response["incomplete_details"] = json!({"reason": "max_output_tokens"});
            stream.emit("response.incomplete", json!({"response": response}));
        }
        StopReason::EndTurn | StopReason::ToolUse => {
            stream.emit(
                "response.completed",
                json!({"response": response(ctx, "completed", &output, Some(usage))}),
            );
        }
    }
    stream.events
}

/// `response.failed` with the error, as OpenAI ends a stream that failed.
pub(super) fn error_event(error: &StreamError, ctx: &Ctx) -> Vec<u8> {
    let mut response = response(ctx, "failed", &[], None);
    response["error"] = json!({
        "code": error.error_type.as_deref().unwrap_or("server_error"),
        "message": error.message.as_deref().unwrap_or("fake model: scripted stream error"),
    });
    named_event(
        "response.failed",
        // Events are numbered from 0 and `after` of them were sent before this one.
        &json!({"type": "response.failed", "sequence_number": error.after, "response": response}),
    )
}

struct Stream {
    events: Vec<Event>,
    seq: u64,
}

impl Stream {
    fn emit(&mut self, event_type: &str, mut data: Value) {
        if let Value::Object(fields) = &mut data {
            fields.insert("type".to_owned(), json!(event_type));
            fields.insert("sequence_number".to_owned(), json!(self.seq));
        }
        self.seq += 1;
        self.events.push(Event { bytes: named_event(event_type, &data), repeat: false });
    }
}

fn response(ctx: &Ctx, status: &str, output: &[Value], usage: Option<Value>) -> Value {
    json!({
        "id": format!("resp_fake_{}", ctx.n),
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "error": null,
        "incomplete_details": null,
        "model": ctx.model,
        "output": output,
        "usage": usage,
    })
}

fn usage(reply: &Reply) -> Value {
    let usage = reply.usage;
    json!({
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    })
}
