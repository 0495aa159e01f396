//! `codecoder --remote URL` end to end: the real `codecoder serve` on the fake model, and the
//! real UI in a pseudo-terminal driving one of its sessions (the token found in the shared
//! `serve.json`). A prompt gets its answer, an approval is answered from the UI and the command
//! runs, another client answering first takes the UI's prompt down, a plain HTTP client sees
//! the same session's events, and the session stays hosted after the UI leaves. Then the ways
//! to fail: no token, a wrong one, a token on the command line, no server, another command.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::{Value, json};

use crate::exec::{Run, openai_env};
use crate::tui::Pty;

/// How long any one wait may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(30);

/// A running `codecoder serve`.
struct Served {
    child: Child,
    port: u16,
    token: String,
}

impl Served {
    fn start(run: &Run, args: &[&str]) -> Self {
        let mut command_args = vec!["serve"];
        command_args.extend_from_slice(args);
        let mut child = run
            .command(&command_args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let rest =
            line.trim().strip_prefix("http://127.0.0.1:").unwrap_or_else(|| panic!("{line}"));
        let (port, token) = rest.split_once("/?token=").unwrap();
        Self { child, port: port.parse().unwrap(), token: token.to_owned() }
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A request as a second client would send it: `(status, body)`.
    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        let body = body.map(Value::to_string).unwrap_or_default();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            self.token,
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        (status, serde_json::from_str(body).unwrap_or(Value::Null))
    }

    /// The session's stream as server-sent events, read from the start until `turns` turns
    /// ended: each item's JSON.
    fn events_until_turns(&self, id: &str, turns: usize) -> Vec<Value> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        let request = format!(
            "GET /api/sessions/{id}/events?after=0 HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\
             Authorization: Bearer {}\r\nAccept: text/event-stream\r\n\r\n",
            self.port, self.token
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut reader = BufReader::new(stream);
        let mut items = Vec::new();
        let mut line = String::new();
        while items.iter().filter(|item| kind(item) == "turn_done").count() < turns {
            line.clear();
            assert!(reader.read_line(&mut line).unwrap() > 0, "the stream ended: {items:?}");
            if let Some(data) = line.trim_end().strip_prefix("data: ") {
                items.push(serde_json::from_str::<Value>(data).unwrap());
            }
        }
        items
    }

    /// The one session the server lists.
    fn only_session(&self) -> Value {
        let (status, listed) = self.call("GET", "/api/sessions", None);
        assert_eq!(status, 200, "{listed}");
        let sessions = listed["sessions"].as_array().unwrap();
        assert_eq!(sessions.len(), 1, "{listed}");
        sessions[0].clone()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `type` of a stream item's agent event (empty for the server's own items).
fn kind(item: &Value) -> &str {
    item["event"]["kind"]["type"].as_str().unwrap_or_default()
}

/// Waits until `done` gives something, or fails saying `what`.
fn eventually<T>(what: &str, done: impl Fn() -> Option<T>) -> T {
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        if let Some(found) = done() {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}");
}

fn command_call(id: &str, marker: &str) -> Reply {
    // Not `echo`: untrusted mode runs known read-only commands without asking.
    let command = format!("python3 -c \"print('{marker}')\"");
    Reply::tool_call(id, "run_command", json!({ "command": command }))
}

#[test]
fn the_ui_drives_a_hosted_session_and_other_clients_see_and_answer_it() {
    let script = Script::new()
        .reply(command_call("call_1", "remote-first-output").with_text("Running it."))
        .reply(Reply::text("The first command printed its **marker**."))
        .reply(command_call("call_2", "remote-second-output"))
        .reply(Reply::text("The second one ran too."))
        .reply(Reply::text("Answered the browser."))
        .reply(Reply::text("Joined and answered."));
    let model = FakeModelServer::start(script).unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&model) };
    // Every command is asked about: the approvals reach the UI through the server.
    let served = Served::start(&run, &["-a", "untrusted"]);

    // The UI's process has no provider settings: everything runs in the server.
    let mut pty = Pty::spawn(home.path(), cwd.path(), &[], &["--remote", &served.base()]);
    pty.wait_for("remote session on", "the notice naming the server");
    pty.wait_visible("ask anything", "the input prompt");
    pty.type_text("please run the command");
    pty.send("\r");
    pty.wait_for("› please run the command", "the prompt in the transcript");
    pty.wait_visible("[y] allow once", "the approval, asked in the server");
    let session = served.only_session();
    let id = session["id"].as_str().unwrap().to_owned();
    assert_eq!(session["live"], true, "{session}");
    let (_, pending) = served.call("GET", &format!("/api/sessions/{id}/pending"), None);
    assert_eq!(pending["approvals"].as_array().unwrap().len(), 1, "{pending}");

