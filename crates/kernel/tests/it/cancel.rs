//! Cancel at any moment: while streaming a huge response, while a child process runs, while an
//! approval is pending, between steps. After each, the log validates and nothing is left
//! running.

use std::sync::Arc;
use std::time::{Duration, Instant};

use codecoder_kernel::AllowAll;
use codecoder_protocol::{
    AgentCommand, AgentEventKind, ApprovalDecision, RecordBody, SyntheticReason, ToolResultStatus,
    TurnOutcome,
};
use codecoder_sandbox::live_group_members;
use crossbeam_channel::bounded;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::*;

fn turn_outcome(logs: &Logs, turn: u32) -> TurnOutcome {
    bodies(&logs.root)
        .into_iter()
        .find_map(|b| match b {
            RecordBody::TurnEnd { turn: t, outcome, .. } if t.get() == turn => Some(outcome),
            _ => None,
        })
        .unwrap()
}

#[test]
fn cancel_in_the_middle_of_a_million_token_stream() {
    let model = ScriptedModel::queue(vec![
        Response::Flood { tokens: 1_000_000 },
        Response::Events(answer("fresh")),
    ]);
    let harness = Harness::start(model, vec![]);
    harness.submit("talk a lot");
    let mut received = 0usize;
    while received < 1000 {
        if let AgentEventKind::TextDelta { delta, .. } = harness.next().kind {
            received += delta.len() / 4;
        }
    }
    let sent = Instant::now();
    harness.handle.cmd.send(AgentCommand::Cancel).unwrap();
    let events = harness.turn();
    let latency = sent.elapsed();
    received += events
        .iter()
        .map(|e| match &e.kind {
            AgentEventKind::TextDelta { delta, .. } => delta.len() / 4,
            _ => 0,
        })
        .sum::<usize>();
    let AgentEventKind::TurnDone { cancelled, outcome, .. } = &events.last().unwrap().kind else {
        unreachable!()
    };
    assert!(*cancelled);
    assert_eq!(*outcome, TurnOutcome::Cancelled);
    assert!(received < 1_000_000, "the stream was not dropped: {received} tokens arrived");
    assert!(latency < Duration::from_millis(500), "cancel took {latency:?}");

    // The agent still works.
    harness.submit("again");
    let events = harness.turn();
    assert_eq!(tags(&events).last().unwrap(), "turn_done Completed cancelled=false");

    let logs = harness.shutdown();
    assert_eq!(turn_outcome(&logs, 1), TurnOutcome::Cancelled);
    // What was streamed before the cancel is kept as a (partial) assistant message.
    let partial = bodies(&logs.root)
        .into_iter()
        .find_map(|b| match b {
            RecordBody::AssistantMessage { message } => Some(message.text()),
            _ => None,
        })
        .unwrap();
    assert!(partial.starts_with("tok tok "), "{}", &partial[..20.min(partial.len())]);
}

#[test]
fn cancel_kills_a_running_child_process_group() {
    let (pgids_tx, pgids) = bounded(4);
    let model = ScriptedModel::queue(vec![Response::Events(calls(&[(
        "c1",
        "run",
        json!({ "argv": ["sh", "-c", "sleep 100 & echo started; sleep 100; wait"] }),
    )]))]);
    let harness = Harness::start(model, vec![Arc::new(CommandTool { pgids: pgids_tx })]);
    harness.submit("run it");
    let pgid = pgids.recv_timeout(PATIENCE).unwrap();
    // The shell prints after forking the background sleep: the group has a grandchild now.
    loop {
        if let AgentEventKind::ToolOutputDelta { chunk, .. } = harness.next().kind {
            assert_eq!(chunk, "started\n");
            break;
        }
    }
    assert!(live_group_members(pgid).len() >= 2, "{:?}", live_group_members(pgid));
    let sent = Instant::now();
    harness.handle.cmd.send(AgentCommand::Cancel).unwrap();
    let events = harness.turn();
    let latency = sent.elapsed();
    assert_eq!(live_group_members(pgid), Vec::<u32>::new(), "processes of the group survived");
    assert!(latency < Duration::from_secs(2), "cancel took {latency:?}");
    assert_eq!(tags(&events).last().unwrap(), "turn_done Cancelled cancelled=true");
    let logs = harness.shutdown();
    let result = bodies(&logs.root)
        .into_iter()
        .find_map(|b| match b {
            RecordBody::ToolResult { result, synthetic } => Some((result.status, synthetic)),
            _ => None,
        })
        .unwrap();
    // The tool itself reported the cancel (it stopped in time), so the result is not synthetic.
    assert_eq!(result, (ToolResultStatus::Cancelled, None));
    assert_eq!(turn_outcome(&logs, 1), TurnOutcome::Cancelled);
}

