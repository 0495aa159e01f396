//! The fallback by behaviour: a streamed request that offers tools and fails before any
//! content (any error status, a stream that ends early or breaks, an error event) is sent once
//! more without streaming; what worked is remembered for the session and in the memory; what
//! an unstreamed request would meet the same (404, a missing model, a context overflow) is not
//! tried again; and the errors that name the server and the model.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use codecoder_kernel::ResponseEvent;
use codecoder_protocol::Message;
use codecoder_providers::{HttpModelClient, ProviderMemory, ServerKey, WireApi};
use codecoder_test_support::{FakeModelServer, Fault, Reply, Script, Step};

use crate::{client, collect, config, error_of, request, text_of};

/// A memory held in this process: (provider, base URL, model) triples.
#[derive(Debug, Default)]
struct Memory {
    entries: Mutex<BTreeSet<(String, String, String)>>,
}

impl Memory {
    fn entries(&self) -> Vec<(String, String, String)> {
        self.entries.lock().unwrap().iter().cloned().collect()
    }
}

impl ProviderMemory for Memory {
    fn unstreamed_tools(&self, server: &ServerKey<'_>) -> bool {
        self.entries.lock().unwrap().contains(&(
            server.provider.to_owned(),
            server.base_url.to_owned(),
            server.model.to_owned(),
        ))
    }

    fn remember_unstreamed_tools(&self, server: &ServerKey<'_>) -> std::io::Result<()> {
        self.entries.lock().unwrap().insert((
            server.provider.to_owned(),
            server.base_url.to_owned(),
            server.model.to_owned(),
        ));
        Ok(())
    }

    fn location(&self) -> &str {
        "the test's memory"
    }
}

fn warnings(events: &[ResponseEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            ResponseEvent::Warning(w) => Some(w.clone()),
            _ => None,
        })
        .collect()
}

fn streams(server: &FakeModelServer) -> Vec<bool> {
    server.requests().iter().map(|r| r.body["stream"].as_bool().unwrap()).collect()
}

/// The ways a server that cannot stream tool calls fails a streamed request that offers them.
fn failure_shapes() -> Vec<(&'static str, Step)> {
    vec![
        ("a 500 in any words", Fault::status(500).message("llama_decode returned -1").into()),
        ("a 400 in any words", Fault::status(400).message("unsupported parameter").into()),
        ("a stream that ends before its end", Reply::text("never sent").end_after(1).into()),
        ("a stream that breaks", Reply::text("never sent").drop_after(1).into()),
        (
            "an error event before content",
            Reply::text("never sent")
                .error_after_with(1, "server_error", "generator raised")
                .into(),
        ),
    ]
}

#[test]
fn every_failure_shape_before_content_falls_back_and_is_remembered() {
    for (shape, step) in failure_shapes() {
        for api in [WireApi::Chat, WireApi::Responses, WireApi::Anthropic] {
            let server = FakeModelServer::start(
                Script::new()
                    .when_streamed_tools(step.clone())
                    .reply(Reply::text("first"))
                    .reply(Reply::text("second")),
            )
            .unwrap();
            let memory = Arc::new(Memory::default());
            let client = client(config(&server, api)).with_memory(memory.clone());
            let first = collect(&client, request(vec![Message::user_text("hi")]));
            assert_eq!(text_of(&first), "first", "{shape}, {api}: {first:?}");
            let said = warnings(&first);
            assert_eq!(said.len(), 1, "{shape}, {api}: {first:?}");
            assert!(
                said[0].contains("cannot stream tool calls")
                    && said[0].contains("`fake-model`")
                    && said[0].contains("the test's memory")
                    && said[0].contains("stream = false in [model_providers.fake]"),
                "{shape}, {api}: {}",
                said[0]
            );
            // The warning comes before the answer.
            let warning_at = first.iter().position(|e| matches!(e, ResponseEvent::Warning(_)));
            let text_at = first.iter().position(|e| matches!(e, ResponseEvent::TextDelta(_)));
            assert!(warning_at < text_at, "{shape}, {api}: {first:?}");
            let second = collect(&client, request(vec![Message::user_text("again")]));
            assert_eq!(text_of(&second), "second", "{shape}, {api}");
            assert!(warnings(&second).is_empty(), "{shape}, {api}: said once");
            // The failed stream, its unstreamed try, then the next request unstreamed at once.
            assert_eq!(streams(&server), [true, false, false], "{shape}, {api}");
            let base = config(&server, api).base_url;
            assert_eq!(
                memory.entries(),
                [("fake".to_owned(), base, "fake-model".to_owned())],
                "{shape}, {api}"
            );
        }
    }
}

