//! Secret redaction end to end: a command prints a GitHub token and the value of a variable
//! withheld from commands (read from a file, since the command's environment lacks it), and
//! `read_file` reads that file; neither secret reaches the next model request, the session log,
//! `exec --json`'s items or the app server's notifications, and each result says how many
//! secrets it hid.

use std::path::{Path, PathBuf};
use std::process::Command;

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::{Value, json};

use crate::{stderr, stdout};

/// The value of `DEPLOY_TOKEN`, a variable the default excludes withhold from commands.
const WITHHELD_VALUE: &str = "withheld-value-9f8e7d6c5b";

/// The fake token's body; the command and the file add the `ghp_` prefix, so the model's own
/// arguments never hold the whole token.
const TOKEN_BODY: &str = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8";

fn token() -> String {
    format!("ghp_{TOKEN_BODY}")
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return found };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files(&path));
        } else {
            found.push(path);
        }
    }
    found
}

fn assert_hidden(what: &str, text: &str) {
    assert!(!text.contains(&token()), "{what} holds the token: {text}");
    assert!(!text.contains(WITHHELD_VALUE), "{what} holds the withheld value: {text}");
}

/// A workspace holding `deploy.env` (the withheld value), and a script: the command printing
/// both secrets, `read_file` of the file, an answer.
fn setup(root: &Path) -> (PathBuf, PathBuf, FakeModelServer) {
    let (codecoder_home, workspace) = (root.join("cchome"), root.join("workspace"));
    std::fs::create_dir_all(&codecoder_home).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("deploy.env"), format!("DEPLOY_TOKEN={WITHHELD_VALUE}\n"))
        .unwrap();
    let print = format!("p=ghp_; echo \"token: ${{p}}{TOKEN_BODY}\"; cat deploy.env");
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "run_command", json!({ "command": print })))
            .reply(Reply::tool_call("c2", "read_file", json!({ "path": "deploy.env" })))
            .reply(Reply::text("done")),
    )
    .unwrap();
    (codecoder_home, workspace, server)
}

#[test]
fn secrets_in_tool_output_reach_neither_the_model_nor_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (codecoder_home, workspace, server) = setup(&root);
    let out = Command::new(env!("CARGO_BIN_EXE_codecoder"))
        .args(["exec", "--json", "print the secrets"])
        .current_dir(&workspace)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &root)
        .env("CODECODER_HOME", &codecoder_home)
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()))
        .env("DEPLOY_TOKEN", WITHHELD_VALUE)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    let requests = server.requests();
    assert_eq!(requests.len(), 3, "one request per step");
    for (index, request) in requests.iter().enumerate() {
        assert_hidden(&format!("request {index}"), &request.raw_body);
    }
    // The command's result: both secrets replaced, and the count said.
    let body = &requests[1].raw_body;
    assert!(body.contains("token: [REDACTED:github-token]"), "{body}");
    assert!(body.contains("DEPLOY_TOKEN=[REDACTED:env:DEPLOY_TOKEN]"), "{body}");
    assert!(body.contains("(2 secrets redacted)"), "{body}");
    // read_file's result goes through the same seam.
    let body = &requests[2].raw_body;
    assert!(body.contains("[REDACTED:env:DEPLOY_TOKEN]"), "{body}");
    assert!(body.contains("(1 secret redacted)"), "{body}");

    // exec --json: the command item's output (built from the streamed output) and the file
    // read's result.
    let text = stdout(&out);
    assert_hidden("exec --json", &text);
    let items: Vec<Value> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "item.completed")
        .map(|event| event["item"].clone())
        .collect();
    let command = items.iter().find(|item| item["type"] == "command_execution").unwrap();
    let output = command["aggregated_output"].as_str().unwrap();
    assert!(output.contains("token: [REDACTED:github-token]"), "{output}");
    assert!(output.contains("[REDACTED:env:DEPLOY_TOKEN]"), "{output}");

    let logged = files(&codecoder_home.join("sessions"));
    assert!(logged.iter().any(|path| path.extension().is_some_and(|e| e == "jsonl")));
    let mut log_has_note = false;
    for path in logged {
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        assert_hidden(&path.display().to_string(), &text);
        log_has_note |= text.contains("(2 secrets redacted)");
    }
    assert!(log_has_note, "the session log holds the redacted result");
}

