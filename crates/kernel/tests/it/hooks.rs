//! The hook seam: what a `Hooks` implementation's answers do to a turn, its calls and its log.

use std::sync::{Arc, Mutex};

use codecoder_kernel::{
    AllowAll, ApprovalPolicy, ApprovalQuery, HookReport, HookScope, HookVerdict, Hooks,
    PermissionAnswer, PermissionHook, PolicyAnswer, PostToolUse, PreToolUse, PromptSubmit,
    SessionStartHook, StopHook, ToolOutput,
};
use codecoder_protocol::{
    AgentEventKind, ApprovalDecision, ContentItem, RecordBody, ToolCall, TurnOutcome, Verdict,
};
use serde_json::{Value, json};

use crate::support::{
    AskUnlessReadOnly, EchoTool, Harness, Response, ScriptedModel, WriteTool, answer, calls,
    config, tags,
};

/// Hooks whose answers the test sets, recording what they were shown.
#[derive(Default)]
struct TestHooks {
    pre: Mutex<Option<PreToolUse>>,
    permission: Mutex<Option<PermissionAnswer>>,
    post: Mutex<Option<PostToolUse>>,
    prompt: Mutex<Option<PromptSubmit>>,
    stop_instruction: Mutex<Option<String>>,
    stop_report: Mutex<Option<HookReport>>,
    session_context: Vec<String>,
    seen: Mutex<Vec<String>>,
}

impl TestHooks {
    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
    fn note(&self, line: String) {
        self.seen.lock().unwrap().push(line);
    }
}

impl Hooks for TestHooks {
    fn pre_tool_use(&self, _scope: HookScope<'_>, call: &ToolCall) -> PreToolUse {
        self.note(format!("pre {} {}", call.name, call.args));
        self.pre.lock().unwrap().clone().unwrap_or_default()
    }
    fn permission_request(&self, _scope: HookScope<'_>, call: &ToolCall) -> PermissionHook {
        self.note(format!("permission {}", call.name));
        PermissionHook { answer: self.permission.lock().unwrap().clone(), ..Default::default() }
    }
    fn post_tool_use(
        &self,
        _scope: HookScope,
        call: &ToolCall,
        output: &ToolOutput,
        _duration: std::time::Duration,
    ) -> PostToolUse {
        let failed = output.is_error;
        self.note(format!("post {} {:?} failed={failed}", call.name, texts(&output.content)));
        self.post.lock().unwrap().clone().unwrap_or_default()
    }
    fn user_prompt_submit(&self, _scope: HookScope<'_>, prompt: &str) -> PromptSubmit {
        self.note(format!("prompt {prompt}"));
        self.prompt.lock().unwrap().clone().unwrap_or_default()
    }
    fn stop(&self, _scope: HookScope<'_>, active: bool, last: &str) -> StopHook {
        self.note(format!("stop active={active} last={last}"));
        StopHook {
            instruction: self.stop_instruction.lock().unwrap().take(),
            report: self.stop_report.lock().unwrap().take().unwrap_or_default(),
        }
    }
    fn session_start(&self, _scope: HookScope<'_>, source: &str) -> SessionStartHook {
        self.note(format!("session_start {source}"));
        SessionStartHook { context: self.session_context.clone(), ..Default::default() }
    }
    fn session_end(&self, reason: &str) -> HookReport {
        self.note(format!("session_end {reason}"));
        HookReport::default()
    }
    fn notification(&self, _scope: HookScope<'_>, _message: &str, kind: &str) -> HookReport {
        self.note(format!("notification {kind}"));
        HookReport::default()
    }
}

/// Records what the policy was told by the hooks.
#[derive(Default)]
struct RecordingPolicy {
    hook: Mutex<Vec<Option<Verdict>>>,
}

impl ApprovalPolicy for RecordingPolicy {
    fn decide(&self, query: &ApprovalQuery<'_>) -> PolicyAnswer {
        self.hook.lock().unwrap().push(query.hook.map(|verdict| verdict.decision));
        match query.hook.map(|verdict| verdict.decision) {
            Some(Verdict::Deny) => PolicyAnswer::deny("a hook said no"),
            Some(Verdict::Ask) => PolicyAnswer::ask(),
            _ => PolicyAnswer::allow(),
        }
    }
}

