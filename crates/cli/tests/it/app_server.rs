//! `codecoder app-server` end to end: a JSON-RPC client speaking JSON lines over the real
//! binary's pipes, against the fake model server — the handshake, threads started, resumed,
//! forked and listed, turns with approvals answered both ways, an interrupted command, the
//! model's questions (answered, declined, withdrawn, not asked without the experimental API),
//! and the error answers.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::time::Duration;

use codecoder_test_support::{FakeModelServer, Reply, Script};
use crossbeam_channel::Receiver;
use serde_json::{Value, json};

use crate::exec::{Run, openai_env};

mod questions;
use crate::stdout;

/// How long any one message may take to arrive before the test fails.
const PATIENCE: Duration = Duration::from_secs(60);

/// A JSON-RPC client of one `codecoder app-server` process.
pub(crate) struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    /// Messages read while waiting for another one, in order.
    backlog: Vec<Value>,
    next_id: i64,
    /// Everything the server wrote, in order.
    transcript: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
    /// The method of each request the client sent, by id.
    sent: std::collections::HashMap<i64, String>,
}

impl Client {
    /// The server allows every sandbox (`-s danger-full-access`): each test's threads name
    /// their own.
    pub(crate) fn start(run: &Run) -> Self {
        let mut child = run
            .command(&["app-server", "-s", "danger-full-access"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = crossbeam_channel::unbounded();
        let transcript = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = std::sync::Arc::clone(&transcript);
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|err| panic!("not a JSON line ({err}): {line}"));
                assert!(value.get("jsonrpc").is_none(), "{line}");
                conforms(&value);
                record.lock().unwrap().push(value.clone());
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
            backlog: Vec::new(),
            next_id: 1,
            transcript,
            sent: std::collections::HashMap::new(),
        }
    }

    fn send(&mut self, message: &Value) {
        self.send_raw(&message.to_string());
    }

    fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    pub(crate) fn recv(&mut self) -> Value {
        if !self.backlog.is_empty() {
            return self.backlog.remove(0);
        }
        self.lines.recv_timeout(PATIENCE).expect("the server said nothing more")
    }

    /// Sends a request and returns its answer (`result` or `error` message); other messages
    /// that arrive meanwhile stay in the backlog.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.sent.insert(id, method.to_owned());
        self.send(&json!({"id": id, "method": method, "params": params}));
        self.answer_to(&json!(id))
    }

    fn answer_to(&mut self, id: &Value) -> Value {
        if let Some(at) = self.backlog.iter().position(|m| is_answer(m, id)) {
            return self.backlog.remove(at);
        }
        loop {
            let message = self.lines.recv_timeout(PATIENCE).expect("no answer");
            if is_answer(&message, id) {
                return message;
            }
            self.backlog.push(message);
        }
    }

    pub(crate) fn result(&mut self, method: &str, params: Value) -> Value {
        let answer = self.request(method, params);
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    fn error(&mut self, method: &str, params: Value) -> Value {
        let answer = self.request(method, params);
        assert!(answer.get("result").is_none(), "{method} should fail: {answer}");
        answer["error"].clone()
    }

    pub(crate) fn initialize(&mut self) {
        let result = self.result(
            "initialize",
            json!({"clientInfo": {"name": "test-client", "title": "Test", "version": "1.0"}}),
        );
        assert!(result["userAgent"].as_str().unwrap().starts_with("codecoder/"), "{result}");
        self.send(&json!({"method": "initialized"}));
    }

    /// Reads until `turn/completed`, answering each approval request with `decide(request)`;
    /// returns every message read, the last one `turn/completed`.
    pub(crate) fn turn(&mut self, mut decide: impl FnMut(&Value) -> &'static str) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let message = self.recv();
            seen.push(message.clone());
            let method = message["method"].as_str().unwrap_or_default();
            if method.ends_with("/requestApproval") {
                let decision = decide(&message);
                self.send(&json!({"id": message["id"], "result": {"decision": decision}}));
            }
            if method == "turn/completed" {
                return seen;
            }
        }
    }

    /// Closes stdin and waits for the server to exit.
    pub(crate) fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        let started = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(started.elapsed() < PATIENCE, "the server did not exit after stdin closed");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A notification or request of the server has the shape of the protocol's types (from which
/// the checked-in schema is generated): it reads back as one of them, unchanged.
fn conforms(message: &Value) {
    use codecoder_app_server::types::{ServerNotification, ServerRequest};
    let Some(method) = message.get("method") else { return };
    let mut body = message.clone();
    let reparsed = if let Some(object) = body.as_object_mut().filter(|o| o.contains_key("id")) {
        object.remove("id");
        serde_json::from_value::<ServerRequest>(body.clone())
            .map(|r| serde_json::to_value(r).unwrap())
    } else {
        serde_json::from_value::<ServerNotification>(body.clone())
            .map(|n| serde_json::to_value(n).unwrap())
    };
    let reparsed =
        reparsed.unwrap_or_else(|err| panic!("{method} does not fit its type: {err}: {message}"));
    assert_eq!(reparsed, body, "{method} has fields its type does not");
}

