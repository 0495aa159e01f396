//! The public helpers: a session log's records → the transcript a resumed session shows.

use codecoder_protocol::{
    Message, MessageItem, Reasoning, Record, RecordBody, Role, ToolCallId, ToolResult,
    ToolResultStatus,
};
use serde_json::json;

use crate::{TranscriptItem, transcript_from_records};

fn record(seq: u64, body: RecordBody) -> Record {
    Record { seq, ts: 0, body }
}

#[test]
fn records_become_a_transcript_with_results_paired_to_calls() {
    let call = crate::testing::call("c1", "run_command", json!({"command": "ls"}));
    let orphan = crate::testing::call("c2", "read_file", json!({"path": "a"}));
    let records = vec![
        record(1, RecordBody::UserMessage { message: Message::user_text("hi") }),
        record(
            2,
            RecordBody::AssistantMessage {
                message: Message::new(
                    Role::Assistant,
                    vec![
                        MessageItem::Reasoning(Reasoning {
                            text: "think".to_owned(),
                            ..Reasoning::default()
                        }),
                        MessageItem::Text { text: "Looking.".to_owned() },
                        MessageItem::ToolCall(call.clone()),
                        MessageItem::ToolCall(orphan.clone()),
                    ],
                ),
            },
        ),
        record(
            3,
            RecordBody::ToolResult {
                result: ToolResult::text(ToolCallId::new("c1"), ToolResultStatus::Success, "a.rs"),
                synthetic: None,
            },
        ),
    ];
    let items = transcript_from_records(&records, crate::testing::view);
    assert_eq!(
        items,
        vec![
            TranscriptItem::User("hi".to_owned()),
            TranscriptItem::Reasoning("think".to_owned()),
            TranscriptItem::Assistant("Looking.".to_owned()),
            TranscriptItem::Tool {
                view: crate::testing::view(&call),
                call,
                result: Some(ToolResult::text(
                    ToolCallId::new("c1"),
                    ToolResultStatus::Success,
                    "a.rs"
                )),
            },
            TranscriptItem::Tool {
                view: crate::testing::view(&orphan),
                call: orphan,
                result: None
            },
        ]
    );
}

#[test]
fn a_conversation_rewind_drops_the_turns_it_went_back_over() {
    use codecoder_protocol::{RewindRecord, TurnId};
    let turn = |n| RecordBody::TurnStart { turn: TurnId::new(n) };
    let user = |text: &str| RecordBody::UserMessage { message: Message::user_text(text) };
    let rewind = |conversation| {
        RecordBody::Rewind(RewindRecord {
            turn: TurnId::new(2),
            conversation,
            files: true,
            restored: Vec::new(),
            skipped: Vec::new(),
        })
    };
    let records: Vec<Record> = [turn(1), user("one"), turn(2), user("two"), rewind(false)]
        .into_iter()
        .chain([rewind(true), turn(3), user("three")])
        .zip(1..)
        .map(|(body, seq)| record(seq, body))
        .collect();
    let texts: Vec<TranscriptItem> = transcript_from_records(&records, crate::testing::view);
    assert_eq!(
        texts,
        [TranscriptItem::User("one".to_owned()), TranscriptItem::User("three".to_owned())]
    );
}
