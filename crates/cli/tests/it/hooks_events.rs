//! Hook events beyond the first thirteen, fired by the real binary against the fake model:
//! each hook is a shell script in the user's `~/.claude/settings.json` that appends its stdin
//! to a file (one JSON line per firing) and prints a fixed answer, so a test checks both the
//! input Claude Code would send and what the answer changes.

use std::path::Path;

use codecoder_test_support::{FakeModelServer, Fault, Reply, Script};
use serde_json::{Value, json};

use crate::hooks::Setup;
use crate::stderr;

/// Writes a hook for `event` that records its stdin in `EVENT.jsonl` beside it and prints
/// `answer`; returns the command.
fn recording_hook(dir: &Path, event: &str, answer: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let record = dir.join(format!("{event}.jsonl"));
    let path = dir.join(format!("{event}.sh"));
    let body = format!(
        "#!/bin/sh\ncat >> '{record}'\necho >> '{record}'\ncat <<'ANSWER'\n{answer}\nANSWER\n",
        record = record.display()
    );
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

/// What the hook of `event` was given, one value per firing.
fn inputs(dir: &Path, event: &str) -> Vec<Value> {
    let Ok(text) = std::fs::read_to_string(dir.join(format!("{event}.jsonl"))) else {
        return Vec::new();
    };
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The user settings' `hooks`: one group per `(event, matcher, command)`.
fn settings(setup: &Setup, groups: &[(&str, &str, String)]) {
    let mut hooks = serde_json::Map::new();
    for (event, matcher, command) in groups {
        let list = hooks.entry((*event).to_owned()).or_insert_with(|| json!([]));
        list.as_array_mut().unwrap().push(
            json!({ "matcher": matcher, "hooks": [{ "type": "command", "command": command }] }),
        );
    }
    let dir = setup.user_home.path().join(".claude");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("settings.json"), json!({ "hooks": hooks }).to_string()).unwrap();
}

fn assert_common(input: &Value, event: &str, setup: &Setup) {
    assert_eq!(input["hook_event_name"], event, "{input}");
    assert!(input["session_id"].as_str().is_some_and(|id| !id.is_empty()), "{input}");
    assert!(input["transcript_path"].as_str().is_some_and(|p| p.ends_with(".jsonl")), "{input}");
    let cwd = std::fs::canonicalize(setup.repo.path()).unwrap();
    let seen = std::fs::canonicalize(input["cwd"].as_str().unwrap()).unwrap();
    assert_eq!(seen, cwd, "{input}");
    // `exec` runs without asking: Claude Code's `dontAsk`.
    assert_eq!(input["permission_mode"], "dontAsk", "{input}");
}

#[test]
fn permission_denied_sees_the_refused_call_and_its_retry_reaches_the_model() {
    let setup = Setup::new();
    let dir = setup.user_home.path();
    let guard = recording_hook(dir, "guard", "");
    // The guard refuses with exit 2; its stdout is not read then.
    std::fs::write(
        &guard,
        "#!/bin/sh\ncat >/dev/null\necho 'rm is not allowed here' >&2\nexit 2\n",
    )
    .unwrap();
    let denied = recording_hook(
        dir,
        "PermissionDenied",
        r#"{"hookSpecificOutput": {"hookEventName": "PermissionDenied", "retry": true}}"#,
    );
    settings(
        &setup,
        &[("PreToolUse", "Bash", guard), ("PermissionDenied", "Bash", denied.clone())],
    );
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "run_command", json!({ "command": "rm keep.txt" })))
            .reply(Reply::text("understood")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "remove keep.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let fired = inputs(dir, "PermissionDenied");
    assert_eq!(fired.len(), 1, "{fired:?}");
    let input = &fired[0];
    assert_common(input, "PermissionDenied", &setup);
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(input["tool_input"]["command"], "rm keep.txt");
    assert_eq!(input["tool_use_id"], "c1");
    let reason = input["reason"].as_str().unwrap();
    assert!(reason.contains("rm is not allowed here"), "{reason}");
    let body = &server.requests()[1].raw_body;
    assert!(body.contains("may try this call again"), "{body}");
}

#[test]
fn permission_denied_does_not_fire_for_an_allowed_call() {
    let setup = Setup::new();
    let dir = setup.user_home.path();
    let denied = recording_hook(dir, "PermissionDenied", "");
    settings(&setup, &[("PermissionDenied", "", denied)]);
    std::fs::write(setup.repo.path().join("a.txt"), "alpha\n").unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "read_file", json!({ "path": "a.txt" })))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "read a.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(inputs(dir, "PermissionDenied"), Vec::<Value>::new());
}

