//! Many sessions (prints figures): `codecoder sessions list` over 10,000 session logs (the first
//! run, which builds the index, and warm runs: the default newest-50 table, `--all`, and
//! `--all --json`), and 50 `exec` processes started at once in one `CODECODER_HOME` (each a
//! one-request task against the fake model server), with a trivial login profile and with one
//! that takes ~90 ms (the shared shell snapshot is taken once).
//!
//! The logs are copies of a real one: the bench runs one `exec` first and rewrites its records
//! for each copy (new session id, cwd among 20 projects, title, timestamps a minute apart).
//! Run: `cargo bench -p codecoder-cli --bench many_sessions` (`MANY_SESSIONS=N` for another
//! count).
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
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_codecoder");
const CONCURRENT: usize = 50;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim().to_owned()
}

fn command(cchome: &Path, home: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home)
        .env("CODECODER_HOME", cchome)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

fn exec(cchome: &Path, home: &Path, cwd: &Path, server: &FakeModelServer, task: &str) -> Command {
    let mut command = command(cchome, home);
    command
        .args(["exec", task])
        .current_dir(cwd)
        .env("OPENAI_API_KEY", "sk-bench")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()));
    command
}

/// The records of one real one-request session, as JSON values.
fn template(root: &Path) -> Vec<Value> {
    let (cchome, home, cwd) = (root.join("template"), root.join("home"), root.join("ws"));
    std::fs::create_dir_all(&cwd).unwrap();
    let server = FakeModelServer::start(Script::new().reply(Reply::text("done"))).unwrap();
    let status = exec(&cchome, &home, &cwd, &server, "template").status().unwrap();
    assert!(status.success());
    let dir = cchome.join("sessions");
    let log = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let text = std::fs::read_to_string(log).unwrap();
    text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

/// Writes `count` session logs made from `template` into `cchome/sessions`; returns their bytes.
fn generate(cchome: &Path, template: &[Value], count: usize) -> u64 {
    let dir = cchome.join("sessions");
    std::fs::create_dir_all(&dir).unwrap();
    let base_ts = template[0]["ts"].as_u64().unwrap();
    let mut bytes = 0;
    for n in 0..count {
        let id = codecoder_protocol::SessionId::new().to_string();
        let shift = (n as u64) * 60_000;
        let mut text = String::new();
        for record in template {
            let mut record = record.clone();
            let ts = record["ts"].as_u64().unwrap() - base_ts;
            record["ts"] = Value::from(1_700_000_000_000 + shift + ts);
            match record["type"].as_str().unwrap() {
                "session_meta" => {
                    record["sessionId"] = Value::from(id.as_str());
                    record["cwd"] = Value::from(format!("/home/dev/project-{:02}", n % 20));
                }
                "user_message" => {
                    record["message"]["items"][0]["text"] = Value::from(format!(
                        "task {n}: the parser drops the last line of a file without a newline"
                    ));
                }
                _ => {}
            }
            text.push_str(&serde_json::to_string(&record).unwrap());
            text.push('\n');
        }
        bytes += text.len() as u64;
        std::fs::write(dir.join(format!("{id}.jsonl")), text).unwrap();
    }
    bytes
}

/// Wall time of one `codecoder sessions list ARGS` in ms.
fn list_ms(cchome: &Path, home: &Path, args: &[&str]) -> f64 {
    let start = Instant::now();
    let status = command(cchome, home).args(["sessions", "list"]).args(args).status().unwrap();
    let elapsed = start.elapsed().as_secs_f64() * 1e3;
    assert!(status.success());
    elapsed
}

fn remove_index(cchome: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ =
            std::fs::remove_file(cchome.join(format!("sessions/index/sessions.sqlite{suffix}")));
    }
}

