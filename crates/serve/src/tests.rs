//! Unit tests of the request reader and the guard's decisions.

use std::io::BufReader;

use crate::guard::{Access, Guard, same};
use crate::http::{Request, loggable_target, percent_decode, read_request};

const TOKEN: &str = "t0k3n";
const COOKIE: &str = "c00k1e";

fn guard() -> Guard {
    Guard::new(
        TOKEN.to_owned(),
        COOKIE.to_owned(),
        4000,
        vec!["127.0.0.1:4000".to_owned(), "localhost:4000".to_owned()],
    )
}

fn parse(raw: &str) -> Request {
    read_request(&mut BufReader::new(raw.as_bytes())).unwrap()
}

fn status(access: &Access) -> u16 {
    match access {
        Access::Allowed => 0,
        Access::Exchange(response) | Access::Refused(response) => response.status,
    }
}

#[test]
fn reads_a_request_with_its_body_and_query() {
    let request =
        parse("POST /api/sessions?q=a%20b&x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}");
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/api/sessions");
    assert_eq!(request.query_param("q").as_deref(), Some("a b"));
    assert_eq!(request.header("host"), Some("h"));
    assert_eq!(request.body, b"{}");
}

#[test]
fn percent_decoding_keeps_bad_escapes() {
    assert_eq!(percent_decode("a%2Fb+c%zz%"), "a/b c%zz%");
}

#[test]
fn the_log_never_holds_the_token() {
    assert_eq!(loggable_target("/", "token=secret&x=1"), "/?token=REDACTED&x=1");
    assert_eq!(loggable_target("/api", ""), "/api");
}

#[test]
fn a_foreign_host_is_refused_before_anything_else() {
    let request = parse(&format!(
        "GET / HTTP/1.1\r\nHost: evil.example:4000\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
    ));
    assert_eq!(status(&guard().check(&request)), 403);
}

#[test]
fn no_token_and_a_wrong_token_are_refused() {
    let none = parse("GET /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:4000\r\n\r\n");
    assert_eq!(status(&guard().check(&none)), 401);
    let wrong = parse("GET /?token=nope HTTP/1.1\r\nHost: 127.0.0.1:4000\r\n\r\n");
    assert_eq!(status(&guard().check(&wrong)), 401);
    let wrong_bearer = parse(
        "GET /api/sessions HTTP/1.1\r\nHost: localhost:4000\r\nAuthorization: Bearer nope\r\n\r\n",
    );
    assert_eq!(status(&guard().check(&wrong_bearer)), 401);
}

#[test]
fn the_token_is_exchanged_for_a_strict_cookie_which_then_works() {
    let request = parse(&format!("GET /?token={TOKEN} HTTP/1.1\r\nHost: 127.0.0.1:4000\r\n\r\n"));
    let Access::Exchange(response) = guard().check(&request) else { panic!("not exchanged") };
    assert_eq!(response.status, 303);
    let cookie = &response.headers.iter().find(|(name, _)| *name == "Set-Cookie").unwrap().1;
    assert_eq!(
        cookie,
        &format!("codecoder_session_4000={COOKIE}; HttpOnly; SameSite=Strict; Path=/")
    );
    let with_cookie = parse(&format!(
        "GET /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:4000\r\nCookie: a=b; codecoder_session_4000={COOKIE}\r\n\r\n"
    ));
    assert!(matches!(guard().check(&with_cookie), Access::Allowed));
    let again = parse(&format!(
        "GET /?token={TOKEN} HTTP/1.1\r\nHost: 127.0.0.1:4000\r\nCookie: codecoder_session_4000={COOKIE}\r\n\r\n"
    ));
    assert_eq!(status(&guard().check(&again)), 303, "the address bar drops the token every time");
    let token_as_cookie = parse(&format!(
        "GET /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:4000\r\nCookie: codecoder_session_4000={TOKEN}\r\n\r\n"
    ));
    assert_eq!(status(&guard().check(&token_as_cookie)), 401);
}