/// The pinned npm packages (`.ci/run` installs them): `None` skips the check with a note,
/// except under CI, where their absence fails.
#[allow(clippy::print_stderr)] // Says why a check is skipped.
fn npm_dir() -> Option<std::path::PathBuf> {
    use codecoder_protocol::env;
    match std::env::var_os(env::CODECODER_TEST_NPM) {
        Some(dir) => Some(std::path::PathBuf::from(dir)),
        None if std::env::var(env::CI).is_ok_and(|v| v == "true") => {
            panic!("{} is not set: .ci/run installs the npm test packages", env::CODECODER_TEST_NPM)
        }
        None => {
            eprintln!("skipped the codex schema check: {} is not set", env::CODECODER_TEST_NPM);
            None
        }
    }
}

impl Client {
    /// Every message the server wrote fits the JSON Schema codex's own binary generates for its
    /// app-server protocol (the `@openai/codex` package the codex SDK brings), checked with ajv.
    fn check_against_codex(&self) {
        let Some(npm) = npm_dir() else { return };
        let work = tempfile::tempdir().unwrap();
        let schema = work.path().join("schema");
        let out = std::process::Command::new("node")
            .arg(npm.join("node_modules/@openai/codex/bin/codex.js"))
            .args(["app-server", "generate-json-schema", "--out"])
            .arg(&schema)
            .env("HOME", work.path())
            .env("CODEX_HOME", work.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut lines = String::new();
        for message in self.transcript.lock().unwrap().iter() {
            let (kind, method, value) = match message.get("method") {
                Some(method) if message.get("id").is_some() => ("request", method.clone(), message),
                Some(method) => ("notification", method.clone(), message),
                None => {
                    let Some(id) = message["id"].as_i64() else { continue };
                    if message.get("result").is_none() {
                        continue;
                    }
                    // Requests sent raw (not through `request`) are not checked.
                    let Some(method) = self.sent.get(&id) else { continue };
                    ("response", json!(method), &message["result"])
                }
            };
            lines.push_str(&json!({"kind": kind, "method": method, "value": value}).to_string());
            lines.push('\n');
        }
        let transcript = work.path().join("transcript.jsonl");
        std::fs::write(&transcript, lines).unwrap();
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/it/fixtures/app_server_schema.mjs");
        let out = std::process::Command::new("node")
            .arg(script)
            .arg(&npm)
            .arg(&schema)
            .arg(&transcript)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "messages that do not fit codex's schema:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn is_answer(message: &Value, id: &Value) -> bool {
    message.get("method").is_none() && &message["id"] == id
}

fn methods(messages: &[Value]) -> Vec<&str> {
    messages.iter().filter_map(|m| m["method"].as_str()).collect()
}

fn with_method<'a>(messages: &'a [Value], method: &str) -> Vec<&'a Value> {
    messages.iter().filter(|m| m["method"] == method).collect()
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Processes whose command line contains `needle`.
pub(crate) fn processes_running(needle: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.unwrap().path().join("cmdline")).ok())
        .filter(|cmdline| String::from_utf8_lossy(cmdline).replace('\0', " ").contains(needle))
        .count()
}

