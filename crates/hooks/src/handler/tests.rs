//! Tests of the handler types' parsing, answers and substitution.

use serde_json::json;

use super::*;

#[test]
fn a_prompt_answer_blocks_only_on_ok_false_and_finds_json_in_prose() {
    assert_eq!(verdict(r#"{"ok": true}"#, "h"), Answer::Text(String::new()));
    assert_eq!(
        verdict("Sure.\n```json\n{\"ok\": false, \"reason\": \"tests fail\"}\n```", "h"),
        Answer::Blocked("tests fail".to_owned())
    );
    assert!(
        matches!(verdict("no idea", "h"), Answer::Failed(message) if message.contains("no idea"))
    );
    assert!(
        matches!(verdict(r#"{"ok": false}"#, "h"), Answer::Blocked(message) if message.contains("without a reason"))
    );
}

#[test]
fn mcp_tool_input_takes_values_from_the_event() {
    let event = json!({"tool_input": {"file_path": "/p/a.rs", "limit": 3}, "tool_name": "Read"});
    let template = json!({"path": "${tool_input.file_path}", "n": "${tool_input.limit}",
        "note": "${tool_name} of ${tool_input.file_path}${missing}", "list": ["${tool_name}"]});
    assert_eq!(
        substitute(&template, &event),
        json!({"path": "/p/a.rs", "n": 3, "note": "Read of /p/a.rs", "list": ["Read"]})
    );
}

#[test]
fn a_service_hook_without_services_fails_without_blocking() {
    let kind = Kind::Prompt { prompt: "check $ARGUMENTS".to_owned(), model: None };
    let answer = run(&kind, b"{}", Duration::from_secs(1), "h", &Reachable::default());
    assert!(matches!(answer, Answer::Failed(message) if message.contains("no model")));
}

struct Echo;

impl HookServices for Echo {
    fn prompt(&self, request: &HookPrompt) -> std::result::Result<String, String> {
        if request.prompt.contains("\"rm") {
            return Ok(r#"{"ok": false, "reason": "no rm"}"#.to_owned());
        }
        Ok(r#"{"ok": true}"#.to_owned())
    }

    fn agent(&self, request: &HookPrompt) -> std::result::Result<String, String> {
        Err(format!("agent asked with model {:?}", request.model))
    }

    fn mcp_tool(
        &self,
        server: &str,
        tool: &str,
        input: &Value,
        _timeout: Duration,
    ) -> std::result::Result<String, String> {
        Ok(json!({"systemMessage": format!("{server}/{tool} saw {}", input["path"])}).to_string())
    }
}

#[test]
fn services_answer_prompt_agent_and_mcp_tool_hooks() {
    let reach = Reachable { services: Some(Arc::new(Echo)), allowed_hosts: Arc::new([]) };
    let prompt = Kind::Prompt { prompt: "is $ARGUMENTS safe?".to_owned(), model: None };
    let input = br#"{"tool_input":{"command":"rm -rf /"}}"#;
    let timeout = Duration::from_secs(1);
    assert_eq!(run(&prompt, input, timeout, "h", &reach), Answer::Blocked("no rm".to_owned()));
    assert_eq!(run(&prompt, b"{}", timeout, "h", &reach), Answer::Text(String::new()));
    let agent = Kind::Agent { prompt: "x".to_owned(), model: Some("haiku".to_owned()) };
    assert!(matches!(run(&agent, b"{}", timeout, "h", &reach),
        Answer::Failed(message) if message.contains("Some(\"haiku\")")));
    let mcp = Kind::McpTool {
        server: "scan".to_owned(),
        tool: "check".to_owned(),
        input: json!({"path": "${tool_input.command}"}),
    };
    let Answer::Json(json) = run(&mcp, input, timeout, "h", &reach) else { panic!("not JSON") };
    assert_eq!(json["systemMessage"], json!("scan/check saw \"rm -rf /\""));
}

#[test]
fn parsing_checks_each_type_s_fields() {
    let parse_one = |handler: Value| {
        let Value::Object(map) = handler else { unreachable!() };
        let kind = map["type"].as_str().unwrap().to_owned();
        let mut warnings = Vec::new();
        let parsed = parse(&kind, &map, Path::new("s.json"), "h", &mut warnings);
        (parsed, warnings)
    };
    let (parsed, warnings) = parse_one(json!({"type": "http", "url": "http://127.0.0.1:9/x",
        "headers": {"A": "$T"}, "allowedEnvVars": ["T"], "timeout": 5}));
    let (label, kind, timeout) = parsed.unwrap().unwrap();
    assert_eq!((label.as_str(), timeout), ("POST http://127.0.0.1:9/x", SHORT_TIMEOUT));
    assert!(matches!(kind, Kind::Http(_)));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(parse_one(json!({"type": "http", "url": "ftp://x"})).0.is_err());
    assert!(parse_one(json!({"type": "prompt"})).0.is_err());
    assert!(
        parse_one(json!({"type": "mcp_tool", "server": "s", "tool": "t", "input": 3})).0.is_err()
    );
    let (parsed, warnings) = parse_one(json!({"type": "agent", "prompt": "p", "colour": 1}));
    assert_eq!(parsed.unwrap().unwrap().2, LONG_TIMEOUT);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let (parsed, _) =
        parse_one(json!({"type": "mcp_tool", "server": "s", "tool": "t", "input": {"a": 1}}));
    assert_eq!(parsed.unwrap().unwrap().0, r#"mcp_tool s/t {"a":1}"#);
    let (parsed, warnings) = parse_one(json!({"type": "telepathy"}));
    assert!(parsed.unwrap().is_none());
    assert!(warnings[0].contains("telepathy"), "{warnings:?}");
}

/// A runner for the hooks `settings` (Claude Code's `hooks` table) in `dir`.
fn runner(dir: &Path, hooks: Value) -> crate::HookRunner {
    let mut set = crate::HookSet::empty(dir.to_owned());
    let mut warnings = Vec::new();
    set.add_settings(&json!({ "hooks": hooks }), Path::new("settings.json"), &mut warnings)
        .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let common = crate::CommonInput {
        session_id: "s".to_owned(),
        transcript_path: dir.join("t.jsonl"),
        cwd: dir.to_owned(),
        permission_mode: "default".to_owned(),
    };
    crate::HookRunner::new(Arc::new(set), common)
}

/// Serves one HTTP request on loopback with `reply` as a JSON body and returns the URL and
/// the request as read (head and body).
fn one_request(reply: &'static str) -> (String, codecoder_stdx::JoinOnDrop<(String, String)>) {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let thread = codecoder_stdx::spawn_named("http-hook-server", move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut head = String::new();
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
            head.push_str(&line);
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let mut stream = stream;
        write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
            reply.len()
        )
        .unwrap();
        (head, String::from_utf8(body).unwrap())
    })
    .unwrap();
    (url, thread)
}

#[test]
fn an_http_hook_posts_the_input_and_its_reply_denies_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let (url, server) = one_request(
        r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"the server says no"}}"#,
    );
    let runner = runner(
        dir.path(),
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "http", "url": url,
            "headers": {"X-Home": "home=$HOME", "X-Path": "path=${PATH}"},
            "allowedEnvVars": ["HOME"]}]}]}),
    );
    let outcome = runner.pre_tool_use("run_command", &json!({"command": "ls"}), "c1");
    let verdict = outcome.verdict.unwrap();
    assert_eq!(verdict.decision, codecoder_protocol::Verdict::Deny);
    assert_eq!(verdict.reason.as_deref(), Some("the server says no"));
    let (head, body) = server.join().unwrap();
    let head = head.to_ascii_lowercase();
    let home = std::env::var("HOME").unwrap_or_default().to_ascii_lowercase();
    assert!(head.contains(&format!("x-home: home={home}\r\n")), "{head}");
    assert!(head.contains("x-path: path=\r\n"), "a variable not allowed is empty: {head}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["hook_event_name"], json!("PreToolUse"));
    assert_eq!(body["tool_name"], json!("Bash"));
    assert_eq!(body["tool_input"]["command"], json!("ls"));
}

