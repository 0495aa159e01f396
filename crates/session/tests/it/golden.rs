//! Golden JSONL files: the on-disk format, byte for byte, and how the loader treats good and
//! broken files.
//!
//! `basic.jsonl` is generated from records with fixed ids and times; a format change shows up as
//! a diff of it (`UPDATE_EXPECT=1 cargo test -p codecoder-session --test it` rewrites it, then
//! review and commit). The other files are hand-made and never rewritten: logs as older builds
//! or crashes leave them, which this build must keep reading the same way.

use std::path::PathBuf;

use codecoder_protocol::env::UPDATE_EXPECT;
use codecoder_protocol::{
    ApprovalDecision, BlobRef, ContentItem, ContextRecord, FORMAT_VERSION, Image, Message,
    MessageId, MessageItem, PromptSection, Reasoning, Record, RecordBody, Role, SessionId,
    SessionMeta, StepId, StopReason, SyntheticReason, ToolCall, ToolCallId, ToolResult,
    ToolResultStatus, ToolSpec, TurnId, TurnOutcome, Usage,
};
use codecoder_session::{CloseReason, Entry, Error, closing_records, load};
use pretty_assertions::assert_eq;
use uuid::Uuid;

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name)
}

fn message_id(n: u128) -> MessageId {
    MessageId::from(Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0000 | n))
}

