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

/// A read-only tool that counts how many of its calls run at once. Each call waits until
/// `expected` calls are running (or `wait` passes), so two children that really run in
/// parallel are seen together whatever the machine's load, and serial ones never are.
struct Rendezvous {
    running: std::sync::atomic::AtomicUsize,
    peak: std::sync::atomic::AtomicUsize,
    /// Set once `expected` calls were inside together: everyone may leave.
    met: std::sync::atomic::AtomicBool,
    expected: usize,
    wait: Duration,
}

impl Tool for Rendezvous {
    fn name(&self) -> &str {
        "rendezvous"
    }
    fn description(&self) -> &str {
        "Waits for the other callers."
    }
    fn schema(&self) -> serde_json::Value {
        json!({ "type": "object", "properties": {} })
    }
    fn kind(&self) -> codecoder_kernel::ToolKind {
        codecoder_kernel::ToolKind::ReadOnly
    }
    fn execute(
        &self,
        _ctx: &codecoder_kernel::ToolContext,
        _args: serde_json::Value,
    ) -> Result<codecoder_kernel::ToolOutput, codecoder_protocol::ToolError> {
        use std::sync::atomic::Ordering;
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        if now >= self.expected {
            self.met.store(true, Ordering::SeqCst);
        }
        let deadline = Instant::now() + self.wait;
        while !self.met.load(Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        self.running.fetch_sub(1, Ordering::SeqCst);
        Ok(codecoder_kernel::ToolOutput::text("met"))
    }
}

/// Two children from one response, each calling `rendezvous`; returns the peak number of
/// children inside the tool at once.
fn two_children(max_parallel: usize, wait: Duration) -> usize {
    let model = ScriptedModel::new(|request| {
        let first = request.history.len() == 1;
        let who = first_user_text(request);
        match who.as_str() {
            "root" if first => Response::Events(calls(&[
                ("a1", "agent", json!({ "task": "child one" })),
                ("a2", "agent", json!({ "task": "child two" })),
            ])),
            "child one" | "child two" if first => {
                Response::Events(calls(&[("r1", "rendezvous", json!({}))]))
            }
            "child one" | "child two" => Response::Events(answer(&format!("{who} done"))),
            _ => Response::Events(answer("root done")),
        }
    });
    let probe = Arc::new(Rendezvous {
        running: std::sync::atomic::AtomicUsize::new(0),
        peak: std::sync::atomic::AtomicUsize::new(0),
        met: std::sync::atomic::AtomicBool::new(false),
        expected: 2,
        wait,
    });
    let mut config = config();
    config.subagents.max_parallel = max_parallel;
    let harness = Harness::with(
        model,
        vec![agent_tool(), Arc::clone(&probe) as Arc<dyn Tool>],
        Arc::new(AllowAll),
        config,
        |_| {},
    );
    harness.submit("root");
    harness.turn();
    let logs = harness.shutdown();
    assert_eq!(result_texts(&logs.root), ["a1 child one done", "a2 child two done"]);
    assert_eq!(logs.children.len(), 2);
    probe.peak.load(std::sync::atomic::Ordering::SeqCst)
}

#[test]
fn children_of_one_response_run_in_parallel() {
    // Each child waits (up to 15 s) for the other inside the tool: only parallel children meet.
    assert_eq!(two_children(4, Duration::from_secs(15)), 2);
}

#[test]
fn children_in_parallel_are_bounded() {
    // One slot: the second child starts only after the first is done, so they never meet.
    assert_eq!(two_children(1, Duration::from_millis(200)), 1);
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
