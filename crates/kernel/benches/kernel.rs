//! Kernel benchmarks (issue 3): prints median and p99 figures; `cargo bench -p codecoder-kernel`.
//!
//! 1. Throughput, scripted model → client event receiver, one token per model delta.
//! 2. Cancel latency under that flood: `Cancel` sent → `TurnDone` received.
//! 3. Cancel latency with a running child process (`sleep 100`) → `TurnDone`, group gone.
//! 4. Kernel overhead per step with an instant model and an instant tool.
//! 5. Secret redaction of 1 MB of typical command output (build and test logs, hashes, paths,
//!    JSON), with ten known values and a few secrets in it.
//!
//! Everything runs on the real AgentLoop with a session log in a temp dir (fsync at turn end).
// A bench binary reports on stdout; unwrapping is how it fails.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/it/support.rs"]
#[allow(dead_code)]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use codecoder_kernel::{
    AgentConfig, AllowAll, ModelClient, ModelError, ModelRequest, ResponseEvent, ResponseStream,
};
use codecoder_protocol::{AgentCommand, AgentEventKind, StopReason};
use codecoder_sandbox::live_group_members;
use crossbeam_channel::bounded;
use serde_json::json;

use support::{CommandTool, EchoTool, Harness, Response, ScriptedModel, answer, calls, completed};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64) * p).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "{name}: n={} median={:?} p99={:?} max={:?}",
        samples.len(),
        percentile(&samples, 0.5),
        percentile(&samples, 0.99),
        samples[samples.len() - 1]
    );
}

fn config(coalesce: bool) -> AgentConfig {
    let mut config = support::config();
    config.coalesce_deltas = coalesce;
    config.max_steps = 10_000;
    config
}

fn harness(
    model: Arc<ScriptedModel>,
    tools: Vec<Arc<dyn codecoder_kernel::Tool>>,
    config: AgentConfig,
) -> Harness {
    Harness::with(model, tools, Arc::new(AllowAll), config, |_| {})
}

/// Streams `tokens` tokens through a whole turn; returns (elapsed, tokens received, events).
fn flood_once(harness: &Harness, tokens: usize) -> (Duration, usize, usize) {
    let started = Instant::now();
    harness.submit("flood");
    let mut received = 0;
    let mut events = 0;
    loop {
        let event = harness.next();
        match event.kind {
            AgentEventKind::TextDelta { delta, .. } => {
                received += delta.len() / 4;
                events += 1;
            }
            AgentEventKind::TurnDone { .. } => break,
            _ => {}
        }
    }
    let elapsed = started.elapsed();
    assert_eq!(received, tokens);
    (elapsed, received, events)
}

fn throughput(coalesce: bool) {
    const TOKENS: usize = 2_000_000;
    const TRIALS: usize = 5;
    let model = ScriptedModel::new(|_| Response::Flood { tokens: TOKENS });
    let harness = harness(model, vec![], config(coalesce));
    let mut rates = Vec::new();
    let mut event_counts = Vec::new();
    for _ in 0..TRIALS {
        let (elapsed, received, events) = flood_once(&harness, TOKENS);
        rates.push(received as f64 / elapsed.as_secs_f64());
        event_counts.push(events);
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "throughput (coalesce_deltas={coalesce}): {TOKENS} tokens x {TRIALS} turns, median {:.0} tokens/s (min {:.0}, max {:.0}), {} delta events per turn (median)",
        rates[TRIALS / 2],
        rates[0],
        rates[TRIALS - 1],
        {
            event_counts.sort_unstable();
            event_counts[TRIALS / 2]
        }
    );
    harness.shutdown();
}

fn cancel_under_flood() {
    const TRIALS: usize = 200;
    let model = ScriptedModel::new(|_| Response::Flood { tokens: 100_000_000 });
    let harness = harness(model, vec![], config(true));
    let mut samples = Vec::new();
    for _ in 0..TRIALS {
        harness.submit("flood");
        // Let the flood run: wait for 1000 tokens to reach the client.
        let mut received = 0;
        while received < 1000 {
            if let AgentEventKind::TextDelta { delta, .. } = harness.next().kind {
                received += delta.len() / 4;
            }
        }
        let sent = Instant::now();
        harness.handle.cmd.send(AgentCommand::Cancel).unwrap();
        loop {
            if let AgentEventKind::TurnDone { cancelled, .. } = harness.next().kind {
                assert!(cancelled);
                break;
            }
        }
        samples.push(sent.elapsed());
    }
    report("cancel latency under a token flood (Cancel sent -> TurnDone received)", samples);
    harness.shutdown();
}

