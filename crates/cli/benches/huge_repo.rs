//! Huge-repository benchmarks (prints medians) on the generated fixtures of
//! `codecoder_test_support::huge_repo` (the monorepo: 200,000 files, about 2 GB; the
//! kernel-shaped tree: 80,000 files; the small monorepo as the baseline):
//! - session start: `codecoder exec` process start to the first request at the fake model
//!   server, at the repository's root and in a nested package directory;
//! - AGENTS.md discovery, in process, through `codecoder_context::AgentsMdLoader` (a fresh
//!   loader each run, as at a process's start);
//! - the `glob` and `grep` tools, in process, against ripgrep on the same query
//!   (`rg --files -g GLOB`, `rg -l WORD`), when `rg` is installed.
//!
//! Run: `cargo bench -p codecoder-cli --bench huge_repo` (all shapes), or name shapes after
//! `--`: `monorepo`, `kernel`, `small`. The first run generates the fixtures under
//! `target/huge-repos` (minutes for the big ones, once).
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codecoder_context::{AgentsMdConfig, AgentsMdLoader};
use codecoder_protocol::{AskUserAnswer, ContentItem};
use codecoder_test_support::huge_repo::{self, COMMON_WORD, RARE_WORD, Shape};
use codecoder_test_support::{FakeModelServer, Reply, Script};
use codecoder_tools::{Builtin, StandaloneEnv, ToolsConfig, builtins, run_checked};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_codecoder");

/// Runs per session-start figure.
const START_RUNS: usize = 11;
/// Runs per discovery figure.
const DISCOVERY_RUNS: usize = 101;
/// Runs per search figure (each side).
const SEARCH_RUNS: usize = 7;

fn bin() -> std::ffi::OsString {
    std::env::var_os(codecoder_protocol::env::CODECODER_BENCH_BIN)
        .filter(|bin| !bin.is_empty())
        .unwrap_or_else(|| BIN.into())
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim().to_owned()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|arg| !arg.starts_with('-')).collect();
    let wanted = |name: &str| args.is_empty() || args.iter().any(|arg| arg == name);
    println!(
        "huge-repo benchmarks ({} cores; load {})",
        std::thread::available_parallelism().map_or(1, usize::from),
        loadavg()
    );
    let rg = which("rg");
    match &rg {
        Some(rg) => println!("rg: {}", rg.display()),
        None => println!(
            "rg: NOT INSTALLED (apt-get install -y ripgrep): the glob/grep comparison is skipped"
        ),
    }
    let shapes =
        [("small", Shape::Small), ("kernel", Shape::KernelLike), ("monorepo", Shape::Monorepo)];
    for (name, shape) in shapes {
        if !wanted(name) {
            continue;
        }
        let started = Instant::now();
        let root = huge_repo::ensure(shape).unwrap();
        let tracked = tracked_files(&root);
        println!(
            "\n== {} ({tracked} tracked files; ready in {:.1} s) ==",
            root.display(),
            started.elapsed().as_secs_f64()
        );
        let nested = root.join(shape.nested_dir());
        session_start(&root, "root");
        session_start(&nested, shape.nested_dir());
        discovery(&root, "root");
        discovery(&nested, shape.nested_dir());
        search(&root, shape, rg.as_deref());
        println!("(load {})", loadavg());
    }
}

fn tracked_files(root: &Path) -> usize {
    let out = Command::new("git").args(["ls-files", "-z"]).current_dir(root).output().unwrap();
    out.stdout.iter().filter(|&&b| b == 0).count()
}

