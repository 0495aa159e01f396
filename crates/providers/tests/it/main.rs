//! The adapters against the fake model server over real loopback sockets: the three wire APIs,
//! retries and Retry-After, the idle timeout, cancel closing the connection, request bodies and
//! headers, and no API key in any error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod fallback;
mod text_calls;

use std::time::{Duration, Instant};

use codecoder_kernel::{ModelClient, ModelRequest, ResponseEvent, ToolSpec};
use codecoder_protocol::{
    Message, MessageItem, Role, SessionId, StopReason, ToolCall, ToolCallId, ToolResult,
    ToolResultStatus, Usage,
};
use codecoder_providers::{HttpModelClient, ProviderConfig, WireApi};
use codecoder_test_support::{FakeModelServer, Fault, Reply, Script, Usage as FakeUsage};
use serde_json::json;

const KEY: &str = "sk-test-SECRET-0123456789";
const APIS: [WireApi; 3] = [WireApi::Responses, WireApi::Chat, WireApi::Anthropic];

fn config(server: &FakeModelServer, api: WireApi) -> ProviderConfig {
    // OPENAI_BASE_URL-style bases end in /v1; Anthropic's does not.
    let base = match api {
        WireApi::Anthropic => server.base_url(),
        WireApi::Responses | WireApi::Chat => format!("{}/v1", server.base_url()),
    };
    let mut config = ProviderConfig::new("fake", base, api, Some("FAKE_API_KEY"));
    config.request_max_retries = 2;
    config
}

fn client(config: ProviderConfig) -> HttpModelClient {
    HttpModelClient::new(config, &|key| (key == "FAKE_API_KEY").then(|| KEY.to_owned())).unwrap()
}

fn request(history: Vec<Message>) -> ModelRequest {
    ModelRequest {
        session_id: SessionId::new(),
        model: "fake-model".into(),
        instructions: "You are a test.".into(),
        sections: Vec::new(),
        history: history.into_iter().map(std::sync::Arc::new).collect(),
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file".into(),
            schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }],
        max_output_tokens: Some(512),
        output_schema: None,
        reasoning: Default::default(),
    }
}

/// Reads a stream to its end: the events, with deltas merged.
fn collect(client: &HttpModelClient, request: ModelRequest) -> Vec<ResponseEvent> {
    let stream = client.stream(request).unwrap();
    let mut out: Vec<ResponseEvent> = Vec::new();
    loop {
        let event = stream.events().recv_timeout(Duration::from_secs(20)).expect("an event");
        let end = matches!(event, ResponseEvent::Completed { .. } | ResponseEvent::Error(_));
        match (out.last_mut(), event) {
            (Some(ResponseEvent::TextDelta(a)), ResponseEvent::TextDelta(b)) => a.push_str(&b),
            (Some(ResponseEvent::ReasoningDelta(a)), ResponseEvent::ReasoningDelta(b)) => {
                a.push_str(&b)
            }
            (_, event) => out.push(event),
        }
        if end {
            return out;
        }
    }
}