fn cancel_with_child() {
    const TRIALS: usize = 200;
    let (pgids_tx, pgids) = bounded(4);
    let model = ScriptedModel::new(|request| {
        if request.history.last().is_some_and(|m| m.role == codecoder_protocol::Role::User) {
            Response::Events(calls(&[("r1", "run", json!({ "argv": ["sleep", "100"] }))]))
        } else {
            Response::Events(answer("unexpected"))
        }
    });
    let harness = harness(model, vec![Arc::new(CommandTool { pgids: pgids_tx })], config(true));
    let mut samples = Vec::new();
    for _ in 0..TRIALS {
        harness.submit("sleep");
        let pgid = pgids.recv_timeout(support::PATIENCE).unwrap();
        let sent = Instant::now();
        harness.handle.cmd.send(AgentCommand::Cancel).unwrap();
        loop {
            if let AgentEventKind::TurnDone { cancelled, .. } = harness.next().kind {
                assert!(cancelled);
                break;
            }
        }
        let elapsed = sent.elapsed();
        assert!(live_group_members(pgid).is_empty(), "group {pgid} survived");
        samples.push(elapsed);
    }
    report("cancel latency with a running child (Cancel sent -> TurnDone, group gone)", samples);
    harness.shutdown();
}

type Script = Box<dyn Fn(&ModelRequest) -> Vec<ResponseEvent> + Send + Sync>;
type Job = (Vec<ResponseEvent>, crossbeam_channel::Sender<ResponseEvent>);

/// A model whose streams are produced by one long-lived thread, so a request costs a channel
/// wake-up rather than a thread spawn: isolates the kernel's own cost per step.
struct InstantModel {
    // Declared before `thread`: dropping it ends the producer loop before the join.
    jobs: crossbeam_channel::Sender<Job>,
    respond: Script,
    _thread: codecoder_stdx::JoinOnDrop<()>,
}

impl InstantModel {
    fn new(
        respond: impl Fn(&ModelRequest) -> Vec<ResponseEvent> + Send + Sync + 'static,
    ) -> Arc<Self> {
        let (jobs, queue) = bounded::<Job>(16);
        let thread = codecoder_stdx::spawn_named("model-instant", move || {
            for (events, tx) in queue {
                for event in events {
                    if tx.send(event).is_err() {
                        break;
                    }
                }
            }
        })
        .unwrap();
        Arc::new(Self { jobs, respond: Box::new(respond), _thread: thread })
    }
}

impl ModelClient for InstantModel {
    fn stream(&self, request: ModelRequest) -> Result<ResponseStream, ModelError> {
        let events = (self.respond)(&request);
        let (tx, rx) = bounded(1024);
        self.jobs.send((events, tx)).unwrap();
        Ok(ResponseStream::new(rx))
    }
}

fn step_script(history_len: usize, steps: usize) -> Vec<ResponseEvent> {
    let steps_so_far = (history_len - 1) / 2;
    if steps_so_far + 1 < steps {
        calls(&[(&format!("c{steps_so_far}"), "echo", json!({ "text": "x" }))])
    } else {
        vec![completed(StopReason::EndTurn)]
    }
}

