//! codecoder beside codex (and Claude Code where it is installed) at scale, in one run
//! (prints figures): (a) process start → first model request, and the wall time of a 3-request
//! fix (a read, one command that edits a file and runs the tests, the answer), in a small
//! repository and in the generated monorepo (`huge_repo::Shape::Monorepo`, 200,000 files);
//! (b) peak memory at the end of a 300-step session (the model runs `echo` 300 times, then
//! answers); (c) resuming that session with a new prompt: start → first model request.
//!
//! Every measurement alternates the agents run by run, so load changes hit them alike; the
//! figures are medians. The agents run offline: the bench re-runs itself inside
//! `bwrap --unshare-net` with the fake model server in the same namespace (`support::agents`),
//! codex and codecoder on the Responses API, Claude Code on the Anthropic Messages API, each
//! with telemetry and update checks off. codex and codecoder run their workspace-write sandbox;
//! Claude Code runs its tools unsandboxed (its default), allowed by `--allowedTools`.
//!
//! The monorepo is shared by every bench that uses it, and the fix edits a file: the bench works
//! in a private copy of it (made once per target directory, with the bug-fix files committed at
//! its root) and restores the file after each run.
//!
//! Peers: `CODECODER_BENCH_CODEX` / `CODECODER_BENCH_CLAUDE`, else the native binaries under
//! `$CODECODER_TEST_NPM` (`@openai/codex`, `@anthropic-ai/claude-code`); a peer not found is
//! left out. Run: `cargo bench -p codecoder-cli --bench codex_scale`.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::cast_precision_loss
)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use codecoder_protocol::env::{CODECODER_HOME, HOME, OPENAI_API_KEY, OPENAI_BASE_URL, PATH};
use codecoder_test_support::huge_repo::{self, Shape};
use codecoder_test_support::{FakeModelServer, Reply, Script};

#[path = "support/mod.rs"]
mod support;
use support::agents::{
    Agent, Peers, claude_env, enter_offline, load_average, offline, write_codex_config,
};
use support::{TreePeak, git, median, project, slow_home, wait_peak_tree_rss};

const BIN: &str = env!("CARGO_BIN_EXE_codecoder");
/// Runs of each fix measurement (each agent, each repository).
const FIX_RUNS: usize = 3;
/// Runs of the long session and its resume (each agent).
const LONG_RUNS: usize = 3;
/// Tool calls in the long session.
const STEPS: usize = 300;
/// The model of every request (the fake server answers any).
const CLAUDE_MODEL: &str = "claude-sonnet-4-6";
const TIMEOUT: Duration = Duration::from_secs(600);

/// The fix's command: edit the file, run the tests.
const FIX: &str = "sed -i 's/return a - b/return a + b/' calc.py && python3 test_calc.py";

/// The 3-request fix: read calc.py, fix it and run the tests in one command, answer.
fn fix_script(agent: Agent, repo: &Path) -> Script {
    Script::new()
        .reply(agent.read("r", repo, "calc.py"))
        .reply(agent.command("fix", FIX))
        .reply(Reply::text("Fixed: add subtracted."))
}

/// The long session: `STEPS` cheap commands with small outputs, then the answer.
fn long_script(agent: Agent) -> Script {
    let mut script = Script::new();
    for i in 0..STEPS {
        script = script.reply(agent.command(&format!("s{i}"), &format!("echo step-{i}")));
    }
    script.reply(Reply::text("done"))
}

/// The directories one agent run uses: HOME, the agent's own home (codex refuses a
/// `CODEX_HOME` under /tmp, so these are in the target directory).
struct Homes {
    home: tempfile::TempDir,
    agent_home: tempfile::TempDir,
}

impl Homes {
    /// `slow`: a login profile that takes ~90 ms (the fix); else an empty HOME.
    fn new(slow: bool) -> Self {
        let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        if slow {
            slow_home(home.path());
        }
        let agent_home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        Self { home, agent_home }
    }
}