#[test]
fn post_tool_batch_fires_once_per_response_with_every_call_and_its_context_reaches_the_model() {
    let setup = Setup::new();
    let dir = setup.user_home.path();
    let batch = recording_hook(
        dir,
        "PostToolBatch",
        r#"{"hookSpecificOutput": {"hookEventName": "PostToolBatch", "additionalContext": "batch-checked-by-hook"}}"#,
    );
    settings(&setup, &[("PostToolBatch", "", batch)]);
    std::fs::write(setup.repo.path().join("a.txt"), "alpha-content\n").unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "read_file", json!({ "path": "a.txt" })).and_tool_call(
                "c2",
                "read_file",
                json!({ "path": "missing.txt" }),
            ))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "read both"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let fired = inputs(dir, "PostToolBatch");
    assert_eq!(fired.len(), 1, "once for the response, not per call: {fired:?}");
    let input = &fired[0];
    assert_common(input, "PostToolBatch", &setup);
    let calls = input["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{input}");
    assert_eq!(calls[0]["tool_name"], "Read");
    assert_eq!(calls[0]["tool_use_id"], "c1");
    assert_eq!(calls[0]["tool_input"]["file_path"], "a.txt");
    assert!(calls[0]["tool_response"].as_str().unwrap().contains("alpha-content"), "{input}");
    assert_eq!(calls[1]["tool_use_id"], "c2");
    assert!(calls[1]["error"].is_string(), "{input}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].raw_body.contains("batch-checked-by-hook"), "{}", requests[1].raw_body);
    assert!(!requests[0].raw_body.contains("batch-checked-by-hook"));
}

#[test]
fn a_blocking_post_tool_batch_hook_stops_the_turn_before_the_next_request() {
    let setup = Setup::new();
    let dir = setup.user_home.path();
    let batch =
        recording_hook(dir, "PostToolBatch", r#"{"decision": "block", "reason": "lint failed"}"#);
    settings(&setup, &[("PostToolBatch", "", batch)]);
    std::fs::write(setup.repo.path().join("a.txt"), "alpha\n").unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "read_file", json!({ "path": "a.txt" })))
            .reply(Reply::text("never asked")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "read a.txt"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("a PostToolBatch hook stopped the turn: lint failed"), "{err}");
    assert_eq!(server.requests().len(), 1, "the model was asked again after the block");
}