#[test]
fn a_cross_origin_mutation_or_upgrade_is_refused_and_the_own_origin_is_not() {
    let post = |origin: &str| {
        parse(&format!(
            "POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:4000\r\nOrigin: {origin}\r\n\
             Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n"
        ))
    };
    assert_eq!(status(&guard().check(&post("http://evil.example"))), 403);
    assert_eq!(status(&guard().check(&post("http://127.0.0.1:4001"))), 403);
    assert!(matches!(guard().check(&post("http://localhost:4000")), Access::Allowed));
    let upgrade = parse(&format!(
        "GET /api/sessions/x/events HTTP/1.1\r\nHost: 127.0.0.1:4000\r\nUpgrade: websocket\r\n\
         Origin: http://evil.example\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
    ));
    assert_eq!(status(&guard().check(&upgrade)), 403);
}

#[test]
fn mutations_take_json_only() {
    let post = |content_type: &str| {
        parse(&format!(
            "POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:4000\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: {content_type}\r\nContent-Length: 0\r\n\r\n"
        ))
    };
    assert_eq!(status(&guard().check(&post("text/plain"))), 415);
    assert_eq!(status(&guard().check(&post("application/x-www-form-urlencoded"))), 415);
    assert!(matches!(guard().check(&post("application/json; charset=utf-8")), Access::Allowed));
}

#[test]
fn secrets_compare_equal_only_when_equal() {
    assert!(same("abc", "abc"));
    assert!(!same("abd", "abc"));
    assert!(!same("ab", "abc"));
}

/// The checked-in `api-schema.json` is what the types generate (regenerate with
/// `CODECODER_UPDATE_SCHEMA=1 cargo test -p codecoder-serve schema`).
#[test]
fn the_api_schema_file_is_up_to_date() {
    use codecoder_protocol::env;
    let actual = serde_json::to_string_pretty(&crate::types::schema()).unwrap() + "\n";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("api-schema.json");
    if std::env::var_os(env::UPDATE_SCHEMA).is_some()
        || std::env::var_os(env::UPDATE_EXPECT).is_some()
    {
        fs_err::write(&path, &actual).unwrap();
        return;
    }
    let expected = fs_err::read_to_string(&path).unwrap_or_default();
    assert!(
        expected == actual,
        "{} is stale: run `CODECODER_UPDATE_SCHEMA=1 cargo test -p codecoder-serve schema` and commit it",
        path.display()
    );
}

#[test]
fn the_schema_names_every_route_with_its_shapes() {
    let schema = crate::types::schema();
    let routes = schema["routes"].as_array().unwrap();
    let find = |method: &str, path: &str| {
        routes
            .iter()
            .find(|r| r["method"] == method && r["path"] == path)
            .unwrap_or_else(|| panic!("{method} {path} missing"))
    };
    assert_eq!(
        find("POST", "/api/sessions/{id}/rewind")["request"]["$ref"],
        "#/definitions/RewindBody"
    );
    assert_eq!(find("GET", "/api/projects")["response"]["$ref"], "#/definitions/Projects");
    let definitions = schema["definitions"].as_object().unwrap();
    let start = &definitions["StartBody"]["properties"];
    for field in ["cwd", "prompt", "resume", "fork", "model", "effort", "permissionMode"] {
        assert!(start.get(field).is_some(), "StartBody lacks {field}: {start:#}");
    }
    let item = &definitions["StreamItem"]["properties"];
    for field in ["seq", "sessionId", "event", "approvalResolved", "questionResolved", "gap"] {
        assert!(item.get(field).is_some(), "StreamItem lacks {field}: {item:#}");
    }
}

