//! Unit tests of `exec`'s progress for a person.

use codecoder_protocol::{
    AgentEvent, AgentEventKind, EventSource, SessionId, StepId, ToolCall, ToolCallId, TurnId,
    TurnOutcome, Usage,
};
use serde_json::json;

use super::{Progress, ProgressEncoder};

fn event(subagent_path: Vec<ToolCallId>, kind: AgentEventKind) -> AgentEvent {
    AgentEvent { source: EventSource { session_id: SessionId::new(), subagent_path }, kind }
}

#[test]
fn root_text_streams_and_calls_and_tokens_are_lines() {
    let mut encoder = ProgressEncoder::new();
    let text = |delta: &str| AgentEventKind::TextDelta {
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        delta: delta.to_owned(),
    };
    assert_eq!(encoder.encode(&event(vec![], text("hi"))), Some(Progress::Text("hi".to_owned())));
    // A subagent's text is not the root's answer.
    assert_eq!(encoder.encode(&event(vec![ToolCallId::new("a")], text("inner"))), None);
    let call = ToolCall { id: ToolCallId::new("c"), name: "relabel".to_owned(), args: json!({}) };
    let started = |path: Vec<ToolCallId>| {
        event(
            path,
            AgentEventKind::ToolStarted {
                turn: TurnId::FIRST,
                step: StepId::FIRST,
                call: call.clone(),
                view: codecoder_protocol::CallView::default(),
            },
        )
    };
    assert_eq!(encoder.encode(&started(vec![])), Some(Progress::Line("▸ relabel {}".to_owned())));
    assert_eq!(
        encoder.encode(&started(vec![ToolCallId::new("a")])),
        Some(Progress::Line("  ↳ relabel {}".to_owned()))
    );
    let usage = Usage { input_tokens: 10, output_tokens: 3, ..Usage::default() };
    let step = AgentEventKind::StepFinished {
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        usage,
        text: "hi".to_owned(),
    };
    assert_eq!(encoder.encode(&event(vec![], step)), None);
    let done = AgentEventKind::TurnDone {
        turn: TurnId::FIRST,
        cancelled: false,
        outcome: TurnOutcome::Completed,
        usage,
    };
    assert_eq!(
        encoder.encode(&event(vec![], done)),
        Some(Progress::Line("tokens: 10 in (0 cached), 3 out".to_owned()))
    );
}
