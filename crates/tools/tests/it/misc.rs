//! update_plan, ask_user and web_fetch (against a loopback server started by the test).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

use codecoder_protocol::ToolError;
use codecoder_stdx::{JoinOnDrop, spawn_named};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::*;

#[test]
fn update_plan_validates_and_shows_the_plan() {
    let fixture = Fixture::new();
    let out = fixture.ok(
        "update_plan",
        json!({ "explanation": "found the bug", "plan": [
            { "step": "read code", "status": "completed" },
            { "step": "fix bug", "status": "in_progress" },
            { "step": "run tests", "status": "pending" }
        ] }),
    );
    assert_eq!(
        out,
        "Plan updated (1/3 completed):\nfound the bug\n[x] read code\n[>] fix bug\n[ ] run tests\n"
    );
    let summary = fixture.tool("update_plan").summary(&json!({ "plan": [
        { "step": "a", "status": "completed" }, { "step": "b", "status": "in_progress" }
    ] }));
    assert_eq!(summary, "plan: 1/2 done; now: b");
    let err = fixture.err(
        "update_plan",
        json!({ "plan": [
        { "step": "a", "status": "in_progress" }, { "step": "b", "status": "in_progress" }
    ] }),
    );
    assert!(err.contains("at most one step may be in_progress"), "{err}");
    let err = fixture.err("update_plan", json!({ "plan": [] }));
    assert!(err.contains("at least 1"), "{err}");
    let err = fixture.err("update_plan", json!({ "plan": [{ "step": "a", "status": "done" }] }));
    assert!(err.contains("must be one of"), "{err}");
    let err = fixture.err("update_plan", json!({ "plan": [{ "step": " ", "status": "pending" }] }));
    assert!(err.contains("is empty"), "{err}");
}

#[test]
fn ask_user_returns_the_answer() {
    let fixture = Fixture::new();
    let out =
        fixture.ok("ask_user", json!({ "question": "Which color?", "options": ["red", "blue"] }));
    assert_eq!(out, "The user answered: blue");
    let err = fixture.err("ask_user", json!({ "question": "" }));
    assert!(err.contains("at least 1"), "{err}");
    let err = fixture.err("ask_user", json!({ "question": "q", "options": ["a", " "] }));
    assert!(err.contains("empty answer"), "{err}");
}

#[test]
fn ask_user_says_why_no_one_could_be_asked() {
    let mut fixture = Fixture::new();
    let reason = "the client cannot show questions".to_owned();
    fixture.env = codecoder_tools::StandaloneEnv::new(
        codecoder_protocol::AskUserAnswer::Unavailable { reason },
        0,
    );
    let out = fixture.ok("ask_user", json!({ "question": "Which color?" }));
    assert!(out.contains("could not be asked: the client cannot show questions"), "{out}");
    assert!(!out.contains("The user"), "{out}");
}

/// Serves `count` requests on a loopback port with `respond(path) -> (status, content type,
/// body)`; returns the base URL and the server thread.
fn serve(
    count: usize,
    respond: impl Fn(&str) -> (u16, &'static str, Vec<u8>) + Send + 'static,
) -> (String, JoinOnDrop<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let thread = spawn_named("test-http", move || {
        for _ in 0..count {
            let Ok((stream, _)) = listener.accept() else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap() == 0 || header == "\r\n" {
                    break;
                }
            }
            let path = request_line.split_whitespace().nth(1).unwrap_or("/").to_owned();
            let (status, content_type, body) = respond(&path);
            let mut stream = stream;
            let head = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
            let _ = stream.flush();
            // Drain so the client sees a clean close.
            let _ = reader.get_mut().set_nonblocking(true);
            let _ = reader.read(&mut [0u8; 16]);
        }
    })
    .unwrap();
    (url, thread)
}

