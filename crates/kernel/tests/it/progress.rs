//! `CallProgress`: a call whose tool reads its arguments as they stream is described while the
//! model writes it, at most once per `progress_interval`, before the call's `ToolStarted`; a
//! retried step starts over with fresh readers; nothing of it is logged.

use std::sync::Arc;
use std::time::Duration;

use codecoder_kernel::{
    AllowAll, InputReader, ModelError, ResponseEvent, Tool, ToolContext, ToolKind, ToolOutput,
};
use codecoder_protocol::{AgentEvent, AgentEventKind, CallView, StopReason, ToolCallId, ToolError};
use serde_json::{Value, json};

use crate::support::{Harness, Response, ScriptedModel, answer, completed, config, usage};

/// A tool whose reader counts the bytes of arguments it was given; its view's title says how
/// many (the whole call's view says "done").
struct CountingTool;

impl Tool for CountingTool {
    fn name(&self) -> &str {
        "count"
    }
    fn description(&self) -> &str {
        "Counts."
    }
    fn schema(&self) -> Value {
        json!({ "type": "object", "properties": { "text": { "type": "string" } } })
    }
    fn kind(&self) -> ToolKind {
        ToolKind::ReadOnly
    }
    fn view(&self, _args: &Value) -> CallView {
        CallView { title: "done".to_owned(), ..CallView::default() }
    }
    fn input_reader(&self) -> Option<Box<dyn InputReader>> {
        Some(Box::new(Counter { bytes: 0, shown: 0 }))
    }
    fn execute(&self, _ctx: &ToolContext, _args: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("counted"))
    }
}

struct Counter {
    bytes: usize,
    shown: usize,
}

impl InputReader for Counter {
    fn push(&mut self, delta: &str) {
        self.bytes += delta.len();
    }
    fn view(&mut self) -> Option<CallView> {
        if self.bytes == self.shown {
            return None;
        }
        self.shown = self.bytes;
        Some(CallView { title: format!("{} bytes", self.bytes), ..CallView::default() })
    }
}

const ARGS: [&str; 4] = ["{\"te", "xt\": \"a", "bcdef", "\"}"];

/// The events of a `count` call whose arguments come in `ARGS`' pieces.
fn streamed_call(id: &str) -> Vec<ResponseEvent> {
    let mut events =
        vec![ResponseEvent::ToolCallStart { id: ToolCallId::new(id), name: "count".to_owned() }];
    events.extend(ARGS.iter().map(|delta| ResponseEvent::ToolCallArgsDelta {
        id: ToolCallId::new(id),
        delta: (*delta).to_owned(),
    }));
    events.push(ResponseEvent::ToolCallDone { id: ToolCallId::new(id) });
    events.push(usage(100, 20));
    events.push(completed(StopReason::ToolUse));
    events
}

/// Runs one turn with `responses` and `progress_interval`; returns its events and the log's
/// record types.
fn run(responses: Vec<Response>, interval: Duration) -> (Vec<AgentEvent>, Vec<&'static str>) {
    let model = ScriptedModel::queue(responses);
    let mut config = config();
    config.progress_interval = interval;
    let harness =
        Harness::with(model, vec![Arc::new(CountingTool)], Arc::new(AllowAll), config, |_| {});
    harness.submit("count");
    let events = harness.turn();
    let logs = harness.shutdown();
    (events, crate::support::record_types(&logs.root))
}

/// The titles of the `CallProgress` events, and the index of each in `events`.
fn progress(events: &[AgentEvent]) -> Vec<(usize, String)> {
    events
        .iter()
        .enumerate()
        .filter_map(|(index, event)| match &event.kind {
            AgentEventKind::CallProgress { call_id, name, view, .. } => {
                assert_eq!((call_id.as_str(), name.as_str()), ("c1", "count"));
                Some((index, view.title.clone()))
            }
            _ => None,
        })
        .collect()
}

fn started_at(events: &[AgentEvent]) -> usize {
    events
        .iter()
        .position(|event| matches!(&event.kind, AgentEventKind::ToolStarted { view, .. } if view.title == "done"))
        .expect("the call started with its whole view")
}

#[test]
fn every_new_view_goes_out_when_the_interval_allows_and_before_the_call_starts() {
    let (events, records) = run(
        vec![Response::Events(streamed_call("c1")), Response::Events(answer("ok"))],
        Duration::ZERO,
    );
    let progress = progress(&events);
    let titles: Vec<&str> = progress.iter().map(|(_, title)| title.as_str()).collect();
    assert_eq!(titles, ["4 bytes", "11 bytes", "16 bytes", "18 bytes"]);
    let started = started_at(&events);
    assert!(progress.iter().all(|(index, _)| *index < started), "progress after the start");
    // Nothing of the progress is logged: the log holds the call as the model wrote it.
    assert!(!records.iter().any(|record| record.contains("progress")), "{records:?}");
    assert_eq!(records.iter().filter(|record| **record == "tool_started").count(), 1);
}

