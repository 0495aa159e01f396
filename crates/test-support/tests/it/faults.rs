//! Faults: error statuses with Retry-After and each API's error body, hang-ups, streams dropped
//! or failed mid-way, stalls that end promptly on shutdown, malformed SSE, UTF-8 characters
//! split across network reads, and the exhausted script.

use std::time::{Duration, Instant};

use codecoder_test_support::{FakeModelServer, Fault, Reply, SCRIPT_EXHAUSTED, Script};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{Client, Response, request_body};

#[test]
fn rate_limit_with_retry_after_then_success_on_the_same_connection() {
    let server = FakeModelServer::start(
        Script::new().reply(Fault::rate_limited(2)).reply(Reply::text("after the wait")),
    )
    .unwrap();
    let mut client = Client::connect(&server);
    let limited = client.post("/v1/chat/completions", &request_body());
    assert_eq!(limited.status, 429);
    assert_eq!(limited.header("retry-after"), Some("2"));
    assert_eq!(limited.header("content-type"), Some("application/json"));
    assert_eq!(limited.header("x-request-id"), Some("req_fake_1"));
    assert_eq!(
        limited.json(),
        json!({"error": {
            "message": "fake model: rate limited (scripted 429)",
            "type": "requests",
            "param": null,
            "code": "rate_limit_exceeded",
        }})
    );
    // Keep-alive: the retry reuses the connection.
    let ok = client.post("/v1/chat/completions", &request_body());
    assert_eq!(ok.status, 200);
    assert!(ok.text().contains("after the wait"));
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn anthropic_error_bodies_for_429_and_529() {
    let server = FakeModelServer::start(
        Script::new().reply(Fault::rate_limited(1)).reply(Fault::overloaded()),
    )
    .unwrap();
    let mut client = Client::connect(&server);
    let limited = client.post("/v1/messages", &request_body());
    assert_eq!(limited.status, 429);
    assert_eq!(limited.header("retry-after"), Some("1"));
    assert_eq!(limited.header("request-id"), Some("req_fake_1"));
    assert_eq!(limited.json()["type"], "error");
    assert_eq!(limited.json()["error"]["type"], "rate_limit_error");
    assert_eq!(limited.json()["request_id"], "req_fake_1");
    let overloaded = client.post("/v1/messages", &request_body());
    assert_eq!(overloaded.status, 529);
    assert_eq!(
        overloaded.json(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_fake_2"})
    );
}

#[test]
fn server_error_with_custom_type_message_and_header() {
    let fault =
        Fault::status(503).error_type("unavailable").message("try later").header("x-custom", "yes");
    let server = FakeModelServer::start(
        Script::new().reply(fault).reply(Fault::status(500).body(json!({"raw": true}))),
    )
    .unwrap();
    let mut client = Client::connect(&server);
    let response = client.post("/v1/responses", &request_body());
    assert_eq!(response.status, 503);
    assert_eq!(response.header("x-custom"), Some("yes"));
    assert_eq!(response.json()["error"]["type"], "unavailable");
    assert_eq!(response.json()["error"]["message"], "try later");
    let raw = client.post("/v1/responses", &request_body());
    assert_eq!((raw.status, raw.json()), (500, json!({"raw": true})));
}

#[test]
fn hang_up_closes_without_a_response() {
    let server =
        FakeModelServer::start(Script::new().reply(Fault::hang_up()).reply(Reply::text("ok")))
            .unwrap();
    let mut client = Client::connect(&server);
    client.send("POST", "/v1/responses", &[], &request_body().to_string());
    assert!(client.read_head().is_none());
    let ok = Client::connect(&server).post("/v1/responses", &request_body());
    assert_eq!(ok.status, 200);
    let requests = server.requests();
    assert_ne!(requests[0].connection, requests[1].connection);
}

#[test]
fn dropped_stream_ends_without_terminal_event() {
    for (target, terminal) in [
        ("/v1/responses", "response.completed"),
        ("/v1/chat/completions", "[DONE]"),
        ("/v1/messages", "message_stop"),
    ] {
        let script = Script::new().reply(Reply::text("abcdef").chunks(6).drop_after(4));
        let server = FakeModelServer::start(script).unwrap();
        let mut client = Client::connect(&server);
        let response = client.post(target, &request_body());
        assert_eq!(response.status, 200, "{target}");
        assert!(!response.complete, "{target}: no final chunk");
        assert_eq!(response.events().len(), 4, "{target}");
        assert!(!response.text().contains(terminal), "{target}");
        assert!(client.is_closed(), "{target}");
        assert_eq!(server.disconnects(), 0, "the server closed, the client did not");
    }
}

#[test]
fn error_event_mid_stream() {
    let script = Script::new()
        .reply(Reply::text("abc").chunks(3).error_after(4))
        .reply(Reply::text("abc").error_after_with(2, "server_error", "boom"))
        .reply(Reply::text("abc").error_after(5));
    let server = FakeModelServer::start(script).unwrap();
    let mut client = Client::connect(&server);

    let anthropic = client.post("/v1/messages", &request_body());
    assert!(anthropic.complete);
    let events = anthropic.events();
    assert_eq!(events.len(), 5);
    assert_eq!(events[4].event.as_deref(), Some("error"));
    assert_eq!(
        events[4].json(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );

    let chat = client.post("/v1/chat/completions", &request_body());
    let events = chat.events();
    assert_eq!(events.len(), 3);
    assert_eq!(events[2].json()["error"]["message"], "boom");
    assert!(!chat.text().contains("[DONE]"));

    let responses = client.post("/v1/responses", &request_body());
    let events = responses.events();
    assert_eq!(events.len(), 6);
    let failed = events[5].json();
    assert_eq!(events[5].event.as_deref(), Some("response.failed"));
    assert_eq!(failed["response"]["status"], "failed");
    assert_eq!(failed["response"]["error"]["code"], "server_error");
    assert!(!responses.text().contains("response.completed"));
}

#[test]
fn stall_ends_promptly_on_shutdown() {
    let script = Script::new().reply(Reply::text("never finished").stall(2, 60_000));
    let server = FakeModelServer::start(script).unwrap();
    let mut client = Client::connect(&server);
    client.send("POST", "/v1/messages", &[], &request_body().to_string());
    let mut response = client.read_head().unwrap();
    client.read_chunked(&mut response, 2);
    assert_eq!(response.events().len(), 2);
    let started = Instant::now();
    server.shutdown();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(1), "shutdown took {took:?}");
    client.read_chunked(&mut response, usize::MAX);
    assert!(!response.complete);
    assert_eq!(response.events().len(), 2);
}

#[test]
fn stall_and_pace_delay_the_stream() {
    let script = Script::new().reply(Reply::text("ab").chunks(2).stall(1, 150).delay_ms(100));
    let started = Instant::now();
    let response = crate::one_request(script, "/v1/chat/completions", &request_body());
    assert!(response.complete);
    assert!(started.elapsed() >= Duration::from_millis(250), "{:?}", started.elapsed());
}

#[test]
fn malformed_and_injected_sse() {
    let script = Script::new().reply(
        Reply::text("ok")
            .malformed(1)
            .inject(0, ": OPENROUTER PROCESSING\n\n")
            .inject(99, "data: {\"late\":true}\n\n"),
    );
    let server = FakeModelServer::start(script).unwrap();
    let mut client = Client::connect(&server);
    let response = client.post("/v1/chat/completions", &request_body());
    assert!(response.complete);
    assert_eq!(response.comments(), ["OPENROUTER PROCESSING"]);
    let events = response.events();
    assert!(serde_json::from_str::<serde_json::Value>(&events[1].data).is_err(), "{:?}", events[1]);
    assert!(events[1].data.starts_with("{\"object\":\"chat.completion.chunk\""));
    assert_eq!(events.last().unwrap().data, "{\"late\":true}");
    // Each injected or malformed piece is a network write (a chunk) of its own.
    assert_eq!(response.chunks[0], b": OPENROUTER PROCESSING\n\n");
}

#[test]
fn utf8_split_arrives_in_separate_reads() {
    let script =
        Script::new().reply(Reply::text("Grüße 🌍!").chunks(2).split_utf8().split_pause_ms(150));
    let response = crate::one_request(script, "/v1/messages", &request_body());
    assert!(response.complete);
    let text = response.text(); // The whole body is valid UTF-8.
    assert!(text.contains("\"text\":\"Grüß\""), "{text}");
    // Some chunk, and some read, ends inside a multi-byte character.
    let split_chunks = response.chunks.iter().filter(|chunk| ends_mid_character(chunk)).count();
    assert_eq!(split_chunks, 2, "both text deltas are split");
    assert!(
        response
            .read_boundaries
            .iter()
            .any(|&boundary| ends_mid_character(&response.body[..boundary])),
        "no read ended inside a character: {:?}",
        response.read_boundaries
    );
}

fn ends_mid_character(bytes: &[u8]) -> bool {
    matches!(std::str::from_utf8(bytes), Err(err) if err.error_len().is_none())
}

#[test]
fn exhausted_script_answers_500_and_when_exhausted_overrides() {
    let server = FakeModelServer::start(Script::new().reply(Reply::text("only"))).unwrap();
    let mut client = Client::connect(&server);
    assert_eq!(client.post("/v1/responses", &request_body()).status, 200);
    for target in ["/v1/responses", "/v1/chat/completions"] {
        let exhausted: Response = client.post(target, &request_body());
        assert_eq!(exhausted.status, 500);
        assert_eq!(exhausted.json()["error"]["message"], SCRIPT_EXHAUSTED);
    }
    let exhausted = client.post("/v1/messages", &request_body());
    assert_eq!(
        exhausted.json()["error"],
        json!({"type": "api_error", "message": SCRIPT_EXHAUSTED})
    );

    let server =
        FakeModelServer::start(Script::new().when_exhausted(Reply::text("again"))).unwrap();
    let mut client = Client::connect(&server);
    for _ in 0..3 {
        assert!(client.post("/v1/messages", &request_body()).text().contains("again"));
    }
}
