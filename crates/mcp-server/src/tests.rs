//! Unit tests: argument parsing and the result shape.

use serde_json::{Map, Value, json};

use crate::params::{Invalid, parse_reply, parse_start};

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => panic!("not an object"),
    }
}

#[test]
fn start_arguments_take_codex_names() {
    let params = parse_start(&args(json!({
        "prompt": "fix it",
        "model": "gpt-5",
        "profile": "fast",
        "cwd": "sub",
        "approval-policy": "on-request",
        "sandbox": "read-only",
        "config": {"agent.max_steps_per_turn": 5, "model_reasoning_effort": "low", "x.list": [1, 2]}
    })))
    .unwrap();
    assert_eq!(params.prompt, "fix it");
    assert_eq!(params.approval_policy, Some(codecoder_app::ApprovalMode::OnRequest));
    assert_eq!(params.sandbox, Some(codecoder_app::SandboxMode::ReadOnly));
    assert_eq!(
        params.config,
        vec!["agent.max_steps_per_turn=5", "model_reasoning_effort=\"low\"", "x.list=[1, 2]"]
    );
}

#[test]
fn bad_arguments_name_their_field() {
    let err = |value: Value| parse_start(&args(value)).unwrap_err();
    assert_eq!(err(json!({})), Invalid("prompt: missing".to_owned()));
    assert_eq!(err(json!({"prompt": "  "})), Invalid("prompt: empty".to_owned()));
    assert!(
        err(json!({"prompt": 3})).0.starts_with("prompt: invalid type"),
        "{:?}",
        err(json!({"prompt": 3}))
    );
    let policy = err(json!({"prompt": "x", "approval-policy": "sometimes"}));
    assert!(policy.0.starts_with("approval-policy: "), "{policy:?}");
    let unknown = err(json!({"prompt": "x", "approval_policy": "never"}));
    assert!(unknown.0.starts_with("approval_policy: unknown argument"), "{unknown:?}");
    assert!(err(json!({"prompt": "x", "config": "a=1"})).0.starts_with("config: "));
    assert!(err(json!({"prompt": "x", "config": {"a": null}})).0.starts_with("config.a: "));
}

#[test]
fn reply_takes_thread_or_session_id() {
    let reply = parse_reply(&args(json!({"threadId": "abc", "prompt": "more"}))).unwrap();
    assert_eq!((reply.session.as_str(), reply.prompt.as_str()), ("abc", "more"));
    let reply = parse_reply(&args(json!({"sessionId": "abc", "prompt": "more"}))).unwrap();
    assert_eq!(reply.session, "abc");
    let both = parse_reply(&args(json!({"threadId": "abc", "sessionId": "abd", "prompt": "x"})));
    assert!(both.unwrap_err().0.starts_with("sessionId: "));
    let missing = parse_reply(&args(json!({"prompt": "x"}))).unwrap_err();
    assert_eq!(missing.0, "threadId: missing (the session to continue)");
}

/// The server in process, over an in-memory pipe, with rmcp's own client: the tool list and an
/// invalid call, which need no session.
#[test]
fn an_rmcp_client_lists_the_tools_and_gets_invalid_params() {
    use rmcp::ServiceExt as _;
    use rmcp::model::{CallToolRequestParams, ErrorCode};

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        let server = crate::server::Server::new(crate::Config {
            overrides: codecoder_app::Overrides::default(),
            version: "0.0.0-test".to_owned(),
        });
        let serving = tokio::spawn(async move {
            let service = server.serve(tokio::io::split(server_io)).await.unwrap();
            service.waiting().await.unwrap();
        });
        let client = ().serve(tokio::io::split(client_io)).await.unwrap();
        let info = client.peer_info().unwrap();
        let implementation = info.server_info.as_ref().unwrap();
        assert_eq!(implementation.name, "codecoder");
        assert_eq!(implementation.version, "0.0.0-test");
        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ["codecoder", "codecoder-reply"]);
        assert!(tools.iter().all(|t| t.output_schema.is_some()));

        let call = CallToolRequestParams::new("codecoder")
            .with_arguments(args(json!({"prompt": "x", "sandbox": "everywhere"})));
        let err = client.call_tool(call).await.unwrap_err();
        let rmcp::ServiceError::McpError(data) = err else { panic!("{err:?}") };
        assert_eq!(data.code, ErrorCode::INVALID_PARAMS);
        assert!(data.message.starts_with("sandbox: "), "{}", data.message);

        let call = CallToolRequestParams::new("codecoder-reply")
            .with_arguments(args(json!({"prompt": "x"})));
        let err = client.call_tool(call).await.unwrap_err();
        let rmcp::ServiceError::McpError(data) = err else { panic!("{err:?}") };
        assert!(data.message.starts_with("threadId: "), "{}", data.message);
        client.cancel().await.unwrap();
        serving.await.unwrap();
    });
}
