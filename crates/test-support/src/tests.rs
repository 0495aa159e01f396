//! Unit tests: text splitting, path routing, error bodies, rendering details that the socket
//! tests do not pin down (determinism, interleaving order, defaults), request keep-alive rules
//! and the script's JSON defaults.

use pretty_assertions::assert_eq;
use serde_json::json;

use crate::http::Request;
use crate::script::split_chars;
use crate::wire::{self, Api, Ctx};
use crate::{Fault, Reply, Script, Step, StopReason, Text};

#[test]
fn split_chars_keeps_characters_whole() {
    assert_eq!(split_chars("abcdefg", 3), ["abc", "de", "fg"]);
    assert_eq!(split_chars("äöü", 2), ["äö", "ü"]);
    assert_eq!(split_chars("ab", 5), ["a", "b"], "at most one piece per character");
    assert_eq!(split_chars("ab", 0), ["ab"], "at least one piece");
    assert_eq!(split_chars("", 3), [""]);
    assert_eq!(split_chars("🌍x", 2).concat(), "🌍x");
}

#[test]
fn paths_choose_the_api() {
    assert_eq!(Api::from_path("/v1/responses"), Some(Api::Responses));
    assert_eq!(Api::from_path("/responses"), Some(Api::Responses));
    assert_eq!(Api::from_path("/v1/chat/completions"), Some(Api::Chat));
    assert_eq!(Api::from_path("/chat/completions/"), Some(Api::Chat));
    assert_eq!(Api::from_path("/v1/messages"), Some(Api::Anthropic));
    assert_eq!(Api::from_path("/messages"), Some(Api::Anthropic));
    assert_eq!(Api::from_path("/v1/models"), None);
    assert_eq!(Api::from_path("/"), None);
}

#[test]
fn error_bodies_follow_each_api() {
    assert_eq!(
        wire::error_body(Some(Api::Anthropic), 529, None, "Overloaded", 7),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_fake_7"})
    );
    assert_eq!(
        wire::error_body(Some(Api::Anthropic), 500, Some("custom"), "m", 1)["error"]["type"],
        "custom"
    );
    assert_eq!(
        wire::error_body(Some(Api::Responses), 500, None, "m", 1),
        json!({"error": {"message": "m", "type": "server_error", "param": null, "code": null}})
    );
    assert_eq!(
        wire::error_body(Some(Api::Chat), 401, None, "m", 1)["error"]["code"],
        "invalid_api_key"
    );
}

#[test]
fn ctx_reads_model_and_include_usage() {
    let ctx = Ctx::from_body(3, &json!({"model": "m", "stream_options": {"include_usage": true}}));
    assert_eq!((ctx.n, ctx.model.as_str(), ctx.include_usage), (3, "m", true));
    let ctx = Ctx::from_body(1, &serde_json::Value::Null);
    assert_eq!((ctx.model.as_str(), ctx.include_usage), ("fake-model", false));
    assert_eq!(ctx.default_signature(), "sig_fake_1");
}

#[test]
fn rendering_is_deterministic() {
    let reply =
        Reply::text("héllo").chunks(2).reasoning("r").and_tool_call("c", "t", json!({"a": 1}));
    let ctx = Ctx::from_body(1, &json!({"model": "m"}));
    for api in [Api::Responses, Api::Chat, Api::Anthropic] {
        assert_eq!(wire::render(api, &reply, &ctx), wire::render(api, &reply, &ctx));
        let events = wire::render(api, &reply, &ctx);
        assert!(events.iter().all(|event| event.bytes.ends_with(b"\n\n")));
        assert!(events.iter().all(|event| !event.repeat));
    }
}

#[test]
fn endless_marks_only_the_last_text_delta() {
    let ctx = Ctx::from_body(1, &json!({}));
    for api in [Api::Responses, Api::Chat, Api::Anthropic] {
        let events = wire::render(api, &Reply::endless_text().chunks(1), &ctx);
        let repeats: Vec<&wire::Event> = events.iter().filter(|event| event.repeat).collect();
        assert_eq!(repeats.len(), 1, "{api:?}");
        assert!(String::from_utf8_lossy(&repeats[0].bytes).contains("tick "), "{api:?}");
    }
}

#[test]
fn stop_reason_defaults_from_tool_calls() {
    assert_eq!(Reply::text("x").stop_reason(), StopReason::EndTurn);
    assert_eq!(Reply::tool_call("c", "n", json!({})).stop_reason(), StopReason::ToolUse);
    assert_eq!(
        Reply::tool_call("c", "n", json!({})).stop(StopReason::MaxTokens).stop_reason(),
        StopReason::MaxTokens
    );
}