fn start(
    model: Arc<ScriptedModel>,
    hooks: Arc<TestHooks>,
    approval: Arc<dyn ApprovalPolicy>,
) -> Harness {
    Harness::with(
        model,
        vec![Arc::new(EchoTool), Arc::new(WriteTool::default())],
        approval,
        config(),
        move |deps| deps.hooks = hooks,
    )
}

fn texts(content: &[ContentItem]) -> String {
    content
        .iter()
        .filter_map(|item| match item {
            ContentItem::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("|")
}

fn results(logs: &crate::support::Logs) -> Vec<String> {
    logs.root
        .records()
        .filter_map(|r| match &r.body {
            RecordBody::ToolResult { result, .. } => Some(texts(&result.content)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_hook_deny_refuses_the_call_through_the_policy() {
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "echo", json!({ "text": "secret" }))])),
        Response::Events(answer("ok")),
    ]);
    let hooks = Arc::new(TestHooks::default());
    *hooks.pre.lock().unwrap() = Some(PreToolUse {
        verdict: Some(HookVerdict { decision: Verdict::Deny, reason: Some("no".to_owned()) }),
        ..PreToolUse::default()
    });
    let policy = Arc::new(RecordingPolicy::default());
    let harness = start(model, Arc::clone(&hooks), policy.clone());
    harness.submit("go");
    harness.turn();
    let logs = harness.shutdown();
    assert_eq!(*policy.hook.lock().unwrap(), [Some(Verdict::Deny)]);
    let result = results(&logs);
    assert_eq!(result.len(), 1);
    assert!(result[0].contains("a hook said no"), "{result:?}");
    // The tool never ran, so no PostToolUse.
    assert!(!hooks.seen().iter().any(|line| line.starts_with("post")), "{:?}", hooks.seen());
}

#[test]
fn rewritten_arguments_run_are_logged_and_context_reaches_the_model() {
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "echo", json!({ "text": "model's" }))])),
        Response::Events(answer("ok")),
    ]);
    let hooks = Arc::new(TestHooks::default());
    *hooks.pre.lock().unwrap() = Some(PreToolUse {
        updated_args: Some(json!({ "text": "hook's" })),
        context: vec!["pre context".to_owned()],
        ..PreToolUse::default()
    });
    *hooks.post.lock().unwrap() =
        Some(PostToolUse { feedback: Some("post feedback".to_owned()), ..PostToolUse::default() });
    let harness = start(model, Arc::clone(&hooks), Arc::new(AllowAll));
    harness.submit("go");
    harness.turn();
    let logs = harness.shutdown();
    let result = results(&logs);
    assert_eq!(result.len(), 1);
    assert!(result[0].starts_with("hook's|"), "{result:?}");
    assert!(result[0].contains("pre context") && result[0].contains("post feedback"), "{result:?}");
    let updated: Vec<Value> = logs
        .root
        .records()
        .filter_map(|r| match &r.body {
            RecordBody::Approval { updated_args, .. } => updated_args.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(updated, [json!({ "text": "hook's" })]);
    assert!(hooks.seen().contains(&r#"post echo "hook's" failed=false"#.to_owned()));
}

#[test]
fn invalid_rewritten_arguments_are_refused() {
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "echo", json!({ "text": "x" }))])),
        Response::Events(answer("ok")),
    ]);
    let hooks = Arc::new(TestHooks::default());
    *hooks.pre.lock().unwrap() =
        Some(PreToolUse { updated_args: Some(json!({ "txt": 1 })), ..PreToolUse::default() });
    let harness = start(model, hooks, Arc::new(AllowAll));
    harness.submit("go");
    harness.turn();
    let result = results(&harness.shutdown());
    assert!(result[0].contains("PreToolUse hook rewrote the arguments"), "{result:?}");
}

