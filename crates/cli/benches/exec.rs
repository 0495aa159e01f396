//! Product benchmarks (prints figures): `codecoder --version`, process start to the first
//! request at the fake model server, peak RSS of the multi-step bug-fix task, and harness
//! overhead per step with a model that answers at once. Run: `cargo bench -p codecoder-cli`.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods
)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use codecoder_test_support::{FakeModelServer, Reply, Script};

const BIN: &str = env!("CARGO_BIN_EXE_codecoder");

/// The binary under test: `CODECODER_BENCH_BIN`, else the one cargo built.
fn bin() -> std::ffi::OsString {
    std::env::var_os(codecoder_protocol::env::CODECODER_BENCH_BIN)
        .filter(|bin| !bin.is_empty())
        .unwrap_or_else(|| BIN.into())
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn exec(home: &Path, cwd: &Path, server: &FakeModelServer, prompt: &str) -> Command {
    let mut command = Command::new(bin());
    command
        .args(["exec", "--provider", "openai-chat", prompt])
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

/// Peak RSS (VmHWM, KiB) of a running child, sampled until it exits.
fn peak_rss_kib(child: &mut std::process::Child) -> u64 {
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Ok(text) = std::fs::read_to_string(&status)
            && let Some(line) = text.lines().find(|l| l.starts_with("VmHWM:"))
        {
            let kib: u64 = line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or(0);
            peak = peak.max(kib);
        }
        if child.try_wait().unwrap().is_some() {
            return peak;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// User + system CPU time of this process (the fake server's threads) so far, in ms.
fn own_cpu_ms() -> f64 {
    cpu_ms(nix::sys::resource::UsageWho::RUSAGE_SELF)
}

/// User + system CPU time of all waited-for children so far, in ms.
fn children_cpu_ms() -> f64 {
    cpu_ms(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
}

fn cpu_ms(who: nix::sys::resource::UsageWho) -> f64 {
    let usage = nix::sys::resource::getrusage(who).unwrap();
    let ms = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 * 1000.0 + t.tv_usec() as f64 / 1000.0;
    ms(usage.user_time()) + ms(usage.system_time())
}

fn bugfix_repo(dir: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bugfix/repo");
    for name in ["calc.py", "test_calc.py"] {
        std::fs::copy(source.join(name), dir.join(name)).unwrap();
    }
}

fn main() {
    println!(
        "exec benchmarks ({} cores)",
        std::thread::available_parallelism().map_or(1, usize::from)
    );

    let mut version_ms = Vec::new();
    for _ in 0..31 {
        let started = Instant::now();
        let out = Command::new(bin()).arg("--version").output().unwrap();
        assert!(out.status.success());
        version_ms.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    println!("codecoder --version: median {:.2} ms (31 runs)", median(version_ms));

    let mut first_request_ms = Vec::new();
    for _ in 0..21 {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let server = FakeModelServer::start(Script::new().reply(Reply::text("ok"))).unwrap();
        let started = Instant::now();
        let mut child = exec(home.path(), cwd.path(), &server, "hello").spawn().unwrap();
        server.wait_for_requests(1, Duration::from_secs(30)).unwrap();
        first_request_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        child.wait().unwrap();
    }
    println!(
        "process start -> first request at the server: median {:.2} ms (21 runs)",
        median(first_request_ms)
    );

    let mut rss = Vec::new();
    for _ in 0..5 {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        bugfix_repo(repo.path());
        let fix = "*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n*** End Patch\n";
        let script = Script::new()
            .reply(Reply::tool_call("c1", "glob", serde_json::json!({"pattern": "*.py"})))
            .reply(Reply::tool_call("c2", "read_file", serde_json::json!({"path": "calc.py"})))
            .reply(Reply::tool_call("c3", "apply_patch", serde_json::json!({"input": fix})))
            .reply(Reply::tool_call(
                "c4",
                "run_command",
                serde_json::json!({"command": "python3 test_calc.py"}),
            ))
            .reply(Reply::text("Fixed."));
        let server = FakeModelServer::start(script).unwrap();
        let mut child = exec(home.path(), repo.path(), &server, "fix the bug").spawn().unwrap();
        rss.push(peak_rss_kib(&mut child) as f64 / 1024.0);
        assert_eq!(server.requests().len(), 5);
    }
    println!("peak RSS of the 5-step bug-fix task: median {:.1} MiB (5 runs)", median(rss));

    const STEPS: usize = 50;
    let mut per_step_ms = Vec::new();
    let mut cpu_per_step_ms = Vec::new();
    let mut net_cpu_per_step_ms = Vec::new();
    let mut server_cpu_per_step_ms = Vec::new();
    let mut without_server_ms = Vec::new();
    for _ in 0..7 {
        // The same task without the steps (one text answer): its CPU is the start-up and the
        // shutdown, taken off the 50-step run's CPU below.
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        std::fs::write(repo.path().join("a.txt"), "hello\n").unwrap();
        let server = FakeModelServer::start(Script::new().reply(Reply::text("done"))).unwrap();
        let cpu_before = children_cpu_ms();
        let status =
            exec(home.path(), repo.path(), &server, "read it many times").status().unwrap();
        assert!(status.success());
        let base_cpu = children_cpu_ms() - cpu_before;

        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        std::fs::write(repo.path().join("a.txt"), "hello\n").unwrap();
        let mut script = Script::new();
        for i in 0..STEPS {
            script = script.reply(Reply::tool_call(
                format!("c{i}"),
                "read_file",
                serde_json::json!({"path": "a.txt"}),
            ));
        }
        let server = FakeModelServer::start(script.reply(Reply::text("done"))).unwrap();
        let cpu_before = children_cpu_ms();
        let started = Instant::now();
        let mut child =
            exec(home.path(), repo.path(), &server, "read it many times").spawn().unwrap();
        server.wait_for_requests(1, Duration::from_secs(30)).unwrap();
        let first = started.elapsed();
        let server_cpu_before = own_cpu_ms();
        assert!(child.wait().unwrap().success());
        let total = started.elapsed();
        let wall = (total - first).as_secs_f64() * 1000.0 / STEPS as f64;
        let server_cpu = (own_cpu_ms() - server_cpu_before) / STEPS as f64;
        per_step_ms.push(wall);
        server_cpu_per_step_ms.push(server_cpu);
        without_server_ms.push(wall - server_cpu);
        let cpu = children_cpu_ms() - cpu_before;
        cpu_per_step_ms.push(cpu / STEPS as f64);
        net_cpu_per_step_ms.push((cpu - base_cpu) / STEPS as f64);
    }
    println!(
        "harness overhead per step (instant model, one read_file per step, {STEPS} steps): wall median {:.2} ms (includes the fake server and loopback HTTP); codecoder's own CPU median {:.2} ms (whole run, start-up included, / steps)",
        median(per_step_ms),
        median(cpu_per_step_ms)
    );
    println!(
        "the fake server's CPU per step (parsing the request, rendering the stream): median {:.2} ms; wall per step less that: median {:.2} ms",
        median(server_cpu_per_step_ms),
        median(without_server_ms)
    );
    println!(
        "codecoder's CPU per step without start-up (the 50-step run minus the same run with no step, / steps): median {:.2} ms",
        median(net_cpu_per_step_ms)
    );
}
