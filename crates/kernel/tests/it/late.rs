//! Tools that join after the agent started (`LateTools`): they are offered from the next step
//! on, after the registered tools, the request's new tool list is logged before it is sent, and
//! the source's notices become warnings.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use codecoder_kernel::{LateTools, Tool, ToolContext, ToolKind, ToolOutput, ToolSource};
use codecoder_protocol::{AgentEventKind, RecordBody, ToolError, ToolResultStatus};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::*;

/// A read-only tool that answers with its own name.
struct Named(&'static str);

impl Tool for Named {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "Answers with its name."
    }
    fn schema(&self) -> Value {
        json!({ "type": "object", "properties": {} })
    }
    fn kind(&self) -> ToolKind {
        ToolKind::ReadOnly
    }
    fn execute(&self, _ctx: &ToolContext, _args: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(self.0))
    }
}

/// Offers `late` from its second poll on (the second step), with a notice.
struct SecondPoll {
    polls: AtomicUsize,
}

impl ToolSource for SecondPoll {
    fn poll(&self, late: &LateTools) {
        if self.polls.fetch_add(1, Ordering::SeqCst) == 1 {
            late.add(Arc::new(Named("late")));
            late.add(Arc::new(Named("base")));
            late.notify("a server did not start");
        }
    }
}

#[test]
fn late_tools_join_at_the_next_step_after_the_registered_ones() {
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "base", json!({}))])),
        Response::Events(calls(&[("c2", "late", json!({}))])),
        Response::Events(answer("done")),
    ]);
    let late = LateTools::with_source(Arc::new(SecondPoll { polls: AtomicUsize::new(0) }));
    let harness = Harness::with(
        model.clone(),
        vec![Arc::new(Named("base"))],
        Arc::new(codecoder_kernel::AllowAll),
        config(),
        |deps| {
            let mut registry = (*deps.tools).clone();
            registry.attach_late(late);
            deps.tools = Arc::new(registry);
        },
    );
    harness.submit("go");
    let events = harness.turn();
    let warnings: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            AgentEventKind::Warning { message } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(warnings, ["a server did not start"], "{:?}", tags(&events));

    let names = |n: usize| -> Vec<String> {
        model.requests()[n].tools.iter().map(|t| t.name.clone()).collect()
    };
    assert_eq!(names(0), ["base"]);
    // Appended; a late tool named like a registered one is not offered twice.
    assert_eq!(names(1), ["base", "late"]);
    assert_eq!(names(2), ["base", "late"]);

    let logs = harness.shutdown();
    let contexts: Vec<Vec<String>> = logs
        .root
        .records()
        .filter_map(|r| match &r.body {
            RecordBody::Context(context) => {
                Some(context.tools.iter().map(|t| t.name.clone()).collect())
            }
            _ => None,
        })
        .collect();
    assert_eq!(contexts, [vec!["base".to_owned()], vec!["base".to_owned(), "late".to_owned()]]);
    let late_result = logs.root.records().find_map(|r| match &r.body {
        RecordBody::ToolResult { result, .. } if result.tool_call_id.as_str() == "c2" => {
            Some(result)
        }
        _ => None,
    });
    assert_eq!(late_result.unwrap().status, ToolResultStatus::Success);
}

/// Not ready until told; its wait reports that it began and returns only when cancelled.
struct Starting {
    ready: std::sync::atomic::AtomicBool,
    waiting: crossbeam_channel::Sender<()>,
    cancelled: std::sync::atomic::AtomicBool,
}

impl ToolSource for Starting {
    fn poll(&self, _late: &LateTools) {}

    fn is_ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }

    fn wait_ready(&self, cancel: &codecoder_kernel::CancelToken) {
        let _ = self.waiting.send(());
        let _ = cancel.signal().recv();
        self.cancelled.store(cancel.is_cancelled(), Ordering::SeqCst);
    }
}

#[test]
fn a_cancel_ends_the_wait_for_a_source_that_is_not_ready() {
    let model = ScriptedModel::queue(vec![Response::Events(answer("done"))]);
    let (waiting, began) = crossbeam_channel::unbounded();
    let source = Arc::new(Starting {
        ready: std::sync::atomic::AtomicBool::new(false),
        waiting,
        cancelled: std::sync::atomic::AtomicBool::new(false),
    });
    let late = LateTools::with_source(Arc::clone(&source) as Arc<dyn ToolSource>);
    let harness = Harness::with(
        model.clone(),
        vec![Arc::new(Named("base"))],
        Arc::new(codecoder_kernel::AllowAll),
        config(),
        |deps| {
            let mut registry = (*deps.tools).clone();
            registry.attach_late(late);
            deps.tools = Arc::new(registry);
        },
    );
    harness.submit("go");
    began.recv().unwrap();
    harness.handle.cmd.send(codecoder_protocol::AgentCommand::Cancel).unwrap();
    let events = harness.turn();
    let cancelled =
        events.iter().any(|e| matches!(e.kind, AgentEventKind::TurnDone { cancelled: true, .. }));
    assert!(cancelled, "{:?}", tags(&events));
    assert!(source.cancelled.load(Ordering::SeqCst), "the wait saw the cancel");
    assert_eq!(model.requests().len(), 0, "no request while the source was not ready");

    // Ready by the next turn: no wait, the request goes out.
    source.ready.store(true, Ordering::SeqCst);
    harness.submit("again");
    let events = harness.turn();
    assert!(
        events.iter().any(|e| matches!(e.kind, AgentEventKind::TurnDone { cancelled: false, .. })),
        "{:?}",
        tags(&events)
    );
    assert_eq!(model.requests().len(), 1);
    assert!(began.try_recv().is_err(), "a ready source is not waited for");
    harness.shutdown();
}
