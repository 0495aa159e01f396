//! Provider benchmarks (prints figures): SSE parse throughput in memory for each API, the same
//! over loopback from the fake model server, the time from `stream()` to the first event, and
//! the first request of a session against a server that cannot stream tool calls, with and
//! without the provider memory (its latency and how many requests it costs).
//! Run: `cargo bench -p codecoder-providers [-- FILTER]` (FILTER: `sse`, `loopback`, `fallback`).
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use codecoder_kernel::{ModelClient, ModelRequest, ResponseEvent, ToolSpec};
use codecoder_protocol::{Message, SessionId};
use codecoder_providers::{
    HttpModelClient, ProviderConfig, ProviderMemory, ServerKey, WireApi, parse_sse_body,
};
use codecoder_test_support::{FakeModelServer, Reply, Script};

const RUNS: usize = 7;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// A realistic streamed body: `n` text deltas of a few tokens each.
fn body(api: WireApi, n: usize) -> Vec<u8> {
    let mut out = String::new();
    for i in 0..n {
        let delta = format!("token {i} and more ");
        match api {
            WireApi::Chat => out.push_str(&format!(
                "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{delta}\"}},\"finish_reason\":null}}]}}\n\n"
            )),
            WireApi::Responses => out.push_str(&format!(
                "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"sequence_number\":{i},\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"{delta}\"}}\n\n"
            )),
            WireApi::Anthropic => out.push_str(&format!(
                "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{delta}\"}}}}\n\n"
            )),
        }
    }
    out.into_bytes()
}

fn request() -> ModelRequest {
    ModelRequest {
        session_id: SessionId::new(),
        model: "m".into(),
        instructions: "bench".into(),
        sections: Vec::new(),
        history: vec![std::sync::Arc::new(Message::user_text("go"))],
        tools: Vec::new(),
        max_output_tokens: None,
        output_schema: None,
        reasoning: Default::default(),
    }
}

/// A memory that remembers every server as unable to stream tool calls.
struct Remembered;

impl ProviderMemory for Remembered {
    fn unstreamed_tools(&self, _server: &ServerKey<'_>) -> bool {
        true
    }

    fn remember_unstreamed_tools(&self, _server: &ServerKey<'_>) -> std::io::Result<()> {
        Ok(())
    }

    fn location(&self) -> &str {
        "the benchmark"
    }
}

/// The first request with tools of fresh clients (sessions) against a server that ends every
/// streamed request with tools early, not remembered and remembered in turn (so load on the
/// machine falls on both alike): for each, median ms to `Completed` and requests per session.
fn first_request_with_tools() -> [(f64, f64); 2] {
    const SESSIONS: usize = 21;
    let mut request = request();
    request.tools = vec![ToolSpec {
        name: "read_file".into(),
        description: "Read a file".into(),
        schema: serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }];
    let servers = [(); 2].map(|()| {
        FakeModelServer::start(
            Script::new()
                .when_streamed_tools(Reply::text("never sent").end_after(1))
                .when_exhausted(Reply::text("hello")),
        )
        .unwrap()
    });
    let mut latency_ms = [Vec::new(), Vec::new()];
    for _ in 0..SESSIONS {
        for (remembered, server) in servers.iter().enumerate() {
            let base = format!("{}/v1", server.base_url());
            let config = ProviderConfig::new("local", base, WireApi::Chat, None);
            let mut client = HttpModelClient::new(config, &|_| None).unwrap();
            if remembered == 1 {
                client = client.with_memory(std::sync::Arc::new(Remembered));
            }
            let started = Instant::now();
            let stream = client.stream(request.clone()).unwrap();
            loop {
                match stream.events().recv_timeout(Duration::from_secs(30)).unwrap() {
                    ResponseEvent::Completed { .. } => break,
                    ResponseEvent::Error(err) => panic!("{err}"),
                    _ => {}
                }
            }
            latency_ms[remembered].push(started.elapsed().as_secs_f64() * 1000.0);
        }
    }
    let [cold, warm] = latency_ms;
    let per_session = |server: &FakeModelServer| server.requests().len() as f64 / SESSIONS as f64;
    [(median(cold), per_session(&servers[0])), (median(warm), per_session(&servers[1]))]
}

