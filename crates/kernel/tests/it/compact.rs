//! Compaction in the loop: it runs between the steps of a running turn (the turn goes on),
//! the summary request is a logged step without tools, a failed summary trims instead of
//! failing, a cancelled one restores the history, and a request the server refuses as larger
//! than the window is sent again once after a compaction.

use std::sync::Arc;

use codecoder_kernel::{AllowAll, Compactor, ModelError, ResponseEvent, StepInfo, SummaryRequest};
use codecoder_protocol::{Message, RecordBody, SessionId, UserInput};
use codecoder_session::Projection;
use serde_json::json;

use crate::support::{
    EchoTool, Harness, Response, ScriptedModel, answer, bodies, calls, config, record_types, tags,
};

/// Compacts once the history holds four messages; the replacement is one message.
struct AtFour;

impl Compactor for AtFour {
    fn should_compact(&self, info: &StepInfo<'_>, _input: &[UserInput]) -> bool {
        info.history.len() >= 4
    }
    fn history_tokens(&self, history: &[Message]) -> u64 {
        history.len() as u64
    }
    fn summary_request(&self, _: SessionId, _: &[Message], focus: Option<&str>) -> SummaryRequest {
        SummaryRequest { prompt: format!("SUMMARIZE {}", focus.unwrap_or("")), trimmed: None }
    }
    fn replacement(
        &self,
        _history: &[Message],
        summary: Option<&str>,
        why: &str,
        _extra: &[String],
    ) -> Vec<Message> {
        vec![Message::user_text(format!("summary: {}", summary.unwrap_or(why)))]
    }
}

/// Summary requests (no tools) get `summary`; the others three echo calls, then "done".
fn model(summary: impl Fn() -> Response + Send + Sync + 'static) -> Arc<ScriptedModel> {
    let steps = std::sync::Mutex::new(0);
    ScriptedModel::new(move |request| {
        if request.tools.is_empty() {
            return summary();
        }
        let mut steps = steps.lock().unwrap();
        *steps += 1;
        match *steps {
            1..=3 => {
                Response::Events(calls(&[(&format!("c{steps}"), "echo", json!({"text": "x"}))]))
            }
            _ => Response::Events(answer("done")),
        }
    })
}

fn harness(model: Arc<ScriptedModel>) -> Harness {
    Harness::with(model, vec![Arc::new(EchoTool)], Arc::new(AllowAll), config(), |deps| {
        deps.compactor = Some(Arc::new(AtFour));
    })
}

#[test]
fn a_running_turn_compacts_between_steps_and_goes_on() {
    let model = model(|| Response::Events(answer("the summary")));
    let harness = harness(model.clone());
    harness.submit("go");
    let tags = tags(&harness.turn());
    assert!(tags.contains(&"compacted auto summarized=true".to_owned()), "{tags:?}");
    assert_eq!(tags.last().unwrap(), "turn_done Completed cancelled=false");
    let requests = model.requests();
    let summary = requests.iter().position(|r| r.tools.is_empty()).unwrap();
    assert_eq!(requests[summary].history.last().unwrap().text(), "SUMMARIZE ");
    // The request after the summary sees the replacement history.
    assert_eq!(requests[summary + 1].history[0].text(), "summary: the summary");
    // Every echo ran once: three tool steps and the answer, whatever the compactions.
    assert_eq!(requests.iter().filter(|r| !r.tools.is_empty()).count(), 4);
    let logs = harness.shutdown();
    let types = record_types(&logs.root);
    let at = types.windows(6).position(|w| {
        w == [
            "user_message",
            "step_start",
            "context",
            "assistant_message",
            "step_end",
            "compaction",
        ]
    });
    assert!(at.is_some(), "{types:?}");
    // A context record without tools for the summary, and one with them again after it.
    let contexts: Vec<bool> = bodies(&logs.root)
        .iter()
        .filter_map(|body| match body {
            RecordBody::Context(context) => Some(context.tools.is_empty()),
            _ => None,
        })
        .collect();
    assert!(contexts.windows(2).any(|w| w == [true, false]), "{contexts:?}");
}

#[test]
fn a_failed_summary_trims_and_the_turn_goes_on() {
    let model = model(|| Response::Fail("overloaded".to_owned()));
    let harness = harness(model);
    harness.submit("go");
    let tags = tags(&harness.turn());
    assert!(tags.contains(&"compacted auto summarized=false".to_owned()), "{tags:?}");
    assert_eq!(tags.last().unwrap(), "turn_done Completed cancelled=false");
    let logs = harness.shutdown();
    let errors = bodies(&logs.root)
        .into_iter()
        .filter(
            |body| matches!(body, RecordBody::Error { message } if message.contains("overloaded")),
        )
        .count();
    assert!(errors >= 1);
}