#[test]
fn cancel_while_an_approval_is_pending() {
    let write = Arc::new(WriteTool::default());
    let model = ScriptedModel::queue(vec![Response::Events(calls(&[
        ("c1", "write", json!({ "path": "a" })),
        ("c2", "write", json!({ "path": "b" })),
    ]))]);
    let harness =
        Harness::with(model, vec![write.clone()], Arc::new(AskUnlessReadOnly), config(), |_| {});
    harness.submit("edit");
    let request = loop {
        if let AgentEventKind::ApprovalRequest(request) = harness.next().kind {
            break request;
        }
    };
    harness.handle.cmd.send(AgentCommand::Cancel).unwrap();
    let events = harness.turn();
    assert_eq!(tags(&events).last().unwrap(), "turn_done Cancelled cancelled=true");
    // The request was withdrawn: answering it now reaches nobody.
    assert!(!request.reply.send(ApprovalDecision::AllowOnce));
    assert!(write.log.lock().unwrap().is_empty());
    let logs = harness.shutdown();
    let records: Vec<String> = bodies(&logs.root)
        .into_iter()
        .filter_map(|b| match b {
            RecordBody::Approval { call_id, decision, .. } => {
                Some(format!("approval {call_id} {decision:?}"))
            }
            RecordBody::ToolResult { result, synthetic } => {
                Some(format!("result {} {:?} {:?}", result.tool_call_id, result.status, synthetic))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        records,
        [
            "approval c1 Cancelled",
            "result c1 Cancelled Some(Cancelled)",
            "result c2 Cancelled Some(Cancelled)",
        ]
    );
    let _ = SyntheticReason::Cancelled;
}

#[test]
fn cancel_while_a_tool_ignores_it_closes_the_turn_after_the_grace() {
    // A tool that ignores the token: the turn still ends after `cancel_grace`, the call gets a
    // synthetic result, and the thread is joined at shutdown.
    let (release_tx, release) = bounded::<()>(1);
    struct Stubborn(crossbeam_channel::Receiver<()>);
    impl codecoder_kernel::Tool for Stubborn {
        fn name(&self) -> &str {
            "stubborn"
        }
        fn description(&self) -> &str {
            "Ignores cancel."
        }
        fn schema(&self) -> serde_json::Value {
            json!({ "type": "object" })
        }
        fn kind(&self) -> codecoder_kernel::ToolKind {
            codecoder_kernel::ToolKind::ReadOnly
        }
        fn execute(
            &self,
            _ctx: &codecoder_kernel::ToolContext,
            _args: serde_json::Value,
        ) -> Result<codecoder_kernel::ToolOutput, codecoder_protocol::ToolError> {
            let _ = self.0.recv();
            Ok(codecoder_kernel::ToolOutput::text("late"))
        }
    }
    let model =
        ScriptedModel::queue(vec![Response::Events(calls(&[("c1", "stubborn", json!({}))]))]);
    let mut config = config();
    config.cancel_grace = Duration::from_millis(100);
    let harness =
        Harness::with(model, vec![Arc::new(Stubborn(release))], Arc::new(AllowAll), config, |_| {});
    harness.submit("go");
    loop {
        if matches!(harness.next().kind, AgentEventKind::ToolStarted { .. }) {
            break;
        }
    }
    harness.handle.cmd.send(AgentCommand::Cancel).unwrap();
    let events = harness.turn();
    assert!(
        tags(&events).iter().any(|t| t.starts_with("warning 1 tool(s) did not stop")),
        "{:?}",
        tags(&events)
    );
    assert_eq!(tags(&events).last().unwrap(), "turn_done Cancelled cancelled=true");
    release_tx.send(()).unwrap();
    let logs = harness.shutdown();
    let synthetic = bodies(&logs.root).into_iter().find_map(|b| match b {
        RecordBody::ToolResult { synthetic, .. } => Some(synthetic),
        _ => None,
    });
    assert_eq!(synthetic, Some(Some(SyntheticReason::Cancelled)));
}

#[test]
fn cancel_when_idle_does_nothing_and_shutdown_mid_turn_closes_it() {
    let model = ScriptedModel::queue(vec![Response::Flood { tokens: 10_000_000 }]);
    let harness = Harness::start(model, vec![]);
    harness.handle.cmd.send(AgentCommand::Cancel).unwrap();
    harness.submit("go");
    loop {
        if matches!(harness.next().kind, AgentEventKind::TextDelta { .. }) {
            break;
        }
    }
    // Shutdown while streaming: the turn is cancelled and closed, then the agent stops.
    let logs = harness.shutdown();
    assert_eq!(turn_outcome(&logs, 1), TurnOutcome::Cancelled);
    // The root log stays resumable: it ends with the closed turn, not `session_end`.
    assert_eq!(record_types(&logs.root).last(), Some(&"turn_end"));
}

/// Sends `Cancel` to its own agent and returns at once, so the cancel lands at the end of the
/// step (between steps, or racing the result).
struct CancelsItsAgent(std::sync::OnceLock<crossbeam_channel::Sender<AgentCommand>>);

impl codecoder_kernel::Tool for CancelsItsAgent {
    fn name(&self) -> &str {
        "stop"
    }
    fn description(&self) -> &str {
        "Cancels the turn."
    }
    fn schema(&self) -> serde_json::Value {
        json!({ "type": "object" })
    }
    fn kind(&self) -> codecoder_kernel::ToolKind {
        codecoder_kernel::ToolKind::ReadOnly
    }
    fn execute(
        &self,
        _ctx: &codecoder_kernel::ToolContext,
        _args: serde_json::Value,
    ) -> Result<codecoder_kernel::ToolOutput, codecoder_protocol::ToolError> {
        self.0.get().unwrap().send(AgentCommand::Cancel).unwrap();
        Ok(codecoder_kernel::ToolOutput::text("sent"))
    }
}

#[test]
fn cancel_at_a_step_boundary_sends_no_further_request() {
    let tool = Arc::new(CancelsItsAgent(std::sync::OnceLock::new()));
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "stop", json!({}))])),
        Response::Events(answer("must not be asked")),
    ]);
    let harness = Harness::start(model.clone(), vec![tool.clone()]);
    tool.0.set(harness.handle.cmd.clone()).unwrap();
    harness.submit("go");
    let events = harness.turn();
    assert_eq!(tags(&events).last().unwrap(), "turn_done Cancelled cancelled=true");
    assert_eq!(model.requests().len(), 1);
    let logs = harness.shutdown();
    assert_eq!(turn_outcome(&logs, 1), TurnOutcome::Cancelled);
    // The tool finished before the cancel was handled, so its real result is logged.
    let result = bodies(&logs.root).into_iter().find_map(|b| match b {
        RecordBody::ToolResult { result, synthetic } => Some((result.status, synthetic)),
        _ => None,
    });
    assert_eq!(result, Some((ToolResultStatus::Success, None)));
}
