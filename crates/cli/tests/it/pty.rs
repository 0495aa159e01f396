//! Interactive command sessions end to end (`exec_command`, `write_stdin`), the model scripted
//! by the fake server and `codecoder exec` running in its default sandbox (workspace-write):
//! a real Python REPL on a terminal (a line answered, a loop interrupted with Ctrl-C, a
//! password read with `getpass`, `exit()`), a PTY process kept inside the writable roots, and
//! no process left behind after a cancel or a `kill -9` of codecoder, a background job (a session
//! without a terminal) included.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::{Value, json};

use crate::app_server::processes_running;
use crate::exec::openai_env;
use crate::stderr;

/// How long a condition the test waits for may take on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(60);

/// A codecoder home and a workspace.
struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    workspace: PathBuf,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let world = Self { home: root.join("home"), workspace: root.join("workspace"), _dir: dir };
        std::fs::create_dir_all(&world.home).unwrap();
        std::fs::create_dir_all(&world.workspace).unwrap();
        world
    }

    fn exec(&self, server: &FakeModelServer, prompt: &str) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_codecoder"));
        command
            .args(["exec", prompt])
            .current_dir(&self.workspace)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("CODECODER_HOME", &self.home)
            .envs(openai_env(server))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }
}

/// The Python running these tests, by its real path (a version manager's shim may need a HOME
/// the test does not give).
fn python() -> String {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 is on PATH");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn write(id: &str, chars: &str, yield_ms: u64) -> Reply {
    Reply::tool_call(
        id,
        "write_stdin",
        json!({"session_id": 1, "chars": chars, "yield_time_ms": yield_ms}),
    )
}

/// The text of every tool result the model was sent, in order.
fn tool_results(server: &FakeModelServer) -> Vec<String> {
    let requests = server.requests();
    let last = requests.last().expect("a request");
    let body: Value = serde_json::from_str(&last.raw_body).unwrap();
    body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| match &item["output"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// The sandbox backends a terminal session is tried under, and no sandbox.
const MODES: [&[&str]; 3] =
    [&["-c", "sandbox.backend=\"bwrap\""], &["-c", "sandbox.backend=\"landlock\""], &["--yolo"]];

#[test]
fn a_python_repl_on_a_terminal_answers_is_interrupted_reads_a_password_and_exits() {
    for mode in MODES {
        python_repl(mode);
    }
}

fn python_repl(mode: &[&str]) {
    let world = World::new();
    let python = python();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call(
                "c1",
                "exec_command",
                json!({"cmd": format!("{python} -q -i"), "tty": true, "yield_time_ms": 2000}),
            ))
            .reply(write("c2", "print('ans', 6*7)\n", 2000))
            .reply(write("c3", "import time\nwhile True:\n    time.sleep(0.01)\n\n", 1000))
            .reply(write("c4", "\u{3}", 2000))
            .reply(write("c5", "import getpass; pw = getpass.getpass('Secret: ')\n", 2000))
            .reply(write("c6", "hunter2\n", 1000))
            .reply(write("c7", "print('len', len(pw), pw[::-1])\n", 2000))
            .reply(write("c8", "exit()\n", 30000))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = world.exec(&server, "drive python").args(mode).output().unwrap();
    assert!(out.status.success(), "{mode:?}: {}", stderr(&out));
    let results = tool_results(&server);
    assert_eq!(results.len(), 8, "{mode:?}: {results:#?}");
    assert!(results[0].contains("Process running with session ID 1"), "{mode:?}: {results:#?}");
    // Output that came after a call's wait shows in the next call's result, so the checks look
    // at everything up to the call that must have seen it.
    let upto = |n: usize| results[..=n].join("\n");
    assert!(upto(1).contains("ans 42"), "{mode:?}: {results:#?}");
    assert!(upto(3).contains("KeyboardInterrupt"), "{mode:?}: {results:#?}");
    assert!(upto(4).contains("Secret: "), "{mode:?}: {results:#?}");
    // The password was read (its reverse printed) but never echoed by the terminal.
    assert!(upto(6).contains("len 7 2retnuh"), "{mode:?}: {results:#?}");
    assert!(!upto(6).contains("hunter2"), "{mode:?}: {results:#?}");
    assert!(results[7].contains("Process exited with code 0"), "{mode:?}: {results:#?}");
}

#[test]
fn a_process_on_a_terminal_cannot_write_outside_the_writable_roots() {
    for mode in &MODES[..2] {
        confined_writes(mode);
    }
}

fn confined_writes(mode: &[&str]) {
    let world = World::new();
    let outside = Path::new("/var/tmp").join(format!("codecoder-pty-{}", std::process::id()));
    let inside = world.workspace.join("inside.txt");
    let cmd = format!(
        "touch {} && echo outside-written; touch {} && echo inside-written",
        outside.display(),
        inside.display()
    );
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call(
                "c1",
                "exec_command",
                json!({"cmd": cmd, "tty": true, "yield_time_ms": 30000}),
            ))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = world.exec(&server, "write").args(mode).output().unwrap();
    assert!(out.status.success(), "{mode:?}: {}", stderr(&out));
    let results = tool_results(&server);
    assert!(!outside.exists(), "{mode:?}: {results:#?}");
    assert!(!results[0].contains("outside-written"), "{mode:?}: {results:#?}");
    assert!(inside.exists(), "{mode:?}: {results:#?}");
    assert!(results[0].contains("inside-written"), "{mode:?}: {results:#?}");
}