/// What to run: a new session with a prompt, or the resume of one.
enum Start<'a> {
    New,
    Resume(&'a str),
}

/// The command line of one agent run against `server` in `repo`; stdout to `stdout`.
fn agent_command(
    agent: Agent,
    peers: &Peers,
    homes: &Homes,
    server: &FakeModelServer,
    repo: &Path,
    start: &Start<'_>,
    stdout: Stdio,
) -> Command {
    let agent_home = homes.agent_home.path();
    let mut command = match agent {
        Agent::Codecoder => {
            let mut command = Command::new(BIN);
            // The 300-step session is one turn: past codecoder's default of 100 steps a turn
            // (codex and Claude Code have no such limit).
            command.args(["exec", "--json", "--provider", "openai"]);
            command.args(["-c", "agent.max_steps_per_turn=1000"]);
            match start {
                Start::New => command.arg("do the task"),
                Start::Resume(id) => command.args(["resume", id, "one more thing"]),
            };
            command
                .env(CODECODER_HOME, agent_home)
                .env(OPENAI_BASE_URL, format!("{}/v1", server.base_url()))
                .env(OPENAI_API_KEY, "sk-bench");
            command
        }
        Agent::Codex => {
            write_codex_config(agent_home, &server.base_url());
            let mut command = Command::new(peers.codex.as_deref().unwrap());
            match start {
                Start::New => command.args([
                    "exec",
                    "--json",
                    "--skip-git-repo-check",
                    "-s",
                    "workspace-write",
                    "do the task",
                ]),
                Start::Resume(id) => command.args([
                    "exec",
                    "resume",
                    "--json",
                    "--skip-git-repo-check",
                    id,
                    "one more thing",
                ]),
            };
            command.env("CODEX_HOME", agent_home).env("FAKE_API_KEY", "sk-bench");
            command
        }
        Agent::Claude => {
            let mut command = Command::new(peers.claude.as_deref().unwrap());
            command.args(["-p", "--model", CLAUDE_MODEL, "--allowedTools", "Bash,Read"]);
            match start {
                Start::New => command.args(["--session-id", &claude_session_id(), "do the task"]),
                Start::Resume(id) => command.args(["--resume", id, "one more thing"]),
            };
            claude_env(&mut command, &server.base_url(), agent_home);
            command
        }
    };
    command
        .current_dir(repo)
        .env(PATH, "/usr/local/bin:/usr/bin:/bin")
        .env(HOME, homes.home.path())
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::null());
    command
}

/// A fresh UUID v4 for Claude Code's `--session-id` (its session id is chosen by the caller).
fn claude_session_id() -> String {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let mixed = nanos ^ (u128::from(std::process::id()) << 64);
    let hex = format!("{mixed:032x}");
    format!("{}-{}-4{}-8{}-{}", &hex[0..8], &hex[8..12], &hex[13..16], &hex[17..20], &hex[20..32])
}

/// Waits for `agent`'s first model request at `server`: ms since `started`.
fn first_model_request_ms(agent: Agent, server: &FakeModelServer, started: Instant) -> f64 {
    for n in 1.. {
        let requests = server.wait_for_requests(n, TIMEOUT).unwrap();
        if agent.is_model_request(&requests[n - 1].path) {
            return started.elapsed().as_secs_f64() * 1000.0;
        }
    }
    unreachable!("the loop returns or panics")
}

/// The model requests `server` received from `agent`.
fn model_requests(agent: Agent, server: &FakeModelServer) -> usize {
    server.requests().iter().filter(|r| agent.is_model_request(&r.path)).count()
}

fn wait_success(mut child: Child, what: &str) {
    assert!(child.wait().unwrap().success(), "{what} failed");
}

