//! codecoder against codex on the same scripted tasks (prints figures): the 11-request task of
//! cheap commands and the 4-request bug fix with two Python test runs, both agents talking the
//! Responses API to the same fake model server, wall time and peak RSS, medians and the ratio.
//!
//! Offline by construction: the bench runs itself again inside `bwrap --unshare-net` (a network
//! namespace with only loopback), with an `/etc/hosts` that sends the hosts codex calls at start
//! (chatgpt.com, api.github.com, …) to 127.0.0.1, so those calls fail at once instead of waiting
//! for a DNS timeout; the fake server runs in the same namespace. codex's analytics, OpenTelemetry
//! export and update check are off in its config. Both agents run with their workspace-write
//! sandbox, in a HOME whose login profile takes ~90 ms (codex runs commands in a login shell by
//! default; codecoder sources its shell snapshot).
//!
//! codex: `CODECODER_BENCH_CODEX=/path/to/codex`, else the native binary of the `@openai/codex`
//! package under `$CODECODER_TEST_NPM/node_modules/@openai/codex*` (run directly, not through
//! the Node launcher). Without codex or bwrap, only codecoder's figures are printed.
//! Run: `cargo bench -p codecoder-cli --bench codex`.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::cast_precision_loss
)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use codecoder_test_support::{FakeModelServer, Reply, Script};

#[path = "support/mod.rs"]
mod support;
use support::agents::{Agent, Peers, enter_offline, load_average, offline, write_codex_config};
use support::{median, project, slow_home, wait_peak_rss_mib};

const BIN: &str = env!("CARGO_BIN_EXE_codecoder");
const RUNS: usize = 7;

/// A task: its name, its script for an agent, and how many requests it makes.
type Task = (&'static str, fn(Agent) -> Script, usize);

/// The 11-request task: nine cheap commands, a read, the answer.
fn cheap_task(agent: Agent) -> Script {
    let commands = [
        "ls -la",
        "grep -rn 'def ' .",
        "wc -l *.py",
        "sed -n 1,20p calc.py",
        "cat test_calc.py",
        "git status",
        "seq 1 12000",
        "git diff",
        "python3 test_calc.py; true",
    ];
    let mut script = Script::new();
    for (i, command) in commands.iter().enumerate() {
        script = script.reply(agent.command(&format!("c{i}"), command));
    }
    script.reply(agent.read("r", Path::new("."), "calc.py")).reply(Reply::text("done"))
}

/// The 4-request bug fix: run the tests (they fail), fix, run them again, answer.
fn bugfix_task(agent: Agent) -> Script {
    Script::new()
        .reply(agent.command("t1", "python3 test_calc.py"))
        .reply(agent.command("fix", "sed -i 's/return a - b/return a + b/' calc.py"))
        .reply(agent.command("t2", "python3 test_calc.py"))
        .reply(Reply::text("Fixed: add subtracted."))
}

/// One run of `agent` on `script` in a fresh project: (wall ms, peak RSS MiB).
fn run(agent: Agent, codex: Option<&Path>, script: Script, requests: usize) -> (f64, f64) {
    let home = tempfile::tempdir().unwrap();
    slow_home(home.path());
    // codex refuses to put its sandbox helper (on PATH for its bwrap) under /tmp: its home is
    // in the target directory.
    let agent_home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let repo = tempfile::tempdir().unwrap();
    project(repo.path());
    let server = FakeModelServer::start(script).unwrap();
    let mut command = match (agent, codex) {
        (Agent::Codex, Some(codex)) => {
            write_codex_config(agent_home.path(), &server.base_url());
            let mut command = Command::new(codex);
            command
                .args(["exec", "--skip-git-repo-check", "-s", "workspace-write", "do the task"])
                .env("CODEX_HOME", agent_home.path())
                .env("FAKE_API_KEY", "sk-bench");
            command
        }
        _ => {
            let mut command = Command::new(BIN);
            command
                .args(["exec", "--provider", "openai", "do the task"])
                .env("CODECODER_HOME", agent_home.path())
                .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()))
                .env("OPENAI_API_KEY", "sk-bench");
            command
        }
    };
    command
        .current_dir(repo.path())
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    let child = command.spawn().unwrap();
    let name = agent.name();
    let rss = wait_peak_rss_mib(child, name);
    let wall = started.elapsed().as_secs_f64() * 1000.0;
    let sent = server.requests();
    assert_eq!(sent.len(), requests, "{name} made every request");
    // The commands ran (a sandbox that refused them would answer fast and prove nothing).
    if requests == 11 {
        let last = &sent[requests - 1].raw_body;
        assert!(last.contains("11999") && last.contains("def add"), "{name} ran the commands");
    }
    if requests == 4 {
        let calc = std::fs::read_to_string(repo.path().join("calc.py")).unwrap();
        assert!(calc.contains("return a + b"), "{name} fixed the bug");
    }
    (wall, rss)
}

fn main() {
    enter_offline();
    println!(
        "codex comparison ({} cores, load {}, offline: {})",
        std::thread::available_parallelism().map_or(1, usize::from),
        load_average(),
        offline()
    );
    let codex = Peers::find().codex;
    let tasks: [Task; 2] = [
        ("11-request cheap-command task", cheap_task, 11),
        ("4-request bug fix, two python test runs", bugfix_task, 4),
    ];
    for (name, task, requests) in tasks {
        let mut ours = (Vec::new(), Vec::new());
        let mut theirs = (Vec::new(), Vec::new());
        // Alternate run by run, so that load changes hit both alike.
        for _ in 0..RUNS {
            let (wall, rss) = run(Agent::Codecoder, None, task(Agent::Codecoder), requests);
            ours.0.push(wall);
            ours.1.push(rss);
            if let Some(codex) = &codex {
                let (wall, rss) = run(Agent::Codex, Some(codex), task(Agent::Codex), requests);
                theirs.0.push(wall);
                theirs.1.push(rss);
            }
        }
        let (wall, rss) = (median(ours.0), median(ours.1));
        println!("{name}: codecoder wall median {wall:.0} ms, peak RSS {rss:.1} MiB ({RUNS} runs)");
        if codex.is_some() {
            let (codex_wall, codex_rss) = (median(theirs.0), median(theirs.1));
            println!(
                "{name}: codex wall median {codex_wall:.0} ms, peak RSS {codex_rss:.1} MiB ({RUNS} runs); codecoder / codex = {:.2}x wall",
                wall / codex_wall
            );
        }
    }
}