fn exec(home: &Path, cwd: &Path, server: &FakeModelServer) -> Command {
    let mut command = Command::new(bin());
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

/// Median time from spawning `codecoder exec` in `cwd` to the first request at the server.
fn session_start(cwd: &Path, what: &str) {
    let mut samples = Vec::new();
    let mut environment = String::new();
    for run in 0..=START_RUNS {
        let home = tempfile::tempdir().unwrap();
        let server = FakeModelServer::start(Script::new().reply(Reply::text("ok"))).unwrap();
        let started = Instant::now();
        let mut child = exec(home.path(), cwd, &server).spawn().unwrap();
        server.wait_for_requests(1, Duration::from_secs(60)).unwrap();
        let elapsed = ms(started.elapsed());
        assert!(child.wait().unwrap().success());
        // The first run warms the page cache and the binary; it is not counted.
        if run > 0 {
            samples.push(elapsed);
        }
        if environment.is_empty() {
            let body = server.requests()[0].body.to_string();
            environment = body
                .split("\\n")
                .filter(|line| line.starts_with("- Git"))
                .collect::<Vec<_>>()
                .join(" | ");
        }
    }
    println!(
        "session start (exec spawn -> first request), {what}: median {:.1} ms ({START_RUNS} runs); prompt says: {environment}",
        median(samples)
    );
}

/// Median time of one AGENTS.md discovery from `cwd` with a fresh loader.
fn discovery(cwd: &Path, what: &str) {
    let home = tempfile::tempdir().unwrap();
    let config = AgentsMdConfig::standard(Some(home.path().to_path_buf()));
    let mut samples = Vec::new();
    let mut files = 0;
    for _ in 0..DISCOVERY_RUNS {
        let started = Instant::now();
        let loaded = AgentsMdLoader::new().load(&config, cwd);
        samples.push(ms(started.elapsed()));
        files = loaded.files.len();
    }
    println!(
        "AGENTS.md discovery, {what}: median {:.3} ms ({DISCOVERY_RUNS} runs, {files} files found)",
        median(samples)
    );
}

fn call(tools: &[Arc<dyn Builtin>], name: &str, args: Value) -> String {
    let env = StandaloneEnv::new(AskUserAnswer::Declined, 0);
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
}

fn time(mut f: impl FnMut()) -> f64 {
    f(); // Warms the page cache.
    median(
        (0..SEARCH_RUNS)
            .map(|_| {
                let started = Instant::now();
                f();
                ms(started.elapsed())
            })
            .collect(),
    )
}

/// The tools and ripgrep on the same queries, in the repository's root.
fn search(root: &Path, shape: Shape, rg: Option<&Path>) {
    let tools = builtins(ToolsConfig::standard(root, vec![root.to_path_buf()]));
    let deep = shape.deep_glob();
    let cases: [(&str, &str, Value, Vec<&str>); 4] = [
        ("glob", deep, json!({"pattern": deep}), vec!["--files", "-g", deep]),
        ("glob", "*.md", json!({"pattern": "*.md"}), vec!["--files", "-g", "*.md"]),
        (
            "grep files",
            COMMON_WORD,
            json!({"pattern": COMMON_WORD, "output": "files"}),
            vec!["-l", COMMON_WORD],
        ),
        (
            "grep files",
            RARE_WORD,
            json!({"pattern": RARE_WORD, "output": "files"}),
            vec!["-l", RARE_WORD],
        ),
    ];
    for (tool, query, args, rg_args) in cases {
        let name = tool.split(' ').next().unwrap();
        let mut summary = String::new();
        let ours = time(|| {
            let out = call(&tools, name, args.clone());
            summary = out.lines().last().unwrap_or_default().to_owned();
        });
        let Some(rg) = rg else {
            println!("{tool} `{query}`: ours {ours:.1} ms (rg not installed); {summary}");
            continue;
        };
        let mut rg_lines = 0;
        let theirs = time(|| {
            // Read through a pipe: ripgrep quits at the first match when stdout is /dev/null.
            let out = Command::new(rg).args(&rg_args).current_dir(root).output().unwrap();
            rg_lines = out.stdout.iter().filter(|&&b| b == b'\n').count();
        });
        println!(
            "{tool} `{query}`: ours median {ours:.1} ms, rg {} median {theirs:.1} ms ({rg_lines} paths): {:.2}x; ours ends: {summary}",
            rg_args.join(" "),
            ours / theirs
        );
    }
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path).map(|dir| dir.join(program)).find(|path| path.is_file())
    })
}