/// The `sleep DURATION` processes themselves (argv exactly that), not the shells and sandbox
/// wrappers whose command lines hold the same words: a fork shows its parent's command line
/// until it execs, so counting those would see a sandbox that is still being set up.
fn sleeps_running(duration: &str) -> usize {
    let argv = format!("sleep\0{duration}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.unwrap().path().join("cmdline")).ok())
        .filter(|cmdline| cmdline == argv.as_bytes())
        .count()
}

/// A `sleep` duration no other process on the machine uses, to find this test's in /proc.
fn marker(salt: u32) -> String {
    format!("{}.{}{salt}", 70 + std::process::id() % 9, std::process::id() % 1000)
}

/// Starts `codecoder exec` whose model opens a session (on a terminal or not) running two
/// sleepers (`sleep MARKER`, one in the background), and waits until both run.
fn start_sleepers(
    world: &World,
    marker: &str,
    tty: bool,
    mode: &[&str],
) -> (FakeModelServer, Child) {
    let cmd = format!("sleep {marker} & sleep {marker}; wait");
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call(
                "c1",
                "exec_command",
                json!({"cmd": cmd, "tty": tty, "yield_time_ms": 30000}),
            ))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let child = world.exec(&server, "sleep").args(mode).spawn().unwrap();
    let waited = Instant::now();
    while sleeps_running(marker) < 2 {
        assert!(waited.elapsed() < PATIENCE, "the sleepers never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    (server, child)
}

/// Waits until no `sleep MARKER` is left; false if some still run after `PATIENCE`.
fn all_gone(marker: &str) -> bool {
    let needle = format!("sleep {marker}");
    let waited = Instant::now();
    while processes_running(&needle) > 0 {
        if waited.elapsed() > PATIENCE {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

fn signal(child: &Child, signal: &str) {
    let sent = Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status();
    assert!(sent.unwrap().success());
}

#[test]
fn a_cancel_kills_the_terminal_sessions_whole_tree() {
    let world = World::new();
    let marker = marker(1);
    let (_server, mut child) = start_sleepers(&world, &marker, true, &[]);
    // Exec's first Ctrl-C cancels the turn: the waiting exec_command call ends its session.
    signal(&child, "INT");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(all_gone(&marker), "a sleeper outlived the cancel");
}

#[test]
fn a_killed_codecoder_leaves_no_process_behind() {
    // The sandbox's reaper kills every group codecoder started once codecoder is gone, confined
    // (where the sandbox's pid namespace also goes with its wrapper) or not, on a terminal or
    // not: the background `sleep` of a session without one has no parent-death signal.
    let sandboxed: &[&str] = &[];
    let unconfined: &[&str] = &["--yolo"];
    for (salt, tty, mode) in
        [(2, true, sandboxed), (3, false, sandboxed), (4, true, unconfined), (8, false, unconfined)]
    {
        let world = World::new();
        let marker = marker(salt);
        let (_server, mut child) = start_sleepers(&world, &marker, tty, mode);
        signal(&child, "KILL");
        let _ = child.wait();
        assert!(all_gone(&marker), "tty {tty} {mode:?}: a sleeper outlived codecoder");
    }
}

#[test]
fn the_number_of_sessions_is_bounded_by_the_configuration() {
    let world = World::new();
    let sleeper = json!({"cmd": "sleep 1000", "yield_time_ms": 0});
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "exec_command", sleeper.clone()))
            .reply(Reply::tool_call("c2", "exec_command", sleeper))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = world.exec(&server, "two").args(["-c", "shell.max_sessions=1"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&server);
    assert!(results[0].contains("Process running with session ID 1"), "{results:#?}");
    assert!(
        results[1].contains("1 command sessions and background jobs are running"),
        "{results:#?}"
    );
    // The refusal names the way to end the session, which has no terminal.
    assert!(results[1].contains("session 1 `sleep 1000`"), "{results:#?}");
    assert!(results[1].contains("job_kill"), "{results:#?}");
}

#[test]
fn exec_json_shows_a_session_as_a_command_item() {
    let world = World::new();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call(
                "c1",
                "exec_command",
                json!({"cmd": "echo from-the-terminal", "tty": true, "yield_time_ms": 30000}),
            ))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = world.exec(&server, "echo").arg("--json").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    lines.iter().for_each(crate::exec::check_json_line);
    let item = lines
        .iter()
        .filter(|line| line["type"] == "item.completed")
        .map(|line| &line["item"])
        .find(|item| item["type"] == "command_execution")
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert_eq!(item["command"], "echo from-the-terminal");
    assert_eq!(item["exit_code"], 0);
    assert_eq!(item["status"], "completed");
    assert!(item["aggregated_output"].as_str().unwrap().contains("from-the-terminal"), "{item}");
}

#[test]
fn a_background_job_outlives_its_call_but_not_codecoder() {
    // A job is a session without a terminal: its process belongs to the job's own thread, so the
    // tool worker that started it may end, while codecoder's end still takes it: a Ctrl-C drops
    // the tool set, and a `kill -9` leaves it to the sandbox's reaper (and, confined, to the
    // sandbox's pid namespace).
    let sandboxed: &[&str] = &[];
    let unconfined: &[&str] = &["--yolo"];
    for (salt, mode, how) in
        [(5, sandboxed, "KILL"), (6, unconfined, "INT"), (9, unconfined, "KILL")]
    {
        let world = World::new();
        let marker = marker(salt);
        let server = FakeModelServer::start(
            Script::new()
                .reply(Reply::tool_call(
                    "c1",
                    "run_command",
                    json!({"command": format!("sleep {marker} & sleep {marker}; wait"), "background": true}),
                ))
                .reply(Reply::tool_call(
                    "c2",
                    "run_command",
                    json!({"command": format!("sleep 1{marker}"), "timeout_ms": 600000}),
                ))
                .reply(Reply::text("done")),
        )
        .unwrap();
        let mut child = world.exec(&server, "job").args(mode).spawn().unwrap();
        let waited = Instant::now();
        let next = format!("1{marker}");
        while sleeps_running(&marker) < 2 || sleeps_running(&next) < 1 {
            assert!(waited.elapsed() < PATIENCE, "{mode:?}: the job or the next call never ran");
            std::thread::sleep(Duration::from_millis(20));
        }
        // The job's call returned long ago and the next one runs: the job still does.
        std::thread::sleep(Duration::from_millis(300));
        assert!(sleeps_running(&marker) >= 2, "{mode:?}: the job died with its call");
        signal(&child, how);
        let _ = child.wait();
        assert!(all_gone(&marker), "{mode:?}: a job's process outlived codecoder");
    }
}

#[test]
fn an_idle_session_is_ended_while_no_call_comes_and_the_model_is_told_at_the_next() {
    // Unconfined, so the pid the session writes is the one this test sees in /proc.
    let world = World::new();
    let marker = marker(7);
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call(
                "c1",
                "exec_command",
                json!({"cmd": format!("echo $$ > session.pid; exec sleep {marker}"), "yield_time_ms": 0}),
            ))
            // A foreground command that holds the turn, so that no process call comes, until
            // the test lets it go.
            .reply(Reply::tool_call(
                "c2",
                "run_command",
                json!({"command": "touch waiting; while [ ! -e go ]; do sleep 0.05; done", "timeout_ms": 600000}),
            ))
            .reply(write("c3", "", 0))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let mut child = world
        .exec(&server, "idle")
        .args(["--yolo", "-c", "shell.session_idle_timeout_secs=1"])
        .spawn()
        .unwrap();
    let pid_file = world.workspace.join("session.pid");
    let waited = Instant::now();
    let pid = loop {
        let written = std::fs::read_to_string(&pid_file).unwrap_or_default();
        if written.ends_with('\n') {
            break written.trim().to_owned();
        }
        assert!(waited.elapsed() < PATIENCE, "the session never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    while !world.workspace.join("waiting").exists() {
        assert!(waited.elapsed() < PATIENCE, "the foreground command never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    let proc_dir = Path::new("/proc").join(&pid);
    while proc_dir.exists() && !is_zombie(&proc_dir) {
        assert!(waited.elapsed() < PATIENCE, "the idle session was never ended");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::write(world.workspace.join("go"), "").unwrap();
    let status = child.wait().unwrap();
    assert!(status.success());
    let results = tool_results(&server);
    assert_eq!(results.len(), 3, "{results:#?}");
    assert!(results[0].contains("Process running with session ID 1"), "{results:#?}");
    assert!(results[2].contains("command session 1 (`echo $$ > session.pid"), "{results:#?}");
    assert!(results[2].contains("without use (the idle timeout"), "{results:#?}");
}

fn is_zombie(proc_dir: &Path) -> bool {
    std::fs::read_to_string(proc_dir.join("stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(") ").map(|(_, rest)| rest.starts_with('Z')))
        .unwrap_or(true)
}

#[test]
fn a_killed_unconfined_codecoder_leaves_no_session_job_or_grandchild_behind() {
    // Unconfined, with no sandbox's pid namespace: a session without a terminal and a job, each
    // with a grandchild in the background (one of them in a session of its own, out of its
    // group), while a foreground command holds the turn; `kill -9` runs no drop guard.
    let world = World::new();
    let marker = marker(10);
    let session = format!("sleep {marker} & sleep {marker}; wait");
    let job = format!("sleep {marker} & setsid sleep {marker} & sleep {marker}; wait");
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call(
                "c1",
                "exec_command",
                json!({"cmd": session, "yield_time_ms": 0}),
            ))
            .reply(Reply::tool_call(
                "c2",
                "run_command",
                json!({"command": job, "background": true}),
            ))
            .reply(Reply::tool_call(
                "c3",
                "run_command",
                json!({"command": format!("sleep {marker}"), "timeout_ms": 600000}),
            ))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let mut child = world.exec(&server, "sleep").arg("--yolo").spawn().unwrap();
    let waited = Instant::now();
    while sleeps_running(&marker) < 6 {
        assert!(waited.elapsed() < PATIENCE, "the sleepers never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&child, "KILL");
    let _ = child.wait();
    assert!(all_gone(&marker), "a sleeper outlived codecoder");
}