#[test]
fn a_client_drives_turns_approvals_and_an_interrupt() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    // A duration no other process on the machine uses, to find ours in /proc.
    let marker = format!("{}.{}", 80 + std::process::id() % 9, std::process::id() % 1000);
    let script = Script::new()
        .reply(Reply::tool_call(
            "c1",
            "run_command",
            json!({"command": "touch accepted.txt && echo made-it"}),
        ))
        .reply(Reply::text("Made it.").chunks(3))
        .reply(Reply::tool_call("c2", "run_command", json!({"command": "touch declined.txt"})))
        .reply(Reply::text("Left it."))
        .reply(Reply::tool_call(
            "c4",
            "write_file",
            json!({"path": "note.txt", "content": "hello\n"}),
        ))
        .reply(Reply::text("Wrote it."))
        .reply(Reply::tool_call("c3", "run_command", json!({"command": format!("sleep {marker}")})))
        // The interrupted turn asks the model nothing more; the next turn starts here.
        .reply(Reply::tool_call("c5", "run_command", json!({"command": "touch cancelled.txt"})))
        // Only reached if the cancel loses a race with the next request; it is cut off then.
        .reply(Reply::text("too late").delay_ms(3000));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let mut client = Client::start(&run);
    client.initialize();

    let started = client.result(
        "thread/start",
        json!({
            "cwd": cwd.path(),
            "approvalPolicy": "untrusted",
            "sandbox": "danger-full-access",
            "model": "test-model"
        }),
    );
    let thread_id = started["thread"]["id"].as_str().unwrap().to_owned();
    assert_eq!(started["approvalPolicy"], "untrusted", "{started}");
    assert_eq!(started["sandbox"], json!({"type": "dangerFullAccess"}), "{started}");
    assert_eq!(started["model"], "test-model");
    // The runtime's notes come as warnings of the thread, then thread/started.
    let mut warnings = Vec::new();
    let notification = loop {
        let message = client.recv();
        if message["method"] != "warning" {
            break message;
        }
        warnings.push(message);
    };
    assert_eq!(notification["method"], "thread/started", "{notification}");
    assert_eq!(notification["params"]["thread"]["id"], thread_id.as_str());
    assert!(
        warnings.iter().any(|w| w["params"]["message"].as_str().unwrap().contains("test-model")
            && w["params"]["threadId"] == thread_id.as_str()),
        "{warnings:?}"
    );

    // Turn 1: the command asks, the client accepts, it runs.
    let turn = client.result(
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "make the file"}]}),
    );
    let turn_id = turn["turn"]["id"].as_str().unwrap().to_owned();
    assert_eq!(turn["turn"]["status"], "inProgress");
    let mut asked = Vec::new();
    let messages = client.turn(|request| {
        asked.push(request.clone());
        "accept"
    });
    assert_eq!(asked.len(), 1, "{messages:#?}");
    let request = &asked[0];
    assert_eq!(request["method"], "item/commandExecution/requestApproval");
    assert_eq!(request["params"]["threadId"], thread_id.as_str());
    assert_eq!(request["params"]["turnId"], turn_id.as_str());
    assert_eq!(request["params"]["command"], "touch accepted.txt && echo made-it");
    let names = methods(&messages);
    let position = |method: &str| names.iter().position(|m| *m == method).unwrap();
    assert_eq!(names[0], "turn/started", "{names:?}");
    assert!(position("item/started") < position("item/commandExecution/requestApproval"));
    assert!(position("item/commandExecution/requestApproval") < position("serverRequest/resolved"));
    assert_eq!(
        with_method(&messages, "serverRequest/resolved")[0]["params"],
        json!({"threadId": thread_id, "requestId": request["id"]})
    );
    let items: Vec<&Value> = with_method(&messages, "item/completed")
        .into_iter()
        .map(|m| &m["params"]["item"])
        .collect();
    assert_eq!(items[0]["type"], "userMessage", "{items:#?}");
    assert_eq!(items[0]["content"], json!([{"type": "text", "text": "make the file"}]));
    let command = items.iter().find(|i| i["type"] == "commandExecution").unwrap();
    assert_eq!(command["status"], "completed", "{command}");
    assert_eq!(command["exitCode"], 0);
    assert!(command["aggregatedOutput"].as_str().unwrap().contains("made-it"), "{command}");
    let output: String = with_method(&messages, "item/commandExecution/outputDelta")
        .iter()
        .map(|m| m["params"]["delta"].as_str().unwrap())
        .collect();
    assert!(output.contains("made-it"), "{messages:#?}");
    let text: String = with_method(&messages, "item/agentMessage/delta")
        .iter()
        .map(|m| m["params"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Made it.");
    assert!(with_method(&messages, "item/agentMessage/delta").len() > 1, "streamed in deltas");
    let message = items.iter().find(|i| i["type"] == "agentMessage").unwrap();
    assert_eq!(message["text"], "Made it.");
    assert!(!with_method(&messages, "thread/tokenUsage/updated").is_empty(), "{names:?}");
    let completed = messages.last().unwrap();
    assert_eq!(completed["params"]["turn"]["id"], turn_id.as_str());
    assert_eq!(completed["params"]["turn"]["status"], "completed");
    assert!(cwd.path().join("accepted.txt").exists(), "the accepted command ran");

    // Turn 2: the client declines; the command does not run and the model hears so.
    client.result(
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "another"}]}),
    );
    let messages = client.turn(|_| "decline");
    let command = with_method(&messages, "item/completed")
        .into_iter()
        .map(|m| &m["params"]["item"])
        .find(|i| i["type"] == "commandExecution")
        .unwrap()
        .clone();
    assert_eq!(command["status"], "declined", "{command}");
    assert!(!cwd.path().join("declined.txt").exists(), "the declined command ran");
    assert_eq!(messages.last().unwrap()["params"]["turn"]["status"], "completed");
    assert!(server.requests().last().unwrap().raw_body.contains("denied"));

    // A file change asks with its own request; the input carries an image file.
    let png = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0];
    std::fs::write(cwd.path().join("shot.png"), png).unwrap();
    client.result(
        "turn/start",
        json!({"threadId": thread_id, "input": [
            {"type": "text", "text": "write a note"},
            {"type": "localImage", "path": "shot.png"}
        ]}),
    );
    let mut asked = Vec::new();
    let messages = client.turn(|request| {
        asked.push(request["method"].clone());
        "acceptForSession"
    });
    assert_eq!(asked, [json!("item/fileChange/requestApproval")], "{messages:#?}");
    let change = with_method(&messages, "item/completed")
        .into_iter()
        .map(|m| &m["params"]["item"])
        .find(|i| i["type"] == "fileChange")
        .unwrap()
        .clone();
    assert_eq!(change["status"], "completed", "{change}");
    assert_eq!(change["changes"][0]["path"], "note.txt");
    assert_eq!(change["changes"][0]["kind"], json!({"type": "add"}));
    assert_eq!(std::fs::read_to_string(cwd.path().join("note.txt")).unwrap(), "hello\n");
    let image = base64_of(&png);
    let request = server.requests().into_iter().rev().find(|r| r.raw_body.contains("write a note"));
    assert!(request.unwrap().raw_body.contains(&image), "the image reached the model");

    // A slow command, interrupted: the turn ends interrupted and no process is left.
    let turn = client.result(
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "sleep"}]}),
    );
    let turn_id = turn["turn"]["id"].as_str().unwrap().to_owned();
    // Another turn cannot start while this one runs.
    let error = client.error(
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "too soon"}]}),
    );
    assert_eq!(error["code"], -32600, "{error}");
    let waited = std::time::Instant::now();
    while processes_running(&format!("sleep {marker}")) == 0 {
        // Answer the approval request the command may need.
        if let Ok(message) = client.lines.recv_timeout(Duration::from_millis(20)) {
            if message["method"].as_str().unwrap_or_default().ends_with("/requestApproval") {
                client.send(&json!({"id": message["id"], "result": {"decision": "accept"}}));
            }
            client.backlog.push(message);
        }
        assert!(waited.elapsed() < PATIENCE, "the command never started");
    }
    let result = client.result("turn/interrupt", json!({"threadId": thread_id, "turnId": turn_id}));
    assert_eq!(result, json!({}));
    let messages = client.turn(|_| "accept");
    let completed = messages.last().unwrap();
    assert_eq!(completed["params"]["turn"]["status"], "interrupted", "{completed}");
    assert_eq!(processes_running(&format!("sleep {marker}")), 0, "the command survived");

    // `cancel` declines the command and interrupts the turn.
    client.result(
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "one more"}]}),
    );
    let messages = client.turn(|_| "cancel");
    assert_eq!(messages.last().unwrap()["params"]["turn"]["status"], "interrupted");
    assert!(!cwd.path().join("cancelled.txt").exists(), "the cancelled command ran");

    client.check_against_codex();
    let status = client.finish();
    assert!(status.success(), "{status:?}");

    // Resumed in a new server, the thread shows its turns as the log has them.
    let mut client = Client::start(&run);
    client.initialize();
    let resumed = client.result("thread/resume", json!({"threadId": thread_id}));
    let turns = resumed["thread"]["turns"].as_array().unwrap();
    let statuses: Vec<&str> = turns.iter().map(|t| t["status"].as_str().unwrap()).collect();
    assert_eq!(
        statuses,
        ["completed", "completed", "completed", "interrupted", "interrupted"],
        "{resumed}"
    );
    let command_status = |turn: &Value| {
        turn["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|item| item["type"] == "commandExecution")
            .map(|item| item["status"].clone())
    };
    assert_eq!(command_status(&turns[0]), Some(json!("completed")), "{}", turns[0]);
    assert_eq!(command_status(&turns[1]), Some(json!("declined")), "{}", turns[1]);
    client.check_against_codex();
    assert!(client.finish().success());
}