/// Every record type, with fixed ids and times.
fn basic_records() -> Vec<Record> {
    let session_id = SessionId::from(Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_00aa));
    let turn1 = TurnId::new(1);
    let turn2 = TurnId::new(2);
    let bodies = vec![
        RecordBody::SessionMeta(SessionMeta {
            session_id,
            format_version: FORMAT_VERSION,
            cwd: "/home/dev/project".to_owned(),
            model: "gpt-test".to_owned(),
            provider: "openai".to_owned(),
            config_hash: Some("3f2a".to_owned()),
            cli_version: "0.0.0".to_owned(),
            forked_from: None,
            parent: None,
        }),
        RecordBody::TurnStart { turn: turn1 },
        RecordBody::UserMessage {
            message: Message {
                id: message_id(1),
                role: Role::User,
                items: vec![MessageItem::Text {
                    text: "Fix the bug\nin \"main.rs\" ✓".to_owned()
                }],
            },
        },
        RecordBody::StepStart { turn: turn1, step: StepId::new(1) },
        RecordBody::AssistantMessage {
            message: Message {
                id: message_id(2),
                role: Role::Assistant,
                items: vec![
                    MessageItem::Reasoning(Reasoning {
                        text: "Read it first.".to_owned(),
                        signature: Some("sig-1".to_owned()),
                        encrypted_content: None,
                    }),
                    MessageItem::Text { text: "Reading main.rs.".to_owned() },
                    MessageItem::ToolCall(ToolCall {
                        id: ToolCallId::new("call_1"),
                        name: "read_file".to_owned(),
                        args: serde_json::json!({ "path": "src/main.rs" }),
                    }),
                    MessageItem::ToolCall(ToolCall {
                        id: ToolCallId::new("call_2"),
                        name: "shell".to_owned(),
                        args: serde_json::json!("{not json"),
                    }),
                ],
            },
        },
        RecordBody::Approval {
            call_id: ToolCallId::new("call_2"),
            permission_keys: vec!["shell:cargo".to_owned()],
            decision: ApprovalDecision::DenyWithFeedback { feedback: "not now".to_owned() },
            decided_by: "user".to_owned(),
            updated_args: None,
        },
        RecordBody::ToolResult {
            result: ToolResult::text(
                ToolCallId::new("call_2"),
                ToolResultStatus::Error,
                "denied: not now",
            ),
            synthetic: Some(SyntheticReason::Refused),
        },
        RecordBody::ToolStarted { call_id: ToolCallId::new("call_1") },
        RecordBody::ToolResult {
            result: ToolResult {
                tool_call_id: ToolCallId::new("call_1"),
                content: vec![
                    ContentItem::Text { text: "fn main() {}\n".to_owned() },
                    ContentItem::BlobRef(BlobRef {
                        sha256: "ab".repeat(32),
                        size: 20_000,
                        media_type: "text/plain; charset=utf-8".to_owned(),
                        preview: "line 1".to_owned(),
                    }),
                ],
                status: ToolResultStatus::Success,
                exit: None,
            },
            synthetic: None,
        },
        RecordBody::StepEnd {
            turn: turn1,
            step: StepId::new(1),
            usage: Usage {
                input_tokens: 1200,
                cached_input_tokens: 1000,
                output_tokens: 80,
                reasoning_output_tokens: 30,
            },
            stop_reason: Some(StopReason::ToolUse),
        },
        RecordBody::StepStart { turn: turn1, step: StepId::new(2) },
        RecordBody::Context(ContextRecord {
            model: "gpt-5".to_owned(),
            provider: "openai".to_owned(),
            sections: vec![
                PromptSection {
                    name: "base instructions".to_owned(),
                    text: "You are a coding agent.".to_owned(),
                },
                PromptSection {
                    name: "environment".to_owned(),
                    text: "# Environment\n\n- Working directory: /work".to_owned(),
                },
            ],
            tools: vec![ToolSpec {
                name: "read_file".to_owned(),
                description: "Reads a file.".to_owned(),
                // Keys in sorted order: the text is the same whether or not serde_json keeps insertion order.
                schema: serde_json::json!({"properties": {"path": {"type": "string"}}, "type": "object"}),
            }],
            max_output_tokens: Some(32_000),
            output_schema: None,
            config_hash: Some("sha256:0123".to_owned()),
            reasoning: Default::default(),
        }),
        RecordBody::AssistantMessage {
            message: Message {
                id: message_id(3),
                role: Role::Assistant,
                items: vec![MessageItem::Text { text: "Fixed.".to_owned() }],
            },
        },
        RecordBody::StepEnd {
            turn: turn1,
            step: StepId::new(2),
            usage: Usage { input_tokens: 1300, output_tokens: 5, ..Usage::default() },
            stop_reason: Some(StopReason::EndTurn),
        },
        RecordBody::TurnEnd {
            turn: turn1,
            outcome: TurnOutcome::Completed,
            usage: Usage { input_tokens: 2500, output_tokens: 85, ..Usage::default() },
        },
        RecordBody::Compaction {
            history: vec![Message {
                id: message_id(4),
                role: Role::User,
                items: vec![MessageItem::Text { text: "Summary: main.rs was fixed.".to_owned() }],
            }],
            note: Some("replaced 4 messages".to_owned()),
        },
        RecordBody::TurnStart { turn: turn2 },
        RecordBody::UserMessage {
            message: Message {
                id: message_id(5),
                role: Role::User,
                items: vec![
                    MessageItem::Text { text: "And this screenshot?".to_owned() },
                    MessageItem::Image(Image {
                        media_type: "image/png".to_owned(),
                        data_base64: "iVBORw0KGgo=".to_owned(),
                    }),
                ],
            },
        },
        RecordBody::StepStart { turn: turn2, step: StepId::new(1) },
        RecordBody::AssistantMessage {
            message: Message {
                id: message_id(6),
                role: Role::Assistant,
                items: vec![MessageItem::ToolCall(ToolCall {
                    id: ToolCallId::new("toolu_3"),
                    name: "shell".to_owned(),
                    args: serde_json::json!({ "command": "cargo test", "timeout": 60 }),
                })],
            },
        },
        RecordBody::ToolStarted { call_id: ToolCallId::new("toolu_3") },
        RecordBody::ToolResult {
            result: ToolResult::text(
                ToolCallId::new("toolu_3"),
                ToolResultStatus::Cancelled,
                "cancelled",
            ),
            synthetic: Some(SyntheticReason::Cancelled),
        },
        RecordBody::StepEnd {
            turn: turn2,
            step: StepId::new(1),
            usage: Usage::default(),
            stop_reason: None,
        },
        RecordBody::Checkpoint(codecoder_protocol::CheckpointRecord {
            turn: turn2,
            files: vec![
                codecoder_protocol::FileCheckpoint {
                    path: "/work/src/lib.rs".to_owned(),
                    before: Some("ab".repeat(32)),
                    after: Some("cd".repeat(32)),
                    by: codecoder_protocol::ChangedBy::Tool,
                },
                codecoder_protocol::FileCheckpoint {
                    path: "/work/generated.rs".to_owned(),
                    before: None,
                    after: Some("ef".repeat(32)),
                    by: codecoder_protocol::ChangedBy::Shell,
                },
            ],
            notes: vec!["/work/big.bin: too large to checkpoint".to_owned()],
        }),
        RecordBody::TurnEnd {
            turn: turn2,
            outcome: TurnOutcome::Cancelled,
            usage: Usage::default(),
        },
        RecordBody::Rewind(codecoder_protocol::RewindRecord {
            turn: turn2,
            conversation: false,
            files: true,
            restored: vec!["/work/src/lib.rs".to_owned(), "/work/generated.rs".to_owned()],
            skipped: Vec::new(),
        }),
        RecordBody::Error { message: "provider: 429 too many requests".to_owned() },
        RecordBody::SessionEnd,
    ];
    bodies
        .into_iter()
        .zip(1..)
        .map(|(body, seq)| Record { seq, ts: 1_700_000_000_000 + seq * 250, body })
        .collect()
}

