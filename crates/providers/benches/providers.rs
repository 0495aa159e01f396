//! Provider benchmarks (prints figures): SSE parse throughput in memory for each API, the same
//! over loopback from the fake model server, and the time from `stream()` to the first event.
//! Run: `cargo bench -p codecoder-providers`.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use codecoder_kernel::{ModelClient, ModelRequest, ResponseEvent};
use codecoder_protocol::{Message, SessionId};
use codecoder_providers::{HttpModelClient, ProviderConfig, WireApi, parse_sse_body};
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

fn main() {
    println!(
        "providers benchmarks ({} cores), median of {RUNS} runs",
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    for api in [WireApi::Chat, WireApi::Responses, WireApi::Anthropic] {
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
