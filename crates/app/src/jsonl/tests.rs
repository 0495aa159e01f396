//! Unit tests of the `exec --json` encoder: calls that never ran, MCP calls, the answer a
//! front-end gives.

use std::sync::Arc;

use codecoder_kernel::{Tool, ToolContext, ToolKind, ToolOutput, ToolRegistry};
use codecoder_protocol::exec_event::{ItemDetails, ItemStatus, McpToolCallResult, ThreadEvent};
use codecoder_protocol::{
    AgentEvent, AgentEventKind, CallView, ContentItem, EventSource, Image, SessionId, StepId,
    ToolCall, ToolCallId, ToolError, ToolResult, ToolResultStatus, TurnId,
};
use serde_json::{Value, json};

use super::ExecEventEncoder;

/// A tool of the MCP server `srv` named `lookup` there.
struct McpLookup;

impl Tool for McpLookup {
    fn name(&self) -> &str {
        "mcp__srv__lookup"
    }
    fn description(&self) -> &str {
        "looks things up"
    }
    fn schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn kind(&self) -> ToolKind {
        ToolKind::ReadOnly
    }
    fn mcp_origin(&self) -> Option<(&str, &str)> {
        Some(("srv", "lookup"))
    }
    fn execute(&self, _ctx: &ToolContext, _args: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("found"))
    }
}

fn encoder() -> ExecEventEncoder {
    ExecEventEncoder::new()
}

/// The call's view as the kernel sends it: from the session's tools (the built-ins and the
/// MCP tool here).
fn view(call: &ToolCall) -> CallView {
    let mut registry = ToolRegistry::new();
    let config = codecoder_tools::ToolsConfig::standard("/", Vec::new());
    for tool in codecoder_tools::builtin_tools(config) {
        registry.register(tool).unwrap();
    }
    registry.register(Arc::new(McpLookup)).unwrap();
    registry.register(Arc::new(crate::testing::TestOnlyTool)).unwrap();
    registry.view(&call.name, &call.args)
}

fn event(kind: AgentEventKind) -> AgentEvent {
    AgentEvent { source: EventSource { session_id: SessionId::new(), subagent_path: vec![] }, kind }
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall { id: ToolCallId::new(id), name: name.to_owned(), args }
}

fn started(call: &ToolCall) -> AgentEvent {
    event(AgentEventKind::ToolStarted {
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        call: call.clone(),
        view: view(call),
    })
}

fn finished(
    call: &ToolCall,
    result: Result<ToolResult, ToolError>,
    mcp_result: Option<Value>,
) -> AgentEvent {
    event(AgentEventKind::ToolFinished {
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        call_id: call.id.clone(),
        call: call.clone(),
        view: view(call),
        result,
        mcp_result,
    })
}

/// (event, item id, details) of each item line.
fn items(events: &[ThreadEvent]) -> Vec<(&'static str, String, ItemDetails)> {
    events
        .iter()
        .map(|event| match event {
            ThreadEvent::ItemStarted { item } => ("started", item.id.clone(), item.details.clone()),
            ThreadEvent::ItemUpdated { item } => ("updated", item.id.clone(), item.details.clone()),
            ThreadEvent::ItemCompleted { item } => {
                ("completed", item.id.clone(), item.details.clone())
            }
            other => panic!("not an item: {other:?}"),
        })
        .collect()
}

fn denied() -> Result<ToolResult, ToolError> {
    Err(ToolError::PermissionDenied { reason: "the approval mode is never".to_owned() })
}

#[test]
fn a_refused_command_is_started_and_declined_under_one_id() {
    let mut encoder = encoder();
    let command = call("c1", "run_command", json!({"command": "touch /etc/x"}));
    let lines = encoder.encode(&finished(&command, denied(), None));
    let declined = ItemDetails::CommandExecution {
        command: "touch /etc/x".to_owned(),
        aggregated_output: String::new(),
        exit_code: None,
        status: ItemStatus::Declined,
    };
    let in_progress = ItemDetails::CommandExecution {
        command: "touch /etc/x".to_owned(),
        aggregated_output: String::new(),
        exit_code: None,
        status: ItemStatus::InProgress,
    };
    assert_eq!(
        items(&lines),
        [
            ("started", "item_0".to_owned(), in_progress),
            ("completed", "item_0".to_owned(), declined)
        ]
    );
}