fn step_overhead(persistent_model: bool) {
    const STEPS: usize = 200;
    const SESSIONS: usize = 20;
    let mut per_turn = Vec::new();
    let mut per_step = Vec::new();
    // A fresh session per trial: each request carries the whole history, so a step's cost grows
    // with the session; 200 steps stay a realistic size.
    for _ in 0..SESSIONS {
        // Every request but the last of the turn asks for one instant tool call.
        let model: Arc<dyn ModelClient> = if persistent_model {
            InstantModel::new(|request| step_script(request.history.len(), STEPS))
        } else {
            ScriptedModel::new(|request| {
                Response::Events(step_script(request.history.len(), STEPS))
            })
        };
        let harness = Harness::with(
            model,
            vec![Arc::new(EchoTool)],
            Arc::new(AllowAll),
            config(true),
            |_| {},
        );
        let started = Instant::now();
        harness.submit("go");
        let mut steps = 0;
        let mut step_started = started;
        loop {
            match harness.next().kind {
                AgentEventKind::StepStarted { .. } => step_started = Instant::now(),
                AgentEventKind::StepFinished { .. } => {
                    steps += 1;
                    per_step.push(step_started.elapsed());
                }
                AgentEventKind::TurnDone { .. } => break,
                _ => {}
            }
        }
        assert_eq!(steps, STEPS);
        per_turn.push(started.elapsed() / STEPS as u32);
        harness.shutdown();
    }
    let model = if persistent_model {
        "model on a long-lived thread"
    } else {
        "model thread spawned per request"
    };
    report(
        &format!(
            "kernel overhead per step ({model}), each step (StepStarted -> StepFinished: request, stream, one instant tool call, 6 log records, 7 events), {SESSIONS} sessions x {STEPS} steps"
        ),
        per_step,
    );
    report(&format!("kernel overhead per step ({model}), turn time / {STEPS} steps"), per_turn);
}

/// About 1 MB of what commands print: build and test lines, commit hashes, UUIDs, JSON, base64,
/// with a secret every 200 lines.
fn command_output() -> String {
    let token = ["ghp_", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"].concat();
    let mut text = String::new();
    let mut line = 0_u64;
    while text.len() < 1 << 20 {
        line += 1;
        let hash = format!("{:016x}{:016x}{:08x}", line * 0x9e37_79b9_7f4a_7c15, !line, line);
        let next = match line % 8 {
            0 => format!(
                "   Compiling serde_json v1.0.{line} (/home/user/.cargo/registry/src/index.crates.io-6f17d22bba15001f/serde_json-1.0.{line})"
            ),
            1 => format!("commit {hash}"),
            2 => format!("test tools::shell::tests::case_{line} ... ok"),
            3 => format!(
                "{{\"id\":\"123e4567-e89b-12d3-a456-{line:012}\",\"status\":\"ok\",\"elapsed_ms\":{line}}}"
            ),
            4 => format!("data: SGVsbG8sIFdvcmxkIQ{line}== sha256:{hash}{hash}"),
            5 => format!(
                "warning: unused variable: `task_description_{line}` --> src/lib.rs:{line}:9"
            ),
            6 => format!("  café résumé naïve — ünïcödé line {line}"),
            _ => format!("src/main.rs:{line}: let AKIAshort = risk_assessment_{line}();"),
        };
        text.push_str(&next);
        text.push('\n');
        if line.is_multiple_of(200) {
            text.push_str(&format!("export GITHUB_TOKEN={token} value-of-secret-{}\n", line % 10));
        }
    }
    text
}

/// Redacts `command_output()` `n` times; the median per MB.
fn redaction() {
    let secrets = (0..10).map(|i| codecoder_kernel::Secret {
        name: format!("SECRET_{i}"),
        value: format!("value-of-secret-{i}"),
    });
    let secrets: Vec<_> = secrets.collect();
    let builds = (0..20)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(codecoder_kernel::Redactor::new(secrets.clone()).unwrap());
            start.elapsed()
        })
        .collect();
    report("build a redactor with ten values", builds);
    let redactor = codecoder_kernel::Redactor::new(secrets).unwrap();
    let text = command_output();
    let mut count = 0;
    let samples = (0..50)
        .map(|_| {
            let start = Instant::now();
            let (out, n) = redactor.redact(std::hint::black_box(&text));
            let elapsed = start.elapsed();
            std::hint::black_box(out);
            count = n;
            elapsed
        })
        .collect();
    println!("redact: {} bytes, {count} secrets replaced per pass", text.len());
    report("redact 1 MB of command output", samples);
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument selects benchmarks by name.
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let wanted = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    println!(
        "codecoder-kernel benchmarks ({} cores)",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    if wanted("throughput") {
        throughput(true);
        throughput(false);
    }
    if wanted("cancel_flood") {
        cancel_under_flood();
    }
    if wanted("cancel_child") {
        cancel_with_child();
    }
    if wanted("step") {
        step_overhead(false);
        step_overhead(true);
    }
    if wanted("redact") {
        redaction();
    }
}