#[test]
fn web_fetch_converts_html_to_markdown() {
    let (url, _server) = serve(1, |path| {
        assert_eq!(path, "/page");
        let html = "<html><head><title>T</title><style>p{}</style></head><body><h1>Title</h1><p>Some <a href=\"https://example.org/x\">link</a> and <code>code</code>.</p><script>alert(1)</script><ul><li>one</li><li>two</li></ul></body></html>";
        (200, "text/html; charset=utf-8", html.as_bytes().to_vec())
    });
    let fixture = Fixture::new();
    let out = fixture.ok("web_fetch", json!({ "url": format!("{url}/page") }));
    assert!(out.contains("Status: 200"), "{out}");
    assert!(out.contains("# Title"), "{out}");
    assert!(out.contains("[link](https://example.org/x)"), "{out}");
    assert!(out.contains("`code`"), "{out}");
    assert!(out.contains("one") && out.contains("two"), "{out}");
    assert!(!out.contains("alert") && !out.contains("p{}"), "{out}");
}

#[test]
fn web_fetch_caps_size_and_reports_errors() {
    let (url, _server) = serve(3, |path| match path {
        "/big" => (200, "text/plain", vec![b'a'; 100_000]),
        "/missing" => (404, "text/plain", b"no such page".to_vec()),
        _ => (200, "application/octet-stream", vec![0, 1, 2, 3]),
    });
    let fixture = Fixture::new();
    let out = fixture.ok("web_fetch", json!({ "url": format!("{url}/big"), "max_bytes": 1000 }));
    assert!(out.contains("cut at 1000 bytes"), "{out}");
    assert!(out.contains(&"a".repeat(1000)) && !out.contains(&"a".repeat(1001)), "{out}");
    let output = fixture.call("web_fetch", json!({ "url": format!("{url}/missing") })).unwrap();
    assert!(output.is_error);
    assert!(text(&output).contains("Status: 404") && text(&output).contains("no such page"));
    let out = fixture.ok("web_fetch", json!({ "url": format!("{url}/bin") }));
    assert!(out.contains("binary content"), "{out}");
}

#[test]
fn web_fetch_bad_urls() {
    let fixture = Fixture::new();
    let err = fixture.err("web_fetch", json!({ "url": "file:///etc/passwd" }));
    assert!(err.contains("http://"), "{err}");
    let err = fixture.err("web_fetch", json!({ "url": "http://" }));
    assert!(err.contains("no host"), "{err}");
    // Nothing listens on port 1 of loopback.
    let err = fixture.call("web_fetch", json!({ "url": "http://127.0.0.1:1/" })).unwrap_err();
    assert!(matches!(err, ToolError::Failed { .. }), "{err:?}");
    let keys = fixture
        .tool("web_fetch")
        .permission_keys(&json!({ "url": "https://User@Example.com:8080/a?b" }));
    assert_eq!(keys, ["web_fetch:example.com"]);
}

#[test]
fn permission_keys_name_what_a_call_touches() {
    let fixture = Fixture::new();
    let keys = |tool: &str, args: serde_json::Value| fixture.tool(tool).permission_keys(&args);
    assert_eq!(keys("read_file", json!({ "path": "~/.ssh/id_rsa" })), ["read:~/.ssh/id_rsa"]);
    assert_eq!(keys("list_dir", json!({})), ["read:."]);
    assert_eq!(keys("glob", json!({ "pattern": "*.rs", "path": "src" })), ["read:src"]);
    assert_eq!(keys("grep", json!({ "pattern": "x", "path": "/etc" })), ["read:/etc"]);
    assert_eq!(keys("write_file", json!({ "path": "a.txt", "content": "" })), ["edit:a.txt"]);
    assert_eq!(keys("run_command", json!({ "command": "git status" })), ["shell:git status"]);
    assert_eq!(
        keys("edit", json!({ "path": ".mcp.json", "old_string": "a", "new_string": "b" })),
        ["edit:.mcp.json"]
    );
}

#[test]
fn apply_patch_keys_name_every_file_the_parser_writes() {
    let fixture = Fixture::new();
    // Every kind of hunk and a move destination; the parser's leniency (no space after the
    // colon, indented markers, a heredoc wrapper) must not hide a path from the keys.
    let patch = "<<'EOF'\n*** Begin Patch\n*** Add File:.git/hooks/pre-commit\n+echo pwned\n  \
                 *** Delete File: old.txt\n*** Update File: src/a.rs\n*** Move to:.mcp.json\n@@\n\
                 -x\n+y\n*** End Patch\nEOF\n";
    let keys = fixture.tool("apply_patch").permission_keys(&json!({ "input": patch }));
    assert_eq!(
        keys,
        ["edit:.git/hooks/pre-commit", "edit:old.txt", "edit:src/a.rs", "edit:.mcp.json"]
    );
}

