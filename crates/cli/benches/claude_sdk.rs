//! The Claude Agent SDKs' start-up (prints figures): from the `query()` call to the fake model's
//! first request, with the SDK pointed at codecoder and at the Claude Code binary the same SDK
//! package bundles (same driver, `tests/claude-sdk/drive.*` scenario `bench`; only the
//! executable differs), for the TypeScript and the Python SDK. Beside them, the executables
//! without an SDK: process start → first request, with `initialize` and the user message written
//! to stdin at once, which is the executable's own share of the SDK figure.
//!
//! Every measurement alternates the two executables run by run and reports medians. Claude Code
//! only runs offline: the bench re-runs itself inside `bwrap --unshare-net` with the fake model
//! server in the same namespace (`support::agents`), telemetry and update checks off.
//!
//! Needs the SDKs `.ci/claude-sdk-env.sh` installs (`CODECODER_TEST_CLAUDE_SDK_JS`,
//! `CODECODER_TEST_CLAUDE_SDK_PY`); an SDK not installed is left out. Runs per figure: the first
//! argument, default 10. And codecoder alone: its stream-json start-up beside `codecoder exec`'s,
//! the headless harness's own share. `CODECODER_BENCH_BIN` measures another codecoder build.
//! Run: `cargo bench -p codecoder-cli --bench claude_sdk [-- RUNS]`.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::cast_precision_loss
)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use codecoder_protocol::env::{
    CODECODER_BENCH_BIN, CODECODER_HOME, CODECODER_TEST_CLAUDE_SDK_JS,
    CODECODER_TEST_CLAUDE_SDK_PY, HOME, PATH,
};
use codecoder_test_support::{FakeModelServer, Reply, Script};

#[path = "support/mod.rs"]
mod support;
use support::agents::{claude_env, enter_offline, load_average, offline};
use support::median;

const BIN: &str = env!("CARGO_BIN_EXE_codecoder");
const MODEL: &str = "claude-sonnet-4-6";
/// A guard against a run that never reaches the model, not a measure.
const TIMEOUT: Duration = Duration::from_secs(120);

/// The executable an SDK drives.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Exe {
    Codecoder,
    Claude,
}

impl Exe {
    fn name(self) -> &'static str {
        match self {
            Exe::Codecoder => "codecoder",
            Exe::Claude => "claude",
        }
    }
}

/// One run's private directories and the fake model.
struct World {
    dir: tempfile::TempDir,
    server: FakeModelServer,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["home", "user", "claude", "ws"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        std::fs::write(
            dir.path().join("home/config.toml"),
            format!("model = \"{MODEL}\"\nmodel_provider = \"anthropic\"\n"),
        )
        .unwrap();
        let server =
            FakeModelServer::start(Script::new().when_exhausted(Reply::text("hi there"))).unwrap();
        Self { dir, server }
    }

    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// The environment of either executable: its own homes, the fake model, quiet.
    fn env(&self, command: &mut Command) {
        command
            .env_clear()
            .env(PATH, std::env::var_os(PATH).unwrap_or_default())
            .env(HOME, self.dir.path().join("user"))
            .env(CODECODER_HOME, self.dir.path().join("home"));
        claude_env(command, &self.server.base_url(), &self.dir.path().join("claude"));
    }

    /// The wall-clock time of the first model request, waited for.
    fn first_request_at(&self) -> f64 {
        self.server.wait_for_requests(1, TIMEOUT).unwrap();
        epoch_ms(SystemTime::now())
    }
}

fn epoch_ms(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH).unwrap().as_secs_f64() * 1000.0
}