/// One value of every `AgentEventKind` variant (every `AgentStatus` too), as the runtime sends
/// them; the requests carry what a real approval and question carry.
fn every_event_kind() -> Vec<codecoder_protocol::AgentEventKind> {
    use codecoder_protocol::view::{CallKind, CallView, ChangeKind, FileChange, TextEdit};
    use codecoder_protocol::{
        AgentEventKind as K, AgentStatus, ApprovalRequest, AskUserRequest, OutputStream, RequestId,
        StepId, ToolCall, ToolCallId, ToolError, ToolResult, ToolResultStatus, TurnId, TurnOutcome,
        Usage, UserInput,
    };
    let (turn, step) = (TurnId::FIRST, StepId::FIRST);
    let call_id = ToolCallId::new("call_1");
    let call = ToolCall {
        id: call_id.clone(),
        name: "apply_patch".to_owned(),
        args: serde_json::json!({ "patch": "*** Begin Patch\n…" }),
    };
    let view = CallView {
        kind: CallKind::Edit,
        title: "Edit src/lib.rs".to_owned(),
        detail: "src/lib.rs".to_owned(),
        paths: vec!["src/lib.rs".to_owned()],
        changes: vec![FileChange {
            path: "src/lib.rs".to_owned(),
            kind: ChangeKind::Update { move_to: Some("src/main.rs".to_owned()) },
            diff: "@@\n-a\n+b\n".to_owned(),
            header: "*** Update File: src/lib.rs\n".to_owned(),
            edits: vec![TextEdit { old: Some("a".to_owned()), new: "b".to_owned() }],
        }],
        ..CallView::default()
    };
    let run = CallView {
        kind: CallKind::Execute,
        title: "Run `cargo test`".to_owned(),
        detail: "$ cargo test".to_owned(),
        command: Some("cargo test".to_owned()),
        ..CallView::default()
    };
    let done = ToolResult::text(call_id.clone(), ToolResultStatus::Success, "Done.");
    let mut kinds = vec![
        K::TurnStarted { turn },
        K::StepStarted { turn, step },
        K::TextDelta { turn, step, delta: "Hel".to_owned() },
        K::ReasoningDelta { turn, step, delta: "Think".to_owned() },
        K::ToolStarted { turn, step, call: call.clone(), view: view.clone() },
        K::AgentMessage { turn, step, text: "Hello".to_owned() },
        K::CallProgress {
            turn,
            step,
            call_id: call_id.clone(),
            name: "apply_patch".to_owned(),
            view: view.clone(),
        },
        K::ToolOutputDelta {
            call_id: call_id.clone(),
            stream: OutputStream::Stderr,
            chunk: "x".into(),
        },
        K::ToolFinished {
            turn,
            step,
            call_id: call_id.clone(),
            call: call.clone(),
            view: view.clone(),
            result: Ok(done),
            mcp_result: Some(serde_json::json!({ "content": [] })),
        },
        K::ToolFinished {
            turn,
            step,
            call_id: call_id.clone(),
            call: call.clone(),
            view: run.clone(),
            result: Err(ToolError::TimedOut { limit_ms: 1000 }),
            mcp_result: None,
        },
        K::StepRetried { turn, step, reason: "stream broke".to_owned() },
        K::Compacted {
            turn,
            trigger: "auto".to_owned(),
            summarized: true,
            tokens_before: 100,
            tokens_after: 10,
            message: "compacted".to_owned(),
        },
        K::StepFinished { turn, step, usage: Usage::default(), text: "Hello".to_owned() },
        K::ApprovalRequest(ApprovalRequest {
            id: RequestId::new(),
            turn,
            step,
            call: call.clone(),
            view: run,
            summary: "Run `cargo test`".to_owned(),
            permission_keys: vec!["shell:cargo test".to_owned()],
            reason: Some("ask — the default for commands".to_owned()),
            reply: codecoder_protocol::Reply::default(),
        }),
        K::AskUser(AskUserRequest {
            id: RequestId::new(),
            call_id,
            question: "Which one?".to_owned(),
            options: vec!["a".to_owned(), "b".to_owned()],
            reply: codecoder_protocol::Reply::default(),
        }),
        K::Usage { turn, turn_total: Usage::default() },
        K::Warning { message: "careful".to_owned() },
        K::HookMessage { event: "Stop".to_owned(), message: "stopped".to_owned() },
        K::TurnDone {
            turn,
            cancelled: false,
            outcome: TurnOutcome::Completed,
            usage: Usage::default(),
        },
        K::TurnDone {
            turn,
            cancelled: false,
            outcome: TurnOutcome::Failed { message: "no".to_owned() },
            usage: Usage::default(),
        },
        K::ShutdownComplete,
        K::UserPrompt { input: UserInput::text("hi"), steer: true },
    ];
    for status in [
        AgentStatus::Idle,
        AgentStatus::Thinking,
        AgentStatus::RunningTools,
        AgentStatus::WaitingForUser,
    ] {
        kinds.push(K::Status(status));
    }
    kinds
}

