//! Anthropic Messages SSE: message_start with cache usage, ping, thinking with a signature,
//! text, tool_use with input_json_delta fragments, message_delta with the stop reason, and
//! message_stop.

use codecoder_test_support::{Reply, Script, StopReason, Usage};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::{Sse, one_request, request_body};

fn events(script: Script) -> Vec<(String, Value)> {
    let response = one_request(script, "/v1/messages?beta=true", &request_body());
    assert_eq!(response.status, 200);
    assert_eq!(response.header("request-id"), Some("req_fake_1"));
    assert!(response.complete);
    response
        .events()
        .iter()
        .map(|sse: &Sse| {
            let data = sse.json();
            assert_eq!(sse.event.as_deref(), data["type"].as_str());
            (sse.event.clone().unwrap(), data)
        })
        .collect()
}

#[test]
fn thinking_text_and_tool_use() {
    let script = Script::new().reply(
        Reply::text("I'll read it.")
            .chunks(2)
            .reasoning("Need the file.")
            .reasoning_chunks(2)
            .signature("EqQBCgIYAh-signature")
            .and_tool_call("toolu_01", "read_file", json!({"path": "ä.rs"}))
            .and_tool_call("toolu_02", "list", json!({}))
            .arg_fragments(3)
            .usage(Usage::tokens(2000, 50).cached(1500).cache_creation(100)),
    );
    let events = events(script);
    let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    let message = &events[0].1["message"];
    assert_eq!(message["id"], "msg_fake_1");
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["model"], "test-model");
    assert_eq!(
        message["usage"],
        json!({"input_tokens": 500, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1500, "output_tokens": 1})
    );
    assert_eq!(
        events[2].1["content_block"],
        json!({"type": "thinking", "thinking": "", "signature": ""})
    );
    assert_eq!(
        [&events[3].1["delta"], &events[4].1["delta"], &events[5].1["delta"]],
        [
            &json!({"type": "thinking_delta", "thinking": "Need th"}),
            &json!({"type": "thinking_delta", "thinking": "e file."}),
            &json!({"type": "signature_delta", "signature": "EqQBCgIYAh-signature"}),
        ]
    );
    assert_eq!(
        events[7].1,
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}})
    );
    assert_eq!(events[8].1["delta"], json!({"type": "text_delta", "text": "I'll re"}));
    assert_eq!(
        events[11].1["content_block"],
        json!({"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {}})
    );
    let partial: String = events[12..15]
        .iter()
        .map(|(_, data)| {
            assert_eq!(data["index"], 2);
            assert_eq!(data["delta"]["type"], "input_json_delta");
            data["delta"]["partial_json"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(serde_json::from_str::<Value>(&partial).unwrap(), json!({"path": "ä.rs"}));
    assert_eq!(events[16].1["content_block"]["id"], "toolu_02");
    assert_eq!(events[19].1, json!({"type": "content_block_stop", "index": 3}));
    assert_eq!(
        events[20].1,
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 50}})
    );
    assert_eq!(events[21].1, json!({"type": "message_stop"}));
}

#[test]
fn stop_reasons() {
    for (reply, expected) in [
        (Reply::text("done"), "end_turn"),
        (Reply::text("cut").stop(StopReason::MaxTokens), "max_tokens"),
        (Reply::tool_call("t", "n", json!({})), "tool_use"),
    ] {
        let events = events(Script::new().reply(reply));
        let (_, delta) = events.iter().find(|(name, _)| name == "message_delta").unwrap();
        assert_eq!(delta["delta"]["stop_reason"], expected);
    }
}

#[test]
fn default_signature_names_the_request() {
    let events = events(Script::new().reply(Reply::text("x").reasoning("y")));
    let signature = events
        .iter()
        .find(|(_, data)| data["delta"]["type"] == "signature_delta")
        .map(|(_, data)| data["delta"]["signature"].clone());
    assert_eq!(signature, Some(json!("sig_fake_1")));
}