fn sessions_list(root: &Path, count: usize) {
    let template = template(root);
    let (cchome, home) = (root.join("many"), root.join("home"));
    let started = Instant::now();
    let bytes = generate(&cchome, &template, count);
    println!(
        "generated {count} session logs of {} records ({:.1} MB) in {:.1} s",
        template.len(),
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    // The page cache holds the logs from here on, as it would on a machine in use.
    let cold: Vec<f64> = (0..3)
        .map(|_| {
            remove_index(&cchome);
            list_ms(&cchome, &home, &[])
        })
        .collect();
    println!(
        "sessions list, cold (builds the index): {:.0} ms median of 3 ({cold:.0?}); load {}",
        median(cold.clone()),
        loadavg()
    );
    // Right after a session started or ended (the directory just changed), a list looks at
    // every log's stamp: the directory's mtime is set to now before each run.
    let dir = std::fs::File::open(cchome.join("sessions")).unwrap();
    let changed: Vec<f64> = (0..21)
        .map(|_| {
            let now = std::time::SystemTime::now();
            dir.set_times(std::fs::FileTimes::new().set_modified(now)).unwrap();
            list_ms(&cchome, &home, &[])
        })
        .collect();
    println!(
        "sessions list [], right after the directory changed (every log stat-ed): {:.1} ms median of 21; load {}",
        median(changed),
        loadavg()
    );
    // Settled again, as between sessions.
    let minute_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    dir.set_times(std::fs::FileTimes::new().set_modified(minute_ago)).unwrap();
    for args in [&[][..], &["--all"], &["--all", "--json"]] {
        list_ms(&cchome, &home, args);
        let warm: Vec<f64> = (0..21).map(|_| list_ms(&cchome, &home, args)).collect();
        let (min, max) = (
            warm.iter().copied().fold(f64::MAX, f64::min),
            warm.iter().copied().fold(0.0, f64::max),
        );
        println!(
            "sessions list {args:?}, warm: {:.1} ms median of 21 (min {min:.1}, max {max:.1}); load {}",
            median(warm),
            loadavg()
        );
    }
}

/// Starts `CONCURRENT` execs at once in a fresh `CODECODER_HOME`; returns the wall time until the
/// last one exited, in ms.
fn concurrent_execs(root: &Path, home: &Path, run: &str) -> f64 {
    let cchome = root.join(format!("concurrent-{run}"));
    let mut script = Script::new();
    for _ in 0..CONCURRENT {
        script = script.reply(Reply::text("done"));
    }
    let server = FakeModelServer::start(script).unwrap();
    let dirs: Vec<_> = (0..CONCURRENT)
        .map(|n| {
            let dir = root.join(format!("ws-{n}"));
            std::fs::create_dir_all(&dir).unwrap();
            dir
        })
        .collect();
    let start = Instant::now();
    let children: Vec<_> = dirs
        .iter()
        .enumerate()
        .map(|(n, dir)| exec(&cchome, home, dir, &server, &format!("task {n}")).spawn().unwrap())
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let elapsed = start.elapsed().as_secs_f64() * 1e3;
    assert_eq!(server.requests().len(), CONCURRENT);
    let _ = std::fs::remove_dir_all(&cchome);
    elapsed
}

fn main() {
    let count: usize =
        std::env::var("MANY_SESSIONS").ok().and_then(|n| n.parse().ok()).unwrap_or(10_000);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("home")).unwrap();
    println!("many sessions benchmark ({} CPUs; load {})", num_cpus(), loadavg());
    sessions_list(root, count);

    for (tag, name, profile) in [
        ("trivial", "trivial profile", "export FROM_PROFILE=1\n"),
        ("slow", "~90 ms profile", "sleep 0.09\nexport FROM_PROFILE=1\nalias ll='ls -l'\n"),
    ] {
        let home = root.join(format!("home-{tag}"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join(".bash_profile"), profile).unwrap();
        let runs: Vec<f64> =
            (0..5).map(|run| concurrent_execs(root, &home, &format!("{tag}-{run}"))).collect();
        println!(
            "{CONCURRENT} concurrent execs ({name}): {:.0} ms wall median of 5 ({runs:.0?}); load {}",
            median(runs.clone()),
            loadavg()
        );
    }
}

fn num_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}
