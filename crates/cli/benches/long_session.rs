//! A long session (prints figures): one `codecoder exec` process runs a single turn of 5,000
//! steps against the fake model server, each step a short text and one cheap tool call with a
//! small output (reads, globs, greps, directory listings, an edit every 25 steps, a command
//! every 100), with a small auto-compaction limit so that the history is compacted every
//! hundred-odd steps. Measured: codecoder's CPU per step over the session (the first 100 steps
//! against the last 100, and per 500), its RSS at the end, then `exec resume` of that log
//! (process start → its first request at the server) and, in process, loading, projecting and
//! resuming the log with the session crate.
//!
//! CPU is the process's own clock (`clock_getcpuclockid`: every thread's time, in ns), read
//! each time the server has taken another scripted step; tool children (the command's sandbox)
//! are not in it. Run: `cargo bench -p codecoder-cli --bench long_session`
//! (`CODECODER_BENCH_STEPS=N` for a shorter session; `LONG_SESSION_LOG=PATH` keeps a copy of the
//! log there, to profile the loader with).
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::too_many_lines
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use codecoder_protocol::RecordBody;
use codecoder_test_support::{FakeModelServer, Reply, Script};
use nix::time::{ClockId, clock_getcpuclockid};
use nix::unistd::Pid;
use serde_json::json;

#[path = "support/mod.rs"]
mod support;
use support::median;

const BIN: &str = env!("CARGO_BIN_EXE_codecoder");

/// Steps of the session (model requests with a tool call; the final answer is one more).
const STEPS: usize = 5_000;

/// Files in the project the model reads and edits.
const FILES: usize = 40;

/// The auto-compaction limit in tokens: the base request (instructions and tool schemas) is
/// about 6k of it, and a step adds about 90, so the history is compacted every ~110 steps.
const COMPACT_LIMIT: u64 = 16_000;

/// The window of steps compared at the start and at the end.
const WINDOW: usize = 100;

/// Runs of the resume figures.
const RESUME_RUNS: usize = 9;

fn steps() -> usize {
    std::env::var("CODECODER_BENCH_STEPS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|n| *n >= 2 * WINDOW)
        .unwrap_or(STEPS)
}

/// The binary under test: `CODECODER_BENCH_BIN`, else the one cargo built.
fn bin() -> std::ffi::OsString {
    std::env::var_os(codecoder_protocol::env::CODECODER_BENCH_BIN)
        .filter(|bin| !bin.is_empty())
        .unwrap_or_else(|| BIN.into())
}

fn exec(home: &Path, cwd: &Path, server: &FakeModelServer, args: &[&str]) -> Command {
    let mut command = Command::new(bin());
    command
        .args(["exec", "--provider", "openai-chat"])
        .arg("-c")
        .arg(format!("model_auto_compact_token_limit={COMPACT_LIMIT}"))
        .args(["-c", "agent.max_steps_per_turn=100000"])
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home)
        .env("CODECODER_HOME", home)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()))
        .env("OPENAI_API_KEY", "sk-bench")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// A home with a 64k-window model, and a project of `FILES` small Rust files.
fn fixture(home: &Path, cwd: &Path) {
    std::fs::write(
        home.join("config.toml"),
        "model = \"fake-model\"\n[models.fake-model]\ncontext_window = 64000\nmax_output_tokens = 4000\n",
    )
    .unwrap();
    std::fs::create_dir(cwd.join("src")).unwrap();
    for file in 0..FILES {
        let body: String = (0..10)
            .map(|line| format!("pub fn value_{file}_{line}() -> u32 {{ {} }}\n", file * line))
            .collect();
        std::fs::write(
            cwd.join(format!("src/part_{file}.rs")),
            format!("//! Part {file}.\n{body}// revision 0\n"),
        )
        .unwrap();
    }
}

/// The session: step `i` says one sentence and calls one tool; the final answer is slow to
/// come (so that the process can be looked at before it ends); summary requests get a
/// summary without taking a step.
fn session_script(steps: usize) -> Script {
    let mut revisions = [0_usize; FILES];
    let mut script = Script::new();
    for step in 0..steps {
        let file = step % FILES;
        let path = format!("src/part_{file}.rs");
        let (name, arguments) = if step % 100 == 99 {
            ("run_command", json!({"command": format!("echo step {step}")}))
        } else if step % 25 == 24 {
            let old = format!("// revision {}", revisions[file]);
            revisions[file] += 1;
            let new = format!("// revision {}", revisions[file]);
            ("edit", json!({"path": path, "old_string": old, "new_string": new}))
        } else {
            match step % 4 {
                0 => ("read_file", json!({"path": path})),
                1 => ("grep", json!({"pattern": format!("value_{file}_{}", step % 10)})),
                2 => ("glob", json!({"pattern": format!("src/part_{}*.rs", file % 10)})),
                _ => ("list_dir", json!({"path": "src"})),
            }
        };
        script = script.reply(
            Reply::text(format!("Step {step}: looking at part {file}.")).and_tool_call(
                format!("call_{step}"),
                name,
                arguments,
            ),
        );
    }
    script.reply(Reply::text("Done: every part was looked at.").delay_ms(400)).when_no_tools(
        Reply::text(
            "Progress: the parts are being read, searched and edited in turn; go on with the next.",
        ),
    )
}