/// One fix in `repo`: (start → first request ms, wall ms). Checks the fix and restores calc.py.
fn run_fix(agent: Agent, peers: &Peers, repo: &Path) -> (f64, f64) {
    let homes = Homes::new(true);
    let server = FakeModelServer::start(fix_script(agent, repo)).unwrap();
    let mut command =
        agent_command(agent, peers, &homes, &server, repo, &Start::New, Stdio::null());
    let started = Instant::now();
    let child = command.spawn().unwrap();
    let first = first_model_request_ms(agent, &server, started);
    wait_success(child, agent.name());
    let wall = started.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(model_requests(agent, &server), 3, "{} made the fix's 3 requests", agent.name());
    let calc = std::fs::read_to_string(repo.join("calc.py")).unwrap();
    assert!(calc.contains("return a + b"), "{} fixed the bug", agent.name());
    let last = server.requests().last().unwrap().raw_body.clone();
    assert!(last.contains("Ran 2 tests"), "{}'s tests ran and passed", agent.name());
    restore(repo);
    (first, wall)
}

/// Puts calc.py back as committed and checks that the tree is as the bench found it (which
/// also refreshes git's index, so the next run starts from the same state).
fn restore(repo: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bugfix/repo");
    std::fs::copy(source.join("calc.py"), repo.join("calc.py")).unwrap();
    let status = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=normal"])
        .current_dir(repo)
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    let stray: Vec<&str> = status.lines().filter(|line| !line.ends_with("notes.txt")).collect();
    assert!(stray.is_empty(), "the run left changes in {}: {stray:?}", repo.display());
}

/// The long session and its resume for one agent: (peak memory, wall ms of the session,
/// resume start → first request ms).
fn run_long(agent: Agent, peers: &Peers) -> (TreePeak, f64, f64) {
    let homes = Homes::new(false);
    let repo = tempfile::tempdir().unwrap();
    project(repo.path());
    let server = FakeModelServer::start(long_script(agent)).unwrap();
    let out = homes.home.path().join("stdout.jsonl");
    let stdout = Stdio::from(std::fs::File::create(&out).unwrap());
    let mut command =
        agent_command(agent, peers, &homes, &server, repo.path(), &Start::New, stdout);
    let started = Instant::now();
    let child = command.spawn().unwrap();
    let peak = wait_peak_tree_rss(child, agent.name());
    let wall = started.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(model_requests(agent, &server), STEPS + 1, "{} made every request", agent.name());
    let last = server.requests().last().unwrap().raw_body.clone();
    assert!(last.contains(&format!("step-{}", STEPS - 1)), "{} ran the commands", agent.name());
    let id = session_id(agent, &command, &out);

    let server = FakeModelServer::start(Script::new().reply(Reply::text("ok"))).unwrap();
    let mut command = agent_command(
        agent,
        peers,
        &homes,
        &server,
        repo.path(),
        &Start::Resume(&id),
        Stdio::null(),
    );
    let started = Instant::now();
    let child = command.spawn().unwrap();
    let resume = first_model_request_ms(agent, &server, started);
    wait_success(child, &format!("{} resume", agent.name()));
    let first = server.requests()[0].raw_body.clone();
    assert!(first.contains("step-0") && first.contains("one more thing"), "resumed history");
    (peak, wall, resume)
}

/// The session id of a finished run: from `thread.started` in its JSONL (codecoder, codex),
/// or the `--session-id` it was given (Claude Code).
fn session_id(agent: Agent, command: &Command, out: &Path) -> String {
    if agent == Agent::Claude {
        let args: Vec<_> = command.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        let at = args.iter().position(|a| a == "--session-id").unwrap();
        return args[at + 1].clone();
    }
    let text = std::fs::read_to_string(out).unwrap();
    text.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|event| event["type"] == "thread.started")
        .and_then(|event| event["thread_id"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("{} printed no thread.started", agent.name()))
}

