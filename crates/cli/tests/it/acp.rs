//! `codecoder acp` end to end: a Node ACP client on the official TypeScript SDK
//! (`fixtures/acp_client.mjs`, the SDK from the directory `CODECODER_TEST_NPM` names) spawns the
//! real binary against the fake model server and drives a session as an editor does: it
//! initializes, creates a session with an MCP server, prompts a bug fix (a permission granted,
//! the file read from and written to the client's buffer, which differs from the disk), cancels
//! a slow command (stop reason `cancelled`, no process left) and loads the session back. The
//! client checks what it sees; this test checks what the model saw and what reached the disk.
//! `fixtures/acp_question.mjs` answers the model's `ask_user` question as an editor with form
//! elicitation does (answered, failed, withdrawn by a cancel) or without it (not asked).
//! `fixtures/acp_updates.mjs` records every update of one prompt and of the session loaded
//! back: a patch the model writes slowly is shown while it is written, then run whole, and
//! replayed as it ran.
//! Skipped with a note without the npm packages, failed under `CI=true`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::json;

use crate::exec::openai_env;
use crate::mcp::{bin, servers_dir};
use crate::{stderr, stdout};

/// The slow command's argument, unique to this run (found in /proc while it runs).
fn marker() -> String {
    format!("9{}", std::process::id())
}

/// A tool of the MCP server the client passes in `session/new`.
const ECHO: &str = "mcp__everything__echo";

fn script() -> Script {
    let plan = json!({"plan": [
        {"step": "Read add.js", "status": "completed"},
        {"step": "Fix the operator", "status": "in_progress"}
    ]});
    // The client's MCP server's tools join once it is ready: until then the model waits.
    Script::new()
        .until_tools([ECHO], crate::mcp::wait_for_servers())
        .reply(
            Reply::tool_call("call_read", "read_file", json!({"path": "add.js"}))
                .and_tool_call("call_plan", "update_plan", plan)
                .reasoning("The sum subtracts."),
        )
        .reply(Reply::tool_call(
            "call_edit",
            "edit",
            json!({"path": "add.js", "old_string": "return a - b;", "new_string": "return a + b;"}),
        ))
        .reply(Reply::text("Fixed the subtraction."))
        .reply(Reply::tool_call(
            "call_slow",
            "run_command",
            json!({"command": format!("sleep {}", marker())}),
        ))
}

#[test]
fn an_acp_client_fixes_a_bug_cancels_a_command_and_loads_the_session() {
    let Some(npm) = servers_dir() else { return };
    let server = FakeModelServer::start(script()).unwrap();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let workdir = work.path().canonicalize().unwrap();
    std::fs::write(workdir.join("add.js"), "function add(a, b) {\n  return a - b;\n}\n").unwrap();
    crate::exec::without_language_servers(home.path());
    // Commands run in the default sandbox (bubblewrap where it works): the cancelled one and
    // everything it started must be gone.
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/acp_client.mjs");

    let mut command = Command::new("node");
    command
        .arg(&client)
        .current_dir(&workdir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CODECODER_HOME", home.path())
        .env("CODECODER_BIN", env!("CARGO_BIN_EXE_codecoder"))
        .env("CODECODER_TEST_NPM", &npm)
        .env("WORKDIR", &workdir)
        .env("MCP_SERVER", bin(&npm, "mcp-server-everything"))
        .env("MARKER", marker());
    for (key, value) in openai_env(&server) {
        command.env(key, value);
    }
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "the ACP client failed:\nstdout: {}\nstderr: {}",
        stdout(&output),
        stderr(&output)
    );
    let summary: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    // The edit asked (under `untrusted`); `sleep` is a known-safe command.
    assert_eq!(summary["permissions"].as_u64(), Some(1), "{summary}");

    // The fix reached the disk through the client's write, made from its buffer.
    let fixed = std::fs::read_to_string(workdir.join("add.js")).unwrap();
    assert_eq!(fixed, "function add(a, b) {\n  return a + b; // unsaved\n}\n");

    server.wait_for_requests(4, Duration::from_secs(10)).unwrap();
    // The client's MCP server joined the session's tools (the requests before were the wait).
    let requests = crate::mcp::from_tools(server.requests(), &[ECHO.to_owned()]);
    assert_eq!(requests.len(), 4, "the four scripted requests offer {ECHO}");
    // The embedded resource reached the model as context.
    assert!(requests[0].raw_body.contains("<context uri="), "{}", requests[0].raw_body);
    // The model read the editor's buffer, not the disk.
    assert!(requests[1].raw_body.contains("// unsaved"), "{}", requests[1].raw_body);
    // The cancelled command's result is in the log, so nothing more was asked of the model
    // (checked above: the four scripted requests and no other once the tools were there).
}

