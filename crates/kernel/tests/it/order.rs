//! Event order and log content of ordinary turns: text only, a multi-step tool loop, parallel
//! read-only calls, serialized mutating calls, approvals, steering.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use codecoder_protocol::{
    AgentCommand, AgentEventKind, ApprovalDecision, MessageItem, RecordBody, Role, StopReason,
    ToolResultStatus, TurnOutcome, UserInput,
};
use crossbeam_channel::bounded;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::*;

fn plain(history: &[Arc<codecoder_protocol::Message>]) -> Vec<codecoder_protocol::Message> {
    history.iter().map(|m| (**m).clone()).collect()
}

#[test]
fn text_only_turn() {
    let model = ScriptedModel::queue(vec![Response::Events(answer("hello there friend"))]);
    let harness = Harness::start(model.clone(), vec![]);
    harness.submit("hi");
    let events = harness.turn();
    assert_eq!(
        tags(&events),
        [
            "turn_started 1",
            "step_started 1",
            "text",
            "step_finished 1",
            "turn_done Completed cancelled=false"
        ]
    );
    let streamed: String = events
        .iter()
        .filter_map(|e| match &e.kind {
            AgentEventKind::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, "hello there friend");
    let AgentEventKind::TurnDone { usage, .. } = &events.last().unwrap().kind else {
        unreachable!()
    };
    assert_eq!((usage.input_tokens, usage.output_tokens), (100, 10));

    let logs = harness.shutdown();
    assert_eq!(
        record_types(&logs.root),
        [
            "session_meta",
            "turn_start",
            "user_message",
            "step_start",
            "context",
            "assistant_message",
            "step_end",
            "turn_end"
        ]
    );
    let history = logs.root.projection().into_history();
    assert_eq!(history.len(), 2);
    assert_eq!(history[1].text(), "hello there friend");
    // The request showed the model exactly the logged history at that point.
    assert_eq!(plain(&model.requests()[0].history), history[..1]);
}

#[test]
fn multi_step_tool_loop() {
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "echo", json!({ "text": "one" }))])),
        Response::Events(calls(&[("c2", "echo", json!({ "text": "two" }))])),
        Response::Events(answer("done")),
    ]);
    let harness = Harness::start(model.clone(), vec![Arc::new(EchoTool)]);
    harness.submit("go");
    let events = harness.turn();
    assert_eq!(
        tags(&events),
        [
            "turn_started 1",
            "step_started 1",
            "tool_started c1",
            "tool_finished c1 Success",
            "step_finished 1",
            "step_started 2",
            "tool_started c2",
            "tool_finished c2 Success",
            "step_finished 2",
            "step_started 3",
            "text",
            "step_finished 3",
            "turn_done Completed cancelled=false",
        ]
    );
    // Usage per step adds up per turn.
    let AgentEventKind::TurnDone { usage, .. } = &events.last().unwrap().kind else {
        unreachable!()
    };
    assert_eq!((usage.input_tokens, usage.output_tokens), (300, 50));
    // Model-visible ⟺ logged: the third request carries both results.
    let third = &model.requests()[2];
    let results: Vec<String> = third
        .history
        .iter()
        .filter(|m| m.role == Role::Tool)
        .flat_map(|m| m.items.iter())
        .filter_map(|item| match item {
            MessageItem::ToolResult(result) => {
                Some(format!("{}={:?}", result.tool_call_id, result.content))
            }
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    let logs = harness.shutdown();
    let history = logs.root.projection().into_history();
    assert_eq!(plain(&third.history), history[..third.history.len()]);
    let ends: Vec<Option<StopReason>> = bodies(&logs.root)
        .into_iter()
        .filter_map(|b| match b {
            RecordBody::StepEnd { stop_reason, .. } => Some(stop_reason),
            _ => None,
        })
        .collect();
    assert_eq!(
        ends,
        [Some(StopReason::ToolUse), Some(StopReason::ToolUse), Some(StopReason::EndTurn)]
    );
}

#[test]
fn parallel_read_only_calls_keep_call_order() {
    // Four calls of 300 ms: serial would take 1.2 s. The first sleeps longest so it finishes
    // last, yet its result comes first.
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[
            ("c1", "echo", json!({ "text": "a", "sleep_ms": 400 })),
            ("c2", "echo", json!({ "text": "b", "sleep_ms": 300 })),
            ("c3", "echo", json!({ "text": "c", "sleep_ms": 300 })),
            ("c4", "echo", json!({ "text": "d", "sleep_ms": 300 })),
        ])),
        Response::Events(answer("ok")),
    ]);
    let harness = Harness::start(model, vec![Arc::new(EchoTool)]);
    let started = Instant::now();
    harness.submit("go");
    let events = harness.turn();
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_millis(1000), "took {elapsed:?}; the sum is 1300 ms");
    let finished: Vec<String> =
        tags(&events).into_iter().filter(|t| t.starts_with("tool_finished")).collect();
    assert_eq!(
        finished,
        [
            "tool_finished c1 Success",
            "tool_finished c2 Success",
            "tool_finished c3 Success",
            "tool_finished c4 Success"
        ]
    );
    let logs = harness.shutdown();
    let logged: Vec<String> = bodies(&logs.root)
        .into_iter()
        .filter_map(|b| match b {
            RecordBody::ToolResult { result, .. } => Some(result.tool_call_id.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(logged, ["c1", "c2", "c3", "c4"]);
}

#[test]
fn mutating_calls_run_one_by_one_in_order() {
    let write = Arc::new(WriteTool::default());
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[
            ("c1", "write", json!({ "path": "a" })),
            ("c2", "write", json!({ "path": "b" })),
            ("c3", "write", json!({ "path": "c" })),
        ])),
        Response::Events(answer("ok")),
    ]);
    let harness = Harness::start(model, vec![write.clone()]);
    harness.submit("go");
    harness.turn();
    assert_eq!(
        *write.log.lock().unwrap(),
        ["start a", "end a", "start b", "end b", "start c", "end c"]
    );
    assert_eq!(write.peak.load(Ordering::SeqCst), 1);
    harness.shutdown();
}