    pty.send("y");
    pty.wait_for("│ remote-first-output", "the command's output, run by the server");
    pty.wait_for("The first command printed its marker.", "the answer");
    pty.wait_idle("the idle status line");

    // Another client answers the next approval first: the UI's prompt goes and it says so.
    pty.type_text("and the second");
    pty.send("\r");
    pty.wait_visible("[y] allow once", "the second approval");
    let request = eventually("the second approval to be pending", || {
        let (_, pending) = served.call("GET", &format!("/api/sessions/{id}/pending"), None);
        pending["approvals"][0]["event"]["kind"]["id"].as_str().map(str::to_owned)
    });
    let (status, answer) = served.call(
        "POST",
        &format!("/api/approvals/{request}"),
        Some(&json!({"decision": "allow_once"})),
    );
    assert_eq!(status, 200, "{answer}");
    pty.wait_for("another client answered first: allow once", "the note in the UI");
    pty.wait_for("│ remote-second-output", "the second command's output");
    pty.wait_for("The second one ran too.", "the second answer");
    pty.wait_idle("the idle status line after the second turn");
    assert!(
        !pty.visible().contains("[y] allow once"),
        "the prompt was taken down:\n{}",
        pty.visible()
    );

    // A plain HTTP client reads the same session's events from the start.
    let items = served.events_until_turns(&id, 2);
    let text: String = items
        .iter()
        .filter(|item| kind(item) == "text_delta")
        .filter_map(|item| item["event"]["kind"]["delta"].as_str())
        .collect();
    assert!(text.contains("The first command printed its **marker**."), "{text}");
    let outputs: Vec<String> = items
        .iter()
        .filter(|item| kind(item) == "tool_finished")
        .map(|item| item["event"]["kind"]["result"].to_string())
        .collect();
    assert!(outputs.iter().any(|o| o.contains("remote-first-output")), "{outputs:?}");
    assert!(outputs.iter().any(|o| o.contains("remote-second-output")), "{outputs:?}");
    let resolved: Vec<&Value> =
        items.iter().filter_map(|item| item.get("approvalResolved")).collect();
    assert_eq!(resolved.len(), 2, "both answers, the UI's and the other client's: {items:?}");

    // Shift+Tab switches the hosted session's permission mode; `/model` resumes it in the
    // server with another model (the server lets it go and takes it up again).
    pty.send("\x1b[Z");
    pty.wait_for("permission mode: acceptEdits", "the mode switched in the server");
    let (_, facts) = served.call("GET", &format!("/api/sessions/{id}"), None);
    assert_eq!(facts["permissionMode"], "acceptEdits", "{facts}");
    pty.type_text("/model gpt-5-mini");
    pty.send("\r");
    pty.wait_for("· model gpt-5-mini", "the session resumed with the model");
    pty.wait_idle("the idle status line after the switch");
    let (_, facts) = served.call("GET", &format!("/api/sessions/{id}"), None);
    assert_eq!(facts["model"], "gpt-5-mini", "{facts}");
    assert_eq!(facts["live"], true, "{facts}");

    // A prompt another client sends shows in the UI as the person's own would, with its answer.
    let (status, sent) = served.call(
        "POST",
        &format!("/api/sessions/{id}/prompt"),
        Some(&json!({"text": "a prompt from the browser"})),
    );
    assert_eq!(status, 202, "{sent}");
    pty.wait_for("› a prompt from the browser", "the other client's prompt in the transcript");
    pty.wait_for("Answered the browser.", "its answer");
    pty.wait_idle("the idle status line after the other client's turn");

    // Leaving the UI leaves the session to the server and its other clients.
    pty.send("\x03");
    pty.wait_visible("press Ctrl+C again to quit", "the quit hint");
    pty.send("\x03");
    let status = pty.wait_exit();
    assert!(status.success(), "exit status {status:?}");
    assert_eq!(served.only_session()["live"], true);

    // Joined again: the session as it ran in the server, then on from where it is.
    let mut pty =
        Pty::spawn(home.path(), cwd.path(), &[], &["--remote", &served.base(), "resume", &id[..8]]);
    pty.wait_idle("the idle status line");
    pty.type_text("still there?");
    pty.send("\r");
    pty.wait_for("Joined and answered.", "the answer in the joined session");
    pty.wait_idle("the idle status line after it");
    pty.type_text("/quit");
    pty.send("\r");
    assert!(pty.wait_exit().success());
    assert_eq!(served.only_session()["id"], id.as_str(), "no other session was started");
}