#[test]
fn threads_resume_fork_and_list_in_pages() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::text("Noted."))
            .reply(Reply::text("Second."))
            .reply(Reply::text("The word was PELICAN."))
            .reply(Reply::tool_call("r1", "read_file", json!({"path": "notes.txt"})))
            .reply(Reply::text("Forked answer.").reasoning("The notes say hello."))
            .reply(Reply::text("SUMMARY-OF-FORK"))
            .reply(Reply::text("Compacted answer.")),
    )
    .unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    std::fs::write(cwd.path().join("notes.txt"), "hello\n").unwrap();

    // One server: two threads with a turn each.
    let mut client = Client::start(&run);
    client.initialize();
    let mut ids = Vec::new();
    for prompt in ["Remember the word PELICAN.", "A second thread."] {
        let started = client.result("thread/start", json!({}));
        let thread_id = started["thread"]["id"].as_str().unwrap().to_owned();
        client.result(
            "turn/start",
            json!({"threadId": thread_id, "input": [{"type": "text", "text": prompt}]}),
        );
        let messages = client.turn(|_| "decline");
        assert_eq!(messages.last().unwrap()["params"]["turn"]["status"], "completed");
        ids.push(thread_id);
    }
    assert!(client.finish().success());

    // A new server: list in pages of one, newest first.
    let mut client = Client::start(&run);
    client.initialize();
    let page = client.result("thread/list", json!({"limit": 1}));
    assert_eq!(page["data"].as_array().unwrap().len(), 1, "{page}");
    assert_eq!(page["data"][0]["id"], ids[1].as_str(), "{page}");
    assert_eq!(page["data"][0]["preview"], "A second thread.");
    assert_eq!(page["data"][0]["cwd"], cwd.path().canonicalize().unwrap().to_str().unwrap());
    let cursor = page["nextCursor"].as_str().expect("a next page").to_owned();
    let page = client.result("thread/list", json!({"limit": 1, "cursor": cursor}));
    assert_eq!(page["data"][0]["id"], ids[0].as_str(), "{page}");
    assert_eq!(page["nextCursor"], Value::Null, "{page}");
    let all = client.result("thread/list", json!({}));
    assert_eq!(all["data"].as_array().unwrap().len(), 2, "{all}");
    let error = client.error("thread/list", json!({"cursor": "nonsense"}));
    assert_eq!(error["code"], -32602);
    assert!(error["message"].as_str().unwrap().contains("`cursor`"), "{error}");

    // Resume the first thread: the next request holds its earlier turn.
    let resumed = client.result("thread/resume", json!({"threadId": ids[0]}));
    assert_eq!(resumed["thread"]["id"], ids[0].as_str());
    let turns = resumed["thread"]["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 1, "{resumed}");
    assert_eq!(turns[0]["status"], "completed");
    let items: Vec<(&str, &Value)> = turns[0]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| (item["type"].as_str().unwrap(), item))
        .collect();
    assert_eq!(items[0].0, "userMessage", "{resumed}");
    assert_eq!(items[0].1["content"][0]["text"], "Remember the word PELICAN.");
    assert_eq!(items[1].0, "agentMessage", "{resumed}");
    assert_eq!(items[1].1["text"], "Noted.");
    let again = client.result("thread/resume", json!({"threadId": &ids[0][..24]}));
    assert_eq!(again["thread"]["id"], ids[0].as_str(), "a loaded thread resumes as it is");
    client.result(
        "turn/start",
        json!({"threadId": ids[0], "input": [{"type": "text", "text": "Which word?"}]}),
    );
    let messages = client.turn(|_| "decline");
    assert_eq!(messages.last().unwrap()["params"]["turn"]["status"], "completed");
    let body = server.requests().last().unwrap().raw_body.clone();
    assert!(body.contains("Remember the word PELICAN.") && body.contains("Which word?"), "{body}");

    // Fork it: a new thread with the same history; the original is untouched.
    let forked = client.result("thread/fork", json!({"threadId": ids[0]}));
    let fork_id = forked["thread"]["id"].as_str().unwrap().to_owned();
    assert_ne!(fork_id, ids[0]);
    client.result(
        "turn/start",
        json!({"threadId": fork_id, "input": [{"type": "text", "text": "In the fork."}]}),
    );
    let messages = client.turn(|_| "decline");
    assert!(
        with_method(&messages, "thread/started")
            .iter()
            .any(|m| m["params"]["thread"]["id"] == fork_id.as_str()),
        "{messages:#?}"
    );
    // Tools that are neither commands nor edits are dynamic tool calls; reasoning streams too.
    let completed: Vec<&Value> = with_method(&messages, "item/completed")
        .into_iter()
        .map(|m| &m["params"]["item"])
        .collect();
    let read = completed.iter().find(|i| i["type"] == "dynamicToolCall").unwrap();
    assert_eq!(read["tool"], "read_file");
    assert_eq!(read["status"], "completed", "{read}");
    assert!(read["contentItems"][0]["text"].as_str().unwrap().contains("hello"), "{read}");
    let reasoning = completed.iter().find(|i| i["type"] == "reasoning").unwrap();
    assert_eq!(reasoning["content"], json!(["The notes say hello."]));
    assert!(!with_method(&messages, "item/reasoning/textDelta").is_empty());
    let body = server.requests().last().unwrap().raw_body.clone();
    assert!(body.contains("PELICAN") && body.contains("In the fork."), "{body}");
    let all = client.result("thread/list", json!({}));
    assert_eq!(all["data"].as_array().unwrap().len(), 3, "{all}");

    // Compact the fork by hand: a turn of its own, whose summary replaces the history.
    let result = client.result("thread/compact/start", json!({"threadId": fork_id}));
    assert_eq!(result, json!({}));
    let messages = client.turn(|_| "decline");
    let names = methods(&messages);
    assert!(names.contains(&"thread/compacted"), "{names:?}");
    let compaction = with_method(&messages, "item/completed")
        .into_iter()
        .find(|m| m["params"]["item"]["type"] == "contextCompaction");
    assert!(compaction.is_some(), "{messages:#?}");
    assert_eq!(messages.last().unwrap()["params"]["turn"]["status"], "completed");
    client.result(
        "turn/start",
        json!({"threadId": fork_id, "input": [{"type": "text", "text": "After compaction."}]}),
    );
    client.turn(|_| "decline");
    let body = server.requests().last().unwrap().raw_body.clone();
    assert!(body.contains("SUMMARY-OF-FORK") && body.contains("After compaction."), "{body}");
    client.check_against_codex();
    assert!(client.finish().success());
}

