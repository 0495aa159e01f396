//! Session start with MCP servers: process start → the first request at the fake model server,
//! with no server configured, with two stdio servers that start at once (two `codecoder
//! mcp-server`, a Rust binary), and with two Node servers (`server-everything` and
//! `server-filesystem` from `CODECODER_TEST_NPM`). The first request waits for the servers to
//! settle, so what the harness adds is the fast servers' line less the no-server line; the Node
//! servers' line is their own start. Prints medians. Run:
//! `CODECODER_TEST_NPM=… cargo bench -p codecoder-cli --bench mcp_start`.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use codecoder_test_support::{FakeModelServer, Reply, Script};

const BIN: &str = env!("CARGO_BIN_EXE_codecoder");
const RUNS: usize = 15;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn exec(home: &Path, cwd: &Path, server: &FakeModelServer) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(["exec", "--provider", "openai-chat", "hello"])
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CODECODER_HOME", home)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()))
        .env("OPENAI_API_KEY", "sk-bench")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// Start → first request, in ms; that request must offer every tool of `offered` (the
/// servers' tools: the first request waits for the servers).
fn run(config: &str, offered: &[&str]) -> f64 {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let server = FakeModelServer::start(Script::new().reply(Reply::text("ok"))).unwrap();
    let started = Instant::now();
    let mut child = exec(home.path(), cwd.path(), &server).spawn().unwrap();
    server.wait_for_requests(1, Duration::from_secs(30)).unwrap();
    let first = started.elapsed().as_secs_f64() * 1000.0;
    child.wait().unwrap();
    let body = &server.requests()[0].raw_body;
    for tool in offered {
        assert!(body.contains(tool), "the first request does not offer {tool}");
    }
    first
}

fn main() {
    let Some(npm) = std::env::var_os("CODECODER_TEST_NPM").map(PathBuf::from) else {
        println!("mcp_start: skipped, CODECODER_TEST_NPM is not set");
        return;
    };
    let bin = |name: &str| npm.join("node_modules/.bin").join(name).to_string_lossy().into_owned();
    let roots = tempfile::tempdir().unwrap();
    let node = format!(
        "[mcp_servers.everything]\ncommand = {:?}\nargs = [\"stdio\"]\n\n[mcp_servers.fs]\ncommand = {:?}\nargs = [{:?}]\n",
        bin("mcp-server-everything"),
        bin("mcp-server-filesystem"),
        roots.path().to_string_lossy()
    );
    let server_home = tempfile::tempdir().unwrap();
    let fast: String = ["a", "b"]
        .iter()
        .map(|name| {
            format!(
                "[mcp_servers.{name}]\ncommand = {BIN:?}\nargs = [\"mcp-server\"]\nenv = {{ CODECODER_HOME = {:?} }}\n\n",
                server_home.path().to_string_lossy()
            )
        })
        .collect();
    println!(
        "MCP start benchmarks ({} cores, {RUNS} runs each)",
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    let none: Vec<f64> = (0..RUNS).map(|_| run("", &[])).collect();
    let with_fast: Vec<f64> =
        (0..RUNS).map(|_| run(&fast, &["mcp__a__codecoder", "mcp__b__codecoder"])).collect();
    let with_node: Vec<f64> = (0..RUNS)
        .map(|_| run(&node, &["mcp__everything__echo", "mcp__fs__list_directory"]))
        .collect();
    let (none, with_fast, with_node) = (median(none), median(with_fast), median(with_node));
    println!("start -> first request, no MCP server: median {none:.2} ms");
    println!(
        "start -> first request with both servers' tools, two `codecoder mcp-server`: median {with_fast:.2} ms"
    );
    println!("added by the two fast servers: {:.2} ms", with_fast - none);
    println!(
        "start -> first request with both servers' tools, two Node servers: median {with_node:.2} ms"
    );
}