/// The model's question is answered in the UI and reaches the model through the server; a
/// server that stops while the UI follows it is said, and the UI stays usable to leave.
#[test]
fn a_question_is_answered_from_the_ui_and_a_stopped_server_is_said() {
    let script = Script::new()
        .reply(Reply::tool_call(
            "call_ask",
            "ask_user",
            json!({"question": "Which color should the button be?", "options": ["red", "blue"]}),
        ))
        .reply(Reply::text("Blue it is."));
    let model = FakeModelServer::start(script).unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&model) };
    let mut served = Served::start(&run, &[]);

    let mut pty = Pty::spawn(home.path(), cwd.path(), &[], &["--remote", &served.base()]);
    pty.wait_visible("ask anything", "the input prompt");
    pty.type_text("pick a color");
    pty.send("\r");
    pty.wait_visible("Which color should the button be?", "the model's question");
    pty.send("2");
    pty.wait_for("Blue it is.", "the answer after the question");
    pty.wait_idle("the idle status line");
    let requests = model.requests();
    let last = requests.last().unwrap().body.to_string();
    assert!(last.contains("blue"), "the answer reached the model: {last}");

    // Stopped as Ctrl-C stops it: the stream ends with a close frame.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(served.child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    assert!(served.child.wait().unwrap().success());
    pty.wait_for("closed the session's event stream", "the note that the server went away");
    pty.wait_for("the agent stopped", "the UI without an agent");
    pty.send("\x03");
    pty.wait_visible("press Ctrl+C again to quit", "the quit hint");
    pty.send("\x03");
    assert!(pty.wait_exit().success());
}

/// Plan mode on a hosted session: Shift+Tab switches the server's session into it, the plan
/// review is answered from the UI, and the status line follows the server out of plan mode.
#[test]
fn a_plan_is_reviewed_from_the_ui_and_the_mode_follows_the_server() {
    let plan = "# Plan\n\n1. Add `notes.txt`\n";
    let script = Script::new()
        .reply(Reply::tool_call("call_1", "exit_plan_mode", json!({"plan": plan})))
        .reply(Reply::tool_call(
            "call_2",
            "write_file",
            json!({"path": "notes.txt", "content": "ok"}),
        ))
        .reply(Reply::text("Done with the plan."));
    let model = FakeModelServer::start(script).unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&model) };
    let served = Served::start(&run, &["-s", "danger-full-access"]);

    let mut pty = Pty::spawn(home.path(), cwd.path(), &[], &["--remote", &served.base()]);
    pty.wait_visible("ask anything", "the input prompt");
    pty.send("\x1b[Z");
    pty.wait_visible("⏵⏵ accept edits", "acceptEdits in the status line");
    pty.send("\x1b[Z");
    pty.wait_visible("⏸ plan mode", "plan mode in the status line");
    pty.type_text("plan the fix");
    pty.send("\r");
    pty.wait_visible("Plan — ready to carry it out?", "the plan review");
    pty.send("1");
    pty.wait_for("Done with the plan.", "the answer after the approved plan ran");
    pty.wait_visible("⏵⏵ accept edits", "the mode before plan mode, back, as the server says");
    assert_eq!(std::fs::read_to_string(cwd.path().join("notes.txt")).unwrap(), "ok");
    let id = served.only_session()["id"].as_str().unwrap().to_owned();
    let (_, facts) = served.call("GET", &format!("/api/sessions/{id}"), None);
    assert_eq!(facts["permissionMode"], "acceptEdits", "{facts}");
    pty.type_text("/quit");
    pty.send("\r");
    assert!(pty.wait_exit().success());
}