/// Runs `fixtures/acp_question.mjs` in `mode` against a model that asks one question with
/// suggested answers and then ends its turn; returns the client's summary and the model's
/// requests.
fn question_session(
    mode: &str,
) -> Option<(serde_json::Value, Vec<codecoder_test_support::RecordedRequest>)> {
    let npm = servers_dir()?;
    let script = Script::new()
        .reply(Reply::tool_call(
            "call_ask",
            "ask_user",
            json!({"question": "Which color should the button be?", "options": ["red", "blue"]}),
        ))
        .reply(Reply::text("Done."));
    let server = FakeModelServer::start(script).unwrap();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let workdir = work.path().canonicalize().unwrap();
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/acp_question.mjs");
    let mut command = Command::new("node");
    command
        .arg(&client)
        .current_dir(&workdir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CODECODER_HOME", home.path())
        .env("CODECODER_BIN", env!("CARGO_BIN_EXE_codecoder"))
        .env("CODECODER_TEST_NPM", &npm)
        .env("WORKDIR", &workdir)
        .env("MODE", mode)
        .env("CHOICE", "blue");
    for (key, value) in openai_env(&server) {
        command.env(key, value);
    }
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "the ACP client failed:\nstdout: {}\nstderr: {}",
        stdout(&output),
        stderr(&output)
    );
    let summary: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    Some((summary, server.requests()))
}

/// The turn went on after the question: the model was asked again, and the turn ended.
fn went_on(summary: &serde_json::Value, requests: &[codecoder_test_support::RecordedRequest]) {
    assert_eq!(summary["stopReason"], "end_turn", "{summary}");
    assert_eq!(requests.len(), 2, "the turn went on after the question: {summary}");
}

#[test]
fn an_editor_with_form_elicitation_answers_the_models_question() {
    let Some((summary, requests)) = question_session("answer") else { return };
    went_on(&summary, &requests);
    let elicitations = summary["elicitations"].as_array().unwrap();
    assert_eq!(elicitations.len(), 1, "{summary}");
    let form = &elicitations[0];
    assert_eq!(form["mode"], "form", "{form}");
    assert_eq!(form["message"], "Which color should the button be?", "{form}");
    assert_eq!(form["sessionId"], summary["sessionId"], "{form}");
    // Tied to the ask_user call the editor was shown.
    let calls = summary["toolCalls"].as_array().unwrap();
    assert!(calls.contains(&form["toolCallId"]), "{summary}");
    let properties = &form["requestedSchema"]["properties"];
    let picks: Vec<&str> = properties["choice"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|option| option["const"].as_str().unwrap())
        .collect();
    assert_eq!(picks, ["red", "blue"], "{form}");
    assert_eq!(properties["answer"]["type"], "string", "the person may answer freely: {form}");
    let body = &requests[1].raw_body;
    assert!(body.contains("The user answered: blue"), "{body}");
}

#[test]
fn an_editor_that_fails_the_question_declines_it() {
    let Some((summary, requests)) = question_session("error") else { return };
    went_on(&summary, &requests);
    assert_eq!(summary["elicitations"].as_array().unwrap().len(), 1, "{summary}");
    let body = &requests[1].raw_body;
    assert!(body.contains("The user declined to answer"), "{body}");
}

#[test]
fn an_editor_without_elicitation_is_not_asked_and_the_model_hears_why() {
    let Some((summary, requests)) = question_session("none") else { return };
    went_on(&summary, &requests);
    assert_eq!(summary["elicitations"], json!([]), "{summary}");
    let body = &requests[1].raw_body;
    assert!(body.contains("The question could not be asked"), "{body}");
    assert!(body.contains("elicitation.form"), "{body}");
}