#[test]
fn refusals_of_other_tools_fail_with_the_reason_where_the_item_has_room() {
    let mut encoder = encoder();
    // A file change only ever completes, and has no `declined`.
    let write = call("c1", "write_file", json!({"path": "a.txt", "content": "x"}));
    let lines = encoder.encode(&finished(&write, denied(), None));
    let found = items(&lines);
    let [("completed", id, ItemDetails::FileChange { status, changes })] = found.as_slice() else {
        panic!("{lines:?}")
    };
    assert_eq!((id.as_str(), *status, changes.len()), ("item_0", ItemStatus::Failed, 1));

    // An MCP call has no `declined` either: failed, the reason as its error.
    let lookup = call("c2", "mcp__srv__lookup", json!({"q": 1}));
    let lines = encoder.encode(&finished(&lookup, denied(), None));
    let found = items(&lines);
    assert_eq!(found.len(), 2, "{found:?}");
    let ItemDetails::McpToolCall { server, tool, arguments, result, error, status } = &found[1].2
    else {
        panic!("{found:?}")
    };
    assert_eq!((server.as_str(), tool.as_str(), arguments), ("srv", "lookup", &json!({"q": 1})));
    assert_eq!((result, *status), (&None, ItemStatus::Failed));
    assert_eq!(error.as_ref().unwrap().message, "permission denied: the approval mode is never");
    assert_eq!((found[0].0, found[1].1.as_str()), ("started", "item_1"));

    // A refused plan update is no plan: a failed generic call.
    let plan = call("c3", "update_plan", json!({"plan": [{"step": "a", "status": "pending"}]}));
    let lines = encoder.encode(&finished(&plan, Err(ToolError::Cancelled), None));
    let found = items(&lines);
    let ItemDetails::ToolCall { name, result, status, .. } = &found[1].2 else {
        panic!("{found:?}")
    };
    assert_eq!(
        (name.as_str(), result.as_deref(), *status),
        ("update_plan", Some("cancelled"), ItemStatus::Failed)
    );
}

#[test]
fn an_mcp_call_without_the_servers_result_shows_the_blocks_its_output_came_from() {
    let mut encoder = encoder();
    let lookup = call("c1", "mcp__srv__lookup", json!({}));
    encoder.encode(&started(&lookup));
    let output = ToolResult {
        tool_call_id: lookup.id.clone(),
        content: vec![
            ContentItem::Text { text: "found".to_owned() },
            ContentItem::Image(Image {
                media_type: "image/png".to_owned(),
                data_base64: "AAAA".to_owned(),
            }),
        ],
        status: ToolResultStatus::Success,
        exit: None,
    };
    let lines = encoder.encode(&finished(&lookup, Ok(output), None));
    let found = items(&lines);
    let ItemDetails::McpToolCall { result, error, status, .. } = &found[0].2 else {
        panic!("{found:?}")
    };
    assert_eq!(
        result.as_ref().unwrap(),
        &McpToolCallResult {
            content: vec![
                json!({"type": "text", "text": "found"}),
                json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
            ],
            structured_content: None,
        }
    );
    assert_eq!((error, *status), (&None, ItemStatus::Completed));
}

#[test]
fn an_mcp_error_result_fails_with_its_text_as_the_error() {
    let mut encoder = encoder();
    let lookup = call("c1", "mcp__srv__lookup", json!({}));
    encoder.encode(&started(&lookup));
    let output = ToolResult::text(lookup.id.clone(), ToolResultStatus::Error, "no such thing");
    let sent = json!({"content": [{"type": "text", "text": "no such thing"}], "isError": true});
    let lines = encoder.encode(&finished(&lookup, Ok(output), Some(sent)));
    let found = items(&lines);
    let ItemDetails::McpToolCall { result, error, status, .. } = &found[0].2 else {
        panic!("{found:?}")
    };
    assert_eq!((result, *status), (&None, ItemStatus::Failed));
    assert_eq!(error.as_ref().unwrap().message, "no such thing");
}

#[test]
fn an_answer_is_the_final_agent_message() {
    let mut encoder = encoder();
    let lines = encoder.answer("# Plan\n1. do it");
    assert_eq!(
        items(&lines),
        [(
            "completed",
            "item_0".to_owned(),
            ItemDetails::AgentMessage { text: "# Plan\n1. do it".to_owned() }
        )]
    );
}

#[test]
fn a_tool_the_encoder_does_not_know_is_shown_by_its_view() {
    let mut encoder = encoder();
    let relabel = call(
        "c1",
        crate::testing::TEST_ONLY_TOOL,
        json!({"moves": [{"from": "src/old.rs", "to": "src/new.rs"}]}),
    );
    let ok =
        ToolResult::text(ToolCallId::new("c1"), ToolResultStatus::Success, "relabelled 1 file(s)");
    let mut lines = encoder.encode(&started(&relabel));
    lines.extend(encoder.encode(&finished(&relabel, Ok(ok), None)));
    let found = items(&lines);
    // An edit: a file change, which only ever completes.
    let [("completed", _, ItemDetails::FileChange { status, changes })] = found.as_slice() else {
        panic!("{found:?}")
    };
    assert_eq!(*status, ItemStatus::Completed);
    let paths: Vec<&str> = changes.iter().map(|change| change.path.as_str()).collect();
    assert_eq!(paths, ["src/old.rs"]);
}
