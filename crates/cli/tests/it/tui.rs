//! The interactive UI end to end: the real binary in a pseudo-terminal (portable-pty) against
//! the fake model server, its screen read back through a terminal emulator (vt100). The test
//! answers the cursor-position queries a real terminal would (the inline viewport asks where
//! the cursor is when it starts).

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codecoder_test_support::{FakeModelServer, Reply, Script, Usage};
use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use serde_json::json;

const ROWS: u16 = 40;
const COLS: u16 = 100;

/// A codecoder process in a pseudo-terminal and the emulated screen it draws on.
pub(crate) struct Pty {
    screen: Arc<Mutex<vt100::Parser>>,
    /// Everything the program printed, for failure messages.
    raw: Arc<Mutex<Vec<u8>>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    _reader: std::thread::JoinHandle<()>,
}

impl Pty {
    pub(crate) fn spawn(home: &Path, cwd: &Path, env: &[(String, String)], args: &[&str]) -> Pty {
        let pair = native_pty_system()
            .openpty(PtySize { rows: ROWS, cols: COLS, pixel_width: 0, pixel_height: 0 })
            .unwrap();
        let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_codecoder"));
        command.args(args);
        command.cwd(cwd);
        command.env_clear();
        command.env("PATH", std::env::var_os("PATH").unwrap_or_default());
        command.env("TERM", "xterm-256color");
        command.env("CODECODER_HOME", home);
        for (key, value) in env {
            command.env(key, value);
        }
        let child = pair.slave.spawn_command(command).unwrap();
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer: Arc<Mutex<Box<dyn Write + Send>>> =
            Arc::new(Mutex::new(pair.master.take_writer().unwrap()));
        let screen = Arc::new(Mutex::new(vt100::Parser::new(ROWS, COLS, 1000)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let reader_thread = {
            let screen = Arc::clone(&screen);
            let writer = Arc::clone(&writer);
            let raw = Arc::clone(&raw);
            // The master must outlive the reader; it moves into the thread.
            let master = pair.master;
            std::thread::spawn(move || {
                let _master = master;
                let mut buf = [0u8; 8192];
                loop {
                    let n = match reader.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let chunk = &buf[..n];
                    raw.lock().unwrap().extend_from_slice(chunk);
                    let mut parser = screen.lock().unwrap();
                    // Answer "where is the cursor?" (CSI 6 n) after the bytes before it.
                    let mut rest = chunk;
                    while let Some(at) = find(rest, b"\x1b[6n") {
                        parser.process(&rest[..at]);
                        let (row, col) = parser.screen().cursor_position();
                        let answer = format!("\x1b[{};{}R", row + 1, col + 1);
                        let _ = writer.lock().unwrap().write_all(answer.as_bytes());
                        rest = &rest[at + 4..];
                    }
                    parser.process(rest);
                }
            })
        };
        Pty { screen, raw, writer, child, _reader: reader_thread }
    }

    pub(crate) fn send(&self, bytes: &str) {
        let mut writer = self.writer.lock().unwrap();
        writer.write_all(bytes.as_bytes()).unwrap();
        writer.flush().unwrap();
    }

    /// Types text one key at a time (as a person would: no paste).
    pub(crate) fn type_text(&self, text: &str) {
        for c in text.chars() {
            self.send(&c.to_string());
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The visible screen plus the scrollback, as text.
    pub(crate) fn text(&self) -> String {
        let mut parser = self.screen.lock().unwrap();
        parser.set_scrollback(usize::MAX);
        let back = parser.screen().scrollback();
        let mut all = String::new();
        // Walk the scrollback a screen at a time, from the oldest line.
        let mut offset = back;
        loop {
            parser.set_scrollback(offset);
            let contents = parser.screen().contents();
            let rows: Vec<&str> = contents.split('\n').collect();
            let take = if offset >= usize::from(ROWS) { usize::from(ROWS) } else { offset };
            if offset == 0 {
                all.push_str(&contents);
                break;
            }
            for row in rows.iter().take(take) {
                all.push_str(row);
                all.push('\n');
            }
            offset -= take;
        }
        parser.set_scrollback(0);
        all
    }

    pub(crate) fn visible(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    pub(crate) fn wait_for(&self, needle: &str, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.text().contains(needle) {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!(
            "timed out waiting for {what} ({needle:?}); screen:\n{}\nraw tail: {:?}",
            self.text(),
            String::from_utf8_lossy(&tail(&self.raw.lock().unwrap(), 2000))
        );
    }

    pub(crate) fn wait_visible(&self, needle: &str, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.visible().contains(needle) {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("timed out waiting for {what} ({needle:?}); screen:\n{}", self.visible());
    }

    /// Waits for the idle status line: "ready" followed by the model's details, which no
    /// dialog text ("ready to carry it out?") can be mistaken for.
    pub(crate) fn wait_idle(&self, what: &str) {
        self.wait_visible("ready  ", what);
    }

    pub(crate) fn wait_exit(&mut self) -> portable_pty::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        let _ = self.child.kill();
        panic!("codecoder did not exit; screen:\n{}", self.text());
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn tail(bytes: &[u8], n: usize) -> Vec<u8> {
    bytes[bytes.len().saturating_sub(n)..].to_vec()
}

fn env_for(server: &FakeModelServer) -> Vec<(String, String)> {
    vec![
        ("OPENAI_BASE_URL".into(), format!("{}/v1", server.base_url())),
        ("OPENAI_API_KEY".into(), "sk-test".into()),
    ]
}

/// Type a prompt, approve the command it asks to run (`-a untrusted` asks for anything not known
/// to be read-only), watch it run and its output appear, cancel a streaming turn with Esc, quit
/// with Ctrl+C twice: the transcript stays on the screen after exit.
#[test]
fn prompt_tool_output_cancel_and_quit_in_a_pty() {
    let script = Script::new()
        .reply(
            Reply::tool_call(
                "call_1",
                "run_command",
                json!({"command": "python3 -c \"print('pty-tool-output')\""}),
            )
            .with_text("Running it now.")
            .usage(Usage::tokens(1000, 20)),
        )
        .reply(
            Reply::text("The **command** printed `pty-tool-output`.")
                .chunks(4)
                .usage(Usage::tokens(1100, 10)),
        )
        .reply(Reply::endless_text());
    let server = FakeModelServer::start(script).unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let mut pty = Pty::spawn(home.path(), cwd.path(), &env_for(&server), &["-a", "untrusted"]);

    pty.wait_visible("ask anything", "the input prompt");
    pty.type_text("please run the command");
    pty.wait_visible("please run the command", "the typed prompt in the editor");
    pty.send("\r");

    pty.wait_for("› please run the command", "the prompt in the transcript");
    pty.wait_visible("[y] allow once", "the approval keys");
    pty.wait_visible("ask — default", "the rule or default behind the question");
    pty.send("y");
    pty.wait_for("✓ run_command $ python3 -c", "the finished tool card");
    pty.wait_for("│ pty-tool-output", "the command's output in the card");
    pty.wait_for("exit code 0", "the exit code");
    pty.wait_for("The command printed pty-tool-output.", "the final answer");
    pty.wait_idle("the idle status line");

    pty.type_text("stream forever");
    pty.send("\r");
    pty.wait_for("tick", "the streaming answer");
    pty.wait_visible("Esc to cancel", "the busy status line");
    pty.send("\x1b");
    pty.wait_for("turn cancelled", "the cancel notice");
    pty.wait_idle("the idle status line after cancel");

    pty.send("\x03");
    pty.wait_visible("press Ctrl+C again to quit", "the quit hint");
    pty.send("\x03");
    let status = pty.wait_exit();
    assert!(status.success(), "exit status {status:?}");
    // The transcript stays in the terminal after exit.
    let text = pty.text();
    assert!(text.contains("The command printed pty-tool-output."), "{text}");
    assert!(!text.contains("ask anything"), "the viewport is cleared at exit:\n{text}");
}

/// Without a terminal the UI refuses with a pointer to `exec`, exit 2, and draws nothing.
#[test]
fn without_a_terminal_it_points_at_exec() {
    let home = tempfile::tempdir().unwrap();
    let out = crate::codecoder(home.path(), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", crate::stderr(&out));
    assert!(crate::stderr(&out).contains("codecoder exec"), "{}", crate::stderr(&out));
    assert!(crate::stdout(&out).is_empty(), "nothing is drawn on a pipe");
}

/// `--help` explains the UI and its entry points.
#[test]
fn help_explains_the_ui() {
    let home = tempfile::tempdir().unwrap();
    let out = crate::codecoder(home.path(), &["--help"]);
    let help = crate::stdout(&out);
    assert!(help.contains("interactive terminal UI"), "{help}");
    assert!(help.contains("resume"), "{help}");
    assert!(help.contains("y (allow once)"), "{help}");
}

/// `codecoder resume --last` re-renders the earlier session's transcript from its log, and the
/// conversation goes on in the same session; `/status` names it.
#[test]
fn resume_last_rerenders_the_transcript() {
    let script = Script::new()
        .reply(
            Reply::tool_call(
                "call_1",
                "run_command",
                json!({"command": "echo from-the-first-run"}),
            )
            .usage(Usage::tokens(1000, 20)),
        )
        .reply(Reply::text("First answer, **remembered**.").usage(Usage::tokens(1100, 10)))
        .reply(Reply::text("Second answer.").usage(Usage::tokens(1200, 10)));
    let server = FakeModelServer::start(script).unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    exec_once(home.path(), cwd.path(), &server, "the first question");

    let mut pty = Pty::spawn(home.path(), cwd.path(), &env_for(&server), &["resume", "--last"]);
    pty.wait_for("› the first question", "the earlier prompt");
    pty.wait_for("✓ run_command $ echo from-the-first-run", "the earlier tool card");
    pty.wait_for("First answer, remembered.", "the earlier answer");
    pty.wait_visible("ask anything", "the input prompt");
    pty.type_text("and now?");
    pty.send("\r");
    pty.wait_for("Second answer.", "the new answer");
    pty.wait_idle("the idle status line");
    pty.type_text("/status");
    pty.send("\r");
    pty.wait_for("context:", "the /status report");
    // The earlier turn's tokens count too: 2,100 + 1,200 in, 30 + 10 out.
    pty.wait_for("tokens: 3300 in (0 cached), 40 out", "the session's tokens across processes");
    pty.type_text("/quit");
    pty.send("\r");
    let status = pty.wait_exit();
    assert!(status.success(), "exit status {status:?}");
    // One session: the conversation went on in the resumed log.
    let logs: Vec<_> = std::fs::read_dir(home.path().join("sessions"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("jsonl"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let log = std::fs::read_to_string(&logs[0]).unwrap();
    assert!(log.contains("and now?"), "the new prompt is in the resumed log");
}

/// Runs `codecoder exec PROMPT` to completion: a session for the resume tests to find.
fn exec_once(home: &Path, cwd: &Path, server: &FakeModelServer, prompt: &str) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_codecoder"))
        .args(["exec", prompt])
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CODECODER_HOME", home)
        .envs(env_for(server))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", crate::stderr(&out));
}

/// `codecoder resume` without an id opens the picker; Enter resumes the chosen session.
#[test]
fn resume_without_an_id_opens_the_picker() {
    let script = Script::new()
        .reply(Reply::text("Picked answer.").usage(Usage::tokens(1000, 10)))
        .reply(Reply::text("Continued.").usage(Usage::tokens(1100, 10)));
    let server = FakeModelServer::start(script).unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    exec_once(home.path(), cwd.path(), &server, "the question to pick");

    let mut pty = Pty::spawn(home.path(), cwd.path(), &env_for(&server), &["resume"]);
    pty.wait_visible("the question to pick", "the session in the picker");
    pty.send("\r");
    pty.wait_for("Picked answer.", "the resumed transcript");
    pty.type_text("go on");
    pty.send("\r");
    pty.wait_for("Continued.", "the answer in the resumed session");
    pty.type_text("/quit");
    pty.send("\r");
    assert!(pty.wait_exit().success());
}

/// CPU seconds (user + system) used so far by a process (`/proc/PID/stat`) or one of its
/// threads (`/proc/PID/task/TID/stat`), Linux only.
fn cpu_seconds(stat_path: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(stat_path).ok()?;
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// 50,000 text deltas as fast as the fake server sends them: the UI shows the last one soon
/// after the server is done (no backlog), stays under one core, and records its frame times.
#[test]
fn a_50k_token_stream_keeps_up() {
    const TOKENS: usize = 50_000;
    let mut answer = String::new();
    for i in 0..TOKENS - 1 {
        answer.push_str(if i % 400 == 399 { "tok\n\n" } else { "tok " });
    }
    answer.push_str("END-OF-STREAM");
    let script =
        Script::new().reply(Reply::text(answer).chunks(TOKENS).usage(Usage::tokens(100, 50_000)));
    let server = FakeModelServer::start(script).unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let stats_path = cwd.path().join("stats.json");
    let spawned = Instant::now();
    let mut pty = Pty::spawn(
        home.path(),
        cwd.path(),
        &env_for(&server),
        &["--stats-file", stats_path.to_str().unwrap()],
    );
    pty.wait_visible("ask anything", "the input prompt");
    let to_first_frame = spawned.elapsed();
    let pid = pty.child.process_id().unwrap();
    // The UI runs on the main thread, whose task id is the process id.
    let process = format!("/proc/{pid}/stat");
    let ui_thread = format!("/proc/{pid}/task/{pid}/stat");
    let cpu_before = cpu_seconds(&process).unwrap();
    let ui_before = cpu_seconds(&ui_thread).unwrap();
    let started = Instant::now();
    pty.type_text("go");
    pty.send("\r");
    pty.wait_for("END-OF-STREAM", "the last token");
    pty.wait_idle("the idle status line");
    let wall = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds(&process).unwrap() - cpu_before;
    let ui_cpu = cpu_seconds(&ui_thread).unwrap() - ui_before;
    pty.send("\x03");
    pty.send("\x03");
    assert!(pty.wait_exit().success());
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats_path).unwrap()).unwrap();
    eprintln!(
        "process start to first frame (as the test sees it): {:.1} ms",
        to_first_frame.as_secs_f64() * 1e3
    );
    eprintln!(
        "50k-token stream: wall {wall:.2} s, process cpu {cpu:.2} s ({:.0}% of one core), UI thread cpu {ui_cpu:.2} s ({:.0}%), stats {stats}",
        100.0 * cpu / wall,
        100.0 * ui_cpu / wall,
    );
    // The whole answer arrived (the provider may merge deltas, so events ≤ tokens).
    assert!(stats["events"].as_u64().unwrap() > 0, "{stats}");
    // The UI thread leaves most of a core idle even in a debug build: it drains all queued
    // events before each frame and draws at most ~60 frames a second.
    assert!(ui_cpu / wall < 0.9, "UI thread: {ui_cpu:.2} s of CPU in {wall:.2} s");
    // From `run` to the first frame on screen: ~20 ms in a debug build; the bound leaves room
    // for a loaded machine.
    let first_frame_us = stats["first_frame_us"].as_u64().unwrap();
    assert!(first_frame_us < 250_000, "first frame after {first_frame_us} µs");
    let frames = stats["frames"].as_u64().unwrap();
    let max_frames = (wall * 62.0) as u64 + 5;
    assert!(
        frames <= max_frames,
        "redraws are coalesced (≤ ~60 fps): {frames} frames in {wall:.2} s"
    );
}

/// `/approvals never` switches the running session's mode: a destructive command that
/// on-request would ask about is refused without a question, and the status line says so.
#[test]
fn approvals_switches_the_mode_mid_session() {
    let script = Script::new()
        .reply(Reply::tool_call("call_1", "run_command", json!({"command": "git push --force"})))
        .reply(Reply::text("Not pushed.").usage(Usage::tokens(1000, 10)));
    let server = FakeModelServer::start(script).unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let mut pty = Pty::spawn(home.path(), cwd.path(), &env_for(&server), &[]);
    pty.wait_visible("on-request · workspace-write", "the starting mode in the status line");
    pty.type_text("/approvals never");
    pty.send("\r");
    pty.wait_visible("never · workspace-write", "the new mode in the status line");
    pty.type_text("push it");
    pty.send("\r");
    pty.wait_for("Not pushed.", "the answer after the refusal");
    let text = pty.text();
    assert!(text.contains("approval mode is never"), "refused with the reason:\n{text}");
    assert!(!text.contains("[y] allow once"), "nobody was asked:\n{text}");
    pty.type_text("/quit");
    pty.send("\r");
    assert!(pty.wait_exit().success());
}

/// `/resume ID` of a session another process is writing shows why it cannot, and the UI goes on
/// in the session it had.
#[test]
fn resume_of_a_session_in_use_elsewhere_is_an_error_note() {
    let script = Script::new()
        .reply(Reply::text("Held answer."))
        .reply(Reply::endless_text())
        .reply(Reply::text("Still here."));
    let server = FakeModelServer::start(script).unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    exec_once(home.path(), cwd.path(), &server, "the held question");
    let held: String = std::fs::read_dir(home.path().join("sessions"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().and_then(|e| e.to_str()) == Some("jsonl"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .unwrap();
    let mut holder = std::process::Command::new(env!("CARGO_BIN_EXE_codecoder"))
        .args(["exec", "resume", &held, "keep talking"])
        .current_dir(cwd.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CODECODER_HOME", home.path())
        .envs(env_for(&server))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    server.wait_for_requests(2, Duration::from_secs(20)).unwrap();

    let mut pty = Pty::spawn(home.path(), cwd.path(), &env_for(&server), &[]);
    pty.wait_visible("ask anything", "the input prompt");
    pty.type_text(&format!("/resume {held}"));
    pty.send("\r");
    // The note may wrap: compare with the whitespace folded.
    let needle = format!("is in use by another codecoder process (pid {})", holder.id());
    let deadline = Instant::now() + Duration::from_secs(20);
    let folded = || pty.text().split_whitespace().collect::<Vec<_>>().join(" ");
    while !folded().contains(&needle) {
        assert!(Instant::now() < deadline, "no note {needle:?}; screen:\n{}", pty.text());
        std::thread::sleep(Duration::from_millis(25));
    }
    pty.type_text("still there?");
    pty.send("\r");
    pty.wait_for("Still here.", "an answer in the session the UI had");
    pty.type_text("/quit");
    pty.send("\r");
    assert!(pty.wait_exit().success());
    holder.kill().unwrap();
    holder.wait().unwrap();
}

/// An MCP server's progress shows in the running call's card, and its tools join the session
/// while the UI is already up.
#[test]
fn mcp_progress_shows_in_the_tool_card() {
    let Some(dir) = crate::mcp::servers_dir() else { return };
    let long = "mcp__everything__trigger-long-running-operation";
    let mut wait = Reply::tool_call("wait", "list_dir", json!({"path": "."}));
    wait.delay_ms = 100;
    let script = Script::new()
        .until_tools([long], wait)
        .reply(Reply::tool_call("call_1", long, json!({"duration": 1.5, "steps": 3})))
        .reply(Reply::text("The long operation is over."));
    let server = FakeModelServer::start(script).unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let everything = dir.join("node_modules/.bin/mcp-server-everything");
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[mcp_servers.everything]\ncommand = {:?}\nargs = [\"stdio\"]\n",
            everything.to_string_lossy()
        ),
    )
    .unwrap();
    let mut pty = Pty::spawn(home.path(), cwd.path(), &env_for(&server), &[]);
    pty.wait_visible("ask anything", "the input prompt");
    pty.type_text("run the long operation");
    pty.send("\r");
    // The last notification comes with the result, so the card may never show it: the test
    // waits for the two before it.
    pty.wait_for("progress 1/3", "the first progress notification in the card");
    pty.wait_for("progress 2/3", "the second progress notification in the card");
    pty.wait_for("The long operation is over.", "the final answer");
    pty.wait_idle("the idle status line");
    pty.send("\x03");
    pty.send("\x03");
    let status = pty.wait_exit();
    assert!(status.success(), "exit status {status:?}");
}

/// Shift+Tab cycles to plan mode (shown in the status line); a write is refused while the model
/// plans; `1` approves the presented plan: the mode goes back to the one before plan mode, the
/// plan is the todo list of the next request, and a write then runs.
#[test]
fn plan_mode_approve_makes_the_plan_the_todo_list_and_writes_run() {
    let plan = "# Plan\n\n1. Fix the greeting\n2. Add `notes.txt`\n";
    let script = Script::new()
        .reply(Reply::tool_call(
            "call_1",
            "write_file",
            json!({"path": "early.txt", "content": "x"}),
        ))
        .reply(Reply::tool_call("call_2", "exit_plan_mode", json!({"plan": plan})))
        .reply(Reply::tool_call(
            "call_3",
            "write_file",
            json!({"path": "notes.txt", "content": "ok"}),
        ))
        .reply(Reply::text("Done with the plan.").usage(Usage::tokens(1000, 10)));
    let server = FakeModelServer::start(script).unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let mut pty =
        Pty::spawn(home.path(), cwd.path(), &env_for(&server), &["-s", "danger-full-access"]);
    pty.wait_visible("ask anything", "the input prompt");
    pty.send("\x1b[Z");
    pty.wait_visible("⏵⏵ accept edits", "acceptEdits in the status line");
    pty.send("\x1b[Z");
    pty.wait_visible("⏸ plan mode", "plan mode in the status line");
    pty.type_text("plan the fix");
    pty.send("\r");
    pty.wait_visible("Plan — ready to carry it out?", "the plan review");
    pty.wait_visible("Add notes.txt", "the plan, as Markdown");
    pty.send("1");
    pty.wait_for("Done with the plan.", "the answer after the approved plan ran");
    pty.wait_visible("⏵⏵ accept edits", "the mode before plan mode, back");
    assert!(!cwd.path().join("early.txt").exists(), "the write in plan mode was refused");
    assert_eq!(std::fs::read_to_string(cwd.path().join("notes.txt")).unwrap(), "ok");
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert!(requests[1].raw_body.contains("plan mode: `write_file` changes files"));
    let approved = &requests[2].raw_body;
    assert!(approved.contains("The user approved the plan"), "{approved}");
    assert!(approved.contains("[ ] Fix the greeting"), "the todo list: {approved}");
    assert!(approved.contains("[ ] Add `notes.txt`"), "the todo list: {approved}");
    // Out of plan mode, the plan tool is no longer offered.
    assert!(!approved.contains("\"name\":\"exit_plan_mode\",\"parameters\""), "{approved}");
    pty.type_text("/quit");
    pty.send("\r");
    assert!(pty.wait_exit().success());
}

/// Typed feedback sends a plan back (the model reads it, plan mode stays); Ctrl+G opens the
/// next plan in the editor and Enter approves the edited text.
#[test]
fn plan_mode_feedback_reaches_the_model_and_an_edited_plan_is_approved() {
    let first = "1. Rewrite everything\n";
    let second = "1. Split the fix\n2. Add notes\n";
    let script = Script::new()
        .reply(Reply::tool_call("call_1", "exit_plan_mode", json!({"plan": first})))
        .reply(Reply::tool_call("call_2", "exit_plan_mode", json!({"plan": second})))
        .reply(Reply::text("Carrying out the edited plan.").usage(Usage::tokens(1000, 10)));
    let server = FakeModelServer::start(script).unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let mut pty = Pty::spawn(
        home.path(),
        cwd.path(),
        &env_for(&server),
        &["-s", "danger-full-access", "--permission-mode", "plan"],
    );
    pty.wait_visible("⏸ plan mode", "plan mode from the flag");
    pty.type_text("plan it");
    pty.send("\r");
    pty.wait_visible("Rewrite everything", "the first plan");
    pty.type_text("smaller steps please");
    pty.send("\r");
    pty.wait_visible("Split the fix", "the revised plan");
    pty.send("\x07");
    pty.wait_visible("plan› ", "the plan in the editor");
    pty.type_text(" and tell the user");
    pty.send("\r");
    pty.wait_for("Carrying out the edited plan.", "the answer after the approval");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let sent_back = &requests[1].raw_body;
    assert!(sent_back.contains("Their feedback: smaller steps please"), "{sent_back}");
    assert!(sent_back.contains("still in plan mode"), "{sent_back}");
    let approved = &requests[2].raw_body;
    assert!(approved.contains("[ ] Add notes and tell the user"), "{approved}");
    pty.wait_idle("the idle status line");
    assert!(!pty.visible().contains("plan mode"), "plan mode is over:\n{}", pty.visible());
    pty.type_text("/quit");
    pty.send("\r");
    assert!(pty.wait_exit().success());
}

/// `/rewind 2` after two turns: turn 2's files are restored, turn 1's stay, its prompt returns to
/// the editor, and the next request carries turn 1 but nothing of turn 2; resumed later, the
/// session shows the conversation without turn 2 too.
#[test]
fn rewind_restores_files_and_conversation_in_a_pty() {
    let script = Script::new()
        .reply(Reply::tool_call("c1", "write_file", json!({"path": "a.txt", "content": "v1\n"})))
        .reply(Reply::text("Wrote a."))
        .reply(Reply::tool_call(
            "c2",
            "edit",
            json!({"path": "a.txt", "old_string": "v1", "new_string": "v2"}),
        ))
        .reply(Reply::tool_call("c3", "write_file", json!({"path": "b.txt", "content": "b\n"})))
        .reply(Reply::text("Changed a, wrote b."))
        .reply(Reply::text("Third answer."));
    let server = FakeModelServer::start(script).unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let mut pty = Pty::spawn(home.path(), cwd.path(), &env_for(&server), &["-a", "never"]);
    pty.wait_visible("ask anything", "the input prompt");
    pty.type_text("the first prompt");
    pty.send("\r");
    pty.wait_for("Wrote a.", "the first answer");
    pty.wait_idle("idle after turn 1");
    pty.type_text("the second prompt");
    pty.send("\r");
    pty.wait_for("Changed a, wrote b.", "the second answer");
    pty.wait_idle("idle after turn 2");
    assert_eq!(std::fs::read_to_string(cwd.path().join("a.txt")).unwrap(), "v2\n");

    pty.type_text("/rewind");
    pty.send("\r");
    pty.wait_for("rewind to before one of these prompts", "the list of prompts");
    pty.wait_for("2  › the second prompt · files changed since", "turn 2 in the list");
    pty.type_text("/rewind 2");
    pty.send("\r");
    pty.wait_for("conversation rewound to before turn 2", "the rewind report");
    pty.wait_for("restored 2 file(s) as they were before turn 2", "the files restored");
    assert_eq!(std::fs::read_to_string(cwd.path().join("a.txt")).unwrap(), "v1\n");
    assert!(!cwd.path().join("b.txt").exists());
    // Turn 2's prompt is back in the editor; replace it with another.
    pty.wait_visible("› the second prompt", "the prompt back in the editor");
    for _ in "the second prompt".chars() {
        pty.send("\x7f");
    }
    pty.type_text("the third prompt");
    pty.send("\r");
    pty.wait_for("Third answer.", "the answer after the rewind");
    let requests = server.requests();
    let last = &requests.last().unwrap().raw_body;
    assert!(last.contains("the first prompt") && last.contains("Wrote a."), "{last}");
    assert!(last.contains("the third prompt"), "{last}");
    assert!(!last.contains("the second prompt"), "turn 2 is gone: {last}");
    assert!(!last.contains("b.txt"), "turn 2's tool calls are gone: {last}");
    pty.type_text("/quit");
    pty.send("\r");
    assert!(pty.wait_exit().success());

    let mut pty = Pty::spawn(home.path(), cwd.path(), &env_for(&server), &["resume", "--last"]);
    pty.wait_for("Third answer.", "the resumed transcript");
    pty.wait_visible("ask anything", "the input prompt");
    let text = pty.text();
    assert!(text.contains("› the first prompt") && text.contains("Wrote a."), "{text}");
    assert!(text.contains("› the third prompt"), "{text}");
    assert!(!text.contains("the second prompt"), "turn 2 is not shown: {text}");
    assert!(!text.contains("b.txt"), "nor its tool calls: {text}");
    pty.type_text("/quit");
    pty.send("\r");
    assert!(pty.wait_exit().success());
}

/// A patch the model writes slowly shows the files it is writing, with the lines so far, until
/// the call's card replaces them once it runs.
#[test]
fn a_patch_being_written_shows_its_files_then_its_card() {
    let patch = "*** Begin Patch\n*** Add File: added.txt\n+first\n+second\n+third\n+fourth\n\
                 +fifth\n+sixth\n*** End Patch\n";
    let script = Script::new()
        .reply(
            Reply::tool_call("p1", "apply_patch", json!({"input": patch}))
                .arg_fragments(10)
                .pace_ms(300),
        )
        .reply(Reply::text("Patched."));
    let server = FakeModelServer::start(script).unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let mut pty = Pty::spawn(home.path(), cwd.path(), &env_for(&server), &[]);
    pty.wait_visible("ask anything", "the input prompt");
    pty.type_text("add the file");
    pty.send("\r");
    pty.wait_visible("Writing added.txt (+", "the file being written, before the call runs");
    pty.wait_for("✓ apply_patch added.txt", "the finished card");
    pty.wait_for("+sixth", "the whole diff on the card");
    pty.wait_for("Patched.", "the answer");
    assert_eq!(
        std::fs::read_to_string(cwd.path().join("added.txt")).unwrap(),
        "first\nsecond\nthird\nfourth\nfifth\nsixth\n"
    );
    pty.type_text("/quit");
    pty.send("\r");
    assert!(pty.wait_exit().success());
}

/// A local server that cannot stream tool calls: the first turn falls back and the UI shows the
/// warning once; the second turn goes unstreamed from its first request and warns no more.
#[test]
fn the_fallback_warning_shows_once_in_the_ui() {
    let script = Script::new()
        .when_streamed_tools(Reply::text("never sent").end_after(1))
        .reply(Reply::text("First answer."))
        .reply(Reply::text("Second answer."));
    let server = FakeModelServer::start(script).unwrap();
    let local = crate::local::LocalHome::new(&server.base_url(), "local-model", "");
    let mut pty = Pty::spawn(local.home.path(), local.cwd.path(), &[], &[]);
    pty.wait_visible("ask anything", "the input prompt");
    pty.type_text("first");
    pty.send("\r");
    pty.wait_for("First answer.", "the first answer");
    pty.wait_idle("the idle status line");
    pty.type_text("second");
    pty.send("\r");
    pty.wait_for("Second answer.", "the second answer");
    pty.wait_idle("the idle status line after the second turn");
    let text = pty.text();
    assert_eq!(text.matches("cannot stream tool calls").count(), 1, "{text}");
    let streams: Vec<bool> =
        server.requests().iter().map(|r| r.body["stream"].as_bool().unwrap()).collect();
    assert_eq!(streams, [true, false, false]);
    pty.send("\x03");
    pty.send("\x03");
    pty.wait_exit();
}
