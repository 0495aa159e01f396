//! Model-visible ⟺ logged, end to end: `sessions show --request N` prints the exact body the
//! provider received, in every wire API, and `--replay` stops at the first request that differs
//! from the recorded one.

use std::path::{Path, PathBuf};

use codecoder_test_support::{FakeModelServer, Reply, Script};

use crate::exec::{Run, openai_env};
use crate::{stderr, stdout};

/// The one session log under `home`.
fn only_log(home: &Path) -> PathBuf {
    let logs: Vec<PathBuf> = std::fs::read_dir(home.join("sessions"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().and_then(|e| e.to_str()) == Some("jsonl"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs.into_iter().next().unwrap()
}

/// A tool call, then an answer: two model requests.
fn two_step_script() -> Script {
    Script::new()
        .reply(Reply::text("Looking.").and_tool_call(
            "call_1",
            "read_file",
            serde_json::json!({"path": "notes.txt"}),
        ))
        .reply(Reply::text("The notes say hello."))
}

#[test]
fn show_request_prints_the_body_each_wire_api_sent() {
    for provider in ["openai", "openai-chat", "anthropic"] {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        std::fs::write(cwd.path().join("notes.txt"), "hello\n").unwrap();
        std::fs::write(cwd.path().join("AGENTS.md"), "Answer briefly.\n").unwrap();
        let server = FakeModelServer::start(two_step_script()).unwrap();
        let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
        let out = run.run(&["exec", "--provider", provider, "what do the notes say?"], "");
        assert!(out.status.success(), "{provider}: {}", stderr(&out));
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{provider}");
        let log = only_log(home.path());
        let log = log.to_str().unwrap();
        for (number, sent) in requests.iter().enumerate() {
            let number = (number + 1).to_string();
            let out = run.run(&["sessions", "show", log, "--request", &number], "");
            assert!(out.status.success(), "{provider} #{number}: {}", stderr(&out));
            assert_eq!(stdout(&out), sent.raw_body, "{provider}: request {number}");
        }
        // One context record serves both requests.
        let text = std::fs::read_to_string(log).unwrap();
        assert_eq!(text.matches("\"type\":\"context\"").count(), 1, "{provider}");
        for bad in ["0", "3"] {
            let out = run.run(&["sessions", "show", log, "--request", bad], "");
            assert_eq!(out.status.code(), Some(2), "{provider} --request {bad}");
            assert!(
                stderr(&out).contains("the session has 2 model request(s)"),
                "{provider}: {}",
                stderr(&out)
            );
        }
    }
}

#[test]
fn replay_passes_unchanged_and_stops_at_the_first_divergent_request() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("notes.txt"), "hello\n").unwrap();
    std::fs::write(cwd.path().join("AGENTS.md"), "Answer briefly.\n").unwrap();
    let server = FakeModelServer::start(two_step_script()).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "what do the notes say?"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let log = only_log(home.path());
    let recorded = tempfile::tempdir().unwrap();
    let log = {
        let copy = recorded.path().join("session.jsonl");
        std::fs::copy(&log, &copy).unwrap();
        copy
    };
    drop(server);
    let log = log.to_str().unwrap();
    let offline = Run { home: home.path(), cwd: cwd.path(), env: Vec::new() };

    let out = offline.run(&["exec", "--replay", log, "what do the notes say?"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "The notes say hello.\n");
    assert!(!stderr(&out).contains("not compared"), "{}", stderr(&out));

    // Elsewhere: the working directory's path (in the AGENTS.md heading, the environment) is
    // not a difference.
    let elsewhere = tempfile::tempdir().unwrap();
    for name in ["notes.txt", "AGENTS.md"] {
        std::fs::copy(cwd.path().join(name), elsewhere.path().join(name)).unwrap();
    }
    let moved = Run { home: home.path(), cwd: elsewhere.path(), env: Vec::new() };
    let out = moved.run(&["exec", "--replay", log, "what do the notes say?"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "The notes say hello.\n");

    // The tool sees other content: the second request's history differs.
    std::fs::write(cwd.path().join("notes.txt"), "goodbye\n").unwrap();
    let out = offline.run(&["exec", "--replay", log, "what do the notes say?"], "");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let message = stderr(&out);
    assert!(message.contains("diverged from the recorded session at model request 2"), "{message}");
    assert!(message.contains("`.history[2]"), "{message}");
    assert!(message.contains("goodbye"), "{message}");
    std::fs::write(cwd.path().join("notes.txt"), "hello\n").unwrap();

    // Other instructions: the first request already differs.
    std::fs::write(cwd.path().join("AGENTS.md"), "Answer at length.\n").unwrap();
    let out = offline.run(&["exec", "--replay", log, "what do the notes say?"], "");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let message = stderr(&out);
    assert!(message.contains("diverged from the recorded session at model request 1"), "{message}");
    assert!(message.contains("`.sections[2].text`"), "{message}");
    assert!(message.contains("Answer briefly."), "{message}");
}

#[test]
fn replaying_a_log_without_context_records_says_it_does_not_compare() {
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bugfix/repo");
    for name in ["calc.py", "test_calc.py"] {
        std::fs::copy(source.join(name), repo.path().join(name)).unwrap();
    }
    // The example session as an older codecoder recorded it.
    let log =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/bugfix_before_context.jsonl");
    let offline = Run { home: home.path(), cwd: repo.path(), env: Vec::new() };
    let out = offline.run(
        &["exec", "--replay", log.to_str().unwrap(), "Fix the bug that makes the tests fail."],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("requests are not compared"), "{}", stderr(&out));
    // The old log still shows, and has no request to rebuild.
    let out = offline.run(&["sessions", "show", log.to_str().unwrap()], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let out = offline.run(&["sessions", "show", log.to_str().unwrap(), "--request", "1"], "");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no context record"), "{}", stderr(&out));
}

#[test]
fn a_fork_rebuilds_the_requests_it_copied_as_the_parent_sent_them() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("notes.txt"), "hello\n").unwrap();
    let server = FakeModelServer::start(two_step_script()).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "what do the notes say?"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let parent = only_log(home.path());
    let out = run.run(&["sessions", "fork", parent.to_str().unwrap()], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let fork = stdout(&out).trim().to_owned();
    let requests = server.requests();
    for (number, sent) in requests.iter().enumerate() {
        let number = (number + 1).to_string();
        let out = run.run(&["sessions", "show", &fork, "--request", &number], "");
        assert!(out.status.success(), "#{number}: {}", stderr(&out));
        // The same body: the parent's session id is its prompt-cache key.
        assert_eq!(stdout(&out), sent.raw_body, "request {number}");
    }
}
