//! Benchmark of a `write_stdin` round trip to an echoing process on a terminal (`cat`), against
//! the process's own round trip. Prints medians; `cargo bench -p codecoder-tools --bench pty`.
//!
//! - own: a line written straight to the PTY of a `cat` started with `spawn_pty`, until the
//!   terminal's echo and `cat`'s copy of it are read back (the terminal and the process alone);
//! - tool: the same line through `write_stdin` (with `yield_time_ms: 0`), then `write_stdin`
//!   polls with empty `chars` until both copies are in the results (the tool's whole path:
//!   argument checks, the session table, the owner thread, the output buffer).
//!
//! Environment: `CODECODER_BENCH_RUNS` (round trips per case, default 200).
// A benchmark is an edge binary: it reports on stdout and unwraps.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use codecoder_protocol::{AskUserAnswer, ContentItem};
use codecoder_sandbox::{CommandSpec, SpawnConfig, Wait};
use codecoder_tools::{StandaloneEnv, ToolsConfig, builtins, run_checked};
use serde_json::{Value, json};

fn main() {
    let runs: usize = std::env::var("CODECODER_BENCH_RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(200);
    let own = own_round_trip(runs);
    let tool = tool_round_trip(runs);
    println!("write_stdin round trip to cat on a PTY, median of {runs}:");
    println!("  the process's own (PTY write to echo read): {own:?}");
    println!("  through write_stdin (write, then polls):    {tool:?}");
    println!("  added by the tool: {:?}", tool.saturating_sub(own));
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn own_round_trip(runs: usize) -> Duration {
    let spec = CommandSpec::new("cat", Vec::<String>::new());
    let (mut child, mut input) =
        codecoder_sandbox::spawn_pty(&spec, &SpawnConfig::standard()).expect("cat on a PTY");
    let (chunks_tx, chunks) = crossbeam_channel::unbounded::<Vec<u8>>();
    let (kill_tx, kill) = crossbeam_channel::bounded::<()>(0);
    let waiter = std::thread::spawn(move || {
        let _ = child.wait(&Wait::new().kill_on(&kill), &mut |chunk| {
            let _ = chunks_tx.send(chunk.bytes.clone());
        });
    });
    let mut samples = Vec::with_capacity(runs);
    for n in 0..runs {
        let line = format!("ping {n}");
        let started = Instant::now();
        input.write(format!("{line}\n").as_bytes()).unwrap();
        let mut seen = String::new();
        while seen.matches(&line).count() < 2 {
            seen.push_str(&String::from_utf8_lossy(&chunks.recv().unwrap()));
        }
        samples.push(started.elapsed());
    }
    drop(kill_tx);
    waiter.join().unwrap();
    median(samples)
}

fn tool_round_trip(runs: usize) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let mut config = ToolsConfig::standard(dir.path(), vec![dir.path().to_owned()]);
    config.shell_args = vec!["-c".to_owned()];
    let tools = builtins(config);
    let env = StandaloneEnv::new(AskUserAnswer::Declined, 0);
    let call = |name: &str, args: Value| -> String {
        let tool = tools.iter().find(|tool| tool.name() == name).unwrap();
        let output = run_checked(tool.as_ref(), &env, args).unwrap();
        output
            .content
            .iter()
            .map(|item| match item {
                ContentItem::Text { text } => text.clone(),
                _ => String::new(),
            })
            .collect()
    };
    let started = call("exec_command", json!({"cmd": "exec cat", "tty": true, "yield_time_ms": 0}));
    assert!(started.contains("session ID 1"), "{started}");
    let mut samples = Vec::with_capacity(runs);
    for n in 0..runs {
        let line = format!("ping {n}");
        let started = Instant::now();
        let mut seen = call(
            "write_stdin",
            json!({"session_id": 1, "chars": format!("{line}\n"), "yield_time_ms": 0}),
        );
        while seen.matches(&line).count() < 2 {
            seen.push_str(&call("write_stdin", json!({"session_id": 1, "yield_time_ms": 0})));
        }
        samples.push(started.elapsed());
    }
    median(samples)
}
