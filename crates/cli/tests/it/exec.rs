//! `codecoder exec` end to end: the real binary against the fake model server.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use codecoder_test_support::{FakeModelServer, Reply, Script, Usage};

use crate::{stderr, stdout};

struct Run<'a> {
    home: &'a Path,
    cwd: &'a Path,
    env: Vec<(String, String)>,
}

impl Run<'_> {
    fn command(&self, args: &[&str]) -> Command {
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

    fn run(&self, args: &[&str], stdin: &str) -> Output {
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

fn openai_env(server: &FakeModelServer) -> Vec<(String, String)> {
    vec![
        ("OPENAI_BASE_URL".into(), format!("{}/v1", server.base_url())),
        ("OPENAI_API_KEY".into(), "sk-test".into()),
        ("ANTHROPIC_BASE_URL".into(), server.base_url()),
        ("ANTHROPIC_API_KEY".into(), "sk-ant-test".into()),
    ]
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
