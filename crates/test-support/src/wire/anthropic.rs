//! Anthropic Messages SSE: `event: <type>` + `data: {"type": <type>, …}`.
//!
//! Order: `message_start` (usage with input and cache tokens), `ping`, then content blocks
//! numbered from 0 — thinking (`thinking_delta`s then one `signature_delta`; a
//! `redacted_thinking` block after it when scripted), text (`text_delta`s), one `tool_use` block
//! per call (`input_json_delta`s) — each opened by `content_block_start` and closed by
//! `content_block_stop`, then `message_delta` (stop reason,
//! output tokens) and `message_stop`. Anthropic's `input_tokens` excludes cached tokens, so the
//! neutral input count is split into `input_tokens` and `cache_read_input_tokens`.

use serde_json::{Value, json};

use crate::script::{Reply, StopReason, StreamError, split_chars};
use crate::wire::{Ctx, Event, mark_endless, named_event, with_empty_deltas};

pub(super) fn render(reply: &Reply, ctx: &Ctx) -> Vec<Event> {
    let mut events = Vec::new();
    let usage = reply.usage;
    emit(
        &mut events,
        "message_start",
        json!({
            "message": {
                "id": format!("msg_fake_{}", ctx.n),
                "type": "message",
                "role": "assistant",
                "model": ctx.model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {
                    "input_tokens": usage.input_tokens.saturating_sub(usage.cached_tokens),
                    "cache_creation_input_tokens": usage.cache_creation_tokens,
                    "cache_read_input_tokens": usage.cached_tokens,
                    "output_tokens": 1,
                },
            }
        }),
    );
    emit(&mut events, "ping", json!({}));
    let mut index = 0;

    if let Some(reasoning) = &reply.reasoning {
        emit(
            &mut events,
            "content_block_start",
            json!({"index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        );
        let deltas =
            with_empty_deltas(split_chars(&reasoning.text, reasoning.chunks), reply.empty_deltas);
        for delta in deltas {
            emit(
                &mut events,
                "content_block_delta",
                json!({"index": index, "delta": {"type": "thinking_delta", "thinking": delta}}),
            );
        }
        let signature = reasoning.signature.clone().unwrap_or_else(|| ctx.default_signature());
        emit(
            &mut events,
            "content_block_delta",
            json!({"index": index, "delta": {"type": "signature_delta", "signature": signature}}),
        );
        emit(&mut events, "content_block_stop", json!({"index": index}));
        index += 1;
        if let Some(data) = &reasoning.redacted {
            emit(
                &mut events,
                "content_block_start",
                json!({"index": index, "content_block": {"type": "redacted_thinking", "data": data}}),
            );
            emit(&mut events, "content_block_stop", json!({"index": index}));
            index += 1;
        }
    }

    if let Some(deltas) = reply.text_deltas() {
        emit(
            &mut events,
            "content_block_start",
            json!({"index": index, "content_block": {"type": "text", "text": ""}}),
        );
        let mut delta_indexes = Vec::new();
        for delta in with_empty_deltas(deltas, reply.empty_deltas) {
            delta_indexes.push(events.len());
            emit(
                &mut events,
                "content_block_delta",
                json!({"index": index, "delta": {"type": "text_delta", "text": delta}}),
            );
        }
        if reply.endless {
            mark_endless(&mut events, &delta_indexes);
        }
        emit(&mut events, "content_block_stop", json!({"index": index}));
        index += 1;
    }

    for call in &reply.tool_calls {
        emit(
            &mut events,
            "content_block_start",
            json!({
                "index": index,
                "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}},
            }),
        );
        let fragments = with_empty_deltas(
            split_chars(&call.arguments_text(), reply.arg_fragments),
            reply.empty_deltas,
        );
        for fragment in fragments {
            emit(
                &mut events,
                "content_block_delta",
                json!({"index": index, "delta": {"type": "input_json_delta", "partial_json": fragment}}),
            );
        }
        emit(&mut events, "content_block_stop", json!({"index": index}));
        index += 1;
    }

    let stop_reason = match reply.stop_reason() {
        StopReason::EndTurn => "end_turn",
        StopReason::ToolUse => "tool_use",
        StopReason::MaxTokens => "max_tokens",
    };
    emit(
        &mut events,
        "message_delta",
        json!({
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": usage.output_tokens},
        }),
    );
    emit(&mut events, "message_stop", json!({}));
    events
}

/// `event: error`, as Anthropic reports overload and other failures mid-stream.
pub(super) fn error_event(error: &StreamError) -> Vec<u8> {
    named_event(
        "error",
        &json!({
            "type": "error",
            "error": {
                "type": error.error_type.as_deref().unwrap_or("overloaded_error"),
                "message": error.message.as_deref().unwrap_or("Overloaded"),
            },
        }),
    )
}

fn emit(events: &mut Vec<Event>, event_type: &str, mut data: Value) {
    if let Value::Object(fields) = &mut data {
        fields.insert("type".to_owned(), json!(event_type));
    }
    events.push(Event { bytes: named_event(event_type, &data), repeat: false });
}
