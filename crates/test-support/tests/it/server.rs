//! The server itself: request recording and waiting, keep-alive and `Connection: close`,
//! chunked request bodies, bad input answered with 400/404/405, client disconnects observed,
//! stamped replies, the JSON script format, and the binary.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use codecoder_test_support::{
    Api, Error, FakeModelServer, Fault, Reply, SEND_STAMP, Script, StopReason, Usage,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{Client, WAIT, request_body};

#[test]
fn requests_are_recorded_in_order_with_headers_and_body() {
    let server =
        FakeModelServer::start(Script::new().reply(Reply::text("one")).reply(Reply::text("two")))
            .unwrap();
    let mut client = Client::connect(&server);
    client.send(
        "POST",
        "/v1/messages?beta=true",
        &[("X-Api-Key", "sk-test"), ("Anthropic-Version", "2023-06-01")],
        &json!({"model": "claude", "max_tokens": 10}).to_string(),
    );
    assert_eq!(client.read_response().status, 200);
    client.post("/v1/responses", &json!({"model": "gpt", "input": []}));

    let requests = server.wait_for_requests(2, WAIT).unwrap();
    assert_eq!(requests.len(), 2);
    let first = &requests[0];
    assert_eq!(first.method, "POST");
    assert_eq!(first.path, "/v1/messages");
    assert_eq!(first.query.as_deref(), Some("beta=true"));
    assert_eq!(first.api, Some(Api::Anthropic));
    assert_eq!(first.header("x-api-key"), Some("sk-test"));
    assert_eq!(first.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(first.header("host"), Some("127.0.0.1"));
    assert_eq!(first.body, json!({"model": "claude", "max_tokens": 10}));
    assert_eq!(requests[1].api, Some(Api::Responses));
    assert_eq!(requests[1].connection, first.connection, "one kept-alive connection");
    assert_eq!(requests[1].body["model"], "gpt");
    assert_eq!(server.remaining_steps(), 0);

    let err = server.wait_for_requests(3, Duration::from_millis(50)).unwrap_err();
    assert!(matches!(err, Error::Timeout { wanted: 3, seen: 2, .. }), "{err}");
}

#[test]
fn connection_close_is_honoured() {
    let server = FakeModelServer::start(Script::new().reply(Reply::text("bye"))).unwrap();
    let mut client = Client::connect(&server);
    client.send("POST", "/v1/chat/completions", &[("Connection", "close")], "{}");
    let response = client.read_response();
    assert_eq!(response.header("connection"), Some("close"));
    assert!(response.complete);
    assert!(client.is_closed());
}

#[test]
fn http_1_0_and_chunked_request_bodies() {
    let server =
        FakeModelServer::start(Script::new().reply(Reply::text("a")).reply(Reply::text("b")))
            .unwrap();
    let mut client = Client::connect(&server);
    client.write_raw(
        b"POST /v1/responses HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n",
    );
    let interim = client.read_head().unwrap();
    assert_eq!(interim.status, 100);
    client.write_raw(b"7;ext=1\r\n{\"model\r\n8\r\n\":\"x\"}  \r\n0\r\nTrailer: t\r\n\r\n");
    assert_eq!(client.read_response().status, 200);
    let request = &server.wait_for_requests(1, WAIT).unwrap()[0];
    assert_eq!(request.body, json!({"model": "x"}));

    let mut client = Client::connect(&server);
    client.write_raw(b"POST /v1/responses HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}");
    assert_eq!(client.read_response().status, 200);
    assert!(client.is_closed(), "HTTP/1.0 without keep-alive closes");
}

#[test]
fn bad_input_gets_4xx_not_a_panic() {
    let server = FakeModelServer::start(Script::new().reply(Reply::text("still alive"))).unwrap();

    let mut client = Client::connect(&server);
    client.write_raw(b"NONSENSE\r\n\r\n");
    let response = client.read_response();
    assert_eq!(response.status, 400);
    assert!(response.text().contains("malformed request line"), "{}", response.text());

    let mut client = Client::connect(&server);
    client.write_raw(b"POST /v1/responses HTTP/1.1\r\nContent-Length: nope\r\n\r\n");
    assert_eq!(client.read_response().status, 400);

    let mut client = Client::connect(&server);
    client.write_raw(b"POST /v1/responses HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
    assert_eq!(client.read_response().status, 400);

    let mut client = Client::connect(&server);
    client.write_raw(b"POST /v1/responses HTTP/1.1\r\nno colon here\r\n\r\n");
    assert_eq!(client.read_response().status, 400);

    let mut client = Client::connect(&server);
    client.send("POST", "/v1/responses", &[], "{not json");
    let response = client.read_response();
    assert_eq!(response.status, 400);
    assert!(response.json()["error"]["message"].as_str().unwrap().contains("not JSON"));
    // The connection stays usable after a JSON error.
    client.send("GET", "/v1/embeddings", &[], "");
    let response = client.read_response();
    assert_eq!(response.status, 404);
    assert_eq!(response.json()["error"]["message"], "fake model: no API at /v1/embeddings");
    // A discovery path the script does not answer: a 404 too, recorded apart.
    client.send("GET", "/v1/models", &[], "");
    let response = client.read_response();
    assert_eq!(response.status, 404);
    assert_eq!(response.json()["error"]["message"], "fake model: no API at /v1/models");
    assert_eq!(server.discovery_requests().len(), 1);
    client.send("GET", "/v1/responses", &[], "");
    assert_eq!(client.read_response().status, 405);

    // None of that consumed the script.
    assert_eq!(server.remaining_steps(), 1);
    let ok = client.post("/v1/responses", &request_body());
    assert!(ok.text().contains("still alive"));
    assert_eq!(server.requests().len(), 4, "bad heads are not recorded, the rest are");
}

#[test]
fn client_disconnect_mid_stream_is_observed() {
    let server = FakeModelServer::start(
        Script::new().reply(Reply::endless_text()).reply(Reply::text("x").stall(1, 60_000)),
    )
    .unwrap();
    // The endless stream notices on a failed write; the stall notices while it waits.
    for (target, chunks) in [("/v1/chat/completions", 8), ("/v1/messages", 1)] {
        let mut client = Client::connect(&server);
        client.send("POST", target, &[], &request_body().to_string());
        let mut response = client.read_head().unwrap();
        client.read_chunked(&mut response, chunks);
        assert_eq!(response.chunks.len(), chunks);
        client.close();
    }
    assert_eq!(server.wait_for_disconnects(2, WAIT).unwrap(), 2);
    assert_eq!(server.disconnects(), 2);
    let err = server.wait_for_disconnects(3, Duration::from_millis(30)).unwrap_err();
    assert!(matches!(err, Error::Timeout { what: "disconnects", .. }));
}

#[test]
fn endless_stream_repeats_the_delta() {
    let server =
        FakeModelServer::start(Script::new().reply(Reply::endless_text().pace_ms(1))).unwrap();
    let mut client = Client::connect(&server);
    client.send("POST", "/v1/responses", &[], &request_body().to_string());
    let mut response = client.read_head().unwrap();
    client.read_chunked(&mut response, 40);
    let deltas = response
        .events()
        .iter()
        .filter(|sse| sse.event.as_deref() == Some("response.output_text.delta"))
        .count();
    assert!(deltas >= 35, "{deltas}");
    drop(client);
    server.wait_for_disconnects(1, WAIT).unwrap();
}

#[test]
fn a_stamped_reply_carries_each_events_send_time() {
    let micros =
        || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros();
    let chunks = [format!("a{SEND_STAMP};"), format!("b{SEND_STAMP};")];
    let server =
        FakeModelServer::start(Script::new().reply(Reply::text_chunks(chunks).stamped())).unwrap();
    let before = micros();
    let response = Client::connect(&server).post("/v1/chat/completions", &request_body());
    let after = micros();
    let deltas: Vec<String> = response
        .events()
        .iter()
        .filter(|sse| sse.data.starts_with('{'))
        .filter_map(|sse| sse.json()["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
        .filter(|content| !content.is_empty())
        .collect();
    assert_eq!(deltas.len(), 2, "{deltas:?}");
    for (delta, letter) in deltas.iter().zip(["a", "b"]) {
        let stamp: u128 =
            delta.strip_prefix(letter).unwrap().strip_suffix(';').unwrap().parse().unwrap();
        assert!(before <= stamp && stamp <= after, "{before} <= {stamp} <= {after}");
    }
    // Without `stamped` the placeholder is sent as it is.
    let plain = FakeModelServer::start(Script::new().reply(Reply::text(SEND_STAMP))).unwrap();
    let text = Client::connect(&plain).post("/v1/chat/completions", &request_body()).text();
    assert!(text.contains(SEND_STAMP), "{text}");
}

#[test]
fn pushed_steps_extend_the_script() {
    let server = FakeModelServer::start(Script::new()).unwrap();
    server.push(Reply::text("pushed"));
    let response = Client::connect(&server).post("/chat/completions", &request_body());
    assert!(response.text().contains("pushed"));
}

#[test]
fn json_script_round_trips() {
    let script = Script::new()
        .reply(Fault::rate_limited(3).message("slow down"))
        .reply(
            Reply::text("hi")
                .chunks(2)
                .reasoning("r")
                .signature("s")
                .and_tool_call("c", "n", json!({"a": [1, 2]}))
                .and_raw_tool_call("d", "m", "{broken")
                .usage(Usage::tokens(1, 2).cached(1).reasoning(1))
                .stop(StopReason::ToolUse)
                .split_utf8()
                .keep_alive()
                .stall(1, 5)
                .inject(2, ": x\n\n")
                .malformed(3)
                .drop_after(4),
        )
        .reply(Reply::text_chunks(["a", "", "b"]).error_after_with(1, "t", "m"))
        .reply(Fault::hang_up().delay_ms(5))
        .when_exhausted(Reply::endless_text());
    let json = script.to_json();
    assert_eq!(Script::from_json(&json).unwrap(), script);

    let err = Script::from_json(r#"{"steps": [{"type": "reply", "txet": "typo"}]}"#).unwrap_err();
    assert!(err.to_string().contains("txet"), "{err}");
    let minimal =
        Script::from_json(r#"{"steps": [{"type": "reply", "text": "hi"}, {"type": "fault"}]}"#)
            .unwrap();
    assert_eq!(minimal, Script::new().reply(Reply::text("hi")).reply(Fault::status(500)));
}

fn example_path() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/script.json"))
}

#[test]
fn example_script_loads_and_plays() {
    let script = Script::load(example_path()).unwrap();
    assert_eq!(script.steps.len(), 6);
    assert_eq!(Script::from_json(&script.to_json()).unwrap(), script);
    let server = FakeModelServer::start(script).unwrap();
    let mut client = Client::connect(&server);
    assert_eq!(client.post("/v1/responses", &request_body()).status, 429);
    let second = client.post("/v1/responses", &request_body());
    assert!(second.complete);
    assert!(second.text().contains("\"encrypted_content\":\"sig-example-1\""));
}

#[test]
fn binary_prints_its_base_url_and_serves() {
    let help =
        Command::new(env!("CARGO_BIN_EXE_codecoder-fake-model")).arg("--help").output().unwrap();
    assert!(help.status.success());
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(help.contains("--script") && help.contains("\"when_exhausted\""), "{help}");

    let mut child = Command::new(env!("CARGO_BIN_EXE_codecoder-fake-model"))
        .args(["--script", example_path().to_str().unwrap(), "--quiet"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let result = std::panic::catch_unwind(|| {
        let addr = line.trim().strip_prefix("http://").unwrap().to_owned();
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        use std::io::{Read, Write};
        stream
            .write_all(
                b"POST /v1/messages HTTP/1.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
            )
            .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let response = result.unwrap();
    assert!(response.starts_with("HTTP/1.1 429 Too Many Requests\r\n"), "{response}");
    assert!(response.contains("rate_limit_error"), "{response}");
}

#[test]
fn coalesced_long_stream_uses_few_writes() {
    let text = "0123456789".repeat(5_000);
    let script = Script::new().reply(Reply::text(text.clone()).chunks(5_000).coalesce());
    let response = crate::one_request(script, "/v1/chat/completions", &request_body());
    assert!(response.complete);
    let events = response.events();
    // Role chunk, 5 000 deltas, finish chunk, usage chunk, [DONE].
    assert_eq!(events.len(), 5_004);
    let joined: String = events[1..5_001]
        .iter()
        .map(|sse| sse.json()["choices"][0]["delta"]["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(joined, text);
    assert!(
        response.chunks.len() < response.body.len() / 60_000 + 2,
        "{} chunks",
        response.chunks.len()
    );
}

#[test]
fn shutdown_with_idle_keep_alive_connections_is_prompt() {
    let server = FakeModelServer::start(Script::new().reply(Reply::text("x"))).unwrap();
    let mut busy = Client::connect(&server);
    assert_eq!(busy.post("/v1/responses", &request_body()).status, 200);
    let mut half_sent = Client::connect(&server);
    half_sent.write_raw(b"POST /v1/responses HTTP/1.1\r\nContent-Le");
    let started = std::time::Instant::now();
    server.shutdown();
    assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
    assert!(busy.is_closed());
    assert!(half_sent.is_closed());
}

#[test]
fn oversized_body_is_refused_with_400() {
    let server = FakeModelServer::start(Script::new()).unwrap();
    let mut client = Client::connect(&server);
    // Announce far more than the limit and send some of it: the 400 still arrives intact.
    client.write_raw(b"POST /v1/responses HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n");
    client.write_raw(&[b'x'; 100_000]);
    let response = client.read_response();
    assert_eq!(response.status, 400);
    assert!(response.text().contains("body longer than"), "{}", response.text());
}

#[test]
fn a_request_holding_a_text_gets_its_own_step_and_leaves_the_queue() {
    let script = Script::new()
        .reply(Reply::text("first of the queue"))
        .reply(Reply::text("second of the queue"))
        .when_request_contains("task title", Reply::text("A title"));
    let server = FakeModelServer::start(script).unwrap();
    let mut client = Client::connect(&server);
    let text = |client: &mut Client, prompt: &str| {
        let body = json!({"model": "m", "stream": false, "input": prompt});
        String::from_utf8(client.post("/v1/chat/completions", &body).body).unwrap()
    };
    assert!(text(&mut client, "hello").contains("first of the queue"));
    assert!(text(&mut client, "write a task title").contains("A title"));
    assert!(text(&mut client, "the task title again").contains("A title"));
    assert!(text(&mut client, "go on").contains("second of the queue"));
    assert_eq!(server.requests().len(), 4);
    // The JSON form says the same.
    let parsed = Script::from_json(
        r#"{"when_request_contains": [["task title", {"type": "reply", "text": "A title"}]]}"#,
    )
    .unwrap();
    assert_eq!(parsed.when_request_contains.len(), 1);
    assert_eq!(parsed.when_request_contains[0].0, "task title");
}
