//! What hooks add to a tool call, printing medians (no harness).
//!
//! A tool call fires PreToolUse before it runs and PostToolUse after it. Three configurations
//! are timed on the same call (`run_command`, with its arguments and a small output):
//! - no hooks at all (the baseline);
//! - one no-op command hook (`true`) on PreToolUse matching every tool: one process per call,
//!   its stdin JSON, its exit status read. Target: ≤ 3 ms over the baseline;
//! - ten configured hooks (five on PreToolUse, five on PostToolUse) whose matchers name other
//!   tools, so none runs: only the matcher look-ups. Target: ≤ 0.1 ms over the baseline.
//!
//! Each answer is checked (the no-op hook matches the call and allows it; the ten, which would
//! block with exit 2, ran nothing), so a broken configuration cannot pass as fast. Run with `cargo bench -p codecoder-hooks`.

// A benchmark binary is an edge like `main`: it prints, and it panics on setup failures.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codecoder_hooks::{CommonInput, Event, HookRunner, HookSet, HookSources};
use codecoder_sandbox::{CommandSpec, Outcome, SpawnConfig, Wait, output};
use serde_json::{Value, json};

/// Timed runs of the process-spawning case.
const SPAWN_RUNS: usize = 101;
/// Timed batches of the cases that spawn nothing, and calls per batch.
const BATCHES: usize = 31;
const CALLS_PER_BATCH: usize = 2000;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path();
    println!(
        "hooks benchmark: PreToolUse + PostToolUse of one run_command call ({} CPUs; load average {})",
        std::thread::available_parallelism().map_or(0, usize::from),
        loadavg()
    );

    let none = runner(project, json!({}));
    let baseline = per_call_batched(&none);
    println!("  no hooks:                       {}", micros(baseline));

    let mut ten = serde_json::Map::new();
    for (event, names) in [
        ("PreToolUse", ["Write", "Edit", "WebFetch", "mcp__github__.*", "Glob"]),
        ("PostToolUse", ["Write", "Edit|MultiEdit", "WebSearch", "mcp__.*__delete", "Grep"]),
    ] {
        let groups: Vec<Value> = names
            .iter()
            .map(|matcher| {
                json!({"matcher": matcher, "hooks": [{"type": "command", "command": "exit 2"}]})
            })
            .collect();
        ten.insert(event.to_owned(), Value::Array(groups));
    }
    let ten = runner(project, Value::Object(ten));
    let ten_cost = per_call_batched(&ten);
    println!(
        "  ten hooks, none matching:       {} (+{} over no hooks; target +100 µs)",
        micros(ten_cost),
        micros(ten_cost.saturating_sub(baseline))
    );

    let noop = runner(
        project,
        json!({"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "true"}]}]}),
    );
    // The hook runs for this call (Claude's name for run_command is Bash).
    assert_eq!(noop.set().commands_for(Event::PreToolUse, "Bash"), ["true"]);
    // Alternating with the same process started bare through the sandbox (what the runner
    // uses), so that both see the same load: the difference is what the runner adds.
    let (mut runs, mut bare): (Vec<Duration>, Vec<Duration>) =
        (0..SPAWN_RUNS).map(|_| (call(&noop), bare_process(project))).unzip();
    runs.sort();
    bare.sort();
    let noop_cost = runs[runs.len() / 2];
    println!(
        "  one no-op command hook (true):  {} (+{} over no hooks; target +3 ms; p90 {})",
        micros(noop_cost),
        micros(noop_cost.saturating_sub(baseline)),
        micros(runs[runs.len() * 9 / 10])
    );
    println!(
        "  of which `sh -c true` itself:   {} (the same process started bare through the sandbox; p90 {})",
        micros(bare[bare.len() / 2]),
        micros(bare[bare.len() * 9 / 10])
    );
}

/// `sh -c true` with a hook-sized stdin through `codecoder_sandbox::output`, timed.
fn bare_process(project: &Path) -> Duration {
    let mut spec = CommandSpec::new("sh", ["-c", "true"]);
    spec.cwd = Some(project.to_owned());
    spec.stdin = Some(vec![b' '; 400]);
    let started = Instant::now();
    let collected =
        output(&spec, &SpawnConfig::standard(), &Wait::within(Duration::from_secs(10)), 1 << 20)
            .unwrap();
    let elapsed = started.elapsed();
    assert!(
        matches!(collected.outcome, Outcome::Exited(status) if status.success()),
        "{:?}",
        collected.outcome
    );
    elapsed
}

fn runner(project: &Path, hooks: Value) -> HookRunner {
    let sources = HookSources {
        project_dir: project.to_owned(),
        home: None,
        config_hooks: Some((hooks, project.join("config.toml"))),
        read_claude_settings: false,
        project_trusted: true,
    };
    let (set, warnings) = HookSet::load(&sources).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let common = CommonInput {
        session_id: "bench".to_owned(),
        transcript_path: project.join("session.jsonl"),
        cwd: project.to_owned(),
        permission_mode: "default".to_owned(),
    };
    HookRunner::new(Arc::new(set), common)
}

/// One tool call's hooks: PreToolUse, then PostToolUse with the call's output. Every answer is
/// checked: no hook blocks (the ten non-matching ones would: they exit 2) and none failed.
fn call(runner: &HookRunner) -> Duration {
    let args = json!({"command": "cargo test -p codecoder-hooks", "timeout_ms": 60000});
    let output = json!({"output": "test result: ok. 18 passed", "success": true});
    let started = Instant::now();
    let pre = runner.pre_tool_use("run_command", &args, "call-1");
    let post = runner.post_tool_use("run_command", &args, "call-1", &output, Some(12));
    let elapsed = started.elapsed();
    assert_eq!(pre.verdict, None, "no hook blocks");
    assert!(pre.report.errors.is_empty() && post.report.errors.is_empty(), "{pre:?} {post:?}");
    elapsed
}

/// The median over batches of one call's cost, for runners that start no process.
fn per_call_batched(runner: &HookRunner) -> Duration {
    let mut batches: Vec<Duration> = (0..BATCHES)
        .map(|_| {
            (0..CALLS_PER_BATCH).map(|_| call(runner)).sum::<Duration>()
                / u32::try_from(CALLS_PER_BATCH).unwrap()
        })
        .collect();
    batches.sort();
    batches[batches.len() / 2]
}

fn micros(duration: Duration) -> String {
    format!("{:.1} µs", duration.as_secs_f64() * 1e6)
}

fn loadavg() -> String {
    let loadavg = fs_err::read_to_string("/proc/loadavg").unwrap_or_default();
    loadavg.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}
