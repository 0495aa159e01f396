//! Subagents: depth limit, approval forwarding, child panic, parent cancel reaching the child,
//! children in parallel.

use std::sync::Arc;
use std::time::{Duration, Instant};

use codecoder_kernel::{AgentTool, AllowAll, Tool};
use codecoder_protocol::{
    AgentCommand, AgentEventKind, ApprovalDecision, ParentLink, RecordBody, ToolCallId, TurnOutcome,
};
use codecoder_sandbox::live_group_members;
use crossbeam_channel::bounded;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::*;

fn agent_tool() -> Arc<dyn Tool> {
    Arc::new(AgentTool::new(&[]))
}

fn result_texts(loaded: &codecoder_session::LoadedSession) -> Vec<String> {
    loaded
        .records()
        .filter_map(|r| match &r.body {
            RecordBody::ToolResult { result, .. } => Some(format!(
                "{} {}",
                result.tool_call_id,
                result
                    .content
                    .iter()
                    .map(|c| match c {
                        codecoder_protocol::ContentItem::Text { text } => text.clone(),
                        _ => String::new(),
                    })
                    .collect::<String>()
            )),
            _ => None,
        })
        .collect()
}

fn outcome_of(loaded: &codecoder_session::LoadedSession) -> Option<TurnOutcome> {
    loaded.records().find_map(|r| match &r.body {
        RecordBody::TurnEnd { outcome, .. } => Some(outcome.clone()),
        _ => None,
    })
}

#[test]
fn depth_limit_refuses_deeper_subagents() {
    let model = ScriptedModel::new(|request| {
        let first = request.history.len() == 1;
        match first_user_text(request).as_str() {
            "root" if first => {
                Response::Events(calls(&[("a1", "agent", json!({ "task": "child task" }))]))
            }
            "child task" if first => {
                Response::Events(calls(&[("g1", "agent", json!({ "task": "grandchild task" }))]))
            }
            "child task" => Response::Events(answer("child done")),
            "grandchild task" => Response::Events(answer("should not run")),
            _ => Response::Events(answer("root done")),
        }
    });
    let mut config = config();
    config.subagents.max_depth = 1;
    let harness =
        Harness::with(model.clone(), vec![agent_tool()], Arc::new(AllowAll), config, |_| {});
    harness.submit("root");
    let events = harness.turn();
    assert_eq!(tags(&events).last().unwrap(), "turn_done Completed cancelled=false");
    assert!(model.requests().iter().all(|r| first_user_text(r) != "grandchild task"));
    let root_id = harness.handle.session_id();
    let logs = harness.shutdown();
    assert_eq!(result_texts(&logs.root), ["a1 child done"]);
    assert_eq!(logs.children.len(), 1);
    let child = &logs.children[0];
    assert!(!child.trace.needs_repair());
    assert_eq!(
        child.meta.parent,
        Some(ParentLink { session_id: root_id, tool_call_id: ToolCallId::new("a1") })
    );
    let texts = result_texts(child);
    assert!(texts[0].starts_with("g1 subagents may nest at most 1 deep"), "{texts:?}");
}

#[test]
fn child_approval_requests_reach_the_client_marked_with_the_child() {
    let write = Arc::new(WriteTool::default());
    let model = ScriptedModel::new(|request| {
        let first = request.history.len() == 1;
        match first_user_text(request).as_str() {
            "root" if first => {
                Response::Events(calls(&[("a1", "agent", json!({ "task": "edit it" }))]))
            }
            "edit it" if first => {
                Response::Events(calls(&[("w1", "write", json!({ "path": "f" }))]))
            }
            "edit it" => Response::Events(answer("edited")),
            _ => Response::Events(answer("root done")),
        }
    });
    let harness = Harness::with(
        model,
        vec![agent_tool(), write.clone()],
        Arc::new(AskUnlessReadOnly),
        config(),
        |_| {},
    );
    let root_id = harness.handle.session_id();
    harness.submit("root");
    let mut asked = 0;
    let mut events = Vec::new();
    loop {
        let event = harness.next();
        let done = is_root_turn_done(&event);
        if let AgentEventKind::ApprovalRequest(request) = event.kind {
            assert_eq!(event.source.subagent_path, [ToolCallId::new("a1")]);
            assert_ne!(event.source.session_id, root_id);
            assert_eq!(request.call.id.as_str(), "w1");
            assert!(request.reply.send(ApprovalDecision::AllowOnce));
            asked += 1;
            continue;
        }
        events.push(event);
        if done {
            break;
        }
    }
    assert_eq!(asked, 1);
    assert_eq!(*write.log.lock().unwrap(), ["start f", "end f"]);
    let tags = tags(&events);
    assert!(tags.contains(&"child tool_finished w1 Success".to_owned()), "{tags:?}");
    assert_eq!(tags.last().unwrap(), "turn_done Completed cancelled=false");
    let logs = harness.shutdown();
    assert_eq!(result_texts(&logs.root), ["a1 edited"]);
    let child = &logs.children[0];
    let approvals: Vec<String> = child
        .records()
        .filter_map(|r| match &r.body {
            RecordBody::Approval { decision, decided_by, .. } => {
                Some(format!("{decision:?} {decided_by}"))
            }
            _ => None,
        })
        .collect();
    assert_eq!(approvals, ["AllowOnce user"]);
}