/// `/rewind` and `/undo` on a hosted session: the turns listed from the log (the server shares
/// this home), files and conversation taken back by the server, the next request without the
/// rewound turn.
#[test]
fn rewind_and_undo_go_through_the_server() {
    let script = Script::new()
        .reply(Reply::tool_call("c1", "write_file", json!({"path": "a.txt", "content": "v1\n"})))
        .reply(Reply::text("Wrote a."))
        .reply(Reply::tool_call(
            "c2",
            "edit",
            json!({"path": "a.txt", "old_string": "v1", "new_string": "v2"}),
        ))
        .reply(Reply::text("Changed a."))
        .reply(Reply::tool_call("c3", "write_file", json!({"path": "c.txt", "content": "c\n"})))
        .reply(Reply::text("Wrote c."));
    let model = FakeModelServer::start(script).unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&model) };
    let served = Served::start(&run, &["-a", "never"]);

    let mut pty = Pty::spawn(home.path(), cwd.path(), &[], &["--remote", &served.base()]);
    pty.wait_visible("ask anything", "the input prompt");
    pty.type_text("the first prompt");
    pty.send("\r");
    pty.wait_for("Wrote a.", "the first answer");
    pty.wait_idle("idle after turn 1");
    pty.type_text("the second prompt");
    pty.send("\r");
    pty.wait_for("Changed a.", "the second answer");
    pty.wait_idle("idle after turn 2");
    assert_eq!(std::fs::read_to_string(cwd.path().join("a.txt")).unwrap(), "v2\n");

    pty.type_text("/rewind");
    pty.send("\r");
    pty.wait_for("2  › the second prompt · files changed since", "turn 2 in the list");
    pty.type_text("/rewind 2");
    pty.send("\r");
    pty.wait_for("conversation rewound to before turn 2", "the rewind report");
    pty.wait_for("restored 1 file(s) as they were before turn 2", "the file restored");
    assert_eq!(std::fs::read_to_string(cwd.path().join("a.txt")).unwrap(), "v1\n");
    pty.wait_visible("› the second prompt", "the prompt back in the editor");
    for _ in "the second prompt".chars() {
        pty.send("\x7f");
    }
    pty.type_text("the third prompt");
    pty.send("\r");
    pty.wait_for("Wrote c.", "the answer after the rewind");
    pty.wait_idle("idle after turn 3");
    let last = model.requests().last().unwrap().raw_body.clone();
    assert!(last.contains("the third prompt"), "{last}");
    assert!(!last.contains("the second prompt"), "turn 2 is gone: {last}");
    assert!(cwd.path().join("c.txt").exists());

    pty.type_text("/undo");
    pty.send("\r");
    pty.wait_for("restored 1 file(s) as they were before turn 3", "the undo report");
    assert!(!cwd.path().join("c.txt").exists(), "the last turn's file is undone");
    pty.type_text("/quit");
    pty.send("\r");
    assert!(pty.wait_exit().success());
}

/// Runs `codecoder ARGS` on pipes with `home` and `env`: (exit code, stderr).
fn refused(home: &Path, env: &[(&str, &str)], args: &[&str]) -> (Option<i32>, String) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_codecoder"));
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CODECODER_HOME", home)
        .stdin(Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    let out = command.output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_missing_wrong_or_misplaced_token_and_a_server_not_running_are_clear_errors() {
    let model = FakeModelServer::start(Script::new()).unwrap();
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&model) };
    let served = Served::start(&run, &[]);
    let url = served.base();
    // Another home: its serve.json (none) is not this server's.
    let elsewhere = tempfile::tempdir().unwrap();

    let (code, stderr) = refused(elsewhere.path(), &[], &["--remote", &url]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no token for"), "{stderr}");
    assert!(stderr.contains("$CODECODER_SERVE_TOKEN"), "{stderr}");

    let (code, stderr) =
        refused(elsewhere.path(), &[("CODECODER_SERVE_TOKEN", "0123abcd")], &["--remote", &url]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("refused the token"), "{stderr}");
    assert!(!stderr.contains(&served.token), "{stderr}");

    // The right token in a variable of the person's choosing gets past the server's guard (and
    // then needs a terminal).
    let (code, stderr) = refused(
        elsewhere.path(),
        &[("MY_SERVE_TOKEN", &served.token)],
        &["--remote", &url, "--remote-token-env", "MY_SERVE_TOKEN"],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("needs a terminal"), "{stderr}");

    // The same home's serve.json gives the token; `localhost` is the same server.
    let localhost = url.replace("127.0.0.1", "localhost");
    let (code, stderr) = refused(home.path(), &[], &["--remote", &localhost]);
    assert!(stderr.contains("needs a terminal"), "{code:?} {stderr}");

    let with_token = format!("{url}/?token={}", served.token);
    let (code, stderr) = refused(home.path(), &[], &["--remote", &with_token]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("does not go on the command line"), "{stderr}");

    let (code, stderr) = refused(home.path(), &[], &["--remote", &url, "exec", "hello"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--remote drives the interactive UI"), "{stderr}");

    let (code, stderr) = refused(home.path(), &[], &["--remote", &url, "-s", "read-only"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--sandbox cannot be used with --remote"), "{stderr}");

    let out = crate::codecoder(home.path(), &["--help"]);
    let help = crate::stdout(&out);
    assert!(help.contains("--remote <URL>"), "{help}");
    assert!(help.contains("never from the command line"), "{help}");
    assert!(help.contains("[default: CODECODER_SERVE_TOKEN]"), "{help}");

    let port = served.port;
    let token = served.token.clone();
    drop(served);
    let (code, stderr) = refused(
        elsewhere.path(),
        &[("CODECODER_SERVE_TOKEN", &token)],
        &["--remote", &format!("http://127.0.0.1:{port}")],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("no codecoder serve answers at"), "{stderr}");
}
