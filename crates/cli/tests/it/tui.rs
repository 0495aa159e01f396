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
struct Pty {
    screen: Arc<Mutex<vt100::Parser>>,
    /// Everything the program printed, for failure messages.
    raw: Arc<Mutex<Vec<u8>>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    _reader: std::thread::JoinHandle<()>,
}

impl Pty {
    fn spawn(home: &Path, cwd: &Path, env: &[(String, String)], args: &[&str]) -> Pty {
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

    fn send(&self, bytes: &str) {
        let mut writer = self.writer.lock().unwrap();
        writer.write_all(bytes.as_bytes()).unwrap();
        writer.flush().unwrap();
    }

    /// Types text one key at a time (as a person would: no paste).
    fn type_text(&self, text: &str) {
        for c in text.chars() {
            self.send(&c.to_string());
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The visible screen plus the scrollback, as text.
    fn text(&self) -> String {
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

    fn visible(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    fn wait_for(&self, needle: &str, what: &str) {
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

    fn wait_visible(&self, needle: &str, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.visible().contains(needle) {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("timed out waiting for {what} ({needle:?}); screen:\n{}", self.visible());
    }

    fn wait_exit(&mut self) -> portable_pty::ExitStatus {
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

/// Type a prompt, watch a command run and its output appear, cancel a streaming turn with Esc,
/// quit with Ctrl+C twice: the transcript stays on the screen after exit.
#[test]
fn prompt_tool_output_cancel_and_quit_in_a_pty() {
    let script = Script::new()
        .reply(
            Reply::tool_call("call_1", "run_command", json!({"command": "echo pty-tool-output"}))
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
    let mut pty = Pty::spawn(home.path(), cwd.path(), &env_for(&server), &[]);

    pty.wait_visible("ask anything", "the input prompt");
    pty.type_text("please run the command");
    pty.wait_visible("please run the command", "the typed prompt in the editor");
    pty.send("\r");

    pty.wait_for("› please run the command", "the prompt in the transcript");
    pty.wait_for("✓ run_command $ echo pty-tool-output", "the finished tool card");
    pty.wait_for("│ pty-tool-output", "the command's output in the card");
    pty.wait_for("exit code 0", "the exit code");
    pty.wait_for("The command printed pty-tool-output.", "the final answer");
    pty.wait_visible("ready", "the idle status line");

    pty.type_text("stream forever");
    pty.send("\r");
    pty.wait_for("tick", "the streaming answer");
    pty.wait_visible("Esc to cancel", "the busy status line");
    pty.send("\x1b");
    pty.wait_for("turn cancelled", "the cancel notice");
    pty.wait_visible("ready", "the idle status line after cancel");

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
            Reply::tool_call("call_1", "run_command", json!({"command": "echo from-the-first-run"}))
                .usage(Usage::tokens(1000, 20)),
        )
        .reply(Reply::text("First answer, **remembered**.").usage(Usage::tokens(1100, 10)))
        .reply(Reply::text("Second answer.").usage(Usage::tokens(1200, 10)));
    let server = FakeModelServer::start(script).unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_codecoder"))
        .args(["exec", "the first question"])
        .current_dir(cwd.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CODECODER_HOME", home.path())
        .envs(env_for(&server))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", crate::stderr(&out));

    let mut pty = Pty::spawn(home.path(), cwd.path(), &env_for(&server), &["resume", "--last"]);
    pty.wait_for("› the first question", "the earlier prompt");
    pty.wait_for("✓ run_command $ echo from-the-first-run", "the earlier tool card");
    pty.wait_for("First answer, remembered.", "the earlier answer");
    pty.wait_visible("ask anything", "the input prompt");
    pty.type_text("and now?");
    pty.send("\r");
    pty.wait_for("Second answer.", "the new answer");
    pty.wait_visible("ready", "the idle status line");
    pty.type_text("/status");
    pty.send("\r");
    pty.wait_for("context:", "the /status report");
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