#[test]
fn an_http_hook_to_another_host_does_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let runner = runner(
        dir.path(),
        json!({"UserPromptSubmit": [{"hooks": [{"type": "http", "url": "http://example.com/x"}]}]}),
    );
    let outcome = runner.user_prompt_submit("hi");
    assert_eq!(outcome.blocked, None);
    assert!(outcome.report.errors[0].contains("not a loopback host"), "{:?}", outcome.report);
}

#[test]
fn the_exec_form_passes_arguments_without_a_shell() {
    let dir = tempfile::tempdir().unwrap();
    let runner = runner(
        dir.path(),
        json!({"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "printf",
            "args": ["{\"systemMessage\": \"%s\"}", "$HOME; echo not run"]}]}]}),
    );
    let outcome = runner.user_prompt_submit("hi");
    assert_eq!(outcome.report.messages, ["$HOME; echo not run"], "{:?}", outcome.report);
}

#[test]
fn a_once_hook_runs_the_first_time_only() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs");
    let command = format!("echo run >> '{}'", log.display());
    let runner = runner(
        dir.path(),
        json!({"UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": command, "once": true},
            {"type": "command", "command": format!("echo always >> '{}'", log.display())}]}]}),
    );
    runner.user_prompt_submit("one");
    runner.clone().user_prompt_submit("two");
    let mut lines: Vec<String> =
        fs_err::read_to_string(&log).unwrap().lines().map(str::to_owned).collect();
    lines.sort();
    assert_eq!(lines, ["always", "always", "run"]);
}

#[test]
fn an_async_hook_does_not_hold_the_call_and_its_context_joins_a_later_event() {
    let dir = tempfile::tempdir().unwrap();
    let output = r#"{"decision": "block", "reason": "too late", "systemMessage": "scan done", "hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "scan found 0 issues"}}"#;
    let runner = runner(
        dir.path(),
        json!({"PreToolUse": [{"hooks": [{"type": "command", "async": true,
            "command": format!("cat > /dev/null; echo '{output}'")}]}]}),
    );
    let first = runner.pre_tool_use("run_command", &json!({"command": "ls"}), "c1");
    assert_eq!(first, codecoder_kernel::PreToolUse::default(), "an async hook decides nothing");
    // The hook's answer comes with the first event after it finished; an event without hooks
    // of its own carries it too.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let joined = loop {
        let outcome = runner.user_prompt_submit("next");
        if !outcome.report.messages.is_empty() {
            break outcome;
        }
        assert!(std::time::Instant::now() < deadline, "the async hook never answered");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(joined.blocked, None, "an async hook cannot block");
    assert_eq!(joined.report.messages, ["scan done"]);
    assert_eq!(joined.context, ["scan found 0 issues"]);
    assert_eq!(runner.user_prompt_submit("again"), codecoder_kernel::PromptSubmit::default());
}
