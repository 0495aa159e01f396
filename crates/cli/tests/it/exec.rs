//! `codecoder exec` end to end: the real binary against the fake model server.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use codecoder_test_support::{FakeModelServer, Reply, Script, Usage};

use crate::{stderr, stdout};

pub(crate) struct Run<'a> {
    pub(crate) home: &'a Path,
    pub(crate) cwd: &'a Path,
    pub(crate) env: Vec<(String, String)>,
}

impl Run<'_> {
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_codecoder"));
        command
            .args(args)
            .current_dir(self.cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("CODECODER_HOME", self.home);
        for (key, value) in &self.env {
            command.env(key, value);
        }
        command
    }

    pub(crate) fn run(&self, args: &[&str], stdin: &str) -> Output {
        use std::io::Write;
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    }
}

/// Makes `home` hermetic for code intelligence: `[lsp] enabled = false` added to its
/// config.toml, so that a session reading, searching or editing code files (`.py`, `.rs`, `.js`,
/// …) starts no language server the machine has on `PATH` (rust-analyzer, pyright, …), whose
/// notes would change the tool results a test compares. Language servers are opt-in in these
/// tests: `lsp.rs` configures the ones it drives.
pub(crate) fn without_language_servers(home: &Path) {
    use std::io::Write as _;
    let mut config = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(home.join("config.toml"))
        .unwrap();
    config.write_all(b"\n[lsp]\nenabled = false\n").unwrap();
}

pub(crate) fn openai_env(server: &FakeModelServer) -> Vec<(String, String)> {
    vec![
        ("OPENAI_BASE_URL".into(), format!("{}/v1", server.base_url())),
        ("OPENAI_API_KEY".into(), "sk-test".into()),
        ("ANTHROPIC_BASE_URL".into(), server.base_url()),
        ("ANTHROPIC_API_KEY".into(), "sk-ant-test".into()),
    ]
}

/// Checks one `exec --json` line against the documented schema (`crates/cli/schema/exec-events.json`).
pub(crate) fn check_json_line(line: &serde_json::Value) {
    static SCHEMA: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    let schema = SCHEMA.get_or_init(|| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/exec-events.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    });
    let kind = line["type"].as_str().expect("every line has a type");
    let event_schema =
        schema["events"].get(kind).unwrap_or_else(|| panic!("undocumented event `{kind}`"));
    codecoder_kernel::validate_schema(event_schema, line)
        .unwrap_or_else(|err| panic!("{line}: {err}"));
    if let Some(item) = line.get("item") {
        let item_kind = item["type"].as_str().expect("every item has a type");
        let item_schema = schema["items"]
            .get(item_kind)
            .unwrap_or_else(|| panic!("undocumented item `{item_kind}`"));
        codecoder_kernel::validate_schema(item_schema, item)
            .unwrap_or_else(|err| panic!("{item}: {err}"));
    }
}

fn validate_all(home: &Path) {
    for entry in std::fs::read_dir(home.join("sessions")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        let out = Command::new(env!("CARGO_BIN_EXE_codecoder"))
            .args(["sessions", "validate", path.to_str().unwrap()])
            .env("CODECODER_HOME", home)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}: {}", path.display(), stdout(&out));
    }
}

#[test]
fn a_text_answer_in_every_wire_api() {
    for provider in ["openai", "openai-chat", "anthropic"] {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let server =
            FakeModelServer::start(Script::new().reply(Reply::text("The answer is 42.").chunks(4)))
                .unwrap();
        let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
        let out = run.run(&["exec", "--provider", provider, "-m", "test-model", "what is it?"], "");
        assert!(out.status.success(), "{provider}: {}", stderr(&out));
        assert_eq!(stdout(&out), "The answer is 42.\n", "{provider}");
        let request = &server.requests()[0];
        assert_eq!(request.body["model"], "test-model", "{provider}");
        assert!(request.raw_body.contains("what is it?"), "{provider}");
        validate_all(home.path());
    }
}

#[test]
fn json_output_uses_codex_event_names() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let script = Script::new()
        .reply(Reply::text("Done.").reasoning("thinking").usage(Usage::tokens(50, 5).cached(20)));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "--json", "hello"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> =
        stdout(&out).lines().map(|l| serde_json::from_str(l).expect("each line is JSON")).collect();
    lines.iter().for_each(check_json_line);
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["thread.started", "turn.started", "item.completed", "item.completed", "turn.completed"],
        "{lines:?}"
    );
    assert!(lines[0]["thread_id"].as_str().unwrap().len() >= 32);
    assert_eq!(lines[2]["item"]["type"], "reasoning");
    assert_eq!(
        lines[3]["item"],
        serde_json::json!({"id": "item_1", "type": "agent_message", "text": "Done."})
    );
    assert_eq!(
        lines[4]["usage"],
        serde_json::json!({"input_tokens": 50, "cached_input_tokens": 20, "output_tokens": 5, "reasoning_output_tokens": 0})
    );
}

