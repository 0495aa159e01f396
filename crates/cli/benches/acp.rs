//! `codecoder acp`: from an editor's `session/new` to the session's first model request at the
//! fake model server (the session started, its prompt sent at once when `session/new` answers).
//! Prints the median and the spread of 21 sessions in one agent process. Run:
//! `cargo bench -p codecoder-cli --bench acp`.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods
)]

use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_codecoder");
const RUNS: usize = 21;

/// Reads lines until the response to `id`; returns its result (notifications are skipped).
fn response(lines: &mut impl Iterator<Item = std::io::Result<String>>, id: u64) -> Value {
    for line in lines {
        let message: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if message["id"] == json!(id) {
            assert!(message.get("error").is_none(), "{message}");
            return message["result"].clone();
        }
    }
    panic!("the agent closed its output before answering request {id}");
}

fn main() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path().canonicalize().unwrap();
    let server = FakeModelServer::start(Script::new().when_exhausted(Reply::text("ok"))).unwrap();
    let mut child = Command::new(BIN)
        .args(["acp", "--provider", "openai-chat"])
        .current_dir(&cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CODECODER_HOME", home.path())
        .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()))
        .env("OPENAI_API_KEY", "sk-bench")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let output: ChildStdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(output).lines();
    let mut send = |message: Value| {
        writeln!(input, "{message}").unwrap();
        input.flush().unwrap();
    };
    send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
    response(&mut lines, 0);

    let mut samples = Vec::with_capacity(RUNS);
    let mut id = 1;
    for run in 0..RUNS {
        let started = Instant::now();
        send(json!({"jsonrpc": "2.0", "id": id, "method": "session/new",
            "params": {"cwd": cwd, "mcpServers": []}}));
        let session = response(&mut lines, id)["sessionId"].as_str().unwrap().to_owned();
        id += 1;
        send(json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hello"}]}}));
        server.wait_for_requests(run + 1, Duration::from_secs(30)).unwrap();
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        let done = response(&mut lines, id);
        assert_eq!(done["stopReason"], "end_turn");
        id += 1;
    }
    // The end of the input ends the agent.
    drop(input);
    child.wait().unwrap();
    samples.sort_by(f64::total_cmp);
    println!(
        "acp session/new -> first request at the server: median {:.2} ms, min {:.2} ms, max {:.2} ms ({RUNS} sessions)",
        samples[RUNS / 2],
        samples[0],
        samples[RUNS - 1]
    );
}