#[test]
fn a_permission_request_hook_answers_in_the_persons_place() {
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "write", json!({ "path": "f" }))])),
        Response::Events(answer("ok")),
    ]);
    let hooks = Arc::new(TestHooks::default());
    *hooks.permission.lock().unwrap() = Some(PermissionAnswer {
        decision: ApprovalDecision::DenyWithFeedback { feedback: "not f".to_owned() },
        updated_args: None,
        interrupt: false,
    });
    let harness = start(model, Arc::clone(&hooks), Arc::new(AskUnlessReadOnly));
    harness.submit("go");
    let events = harness.turn();
    assert!(
        !events.iter().any(|e| matches!(e.kind, AgentEventKind::ApprovalRequest(_))),
        "nobody should have been asked"
    );
    let logs = harness.shutdown();
    assert!(results(&logs)[0].contains("the hook denied this call: not f"));
    let by: Vec<String> = logs
        .root
        .records()
        .filter_map(|r| match &r.body {
            RecordBody::Approval { decided_by, .. } => Some(decided_by.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(by, ["hook"]);
}

#[test]
fn asking_the_person_notifies_first() {
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "write", json!({ "path": "f" }))])),
        Response::Events(answer("ok")),
    ]);
    let hooks = Arc::new(TestHooks::default());
    let harness = start(model, Arc::clone(&hooks), Arc::new(AskUnlessReadOnly));
    harness.submit("go");
    loop {
        let event = harness.next();
        if let AgentEventKind::ApprovalRequest(request) = event.kind {
            assert!(hooks.seen().contains(&"notification permission_prompt".to_owned()));
            request.reply.send(ApprovalDecision::AllowOnce);
            break;
        }
    }
    harness.turn();
    harness.shutdown();
}

#[test]
fn a_blocked_prompt_fails_the_turn_before_the_model_is_called() {
    let model = ScriptedModel::queue(vec![Response::Events(answer("never"))]);
    let hooks = Arc::new(TestHooks::default());
    *hooks.prompt.lock().unwrap() =
        Some(PromptSubmit { blocked: Some("no secrets".to_owned()), ..PromptSubmit::default() });
    let harness = start(Arc::clone(&model), hooks, Arc::new(AllowAll));
    harness.submit("here is my password");
    let events = harness.turn();
    match &events.last().unwrap().kind {
        AgentEventKind::TurnDone { outcome: TurnOutcome::Failed { message }, .. } => {
            assert!(message.contains("no secrets"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(model.requests().is_empty());
    let logs = harness.shutdown();
    assert!(!logs.root.records().any(|r| matches!(r.body, RecordBody::UserMessage { .. })));
}

#[test]
fn prompt_and_session_start_context_are_added_to_the_prompt() {
    let model = ScriptedModel::queue(vec![Response::Events(answer("ok"))]);
    let hooks = Arc::new(TestHooks {
        session_context: vec!["branch main".to_owned()],
        ..TestHooks::default()
    });
    *hooks.prompt.lock().unwrap() = Some(PromptSubmit {
        context: vec!["today is Monday".to_owned()],
        ..PromptSubmit::default()
    });
    let harness = start(Arc::clone(&model), Arc::clone(&hooks), Arc::new(AllowAll));
    harness.submit("hi");
    harness.turn();
    harness.shutdown();
    let request = &model.requests()[0];
    let sent = format!("{:?}", request.history);
    assert!(sent.contains("today is Monday") && sent.contains("branch main"), "{sent}");
    let seen = hooks.seen();
    assert_eq!(seen[..2], ["prompt hi".to_owned(), "session_start startup".to_owned()]);
    assert_eq!(seen.last().unwrap(), "session_end other");
}

#[test]
fn the_front_end_names_the_session_start_source_and_the_end_reason() {
    let model = ScriptedModel::queue(vec![Response::Events(answer("ok"))]);
    let hooks = Arc::new(TestHooks::default());
    let harness = start(Arc::clone(&model), Arc::clone(&hooks), Arc::new(AllowAll));
    harness.handle.starts_after_clear();
    harness.handle.ends_because("prompt_input_exit");
    harness.submit("hi");
    harness.turn();
    harness.shutdown();
    let seen = hooks.seen();
    assert_eq!(seen[..2], ["prompt hi".to_owned(), "session_start clear".to_owned()]);
    assert_eq!(seen.last().unwrap(), "session_end prompt_input_exit");
}

#[test]
fn a_stop_hook_keeps_the_turn_going_once() {
    let model = ScriptedModel::queue(vec![
        Response::Events(answer("first")),
        Response::Events(answer("second")),
    ]);
    let hooks = Arc::new(TestHooks::default());
    *hooks.stop_instruction.lock().unwrap() = Some("run the tests too".to_owned());
    let harness = start(Arc::clone(&model), Arc::clone(&hooks), Arc::new(AllowAll));
    harness.submit("go");
    let events = harness.turn();
    assert!(matches!(
        events.last().unwrap().kind,
        AgentEventKind::TurnDone { outcome: TurnOutcome::Completed, .. }
    ));
    harness.shutdown();
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(format!("{:?}", requests[1].history).contains("run the tests too"));
    let stops: Vec<String> =
        hooks.seen().into_iter().filter(|line| line.starts_with("stop")).collect();
    assert_eq!(stops, ["stop active=false last=first", "stop active=true last=second"]);
}

#[test]
fn tool_kinds_reach_the_policy_unchanged() {
    // A hook with no verdict leaves the policy's answer alone.
    let policy = Arc::new(RecordingPolicy::default());
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "echo", json!({ "text": "a" }))])),
        Response::Events(answer("ok")),
    ]);
    let harness = start(model, Arc::new(TestHooks::default()), policy.clone());
    harness.submit("go");
    harness.turn();
    harness.shutdown();
    assert_eq!(*policy.hook.lock().unwrap(), [None]);
}

