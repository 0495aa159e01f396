//! The harness's own cost (prints figures): an 11-request task of cheap commands and reads
//! against the fake model server (wall time and peak RSS of codecoder), with the shell snapshot
//! and with a login shell per command, in a HOME whose profile costs about 90 ms like a
//! pyenv/nvm set-up; a grep through the harness returning ~900 files against `rg` itself; and
//! the cost of a `run_command` step with the snapshot against `bash -lc`.
//! Run: `cargo bench -p codecoder-cli --bench harness`.
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
use serde_json::json;

#[path = "support/mod.rs"]
mod support;
use support::{median, slow_home, wait_peak_rss_mib};

const BIN: &str = env!("CARGO_BIN_EXE_codecoder");
const RUNS: usize = 7;

fn exec(home: &Path, codecoder_home: &Path, cwd: &Path, server: &FakeModelServer) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(["exec", "--provider", "openai-chat", "do the task"])
        .current_dir(cwd)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home)
        .env("CODECODER_HOME", codecoder_home)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()))
        .env("OPENAI_API_KEY", "sk-bench")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// The bug-fix project with one uncommitted change (for `git diff` and `git status`).
fn project(dir: &Path) {
    support::project(dir);
    let calc = std::fs::read_to_string(dir.join("calc.py")).unwrap();
    std::fs::write(dir.join("calc.py"), format!("{calc}\n# changed\n")).unwrap();
}

/// The 11-request task: ten cheap tool calls, then the answer.
fn cheap_task() -> Script {
    let commands = [
        "ls -la",
        "grep -rn 'def ' .",
        "wc -l *.py",
        "sed -n 1,20p calc.py",
        "cat test_calc.py",
        "git status",
        "seq 1 12000",
        "git diff",
        "/usr/bin/python3 test_calc.py; true",
    ];
    let mut script = Script::new();
    for (i, command) in commands.iter().enumerate() {
        script = script.reply(Reply::tool_call(
            format!("c{i}"),
            "run_command",
            json!({ "command": command }),
        ));
    }
    script
        .reply(Reply::tool_call("r", "read_file", json!({ "path": "calc.py" })))
        .reply(Reply::text("done"))
}

fn cheap_task_run(config: &str) -> (f64, f64) {
    let home = tempfile::tempdir().unwrap();
    slow_home(home.path());
    let codecoder_home = tempfile::tempdir().unwrap();
    std::fs::write(codecoder_home.path().join("config.toml"), config).unwrap();
    let repo = tempfile::tempdir().unwrap();
    project(repo.path());
    let server = FakeModelServer::start(cheap_task()).unwrap();
    let started = Instant::now();
    let child = exec(home.path(), codecoder_home.path(), repo.path(), &server).spawn().unwrap();
    let rss = wait_peak_rss_mib(child, "codecoder");
    let wall = started.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(server.requests().len(), 11);
    (wall, rss)
}

fn grep_tree(dir: &Path, files: usize) {
    for i in 0..files {
        let sub = dir.join(format!("pkg{}", i / 50));
        std::fs::create_dir_all(&sub).unwrap();
        let body: String =
            (0..40).map(|line| format!("fn item_{line}() {{ let x = {line}; }}\n")).collect();
        std::fs::write(sub.join(format!("mod_{i}.rs")), format!("// needle {i}\n{body}")).unwrap();
    }
}

fn main() {
    println!(
        "harness benchmarks ({} cores, load {})",
        std::thread::available_parallelism().map_or(1, usize::from),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split(' ')
            .next()
            .unwrap_or("?")
    );

    for (name, config) in [
        ("shell snapshot (default)", ""),
        ("login shell per command (shell.snapshot = false)", "[shell]\nsnapshot = false\n"),
    ] {
        let mut walls = Vec::new();
        let mut rss = Vec::new();
        for _ in 0..RUNS {
            let (wall, peak) = cheap_task_run(config);
            walls.push(wall);
            rss.push(peak);
        }
        println!(
            "11-request cheap task, {name}, profile of ~90 ms: wall median {:.0} ms, peak RSS median {:.1} MiB ({RUNS} runs)",
            median(walls),
            median(rss)
        );
    }

    // grep through the harness vs rg: one grep step minus a text-only step, same start-up.
    let tree = tempfile::tempdir().unwrap();
    grep_tree(tree.path(), 900);
    let home = tempfile::tempdir().unwrap();
    let mut grep_ms = Vec::new();
    let mut base_ms = Vec::new();
    for _ in 0..RUNS {
        for (with_grep, samples) in [(true, &mut grep_ms), (false, &mut base_ms)] {
            let codecoder_home = tempfile::tempdir().unwrap();
            let script = if with_grep {
                Script::new()
                    .reply(Reply::tool_call(
                        "g",
                        "grep",
                        json!({ "pattern": "needle", "output": "files", "head_limit": 1000 }),
                    ))
                    .reply(Reply::text("done"))
            } else {
                Script::new().reply(Reply::text("done")).reply(Reply::text("done"))
            };
            let server = FakeModelServer::start(script).unwrap();
            let started = Instant::now();
            let status =
                exec(home.path(), codecoder_home.path(), tree.path(), &server).status().unwrap();
            assert!(status.success());
            samples.push(started.elapsed().as_secs_f64() * 1000.0);
            if with_grep {
                let body = &server.requests()[1].raw_body;
                assert!(body.contains("mod_899.rs"), "the grep found every file");
            }
        }
    }
    println!(
        "grep tool returning 900 files, through the harness (exec with the grep step minus exec without it): median {:.1} ms ({RUNS} runs; exec with it {:.1} ms, without {:.1} ms)",
        median(grep_ms.clone()) - median(base_ms.clone()),
        median(grep_ms),
        median(base_ms)
    );
    if let Ok(out) = Command::new("rg").arg("--version").output()
        && out.status.success()
    {
        let mut rg_ms = Vec::new();
        for _ in 0..RUNS {
            let started = Instant::now();
            let out = Command::new("rg")
                .args(["-l", "needle", "."])
                .current_dir(tree.path())
                .stdout(Stdio::piped())
                .output()
                .unwrap();
            rg_ms.push(started.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(out.stdout.iter().filter(|&&b| b == b'\n').count(), 900);
        }
        println!("rg -l needle (900 files): median {:.1} ms ({RUNS} runs)", median(rg_ms));
    } else {
        println!("rg -l needle: rg is not installed");
    }

    // One command's start: bash -lc with the ~90 ms profile vs bash -c sourcing a snapshot.
    let home = tempfile::tempdir().unwrap();
    slow_home(home.path());
    let snapshot = home.path().join("snapshot.sh");
    std::fs::write(
        &snapshot,
        "shopt -s expand_aliases\nalias ll='ls -l'\nexport PATH=\"/x/bin:$PATH\"\n",
    )
    .unwrap();
    for (name, args) in [
        ("bash -lc true", vec!["-lc".to_owned(), "true".to_owned()]),
        (
            "bash -c '. SNAPSHOT; true'",
            vec!["-c".to_owned(), format!(". '{}'\ntrue", snapshot.display())],
        ),
    ] {
        let mut samples = Vec::new();
        for _ in 0..21 {
            let started = Instant::now();
            let status =
                Command::new("bash").args(&args).env("HOME", home.path()).status().unwrap();
            assert!(status.success());
            samples.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        println!("{name}: median {:.1} ms (21 runs)", median(samples));
    }
}
