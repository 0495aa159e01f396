//! The fields that tie hook events to a prompt and a session's life, end to end: `prompt_id`
//! (one per prompt, on every event after it) and `effort`, InstructionsLoaded for AGENTS.md,
//! SessionStart's `clear` source and SessionEnd's `clear` and `prompt_input_exit` reasons in the
//! UI.

use std::path::Path;
use std::time::{Duration, Instant};

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::{Value, json};

use crate::hooks::Setup;
use crate::stderr;

/// `~/.claude/settings.json` whose `events` each run a hook appending its stdin JSON, one line
/// per run, to `log`.
fn record_events(setup: &Setup, events: &[&str], log: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let script = setup.user_home.path().join("record.sh");
    std::fs::write(&script, format!("#!/bin/sh\ncat >> '{0}'\necho >> '{0}'\n", log.display()))
        .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut hooks = serde_json::Map::new();
    for event in events {
        let command = script.to_string_lossy();
        hooks.insert(
            (*event).to_owned(),
            json!([{ "hooks": [{ "type": "command", "command": command }] }]),
        );
    }
    let dir = setup.user_home.path().join(".claude");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("settings.json"), json!({ "hooks": hooks }).to_string()).unwrap();
}

fn records(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines().filter(|l| !l.is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// InstructionsLoaded runs for the project's AGENTS.md at session start, before any prompt;
/// the events from the prompt on carry its id; all carry the effort.
#[test]
fn every_event_of_a_prompt_carries_its_prompt_id_and_the_effort() {
    let setup = Setup::new();
    let log = setup.user_home.path().join("events.jsonl");
    let events = ["InstructionsLoaded", "UserPromptSubmit", "SessionStart", "Stop", "SessionEnd"];
    record_events(&setup, &events, &log);
    std::fs::write(setup.repo.path().join("AGENTS.md"), "Run the tests.\n").unwrap();
    let server = FakeModelServer::start(Script::new().reply(Reply::text("done"))).unwrap();
    let out = setup
        .run(&server, &["exec", "-m", "gpt-5", "-c", "model_reasoning_effort=\"high\"", "hello"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let records = records(&log);
    let names: Vec<&str> = records.iter().map(|r| r["hook_event_name"].as_str().unwrap()).collect();
    assert_eq!(names, events);
    let loaded = &records[0];
    let agents_md = setup.repo.path().join("AGENTS.md").canonicalize().unwrap();
    let file = Path::new(loaded["file_path"].as_str().unwrap()).canonicalize().unwrap();
    assert_eq!(file, agents_md, "{loaded}");
    assert_eq!(loaded["memory_type"], "Project");
    assert_eq!(loaded["load_reason"], "session_start");
    assert_eq!(loaded.get("prompt_id"), None, "{loaded}");
    let prompt_id = &records[1]["prompt_id"];
    assert!(prompt_id.as_str().is_some_and(|id| !id.is_empty()), "{}", records[1]);
    for record in &records[1..] {
        assert_eq!(&record["prompt_id"], prompt_id, "{record}");
    }
    for record in &records {
        assert_eq!(record["effort"], json!({"level": "high"}), "{record}");
    }
    assert_eq!(records[4]["reason"], "other");
}

/// `/new` ends the session with `clear` and starts the next with `clear`; `/quit` ends it with
/// `prompt_input_exit`. Each session's events carry the id of its own prompt.
#[test]
fn the_ui_reports_clear_and_prompt_input_exit() {
    let setup = Setup::new();
    let log = setup.user_home.path().join("events.jsonl");
    record_events(&setup, &["SessionStart", "SessionEnd"], &log);
    let server = FakeModelServer::start(Script::new().when_exhausted(Reply::text("pong"))).unwrap();
    let mut env = crate::exec::openai_env(&server);
    env.push(("HOME".into(), setup.user_home.path().to_string_lossy().into_owned()));
    let mut pty = crate::tui::Pty::spawn(setup.home.path(), setup.repo.path(), &env, &[]);
    pty.wait_idle("the first session");
    pty.type_text("first");
    pty.send("\r");
    pty.wait_for("pong", "the first reply");
    pty.type_text("/new");
    pty.send("\r");
    pty.wait_for("new session", "the second session");
    pty.type_text("second");
    pty.send("\r");
    // The second session's SessionStart runs before its model request.
    let deadline = Instant::now() + Duration::from_secs(20);
    while records(&log).len() < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(25));
    }
    pty.wait_idle("the second reply");
    pty.type_text("/quit");
    pty.send("\r");
    assert!(pty.wait_exit().success());
    let records = records(&log);
    let seen: Vec<(&str, &str)> = records
        .iter()
        .map(|r| {
            let name = r["hook_event_name"].as_str().unwrap();
            let what = if name == "SessionStart" { &r["source"] } else { &r["reason"] };
            (name, what.as_str().unwrap())
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("SessionStart", "startup"),
            ("SessionEnd", "clear"),
            ("SessionStart", "clear"),
            ("SessionEnd", "prompt_input_exit"),
        ]
    );
    assert_ne!(records[0]["session_id"], records[2]["session_id"]);
    assert_ne!(records[0]["prompt_id"], records[2]["prompt_id"]);
    assert_eq!(records[0]["prompt_id"], records[1]["prompt_id"]);
}