#[test]
fn raw_arguments_are_sent_verbatim() {
    let reply = Reply::empty().and_raw_tool_call("c", "n", "{\"path\": tru");
    assert_eq!(reply.tool_calls[0].arguments_text(), "{\"path\": tru");
    // Keys in sorted order: the text is the same whether or not serde_json keeps insertion order.
    let reply = Reply::tool_call("c", "n", json!({"a": [true], "b": 1}));
    assert_eq!(reply.tool_calls[0].arguments_text(), r#"{"a":[true],"b":1}"#);
}

fn request(http_1_0: bool, connection: Option<&str>) -> Request {
    Request {
        method: "POST".to_owned(),
        path: "/".to_owned(),
        query: None,
        http_1_0,
        headers: connection
            .map(|value| vec![("connection".to_owned(), value.to_owned())])
            .unwrap_or_default(),
        body: Vec::new(),
    }
}

#[test]
fn keep_alive_rules() {
    assert!(request(false, None).keep_alive());
    assert!(!request(false, Some("close")).keep_alive());
    assert!(!request(false, Some("Keep-Alive, Close")).keep_alive());
    assert!(!request(true, None).keep_alive());
    assert!(request(true, Some("keep-alive")).keep_alive());
}

#[test]
fn json_defaults() {
    let script = Script::from_json(
        r#"{"steps": [
            {"type": "reply", "text": ["a", "b"]},
            {"type": "reply", "tool_calls": [{"id": "c", "name": "n"}]},
            {"type": "fault", "status": 429, "retry_after": 0}
        ]}"#,
    )
    .unwrap();
    let Step::Reply(first) = &script.steps[0] else { panic!("{script:?}") };
    assert_eq!(first.text, Some(Text::Chunks(vec!["a".to_owned(), "b".to_owned()])));
    assert_eq!((first.chunks, first.arg_fragments, first.split_pause_ms), (1, 1, 10));
    let Step::Reply(second) = &script.steps[1] else { panic!("{script:?}") };
    assert_eq!(second.tool_calls[0].arguments, json!({}));
    assert_eq!(script.steps[2], Step::Fault(Fault::rate_limited(0)));
    assert!(script.when_exhausted.is_none());
    // Defaults are left out when serializing.
    assert_eq!(
        serde_json::to_value(Script::new().reply(Reply::text("x"))).unwrap(),
        json!({"steps": [{"type": "reply", "text": "x"}]})
    );
}

#[test]
fn named_events_put_type_first() {
    let ctx = Ctx::from_body(1, &json!({}));
    let events = wire::render(Api::Anthropic, &Reply::text("x"), &ctx);
    assert!(
        events[0]
            .bytes
            .starts_with(b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{")
    );
    assert_eq!(
        events.last().map(|e| e.bytes.as_slice()),
        Some(&b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"[..])
    );
    let events = wire::render(Api::Responses, &Reply::text("x"), &ctx);
    assert!(events[1].bytes.starts_with(
        b"event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"sequence_number\":1,"
    ));
}

#[test]
fn whole_answers_say_what_the_stream_says() {
    let ctx = Ctx::from_body(2, &json!({"model": "m", "stream": false}));
    let reply = Reply::text("hello").reasoning("think").signature("SIG").and_tool_call(
        "call_1",
        "read_file",
        json!({"path": "a"}),
    );
    let chat = wire::whole_answer(Api::Chat, &reply, &ctx);
    let message = &chat["choices"][0]["message"];
    assert_eq!(message["content"], "hello");
    assert_eq!(message["reasoning_content"], "think");
    assert_eq!(message["tool_calls"][0]["id"], "call_1");
    assert_eq!(message["tool_calls"][0]["function"]["arguments"], r#"{"path":"a"}"#);
    assert_eq!(chat["choices"][0]["finish_reason"], "tool_calls");
    assert!(chat["usage"].is_object(), "a whole chat answer carries usage");

    let anthropic = wire::whole_answer(Api::Anthropic, &reply, &ctx);
    assert_eq!(
        anthropic["content"],
        json!([
            {"type": "thinking", "thinking": "think", "signature": "SIG"},
            {"type": "text", "text": "hello"},
            {"type": "tool_use", "id": "call_1", "name": "read_file", "input": {"path": "a"}},
        ])
    );
    assert_eq!(anthropic["stop_reason"], "tool_use");

    let responses = wire::whole_answer(Api::Responses, &reply, &ctx);
    assert_eq!(responses["status"], "completed");
    let types: Vec<&str> = responses["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["reasoning", "message", "function_call"]);
    assert_eq!(responses["output"][0]["encrypted_content"], "SIG");
}
