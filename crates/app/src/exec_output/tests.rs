//! Unit tests of `exec`'s output: text progress on stderr, JSON lines on stdout.

use codecoder_protocol::{AgentEvent, AgentEventKind, EventSource, SessionId, StepId, TurnId};

use crate::{ExecOutput, Shown};

fn event(kind: AgentEventKind) -> AgentEvent {
    AgentEvent { source: EventSource { session_id: SessionId::new(), subagent_path: vec![] }, kind }
}

#[test]
fn exec_text_output_puts_progress_on_its_own_lines_on_err_and_the_answer_on_out() {
    let mut output = ExecOutput::new(false);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let delta = event(AgentEventKind::TextDelta {
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        delta: "thinking".to_owned(),
    });
    output.show(Shown::Event(&delta), &mut out, &mut err).unwrap();
    output.show(Shown::Note("a request was declined".to_owned()), &mut out, &mut err).unwrap();
    output.show(Shown::Plan("1. do it"), &mut out, &mut err).unwrap();
    output.finish("1. do it\n\n", &mut out).unwrap();
    assert_eq!(
        String::from_utf8(err).unwrap(),
        "thinking\na request was declined\nplan presented (no one to approve it in exec)\n"
    );
    assert_eq!(String::from_utf8(out).unwrap(), "1. do it\n");
}

#[test]
fn exec_json_output_is_one_flushed_line_per_event_and_no_final_text() {
    let mut output = ExecOutput::new(true);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    output.session_started(SessionId::new(), &mut out, &mut err).unwrap();
    output.show(Shown::Note("declined".to_owned()), &mut out, &mut err).unwrap();
    output.finish("the answer", &mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    let lines: Vec<serde_json::Value> =
        out.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[0]["type"], "thread.started");
    assert!(err.is_empty());
}

#[test]
fn the_answer_is_the_plan_in_plan_mode_and_an_empty_one_is_written_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("last.txt");
    let end = |final_message: &str, plan: Option<&str>| crate::HeadlessEnd {
        outcome: Some(codecoder_protocol::TurnOutcome::Completed),
        final_message: final_message.to_owned(),
        plan: plan.map(str::to_owned),
    };
    let output = ExecOutput::new(false);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    output.answer(end("done", Some("1. plan\n")), Some(&file), &mut out, &mut err).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "1. plan\n");
    assert_eq!(fs_err::read_to_string(&file).unwrap(), "1. plan\n");
    assert!(err.is_empty());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    output.answer(end("", None), Some(&file), &mut out, &mut err).unwrap();
    assert!(out.is_empty());
    assert_eq!(fs_err::read_to_string(&file).unwrap(), "");
    assert_eq!(
        String::from_utf8(err).unwrap(),
        "warning: the turn ended without a final message; writing an empty file\n"
    );
}
