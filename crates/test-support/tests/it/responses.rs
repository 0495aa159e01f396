//! OpenAI Responses SSE: event order, complete items, reasoning with encrypted content, usage,
//! function-call argument fragments, and `response.incomplete` for max tokens.

use codecoder_test_support::{Reply, Script, StopReason, Usage};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::{Sse, one_request, request_body};

fn types(events: &[Sse]) -> Vec<String> {
    events
        .iter()
        .map(|sse| {
            let data = sse.json();
            // The `event:` line and the data's `type` always agree.
            assert_eq!(sse.event.as_deref(), data["type"].as_str());
            sse.event.clone().unwrap()
        })
        .collect()
}

#[test]
fn text_with_reasoning_and_usage() {
    let script = Script::new().reply(
        Reply::text("Hello, wörld!")
            .chunks(3)
            .reasoning("Think first.")
            .reasoning_chunks(2)
            .signature("enc-blob-1")
            .usage(Usage::tokens(1200, 40).cached(1000).reasoning(12)),
    );
    let response = one_request(script, "/v1/responses", &request_body());
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream; charset=utf-8"));
    assert_eq!(response.header("x-request-id"), Some("req_fake_1"));
    assert!(response.complete);
    let events = response.events();
    assert_eq!(
        types(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let data: Vec<Value> = events.iter().map(Sse::json).collect();
    let sequence: Vec<u64> = data.iter().map(|d| d["sequence_number"].as_u64().unwrap()).collect();
    assert_eq!(sequence, (0..18).collect::<Vec<u64>>());
    assert_eq!(data[0]["response"]["id"], "resp_fake_1");
    assert_eq!(data[0]["response"]["model"], "test-model");
    assert_eq!(data[0]["response"]["status"], "in_progress");

    let reasoning: String =
        data[4..6].iter().map(|d| d["delta"].as_str().unwrap()).collect::<Vec<_>>().concat();
    assert_eq!(reasoning, "Think first.");
    assert_eq!(
        data[8]["item"],
        json!({
            "id": "rs_fake_1_0",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Think first."}],
            "encrypted_content": "enc-blob-1",
        })
    );
    let deltas: Vec<&str> = data[11..14].iter().map(|d| d["delta"].as_str().unwrap()).collect();
    assert_eq!(deltas, ["Hello", ", wö", "rld!"]);
    for delta in &data[11..14] {
        assert_eq!(delta["item_id"], "msg_fake_1_1");
        assert_eq!(delta["output_index"], 1);
        assert_eq!(delta["content_index"], 0);
    }
    let message = json!({
        "id": "msg_fake_1_1",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Hello, wörld!", "annotations": []}],
    });
    assert_eq!(
        data[16],
        json!({"type": "response.output_item.done", "sequence_number": 16, "output_index": 1, "item": message})
    );
    let completed = &data[17]["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["output"], json!([data[8]["item"], message]));
    assert_eq!(
        completed["usage"],
        json!({
            "input_tokens": 1200,
            "input_tokens_details": {"cached_tokens": 1000},
            "output_tokens": 40,
            "output_tokens_details": {"reasoning_tokens": 12},
            "total_tokens": 1240,
        })
    );
}

#[test]
fn parallel_function_calls_are_complete_items() {
    let script = Script::new().reply(
        Reply::tool_call("call_1", "read_file", json!({"path": "a.rs"}))
            .and_tool_call("call_2", "exec_command", json!({"cmd": "ls -l", "timeout_ms": 1000}))
            .arg_fragments(4),
    );
    let response = one_request(script, "/responses", &request_body());
    let data: Vec<Value> = response.events().iter().map(Sse::json).collect();
    let added: Vec<&Value> =
        data.iter().filter(|d| d["type"] == "response.output_item.added").collect();
    assert_eq!(added.len(), 2);
    assert_eq!(
        added[0]["item"],
        json!({"id": "fc_fake_1_0", "type": "function_call", "status": "in_progress", "arguments": "", "call_id": "call_1", "name": "read_file"})
    );
    for (item_id, args) in [
        ("fc_fake_1_0", json!({"path": "a.rs"})),
        ("fc_fake_1_1", json!({"cmd": "ls -l", "timeout_ms": 1000})),
    ] {
        let fragments: Vec<&str> = data
            .iter()
            .filter(|d| {
                d["type"] == "response.function_call_arguments.delta" && d["item_id"] == item_id
            })
            .map(|d| d["delta"].as_str().unwrap())
            .collect();
        assert_eq!(fragments.len(), 4);
        let joined = fragments.concat();
        assert_eq!(serde_json::from_str::<Value>(&joined).unwrap(), args);
        let done = data
            .iter()
            .find(|d| {
                d["type"] == "response.function_call_arguments.done" && d["item_id"] == item_id
            })
            .unwrap();
        assert_eq!(done["arguments"], joined);
    }
    let items: Vec<&Value> = data
        .iter()
        .filter(|d| d["type"] == "response.output_item.done")
        .map(|d| &d["item"])
        .collect();
    assert_eq!(items[1]["status"], "completed");
    assert_eq!(items[1]["call_id"], "call_2");
    assert_eq!(items[1]["name"], "exec_command");
    assert_eq!(
        serde_json::from_str::<Value>(items[1]["arguments"].as_str().unwrap()).unwrap(),
        json!({"cmd": "ls -l", "timeout_ms": 1000})
    );
    let last = data.last().unwrap();
    assert_eq!(last["type"], "response.completed");
    assert_eq!(last["response"]["output"].as_array().unwrap().len(), 2);
}

#[test]
fn max_tokens_is_response_incomplete() {
    let script = Script::new()
        .reply(Reply::text("cut sh").stop(StopReason::MaxTokens).usage(Usage::tokens(5, 2)));
    let response = one_request(script, "/v1/responses", &request_body());
    let data: Vec<Value> = response.events().iter().map(Sse::json).collect();
    let last = data.last().unwrap();
    assert_eq!(last["type"], "response.incomplete");
    assert_eq!(last["response"]["status"], "incomplete");
    assert_eq!(last["response"]["incomplete_details"], json!({"reason": "max_output_tokens"}));
    assert_eq!(last["response"]["usage"]["output_tokens"], 2);
    assert_eq!(last["response"]["output"][0]["status"], "incomplete");
    assert!(!data.iter().any(|d| d["type"] == "response.completed"));
}

#[test]
fn raw_reasoning_streams_reasoning_text() {
    let script = Script::new().reply(Reply::text("ok").reasoning("raw thoughts").raw_reasoning());
    let response = one_request(script, "/v1/responses", &request_body());
    let data: Vec<Value> = response.events().iter().map(Sse::json).collect();
    let delta = data.iter().find(|d| d["type"] == "response.reasoning_text.delta").unwrap();
    assert_eq!(delta["delta"], "raw thoughts");
    let item = &data.iter().find(|d| d["type"] == "response.output_item.done").unwrap()["item"];
    assert_eq!(item["content"], json!([{"type": "reasoning_text", "text": "raw thoughts"}]));
    assert_eq!(item["encrypted_content"], "sig_fake_1");
    assert!(!data.iter().any(|d| d["type"] == "response.reasoning_summary_text.delta"));
}