#[test]
fn closing_stdin_mid_turn_stops_the_agent_and_its_command() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let marker = format!("{}.{}", 70 + std::process::id() % 9, std::process::id() % 1000);
    let script = Script::new().reply(Reply::tool_call(
        "c1",
        "run_command",
        json!({"command": format!("sleep {marker}")}),
    ));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let mut client = Client::start(&run);
    client.initialize();
    let started = client.result(
        "thread/start",
        json!({"approvalPolicy": "never", "sandbox": "danger-full-access"}),
    );
    let thread_id = started["thread"]["id"].as_str().unwrap().to_owned();
    client.result(
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "sleep"}]}),
    );
    let waited = std::time::Instant::now();
    while processes_running(&format!("sleep {marker}")) == 0 {
        assert!(waited.elapsed() < PATIENCE, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = client.finish();
    assert!(status.success(), "{status:?}");
    assert_eq!(processes_running(&format!("sleep {marker}")), 0, "the command survived");
    // The log was closed cleanly: the turn ended in it.
    let out = crate::codecoder(home.path(), &["sessions", "validate", &thread_id]);
    assert!(out.status.success(), "{}", stdout(&out));
}

#[test]
fn handshake_rules_and_error_answers() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    // The model refuses the one request: the turn fails.
    let refusal = codecoder_test_support::Fault::status(400).message("no such model here");
    let server = FakeModelServer::start(Script::new().reply(refusal)).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let mut client = Client::start(&run);

    let error = client.error("thread/list", json!({}));
    assert_eq!(error["code"], -32600);
    assert_eq!(error["message"], "Not initialized");
    client.initialize();
    let error = client.error("initialize", json!({"clientInfo": {"name": "x", "version": "1"}}));
    assert_eq!(error["message"], "Already initialized");

    let error = client.error("thread/teleport", json!({}));
    assert_eq!(error["code"], -32601, "{error}");
    let error = client.error("turn/start", json!({"input": []}));
    assert_eq!(error["code"], -32602, "{error}");
    assert!(error["message"].as_str().unwrap().contains("`threadId`"), "{error}");
    let error = client.error("thread/start", json!({"approvalPolicy": "sometimes"}));
    assert_eq!(error["code"], -32602, "{error}");
    assert!(error["message"].as_str().unwrap().contains("`approvalPolicy`"), "{error}");
    let error = client.error(
        "turn/start",
        json!({"threadId": "0000", "input": [{"type": "text", "text": "hi"}]}),
    );
    assert_eq!(error["code"], -32602, "{error}");
    let error = client.error("thread/resume", json!({"threadId": "no-such-thread"}));
    assert_eq!(error["code"], -32602, "{error}");

    let started = client.result("thread/start", json!({"cwd": cwd.path()}));
    let thread_id = started["thread"]["id"].as_str().unwrap().to_owned();
    let error = client.error("turn/interrupt", json!({"threadId": thread_id, "turnId": "t"}));
    assert_eq!(error["code"], -32602, "{error}");
    let error = client.error(
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "localImage", "path": "missing.png"}]}),
    );
    assert_eq!(error["code"], -32602, "{error}");
    assert!(error["message"].as_str().unwrap().contains("missing.png"), "{error}");

    // A turn the model cannot serve fails with an `error` notification and says why.
    client.result(
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "hello"}]}),
    );
    let messages = client.turn(|_| "decline");
    let completed = messages.last().unwrap();
    assert_eq!(completed["params"]["turn"]["status"], "failed", "{completed}");
    let errors = with_method(&messages, "error");
    let failure = errors.last().expect("an error notification");
    assert_eq!(failure["params"]["willRetry"], false, "{failure}");
    assert_eq!(
        failure["params"]["error"]["message"], completed["params"]["turn"]["error"]["message"],
        "{failure}"
    );
    assert!(completed["params"]["turn"]["error"]["message"].as_str().unwrap().contains("400"));

    // Lines that are not messages: answered with a null id, and the server goes on.
    client.send_raw("{not json");
    let answer = client.answer_to(&Value::Null);
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    client.stdin.as_mut().unwrap().write_all(b"\xff\xfe{\n").unwrap();
    let answer = client.answer_to(&Value::Null);
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    client.send_raw("[1, 2]");
    let answer = client.answer_to(&Value::Null);
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    client.send_raw(r#"{"jsonrpc":"2.0","id":99,"method":"thread/list","params":{}}"#);
    let answer = client.answer_to(&json!(99));
    assert!(answer["result"]["data"].is_array(), "{answer}");
    client.check_against_codex();
    assert!(client.finish().success());

    let out = run.run(&["app-server", "--listen", "tcp://127.0.0.1:4500"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(crate::stderr(&out).contains("expected stdio://"), "{}", crate::stderr(&out));
    let out = run.run(&["app-server", "--help"], "");
    assert!(out.status.success());
    assert!(stdout(&out).contains("thread/start"), "{}", stdout(&out));
}

impl Client {
    /// Reads until a message with `method`; returns the messages read before it and it.
    fn until(&mut self, method: &str) -> (Vec<Value>, Value) {
        let mut seen = Vec::new();
        loop {
            let message = self.recv();
            if message["method"] == method {
                return (seen, message);
            }
            seen.push(message);
        }
    }

    /// Starts a thread and a turn with `text`; returns the thread's and the turn's ids.
    fn start_turn(&mut self, cwd: &std::path::Path, text: &str) -> (String, String) {
        let started = self.result(
            "thread/start",
            json!({"cwd": cwd, "approvalPolicy": "never", "sandbox": "danger-full-access"}),
        );
        let thread_id = started["thread"]["id"].as_str().unwrap().to_owned();
        let turn_id = self.next_turn(&thread_id, text);
        (thread_id, turn_id)
    }

    fn next_turn(&mut self, thread_id: &str, text: &str) -> String {
        let turn = self.result(
            "turn/start",
            json!({"threadId": thread_id, "input": [{"type": "text", "text": text}]}),
        );
        turn["turn"]["id"].as_str().unwrap().to_owned()
    }
}

#[test]
fn refused_and_unknown_calls_are_items_too() {
    // A call refused before it runs has no `ToolStarted`; the client still sees its item.
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let script = Script::new()
        .reply(
            Reply::tool_call("c1", "run_command", json!({"command": "rm -rf /etc/codecoder-x"}))
                .and_tool_call("c2", "no_such_tool", json!({})),
        )
        .reply(Reply::text("done"));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let mut client = Client::start(&run);
    client.initialize();
    let started = client.result(
        "thread/start",
        json!({"cwd": cwd.path(), "approvalPolicy": "never", "sandbox": "workspace-write"}),
    );
    let thread_id = started["thread"]["id"].as_str().unwrap().to_owned();
    client.next_turn(&thread_id, "clean up");
    let messages = client.turn(|_| "decline");
    let completed: Vec<&Value> = with_method(&messages, "item/completed")
        .into_iter()
        .map(|m| &m["params"]["item"])
        .filter(|item| item["type"] != "agentMessage" && item["type"] != "userMessage")
        .collect();
    let command = completed.iter().find(|item| item["type"] == "commandExecution");
    let command = command.unwrap_or_else(|| panic!("{messages:#?}"));
    assert_eq!(command["status"], "declined", "{command}");
    assert_eq!(command["command"], "rm -rf /etc/codecoder-x");
    let unknown = completed.iter().find(|item| item["type"] == "dynamicToolCall");
    let unknown = unknown.unwrap_or_else(|| panic!("{messages:#?}"));
    assert_eq!(unknown["status"], "failed", "{unknown}");
    assert!(unknown.to_string().contains("unknown tool"), "{unknown}");
    // Each was started before it completed.
    let started_ids: Vec<&Value> =
        with_method(&messages, "item/started").iter().map(|m| &m["params"]["item"]["id"]).collect();
    assert!(started_ids.contains(&&command["id"]) && started_ids.contains(&&unknown["id"]));
    client.check_against_codex();
    assert!(client.finish().success());
}

#[test]
fn a_patch_is_shown_while_the_model_writes_it() {
    // The model writes a patch of a file move and an added file slowly: its `fileChange` item
    // starts with the files written so far and is updated until the call runs.
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("old.txt"), "one\n").unwrap();
    let patch = "*** Begin Patch\n*** Update File: old.txt\n*** Move to: new.txt\n@@\n-one\n+uno\n\
                 *** Add File: added.txt\n+first\n+second\n*** End Patch\n";
    let script = Script::new()
        .reply(
            Reply::tool_call("p1", "apply_patch", json!({"input": patch}))
                .arg_fragments(8)
                .pace_ms(150),
        )
        .reply(Reply::text("Patched."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let mut client = Client::start(&run);
    client.initialize();
    let (thread_id, _) = client.start_turn(cwd.path(), "patch it");
    let messages = client.turn(|_| "accept");
    assert_eq!(messages.last().unwrap()["params"]["turn"]["status"], "completed");
    let of_file_change = |method: &str| -> Vec<Value> {
        with_method(&messages, method)
            .into_iter()
            .map(|m| m["params"].clone())
            .filter(|p| p["item"]["type"] == "fileChange" || p.get("changes").is_some())
            .collect()
    };
    let started = of_file_change("item/started");
    assert_eq!(started.len(), 1, "{messages:#?}");
    let completed = of_file_change("item/completed");
    let item = &completed[0]["item"];
    assert_eq!(item["status"], "completed", "{item}");
    assert_eq!(
        item["changes"],
        json!([
            {"path": "old.txt", "kind": {"type": "update", "move_path": "new.txt"},
             "diff": "@@\n-one\n+uno\n"},
            {"path": "added.txt", "kind": {"type": "add"}, "diff": "+first\n+second\n"}
        ])
    );
    // Shown before it was whole: the item started with less, and updates brought the rest.
    assert_ne!(started[0]["item"]["changes"], item["changes"], "{messages:#?}");
    let updates = of_file_change("item/fileChange/patchUpdated");
    assert!(!updates.is_empty(), "{messages:#?}");
    assert!(updates.iter().all(|u| u["itemId"] == item["id"]), "{updates:#?}");
    assert_eq!(updates.last().unwrap()["changes"], item["changes"]);
    assert_eq!(std::fs::read_to_string(cwd.path().join("new.txt")).unwrap(), "uno\n");
    // Resumed while still loaded in this server, the thread shows the turn it just ran.
    let loaded = client.result("thread/resume", json!({"threadId": thread_id}));
    let items = loaded["thread"]["turns"][0]["items"].as_array().unwrap().clone();
    let change = items.iter().find(|i| i["type"] == "fileChange").expect("a fileChange item");
    assert_eq!(change["changes"], item["changes"], "{loaded}");
    client.check_against_codex();
    assert!(client.finish().success());

    // Resumed by another server, the thread shows the call as the live run did.
    let mut client = Client::start(&run);
    client.initialize();
    let resumed = client.result("thread/resume", json!({"threadId": thread_id}));
    let items = resumed["thread"]["turns"][0]["items"].as_array().unwrap().clone();
    let change = items.iter().find(|i| i["type"] == "fileChange").expect("a fileChange item");
    assert_eq!(change["changes"], item["changes"], "{resumed}");
    assert_eq!(change["status"], "completed");
    assert!(client.finish().success());
}

#[test]
fn the_context_window_a_local_server_reports_reaches_the_token_usage() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let script = Script::new()
        .discovery("/props", json!({"default_generation_settings": {"n_ctx": 12_288}}))
        .reply(Reply::text("Hi."));
    let server = FakeModelServer::start(script).unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "model = \"served-model\"\nmodel_provider = \"local\"\n[model_providers.local]\nbase_url = \"{}/v1\"\nwire_api = \"chat\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: Vec::new() };
    let mut client = Client::start(&run);
    client.initialize();
    let started = client.result("thread/start", json!({"cwd": cwd.path()}));
    let thread_id = started["thread"]["id"].as_str().unwrap().to_owned();
    client.result(
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "hello"}]}),
    );
    let messages = client.turn(|_| "accept");
    let usage = with_method(&messages, "thread/tokenUsage/updated");
    assert!(!usage.is_empty(), "{:?}", methods(&messages));
    assert_eq!(usage[0]["params"]["tokenUsage"]["modelContextWindow"], 12_288);
}