#[test]
fn a_child_panic_is_an_error_result_and_the_parent_lives() {
    let model = ScriptedModel::new(|request| {
        let first = request.history.len() == 1;
        match first_user_text(request).as_str() {
            "root" if first => {
                Response::Events(calls(&[("a1", "agent", json!({ "task": "crash" }))]))
            }
            "crash" => Response::Panic,
            _ => Response::Events(answer("root survived")),
        }
    });
    let harness = Harness::start(model, vec![agent_tool()]);
    harness.submit("root");
    let events = harness.turn();
    let tags = tags(&events);
    assert!(
        tags.contains(&"tool_finished a1 error: the tool crashed: the subagent crashed: scripted model panicked".to_owned()),
        "{tags:?}"
    );
    assert_eq!(tags.last().unwrap(), "turn_done Completed cancelled=false");
    let logs = harness.shutdown();
    assert_eq!(outcome_of(&logs.root), Some(TurnOutcome::Completed));
    // The child's log stopped mid-step; load sees it open, and repair would close it.
    assert!(logs.children[0].trace.needs_repair());
}

#[test]
fn parent_cancel_reaches_the_child_and_its_processes() {
    let (pgids_tx, pgids) = bounded(4);
    let model = ScriptedModel::new(|request| {
        let first = request.history.len() == 1;
        match first_user_text(request).as_str() {
            "root" if first => {
                Response::Events(calls(&[("a1", "agent", json!({ "task": "sleep" }))]))
            }
            "sleep" if first => {
                Response::Events(calls(&[("r1", "run", json!({ "argv": ["sleep", "100"] }))]))
            }
            _ => Response::Events(answer("unexpected")),
        }
    });
    let harness =
        Harness::start(model, vec![agent_tool(), Arc::new(CommandTool { pgids: pgids_tx })]);
    harness.submit("root");
    let pgid = pgids.recv_timeout(PATIENCE).unwrap();
    assert_eq!(live_group_members(pgid), [pgid]);
    let sent = Instant::now();
    harness.handle.cmd.send(AgentCommand::Cancel).unwrap();
    let events = harness.turn();
    let latency = sent.elapsed();
    assert!(latency < Duration::from_secs(2), "cancel took {latency:?}");
    assert_eq!(live_group_members(pgid), Vec::<u32>::new());
    let tags = tags(&events);
    assert!(tags.contains(&"child turn_done Cancelled cancelled=true".to_owned()), "{tags:?}");
    assert_eq!(tags.last().unwrap(), "turn_done Cancelled cancelled=true");
    let logs = harness.shutdown();
    assert_eq!(outcome_of(&logs.root), Some(TurnOutcome::Cancelled));
    let child = &logs.children[0];
    assert!(!child.trace.needs_repair());
    assert_eq!(outcome_of(child), Some(TurnOutcome::Cancelled));
}

fn two_slow_children(max_parallel: usize) -> Duration {
    let model = ScriptedModel::new(|request| {
        let first = request.history.len() == 1;
        let who = first_user_text(request);
        match who.as_str() {
            "root" if first => Response::Events(calls(&[
                ("a1", "agent", json!({ "task": "slow one" })),
                ("a2", "agent", json!({ "task": "slow two" })),
            ])),
            "slow one" | "slow two" if first => {
                Response::Events(calls(&[("e1", "echo", json!({ "text": "z", "sleep_ms": 500 }))]))
            }
            "slow one" | "slow two" => Response::Events(answer(&format!("{who} done"))),
            _ => Response::Events(answer("root done")),
        }
    });
    let mut config = config();
    config.subagents.max_parallel = max_parallel;
    let harness = Harness::with(
        model,
        vec![agent_tool(), Arc::new(EchoTool)],
        Arc::new(AllowAll),
        config,
        |_| {},
    );
    let started = Instant::now();
    harness.submit("root");
    harness.turn();
    let elapsed = started.elapsed();
    let logs = harness.shutdown();
    assert_eq!(result_texts(&logs.root), ["a1 slow one done", "a2 slow two done"]);
    assert_eq!(logs.children.len(), 2);
    elapsed
}

#[test]
fn children_of_one_response_run_in_parallel() {
    let elapsed = two_slow_children(4);
    assert!(elapsed < Duration::from_millis(950), "took {elapsed:?}; serial is over 1 s");
}

#[test]
fn children_in_parallel_are_bounded() {
    let elapsed = two_slow_children(1);
    assert!(elapsed >= Duration::from_millis(1000), "took {elapsed:?}; one slot means serial");
}

#[test]
fn a_child_that_runs_too_long_times_out() {
    let (_gate_tx, gate) = bounded::<()>(1);
    let gate = std::sync::Mutex::new(Some(gate));
    let model = ScriptedModel::new(move |request| {
        let first = request.history.len() == 1;
        match first_user_text(request).as_str() {
            "root" if first => {
                Response::Events(calls(&[("a1", "agent", json!({ "task": "forever" }))]))
            }
            // The child's stream never completes (the gate is never opened).
            "forever" => Response::Gated {
                before: vec![text("thinking ")],
                gate: gate.lock().unwrap().take().unwrap(),
                after: vec![],
            },
            _ => Response::Events(answer("root done")),
        }
    });
    let mut config = config();
    config.subagents.timeout = Duration::from_millis(200);
    let harness = Harness::with(model, vec![agent_tool()], Arc::new(AllowAll), config, |_| {});
    harness.submit("root");
    let events = harness.turn();
    let tags = tags(&events);
    assert!(
        tags.contains(&"tool_finished a1 error: timed out after 200 ms".to_owned()),
        "{tags:?}"
    );
    assert_eq!(tags.last().unwrap(), "turn_done Completed cancelled=false");
    let logs = harness.shutdown();
    assert!(!logs.children[0].trace.needs_repair());
    assert_eq!(outcome_of(&logs.children[0]), Some(TurnOutcome::Cancelled));
}