/// The names an object schema allows and the ones it requires, following `allOf` references
/// and taking what each `oneOf` branch would add (enough for the flat shapes of events).
fn object_keys(
    schema: &serde_json::Value,
    definitions: &serde_json::Map<String, serde_json::Value>,
) -> (std::collections::BTreeSet<String>, std::collections::BTreeSet<String>) {
    let mut allowed = std::collections::BTreeSet::new();
    let mut required = std::collections::BTreeSet::new();
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.trim_start_matches("#/definitions/");
        return object_keys(&definitions[name], definitions);
    }
    if let Some(properties) = schema["properties"].as_object() {
        allowed.extend(properties.keys().cloned());
    }
    if let Some(names) = schema["required"].as_array() {
        required.extend(names.iter().filter_map(|n| n.as_str()).map(str::to_owned));
    }
    for part in schema["allOf"].as_array().into_iter().flatten() {
        let (a, r) = object_keys(part, definitions);
        allowed.extend(a);
        required.extend(r);
    }
    for branch in schema["oneOf"].as_array().into_iter().flatten() {
        allowed.extend(object_keys(branch, definitions).0);
    }
    allowed.extend(required.iter().cloned());
    (allowed, required)
}

/// The stream's and the history's `event` is the runtime's `AgentEvent` in the schema, and
/// its `kind` names every variant's `type` with the keys the serialized variant has.
#[test]
fn the_schema_describes_every_agent_event_kind_as_sent() {
    use codecoder_protocol::{AgentEvent, EventSource, SessionId, ToolCallId};
    let schema = crate::types::schema();
    let definitions = schema["definitions"].as_object().unwrap();
    let event_ref = |property: &serde_json::Value| {
        property["anyOf"][0]["$ref"]
            .as_str()
            .map(str::to_owned)
            .or_else(|| property["allOf"][0]["$ref"].as_str().map(str::to_owned))
    };
    let stream_event = &definitions["StreamItem"]["properties"]["event"];
    assert_eq!(event_ref(stream_event).as_deref(), Some("#/definitions/AgentEvent"));
    let history_event = &definitions["HistoryItem"]["properties"]["event"];
    assert_eq!(event_ref(history_event).as_deref(), Some("#/definitions/AgentEvent"));
    let user = &definitions["UserItem"]["properties"]["input"];
    assert_eq!(event_ref(user).as_deref(), Some("#/definitions/UserInput"));

    let variants = definitions["AgentEventKind"]["oneOf"].as_array().unwrap();
    let schema_tags: std::collections::BTreeSet<&str> = variants
        .iter()
        .map(|v| v.pointer("/properties/type/const").and_then(|t| t.as_str()).unwrap())
        .collect();
    let mut sent_tags = std::collections::BTreeSet::new();
    for kind in every_event_kind() {
        let source = EventSource {
            session_id: SessionId::new(),
            subagent_path: vec![ToolCallId::new("call_agent")],
        };
        let event = serde_json::to_value(AgentEvent { source, kind }).unwrap();
        let (allowed, required) = object_keys(&definitions["AgentEvent"], definitions);
        let keys: std::collections::BTreeSet<String> =
            event.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, allowed, "{event:#}");
        assert!(required.is_subset(&keys), "{event:#}");
        let source = event["source"].as_object().unwrap();
        let (allowed, _) = object_keys(&definitions["EventSource"], definitions);
        assert!(source.keys().all(|k| allowed.contains(k)), "{event:#}");

        let kind = event["kind"].as_object().unwrap();
        let tag = kind["type"].as_str().unwrap().to_owned();
        let variant = variants
            .iter()
            .find(|v| v.pointer("/properties/type/const").and_then(|t| t.as_str()) == Some(&tag))
            .unwrap_or_else(|| panic!("the schema has no `{tag}` kind"));
        let (allowed, required) = object_keys(variant, definitions);
        for key in kind.keys() {
            assert!(allowed.contains(key), "`{tag}`'s schema lacks `{key}`: {variant:#}");
        }
        for key in &required {
            assert!(kind.contains_key(key), "`{tag}` as sent lacks required `{key}`: {event:#}");
        }
        if tag == "status" {
            // The status is a key holding null beside the tag.
            let status = kind.keys().find(|key| *key != "type").unwrap();
            let branch = variant["oneOf"]
                .as_array()
                .unwrap()
                .iter()
                .find(|branch| branch["properties"].get(status).is_some())
                .unwrap();
            assert_eq!(branch["properties"][status]["type"], "null", "{variant:#}");
        }
        sent_tags.insert(tag);
    }
    let sent_tags: std::collections::BTreeSet<&str> =
        sent_tags.iter().map(String::as_str).collect();
    assert_eq!(schema_tags, sent_tags, "every kind has a sample here, and the schema names each");
}
