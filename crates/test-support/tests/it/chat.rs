//! Chat Completions SSE: the role chunk, reasoning and content deltas, tool-call fragments
//! interleaved by index, finish reasons, usage placement, keep-alive comments and `[DONE]`.

use codecoder_test_support::{ChatReasoningField, ChatUsage, Reply, Script, StopReason, Usage};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::{Response, Sse, one_request, request_body};

fn chunks(response: &Response) -> Vec<Value> {
    let events = response.events();
    assert_eq!(events.last().unwrap().data, "[DONE]", "the stream ends with [DONE]");
    assert!(events.iter().all(|sse| sse.event.is_none()), "chat events have no event: line");
    events[..events.len() - 1].iter().map(Sse::json).collect()
}

fn deltas<'a>(chunks: &'a [Value], field: &str) -> Vec<&'a str> {
    chunks.iter().filter_map(|c| c["choices"][0]["delta"][field].as_str()).collect()
}

#[test]
fn text_reasoning_finish_and_usage_chunk() {
    let script = Script::new().reply(
        Reply::text("Grüße aus dem Test")
            .chunks(4)
            .reasoning("hmm")
            .usage(Usage::tokens(300, 20).cached(256).reasoning(7)),
    );
    let response = one_request(script, "/v1/chat/completions", &request_body());
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream; charset=utf-8"));
    let chunks = chunks(&response);
    for chunk in &chunks {
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["id"], "chatcmpl-fake-1");
        assert_eq!(chunk["model"], "test-model");
    }
    assert_eq!(chunks[0]["choices"][0]["delta"], json!({"role": "assistant", "content": ""}));
    assert_eq!(deltas(&chunks, "reasoning_content"), ["hmm"]);
    assert_eq!(deltas(&chunks, "content"), ["", "Grüße", " aus ", "dem ", "Test"]);
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    assert!(chunks[..chunks.len() - 2].iter().all(|c| c["choices"][0]["finish_reason"].is_null()));
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(
        usage["usage"],
        json!({
            "prompt_tokens": 300,
            "completion_tokens": 20,
            "total_tokens": 320,
            "prompt_tokens_details": {"cached_tokens": 256},
            "completion_tokens_details": {"reasoning_tokens": 7},
        })
    );
}

#[test]
fn parallel_tool_calls_interleave_by_index() {
    let args = [
        json!({"path": "src/main.rs"}),
        json!({"pattern": "fn main", "glob": "*.rs"}),
        json!({"cmd": ["cargo", "test"]}),
    ];
    let script = Script::new().reply(
        Reply::tool_call("call_a", "read", args[0].clone())
            .and_tool_call("call_b", "grep", args[1].clone())
            .and_tool_call("call_c", "bash", args[2].clone())
            .arg_fragments(3),
    );
    let response = one_request(script, "/chat/completions", &request_body());
    let chunks = chunks(&response);
    let fragments: Vec<&Value> =
        chunks.iter().filter_map(|c| c["choices"][0]["delta"]["tool_calls"].get(0)).collect();
    let indexes: Vec<u64> = fragments.iter().map(|f| f["index"].as_u64().unwrap()).collect();
    assert_eq!(indexes, [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]);
    for (index, (id, name)) in
        [("call_a", "read"), ("call_b", "grep"), ("call_c", "bash")].iter().enumerate()
    {
        let mine: Vec<&&Value> = fragments.iter().filter(|f| f["index"] == index).collect();
        assert_eq!(mine[0]["id"], *id);
        assert_eq!(mine[0]["type"], "function");
        assert_eq!(mine[0]["function"]["name"], *name);
        assert!(
            mine[1..].iter().all(|f| f.get("id").is_none() && f["function"].get("name").is_none())
        );
        let joined: String =
            mine.iter().map(|f| f["function"]["arguments"].as_str().unwrap()).collect();
        assert_eq!(serde_json::from_str::<Value>(&joined).unwrap(), args[index]);
    }
    let finish = chunks.iter().find(|c| !c["choices"][0]["finish_reason"].is_null()).unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
}

#[test]
fn sequential_tool_calls_do_not_interleave() {
    let script = Script::new().reply(
        Reply::tool_call("c1", "a", json!({"x": 1}))
            .and_tool_call("c2", "b", json!({"y": 2}))
            .arg_fragments(2)
            .sequential_tool_calls(),
    );
    let chunks = chunks(&one_request(script, "/v1/chat/completions", &request_body()));
    let indexes: Vec<u64> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["index"].as_u64())
        .collect();
    assert_eq!(indexes, [0, 0, 0, 1, 1, 1]);
}

#[test]
fn usage_placement_follows_the_request_and_the_script() {
    let no_usage_requested = json!({"model": "m", "stream": true});
    let script = Script::new().reply(Reply::text("a").usage(Usage::tokens(1, 1)));
    let chunks_auto = chunks(&one_request(script, "/v1/chat/completions", &no_usage_requested));
    assert!(chunks_auto.iter().all(|c| c.get("usage").is_none()));

    let script = Script::new()
        .reply(Reply::text("a").usage(Usage::tokens(3, 4)).chat_usage(ChatUsage::FinishChunk));
    let chunks_finish = chunks(&one_request(script, "/v1/chat/completions", &request_body()));
    let last = chunks_finish.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert_eq!(last["usage"]["prompt_tokens"], 3);
    assert_eq!(last["usage"]["completion_tokens"], 4);

    let script = Script::new().reply(Reply::text("a").chat_usage(ChatUsage::FinalChunk));
    let chunks_final = chunks(&one_request(script, "/v1/chat/completions", &no_usage_requested));
    assert_eq!(chunks_final.last().unwrap()["choices"], json!([]));
}

#[test]
fn openrouter_reasoning_field_max_tokens_empty_deltas_and_keep_alive() {
    let script = Script::new().reply(
        Reply::text("ab")
            .chunks(2)
            .reasoning("r")
            .chat_reasoning_field(ChatReasoningField::Reasoning)
            .stop(StopReason::MaxTokens)
            .empty_deltas()
            .keep_alive(),
    );
    let response = one_request(script, "/v1/chat/completions", &request_body());
    let chunks = chunks(&response);
    assert_eq!(deltas(&chunks, "reasoning"), ["", "r"]);
    assert!(deltas(&chunks, "reasoning_content").is_empty());
    assert_eq!(deltas(&chunks, "content"), ["", "", "a", "", "b"]);
    let finish = chunks.iter().find(|c| !c["choices"][0]["finish_reason"].is_null()).unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "length");
    // One comment before every event ([DONE] included).
    assert_eq!(response.comments(), vec!["keep-alive"; chunks.len() + 1]);
    assert!(response.text().starts_with(": keep-alive\n\ndata: "));
}
