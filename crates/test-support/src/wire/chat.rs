//! OpenAI-compatible Chat Completions SSE: `data: {chat.completion.chunk}` lines, ending with
//! `data: [DONE]`.
//!
//! Order: a first chunk with `role`, reasoning deltas, content deltas, tool-call fragments (the
//! first fragment of an index carries `id`, `type` and `name`; later ones append to
//! `arguments`; several calls interleave round-robin unless `sequential_tool_calls`), a chunk
//! with `finish_reason`, the usage chunk (`choices: []`) when due, then `[DONE]`.

use serde_json::{Value, json};

use crate::script::{ChatReasoningField, ChatUsage, Reply, StopReason, StreamError, split_chars};
use crate::wire::{Ctx, Event, data_event, mark_endless, with_empty_deltas};

pub(super) fn render(reply: &Reply, ctx: &Ctx) -> Vec<Event> {
    let mut events = Vec::new();
    let chunk = |delta: Value, finish_reason: Option<&str>| {
        json!({
            "id": format!("chatcmpl-fake-{}", ctx.n),
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": ctx.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        })
    };
    let push = |events: &mut Vec<Event>, data: &Value| {
        events.push(Event { bytes: data_event(data), repeat: false });
    };

    push(&mut events, &chunk(json!({"role": "assistant", "content": ""}), None));

    if let Some(reasoning) = &reply.reasoning {
        let field = match reasoning.chat_field {
            ChatReasoningField::ReasoningContent => "reasoning_content",
            ChatReasoningField::Reasoning => "reasoning",
        };
        let deltas =
            with_empty_deltas(split_chars(&reasoning.text, reasoning.chunks), reply.empty_deltas);
        for delta in deltas {
            push(&mut events, &chunk(json!({ field: delta }), None));
        }
    }

    if let Some(deltas) = reply.text_deltas() {
        let mut delta_indexes = Vec::new();
        for delta in with_empty_deltas(deltas, reply.empty_deltas) {
            delta_indexes.push(events.len());
            push(&mut events, &chunk(json!({"content": delta}), None));
        }
        if reply.endless {
            mark_endless(&mut events, &delta_indexes);
        }
    }

    // One queue of fragments per call; then drain them round-robin (interleaved) or in order.
    let mut queues: Vec<Vec<Value>> =
        reply
            .tool_calls
            .iter()
            .enumerate()
            .map(|(index, call)| {
                let head = json!({
                    "index": index,
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": ""},
                });
                let fragments = with_empty_deltas(
                    split_chars(&call.arguments_text(), reply.arg_fragments),
                    reply.empty_deltas,
                );
                std::iter::once(head)
                    .chain(fragments.into_iter().map(
                        |fragment| json!({"index": index, "function": {"arguments": fragment}}),
                    ))
                    .collect()
            })
            .collect();
    let mut ordered = Vec::new();
    if reply.sequential_tool_calls {
        ordered = queues.into_iter().flatten().collect();
    } else {
        let rounds = queues.iter().map(Vec::len).max().unwrap_or(0);
        for round in 0..rounds {
            for queue in &mut queues {
                if let Some(fragment) = queue.get_mut(round) {
                    ordered.push(fragment.take());
                }
            }
        }
    }
    for fragment in ordered {
        push(&mut events, &chunk(json!({ "tool_calls": [fragment] }), None));
    }

    let finish_reason = match reply.stop_reason() {
        StopReason::EndTurn => "stop",
        StopReason::ToolUse => "tool_calls",
        StopReason::MaxTokens => "length",
    };
    let usage = usage(reply);
    let mut finish = chunk(json!({}), Some(finish_reason));
    if reply.chat_usage == ChatUsage::FinishChunk {
        finish["usage"] = usage.clone();
    }
    push(&mut events, &finish);
    let final_usage = match reply.chat_usage {
        ChatUsage::Auto => ctx.include_usage,
        ChatUsage::FinalChunk => true,
        ChatUsage::FinishChunk | ChatUsage::None => false,
    };
    if final_usage {
        let mut last = chunk(json!({}), None);
        last["choices"] = json!([]);
        last["usage"] = usage;
        push(&mut events, &last);
    }
    events.push(Event { bytes: b"data: [DONE]\n\n".to_vec(), repeat: false });
    events
}

/// A chunk carrying only `error`, as OpenAI-compatible servers report a failure mid-stream.
pub(super) fn error_event(error: &StreamError) -> Vec<u8> {
    let error_type = error.error_type.as_deref().unwrap_or("server_error");
    data_event(&json!({
        "error": {
            "message": error.message.as_deref().unwrap_or("fake model: scripted stream error"),
            "type": error_type,
            "code": error_type,
        }
    }))
}

fn usage(reply: &Reply) -> Value {
    let usage = reply.usage;
    json!({
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    })
}