fn text_of(events: &[ResponseEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ResponseEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn error_of(events: &[ResponseEvent]) -> String {
    match events.last() {
        Some(ResponseEvent::Error(err)) => err.to_string(),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn text_reasoning_and_usage_in_every_api() {
    for api in APIS {
        let script = Script::new().reply(
            Reply::text("Hello, wörld — ok")
                .chunks(5)
                .split_utf8()
                .reasoning("thinking…")
                .keep_alive()
                .empty_deltas()
                .usage(FakeUsage::tokens(120, 7).cached(100)),
        );
        let server = FakeModelServer::start(script).unwrap();
        let events =
            collect(&client(config(&server, api)), request(vec![Message::user_text("hi")]));
        assert_eq!(text_of(&events), "Hello, wörld — ok", "{api}");
        assert!(
            events
                .iter()
                .any(|e| matches!(e, ResponseEvent::ReasoningDelta(r) if r == "thinking…")),
            "{api}: {events:?}"
        );
        let usage = events.iter().find_map(|e| match e {
            ResponseEvent::Usage(u) => Some(*u),
            _ => None,
        });
        let usage = usage.unwrap();
        assert_eq!(
            (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens),
            (120, 100, 7),
            "{api}"
        );
        assert_eq!(
            events.last(),
            Some(&ResponseEvent::Completed { stop_reason: StopReason::EndTurn }),
            "{api}"
        );
    }
}

#[test]
fn parallel_tool_calls_with_fragmented_arguments_in_every_api() {
    for api in APIS {
        let script = Script::new().reply(
            Reply::tool_call("call_1", "read_file", json!({"path": "a.rs"}))
                .and_tool_call("call_2", "read_file", json!({"path": "b/ü.rs"}))
                .arg_fragments(4),
        );
        let server = FakeModelServer::start(script).unwrap();
        let events =
            collect(&client(config(&server, api)), request(vec![Message::user_text("read")]));
        for (id, path) in [("call_1", "a.rs"), ("call_2", "b/ü.rs")] {
            let id = ToolCallId::new(id);
            assert!(
                events.contains(&ResponseEvent::ToolCallStart {
                    id: id.clone(),
                    name: "read_file".into()
                }),
                "{api}: {events:?}"
            );
            let args: String = events
                .iter()
                .filter_map(|e| match e {
                    ResponseEvent::ToolCallArgsDelta { id: i, delta } if *i == id => {
                        Some(delta.as_str())
                    }
                    _ => None,
                })
                .collect();
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(&args).unwrap(),
                json!({"path": path}),
                "{api}"
            );
            assert!(events.contains(&ResponseEvent::ToolCallDone { id }), "{api}");
        }
        assert_eq!(
            events.last(),
            Some(&ResponseEvent::Completed { stop_reason: StopReason::ToolUse }),
            "{api}"
        );
    }
}

#[test]
fn retries_honour_retry_after_then_succeed() {
    for api in APIS {
        let script = Script::new()
            .reply(Fault::rate_limited(1))
            .reply(Fault::status(500))
            .reply(Reply::text("ok"));
        let server = FakeModelServer::start(script).unwrap();
        let started = Instant::now();
        let events =
            collect(&client(config(&server, api)), request(vec![Message::user_text("hi")]));
        assert_eq!(text_of(&events), "ok", "{api}: {events:?}");
        assert!(
            started.elapsed() >= Duration::from_secs(1),
            "{api}: Retry-After: 1 was not honoured"
        );
        assert_eq!(server.requests().len(), 3, "{api}");
    }
}

#[test]
fn overloaded_and_hang_up_are_retried() {
    let script =
        Script::new().reply(Fault::overloaded()).reply(Fault::hang_up()).reply(Reply::text("fine"));
    let server = FakeModelServer::start(script).unwrap();
    let events = collect(
        &client(config(&server, WireApi::Anthropic)),
        request(vec![Message::user_text("hi")]),
    );
    assert_eq!(text_of(&events), "fine", "{events:?}");
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn exhausted_retries_say_status_type_message_and_request_id() {
    let script = Script::new()
        .reply(Fault::status(503).header("x-request-id", "req_123").message("try later"))
        .reply(Fault::status(503).header("x-request-id", "req_124").message("try later"));
    let server = FakeModelServer::start(script).unwrap();
    let mut config = config(&server, WireApi::Chat);
    config.request_max_retries = 1;
    // Without tools: a request with tools failing before content is tried unstreamed.
    let mut no_tools = request(vec![Message::user_text("hi")]);
    no_tools.tools.clear();
    let events = collect(&client(config), no_tools);
    let error = error_of(&events);
    assert!(error.starts_with("HTTP 503"), "{error}");
    assert!(error.contains("try later") && error.contains("(request id "), "{error}");
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn unauthorized_names_the_variable_and_never_the_key() {
    for api in APIS {
        let script = Script::new()
            .reply(Fault::status(401).message(format!("Incorrect API key provided: {KEY}")));
        let server = FakeModelServer::start(script).unwrap();
        let events =
            collect(&client(config(&server, api)), request(vec![Message::user_text("hi")]));
        let error = error_of(&events);
        assert!(error.contains("HTTP 401") && error.contains("FAKE_API_KEY"), "{api}: {error}");
        assert!(!error.contains(KEY), "{api}: the key leaked: {error}");
        assert_eq!(server.requests().len(), 1, "{api}: 401 is not retried");
        let sent = server.requests()[0].clone();
        match api {
            WireApi::Anthropic => {
                assert_eq!(sent.header("x-api-key"), Some(KEY));
                assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
            }
            WireApi::Responses | WireApi::Chat => {
                assert_eq!(sent.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
            }
        }
    }
}

#[test]
fn a_stream_broken_after_events_is_an_error_not_a_silent_retry() {
    for api in APIS {
        // Enough events that text has reached the client before the drop.
        let script = Script::new()
            .reply(Reply::text("a partial answer here").chunks(10).drop_after(8))
            .reply(Reply::text("again"));
        let server = FakeModelServer::start(script).unwrap();
        let events =
            collect(&client(config(&server, api)), request(vec![Message::user_text("hi")]));
        assert!(!text_of(&events).is_empty(), "{api}: {events:?}");
        let error = error_of(&events);
        assert!(error.contains("connection") || error.contains("ended"), "{api}: {error}");
        assert!(!events.iter().any(|e| matches!(e, ResponseEvent::Completed { .. })), "{api}");
        assert!(
            matches!(events.last(), Some(ResponseEvent::Error(err)) if err.retryable),
            "{api}: a broken stream is retryable for the kernel"
        );
        assert_eq!(
            server.requests().len(),
            1,
            "{api}: the adapter must not retry after emitting events"
        );
    }
}

#[test]
fn an_error_event_mid_stream_is_reported() {
    for api in APIS {
        let script = Script::new().reply(Reply::text("abc").chunks(3).error_after_with(
            2,
            "invalid_request_error",
            "bad input",
        ));
        let server = FakeModelServer::start(script).unwrap();
        // Without tools: a request with tools failing before content is tried unstreamed.
        let mut no_tools = request(vec![Message::user_text("hi")]);
        no_tools.tools.clear();
        let events = collect(&client(config(&server, api)), no_tools);
        let error = error_of(&events);
        assert!(
            error.contains("the model stream failed") && error.contains("bad input"),
            "{api}: {error}"
        );
        assert_eq!(server.requests().len(), 1, "{api}: a non-retryable error is not retried");
    }
    // A retryable error event before any output is retried.
    let script = Script::new()
        .reply(Reply::text("abc").error_after_with(1, "overloaded_error", "busy"))
        .reply(Reply::text("ok"));
    let server = FakeModelServer::start(script).unwrap();
    let events = collect(
        &client(config(&server, WireApi::Anthropic)),
        request(vec![Message::user_text("hi")]),
    );
    assert_eq!(text_of(&events), "ok", "{events:?}");
}

#[test]
fn the_idle_timeout_breaks_a_silent_stream() {
    let script = Script::new().reply(Reply::text("late").stall(0, 10_000));
    let server = FakeModelServer::start(script).unwrap();
    let mut config = config(&server, WireApi::Chat);
    config.request_max_retries = 0;
    config.stream_idle_timeout_ms = 300;
    let started = Instant::now();
    let events = collect(&client(config), request(vec![Message::user_text("hi")]));
    assert!(error_of(&events).contains("sent nothing"), "{events:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
}

#[test]
fn dropping_the_stream_closes_the_connection_at_once() {
    for api in APIS {
        let server = FakeModelServer::start(Script::new().reply(Reply::endless_text())).unwrap();
        let client = client(config(&server, api));
        let stream = client.stream(request(vec![Message::user_text("go on forever")])).unwrap();
        for _ in 0..10 {
            let event = stream.events().recv_timeout(Duration::from_secs(10)).unwrap();
            assert!(!matches!(event, ResponseEvent::Error(_)), "{api}: {event:?}");
        }
        let started = Instant::now();
        drop(stream);
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{api}: drop took {:?}",
            started.elapsed()
        );
        server.wait_for_disconnects(1, Duration::from_secs(5)).unwrap();
    }
}

#[test]
fn a_three_step_conversation_sends_exactly_the_neutral_history() {
    for api in APIS {
        let script = Script::new()
            .reply(
                Reply::tool_call("call_1", "read_file", json!({"path": "a.rs"}))
                    .reasoning("need it")
                    .signature("sig_1"),
            )
            .reply(Reply::text("done"));
        let server = FakeModelServer::start(script).unwrap();
        let client = client(config(&server, api));
        let mut history = vec![Message::user_text("read a.rs")];
        let first = collect(&client, request(history.clone()));
        assert!(
            first.contains(&ResponseEvent::ToolCallDone { id: ToolCallId::new("call_1") }),
            "{api}"
        );
        let reasoning = first.iter().find_map(|e| match e {
            ResponseEvent::ReasoningDone { signature, encrypted_content } => {
                Some((signature.clone(), encrypted_content.clone()))
            }
            _ => None,
        });
        let (signature, encrypted_content) = reasoning.unwrap_or_default();
        history.push(Message::new(
            Role::Assistant,
            vec![
                MessageItem::Reasoning(codecoder_protocol::Reasoning {
                    text: "need it".into(),
                    signature,
                    encrypted_content,
                }),
                MessageItem::ToolCall(ToolCall {
                    id: ToolCallId::new("call_1"),
                    name: "read_file".into(),
                    args: json!({"path": "a.rs"}),
                }),
            ],
        ));
        history.push(Message::new(
            Role::Tool,
            vec![MessageItem::ToolResult(ToolResult::text(
                ToolCallId::new("call_1"),
                ToolResultStatus::Success,
                "fn main() {}",
            ))],
        ));
        let second_request = request(history);
        let second = collect(&client, second_request.clone());
        assert_eq!(text_of(&second), "done", "{api}");
        let sent = server.requests();
        assert_eq!(sent.len(), 2, "{api}");
        let body = &sent[1].body;
        assert_eq!(body["model"], "fake-model", "{api}");
        assert_eq!(body["stream"], true, "{api}");
        match api {
            WireApi::Responses => {
                let input = body["input"].as_array().unwrap();
                assert_eq!(input[0]["content"][0]["text"], "read a.rs");
                assert!(
                    input
                        .iter()
                        .any(|i| i["type"] == "reasoning" && i["encrypted_content"].is_string()),
                    "{input:?}"
                );
                let call = input.iter().find(|i| i["type"] == "function_call").unwrap();
                assert_eq!(
                    (call["call_id"].as_str(), call["name"].as_str()),
                    (Some("call_1"), Some("read_file"))
                );
                let output = input.iter().find(|i| i["type"] == "function_call_output").unwrap();
                assert_eq!(output["output"], "fn main() {}");
                assert_eq!(body["prompt_cache_key"], second_request.session_id.to_string());
            }
            WireApi::Chat => {
                let messages = body["messages"].as_array().unwrap();
                assert_eq!(messages[0], json!({"role": "system", "content": "You are a test."}));
                assert_eq!(messages[2]["tool_calls"][0]["id"], "call_1");
                assert_eq!(
                    messages[3],
                    json!({"role": "tool", "tool_call_id": "call_1", "content": "fn main() {}"})
                );
            }
            WireApi::Anthropic => {
                let messages = body["messages"].as_array().unwrap();
                let assistant = messages[1]["content"].as_array().unwrap();
                assert_eq!(assistant[0]["type"], "thinking");
                assert_eq!(
                    assistant[0]["signature"], "sig_1",
                    "the signature must go back unchanged"
                );
                assert_eq!(assistant[1]["type"], "tool_use");
                assert_eq!(messages[2]["content"][0]["tool_use_id"], "call_1");
                assert_eq!(body["max_tokens"], 512);
            }
        }
    }
}

#[test]
fn usage_is_estimated_when_the_provider_sends_none() {
    let script = Script::new().reply(
        Reply::text("four words right here").chat_usage(codecoder_test_support::ChatUsage::None),
    );
    let server = FakeModelServer::start(script).unwrap();
    let events = collect(
        &client(config(&server, WireApi::Chat)),
        request(vec![Message::user_text("count")]),
    );
    assert!(
        !events.iter().any(|e| matches!(e, ResponseEvent::Usage(_))),
        "an estimate is not passed off as reported usage: {events:?}"
    );
    let usage: Usage = events
        .iter()
        .find_map(|e| match e {
            ResponseEvent::UsageEstimate(u) => Some(*u),
            _ => None,
        })
        .expect("an estimated usage");
    assert!(usage.input_tokens > 10 && (3..=8).contains(&usage.output_tokens), "{usage:?}");
}

#[test]
fn stream_false_turns_a_whole_answer_into_the_same_events() {
    for api in APIS {
        let reply = || {
            Reply::text("Reading it.")
                .reasoning("plan")
                .signature("SIG_1")
                .and_tool_call("call_1", "read_file", json!({"path": "a.rs"}))
                .usage(FakeUsage::tokens(50, 9))
        };
        let server = FakeModelServer::start(Script::new().reply(reply()).reply(reply())).unwrap();
        let streamed =
            collect(&client(config(&server, api)), request(vec![Message::user_text("hi")]));
        let mut whole_config = config(&server, api);
        whole_config.stream = false;
        let whole = collect(&client(whole_config), request(vec![Message::user_text("hi")]));
        let requests = server.requests();
        assert_eq!(requests[1].body["stream"], false, "{api}");
        assert_eq!(requests[1].header("accept"), Some("application/json"), "{api}");
        assert!(requests[1].body.get("stream_options").is_none(), "{api}");
        assert_eq!(whole, streamed, "{api}: a whole answer gives the stream's events");
        assert!(
            whole.iter().any(
                |e| matches!(e, ResponseEvent::ToolCallDone { id } if id.as_str() == "call_1")
            ),
            "{api}: {whole:?}"
        );
        assert_eq!(
            whole.last(),
            Some(&ResponseEvent::Completed { stop_reason: StopReason::ToolUse }),
            "{api}"
        );
    }
}

#[test]
fn a_refused_streamed_request_with_tools_is_sent_again_without_streaming() {
    let server = FakeModelServer::start(
        Script::new()
            .refuse_streamed_tools()
            .reply(Reply::text("first"))
            .reply(Reply::text("second")),
    )
    .unwrap();
    let client = client(config(&server, WireApi::Chat));
    let first = collect(&client, request(vec![Message::user_text("hi")]));
    assert_eq!(text_of(&first), "first");
    let warnings: Vec<&ResponseEvent> =
        first.iter().filter(|e| matches!(e, ResponseEvent::Warning(_))).collect();
    assert_eq!(warnings.len(), 1, "{first:?}");
    let second = collect(&client, request(vec![Message::user_text("again")]));
    assert_eq!(text_of(&second), "second");
    assert!(!second.iter().any(|e| matches!(e, ResponseEvent::Warning(_))), "said once");
    let streams: Vec<bool> =
        server.requests().iter().map(|r| r.body["stream"].as_bool().unwrap()).collect();
    // The refused stream, its retry unstreamed, then the next request unstreamed from the start.
    assert_eq!(streams, [true, false, false]);
}

#[test]
fn reasoning_settings_reach_the_wire() {
    use codecoder_providers::{ReasoningEffort, ReasoningSettings};
    for api in APIS {
        let server = FakeModelServer::start(Script::new().reply(Reply::text("ok"))).unwrap();
        let mut req = request(vec![Message::user_text("hi")]);
        req.model = "claude-sonnet-4-5".into();
        req.reasoning = ReasoningSettings {
            effort: Some(ReasoningEffort::Low),
            ..ReasoningSettings::default()
        };
        collect(&client(config(&server, api)), req);
        let body = &server.requests()[0].body;
        match api {
            WireApi::Responses => {
                assert_eq!(body["reasoning"], json!({"effort": "low", "summary": "auto"}));
            }
            WireApi::Chat => assert_eq!(body["reasoning_effort"], "low"),
            WireApi::Anthropic => {
                assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 4096}));
                assert!(body["max_tokens"].as_u64().unwrap() > 4096);
            }
        }
    }
}

/// The ids of this process's threads whose name is exactly `name`.
fn threads_named(name: &str) -> std::collections::BTreeSet<String> {
    let mut ids = std::collections::BTreeSet::new();
    for entry in fs_err::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = fs_err::read_to_string(entry.path().join("comm")).unwrap_or_default();
        if comm.trim_end() == name {
            ids.insert(entry.file_name().to_string_lossy().into_owned());
        }
    }
    ids
}

#[test]
fn sequential_requests_reuse_the_provider_threads() {
    const REQUESTS: usize = 20;
    let mut script = Script::new();
    for _ in 0..REQUESTS {
        script = script.reply(Reply::text("ok"));
    }
    let server = FakeModelServer::start(script).unwrap();
    let mut config = config(&server, WireApi::Responses);
    // Thread names are unique to this test: "provider-reuse" and "provider-reuse-idle" (which
    // the kernel truncates to 15 bytes).
    config.id = "reuse".into();
    let client = client(config);
    let mut workers = std::collections::BTreeSet::new();
    let mut watchdogs = std::collections::BTreeSet::new();
    for _ in 0..REQUESTS {
        let events = collect(&client, request(vec![Message::user_text("hi")]));
        assert!(matches!(events.last(), Some(ResponseEvent::Completed { .. })), "{events:?}");
        workers.extend(threads_named("provider-reuse"));
        watchdogs.extend(threads_named("provider-reuse-"));
    }
    // A thread per request would give 20 ids; workers go back to an idle list (at most 4 wait
    // there, and a request that finds none idle starts one).
    assert!(!workers.is_empty() && workers.len() <= 5, "worker threads: {workers:?}");
    assert_eq!(watchdogs.len(), 1, "one idle watchdog per client: {watchdogs:?}");
    drop(client);
    assert!(threads_named("provider-reuse").is_empty(), "dropping the client joins its workers");
    assert!(threads_named("provider-reuse-").is_empty(), "and its watchdog");
}