#[test]
fn a_remembered_server_gets_no_failed_attempt_in_the_next_session() {
    let server = FakeModelServer::start(
        Script::new()
            .when_streamed_tools(Reply::text("never sent").end_after(1))
            .reply(Reply::text("learnt"))
            .reply(Reply::text("remembered")),
    )
    .unwrap();
    let memory = Arc::new(Memory::default());
    let first = client(config(&server, WireApi::Chat)).with_memory(memory.clone());
    collect(&first, request(vec![Message::user_text("hi")]));
    drop(first);
    assert_eq!(server.requests().len(), 2);
    let next = client(config(&server, WireApi::Chat)).with_memory(memory.clone());
    let events = collect(&next, request(vec![Message::user_text("hi")]));
    assert_eq!(text_of(&events), "remembered");
    assert!(warnings(&events).is_empty(), "{events:?}");
    assert_eq!(server.requests().len(), 3, "exactly one request for the next session's first");
    assert!(!streams(&server)[2]);
    // Another model on the same server is another entry, and a request without tools streams.
    let mut other = request(vec![Message::user_text("hi")]);
    other.model = "other-model".into();
    other.tools.clear();
    server.push(Reply::text("streamed fine"));
    let events = collect(&next, other);
    assert_eq!(text_of(&events), "streamed fine");
    assert!(streams(&server)[3], "a request without tools streams");
}

#[test]
fn a_failure_after_content_is_a_stream_retry_not_a_fallback() {
    let server = FakeModelServer::start(
        Script::new().reply(Reply::text("a partial answer here").chunks(10).drop_after(8)),
    )
    .unwrap();
    let memory = Arc::new(Memory::default());
    let client = client(config(&server, WireApi::Chat)).with_memory(memory.clone());
    let events = collect(&client, request(vec![Message::user_text("hi")]));
    assert!(!text_of(&events).is_empty(), "{events:?}");
    assert!(matches!(events.last(), Some(ResponseEvent::Error(err)) if err.retryable));
    assert_eq!(streams(&server), [true], "no unstreamed try once content arrived");
    assert!(memory.entries().is_empty());
}

#[test]
fn a_request_without_tools_never_falls_back() {
    let server = FakeModelServer::start(
        Script::new().reply(Fault::status(500).message("odd")).reply(Reply::text("ok")),
    )
    .unwrap();
    let mut no_tools = request(vec![Message::user_text("hi")]);
    no_tools.tools.clear();
    let events = collect(&client(config(&server, WireApi::Chat)), no_tools);
    assert_eq!(text_of(&events), "ok");
    assert_eq!(streams(&server), [true, true], "a streamed retry, as before");
}