/// What codex's TUI reads while it starts (`codex --remote`) is answered, in the shapes of
/// codex's own schema: no login is needed (an API key's account), the models are the catalog's
/// for the server's provider with the configured one first, the configuration is the server's.
#[test]
fn what_codex_tui_reads_at_start_is_answered_in_codex_shapes() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let server = FakeModelServer::start(Script::new()).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let mut client = Client::start(&run);
    client.initialize();

    let account = client.result("account/read", json!({}));
    assert_eq!(account, json!({"account": {"type": "apiKey"}, "requiresOpenaiAuth": false}));
    let models =
        client.result("model/list", json!({"cursor": null, "limit": null, "includeHidden": true}));
    let data = models["data"].as_array().unwrap();
    assert_eq!(data[0]["id"], "gpt-5", "{models}");
    assert_eq!(data[0]["isDefault"], true, "{models}");
    assert!(data.iter().skip(1).all(|m| m["isDefault"] == false), "{models}");
    assert!(data.iter().any(|m| m["id"] == "gpt-5-mini"), "{models}");
    assert!(data.iter().all(|m| !m["id"].as_str().unwrap().starts_with("claude")), "{models}");
    let efforts: Vec<&str> = data[0]["supportedReasoningEfforts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["reasoningEffort"].as_str().unwrap())
        .collect();
    assert!(efforts.contains(&"high"), "{efforts:?}");
    assert!(data[0]["description"].as_str().unwrap().contains("400000"), "{models}");

    let config = client.result("config/read", json!({"includeLayers": true, "cwd": "."}));
    assert_eq!(config["config"]["model"], "gpt-5", "{config}");
    assert_eq!(config["config"]["model_provider"], "openai", "{config}");
    assert_eq!(config["config"]["sandbox_mode"], "danger-full-access", "{config}");
    assert_eq!(config["layers"], json!([]), "{config}");
    let requirements = client.result("configRequirements/read", Value::Null);
    assert_eq!(requirements, json!({"requirements": null}));
    assert_eq!(client.result("hooks/list", json!({"cwds": [cwd.path()]})), json!({"data": []}));
    let skills = client.result("skills/list", json!({"cwds": [cwd.path()], "forceReload": true}));
    assert_eq!(skills["data"][0]["skills"], json!([]), "{skills}");
    assert_eq!(skills["data"][0]["cwd"], json!(cwd.path()), "{skills}");
    // An experimental method: codex's generated schema has no type for it, so it is sent raw.
    let id = client.next_id;
    client.next_id += 1;
    client.send(&json!({"id": id, "method": "collaborationMode/list", "params": {}}));
    assert_eq!(client.answer_to(&json!(id))["result"], json!({"data": []}));

    assert_eq!(client.result("thread/loaded/list", json!({}))["data"], json!([]));
    let started = client.result("thread/start", json!({"cwd": cwd.path()}));
    let thread_id = started["thread"]["id"].as_str().unwrap().to_owned();
    assert_eq!(client.result("thread/loaded/list", json!({}))["data"], json!([thread_id]));
    let read = client.result("thread/read", json!({"threadId": thread_id, "includeTurns": true}));
    assert_eq!(read["thread"]["id"], thread_id.as_str(), "{read}");
    assert_eq!(read["thread"]["status"], json!({"type": "idle"}), "{read}");
    let turns = client.result("thread/turns/list", json!({"threadId": thread_id, "limit": 1}));
    assert_eq!(turns, json!({"data": [], "nextCursor": null}));
    let plugins = client.result("plugin/list", json!({"cwds": [cwd.path()]}));
    assert_eq!(plugins["marketplaces"], json!([]), "{plugins}");
    let features = client.result("experimentalFeature/list", json!({"limit": 100}));
    assert_eq!(features["data"], json!([]), "{features}");
    let dropped = client.result("thread/unsubscribe", json!({"threadId": thread_id}));
    assert_eq!(dropped, json!({"status": "unsubscribed"}));
    let again = client.result("thread/unsubscribe", json!({"threadId": thread_id}));
    assert_eq!(again, json!({"status": "notLoaded"}));
    assert_eq!(client.result("thread/loaded/list", json!({}))["data"], json!([]));
    // A thread no longer loaded is read from the index.
    let stored = client.result("thread/read", json!({"threadId": thread_id}));
    assert_eq!(stored["thread"]["status"], json!({"type": "notLoaded"}), "{stored}");
    client.check_against_codex();
}