#[test]
fn basic_log_matches_the_golden_file() {
    let records = basic_records();
    let mut actual = String::new();
    for record in &records {
        actual.push_str(&serde_json::to_string(record).unwrap());
        actual.push('\n');
    }
    // Every record type appears.
    let mut types: Vec<&str> = records.iter().map(|r| r.body.type_name()).collect();
    types.sort_unstable();
    types.dedup();
    assert_eq!(types.len(), RecordBody::TYPE_NAMES.len());

    let path = golden("basic.jsonl");
    if std::env::var_os(UPDATE_EXPECT).is_some() {
        fs_err::write(&path, &actual).unwrap();
    }
    let expected = fs_err::read_to_string(&path).unwrap_or_default();
    assert!(
        expected == actual,
        "{} is stale: run `UPDATE_EXPECT=1 cargo test -p codecoder-session --test it`, review \
         the diff and commit it\n{}",
        path.display(),
        pretty_assertions::StrComparison::new(&expected, &actual)
    );

    // And it reads back as the same records, complete and closed.
    let loaded = load(&path).unwrap();
    assert_eq!(loaded.records().cloned().collect::<Vec<_>>(), records);
    assert!(loaded.torn_tail.is_none());
    assert!(loaded.trace.is_ended());
    assert!(!loaded.trace.needs_repair());
    assert_eq!(loaded.line_count, records.len());
    // History: the compaction's summary, then turn 2 (user, assistant, tool).
    let history = loaded.projection().into_history();
    let roles: Vec<Role> = history.iter().map(|m| m.role).collect();
    assert_eq!(roles, vec![Role::User, Role::User, Role::Assistant, Role::Tool]);
    assert_eq!(history[0].text(), "Summary: main.rs was fixed.");
}

/// A crash cut the last line: it is dropped and reported, and repair closes the open turn.
#[test]
fn torn_tail_is_dropped_and_reported() {
    let path = golden("torn_tail.jsonl");
    let bytes = fs_err::read(&path).unwrap();
    assert_ne!(bytes.last(), Some(&b'\n'), "the golden file must end mid-line");
    let loaded = load(&path).unwrap();
    let torn = loaded.torn_tail.unwrap();
    let last_newline = bytes.iter().rposition(|b| *b == b'\n').unwrap() + 1;
    assert_eq!(torn.offset, last_newline as u64);
    assert_eq!(torn.len, (bytes.len() - last_newline) as u64);
    assert_eq!(torn.line, loaded.line_count);
    assert_eq!(loaded.records().count(), loaded.line_count - 1);
    assert!(loaded.trace.needs_repair());
    let plan: Vec<String> = loaded
        .repair_plan()
        .iter()
        .map(|body| match body {
            RecordBody::ToolResult { result, synthetic } => {
                format!("tool_result {} {synthetic:?}", result.tool_call_id)
            }
            other => other.type_name().to_owned(),
        })
        .collect();
    assert_eq!(
        plan,
        vec![
            "tool_result call_a Some(OutcomeUnknown)",
            "tool_result call_b Some(NotStarted)",
            "step_end",
            "turn_end",
        ]
    );
    assert_eq!(loaded.repair_plan(), closing_records(&loaded.trace, CloseReason::Crash));
}

/// A record type from a newer version is kept in place and reported, not dropped.
#[test]
fn unknown_record_type_is_kept_and_reported() {
    let path = golden("unknown_type.jsonl");
    let loaded = load(&path).unwrap();
    let unknown: Vec<_> = loaded.unknown().collect();
    assert_eq!(unknown.len(), 1);
    assert_eq!(unknown[0].line, 4);
    assert_eq!(unknown[0].seq, 4);
    assert_eq!(unknown[0].type_name, "bookmark");
    assert_eq!(unknown[0].raw["files"], serde_json::json!(["src/lib.rs"]));
    assert!(matches!(loaded.entries[3], Entry::Unknown(_)));
    assert_eq!(loaded.entries.len(), loaded.line_count);
    assert_eq!(loaded.trace.last_seq(), loaded.line_count as u64);
    assert!(!loaded.trace.needs_repair());
    assert!(loaded.torn_tail.is_none());
}

/// A line that is not a record, with lines after it: an error naming the file and the line.
#[test]
fn corrupt_line_in_the_middle_is_an_error_with_file_and_line() {
    let path = golden("corrupt_middle.jsonl");
    let err = load(&path).unwrap_err();
    match &err {
        Error::Corrupt { path: err_path, line, .. } => {
            assert_eq!(err_path, &path);
            assert_eq!(*line, 4);
        }
        other => panic!("expected Error::Corrupt, got {other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains("corrupt_middle.jsonl:4:"), "{text}");
}

/// A well-formed record that breaks the grammar: an error with file, line, seq and the rule.
#[test]
fn grammar_violation_in_the_middle_is_an_error_with_file_and_line() {
    let path = golden("invalid_middle.jsonl");
    let err = load(&path).unwrap_err();
    match &err {
        Error::Invalid { path: err_path, line, seq, source } => {
            assert_eq!(err_path, &path);
            assert_eq!((*line, *seq), (7, 7));
            assert_eq!(source.kind(), "calls_pending");
        }
        other => panic!("expected Error::Invalid, got {other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains("invalid_middle.jsonl:7:"), "{text}");
    assert!(text.contains("call_x"), "{text}");
}