#[test]
fn a_patch_that_does_not_parse_is_refused_as_invalid_arguments_with_the_line_to_fix() {
    let fixture = Fixture::new();
    fixture.write("a.txt", "one\n");
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\nnot a patch line\n*** End Patch\n";
    let args = json!({ "input": patch });
    let tool = fixture.tool("apply_patch");
    let message = tool.check(&args).unwrap_err();
    assert!(message.starts_with("the patch does not parse: "), "{message}");
    assert!(message.contains("line 6"), "{message}");
    // The kernel's path and the standalone one refuse it the same way, before anything runs.
    let err = fixture.err("apply_patch", args);
    assert!(err.contains("the patch does not parse"), "{err}");
    assert_eq!(fixture.read("a.txt"), b"one\n");
    assert_eq!(
        tool.check(&json!({ "input": "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch" })),
        Ok(())
    );
}

#[test]
fn exit_plan_mode_approval_leaves_plan_mode_and_gives_the_todo_list() {
    use codecoder_policy::{PermissionMode, PermissionSwitch};
    use codecoder_protocol::AskUserAnswer;
    use codecoder_tools::{StandaloneEnv, exit_plan_mode_builtin, run_checked};

    let plan = "# Plan\n\n1. Read `a.rs`\n2. Fix it\n   - nested detail\n\nDone.";
    let run = |switch: &PermissionSwitch, answer: AskUserAnswer| {
        let tool = exit_plan_mode_builtin(switch.clone());
        let env = StandaloneEnv::new(answer, 64 * 1024);
        let out = run_checked(tool.as_ref(), &env, json!({ "plan": plan })).unwrap();
        text(&out)
    };
    let answer = |text: &str| AskUserAnswer::Answer { text: text.to_owned() };

    // Outside plan mode it is not offered and refuses.
    let switch = PermissionSwitch::new(PermissionMode::Default);
    assert!(!exit_plan_mode_builtin(switch.clone()).offered());
    assert!(run(&switch, answer("Approve")).contains("Plan mode is not on"));

    // Feedback and a decline keep plan mode.
    switch.set(PermissionMode::AcceptEdits);
    switch.set(PermissionMode::Plan);
    assert!(exit_plan_mode_builtin(switch.clone()).offered());
    let out = run(&switch, answer("fewer steps"));
    assert!(out.contains("Their feedback: fewer steps"), "{out}");
    assert!(run(&switch, answer("Keep planning")).contains("Revise it"));
    assert!(run(&switch, AskUserAnswer::Declined).contains("End your turn"));
    assert!(switch.planning());

    // Approval: back to the mode before plan mode, the steps as the todo list.
    let out = run(&switch, answer("Approve"));
    assert_eq!(switch.get(), PermissionMode::AcceptEdits);
    assert!(out.contains("now: acceptEdits"), "{out}");
    assert!(out.contains("[ ] Read `a.rs`\n[ ] Fix it\n[ ] nested detail\n"), "{out}");

    // An edited plan replaces the presented one.
    switch.set(PermissionMode::Plan);
    let out = run(&switch, answer("Approve edited plan:\n- Only this"));
    assert!(out.contains("[ ] Only this\n") && !out.contains("[ ] Fix it"), "{out}");
    assert_eq!(switch.get(), PermissionMode::AcceptEdits);
}

#[test]
fn plan_steps_are_the_list_items_or_the_lines() {
    use codecoder_tools::plan_steps;
    assert_eq!(plan_steps("- a\n* b\n+ c\n10) d\n2. [ ] e\nnot a step"), ["a", "b", "c", "d", "e"]);
    assert_eq!(plan_steps("# Title\nfirst\n\nsecond\n"), ["first", "second"]);
    assert!(plan_steps("").is_empty());
    assert_eq!(plan_steps(&"- x\n".repeat(80)).len(), 50);
}