#[test]
fn when_the_unstreamed_try_fails_too_the_stream_is_retried_and_both_failures_are_named() {
    let server = FakeModelServer::start(
        Script::new()
            .when_streamed_tools(Fault::status(500).message("stream broke"))
            .reply(Fault::status(500).message("still broken")),
    )
    .unwrap();
    let memory = Arc::new(Memory::default());
    let mut config = config(&server, WireApi::Chat);
    config.request_max_retries = 1;
    let client = client(config).with_memory(memory.clone());
    let events = collect(&client, request(vec![Message::user_text("hi")]));
    let error = error_of(&events);
    assert!(
        error.contains("stream broke")
            && error.contains("sent again without streaming, it failed too")
            && error.contains("still broken"),
        "{error}"
    );
    assert!(warnings(&events).is_empty(), "{events:?}");
    // The first failure goes straight to the unstreamed try; then the usual retry, streamed.
    assert_eq!(streams(&server), [true, false, true]);
    assert!(memory.entries().is_empty(), "nothing remembered");
    // The next request still tries streaming first.
    server.push(Reply::text("unused"));
    let events = collect(&client, request(vec![Message::user_text("again")]));
    assert!(matches!(events.last(), Some(ResponseEvent::Completed { .. })), "{events:?}");
    assert_eq!(streams(&server)[3..], [true, false]);
}

#[test]
fn an_overflow_the_unstreamed_try_reveals_is_the_error_and_nothing_is_retried() {
    // llama-cpp-python's way: the streamed request ends early, the whole one gets a 400.
    let server = FakeModelServer::start(
        Script::new().when_streamed_tools(Reply::text("never sent").end_after(1)).reply(
            Fault::status(400).message(
                "This model's maximum context length is 2048 tokens. However, you requested \
                 6625 tokens. Please reduce the length of the messages or completion.",
            ),
        ),
    )
    .unwrap();
    let events =
        collect(&client(config(&server, WireApi::Chat)), request(vec![Message::user_text("hi")]));
    let error = error_of(&events);
    assert!(
        error.starts_with("the request does not fit the context of model `fake-model`"),
        "{error}"
    );
    assert!(!error.contains("stream ended"), "the symptom is not the cause: {error}");
    assert!(
        events
            .iter()
            .any(|event| matches!(event, ResponseEvent::Error(error) if error.context_overflow)),
        "{events:?}"
    );
    assert_eq!(streams(&server), [true, false], "no retry of the streamed form");
}

#[test]
fn what_an_unstreamed_request_would_meet_the_same_is_not_tried_again() {
    let overflow = Fault::status(400)
        .error_type("exceed_context_size_error")
        .message("the request exceeds the available context size, try increasing it");
    let missing =
        Fault::status(404).message("model \"fake-model\" not found, try pulling it first");
    let cases: Vec<(Step, &str)> = vec![
        (overflow.into(), "the request does not fit the context of model `fake-model`"),
        (missing.into(), "does not have model `fake-model`"),
        (Fault::status(404).message("Not Found").into(), "HTTP 404"),
        (Fault::status(401).message("bad key").into(), "HTTP 401"),
    ];
    for (step, says) in cases {
        let server = FakeModelServer::start(Script::new().reply(step)).unwrap();
        let events = collect(
            &client(config(&server, WireApi::Chat)),
            request(vec![Message::user_text("hi")]),
        );
        let error = error_of(&events);
        assert!(error.contains(says), "{error}");
        assert_eq!(streams(&server), [true], "{says}: one request, no fallback, no retry");
        // Only the overflow asks the kernel to compact and send the step again.
        let overflow = events
            .iter()
            .any(|event| matches!(event, ResponseEvent::Error(error) if error.context_overflow));
        assert_eq!(overflow, says.contains("does not fit the context"), "{says}");
    }
}

#[test]
fn a_server_that_is_not_running_is_named_with_what_to_do() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}/v1");
    let mut config = codecoder_providers::ProviderConfig::new("local", &base, WireApi::Chat, None);
    config.name = "my server".into();
    let client = HttpModelClient::new(config, &|_| None).unwrap();
    let events = collect(&client, request(vec![Message::user_text("hi")]));
    assert_eq!(
        error_of(&events),
        format!(
            "cannot reach my server at {base} (connection refused): is the server running? \
             start it, or set base_url in [model_providers.local]"
        )
    );
}