/// The bench's own copy of the monorepo with the bug-fix files committed at its root, made once
/// per target directory (a copy of the shared fixture, whose index is then refreshed).
fn huge_copy() -> PathBuf {
    let source = huge_repo::ensure(Shape::Monorepo).unwrap();
    let name = source.file_name().unwrap().to_string_lossy().into_owned();
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("codex-scale");
    let copy = base.join(&name);
    let stamp = base.join(format!("{name}.stamp"));
    if stamp.is_file() {
        return copy;
    }
    std::fs::create_dir_all(&base).unwrap();
    if copy.exists() {
        std::fs::remove_dir_all(&copy).unwrap();
    }
    let started = Instant::now();
    let status = Command::new("cp").arg("-a").arg(&source).arg(&copy).status().unwrap();
    assert!(status.success(), "copying {}", source.display());
    let source_files = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bugfix/repo");
    for file in ["calc.py", "test_calc.py"] {
        std::fs::copy(source_files.join(file), copy.join(file)).unwrap();
    }
    git(&copy, &["add", "calc.py", "test_calc.py"]);
    git(&copy, &["commit", "-qm", "the bug-fix example"]);
    std::fs::write(copy.join("notes.txt"), "todo\n").unwrap();
    restore(&copy);
    std::fs::write(&stamp, "copied\n").unwrap();
    println!(
        "copied the monorepo to {} in {:.0} s",
        copy.display(),
        started.elapsed().as_secs_f64()
    );
    copy
}

/// Median of each column of `(first, wall)` samples.
fn medians(samples: &[(f64, f64)]) -> (f64, f64) {
    (median(samples.iter().map(|s| s.0).collect()), median(samples.iter().map(|s| s.1).collect()))
}

fn main() {
    enter_offline();
    println!(
        "codex side by side at scale ({} cores, load {}, offline: {})",
        std::thread::available_parallelism().map_or(1, usize::from),
        load_average(),
        offline()
    );
    let peers = Peers::find();
    let agents: Vec<Agent> = [Agent::Codecoder, Agent::Codex, Agent::Claude]
        .into_iter()
        .filter(|&agent| agent == Agent::Codecoder || peers.binary(agent).is_some())
        .collect();

    let huge = huge_copy();
    let small = tempfile::tempdir().unwrap();
    project(small.path());
    for (repo_name, repo) in [("small repo", small.path()), ("monorepo (200k files)", &huge)] {
        let mut samples = vec![Vec::new(); agents.len()];
        for run in 0..FIX_RUNS {
            // Rotate who goes first, so that neither always runs on a warm cache.
            for k in 0..agents.len() {
                let i = (k + run) % agents.len();
                samples[i].push(run_fix(agents[i], &peers, repo));
            }
        }
        for (agent, samples) in agents.iter().zip(&samples) {
            let (first, wall) = medians(samples);
            println!(
                "{repo_name}: {}: start -> first request {first:.0} ms, 3-request fix {wall:.0} ms (median of {FIX_RUNS}, load {})",
                agent.name(),
                load_average()
            );
        }
    }

    let mut samples = vec![Vec::new(); agents.len()];
    for run in 0..LONG_RUNS {
        for k in 0..agents.len() {
            let i = (k + run) % agents.len();
            samples[i].push(run_long(agents[i], &peers));
        }
    }
    for (agent, samples) in agents.iter().zip(&samples) {
        let root = median(samples.iter().map(|s| s.0.root_mib).collect());
        let tree = median(samples.iter().map(|s| s.0.tree_mib).collect());
        let wall = median(samples.iter().map(|s| s.1).collect());
        let resume = median(samples.iter().map(|s| s.2).collect());
        println!(
            "{STEPS}-step session: {}: peak RSS {root:.1} MiB (process tree {tree:.1} MiB), wall {wall:.0} ms; resume -> first request {resume:.0} ms (median of {LONG_RUNS}, load {})",
            agent.name(),
            load_average()
        );
    }
}
