//! Hook handler types other than a plain shell command, through `codecoder exec`: an `http`
//! hook answered by a loopback server, a command's exec form (`args`) with `once`, and an
//! `async` hook whose context reaches the model with a later call's result.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::Path;

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::json;

use crate::hooks::Setup;
use crate::stderr;

fn settings(dir: &Path, hooks: serde_json::Value) {
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    std::fs::write(dir.join(".claude/settings.json"), json!({ "hooks": hooks }).to_string())
        .unwrap();
}

fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

/// A loopback server answering every POST with `reply`; the thread returns the bodies it got
/// once the client is done (the listener closes when the test drops it).
fn hook_server(reply: &'static str) -> (String, std::thread::JoinHandle<Vec<String>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hooks/pre-tool-use", listener.local_addr().unwrap());
    let thread = std::thread::spawn(move || {
        let mut bodies = Vec::new();
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        bodies.push(String::from_utf8(body).unwrap());
        let mut stream = stream;
        write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
            reply.len()
        )
        .unwrap();
        bodies
    });
    (url, thread)
}

#[test]
fn an_http_hook_answered_by_a_loopback_server_denies_a_command() {
    let setup = Setup::new();
    let (url, server_thread) = hook_server(
        r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"the policy server refuses rm"}}"#,
    );
    settings(
        setup.user_home.path(),
        json!({ "PreToolUse": [{ "matcher": "Bash", "hooks": [{ "type": "http", "url": url }] }] }),
    );
    std::fs::write(setup.repo.path().join("keep.txt"), "precious").unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "run_command", json!({ "command": "rm keep.txt" })))
            .reply(Reply::text("could not remove it")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "remove keep.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(setup.repo.path().join("keep.txt").exists(), "the http hook must have denied rm");
    let bodies = server_thread.join().unwrap();
    let posted: serde_json::Value = serde_json::from_str(&bodies[0]).unwrap();
    assert_eq!(posted["hook_event_name"], "PreToolUse");
    assert_eq!(posted["tool_name"], "Bash");
    assert_eq!(posted["tool_input"]["command"], "rm keep.txt");
    let body = &server.requests()[1].raw_body;
    assert!(body.contains("the policy server refuses rm"), "{body}");
}

#[test]
fn an_exec_form_hook_gets_its_arguments_unexpanded_and_once_runs_it_once() {
    let setup = Setup::new();
    let log = setup.user_home.path().join("args.log");
    let record = script(
        setup.user_home.path(),
        "record.sh",
        &format!("cat >/dev/null; echo \"$#|$1|$2\" >> '{}'", log.display()),
    );
    settings(
        setup.user_home.path(),
        json!({ "PreToolUse": [{ "matcher": "Bash", "hooks": [{
            "type": "command", "command": record, "args": ["one two", "$HOME"], "once": true }] }] }),
    );
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "run_command", json!({ "command": "echo first" })))
            .reply(Reply::tool_call("c2", "run_command", json!({ "command": "echo second" })))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "run two commands"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "2|one two|$HOME\n");
    assert!(server.requests()[2].raw_body.contains("second"), "both commands ran");
}

#[test]
fn an_async_hook_does_not_hold_the_call_and_its_context_reaches_the_model_later() {
    let setup = Setup::new();
    let marker = setup.user_home.path().join("async-done");
    let scan = script(
        setup.user_home.path(),
        "scan.sh",
        &format!(
            r#"cat >/dev/null
echo '{{"hookSpecificOutput":{{"hookEventName":"PostToolUse","additionalContext":"async scan found nothing"}}}}'
touch '{}'"#,
            marker.display()
        ),
    );
    settings(
        setup.user_home.path(),
        json!({ "PostToolUse": [{ "matcher": "Bash", "hooks": [{
            "type": "command", "command": scan, "async": true }] }] }),
    );
    // The second command waits for the first call's async hook to have finished.
    let wait =
        format!("while [ ! -e '{}' ]; do sleep 0.05; done; sleep 1; echo waited", marker.display());
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "run_command", json!({ "command": "echo first" })))
            .reply(Reply::tool_call("c2", "run_command", json!({ "command": wait })))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "run two commands"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests();
    assert!(
        !requests[1].raw_body.contains("async scan found nothing"),
        "the first call's result did not wait for its async hook: {}",
        requests[1].raw_body
    );
    assert!(requests[2].raw_body.contains("async scan found nothing"), "{}", requests[2].raw_body);
}

#[test]
fn a_prompt_hook_asks_the_model_and_its_ok_false_denies_a_command() {
    let setup = Setup::new();
    settings(
        setup.user_home.path(),
        json!({ "PreToolUse": [{ "matcher": "Bash", "hooks": [{ "type": "prompt",
            "prompt": "Does this call delete files? $ARGUMENTS" }] }] }),
    );
    std::fs::write(setup.repo.path().join("keep.txt"), "precious").unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "run_command", json!({ "command": "rm keep.txt" })))
            .reply(Reply::text(
                "```json\n{\"ok\": false, \"reason\": \"the hook model says rm deletes files\"}\n```",
            ))
            .reply(Reply::text("could not remove it")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "remove keep.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(setup.repo.path().join("keep.txt").exists(), "the prompt hook must have denied rm");
    let requests = server.requests();
    let asked = &requests[1].raw_body;
    assert!(asked.contains("Does this call delete files?"), "{asked}");
    assert!(asked.contains("rm keep.txt") && asked.contains("PreToolUse"), "{asked}");
    assert!(!asked.contains("\"run_command\""), "the hook's call offers no tools: {asked}");
    let body = &requests[2].raw_body;
    assert!(body.contains("the hook model says rm deletes files"), "{body}");
}

#[test]
fn an_mcp_tool_hook_calls_a_configured_server_and_its_text_is_prompt_context() {
    let Some(dir) = crate::mcp::servers_dir() else { return };
    let setup = Setup::new();
    let everything = crate::mcp::bin(&dir, "mcp-server-everything");
    let names = crate::mcp::tool_names(&everything, &["stdio"], setup.repo.path());
    let echo = crate::mcp::pick(&names, &["echo"]);
    std::fs::write(
        setup.home.path().join("config.toml"),
        format!("[mcp_servers.everything]\ncommand = {everything:?}\nargs = [\"stdio\"]\n"),
    )
    .unwrap();
    settings(
        setup.user_home.path(),
        json!({ "UserPromptSubmit": [{ "hooks": [{ "type": "mcp_tool", "server": "everything",
            "tool": echo, "input": { "message": "hook saw ${prompt}" } }] }] }),
    );
    let server = FakeModelServer::start(Script::new().reply(Reply::text("done"))).unwrap();
    let out = setup.run(&server, &["exec", "the secret word is kumquat"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &server.requests()[0].raw_body;
    assert!(body.contains("hook saw the secret word is kumquat"), "{}", stderr(&out));
}