#[test]
fn a_call_gets_no_second_progress_within_the_interval() {
    let (events, _) = run(
        vec![Response::Events(streamed_call("c1")), Response::Events(answer("ok"))],
        Duration::from_secs(3600),
    );
    let progress = progress(&events);
    let titles: Vec<&str> = progress.iter().map(|(_, title)| title.as_str()).collect();
    assert_eq!(titles, ["4 bytes"]);
    assert!(progress[0].0 < started_at(&events));
}

#[test]
fn a_retried_step_reads_the_call_again_from_the_start() {
    let mut broken = streamed_call("c1");
    broken.truncate(3);
    broken.push(ResponseEvent::Error(ModelError::retryable("connection reset")));
    let (events, _) = run(
        vec![
            Response::Events(broken),
            Response::Events(streamed_call("c1")),
            Response::Events(answer("ok")),
        ],
        Duration::from_secs(3600),
    );
    let titles: Vec<String> = progress(&events).into_iter().map(|(_, title)| title).collect();
    // A reader kept from the broken attempt would have counted on from 11 bytes, and its
    // interval would not have let a second event out.
    assert_eq!(titles, ["4 bytes", "4 bytes"]);
    let retried = events
        .iter()
        .position(|event| matches!(event.kind, AgentEventKind::StepRetried { .. }))
        .expect("the step was retried");
    let second = progress(&events)[1].0;
    assert!(retried < second && second < started_at(&events));
}

#[test]
fn a_tool_without_a_reader_gets_no_progress() {
    let model = ScriptedModel::queue(vec![
        Response::Events(crate::support::calls(&[("e1", "echo", json!({ "text": "hi" }))])),
        Response::Events(answer("ok")),
    ]);
    let mut config = config();
    config.progress_interval = Duration::ZERO;
    let harness = Harness::with(
        model,
        vec![Arc::new(crate::support::EchoTool)],
        Arc::new(AllowAll),
        config,
        |_| {},
    );
    harness.submit("echo");
    let events = harness.turn();
    harness.shutdown();
    assert!(!events.iter().any(|event| matches!(event.kind, AgentEventKind::CallProgress { .. })));
}

/// Never compacts by itself; its summary request is a bare prompt.
struct OnRequest;

impl codecoder_kernel::Compactor for OnRequest {
    fn should_compact(
        &self,
        _info: &codecoder_kernel::StepInfo<'_>,
        _input: &[codecoder_protocol::UserInput],
    ) -> bool {
        false
    }
    fn history_tokens(&self, history: &[codecoder_protocol::Message]) -> u64 {
        history.len() as u64
    }
    fn summary_request(
        &self,
        _: codecoder_protocol::SessionId,
        _: &[codecoder_protocol::Message],
        _: Option<&str>,
    ) -> codecoder_kernel::SummaryRequest {
        codecoder_kernel::SummaryRequest { prompt: "SUMMARIZE".to_owned(), trimmed: None }
    }
    fn replacement(
        &self,
        _history: &[codecoder_protocol::Message],
        summary: Option<&str>,
        why: &str,
        _extra: &[String],
    ) -> Vec<codecoder_protocol::Message> {
        vec![codecoder_protocol::Message::user_text(summary.unwrap_or(why))]
    }
}

#[test]
fn the_summary_step_of_a_compaction_shows_no_progress() {
    // The summary request offers no tools; a model that writes a call anyway is not shown.
    let mut summary = streamed_call("c9");
    summary.pop();
    summary.push(completed(StopReason::EndTurn));
    let model = ScriptedModel::queue(vec![
        Response::Events(streamed_call("c1")),
        Response::Events(answer("ok")),
        Response::Events(summary),
    ]);
    let mut config = config();
    config.progress_interval = Duration::ZERO;
    let harness =
        Harness::with(model, vec![Arc::new(CountingTool)], Arc::new(AllowAll), config, |deps| {
            deps.compactor = Some(Arc::new(OnRequest));
        });
    harness.submit("count");
    assert_eq!(progress(&harness.turn()).len(), ARGS.len());
    harness.handle.cmd.send(codecoder_protocol::AgentCommand::Compact { focus: None }).unwrap();
    let compaction = harness.turn();
    assert!(
        compaction.iter().any(|event| matches!(event.kind, AgentEventKind::Compacted { .. })),
        "the compaction ran"
    );
    assert!(
        !compaction.iter().any(|event| matches!(event.kind, AgentEventKind::CallProgress { .. })),
        "progress from the summary step"
    );
    harness.shutdown();
}
