//! Reasoning blocks as the model produced them: consecutive thinking and redacted-thinking
//! blocks stay separate items with their own signature or payload (each goes back to the
//! provider as it came), and an adapter's warning reaches the person and the session log.

use codecoder_kernel::ResponseEvent;
use codecoder_protocol::{AgentEventKind, MessageItem, Reasoning, RecordBody, Role, StopReason};
use pretty_assertions::assert_eq;

use crate::support::*;

#[test]
fn consecutive_reasoning_blocks_stay_separate_and_warnings_pass_through() {
    let first = vec![
        ResponseEvent::Warning("fell back to whole answers".into()),
        ResponseEvent::ReasoningDelta("first ".into()),
        ResponseEvent::ReasoningDelta("thought".into()),
        ResponseEvent::ReasoningDone { signature: Some("SIG_1".into()), encrypted_content: None },
        ResponseEvent::ReasoningDone {
            signature: None,
            encrypted_content: Some("REDACTED".into()),
        },
        ResponseEvent::ReasoningDelta("second thought".into()),
        ResponseEvent::ReasoningDone { signature: Some("SIG_2".into()), encrypted_content: None },
        text("done"),
        usage(10, 5),
        completed(StopReason::EndTurn),
    ];
    let model = ScriptedModel::queue(vec![Response::Events(first), Response::Events(answer("ok"))]);
    let harness = Harness::start(model.clone(), vec![]);
    harness.submit("think");
    let events = harness.turn();
    assert!(
        events.iter().any(|e| matches!(&e.kind, AgentEventKind::Warning { message } if message == "fell back to whole answers")),
        "{events:?}"
    );
    harness.submit("again");
    harness.turn();
    let requests = model.requests();
    let assistant = requests[1]
        .history
        .iter()
        .find(|m| m.role == Role::Assistant)
        .expect("the first answer is in the history");
    let reasoning = |text: &str, signature: Option<&str>, encrypted: Option<&str>| {
        MessageItem::Reasoning(Reasoning {
            text: text.into(),
            signature: signature.map(Into::into),
            encrypted_content: encrypted.map(Into::into),
        })
    };
    assert_eq!(
        assistant.items,
        vec![
            reasoning("first thought", Some("SIG_1"), None),
            reasoning("", None, Some("REDACTED")),
            reasoning("second thought", Some("SIG_2"), None),
            MessageItem::Text { text: "done".into() },
        ]
    );
    let logs = harness.shutdown();
    // The warning is kept in the log (an `error` record, which no request carries).
    let noted: Vec<&str> = logs
        .root
        .records()
        .filter_map(|r| match &r.body {
            RecordBody::Error { message } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(noted, ["fell back to whole answers"]);
}