/// Runs one turn whose first step asks for `write` on `path` twice (two steps), answering each
/// approval request with the next of `decisions`; returns the events and the logs.
fn approval_turn(decisions: Vec<ApprovalDecision>) -> (Vec<String>, Logs, usize) {
    let write = Arc::new(WriteTool::default());
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "write", json!({ "path": "x" }))])),
        Response::Events(calls(&[("c2", "write", json!({ "path": "x" }))])),
        Response::Events(answer("ok")),
    ]);
    let harness =
        Harness::with(model, vec![write.clone()], Arc::new(AskUnlessReadOnly), config(), |_| {});
    harness.submit("go");
    let mut decisions = decisions.into_iter();
    let mut events = Vec::new();
    loop {
        let event = harness.next();
        let done = is_root_turn_done(&event);
        if let AgentEventKind::ApprovalRequest(request) = event.kind {
            assert_eq!(request.permission_keys, ["edit:x"]);
            let tag = format!("approval {}", request.call.id);
            assert!(request.reply.send(decisions.next().expect("an unexpected approval request")));
            events.push(tag);
            continue;
        }
        events.extend(tags(std::slice::from_ref(&event)));
        if done {
            break;
        }
    }
    let runs = write.log.lock().unwrap().len() / 2;
    (events, harness.shutdown(), runs)
}