/// An installed SDK: the command that runs its driver, and the Claude Code it bundles.
struct Sdk {
    name: &'static str,
    /// The driver's program and arguments.
    driver: Vec<std::ffi::OsString>,
    /// What the driver's environment needs besides the executable's.
    env: Vec<(&'static str, std::ffi::OsString)>,
    bundled: PathBuf,
}

fn sdks() -> Vec<Sdk> {
    let drivers = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/claude-sdk");
    let mut found = Vec::new();
    match std::env::var_os(CODECODER_TEST_CLAUDE_SDK_JS).filter(|v| !v.is_empty()) {
        Some(prefix) => {
            let scope = Path::new(&prefix).join("node_modules/@anthropic-ai");
            let bundled = std::fs::read_dir(&scope)
                .unwrap()
                .flatten()
                .map(|entry| entry.path().join("claude"))
                .find(|path| path.is_file())
                .expect("the TypeScript SDK's platform package with its claude binary");
            let driver = vec!["node".into(), drivers.join("drive.mjs").into(), "bench".into()];
            let env = vec![(CODECODER_TEST_CLAUDE_SDK_JS, prefix)];
            found.push(Sdk { name: "TypeScript SDK", driver, env, bundled });
        }
        None => println!("TypeScript SDK: left out ({CODECODER_TEST_CLAUDE_SDK_JS} is not set)"),
    }
    match std::env::var_os(CODECODER_TEST_CLAUDE_SDK_PY).filter(|v| !v.is_empty()) {
        Some(python) => {
            let out = Command::new(&python)
                .args(["-c", "import claude_agent_sdk, pathlib; print(pathlib.Path(claude_agent_sdk.__file__).parent / '_bundled' / 'claude')"])
                .output()
                .unwrap();
            let bundled = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
            assert!(bundled.is_file(), "{}", bundled.display());
            let driver = vec![python, drivers.join("drive.py").into(), "bench".into()];
            found.push(Sdk { name: "Python SDK", driver, env: Vec::new(), bundled });
        }
        None => println!("Python SDK: left out ({CODECODER_TEST_CLAUDE_SDK_PY} is not set)"),
    }
    found
}

/// `query()` → first model request, in ms, through `sdk` driving `exe`.
fn through_sdk(sdk: &Sdk, exe: Exe) -> f64 {
    let world = World::new();
    let executable = match exe {
        Exe::Codecoder => bin(),
        Exe::Claude => sdk.bundled.clone(),
    };
    let mut command = Command::new(&sdk.driver[0]);
    command.args(&sdk.driver[1..]);
    world.env(&mut command);
    command
        .envs(sdk.env.iter().map(|(key, value)| (key, value)))
        .current_dir(world.ws())
        .env("CODECODER_BIN", executable)
        .env("SDK_MODEL", MODEL);
    let (first, out) = std::thread::scope(|scope| {
        let first = scope.spawn(|| world.first_request_at());
        let out = command.output().unwrap();
        (first.join().unwrap(), out)
    });
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let failed = || {
        format!(
            "{} with {}: {}{}",
            sdk.name,
            exe.name(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let summary =
        lines.iter().find_map(|line| line.get("summary")).unwrap_or_else(|| panic!("{}", failed()));
    assert!(out.status.success() && summary["error"].is_null(), "{}", failed());
    let query_at = lines
        .iter()
        .find_map(|line| line["query_at_ms"].as_f64())
        .unwrap_or_else(|| panic!("{}", failed()));
    first - query_at
}

/// Process start → first model request, in ms, with the stream-json input written at once.
fn direct(exe: Exe, bundled: &Path) -> f64 {
    let program = match exe {
        Exe::Codecoder => bin(),
        Exe::Claude => bundled.to_owned(),
    };
    let args = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"];
    let input = concat!(
        r#"{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize","hooks":null}}"#,
        "\n",
        r#"{"type":"user","session_id":"","message":{"role":"user","content":"say hi"},"parent_tool_use_id":null}"#,
        "\n",
    );
    spawned(&program, &[&args[..], &["--model", MODEL]].concat(), Some(input))
}

/// `codecoder exec` (the front-end without the Claude protocol): process start → first model
/// request, in ms.
fn exec() -> f64 {
    spawned(&bin(), &["exec", "say hi"], None)
}

/// Starts `program ARGS`, writes `input` and keeps stdin open until the first model request (no
/// stdin without input: `exec` would read it to its end as part of the prompt); returns the time
/// from the spawn to that request, in ms.
fn spawned(program: &Path, args: &[&str], input: Option<&str>) -> f64 {
    let world = World::new();
    let mut command = Command::new(program);
    command.args(args).current_dir(world.ws());
    world.env(&mut command);
    std::thread::scope(|scope| {
        let first = scope.spawn(|| world.first_request_at());
        let started = epoch_ms(SystemTime::now());
        let mut child = command
            .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take();
        if let (Some(pipe), Some(input)) = (stdin.as_mut(), input) {
            pipe.write_all(input.as_bytes()).unwrap();
        }
        let at = first.join().unwrap();
        drop(stdin);
        let waited = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if waited.elapsed() > TIMEOUT {
                child.kill().unwrap();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        at - started
    })
}

/// The codecoder binary measured: `CODECODER_BENCH_BIN`, else the one cargo built.
fn bin() -> PathBuf {
    std::env::var_os(CODECODER_BENCH_BIN)
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from(BIN), PathBuf::from)
}

fn main() {
    enter_offline();
    let runs: usize = std::env::args().skip(1).find_map(|arg| arg.parse().ok()).unwrap_or(10);
    println!(
        "Claude Agent SDK start-up ({} cores, load {}, offline: {}, {runs} runs each)",
        std::thread::available_parallelism().map_or(1, usize::from),
        load_average(),
        offline()
    );
    println!("codecoder: {}", bin().display());
    // The headless harness's own share: stream-json start-up beside `exec`'s.
    let mut headless = Vec::new();
    let mut plain = Vec::new();
    for _ in 0..runs {
        headless.push(direct(Exe::Codecoder, Path::new("")));
        plain.push(exec());
    }
    let (headless, plain) = (median(headless), median(plain));
    println!(
        "codecoder alone: process start -> first request: stream-json {headless:.0} ms, exec {plain:.0} ms; the headless harness's share {:.0} ms",
        headless - plain
    );
    let sdks = sdks();
    let exes: Vec<Exe> =
        if offline() { vec![Exe::Codecoder, Exe::Claude] } else { vec![Exe::Codecoder] };
    for sdk in &sdks {
        println!("{}: bundled Claude Code {}", sdk.name, sdk.bundled.display());
        let mut through = vec![Vec::new(); exes.len()];
        let mut alone = vec![Vec::new(); exes.len()];
        for run in 0..runs {
            // Rotate who goes first, so that neither always runs on a warm cache.
            for k in 0..exes.len() {
                let i = (k + run) % exes.len();
                through[i].push(through_sdk(sdk, exes[i]));
                alone[i].push(direct(exes[i], &sdk.bundled));
            }
        }
        let medians: Vec<(f64, f64)> = through
            .into_iter()
            .zip(alone)
            .map(|(through, alone)| (median(through), median(alone)))
            .collect();
        for (exe, (through, alone)) in exes.iter().zip(&medians) {
            println!(
                "{}: {}: query() -> first model request {through:.0} ms; process start -> first request {alone:.0} ms (its own share); the SDK's {:.0} ms",
                sdk.name,
                exe.name(),
                through - alone
            );
        }
        if let [(ours, _), (theirs, _)] = medians[..] {
            println!("{}: codecoder / claude = {:.2}", sdk.name, ours / theirs);
        }
    }
    println!("load after: {}", load_average());
}