#[test]
fn resume_last_sends_the_whole_history() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let script =
        Script::new().reply(Reply::text("First answer.")).reply(Reply::text("Second answer."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "--provider", "openai-chat", "first question"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let out =
        run.run(&["exec", "--provider", "openai-chat", "resume", "--last", "second question"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Second answer.\n");
    let body = &server.requests()[1].body;
    let messages: Vec<(String, String)> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        messages[1..],
        [
            ("user".to_owned(), "first question".to_owned()),
            ("assistant".to_owned(), "First answer.".to_owned()),
            ("user".to_owned(), "second question".to_owned()),
        ]
    );
    // One session, two turns.
    let sessions = std::fs::read_dir(home.path().join("sessions")).unwrap().filter(|e| {
        e.as_ref().unwrap().path().extension().and_then(|x| x.to_str()) == Some("jsonl")
    });
    assert_eq!(sessions.count(), 1);
    validate_all(home.path());
}

#[test]
fn a_missing_key_or_a_bad_config_exits_2() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: Vec::new() };
    let out = run.run(&["exec", "hello"], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("OPENAI_API_KEY"), "{}", stderr(&out));
    let out = run.run(&["exec", "--provider", "anthropic", "hello"], "");
    assert!(stderr(&out).contains("ANTHROPIC_API_KEY"), "{}", stderr(&out));
    std::fs::write(home.path().join("config.toml"), "model = 5\n").unwrap();
    let out = run.run(&["exec", "hello"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("config.toml:1:"), "{}", stderr(&out));
    std::fs::remove_file(home.path().join("config.toml")).unwrap();
    let out = run.run(&["exec", "--provider", "nope", "hello"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown provider `nope`"), "{}", stderr(&out));
    let out = Run {
        home: home.path(),
        cwd: cwd.path(),
        env: vec![("OPENAI_API_KEY".into(), "k".into())],
    }
    .run(&["exec"], "");
    assert_eq!(out.status.code(), Some(2), "an empty stdin is no prompt: {}", stderr(&out));
}

#[test]
fn stdin_is_appended_and_the_last_message_written_to_a_file() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let server = FakeModelServer::start(Script::new().reply(Reply::text("Summary."))).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let out_file = cwd.path().join("last.txt");
    let out = run.run(
        &["exec", "--ephemeral", "-o", out_file.to_str().unwrap(), "summarize this"],
        "line one\nline two\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), "Summary.");
    assert!(
        server.requests()[0]
            .raw_body
            .contains("summarize this\\n\\n<stdin>\\nline one\\nline two\\n</stdin>")
    );
    assert!(
        !home.path().join("sessions").exists()
            || std::fs::read_dir(home.path().join("sessions")).unwrap().count() == 0,
        "--ephemeral keeps no log"
    );
}

#[test]
fn ctrl_c_cancels_cleanly_and_exits_130() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let server = FakeModelServer::start(Script::new().reply(Reply::endless_text())).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let child = run
        .command(&["exec", "go on forever"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    server.wait_for_requests(1, Duration::from_secs(20)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    server.wait_for_disconnects(1, Duration::from_secs(5)).unwrap();
    validate_all(home.path());
}

#[test]
fn replay_answers_from_a_recorded_session_offline() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let server =
        FakeModelServer::start(Script::new().reply(Reply::text("Recorded answer."))).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "question"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let log = std::fs::read_dir(home.path().join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().and_then(|e| e.to_str()) == Some("jsonl"))
        .unwrap();
    drop(server);
    // No provider reachable, no key: the replay needs neither.
    let offline = Run { home: home.path(), cwd: cwd.path(), env: Vec::new() };
    let out = offline.run(&["exec", "--replay", log.to_str().unwrap(), "question"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Recorded answer.\n");
}

/// Copies the example repository into `dir` and makes it a git repository.
fn example_repo(dir: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bugfix/repo");
    for name in ["calc.py", "test_calc.py"] {
        std::fs::copy(source.join(name), dir.join(name)).unwrap();
    }
    std::fs::create_dir(dir.join(".git")).unwrap();
    std::fs::write(dir.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
}

const FIX: &str = "*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n*** End Patch\n";

fn bugfix_script() -> Script {
    Script::new()
        .reply(Reply::text("Let me look at the code.").and_tool_call(
            "call_1",
            "grep",
            serde_json::json!({"pattern": "def add"}),
        ))
        .reply(Reply::tool_call("call_2", "read_file", serde_json::json!({"path": "calc.py"})))
        .reply(Reply::tool_call("call_3", "apply_patch", serde_json::json!({"input": FIX})))
        .reply(Reply::tool_call(
            "call_4",
            "run_command",
            serde_json::json!({"command": "python3 test_calc.py"}),
        ))
        .reply(Reply::text("Fixed `add` in calc.py: it subtracted. The tests pass now."))
}

#[test]
fn a_multi_step_bug_fix_in_every_wire_api() {
    for provider in ["openai", "openai-chat", "anthropic"] {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        example_repo(repo.path());
        without_language_servers(home.path());
        let server = FakeModelServer::start(bugfix_script()).unwrap();
        let run = Run { home: home.path(), cwd: repo.path(), env: openai_env(&server) };
        let out = run
            .run(&["exec", "--provider", provider, "Fix the bug that makes the tests fail."], "");
        assert!(out.status.success(), "{provider}: {}", stderr(&out));
        assert_eq!(stdout(&out), "Fixed `add` in calc.py: it subtracted. The tests pass now.\n");
        let fixed = std::fs::read_to_string(repo.path().join("calc.py")).unwrap();
        assert!(fixed.contains("return a + b"), "{provider}: {fixed}");
        let requests = server.requests();
        assert_eq!(requests.len(), 5, "{provider}");
        // Each tool's result reached the model in the next request.
        assert!(requests[1].raw_body.contains("calc.py"), "{provider}: grep result");
        assert!(requests[2].raw_body.contains("return a - b"), "{provider}: read_file result");
        assert!(
            requests[3].raw_body.contains("Success. Updated the following files"),
            "{provider}"
        );
        assert!(
            requests[4].raw_body.contains("OK"),
            "{provider}: the tests ran: {}",
            requests[4].raw_body
        );
        // The prompt carries the environment and the tools.
        assert!(
            requests[0].raw_body.contains("apply_patch")
                && requests[0].raw_body.contains("run_command")
        );
        // Consecutive requests extend each other: same instructions and tools, and each
        // history is a prefix of the next (so provider prompt caches hit).
        for pair in requests.windows(2) {
            let (a, b) = (&pair[0].body, &pair[1].body);
            let history_key = match provider {
                "openai" => "input",
                _ => "messages",
            };
            for key in ["instructions", "system", "tools"] {
                assert_eq!(a.get(key), b.get(key), "{provider}: `{key}` changed between steps");
            }
            let (ha, hb) = (a[history_key].as_array().unwrap(), b[history_key].as_array().unwrap());
            assert!(ha.len() < hb.len(), "{provider}");
            for (i, (x, y)) in ha.iter().zip(hb).enumerate() {
                let (mut x, mut y) = (x.clone(), y.clone());
                // Anthropic moves its cache breakpoint to the newest block; that marker aside,
                // the earlier messages are sent unchanged.
                for v in [&mut x, &mut y] {
                    if let Some(blocks) = v.get_mut("content").and_then(|c| c.as_array_mut()) {
                        for block in blocks {
                            if let Some(o) = block.as_object_mut() {
                                o.remove("cache_control");
                            }
                        }
                    }
                }
                assert_eq!(x, y, "{provider}: history item {i} changed between steps");
            }
        }
        // No credential reaches the session log.
        let log_text: String = std::fs::read_dir(home.path().join("sessions"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("jsonl"))
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        assert!(!log_text.contains("sk-test") && !log_text.contains("sk-ant-test"), "{provider}");
        validate_all(home.path());
        if provider == "openai-chat" && std::env::var_os("UPDATE_EXPECT").is_some() {
            let log = std::fs::read_dir(home.path().join("sessions"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.extension().and_then(|e| e.to_str()) == Some("jsonl"))
                .unwrap();
            let target =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bugfix/session.jsonl");
            std::fs::copy(log, target).unwrap();
        }
    }
}

#[test]
fn json_output_of_a_tool_run() {
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    example_repo(repo.path());
    without_language_servers(home.path());
    let server = FakeModelServer::start(bugfix_script()).unwrap();
    let run = Run { home: home.path(), cwd: repo.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "--json", "Fix the bug."], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> =
        stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    lines.iter().for_each(check_json_line);
    let items: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["type"] == "item.completed").map(|l| &l["item"]).collect();
    let kinds: Vec<&str> = items.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "agent_message",
            "tool_call",
            "tool_call",
            "file_change",
            "command_execution",
            "agent_message"
        ]
    );
    assert_eq!(items[3]["changes"], serde_json::json!([{"path": "calc.py", "kind": "update"}]));
    assert_eq!(items[3]["status"], "completed");
    assert_eq!(items[4]["command"], "python3 test_calc.py");
    assert_eq!(items[4]["status"], "completed");
    assert_eq!(items[4]["exit_code"], 0);
    assert!(items[4]["aggregated_output"].as_str().unwrap().contains("OK"), "{:?}", items[4]);
    let started: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["type"] == "item.started").collect();
    assert_eq!(
        started.len(),
        3,
        "grep, read_file and run_command start; file changes only complete"
    );
    assert_eq!(lines.last().unwrap()["type"], "turn.completed");
}

/// The lines of an `exec --json` run, each checked against the documented schema.
pub(crate) fn json_lines(out: &Output) -> Vec<serde_json::Value> {
    let lines: Vec<serde_json::Value> =
        stdout(out).lines().map(|l| serde_json::from_str(l).expect("each line is JSON")).collect();
    lines.iter().for_each(check_json_line);
    lines
}

/// The item events of `lines` as (event type, item id, item type, status).
pub(crate) fn item_events(lines: &[serde_json::Value]) -> Vec<(String, String, String, String)> {
    let text = |value: &serde_json::Value| value.as_str().unwrap_or_default().to_owned();
    lines
        .iter()
        .filter(|l| l["type"].as_str().is_some_and(|t| t.starts_with("item.")))
        .map(|l| {
            let item = &l["item"];
            (text(&l["type"]), text(&item["id"]), text(&item["type"]), text(&item["status"]))
        })
        .collect()
}

/// Calls that never run are items too, as codex shows them: a command the policy refuses is a
/// `declined` command_execution without output or exit code; an unknown tool and a command with
/// bad arguments are `failed`, with the error where the item has room for it. Each is started
/// and completed under one id, in call order.
#[test]
fn json_shows_refused_and_failed_calls_as_items() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(
                Reply::tool_call(
                    "call_1",
                    "run_command",
                    serde_json::json!({"command": "touch /etc/codecoder-refused"}),
                )
                .and_tool_call("call_2", "mcp__nope__tool", serde_json::json!({"x": 1}))
                .and_tool_call(
                    "call_3",
                    "run_command",
                    serde_json::json!({"cmd": "ls"}),
                ),
            )
            .reply(Reply::text("done")),
    )
    .unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let out =
        run.run(&["exec", "--json", "-s", "workspace-write", "-a", "never", "try things"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!Path::new("/etc/codecoder-refused").exists());
    let lines = json_lines(&out);
    let events = item_events(&lines);
    let expected = [
        ("item.started", "item_0", "command_execution", "in_progress"),
        ("item.completed", "item_0", "command_execution", "declined"),
        ("item.started", "item_1", "tool_call", "in_progress"),
        ("item.completed", "item_1", "tool_call", "failed"),
        ("item.started", "item_2", "command_execution", "in_progress"),
        ("item.completed", "item_2", "command_execution", "failed"),
        ("item.completed", "item_3", "agent_message", ""),
    ]
    .map(|(a, b, c, d)| (a.to_owned(), b.to_owned(), c.to_owned(), d.to_owned()));
    assert_eq!(events, expected, "{lines:#?}");
    let completed: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["type"] == "item.completed").map(|l| &l["item"]).collect();
    assert_eq!(
        *completed[0],
        serde_json::json!({
            "id": "item_0",
            "type": "command_execution",
            "command": "touch /etc/codecoder-refused",
            "aggregated_output": "",
            "exit_code": null,
            "status": "declined"
        })
    );
    assert_eq!(completed[1]["name"], "mcp__nope__tool");
    assert_eq!(completed[1]["arguments"], serde_json::json!({"x": 1}));
    assert!(
        completed[1]["result"].as_str().unwrap().starts_with("unknown tool `mcp__nope__tool`"),
        "{}",
        completed[1]
    );
    assert_eq!(completed[2]["exit_code"], serde_json::Value::Null);
    assert!(
        completed[2]["aggregated_output"].as_str().unwrap().starts_with("invalid arguments"),
        "{}",
        completed[2]
    );
    assert_eq!(completed[3]["text"], "done");
    assert_eq!(lines.last().unwrap()["type"], "turn.completed");
    // The model heard why each call did not run.
    let second = &server.requests()[1].raw_body;
    assert!(second.contains("unknown tool `mcp__nope__tool`"), "{second}");
    assert!(second.contains("invalid arguments"), "{second}");
}

#[test]
fn the_shipped_example_replays_offline() {
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    example_repo(repo.path());
    without_language_servers(home.path());
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bugfix/session.jsonl");
    // A home of its own: a login profile that prints would change the command's output the
    // replay compares.
    let user_home = tempfile::tempdir().unwrap();
    let env = vec![("HOME".to_owned(), user_home.path().display().to_string())];
    let offline = Run { home: home.path(), cwd: repo.path(), env };
    let out = offline.run(
        &["exec", "--replay", log.to_str().unwrap(), "Fix the bug that makes the tests fail."],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // The log records the model-visible context, so every request is compared with the
    // recorded one.
    assert!(!stderr(&out).contains("not compared"), "{}", stderr(&out));
    assert!(std::fs::read_to_string(repo.path().join("calc.py")).unwrap().contains("return a + b"));
    assert!(stdout(&out).contains("The tests pass now."), "{}", stdout(&out));
    validate_all(home.path());
}

#[test]
fn a_stream_broken_mid_answer_reruns_the_step_from_the_log() {
    for provider in ["openai", "openai-chat", "anthropic"] {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let script = Script::new()
            .reply(Reply::text("a partial answer that will break").chunks(10).drop_after(8))
            .reply(Reply::text("The complete answer."));
        let server = FakeModelServer::start(script).unwrap();
        let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
        let out = run.run(&["exec", "--provider", provider, "question"], "");
        assert!(out.status.success(), "{provider}: {}", stderr(&out));
        assert_eq!(stdout(&out), "The complete answer.\n", "{provider}");
        assert!(stderr(&out).contains("running step 1 again"), "{provider}: {}", stderr(&out));
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{provider}");
        assert_eq!(requests[0].body, requests[1].body, "{provider}: the same request again");
        validate_all(home.path());
        // The broken partial answer was never logged.
        let log = std::fs::read_dir(home.path().join("sessions"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().and_then(|e| e.to_str()) == Some("jsonl"))
            .unwrap();
        let text = std::fs::read_to_string(log).unwrap();
        assert!(!text.contains("partial"), "{provider}: {text}");
        assert_eq!(text.matches("\"type\":\"assistant_message\"").count(), 1, "{provider}");
    }
}

#[test]
fn ctrl_c_during_a_running_command_leaves_no_process() {
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    // A duration no other process on the machine uses, to find ours in /proc.
    let marker = format!("{}.{}", 90 + std::process::id() % 9, std::process::id() % 1000);
    let script = Script::new()
        .reply(Reply::tool_call(
            "call_1",
            "run_command",
            serde_json::json!({"command": format!("sleep {marker}")}),
        ))
        .reply(Reply::text("unreachable"));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: repo.path(), env: openai_env(&server) };
    let child = run
        .command(&["exec", "--provider", "openai-chat", "sleep a while"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let sleeping = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| std::fs::read(e.unwrap().path().join("cmdline")).ok())
            .filter(|cmdline| {
                String::from_utf8_lossy(cmdline)
                    .replace('\0', " ")
                    .contains(&format!("sleep {marker}"))
            })
            .count()
    };
    let started = std::time::Instant::now();
    while sleeping() == 0 {
        assert!(started.elapsed() < Duration::from_secs(20), "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert_eq!(sleeping(), 0, "a process of the cancelled command survived");
    validate_all(home.path());
}

#[test]
fn exec_tells_the_model_that_no_one_answers_its_question() {
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let script = Script::new()
        .reply(Reply::tool_call(
            "call_1",
            "ask_user",
            serde_json::json!({"question": "Which port?", "options": ["8080", "9090"]}),
        ))
        .reply(Reply::text("Used 8080."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: repo.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "pick a port"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Used 8080.\n");
    assert!(stderr(&out).contains("question not asked (exec): Which port?"), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let body = &requests[1].raw_body;
    assert!(
        body.contains("could not be asked: codecoder exec runs without a person to answer"),
        "{body}"
    );
}