#[test]
fn a_cancelled_prompt_withdraws_its_open_question() {
    let Some((summary, requests)) = question_session("cancel") else { return };
    assert_eq!(summary["stopReason"], "cancelled", "{summary}");
    assert_eq!(summary["elicitations"].as_array().unwrap().len(), 1, "{summary}");
    assert_eq!(summary["withdrawn"], true, "the open form got $/cancel_request: {summary}");
    assert_eq!(requests.len(), 1, "the cancelled turn asked the model nothing more");
}

/// Runs `fixtures/acp_updates.mjs` with `prompt` in a fresh work directory (prepared by
/// `prepare`) against `script`; returns the client's summary and the work directory.
fn updates_session(
    script: Script,
    prompt: &str,
    prepare: impl FnOnce(&Path),
) -> Option<(serde_json::Value, tempfile::TempDir)> {
    updates_session_with(script, prompt, prepare, &[])
}

/// `updates_session` with `env` set for the client too (its capabilities).
fn updates_session_with(
    script: Script,
    prompt: &str,
    prepare: impl FnOnce(&Path),
    env: &[(&str, &str)],
) -> Option<(serde_json::Value, tempfile::TempDir)> {
    let npm = servers_dir()?;
    let server = FakeModelServer::start(script).unwrap();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let workdir = work.path().canonicalize().unwrap();
    prepare(&workdir);
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/acp_updates.mjs");
    let mut command = Command::new("node");
    command
        .arg(&client)
        .current_dir(&workdir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CODECODER_HOME", home.path())
        .env("CODECODER_BIN", env!("CARGO_BIN_EXE_codecoder"))
        .env("CODECODER_TEST_NPM", &npm)
        .env("WORKDIR", &workdir)
        .env("PROMPT", prompt)
        .envs(env.iter().copied());
    for (key, value) in openai_env(&server) {
        command.env(key, value);
    }
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "the ACP client failed:\nstdout: {}\nstderr: {}",
        stdout(&output),
        stderr(&output)
    );
    let summary: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    Some((summary, work))
}

