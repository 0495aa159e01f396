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

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use codecoder_protocol::env::{CODECODER_BENCH_CODEX, CODECODER_BENCH_NETNS, CODECODER_TEST_NPM};
use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::json;

#[path = "support/mod.rs"]
mod support;
use support::{median, project, slow_home, wait_peak_rss_mib};

const BIN: &str = env!("CARGO_BIN_EXE_codecoder");
const RUNS: usize = 7;

/// The two agents: how each names its shell tool and what else differs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Agent {
    Codecoder,
    Codex,
}

impl Agent {
    /// A tool call running `command` in this agent's shell tool.
    fn command(self, id: &str, command: &str) -> Reply {
        match self {
            Self::Codecoder => Reply::tool_call(id, "run_command", json!({ "command": command })),
            Self::Codex => Reply::tool_call(id, "exec_command", json!({ "cmd": command })),
        }
    }

    /// A tool call reading `path`: codecoder's `read_file`; codex has no read tool and cats.
    fn read(self, id: &str, path: &str) -> Reply {
        match self {
            Self::Codecoder => Reply::tool_call(id, "read_file", json!({ "path": path })),
            Self::Codex => self.command(id, &format!("cat {path}")),
        }
    }
}

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
    script.reply(agent.read("r", "calc.py")).reply(Reply::text("done"))
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
            std::fs::write(
                agent_home.path().join("config.toml"),
                format!(
                    "model = \"gpt-5\"\nmodel_provider = \"fake\"\ncheck_for_update_on_startup = false\n\
                     [model_providers.fake]\nname = \"fake\"\nbase_url = \"{}/v1\"\n\
                     wire_api = \"responses\"\nenv_key = \"FAKE_API_KEY\"\n\
                     request_max_retries = 0\nstream_max_retries = 0\n\
                     [analytics]\nenabled = false\n[otel]\nexporter = \"none\"\n",
                    server.base_url()
                ),
            )
            .unwrap();
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
    let name = if agent == Agent::Codex { "codex" } else { "codecoder" };
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

/// The native codex binary: `CODECODER_BENCH_CODEX`, else under the test npm prefix.
fn find_codex() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(CODECODER_BENCH_CODEX).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let npm = std::env::var_os(CODECODER_TEST_NPM).filter(|p| !p.is_empty())?;
    let scope = Path::new(&npm).join("node_modules/@openai");
    for package in std::fs::read_dir(&scope).ok()?.flatten() {
        if !package.file_name().to_string_lossy().starts_with("codex") {
            continue;
        }
        let Ok(targets) = std::fs::read_dir(package.path().join("vendor")) else { continue };
        for target in targets.flatten() {
            for candidate in ["bin/codex", "codex/codex"] {
                let path = target.path().join(candidate);
                if path.is_file() {
                    return Some(path);
                }
            }
        }
    }
    None
}

/// Runs this bench again inside a network namespace of its own; `None` when bwrap is missing.
fn rerun_offline() -> Option<std::process::ExitStatus> {
    let bwrap = Command::new("bwrap").arg("--version").output().ok()?;
    if !bwrap.status.success() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    std::fs::write(
        &hosts,
        "127.0.0.1 localhost chatgpt.com ab.chatgpt.com api.openai.com api.github.com github.com\n\
         ::1 localhost\n",
    )
    .unwrap();
    let status = Command::new("bwrap")
        .args(["--unshare-net", "--dev-bind", "/", "/", "--proc", "/proc", "--ro-bind"])
        .arg(&hosts)
        .arg("/etc/hosts")
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .args(std::env::args_os().skip(1))
        .env(CODECODER_BENCH_NETNS, "1")
        .status()
        .unwrap();
    Some(status)
}

fn main() {
    if std::env::var_os(CODECODER_BENCH_NETNS).is_none() {
        match rerun_offline() {
            Some(status) => std::process::exit(status.code().unwrap_or(1)),
            None => println!("bwrap is not available: running on the host network"),
        }
    }
    println!(
        "codex comparison ({} cores, load {}, offline: {})",
        std::thread::available_parallelism().map_or(1, usize::from),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split(' ')
            .next()
            .unwrap_or("?"),
        std::env::var_os(CODECODER_BENCH_NETNS).is_some()
    );
    let codex = find_codex();
    match &codex {
        Some(path) => {
            let version = Command::new(path).arg("--version").output().unwrap();
            println!(
                "codex: {} ({})",
                path.display(),
                String::from_utf8_lossy(&version.stdout).trim()
            );
        }
        None => println!("codex: not found (set {CODECODER_BENCH_CODEX}); codecoder only"),
    }
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