#[test]
fn a_cancelled_compaction_restores_the_history() {
    let (_gate_tx, gate) = crossbeam_channel::bounded::<()>(0);
    let model = model(move || Response::Gated {
        before: Vec::new(),
        gate: gate.clone(),
        after: answer("late"),
    });
    let harness = harness(model.clone());
    harness.submit("go");
    // Wait for the summary request, then cancel.
    let deadline = std::time::Instant::now() + crate::support::PATIENCE;
    while !model.requests().iter().any(|r| r.tools.is_empty()) {
        assert!(std::time::Instant::now() < deadline, "no summary request");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    harness.handle.cmd.send(codecoder_protocol::AgentCommand::Cancel).unwrap();
    let tags = tags(&harness.turn());
    assert!(tags.last().unwrap().contains("cancelled=true"), "{tags:?}");
    let logs = harness.shutdown();
    // The history before the summary prompt equals the history after the restoring record.
    let records: Vec<_> = logs.root.records().cloned().collect();
    let prompt = records
        .iter()
        .position(|r| matches!(&r.body, RecordBody::UserMessage { message } if message.text().starts_with("SUMMARIZE")))
        .unwrap();
    let mut before = Projection::new();
    records[..prompt].iter().for_each(|record| before.apply(record));
    let mut after = Projection::new();
    records.iter().for_each(|record| after.apply(record));
    assert_eq!(before.history(), after.history());
}

/// The first request with tools makes an echo call; the next `overflows` ones overflow the
/// window, then they get "done"; summary requests get a summary.
fn overflowing(overflows: usize) -> Arc<ScriptedModel> {
    let seen = std::sync::Mutex::new(0);
    ScriptedModel::new(move |request| {
        if request.tools.is_empty() {
            return Response::Events(answer("the summary"));
        }
        let mut seen = seen.lock().unwrap();
        *seen += 1;
        if *seen == 1 {
            return Response::Events(calls(&[("c1", "echo", json!({"text": "x"}))]));
        }
        if *seen <= overflows + 1 {
            return Response::Events(vec![ResponseEvent::Error(ModelError::context_overflow(
                "the request exceeds the available context size",
            ))]);
        }
        Response::Events(answer("done"))
    })
}

#[test]
fn a_context_overflow_compacts_and_sends_the_request_again() {
    let model = overflowing(1);
    let harness = harness(model.clone());
    harness.submit("go");
    let tags = tags(&harness.turn());
    assert!(tags.contains(&"compacted auto summarized=true".to_owned()), "{tags:?}");
    assert!(
        tags.iter().any(|tag| tag.starts_with("warning") && tag.contains("exceeds the available")),
        "{tags:?}"
    );
    assert_eq!(tags.last().unwrap(), "turn_done Completed cancelled=false");
    let requests = model.requests();
    let with_tools: Vec<bool> = requests.iter().map(|r| !r.tools.is_empty()).collect();
    assert_eq!(with_tools, [true, true, false, true]);
    // The request sent again sees the compacted history.
    assert_eq!(requests[3].history[0].text(), "summary: the summary");
    let logs = harness.shutdown();
    let types = record_types(&logs.root);
    // The refused step ends without an answer, with the error logged, before the compaction.
    let at =
        types.windows(4).position(|w| w == ["step_start", "error", "step_end", "user_message"]);
    assert!(at.is_some(), "{types:?}");
}

#[test]
fn a_second_context_overflow_in_a_turn_fails_it() {
    let model = overflowing(2);
    let harness = harness(model.clone());
    harness.submit("go");
    let tags = tags(&harness.turn());
    let last = tags.last().unwrap();
    assert!(last.starts_with("turn_done failed: model error:"), "{tags:?}");
    assert!(last.contains("exceeds the available context size"), "{tags:?}");
    // The call, then one compaction between two overflows.
    assert_eq!(model.requests().len(), 4);
    harness.shutdown();
}

#[test]
fn a_context_overflow_without_a_compactor_fails_the_turn() {
    let model = overflowing(1);
    let harness = Harness::with(
        model.clone(),
        vec![Arc::new(EchoTool)],
        Arc::new(AllowAll),
        config(),
        |_| {},
    );
    harness.submit("go");
    let tags = tags(&harness.turn());
    assert!(tags.last().unwrap().starts_with("turn_done failed: model error:"), "{tags:?}");
    assert_eq!(model.requests().len(), 2);
    harness.shutdown();
}

#[test]
fn a_context_overflow_of_the_first_request_fails_the_turn_without_a_summary() {
    // Only the user's prompt so far: a summary would be no smaller.
    let model = ScriptedModel::queue(vec![Response::Events(vec![ResponseEvent::Error(
        ModelError::context_overflow("the request exceeds the available context size"),
    )])]);
    let harness = harness(model.clone());
    harness.submit("go");
    let tags = tags(&harness.turn());
    assert!(tags.last().unwrap().starts_with("turn_done failed: model error:"), "{tags:?}");
    assert!(!tags.iter().any(|tag| tag.starts_with("compacted")), "{tags:?}");
    assert_eq!(model.requests().len(), 1);
    harness.shutdown();
}