#[test]
fn a_patch_is_shown_while_the_model_writes_it() {
    // The model writes a patch of a file move and an added file slowly: its tool call is
    // announced with the files written so far and updated with the diff so far until it runs.
    let patch = "*** Begin Patch\n*** Update File: old.txt\n*** Move to: new.txt\n@@\n-one\n+uno\n\
                 *** Add File: added.txt\n+first\n+second\n*** End Patch\n";
    let script = Script::new()
        .reply(
            Reply::tool_call("p1", "apply_patch", json!({"input": patch}))
                .arg_fragments(8)
                .pace_ms(150),
        )
        .reply(Reply::text("Patched."));
    let prepare = |dir: &Path| std::fs::write(dir.join("old.txt"), "one\n").unwrap();
    let Some((summary, work)) = updates_session(script, "patch it", prepare) else { return };
    assert_eq!(summary["stopReason"], "end_turn", "{summary}");
    let workdir = work.path().canonicalize().unwrap();
    let path = |name: &str| workdir.join(name).to_string_lossy().into_owned();
    let of_call: Vec<&serde_json::Value> = summary["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|update| update["toolCallId"] == "p1")
        .collect();
    // One tool call, announced while the model wrote it: pending (the wire leaves the default
    // status out), an edit, at the files written so far.
    let announced: Vec<_> =
        of_call.iter().filter(|update| update["sessionUpdate"] == "tool_call").collect();
    assert_eq!(announced.len(), 1, "{of_call:#?}");
    let first = of_call[0];
    assert_eq!(first["sessionUpdate"], "tool_call", "{of_call:#?}");
    assert!(first.get("status").is_none_or(|status| status == "pending"), "{first}");
    assert_eq!(first["kind"], "edit", "{first}");
    assert_eq!(first["locations"][0]["path"], path("old.txt"), "{first}");
    // Updated with the diff so far before it ran.
    let running = of_call
        .iter()
        .position(|update| update["status"] == "in_progress")
        .unwrap_or_else(|| panic!("the call ran: {of_call:#?}"));
    let progress = &of_call[1..running];
    assert!(!progress.is_empty(), "updates while the model wrote it: {of_call:#?}");
    assert!(
        progress.iter().all(|update| {
            update["sessionUpdate"] == "tool_call_update"
                && update["content"]
                    .as_array()
                    .is_some_and(|content| content.iter().all(|item| item["type"] == "diff"))
        }),
        "{progress:#?}"
    );
    // It ran whole and ended with every file's diff.
    let whole = json!([
        {"type": "diff", "path": path("old.txt"), "oldText": "one", "newText": "uno"},
        {"type": "diff", "path": path("added.txt"), "newText": "first\nsecond\n"}
    ]);
    assert_eq!(of_call[running]["content"], whole, "{:#}", of_call[running]);
    assert_eq!(
        of_call[running]["locations"],
        json!([{"path": path("old.txt")}, {"path": path("new.txt")}, {"path": path("added.txt")}])
    );
    let done = of_call.last().unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["content"], whole, "{done}");
    assert_eq!(std::fs::read_to_string(workdir.join("new.txt")).unwrap(), "uno\n");

    // Loaded back, the session shows the call as it ran, and the model's text once.
    let replayed = summary["replayed"].as_array().unwrap();
    let call = replayed
        .iter()
        .find(|update| update["sessionUpdate"] == "tool_call" && update["toolCallId"] == "p1")
        .unwrap_or_else(|| panic!("the replayed call: {replayed:#?}"));
    assert_eq!(call["kind"], "edit", "{call}");
    assert_eq!(call["content"], whole, "{call}");
    assert_eq!(call["locations"], of_call[running]["locations"], "{call}");
    let ended = replayed
        .iter()
        .find(|update| update["toolCallId"] == "p1" && update["status"] == "completed")
        .unwrap_or_else(|| panic!("the replayed end: {replayed:#?}"));
    assert_eq!(ended["content"], whole, "{ended}");
    let text: String = replayed
        .iter()
        .filter(|update| update["sessionUpdate"] == "agent_message_chunk")
        .map(|update| update["content"]["text"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(text, "Patched.", "{replayed:#?}");
}

#[test]
fn a_command_is_a_terminal_for_an_editor_that_advertises_terminal_output() {
    // Zed's extension: the command runs in codecoder's sandbox, and the editor displays its
    // output in a terminal fed through `_meta`; an editor without it gets fenced text.
    let script = || {
        Script::new()
            .reply(Reply::tool_call(
                "x1",
                "exec_command",
                json!({"cmd": "echo from-the-pty", "tty": true, "yield_time_ms": 30000}),
            ))
            .reply(Reply::text("Ran."))
    };
    let terminal = [("TERMINAL_OUTPUT", "1")];
    let Some((summary, work)) = updates_session_with(script(), "run it", |_| {}, &terminal) else {
        return;
    };
    assert_eq!(summary["stopReason"], "end_turn", "{summary}");
    let of_call: Vec<&serde_json::Value> = summary["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|update| update["toolCallId"] == "x1")
        .collect();
    let started = of_call
        .iter()
        .find(|update| update["status"] == "in_progress")
        .unwrap_or_else(|| panic!("{of_call:#?}"));
    assert_eq!(started["content"], json!([{"type": "terminal", "terminalId": "x1"}]), "{started}");
    let workdir = work.path().canonicalize().unwrap();
    assert_eq!(
        started["_meta"]["terminal_info"],
        json!({"terminal_id": "x1", "cwd": workdir.to_string_lossy()}),
        "{started}"
    );
    let data: String = of_call
        .iter()
        .filter_map(|update| update["_meta"]["terminal_output"]["data"].as_str())
        .collect();
    assert!(data.contains("from-the-pty"), "{of_call:#?}");
    let last = of_call.last().unwrap();
    assert_eq!(last["status"], "completed", "{last}");
    assert_eq!(
        last["_meta"]["terminal_exit"],
        json!({"terminal_id": "x1", "exit_code": 0, "signal": null}),
        "{last}"
    );
    // Without the capability: no `_meta`, the output as text.
    let Some((summary, _work)) = updates_session(script(), "run it", |_| {}) else { return };
    let of_call: Vec<&serde_json::Value> = summary["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|update| update["toolCallId"] == "x1")
        .collect();
    assert!(of_call.iter().all(|update| update.get("_meta").is_none()), "{of_call:#?}");
    let text = of_call.last().unwrap()["content"][0]["content"]["text"].as_str().unwrap_or("");
    assert!(text.contains("from-the-pty"), "{of_call:#?}");
}
