//! Benchmarks of the session log, printing figures (no harness): append throughput with fsync at
//! turn end (group-committed on the writer's `session-sync` thread; the figure includes the final
//! `sync()` that waits for the last one) and without fsync, load + validate + project of a 100,000-record log, and peak RSS while loading it.
//!
//! Run with `cargo bench -p codecoder-session`. Each figure is the median of several runs. Peak
//! RSS is `VmHWM` of a fresh child process (this binary re-run with `--load-only FILE`), so that
//! the writing done before does not count. Besides wall-clock figures it prints on-CPU time
//! (`/proc/thread-self/schedstat`), which other load on a shared machine inflates less. Targets (issue 2, on a 2-core machine): append
//! ≥ 200,000 records/s, load + validate + project < 300 ms, peak RSS < 100 MB.

// A benchmark binary is an edge like `main`: it prints, and it panics on setup failures.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codecoder_protocol::{
    Message, MessageItem, RecordBody, Role, StepId, StopReason, ToolCall, ToolCallId, ToolResult,
    ToolResultStatus, TurnId, TurnOutcome, Usage,
};
use codecoder_session::{FsyncPolicy, NewSession, SessionStore, WriterConfig, load};
use codecoder_stdx::ManualClock;

const RUNS: usize = 5;
/// Records per turn in the mix below.
const TURN_RECORDS: usize = 8;
const LOG_RECORDS: usize = 100_000;
const LOAD_ONLY: &str = "--load-only";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // Cargo passes `--bench` (and maybe a filter); only `--load-only FILE` changes what we do.
    if let Some(at) = args.iter().position(|arg| arg == LOAD_ONLY) {
        load_only(args.get(at + 1).map(Path::new));
        return;
    }

    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let loadavg = fs_err::read_to_string("/proc/loadavg").unwrap_or_default();
    let loadavg = loadavg.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    println!(
        "session log benchmarks (median of {RUNS} runs; {} CPUs; load average {loadavg})",
        cpus()
    );

    // Group commit keeps the disk off the appending thread, so both policies append as many
    // records as the log read back below.
    for (fsync, records) in [(FsyncPolicy::Turn, LOG_RECORDS), (FsyncPolicy::Never, LOG_RECORDS)] {
        let mut rates = Vec::new();
        let mut cpu_rates = Vec::new();
        let mut turns = 0;
        for _ in 0..RUNS {
            let (count, elapsed, cpu, turn_count) = append_run(&store, fsync, records);
            rates.push(count as f64 / elapsed.as_secs_f64());
            cpu_rates.push(count as f64 / cpu.as_secs_f64());
            turns = turn_count;
        }
        let rate = median(&mut rates);
        let target = if fsync == FsyncPolicy::Turn { "  [target >= 200,000]" } else { "" };
        println!(
            "append, fsync={fsync:?}: {rate:.0} records/s, best {:.0}; per on-CPU second {:.0} \
             ({records} records in {turns} turns; runs: {}){target}",
            rates[rates.len() - 1],
            median(&mut cpu_rates),
            fmt_runs(&rates, 0)
        );
    }

    // A 100,000-record log to read back.
    let path = write_log(&store, LOG_RECORDS);
    let size_mb = fs_err::metadata(&path).unwrap().len() as f64 / 1e6;
    let mut load_ms = Vec::new();
    let mut project_ms = Vec::new();
    let mut total_ms = Vec::new();
    let mut cpu_ms = Vec::new();
    for _ in 0..RUNS {
        let cpu_start = thread_cpu();
        let start = Instant::now();
        let loaded = load(&path).unwrap();
        let loaded_at = start.elapsed();
        let projection = loaded.projection();
        let total = start.elapsed();
        cpu_ms.push((thread_cpu() - cpu_start).as_secs_f64() * 1e3);
        assert_eq!(loaded.entries.len(), LOG_RECORDS + 1);
        assert!(!projection.history().is_empty());
        load_ms.push(loaded_at.as_secs_f64() * 1e3);
        project_ms.push((total - loaded_at).as_secs_f64() * 1e3);
        total_ms.push(total.as_secs_f64() * 1e3);
    }
    println!(
        "load + validate + project {} records ({size_mb:.1} MB): {:.1} ms, best {:.1}; on-CPU \
         {:.1} ms (load+validate {:.1} ms, project {:.1} ms; runs: {})  [target < 300 ms]",
        LOG_RECORDS + 1,
        median(&mut total_ms),
        total_ms[0],
        median(&mut cpu_ms),
        median(&mut load_ms),
        median(&mut project_ms),
        fmt_runs(&total_ms, 1),
    );

    let mut peaks = Vec::new();
    for _ in 0..RUNS {
        peaks.push(child_peak_kb(Some(&path)) as f64 / 1024.0);
    }
    let baseline = child_peak_kb(None) as f64 / 1024.0;
    println!(
        "peak RSS (VmHWM) loading it in a fresh process: {:.1} MB (process baseline {baseline:.1} \
         MB; runs: {})  [target < 100 MB]",
        median(&mut peaks),
        fmt_runs(&peaks, 1),
    );
}