#[test]
fn stop_failure_fires_when_a_model_error_ends_the_turn_and_stop_does_not() {
    let setup = Setup::new();
    let dir = setup.user_home.path();
    let failure = recording_hook(dir, "StopFailure", r#"{"systemMessage": "paged the on-call"}"#);
    let stop = recording_hook(dir, "Stop", "");
    settings(&setup, &[("StopFailure", "authentication_failed", failure), ("Stop", "", stop)]);
    let server =
        FakeModelServer::start(Script::new().reply(Fault::status(401).message("invalid api key")))
            .unwrap();
    let out = setup.run(&server, &["exec", "hello"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    let fired = inputs(dir, "StopFailure");
    assert_eq!(fired.len(), 1, "{fired:?} {err}");
    let input = &fired[0];
    assert_common(input, "StopFailure", &setup);
    assert_eq!(input["error"], "authentication_failed", "{input}");
    assert!(input["error_details"].as_str().unwrap().contains("401"), "{input}");
    assert!(err.contains("paged the on-call"), "{err}");
    assert_eq!(inputs(dir, "Stop"), Vec::<Value>::new());
}

#[test]
fn stop_failure_matchers_see_the_error_class() {
    let setup = Setup::new();
    let dir = setup.user_home.path();
    let failure = recording_hook(dir, "StopFailure", "");
    settings(&setup, &[("StopFailure", "rate_limit", failure)]);
    let server =
        FakeModelServer::start(Script::new().reply(Fault::status(401).message("invalid api key")))
            .unwrap();
    let out = setup.run(&server, &["exec", "hello"]);
    assert!(!out.status.success(), "{}", stderr(&out));
    assert_eq!(inputs(dir, "StopFailure"), Vec::<Value>::new());
}

#[test]
fn post_compact_gets_the_trigger_and_the_summary() {
    let setup = Setup::new();
    let dir = setup.user_home.path();
    let compacted = recording_hook(dir, "PostCompact", "");
    settings(&setup, &[("PostCompact", "manual", compacted)]);
    std::fs::write(setup.repo.path().join("a.txt"), "alpha\n").unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "read_file", json!({ "path": "a.txt" })))
            .reply(Reply::text("Read it."))
            .when_no_tools(Reply::text("Summary: a.txt was read.")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "read a.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(inputs(dir, "PostCompact"), Vec::<Value>::new());
    let sessions = setup.home.path().join("sessions");
    let log = walk(&sessions).into_iter().find(|p| p.extension().is_some_and(|e| e == "jsonl"));
    let log = log.expect("a session log");
    let out = setup.run(&server, &["sessions", "compact", log.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let fired = inputs(dir, "PostCompact");
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert_eq!(fired[0]["hook_event_name"], "PostCompact");
    assert_eq!(fired[0]["trigger"], "manual");
    assert_eq!(fired[0]["compact_summary"], "Summary: a.txt was read.");
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn post_tool_use_and_its_failure_carry_the_calls_duration() {
    let setup = Setup::new();
    let dir = setup.user_home.path();
    let post = recording_hook(dir, "PostToolUse", "");
    let failure = recording_hook(dir, "PostToolUseFailure", "");
    settings(&setup, &[("PostToolUse", "Read", post), ("PostToolUseFailure", "Read", failure)]);
    std::fs::write(setup.repo.path().join("a.txt"), "alpha\n").unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "read_file", json!({ "path": "a.txt" })).and_tool_call(
                "c2",
                "read_file",
                json!({ "path": "missing.txt" }),
            ))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "read both"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let post = inputs(dir, "PostToolUse");
    assert_eq!(post.len(), 1, "{post:?}");
    assert_eq!(post[0]["tool_use_id"], "c1");
    assert!(post[0]["duration_ms"].is_u64(), "{}", post[0]);
    let failed = inputs(dir, "PostToolUseFailure");
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["tool_use_id"], "c2");
    assert!(failed[0]["duration_ms"].is_u64(), "{}", failed[0]);
    assert_eq!(failed[0]["is_interrupt"], false);
}

#[test]
fn hooks_inside_a_subagent_get_its_agent_id_and_type() {
    let setup = Setup::new();
    let dir = setup.user_home.path();
    let pre = recording_hook(dir, "PreToolUse", "");
    settings(&setup, &[("PreToolUse", "", pre)]);
    std::fs::write(setup.repo.path().join("a.txt"), "alpha\n").unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("task-1", "agent", json!({ "task": "read a.txt" })))
            .reply(Reply::tool_call("c2", "read_file", json!({ "path": "a.txt" })))
            .reply(Reply::text("it says alpha"))
            .reply(Reply::text("the subagent read it")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "have a subagent read a.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let fired = inputs(dir, "PreToolUse");
    assert_eq!(fired.len(), 2, "{fired:?}");
    assert_eq!(fired[0]["tool_name"], "Task");
    assert!(fired[0].get("agent_id").is_none(), "the root agent's call: {}", fired[0]);
    assert_eq!(fired[1]["tool_name"], "Read");
    assert_eq!(fired[1]["agent_id"], "task-1", "{}", fired[1]);
    assert_eq!(fired[1]["agent_type"], "general-purpose", "{}", fired[1]);
}

#[test]
fn plan_updates_fire_task_created_and_task_completed_and_their_feedback_reaches_the_model() {
    let setup = Setup::new();
    let dir = setup.user_home.path();
    let created = recording_hook(dir, "TaskCreated", "");
    let completed = recording_hook(dir, "TaskCompleted", "");
    // The completion hook refuses with exit 2: its stderr goes to the model with the result.
    std::fs::write(
        &completed,
        format!(
            "#!/bin/sh\ncat >> '{}'\necho >> '{}'\necho 'run the tests before completing' >&2\nexit 2\n",
            dir.join("TaskCompleted.jsonl").display(),
            dir.join("TaskCompleted.jsonl").display()
        ),
    )
    .unwrap();
    settings(&setup, &[("TaskCreated", "", created), ("TaskCompleted", "", completed)]);
    let first = json!({"plan": [
        {"step": "Read add.js", "status": "in_progress"},
        {"step": "Fix the operator", "status": "pending"}
    ]});
    let second = json!({"plan": [
        {"step": "Read add.js", "status": "completed"},
        {"step": "Fix the operator", "status": "in_progress"}
    ]});
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("p1", "update_plan", first))
            .reply(Reply::tool_call("p2", "update_plan", second))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "plan it"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let created = inputs(dir, "TaskCreated");
    assert_eq!(created.len(), 2, "each step once, when first stated: {created:?}");
    assert_common(&created[0], "TaskCreated", &setup);
    assert_eq!(created[0]["task_id"], "1");
    assert_eq!(created[0]["task_subject"], "Read add.js");
    assert_eq!(created[1]["task_subject"], "Fix the operator");
    let completed = inputs(dir, "TaskCompleted");
    assert_eq!(completed.len(), 1, "{completed:?}");
    assert_eq!(completed[0]["task_subject"], "Read add.js");
    let requests = server.requests();
    assert!(!requests[1].raw_body.contains("run the tests before completing"));
    assert!(
        requests[2].raw_body.contains("run the tests before completing"),
        "{}",
        requests[2].raw_body
    );
}