/// `VmRSS` and `VmHWM` of `pid` in MiB.
fn rss_mib(pid: u32) -> Option<(f64, f64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<f64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib / 1024.0)
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

fn cpu_ns(clock: ClockId) -> Option<u64> {
    let now = clock.now().ok()?;
    Some(now.tv_sec() as u64 * 1_000_000_000 + now.tv_nsec() as u64)
}

fn load_avg() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim().to_owned()
}

/// The one session log under `home`.
fn session_log(home: &Path) -> PathBuf {
    std::fs::read_dir(home.join("sessions"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().and_then(|e| e.to_str()) == Some("jsonl"))
        .unwrap()
}

fn main() {
    let steps = steps();
    println!(
        "long session benchmark ({} cores; load average at start {})",
        std::thread::available_parallelism().map_or(1, usize::from),
        load_avg()
    );
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    fixture(home.path(), cwd.path());
    let requests = steps + 1;
    let server = FakeModelServer::start(session_script(steps)).unwrap();

    // The session, sampled: `cpu[n]` and `wall[n]` when the server had taken n steps (the
    // n-th request arrived), so step n's work lies between n and n + 1.
    let started = Instant::now();
    let mut child = exec(home.path(), cwd.path(), &server, &["read, search and edit the parts"])
        .spawn()
        .unwrap();
    let clock = clock_getcpuclockid(Pid::from_raw(child.id() as i32)).unwrap();
    let mut cpu = vec![0_u64; requests + 1];
    let mut wall = vec![Duration::ZERO; requests + 1];
    let mut seen = 0;
    let mut end_rss = None;
    loop {
        let taken = requests - server.remaining_steps();
        if taken > seen {
            let now_cpu = cpu_ns(clock).unwrap_or(cpu[seen]);
            let now = started.elapsed();
            cpu[seen + 1..=taken].fill(now_cpu);
            wall[seen + 1..=taken].fill(now);
            seen = taken;
            if taken == requests {
                // The final answer is held back 400 ms: this is the process at the session's
                // end, its history and caches all still in memory.
                end_rss = rss_mib(child.id());
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "the long session failed: {status}");
            break;
        }
        std::thread::sleep(Duration::from_micros(250));
    }
    let total = started.elapsed();
    assert_eq!(seen, requests, "the session took every step");
    let all_requests = server.requests().len();
    let log = session_log(home.path());
    let loaded = codecoder_session::load(&log).unwrap();
    let compactions: Vec<u64> = loaded
        .records()
        .filter(|record| matches!(record.body, RecordBody::Compaction { .. }))
        .map(|record| record.seq)
        .collect();
    let log_bytes = std::fs::metadata(&log).unwrap().len();
    println!(
        "session: {steps} steps + the answer in {:.1} s wall, {all_requests} requests ({} summaries), {} compactions, log {} records / {:.1} MB; load average after {}",
        total.as_secs_f64(),
        all_requests - requests,
        compactions.len(),
        loaded.entries.len(),
        log_bytes as f64 / 1e6,
        load_avg()
    );
    let per_step_ms =
        |from: usize, to: usize| (cpu[to + 1] - cpu[from]) as f64 / 1e6 / (to + 1 - from) as f64;
    let wall_per_step_ms = |from: usize, to: usize| {
        (wall[to + 1] - wall[from]).as_secs_f64() * 1e3 / (to + 1 - from) as f64
    };
    let first = per_step_ms(1, WINDOW);
    let last = per_step_ms(steps - WINDOW + 1, steps);
    println!(
        "CPU per step, steps 1-{WINDOW}: {first:.3} ms; steps {}-{steps}: {last:.3} ms; last/first {:.2} (target <= 1.2); wall per step {:.3} / {:.3} ms",
        steps - WINDOW + 1,
        last / first,
        wall_per_step_ms(1, WINDOW),
        wall_per_step_ms(steps - WINDOW + 1, steps),
    );
    let mut from = 1;
    print!("CPU per step by 500 steps (ms):");
    while from + 499 <= steps {
        print!(" {:.3}", per_step_ms(from, from + 499));
        from += 500;
    }
    println!();
    let step_cpu: Vec<f64> = (1..=steps).map(|n| (cpu[n + 1] - cpu[n]) as f64 / 1e6).collect();
    println!(
        "median step CPU, steps 1-{WINDOW}: {:.3} ms; steps {}-{steps}: {:.3} ms",
        median(step_cpu[..WINDOW].to_vec()),
        steps - WINDOW + 1,
        median(step_cpu[steps - WINDOW..].to_vec()),
    );
    match end_rss {
        Some((rss, hwm)) => println!(
            "RSS at the session's end (before the answer): VmRSS {rss:.1} MiB, VmHWM {hwm:.1} MiB (target <= 50 MB)"
        ),
        None => println!("RSS at the end: not sampled"),
    }
    drop(server);

    // Resume: the same log each run (restored before it), a prompt, and the first request.
    let original = std::fs::read(&log).unwrap();
    // A copy to profile the loader with, where asked for.
    if let Some(keep) = std::env::var_os("LONG_SESSION_LOG") {
        std::fs::write(keep, &original).unwrap();
    }
    let session_id = log.file_stem().unwrap().to_string_lossy().into_owned();
    let mut first_request_ms = Vec::new();
    let mut resume_hwm = Vec::new();
    for _ in 0..RESUME_RUNS {
        std::fs::write(&log, &original).unwrap();
        let server = FakeModelServer::start(
            Script::new()
                .reply(Reply::text("ok").delay_ms(100))
                .when_no_tools(Reply::text("Progress: all parts looked at.")),
        )
        .unwrap();
        let started = Instant::now();
        let mut child =
            exec(home.path(), cwd.path(), &server, &["resume", &session_id, "one more look"])
                .spawn()
                .unwrap();
        server.wait_for_requests(1, Duration::from_secs(60)).unwrap();
        first_request_ms.push(started.elapsed().as_secs_f64() * 1e3);
        if let Some((_, hwm)) = rss_mib(child.id()) {
            resume_hwm.push(hwm);
        }
        assert!(child.wait().unwrap().success(), "exec resume failed");
    }
    println!(
        "exec resume of the {steps}-step log: process start -> first request median {:.2} ms (min {:.2}, max {:.2}; {RESUME_RUNS} runs; target <= 150 ms); VmHWM at the first request median {:.1} MiB",
        median(first_request_ms.clone()),
        first_request_ms.iter().copied().fold(f64::MAX, f64::min),
        first_request_ms.iter().copied().fold(0.0, f64::max),
        median(resume_hwm),
    );

    // In process: what resume does with the log, piece by piece.
    std::fs::write(&log, &original).unwrap();
    let mut load_ms = Vec::new();
    let mut project_ms = Vec::new();
    let mut resume_ms = Vec::new();
    let mut resume_writer_ms = Vec::new();
    for _ in 0..RESUME_RUNS {
        let started = Instant::now();
        let loaded = codecoder_session::load(&log).unwrap();
        load_ms.push(started.elapsed().as_secs_f64() * 1e3);
        let started = Instant::now();
        let projection = loaded.projection();
        project_ms.push(started.elapsed().as_secs_f64() * 1e3);
        assert!(!projection.history().is_empty());
        let copy = home.path().join("sessions").join("copy.jsonl");
        std::fs::write(&copy, &original).unwrap();
        let store = codecoder_session::SessionStore::new(home.path());
        let started = Instant::now();
        let (_, writer) = store.resume(&copy, codecoder_session::WriterConfig::standard()).unwrap();
        resume_ms.push(started.elapsed().as_secs_f64() * 1e3);
        drop(writer);
        std::fs::write(&copy, &original).unwrap();
        let started = Instant::now();
        let writer =
            store.resume_writer(&copy, codecoder_session::WriterConfig::standard()).unwrap();
        resume_writer_ms.push(started.elapsed().as_secs_f64() * 1e3);
        drop(writer);
        std::fs::remove_file(&copy).unwrap();
    }
    println!(
        "in process, the {:.1} MB log: load + validate median {:.2} ms; projection {:.2} ms; SessionStore::resume (lock, load, project, repair) {:.2} ms; SessionStore::resume_writer (what exec resume uses: no record kept) {:.2} ms; load average {}",
        original.len() as f64 / 1e6,
        median(load_ms),
        median(project_ms),
        median(resume_ms),
        median(resume_writer_ms),
        load_avg()
    );
}