/// The child: load and project `path` (or nothing), then print `VmHWM` in kB.
fn load_only(path: Option<&Path>) {
    let kept = path.map(|path| {
        let loaded = load(path).unwrap();
        let projection = loaded.projection();
        (loaded, projection)
    });
    let status = fs_err::read_to_string("/proc/self/status").unwrap();
    let hwm = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap();
    println!("{hwm}");
    drop(kept);
}

/// Runs this binary with `--load-only` and returns the child's peak RSS in kB.
fn child_peak_kb(path: Option<&Path>) -> u64 {
    let exe = std::env::current_exe().unwrap();
    // A benchmark spawns itself; it is no tool process and needs no sandbox.
    #[allow(clippy::disallowed_methods)]
    let mut command = std::process::Command::new(exe);
    command.arg(LOAD_ONLY);
    if let Some(path) = path {
        command.arg(path);
    }
    #[allow(clippy::disallowed_methods)]
    let output = command.output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().trim().parse().unwrap()
}

fn new_session() -> NewSession {
    NewSession {
        cwd: "/bench".to_owned(),
        model: "bench-model".to_owned(),
        provider: "fake".to_owned(),
        config_hash: None,
        parent: None,
    }
}

fn config(fsync: FsyncPolicy) -> WriterConfig {
    WriterConfig {
        fsync,
        blob_threshold: 16 * 1024,
        clock: Arc::new(ManualClock::new(1_700_000_000_000, 3)),
    }
}

/// The records of turn `turn`: turn_start, user message, step_start, assistant message with
/// text and one tool call, tool_started, a ~200-byte tool result, step_end, turn_end.
fn turn_bodies(turn: u32) -> [RecordBody; TURN_RECORDS] {
    let turn_id = TurnId::new(turn);
    let step = StepId::FIRST;
    let call_id = ToolCallId::new(format!("call_{turn}"));
    let output: String = format!("{:<200}", format!("src/lib.rs:{turn}: fn main() {{}}"));
    [
        RecordBody::TurnStart { turn: turn_id },
        RecordBody::UserMessage {
            message: Message::user_text(format!("Please fix the failing test number {turn}.")),
        },
        RecordBody::StepStart { turn: turn_id, step },
        RecordBody::AssistantMessage {
            message: Message::new(
                Role::Assistant,
                vec![
                    MessageItem::Text { text: "Let me look at the file first.".to_owned() },
                    MessageItem::ToolCall(ToolCall {
                        id: call_id.clone(),
                        name: "read_file".to_owned(),
                        args: serde_json::json!({ "path": "src/lib.rs", "offset": turn }),
                    }),
                ],
            ),
        },
        RecordBody::ToolStarted { call_id: call_id.clone() },
        RecordBody::ToolResult {
            result: ToolResult::text(call_id, ToolResultStatus::Success, output),
            synthetic: None,
        },
        RecordBody::StepEnd {
            turn: turn_id,
            step,
            usage: Usage { input_tokens: 1_000, output_tokens: 50, ..Usage::default() },
            stop_reason: Some(StopReason::ToolUse),
        },
        RecordBody::TurnEnd {
            turn: turn_id,
            outcome: TurnOutcome::Completed,
            usage: Usage { input_tokens: 1_000, output_tokens: 50, ..Usage::default() },
        },
    ]
}

fn all_bodies(records: usize) -> Vec<RecordBody> {
    let turns = u32::try_from(records / TURN_RECORDS).unwrap();
    (1..=turns).flat_map(turn_bodies).collect()
}

/// Appends `records` records (bodies built beforehand) to a new session and syncs; returns how
/// many, how long that took (wall clock, and on-CPU time of the appending thread), and how many
/// turns (turn boundaries that ask for a sync under `turn`) that was.
fn append_run(
    store: &SessionStore,
    fsync: FsyncPolicy,
    records: usize,
) -> (usize, Duration, Duration, usize) {
    let bodies = all_bodies(records);
    let count = bodies.len();
    let mut writer = store.create(new_session(), config(fsync)).unwrap();
    let cpu_start = thread_cpu();
    let start = Instant::now();
    for body in bodies {
        writer.append(body).unwrap();
    }
    writer.sync().unwrap();
    let elapsed = start.elapsed();
    let cpu = thread_cpu() - cpu_start;
    let path = writer.path().unwrap().to_owned();
    drop(writer);
    fs_err::remove_file(path).unwrap();
    (count, elapsed, cpu, count / TURN_RECORDS)
}

/// Writes a log of `records` records after the meta; returns its path.
fn write_log(store: &SessionStore, records: usize) -> std::path::PathBuf {
    let mut writer = store.create(new_session(), config(FsyncPolicy::Never)).unwrap();
    for body in all_bodies(records) {
        writer.append(body).unwrap();
    }
    writer.sync().unwrap();
    writer.path().unwrap().to_owned()
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn fmt_runs(values: &[f64], decimals: usize) -> String {
    values.iter().map(|v| format!("{v:.decimals$}")).collect::<Vec<_>>().join(", ")
}

/// Time this thread has spent on a CPU (kernel included), from the scheduler's accounting: on a
/// busy shared machine it tells the work done from the waiting for a CPU.
fn thread_cpu() -> Duration {
    let stat = fs_err::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns = stat.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0);
    Duration::from_nanos(ns)
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}