#[test]
fn a_hook_deny_stands_even_when_the_policy_allows_everything() {
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "write", json!({ "path": "f" }))])),
        Response::Events(answer("ok")),
    ]);
    let hooks = Arc::new(TestHooks::default());
    *hooks.pre.lock().unwrap() = Some(PreToolUse {
        verdict: Some(HookVerdict { decision: Verdict::Deny, reason: Some("not f".to_owned()) }),
        ..PreToolUse::default()
    });
    let harness = start(model, hooks, Arc::new(AllowAll));
    harness.submit("go");
    harness.turn();
    let logs = harness.shutdown();
    assert!(results(&logs)[0].contains("a PreToolUse hook denied this call: not f"));
    let by: Vec<String> = logs
        .root
        .records()
        .filter_map(|r| match &r.body {
            RecordBody::Approval { decided_by, decision, .. } => {
                Some(format!("{decision:?} {decided_by}"))
            }
            _ => None,
        })
        .collect();
    assert_eq!(by, ["Deny hook"]);
}

/// Hooks whose PreToolUse blocks until the scope's cancel fires, as a hook process killed by
/// the cancel would; it says when it is running and whether it saw the cancel.
struct BlockingHooks {
    entered: crossbeam_channel::Sender<()>,
    cancelled: Mutex<bool>,
}

impl Hooks for BlockingHooks {
    fn pre_tool_use(&self, scope: HookScope<'_>, _call: &ToolCall) -> PreToolUse {
        self.entered.send(()).unwrap();
        // Blocks until the token is cancelled (nothing is ever sent on it).
        let _ = scope.cancel.signal().recv();
        *self.cancelled.lock().unwrap() = scope.cancel.is_cancelled();
        PreToolUse::default()
    }
}

#[test]
fn a_cancel_reaches_a_running_loop_thread_hook_and_the_turn_ends_cancelled() {
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "echo", json!({ "text": "x" }))])),
        Response::Events(answer("never requested")),
    ]);
    let (entered_tx, entered_rx) = crossbeam_channel::bounded(1);
    let hooks = Arc::new(BlockingHooks { entered: entered_tx, cancelled: Mutex::new(false) });
    let harness = Harness::with(
        Arc::clone(&model) as _,
        vec![Arc::new(EchoTool)],
        Arc::new(AllowAll),
        config(),
        {
            let hooks = Arc::clone(&hooks);
            move |deps| deps.hooks = hooks
        },
    );
    harness.submit("go");
    entered_rx.recv().unwrap();
    harness.handle.cmd.send(codecoder_protocol::AgentCommand::Cancel).unwrap();
    let events = harness.turn();
    assert_eq!(tags(&events).last().unwrap(), "turn_done Cancelled cancelled=true");
    assert!(*hooks.cancelled.lock().unwrap(), "the hook's token was not cancelled");
    let logs = harness.shutdown();
    // The call never ran: its result is the synthetic cancelled one.
    assert_eq!(results(&logs), ["cancelled before it finished"]);
    assert_eq!(model.requests().len(), 1);
}

