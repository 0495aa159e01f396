//! Round trips of the wire shapes, and the checked-in JSON Schema of session records.

use pretty_assertions::assert_eq;

use crate::env;
use crate::ids::{SessionId, StepId, ToolCallId, TurnId};
use crate::message::{ContentItem, Message, MessageItem, Reasoning, ToolCall, ToolResult};
use crate::message::{Role, ToolResultStatus};
use crate::record::{Record, RecordBody};
use crate::usage::Usage;

#[test]
fn record_lines_are_flat_and_tagged() {
    let record = Record {
        seq: 3,
        ts: 1_700_000_000_000,
        body: RecordBody::StepStart { turn: TurnId::new(1), step: StepId::new(2) },
    };
    let line = serde_json::to_string(&record).unwrap();
    assert_eq!(line, r#"{"seq":3,"ts":1700000000000,"type":"step_start","turn":1,"step":2}"#);
    let back: Record = serde_json::from_str(&line).unwrap();
    assert_eq!(back, record);
}

#[test]
fn assistant_message_round_trips() {
    let message = Message::new(
        Role::Assistant,
        vec![
            MessageItem::Reasoning(Reasoning {
                text: "think".into(),
                signature: Some("sig".into()),
                encrypted_content: None,
            }),
            MessageItem::Text { text: "héllo".into() },
            MessageItem::ToolCall(ToolCall {
                id: ToolCallId::new("call_1"),
                name: "read_file".into(),
                args: serde_json::json!({"path": "a.rs"}),
            }),
        ],
    );
    let record = Record { seq: 9, ts: 0, body: RecordBody::AssistantMessage { message } };
    let line = serde_json::to_string(&record).unwrap();
    assert!(line.contains(r#""type":"assistant_message""#), "{line}");
    assert!(line.contains(r#""type":"tool_call""#), "{line}");
    let back: Record = serde_json::from_str(&line).unwrap();
    assert_eq!(back, record);
}

#[test]
fn tool_result_round_trips_and_type_names_match_serde() {
    let bodies = vec![
        RecordBody::ToolResult {
            result: ToolResult {
                tool_call_id: "c".into(),
                content: vec![ContentItem::Text { text: "out".into() }],
                status: ToolResultStatus::Error,
                exit: None,
            },
            synthetic: None,
        },
        RecordBody::TurnEnd {
            turn: TurnId::FIRST,
            outcome: crate::TurnOutcome::Failed { message: "x".into() },
            usage: Usage { input_tokens: 1, ..Usage::default() },
        },
        RecordBody::SessionEnd,
        RecordBody::Error { message: "boom".into() },
    ];
    for body in bodies {
        let record = Record { seq: 1, ts: 2, body };
        let value = serde_json::to_value(&record).unwrap();
        assert_eq!(value["type"], record.body.type_name());
        assert!(RecordBody::TYPE_NAMES.contains(&record.body.type_name()));
        let back: Record = serde_json::from_value(value).unwrap();
        assert_eq!(back, record);
    }
}

#[test]
fn ids_display_and_parse() {
    let id = SessionId::new();
    let parsed: SessionId = id.to_string().parse().unwrap();
    assert_eq!(parsed, id);
    assert!("not-a-uuid".parse::<SessionId>().is_err());
    assert_eq!(TurnId::FIRST.next().get(), 2);
}

/// The checked-in schemas must match the types. `UPDATE_EXPECT=1 cargo test -p codecoder-protocol`
/// rewrites them.
#[allow(clippy::disallowed_methods)] // protocol has no fs-err; this test only touches its own files
fn check_schema(schema: &schemars::Schema, file: &str) {
    let actual = serde_json::to_string_pretty(&crate::sorted_json(schema.clone().to_value()))
        .unwrap()
        + "\n";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema").join(file);
    if std::env::var_os(env::UPDATE_EXPECT).is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        expected == actual,
        "{} is stale: run `UPDATE_EXPECT=1 cargo test -p codecoder-protocol` and commit it",
        path.display()
    );
}

#[test]
fn session_record_schema_is_up_to_date() {
    check_schema(&schemars::schema_for!(Record), "session-record.schema.json");
}

#[test]
fn exec_event_schema_is_up_to_date() {
    check_schema(&schemars::schema_for!(crate::exec_event::ThreadEvent), "exec-event.schema.json");
}

#[test]
fn exec_events_are_codex_shaped() {
    use crate::exec_event::{ItemDetails, ItemStatus, ThreadEvent, ThreadItem};
    let event = ThreadEvent::ItemCompleted {
        item: ThreadItem {
            id: "item_3".into(),
            details: ItemDetails::CommandExecution {
                command: "ls".into(),
                aggregated_output: "a\n".into(),
                exit_code: Some(0),
                status: ItemStatus::Completed,
            },
        },
    };
    let value = serde_json::to_value(&event).unwrap();
    assert_eq!(
        value,
        serde_json::json!({"type": "item.completed", "item": {"id": "item_3",
            "type": "command_execution", "command": "ls", "aggregated_output": "a\n",
            "exit_code": 0, "status": "completed"}})
    );
    assert_eq!(serde_json::from_value::<ThreadEvent>(value).unwrap(), event);
    let started = serde_json::to_value(ThreadEvent::TurnStarted {}).unwrap();
    assert_eq!(started, serde_json::json!({"type": "turn.started"}));
}

#[test]
fn an_mcp_tool_call_item_is_codex_shaped_with_nulls_for_what_it_lacks() {
    use crate::exec_event::{ItemDetails, ItemStatus, McpToolCallResult, ThreadItem};
    let item = ThreadItem {
        id: "item_1".into(),
        details: ItemDetails::McpToolCall {
            server: "everything".into(),
            tool: "echo".into(),
            arguments: serde_json::json!({"message": "hi"}),
            result: Some(McpToolCallResult {
                content: vec![serde_json::json!({"type": "text", "text": "Echo: hi"})],
                structured_content: None,
            }),
            error: None,
            status: ItemStatus::Completed,
        },
    };
    let value = serde_json::to_value(&item).unwrap();
    assert_eq!(
        value,
        serde_json::json!({"id": "item_1", "type": "mcp_tool_call", "server": "everything",
            "tool": "echo", "arguments": {"message": "hi"},
            "result": {"content": [{"type": "text", "text": "Echo: hi"}], "structured_content": null},
            "error": null, "status": "completed"})
    );
    assert_eq!(serde_json::from_value::<ThreadItem>(value).unwrap(), item);
}

#[test]
fn records_parse_whatever_the_key_order_and_need_seq_and_ts() {
    let expected = Record {
        seq: 7,
        ts: 8,
        body: RecordBody::StepStart { turn: TurnId::new(1), step: StepId::new(2) },
    };
    for line in [
        r#"{"seq":7,"ts":8,"type":"step_start","turn":1,"step":2}"#,
        r#"{"type":"step_start","turn":1,"step":2,"seq":7,"ts":8}"#,
        r#"{"turn":1,"seq":7,"type":"step_start","ts":8,"step":2}"#,
        r#"{"seq":7,"ts":8,"type":"step_start","turn":1,"step":2,"extra":{"a":[1,2]}}"#,
        r#"{"se\u0071":7,"ts":8,"typ\u0065":"step_start","turn":1,"step":2}"#,
    ] {
        let record: Record =
            serde_json::from_str(line).unwrap_or_else(|err| panic!("{line}: {err}"));
        assert_eq!(record, expected, "{line}");
    }
    for bad in [
        r#"{"ts":8,"type":"step_start","turn":1,"step":2}"#,
        r#"{"seq":7,"type":"step_start","turn":1,"step":2}"#,
        r#"{"seq":7,"ts":8,"turn":1,"step":2}"#,
        r#"{"seq":"7","ts":8,"type":"step_start","turn":1,"step":2}"#,
        r#"[7, 8]"#,
    ] {
        assert!(serde_json::from_str::<Record>(bad).is_err(), "{bad}");
    }
}

#[test]
fn permission_words_print_parse_and_serialize_alike() {
    use crate::permission::{ApprovalMode, DecidedBy, SandboxMode, ToolKind, Verdict};
    fn check<T>(values: &[&str])
    where
        T: std::str::FromStr<Err = crate::permission::UnknownValue>
            + std::fmt::Display
            + serde::Serialize
            + serde::de::DeserializeOwned
            + PartialEq
            + std::fmt::Debug,
    {
        for text in values {
            let value: T = text.parse().unwrap();
            assert_eq!(value.to_string(), *text);
            assert_eq!(serde_json::to_value(&value).unwrap(), serde_json::json!(text));
            assert_eq!(serde_json::from_value::<T>(serde_json::json!(text)).unwrap(), value);
        }
    }
    check::<Verdict>(Verdict::VALUES);
    check::<DecidedBy>(DecidedBy::VALUES);
    check::<ToolKind>(ToolKind::VALUES);
    check::<SandboxMode>(SandboxMode::VALUES);
    check::<ApprovalMode>(ApprovalMode::VALUES);
    assert_eq!(SandboxMode::VALUES, ["read-only", "workspace-write", "danger-full-access"]);
    assert_eq!(ApprovalMode::VALUES, ["untrusted", "on-request", "never"]);
    let err = "sometimes".parse::<ApprovalMode>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown approval mode `sometimes`: expected one of untrusted, on-request, never"
    );
    assert!(Verdict::Allow < Verdict::Ask && Verdict::Ask < Verdict::Deny);
}

#[test]
fn claude_tool_names_map_both_ways() {
    use crate::permission::{CLAUDE_TOOL_NAMES, claude_tool_name, our_tool_name};
    // The table is the one place: each pair maps both ways, and a name maps to itself.
    for (ours, claude) in CLAUDE_TOOL_NAMES {
        assert_eq!(claude_tool_name(ours), *claude, "{ours}");
        assert_eq!(our_tool_name(claude), *ours, "{claude}");
        assert_eq!(our_tool_name(ours), *ours, "{ours}");
    }
    assert_eq!((claude_tool_name("run_command"), our_tool_name("Bash")), ("Bash", "run_command"));
    assert_eq!((claude_tool_name("list_dir"), our_tool_name("LS")), ("LS", "list_dir"));
    assert_eq!(
        (claude_tool_name("web_fetch"), our_tool_name("WebFetch")),
        ("WebFetch", "web_fetch")
    );
    // An alias maps to ours, and ours back to Claude's own name.
    assert_eq!(our_tool_name("MultiEdit"), "edit");
    assert_eq!(claude_tool_name(our_tool_name("MultiEdit")), "Edit");
    // Names without a counterpart pass unchanged both ways.
    for name in ["apply_patch", "mcp__memory__store", "NotebookEdit"] {
        assert_eq!(claude_tool_name(name), name);
        assert_eq!(our_tool_name(name), name);
    }
}