#[test]
fn the_app_servers_items_and_streamed_output_are_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (codecoder_home, workspace, server) = setup(&root);
    let mut env = crate::exec::openai_env(&server);
    env.push(("DEPLOY_TOKEN".into(), WITHHELD_VALUE.into()));
    let run = crate::exec::Run { home: &codecoder_home, cwd: &workspace, env };
    let mut client = crate::app_server::Client::start(&run);
    client.initialize();
    let started = client.result(
        "thread/start",
        json!({"cwd": workspace, "approvalPolicy": "never", "sandbox": "danger-full-access"}),
    );
    let thread_id = started["thread"]["id"].as_str().unwrap().to_owned();
    client.result(
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "print the secrets"}]}),
    );
    let messages = client.turn(|_| "decline");
    let transcript = serde_json::to_string(&messages).unwrap();
    assert_hidden("the app server's messages", &transcript);
    let command = messages
        .iter()
        .filter(|m| m["method"] == "item/completed")
        .map(|m| &m["params"]["item"])
        .find(|item| item["type"] == "commandExecution")
        .unwrap_or_else(|| panic!("{messages:#?}"));
    let output = command["aggregatedOutput"].as_str().unwrap();
    assert!(output.contains("token: [REDACTED:github-token]"), "{output}");
    assert!(output.contains("[REDACTED:env:DEPLOY_TOKEN]"), "{output}");
    assert!(client.finish().success());
}

#[test]
fn a_variable_left_out_only_by_inherit_is_not_taken_for_a_secret() {
    // With `inherit = "core"`, ORDINARY is withheld from commands too, but its name is not a
    // secret's: its value (a path, a project name) stays readable in tool output.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (codecoder_home, workspace, _) = setup(&root);
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call(
                "c1",
                "run_command",
                json!({ "command": "echo ordinary-value-123; cat deploy.env" }),
            ))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_codecoder"))
        .args(["-c", "shell_environment_policy.inherit=\"core\"", "exec", "print"])
        .current_dir(&workspace)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &root)
        .env("CODECODER_HOME", &codecoder_home)
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()))
        .env("DEPLOY_TOKEN", WITHHELD_VALUE)
        .env("ORDINARY", "ordinary-value-123")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &server.requests()[1].raw_body;
    assert!(body.contains("ordinary-value-123\\n"), "{body}");
    assert!(body.contains("DEPLOY_TOKEN=[REDACTED:env:DEPLOY_TOKEN]"), "{body}");
    assert!(body.contains("(1 secret redacted)"), "{body}");
}

/// The model's own command line holds a token: the command runs with it (its output is
/// redacted as any output), and the log keeps the call's arguments and the approval record's
/// keys with the token replaced, so the next request does not carry it back either.
#[test]
fn a_secret_in_the_models_own_arguments_is_kept_out_of_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (codecoder_home, workspace) = (root.join("cchome"), root.join("workspace"));
    std::fs::create_dir_all(&codecoder_home).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    let command = format!("echo {} | wc -c", token());
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "run_command", json!({ "command": command })))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_codecoder"))
        .args(["exec", "--json", "count it"])
        .current_dir(&workspace)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &root)
        .env("CODECODER_HOME", &codecoder_home)
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    // The command ran with the real token: `echo` printed its 41 bytes.
    assert!(requests[1].raw_body.contains("41"), "{}", requests[1].raw_body);
    assert!(!requests[1].raw_body.contains(&token()), "{}", requests[1].raw_body);
    let logged = files(&codecoder_home.join("sessions"));
    let mut seen_call = false;
    for path in logged.iter().filter(|path| path.extension().is_some_and(|e| e == "jsonl")) {
        let text = std::fs::read_to_string(path).unwrap();
        assert!(!text.contains(&token()), "{} holds the token: {text}", path.display());
        seen_call |= text.contains("echo [REDACTED:github-token] | wc -c");
    }
    assert!(seen_call, "the call is logged, its token replaced");
}