fn stop_report(reason: &str) -> HookReport {
    HookReport {
        stop: Some(reason.to_owned()),
        messages: vec![format!("note: {reason}")],
        errors: Vec::new(),
    }
}

#[test]
fn continue_false_from_post_tool_use_stops_the_turn_after_the_result_is_logged() {
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "echo", json!({ "text": "ran" }))])),
        Response::Events(answer("never requested")),
    ]);
    let hooks = Arc::new(TestHooks::default());
    *hooks.post.lock().unwrap() =
        Some(PostToolUse { report: stop_report("enough for today"), ..PostToolUse::default() });
    let harness = start(Arc::clone(&model), hooks, Arc::new(AllowAll));
    harness.submit("go");
    let seen = tags(&harness.turn());
    assert!(seen.contains(&"hook PostToolUse: note: enough for today".to_owned()), "{seen:?}");
    assert_eq!(
        seen.last().unwrap(),
        "turn_done failed: a PostToolUse hook stopped the turn: enough for today"
    );
    let logs = harness.shutdown();
    assert_eq!(results(&logs), ["ran"]);
    assert_eq!(model.requests().len(), 1, "the model was asked again after the stop");
}

#[test]
fn continue_false_from_pre_tool_use_and_user_prompt_submit_stops_before_anything_runs() {
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "echo", json!({ "text": "x" }))])),
        Response::Events(answer("never requested")),
    ]);
    let hooks = Arc::new(TestHooks::default());
    *hooks.pre.lock().unwrap() =
        Some(PreToolUse { report: stop_report("pre says stop"), ..PreToolUse::default() });
    let harness = start(Arc::clone(&model), Arc::clone(&hooks), Arc::new(AllowAll));
    harness.submit("go");
    let seen = tags(&harness.turn());
    assert_eq!(
        seen.last().unwrap(),
        "turn_done failed: a PreToolUse hook stopped the turn: pre says stop"
    );
    assert!(!hooks.seen().iter().any(|line| line.starts_with("post")), "{:?}", hooks.seen());
    harness.shutdown();
    assert_eq!(model.requests().len(), 1);

    let model = ScriptedModel::queue(vec![Response::Events(answer("never requested"))]);
    let hooks = Arc::new(TestHooks::default());
    *hooks.prompt.lock().unwrap() =
        Some(PromptSubmit { report: stop_report("prompt says stop"), ..PromptSubmit::default() });
    let harness = start(Arc::clone(&model), hooks, Arc::new(AllowAll));
    harness.submit("go");
    let seen = tags(&harness.turn());
    assert_eq!(
        seen.last().unwrap(),
        "turn_done failed: a UserPromptSubmit hook stopped the turn: prompt says stop"
    );
    harness.shutdown();
    assert_eq!(model.requests().len(), 0);
}

#[test]
fn continue_false_from_stop_wins_over_a_block_and_the_turn_completes() {
    let model = ScriptedModel::queue(vec![
        Response::Events(answer("done")),
        Response::Events(answer("never requested")),
    ]);
    let hooks = Arc::new(TestHooks::default());
    *hooks.stop_instruction.lock().unwrap() = Some("keep going".to_owned());
    *hooks.stop_report.lock().unwrap() = Some(stop_report("that is all"));
    let harness = start(Arc::clone(&model), hooks, Arc::new(AllowAll));
    harness.submit("go");
    let seen = tags(&harness.turn());
    assert!(
        seen.contains(&"hook Stop: a Stop hook stopped the turn: that is all".to_owned()),
        "{seen:?}"
    );
    assert_eq!(seen.last().unwrap(), "turn_done Completed cancelled=false");
    harness.shutdown();
    assert_eq!(model.requests().len(), 1);
}