/// Input typed while a turn runs (`turn/steer`, as codex's TUI sends it) reaches the model in
/// that turn and shows as a `userMessage` item; a steer naming another turn is refused.
#[test]
fn input_steers_the_running_turn() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let script = Script::new()
        .reply(Reply::text("Working on it.").delay_ms(1500))
        .reply(Reply::text("Noted the addition."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let mut client = Client::start(&run);
    client.initialize();
    let started = client.result("thread/start", json!({"cwd": cwd.path()}));
    let thread_id = started["thread"]["id"].as_str().unwrap().to_owned();
    let turn = client.result(
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "start"}]}),
    );
    let turn_id = turn["turn"]["id"].as_str().unwrap().to_owned();
    let refused = client.error(
        "turn/steer",
        json!({"threadId": thread_id, "expectedTurnId": "another", "input": [
            {"type": "text", "text": "x"}]}),
    );
    assert_eq!(refused["code"], -32602, "{refused}");
    let steered = client.result(
        "turn/steer",
        json!({"threadId": thread_id, "expectedTurnId": turn_id, "input": [
            {"type": "text", "text": "also mention the weather"}]}),
    );
    assert_eq!(steered, json!({"turnId": turn_id}));
    let messages = client.turn(|_| "accept");
    assert_eq!(messages.last().unwrap()["params"]["turn"]["status"], "completed");
    let users: Vec<&Value> = with_method(&messages, "item/completed")
        .into_iter()
        .map(|m| &m["params"]["item"])
        .filter(|item| item["type"] == "userMessage")
        .collect();
    assert!(users.iter().any(|item| item["content"][0]["text"] == "also mention the weather"));
    let requests = server.requests();
    assert!(
        requests.last().unwrap().raw_body.contains("also mention the weather"),
        "the steer never reached the model"
    );
    client.check_against_codex();
}
