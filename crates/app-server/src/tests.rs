//! Unit tests of the message codec, the params errors and the checked-in schema.

use pretty_assertions::assert_eq;
use serde_json::json;

use crate::types::{
    ApprovalDecision, ApprovalResponse, CommandExecutionRequestApprovalParams,
    ItemCompletedNotification, ItemStatus, RequestId, ServerNotification, ServerRequest,
    ThreadItem, ThreadStartParams, TurnStartParams, UserInput,
};
use crate::wire::{
    DecodeError, INVALID_PARAMS, INVALID_REQUEST, Incoming, Outgoing, PARSE_ERROR, RpcError,
    decode, encode, params,
};

#[test]
fn requests_notifications_and_responses_decode_with_or_without_jsonrpc() {
    assert_eq!(
        decode(r#"{"id":1,"method":"thread/start","params":{"cwd":"/tmp"}}"#).unwrap(),
        Incoming::Request {
            id: RequestId::Integer(1),
            method: "thread/start".into(),
            params: json!({"cwd": "/tmp"}),
        }
    );
    assert_eq!(
        decode(r#"{"jsonrpc":"2.0","id":"a","method":"initialize"}"#).unwrap(),
        Incoming::Request {
            id: RequestId::String("a".into()),
            method: "initialize".into(),
            params: serde_json::Value::Null,
        }
    );
    assert_eq!(
        decode(r#"{"method":"initialized"}"#).unwrap(),
        Incoming::Notification { method: "initialized".into(), params: serde_json::Value::Null }
    );
    assert_eq!(
        decode(r#"{"id":7,"result":{"decision":"accept"}}"#).unwrap(),
        Incoming::Response { id: RequestId::Integer(7), result: json!({"decision": "accept"}) }
    );
    assert_eq!(
        decode(r#"{"id":7,"error":{"code":-32601,"message":"no"}}"#).unwrap(),
        Incoming::Error { id: RequestId::Integer(7), error: RpcError::new(-32601, "no") }
    );
}

#[test]
fn malformed_lines_get_the_right_codes_and_never_panic() {
    let code = |line: &str| decode(line).map(|_| 0).unwrap_or_else(|err| err.error.code);
    assert_eq!(code("{not json"), PARSE_ERROR);
    assert_eq!(code(""), PARSE_ERROR);
    assert_eq!(code("[1,2]"), INVALID_REQUEST);
    assert_eq!(code(r#"{"id":1.5,"method":"x"}"#), INVALID_REQUEST);
    assert_eq!(code(r#"{"id":null,"method":"x"}"#), INVALID_REQUEST);
    assert_eq!(code(r#"{"id":1,"method":5}"#), INVALID_REQUEST);
    assert_eq!(code(r#"{"id":1}"#), INVALID_REQUEST);
    assert_eq!(code(r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#), INVALID_REQUEST);
    assert_eq!(code(r#"{"id":1,"error":"bad"}"#), INVALID_REQUEST);
    // The id is kept when it could be read, so the client can match the answer.
    let err: DecodeError = decode(r#"{"id":3,"method":[]}"#).unwrap_err();
    assert_eq!(err.id, Some(RequestId::Integer(3)));
    for line in ["\u{0}", "{\"id\":", "nul", "{\"method\":\"a\",\"params\":[1]}", "\"\\ud800\""] {
        let _ = decode(line);
    }
}

#[test]
fn output_has_no_jsonrpc_field_and_one_line() {
    let line = encode(&Outgoing::Response { id: RequestId::Integer(1), result: json!({}) });
    assert_eq!(line, r#"{"id":1,"result":{}}"#);
    let line = encode(&Outgoing::Error {
        id: None,
        error: RpcError::new(PARSE_ERROR, "parse error: x\ny"),
    });
    // Key order depends on serde_json's preserve_order (on in a build with the ACP SDK).
    assert!(!line.contains('\n'), "{line}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&line).unwrap(),
        json!({"error": {"code": -32700, "message": "parse error: x\ny"}, "id": null})
    );
    let line = encode(&Outgoing::Notification(ServerNotification::ItemCompleted(
        ItemCompletedNotification {
            item: ThreadItem::AgentMessage { id: "item_0".into(), text: "hi".into() },
            thread_id: "t".into(),
            turn_id: "u".into(),
            completed_at_ms: 5,
        },
    )));
    let value: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        value,
        json!({"method": "item/completed", "params": {
            "item": {"type": "agentMessage", "id": "item_0", "text": "hi"},
            "threadId": "t", "turnId": "u", "completedAtMs": 5}})
    );
    let line = encode(&Outgoing::Request {
        id: RequestId::Integer(0),
        request: ServerRequest::CommandExecutionRequestApproval(
            CommandExecutionRequestApprovalParams {
                thread_id: "t".into(),
                turn_id: "u".into(),
                item_id: "item_1".into(),
                started_at_ms: 5,
                reason: None,
                command: Some("ls".into()),
                cwd: None,
            },
        ),
    });
    let value: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(value["method"], "item/commandExecution/requestApproval");
    assert_eq!(value["id"], 0);
    assert_eq!(value["params"]["itemId"], "item_1");
    assert!(value.get("jsonrpc").is_none());
}

#[test]
fn codex_spellings_of_modes_statuses_and_decisions() {
    let start: ThreadStartParams = params(json!({
        "approvalPolicy": "on-request", "sandbox": "workspace-write", "cwd": "/w"
    }))
    .unwrap();
    assert_eq!(serde_json::to_value(&start).unwrap()["approvalPolicy"], "on-request");
    assert_eq!(serde_json::to_value(ItemStatus::InProgress).unwrap(), "inProgress");
    for (text, decision) in [
        ("accept", ApprovalDecision::Accept),
        ("acceptForSession", ApprovalDecision::AcceptForSession),
        ("decline", ApprovalDecision::Decline),
        ("cancel", ApprovalDecision::Cancel),
    ] {
        let response: ApprovalResponse =
            serde_json::from_value(json!({ "decision": text })).unwrap();
        assert_eq!(response.decision, decision);
    }
    let turn: TurnStartParams = params(json!({"threadId": "t", "input": [
        {"type": "text", "text": "hi"}, {"type": "localImage", "path": "a.png"}
    ]}))
    .unwrap();
    assert_eq!(turn.input[1], UserInput::LocalImage { path: "a.png".into() });
}

#[test]
fn bad_params_name_the_field() {
    let message = |value| params::<TurnStartParams>(value).unwrap_err();
    let err = message(json!({"input": []}));
    assert_eq!(err.code, INVALID_PARAMS);
    assert!(err.message.contains("`threadId`"), "{}", err.message);
    let err = message(json!({"threadId": 5, "input": []}));
    assert!(err.message.contains("`threadId`"), "{}", err.message);
    let err = message(json!({"threadId": "t", "input": [{"type": "video"}]}));
    assert!(err.message.contains("`input`"), "{}", err.message);
    let err = params::<ThreadStartParams>(json!({"approvalPolicy": "sometimes"})).unwrap_err();
    assert!(err.message.contains("`approvalPolicy`"), "{}", err.message);
    assert!(err.message.contains("on-request"), "{}", err.message);
    let err = params::<ThreadStartParams>(json!([1])).unwrap_err();
    assert_eq!(err.code, INVALID_PARAMS);
    // No params at all is `{}`.
    assert!(params::<ThreadStartParams>(serde_json::Value::Null).is_ok());
}

/// The checked-in schema must match the types. `UPDATE_EXPECT=1 cargo test -p
/// codecoder-app-server` rewrites it.
#[test]
fn schema_is_up_to_date() {
    let actual = serde_json::to_string_pretty(&codecoder_protocol::sorted_json(
        serde_json::to_value(crate::schema()).unwrap(),
    ))
    .unwrap()
        + "\n";
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/app-server.schema.json");
    if std::env::var_os(codecoder_protocol::env::UPDATE_EXPECT).is_some() {
        fs_err::write(&path, &actual).unwrap();
        return;
    }
    let expected = fs_err::read_to_string(&path).unwrap_or_default();
    assert!(
        expected == actual,
        "{} is stale: run `UPDATE_EXPECT=1 cargo test -p codecoder-app-server` and commit it",
        path.display()
    );
    let schema: serde_json::Value = serde_json::from_str(&actual).unwrap();
    let methods: Vec<&str> = schema["$defs"]["ClientRequest"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|variant| variant["properties"]["method"]["const"].as_str().unwrap())
        .collect();
    assert_eq!(methods, crate::types::CLIENT_METHODS);
}

#[test]
fn questions_are_spelled_as_codex_and_answers_read_back() {
    use codecoder_protocol::AskUserAnswer;

    use crate::types::{ToolRequestUserInputParams, ToolRequestUserInputQuestion};
    let request = ServerRequest::ToolRequestUserInput(ToolRequestUserInputParams {
        thread_id: "t".into(),
        turn_id: "u".into(),
        item_id: "item_2".into(),
        questions: vec![ToolRequestUserInputQuestion {
            id: "q".into(),
            header: "Question".into(),
            question: "Why?".into(),
            is_other: false,
            is_secret: false,
            options: None,
        }],
        is_blocking: true,
        auto_resolution_ms: None,
    });
    assert_eq!(
        serde_json::to_value(&request).unwrap(),
        json!({"method": "item/tool/requestUserInput", "params": {
            "threadId": "t", "turnId": "u", "itemId": "item_2", "isBlocking": true,
            "questions": [{"id": "q", "header": "Question", "question": "Why?",
                "isOther": false, "isSecret": false, "options": null}]
        }})
    );

    let answer = |result: serde_json::Value| crate::server::question_answer(Some(result), "q");
    let text = |text: &str| AskUserAnswer::Answer { text: text.to_owned() };
    assert_eq!(answer(json!({"answers": {"q": {"answers": ["blue"]}}})), text("blue"));
    assert_eq!(
        answer(json!({"answers": {"q": {"answers": [" blue ", "", "teal"]}}})),
        text("blue\nteal")
    );
    for declined in [
        json!({"answers": {}}),
        json!({"answers": {"other": {"answers": ["blue"]}}}),
        json!({"answers": {"q": {"answers": ["  "]}}}),
        json!({"answers": {"q": "blue"}}),
        json!({"decision": "accept"}),
        json!(null),
    ] {
        assert_eq!(answer(declined.clone()), AskUserAnswer::Declined, "{declined}");
    }
    assert_eq!(crate::server::question_answer(None, "q"), AskUserAnswer::Declined);
}

/// `thread/start` and `turn/start` exactly as codex 0.163's TUI sends them (`codex --remote`):
/// the fields this server does not take are ignored, nulls are absent values, and a sandbox
/// policy object's other fields (`writableRoots`, `networkAccess`) are accepted.
#[test]
fn codex_tuis_thread_and_turn_starts_are_read() {
    let thread: ThreadStartParams = params(json!({
        "model": null, "modelProvider": null, "cwd": null, "runtimeWorkspaceRoots": null,
        "approvalPolicy": "on-request", "approvalsReviewer": "user", "sandbox": "read-only",
        "permissions": null, "config": {}, "serviceName": null, "baseInstructions": null,
        "developerInstructions": null, "personality": null, "multiAgentMode": null,
        "ephemeral": false, "historyMode": "paginated", "sessionStartSource": null,
        "threadSource": "user", "projectId": null, "daybreakEnabled": null, "environments": null,
        "dynamicTools": [{"type": "namespace", "name": "codex_tui"}]
    }))
    .unwrap();
    assert_eq!(thread.sandbox, Some(crate::types::SandboxMode::ReadOnly));
    assert_eq!(thread.approval_policy, Some(crate::types::AskForApproval::OnRequest));
    assert_eq!(thread.cwd, None);
    let turn: TurnStartParams = params(json!({
        "threadId": "t", "disabledPluginIds": null, "clientUserMessageId": "u",
        "input": [{"type": "text", "text": "hello there", "text_elements": []}],
        "turnTrigger": "user", "parentTurnId": null, "rootTurnId": null, "toolOutput": null,
        "responsesapiClientMetadata": null, "additionalContext": null, "environments": null,
        "cwd": "/w", "runtimeWorkspaceRoots": [], "approvalPolicy": "on-request",
        "approvalsReviewer": "user",
        "sandboxPolicy": {"type": "workspaceWrite", "writableRoots": ["/w"], "networkAccess": false},
        "permissions": null, "model": "gpt-5", "serviceTier": "default", "serviceTierForTurn": null,
        "effort": "high", "summary": null, "personality": null, "outputSchema": null,
        "collaborationMode": null, "multiAgentMode": null, "cyberAccessProgram": null
    }))
    .unwrap();
    assert_eq!(turn.input, [UserInput::Text { text: "hello there".into() }]);
    assert_eq!(turn.sandbox_policy, Some(crate::types::SandboxPolicy::WorkspaceWrite));
    assert_eq!(turn.model.as_deref(), Some("gpt-5"));
    assert_eq!(turn.effort.as_deref(), Some("high"));
    assert_eq!(turn.cwd.as_deref(), Some("/w"));
    // A policy this server has no such sandbox for is refused, naming the field.
    let err = params::<TurnStartParams>(json!({
        "threadId": "t", "input": [], "sandboxPolicy": {"type": "externalSandbox"}
    }))
    .unwrap_err();
    assert_eq!(err.code, INVALID_PARAMS);
    assert!(err.message.contains("sandboxPolicy"), "{}", err.message);
}