fn approvals(logs: &Logs) -> Vec<(String, ApprovalDecision, String)> {
    bodies(&logs.root)
        .into_iter()
        .filter_map(|b| match b {
            RecordBody::Approval { call_id, decision, decided_by, .. } => {
                Some((call_id.to_string(), decision, decided_by))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn approval_once_asks_each_time() {
    let (events, logs, runs) =
        approval_turn(vec![ApprovalDecision::AllowOnce, ApprovalDecision::AllowOnce]);
    assert_eq!(events.iter().filter(|t| t.starts_with("approval")).count(), 2);
    assert_eq!(runs, 2);
    assert_eq!(
        approvals(&logs),
        [
            ("c1".to_owned(), ApprovalDecision::AllowOnce, "user".to_owned()),
            ("c2".to_owned(), ApprovalDecision::AllowOnce, "user".to_owned()),
        ]
    );
}

#[test]
fn approval_for_session_is_remembered_by_key() {
    let (events, logs, runs) = approval_turn(vec![ApprovalDecision::AllowForSession]);
    assert_eq!(events.iter().filter(|t| t.starts_with("approval")).count(), 1);
    assert_eq!(runs, 2);
    assert_eq!(
        approvals(&logs),
        [
            ("c1".to_owned(), ApprovalDecision::AllowForSession, "user".to_owned()),
            ("c2".to_owned(), ApprovalDecision::AllowForSession, "session-grant".to_owned()),
        ]
    );
}

#[test]
fn approval_deny_and_deny_with_feedback_reach_the_model() {
    let (events, logs, runs) = approval_turn(vec![
        ApprovalDecision::Deny,
        ApprovalDecision::DenyWithFeedback { feedback: "use a branch".to_owned() },
    ]);
    assert_eq!(runs, 0);
    assert!(
        events.contains(
            &"tool_finished c1 error: permission denied: the user denied this call".to_owned()
        ),
        "{events:?}"
    );
    assert!(
        events.contains(
            &"tool_finished c2 error: permission denied: the user denied this call: use a branch"
                .to_owned()
        ),
        "{events:?}"
    );
    let results: Vec<(ToolResultStatus, bool)> = bodies(&logs.root)
        .into_iter()
        .filter_map(|b| match b {
            RecordBody::ToolResult { result, synthetic } => {
                Some((result.status, synthetic.is_some()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(results, [(ToolResultStatus::Error, true), (ToolResultStatus::Error, true)]);
}

#[test]
fn steer_mid_turn_is_injected_at_the_next_step_boundary_in_order() {
    let (gate_tx, gate) = bounded(1);
    let model = ScriptedModel::queue(vec![
        Response::Gated {
            before: vec![text("working ")],
            gate,
            after: calls(&[("c1", "echo", json!({ "text": "x" }))]),
        },
        Response::Events(answer("steered")),
    ]);
    let harness = Harness::start(model.clone(), vec![Arc::new(EchoTool)]);
    harness.submit("first");
    // Wait until the first step streams, then steer twice and submit once, then let it finish.
    loop {
        if matches!(harness.next().kind, AgentEventKind::TextDelta { .. }) {
            break;
        }
    }
    harness.handle.cmd.send(AgentCommand::Steer(UserInput::text("steer one"))).unwrap();
    harness.handle.cmd.send(AgentCommand::Steer(UserInput::text("steer two"))).unwrap();
    harness.handle.cmd.send(AgentCommand::Submit(UserInput::text("submit three"))).unwrap();
    gate_tx.send(()).unwrap();
    let events = harness.turn();
    let AgentEventKind::TurnDone { outcome, .. } = &events.last().unwrap().kind else {
        unreachable!()
    };
    assert_eq!(*outcome, TurnOutcome::Completed);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let users: Vec<String> =
        requests[1].history.iter().filter(|m| m.role == Role::User).map(|m| m.text()).collect();
    assert_eq!(users, ["first", "steer one", "steer two", "submit three"]);
    // Injected after the tool result, before the second step.
    let logs = harness.shutdown();
    let types = record_types(&logs.root);
    let tail: Vec<&str> = types[types.iter().position(|t| *t == "tool_result").unwrap()..].to_vec();
    assert_eq!(
        tail,
        [
            "tool_result",
            "step_end",
            "user_message",
            "user_message",
            "user_message",
            "step_start",
            "assistant_message",
            "step_end",
            "turn_end"
        ]
    );
}

#[test]
fn steer_during_the_last_step_starts_another_step() {
    let (gate_tx, gate) = bounded(1);
    let model = ScriptedModel::queue(vec![
        Response::Gated { before: vec![text("almost ")], gate, after: answer("done") },
        Response::Events(answer("saw it")),
    ]);
    let harness = Harness::start(model.clone(), vec![]);
    harness.submit("first");
    loop {
        if matches!(harness.next().kind, AgentEventKind::TextDelta { .. }) {
            break;
        }
    }
    harness.handle.cmd.send(AgentCommand::Steer(UserInput::text("one more thing"))).unwrap();
    gate_tx.send(()).unwrap();
    let events = harness.turn();
    assert_eq!(
        tags(&events).iter().filter(|t| t.starts_with("step_started")).count(),
        1,
        "{:?}",
        tags(&events)
    );
    assert_eq!(model.requests().len(), 2);
    assert_eq!(model.requests()[1].history.last().unwrap().text(), "one more thing");
    harness.shutdown();
}

/// The `context` records of a log.
fn contexts(loaded: &codecoder_session::LoadedSession) -> Vec<codecoder_protocol::ContextRecord> {
    loaded
        .records()
        .filter_map(|record| match &record.body {
            RecordBody::Context(context) => Some(context.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_context_is_logged_once_and_says_what_every_request_showed() {
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "echo", json!({ "text": "one" }))])),
        Response::Events(answer("done")),
        Response::Events(answer("again")),
    ]);
    let mut config = config();
    config.config_hash = Some("sha256:abc".to_owned());
    let harness = Harness::with(
        model.clone(),
        vec![Arc::new(EchoTool)],
        Arc::new(codecoder_kernel::AllowAll),
        config,
        |_| {},
    );
    harness.submit("hi");
    harness.turn();
    harness.submit("more");
    harness.turn();
    let logs = harness.shutdown();
    let logged = contexts(&logs.root);
    assert_eq!(logged.len(), 1, "three requests, one context");
    let context = &logged[0];
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(context.model, request.model);
        assert_eq!(context.instructions(), request.instructions);
        assert_eq!(context.tools, request.tools);
        assert_eq!(context.max_output_tokens, request.max_output_tokens);
        assert_eq!(context.output_schema, request.output_schema);
    }
    assert_eq!(context.provider, "scripted");
    assert_eq!(context.config_hash.as_deref(), Some("sha256:abc"));
    assert_eq!(logs.root.meta.config_hash.as_deref(), Some("sha256:abc"));
    // It precedes the first request's response, inside the first step.
    let types = record_types(&logs.root);
    let at = types.iter().position(|t| *t == "context").unwrap();
    assert_eq!(&types[at - 1..=at + 1], ["step_start", "context", "assistant_message"]);
}

#[test]
fn a_resumed_session_with_another_model_logs_a_new_context() {
    let home = tempfile::tempdir().unwrap();
    let store = codecoder_session::SessionStore::new(home.path());
    let run = |model_id: &str, writer: codecoder_session::SessionWriter| {
        let model = ScriptedModel::queue(vec![Response::Events(answer("ok"))]);
        let mut config = config();
        config.model = model_id.to_owned();
        let deps = deps(model, registry(vec![]), Arc::new(codecoder_kernel::AllowAll), &store);
        let handle = codecoder_kernel::spawn_agent_on(config, deps, writer).unwrap();
        handle.cmd.send(AgentCommand::Submit(UserInput::text("hi"))).unwrap();
        loop {
            let event = handle.events.recv_timeout(Duration::from_secs(30)).unwrap();
            if is_root_turn_done(&event) {
                break;
            }
        }
        handle.cmd.send(AgentCommand::Shutdown).unwrap();
        let path = handle.session_path().unwrap().to_owned();
        handle.join().unwrap();
        path
    };
    let writer = store
        .create(
            codecoder_session::NewSession {
                cwd: "/tmp".to_owned(),
                model: "first".to_owned(),
                provider: "scripted".to_owned(),
                config_hash: None,
                parent: None,
            },
            codecoder_session::WriterConfig::standard(),
        )
        .unwrap();
    let path = run("first", writer);
    // The same setup again: the logged context still holds, nothing new is written.
    let (_, writer) = store.resume(&path, codecoder_session::WriterConfig::standard()).unwrap();
    run("first", writer);
    let models: Vec<String> =
        contexts(&load_closed(&path)).into_iter().map(|context| context.model).collect();
    assert_eq!(models, ["first"]);
    // Another model: a new context before its request.
    let (_, writer) = store.resume(&path, codecoder_session::WriterConfig::standard()).unwrap();
    run("second", writer);
    let models: Vec<String> =
        contexts(&load_closed(&path)).into_iter().map(|context| context.model).collect();
    assert_eq!(models, ["first", "second"]);
}

/// A tool that ends the turn after its step (`ToolContext::end_turn`).
struct EndTurnTool;

impl codecoder_kernel::Tool for EndTurnTool {
    fn name(&self) -> &str {
        "present"
    }
    fn description(&self) -> &str {
        "Presents something and ends the turn."
    }
    fn schema(&self) -> serde_json::Value {
        json!({ "type": "object", "properties": {} })
    }
    fn kind(&self) -> codecoder_kernel::ToolKind {
        codecoder_kernel::ToolKind::ReadOnly
    }
    fn execute(
        &self,
        ctx: &codecoder_kernel::ToolContext,
        _args: serde_json::Value,
    ) -> Result<codecoder_kernel::ToolOutput, codecoder_protocol::ToolError> {
        ctx.end_turn();
        Ok(codecoder_kernel::ToolOutput::text("presented"))
    }
}

/// A call that ends the turn: every result of its step is logged, then the turn completes
/// without another request.
#[test]
fn a_tool_can_end_the_turn_after_its_step() {
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[
            ("c1", "present", json!({})),
            ("c2", "echo", json!({ "text": "x" })),
        ])),
        Response::Events(answer("the next turn")),
    ]);
    let harness = Harness::start(model.clone(), vec![Arc::new(EndTurnTool), Arc::new(EchoTool)]);
    harness.submit("go");
    let events = harness.turn();
    let first = tags(&events);
    assert!(first.contains(&"tool_finished c1 Success".to_owned()), "{first:?}");
    assert!(first.contains(&"tool_finished c2 Success".to_owned()), "{first:?}");
    assert_eq!(first.last().unwrap(), "turn_done Completed cancelled=false", "{first:?}");
    assert_eq!(model.requests().len(), 1);

    // The next turn is an ordinary one.
    harness.submit("again");
    let events = harness.turn();
    assert_eq!(tags(&events).last().unwrap(), "turn_done Completed cancelled=false");
    assert_eq!(model.requests().len(), 2);
    let logs = harness.shutdown();
    let types = record_types(&logs.root);
    assert_eq!(types.iter().filter(|t| **t == "turn_end").count(), 2, "{types:?}");
}

#[test]
fn a_steps_text_is_announced_whole_before_its_calls_run() {
    let mut first: Vec<_> = "Looking first. ".split_inclusive(' ').map(text).collect();
    first.extend(calls(&[("c1", "echo", json!({ "text": "one" }))]));
    let model =
        ScriptedModel::queue(vec![Response::Events(first), Response::Events(answer("all done"))]);
    let harness = Harness::start(model, vec![Arc::new(EchoTool)]);
    harness.submit("go");
    let events = harness.turn();
    let seen: Vec<String> = events
        .iter()
        .filter_map(|event| match &event.kind {
            AgentEventKind::AgentMessage { step, text, .. } => {
                Some(format!("message {step}: {text}"))
            }
            AgentEventKind::ToolStarted { call, .. } => Some(format!("started {}", call.id)),
            AgentEventKind::StepFinished { step, text, .. } => {
                Some(format!("finished {step}: {text}"))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        seen,
        [
            "message 1: Looking first. ",
            "started c1",
            "finished 1: Looking first. ",
            "message 2: all done",
            "finished 2: all done",
        ]
    );
    harness.shutdown();
}