fn main() {
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let wanted = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    println!(
        "providers benchmarks ({} cores), median of {RUNS} runs",
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    if wanted("fallback") {
        let [(cold_ms, cold_requests), (warm_ms, warm_requests)] = first_request_with_tools();
        println!(
            "fallback, first request with tools of a session (server that cannot stream them, 21 sessions): not remembered {cold_ms:.2} ms, {cold_requests:.0} requests; remembered {warm_ms:.2} ms, {warm_requests:.0} request ({:.0} extra)",
            warm_requests - 1.0
        );
    }
    for api in [WireApi::Chat, WireApi::Responses, WireApi::Anthropic] {
        if !wanted("sse") {
            break;
        }
        let body = body(api, 200_000);
        let mut rates = Vec::new();
        for _ in 0..RUNS {
            let started = Instant::now();
            let events = parse_sse_body(api, &body, 16 * 1024).unwrap();
            let secs = started.elapsed().as_secs_f64();
            assert_eq!(events, 200_000);
            rates.push(body.len() as f64 / secs / 1e6);
        }
        println!(
            "sse parse in memory, {api:<9}: {:>7.0} MB/s ({:.1} MB, 200k deltas)",
            median(rates),
            body.len() as f64 / 1e6
        );
    }

    for api in [WireApi::Chat, WireApi::Responses, WireApi::Anthropic] {
        if !wanted("loopback") {
            break;
        }
        let mut rates = Vec::new();
        let mut first_event_ms = Vec::new();
        for _ in 0..RUNS {
            let chunks: Vec<String> = (0..100_000).map(|i| format!("token {i} ")).collect();
            let server =
                FakeModelServer::start(Script::new().reply(Reply::text_chunks(chunks).coalesce()))
                    .unwrap();
            let base = match api {
                WireApi::Anthropic => server.base_url(),
                WireApi::Responses | WireApi::Chat => format!("{}/v1", server.base_url()),
            };
            let client =
                HttpModelClient::new(ProviderConfig::new("fake", base, api, None), &|_| None)
                    .unwrap();
            let started = Instant::now();
            let stream = client.stream(request()).unwrap();
            let mut text_bytes = 0usize;
            let mut first = None;
            loop {
                match stream.events().recv_timeout(Duration::from_secs(30)).unwrap() {
                    ResponseEvent::TextDelta(t) => {
                        first.get_or_insert_with(|| started.elapsed());
                        text_bytes += t.len();
                    }
                    ResponseEvent::Completed { .. } => break,
                    ResponseEvent::Error(err) => panic!("{err}"),
                    _ => {}
                }
            }
            let secs = started.elapsed().as_secs_f64();
            rates.push(100_000.0 / secs);
            first_event_ms.push(first.unwrap_or_default().as_secs_f64() * 1000.0);
            let _ = text_bytes;
        }
        let _ = first_event_ms;
        // Time to first event on a fresh connection, with a short reply.
        let mut latency_ms = Vec::new();
        for _ in 0..21 {
            let server = FakeModelServer::start(Script::new().reply(Reply::text("hello"))).unwrap();
            let base = match api {
                WireApi::Anthropic => server.base_url(),
                WireApi::Responses | WireApi::Chat => format!("{}/v1", server.base_url()),
            };
            let client =
                HttpModelClient::new(ProviderConfig::new("fake", base, api, None), &|_| None)
                    .unwrap();
            let started = Instant::now();
            let stream = client.stream(request()).unwrap();
            let _first = stream.events().recv_timeout(Duration::from_secs(30)).unwrap();
            latency_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        println!(
            "loopback stream, {api:<9}: {:>9.0} deltas/s (100k deltas); stream() to first event {:.2} ms",
            median(rates),
            median(latency_ms)
        );
    }
}
