//! Unit tests of the translation: agent events fed in directly, the notifications and requests
//! that come out checked — calls shown from their views (a tool no front-end knows included),
//! files shown while the model writes them, the agent message from the step's logged text.

use codecoder_app::testing::{TEST_ONLY_TOOL, TestOnlyTool, Tool};
use codecoder_protocol::{
    AgentEvent, AgentEventKind, ApprovalRequest, CallKind, CallView, ChangeKind, EventSource,
    FileChange, RequestId as AgentRequestId, SessionId, StepId, ToolCall, ToolCallId, ToolError,
    ToolResult, ToolResultStatus, TurnId, TurnOutcome, Usage,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::thread::Internal;
use crate::translate::{Output, Translator};

fn root(kind: AgentEventKind) -> AgentEvent {
    AgentEvent {
        source: EventSource { session_id: SessionId::new(), subagent_path: Vec::new() },
        kind,
    }
}

/// A translator in a turn the client started.
fn translator() -> Translator {
    let mut translator = Translator::new("thread".into(), "/work".into(), 1000, "item_");
    translator.begin_turn("turn".into(), Vec::new());
    translator.event(root(AgentEventKind::TurnStarted { turn: TurnId::FIRST }));
    translator.take_output();
    translator
}

/// What came out, as the client reads it: `(method, params)` of each notification, and
/// `(method, params)` of each request handed to the dispatcher (`turn/ended` for the end of a
/// turn).
fn outputs(translator: &mut Translator) -> Vec<(String, Value)> {
    translator
        .take_output()
        .into_iter()
        .map(|output| match output {
            Output::Notify(notification) => {
                let value = serde_json::to_value(&notification).unwrap();
                (notification.method().to_owned(), value["params"].clone())
            }
            Output::Internal(Internal::Approval { request, .. }) => {
                let value = serde_json::to_value(&request).unwrap();
                (value["method"].as_str().unwrap().to_owned(), value["params"].clone())
            }
            Output::Internal(Internal::Question { request, .. }) => {
                let value = serde_json::to_value(&request).unwrap();
                (value["method"].as_str().unwrap().to_owned(), value["params"].clone())
            }
            Output::Internal(Internal::TurnEnded { turn, .. }) => {
                ("turn/ended".to_owned(), serde_json::to_value(&turn).unwrap())
            }
            Output::Internal(Internal::Closed { .. }) => ("closed".to_owned(), Value::Null),
        })
        .collect()
}

fn methods(outputs: &[(String, Value)]) -> Vec<&str> {
    outputs.iter().map(|(method, _)| method.as_str()).collect()
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall { id: ToolCallId::from(id), name: name.to_owned(), args }
}

fn started(call: &ToolCall, view: CallView) -> AgentEvent {
    root(AgentEventKind::ToolStarted {
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        call: call.clone(),
        view,
    })
}

fn finished(call: &ToolCall, view: CallView, result: Result<ToolResult, ToolError>) -> AgentEvent {
    root(AgentEventKind::ToolFinished {
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        call_id: call.id.clone(),
        call: call.clone(),
        view,
        result,
        mcp_result: None,
    })
}

fn success(call: &ToolCall, text: &str) -> Result<ToolResult, ToolError> {
    Ok(ToolResult::text(call.id.clone(), ToolResultStatus::Success, text))
}

fn progress(call_id: &str, view: CallView) -> AgentEvent {
    root(AgentEventKind::CallProgress {
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        call_id: ToolCallId::from(call_id),
        name: "apply_patch".to_owned(),
        view,
    })
}

fn text(delta: &str) -> AgentEvent {
    root(AgentEventKind::TextDelta {
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        delta: delta.to_owned(),
    })
}

/// The step's message, whole, as the kernel announces it before the step's calls run.
fn agent_message(text: &str) -> AgentEvent {
    root(AgentEventKind::AgentMessage {
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        text: text.to_owned(),
    })
}

fn step_finished(text: &str) -> AgentEvent {
    root(AgentEventKind::StepFinished {
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        usage: Usage::default(),
        text: text.to_owned(),
    })
}

fn turn_done(outcome: TurnOutcome) -> AgentEvent {
    root(AgentEventKind::TurnDone {
        turn: TurnId::FIRST,
        cancelled: false,
        outcome,
        usage: Usage::default(),
    })
}

/// The view of an edit that changes `files`, each with `diff`.
fn edit_view(files: &[(&str, &str)]) -> CallView {
    CallView {
        kind: CallKind::Edit,
        title: "Patch".to_owned(),
        changes: files
            .iter()
            .map(|(path, diff)| FileChange {
                path: (*path).to_owned(),
                kind: ChangeKind::Update { move_to: None },
                diff: (*diff).to_owned(),
                header: String::new(),
                edits: Vec::new(),
            })
            .collect(),
        ..CallView::default()
    }
}

/// The items completed among `outputs`.
fn completed(outputs: &[(String, Value)]) -> Vec<Value> {
    outputs
        .iter()
        .filter(|(method, _)| method == "item/completed")
        .map(|(_, params)| params["item"].clone())
        .collect()
}

#[test]
fn a_tool_no_front_end_knows_is_shown_from_its_view() {
    let mut translator = translator();
    let args =
        json!({"moves": [{"from": "a.txt", "to": "b.txt"}, {"from": "c.txt", "to": "d/c.txt"}]});
    let call = call("r1", TEST_ONLY_TOOL, args.clone());
    let view = TestOnlyTool.view(&args);
    translator.event(started(&call, TestOnlyTool.view(&args)));
    translator.event(finished(&call, view, success(&call, "relabelled 2 file(s)")));
    let outputs = outputs(&mut translator);
    assert_eq!(methods(&outputs), ["item/started", "item/completed"]);
    let changes = json!([
        {"path": "a.txt", "kind": {"type": "update", "move_path": "b.txt"}, "diff": ""},
        {"path": "c.txt", "kind": {"type": "update", "move_path": "d/c.txt"}, "diff": ""},
    ]);
    assert_eq!(
        outputs[0].1["item"],
        json!({"type": "fileChange", "id": "item_0", "changes": changes, "status": "inProgress"})
    );
    assert_eq!(
        outputs[1].1["item"],
        json!({"type": "fileChange", "id": "item_0", "changes": changes, "status": "completed"})
    );
}

#[test]
fn a_tool_no_front_end_knows_asks_as_a_file_change() {
    let mut translator = translator();
    let args = json!({"moves": [{"from": "a.txt", "to": "b.txt"}]});
    let call = call("r1", TEST_ONLY_TOOL, args.clone());
    let (reply, _answer) = codecoder_protocol::Reply::pair();
    translator.event(root(AgentEventKind::ApprovalRequest(ApprovalRequest {
        id: AgentRequestId::new(),
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        call: call.clone(),
        view: TestOnlyTool.view(&args),
        summary: "relabel a.txt".to_owned(),
        permission_keys: Vec::new(),
        reason: None,
        reply,
    })));
    let outputs = outputs(&mut translator);
    assert_eq!(methods(&outputs), ["item/started", "item/fileChange/requestApproval"]);
    assert_eq!(outputs[0].1["item"]["type"], "fileChange");
    assert_eq!(outputs[1].1["itemId"], outputs[0].1["item"]["id"]);
    // Refused by the person: the item ends `declined`.
    translator.event(finished(
        &call,
        TestOnlyTool.view(&args),
        Err(ToolError::PermissionDenied { reason: "no".to_owned() }),
    ));
    let outputs = self::outputs(&mut translator);
    assert_eq!(completed(&outputs)[0]["status"], "declined");
}

#[test]
fn commands_and_other_calls_are_told_apart_by_their_views() {
    let mut translator = translator();
    // A command by any name is a command item, its command line from the view.
    let command = call("c1", "shell_by_another_name", json!({"cmd": "ignored"}));
    let view = CallView {
        kind: CallKind::Execute,
        command: Some("cargo test".to_owned()),
        ..CallView::default()
    };
    translator.event(started(&command, view.clone()));
    translator.event(finished(&command, view, success(&command, "ok")));
    // An execute call without a command line (a background job's) is a dynamic tool call.
    let job = call("c2", "job_output", json!({"id": 3}));
    let view = CallView { kind: CallKind::Execute, ..CallView::default() };
    translator.event(started(&job, view.clone()));
    translator.event(finished(&job, view, success(&job, "out")));
    let items = completed(&outputs(&mut translator));
    assert_eq!(items[0]["type"], "commandExecution");
    assert_eq!(items[0]["command"], "cargo test");
    assert_eq!(items[0]["cwd"], "/work");
    assert_eq!(items[0]["aggregatedOutput"], "ok");
    assert_eq!(items[1]["type"], "dynamicToolCall");
    assert_eq!(items[1]["tool"], "job_output");
    assert_eq!(items[1]["arguments"], json!({"id": 3}));
}

#[test]
fn a_patch_being_written_is_a_file_change_updated_as_it_grows() {
    let mut translator = translator();
    translator.event(progress("p1", edit_view(&[("a.rs", "+one\n")])));
    // The same files again change nothing for the client.
    translator.event(progress("p1", edit_view(&[("a.rs", "+one\n")])));
    translator.event(progress("p1", edit_view(&[("a.rs", "+one\n+two\n"), ("b.rs", "")])));
    let outputs = outputs(&mut translator);
    assert_eq!(methods(&outputs), ["item/started", "item/fileChange/patchUpdated"]);
    assert_eq!(
        outputs[0].1["item"],
        json!({"type": "fileChange", "id": "item_0", "status": "inProgress", "changes": [
            {"path": "a.rs", "kind": {"type": "update"}, "diff": "+one\n"}
        ]})
    );
    assert_eq!(
        outputs[1].1,
        json!({"threadId": "thread", "turnId": "turn", "itemId": "item_0", "changes": [
            {"path": "a.rs", "kind": {"type": "update"}, "diff": "+one\n+two\n"},
            {"path": "b.rs", "kind": {"type": "update"}, "diff": ""}
        ]})
    );

    // The whole call: its item goes on (no second item/started), with the last files.
    let whole = edit_view(&[("a.rs", "+one\n+two\n"), ("b.rs", "-x\n")]);
    let call = call("p1", "apply_patch", json!({"input": "..."}));
    translator.event(started(&call, whole.clone()));
    translator.event(finished(&call, whole, success(&call, "Done")));
    let outputs = self::outputs(&mut translator);
    assert_eq!(methods(&outputs), ["item/fileChange/patchUpdated", "item/completed"]);
    let item = &completed(&outputs)[0];
    assert_eq!(item["id"], "item_0");
    assert_eq!(item["status"], "completed");
    assert_eq!(item["changes"][1]["diff"], "-x\n");
}

#[test]
fn a_patch_that_turns_out_invalid_completes_its_item_as_failed() {
    let mut translator = translator();
    translator.event(progress("p1", edit_view(&[("a.rs", "+one\n")])));
    let call = call("p1", "apply_patch", json!({"input": "broken"}));
    let error = Err(ToolError::InvalidArguments { message: "not a patch".to_owned() });
    translator.event(finished(&call, edit_view(&[("a.rs", "+one\n")]), error));
    let outputs = outputs(&mut translator);
    assert_eq!(methods(&outputs), ["item/started", "item/completed"]);
    assert_eq!(completed(&outputs)[0]["status"], "failed");
}

#[test]
fn only_edits_are_shown_while_they_are_written() {
    let mut translator = translator();
    let view =
        CallView { kind: CallKind::Execute, command: Some("ls".to_owned()), ..CallView::default() };
    translator.event(progress("c1", view));
    assert_eq!(outputs(&mut translator), []);
}

#[test]
fn the_agent_message_is_the_steps_logged_text() {
    let mut translator = translator();
    translator.event(text("Hel"));
    // The stream broke: what it streamed is void, the step runs again.
    translator.event(root(AgentEventKind::StepRetried {
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        reason: "the model stream broke".to_owned(),
    }));
    translator.event(text("Hello"));
    translator.event(text(" there."));
    translator.event(agent_message("Hello there."));
    translator.event(step_finished("Hello there."));
    translator.event(turn_done(TurnOutcome::Completed));
    let outputs = outputs(&mut translator);
    assert_eq!(
        methods(&outputs),
        [
            "item/started",
            "item/agentMessage/delta",
            "error",
            "item/agentMessage/delta",
            "item/agentMessage/delta",
            "item/completed",
            "thread/tokenUsage/updated",
            "turn/ended"
        ]
    );
    assert_eq!(outputs[2].1["willRetry"], true);
    let items = completed(&outputs);
    assert_eq!(items, [json!({"type": "agentMessage", "id": "item_0", "text": "Hello there."})]);
}

#[test]
fn a_message_before_calls_starts_and_ends_before_them() {
    let mut translator = translator();
    translator.event(text("Running it."));
    translator.event(agent_message("Running it."));
    let command = call("c1", "run_command", json!({"command": "true"}));
    let view = CallView {
        kind: CallKind::Execute,
        command: Some("true".to_owned()),
        ..CallView::default()
    };
    translator.event(started(&command, view.clone()));
    translator.event(finished(&command, view, success(&command, "")));
    translator.event(step_finished("Running it."));
    let outputs = outputs(&mut translator);
    let started: Vec<&Value> = outputs
        .iter()
        .filter(|(method, _)| method == "item/started")
        .map(|(_, params)| &params["item"]["type"])
        .collect();
    assert_eq!(started, [&json!("agentMessage"), &json!("commandExecution")]);
    // As in codex: the message is complete before the command starts.
    let items: Vec<(&str, &Value)> = outputs
        .iter()
        .filter(|(method, _)| method == "item/started" || method == "item/completed")
        .map(|(method, params)| (method.as_str(), &params["item"]["type"]))
        .collect();
    assert_eq!(
        items,
        [
            ("item/started", &json!("agentMessage")),
            ("item/completed", &json!("agentMessage")),
            ("item/started", &json!("commandExecution")),
            ("item/completed", &json!("commandExecution")),
        ]
    );
    let message = completed(&outputs).into_iter().find(|item| item["type"] == "agentMessage");
    assert_eq!(message.unwrap()["text"], "Running it.");
}

#[test]
fn a_stopped_step_ends_its_message_with_what_was_streamed() {
    let mut translator = translator();
    translator.event(text("Half a sent"));
    translator.event(progress("p1", edit_view(&[("a.rs", "+one\n")])));
    translator.event(turn_done(TurnOutcome::Interrupted));
    let outputs = outputs(&mut translator);
    let items = completed(&outputs);
    assert_eq!(items[0], json!({"type": "agentMessage", "id": "item_0", "text": "Half a sent"}));
    assert_eq!(items[1]["type"], "fileChange");
    assert_eq!(items[1]["status"], "failed");
    let (method, turn) = outputs.last().unwrap();
    assert_eq!(method, "turn/ended");
    assert_eq!(turn["status"], "interrupted");
}

#[test]
fn calls_a_void_attempt_was_writing_end_with_it() {
    let mut translator = translator();
    translator.event(progress("p1", edit_view(&[("a.rs", "+one\n")])));
    translator.event(root(AgentEventKind::StepRetried {
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        reason: "broke".to_owned(),
    }));
    let outputs = outputs(&mut translator);
    assert_eq!(methods(&outputs), ["item/started", "item/completed", "error"]);
    assert_eq!(completed(&outputs)[0]["status"], "failed");
}

#[test]
fn a_subagents_calls_are_not_items_of_the_turn() {
    let mut translator = translator();
    let call = call("s1", "run_command", json!({"command": "ls"}));
    let view =
        CallView { kind: CallKind::Execute, command: Some("ls".to_owned()), ..CallView::default() };
    let mut event = started(&call, view);
    event.source.subagent_path = vec![ToolCallId::from("agent-1")];
    translator.event(event);
    let mut event = progress("s2", edit_view(&[("a.rs", "+one\n")]));
    event.source.subagent_path = vec![ToolCallId::from("agent-1")];
    translator.event(event);
    assert_eq!(outputs(&mut translator), []);
}

#[test]
fn a_refusal_the_person_gave_is_declined_and_a_policy_deny_too() {
    // As a replayed log gives them: the person's approval before its call, then the call.
    let mut translator = translator();
    let view = CallView {
        kind: CallKind::Execute,
        command: Some("rm x".to_owned()),
        ..CallView::default()
    };
    let asked = call("c1", "run", json!({}));
    translator.asked(&asked.id);
    translator.event(started(&asked, view.clone()));
    let denied = Err(ToolError::PermissionDenied { reason: "no".to_owned() });
    translator.event(finished(&asked, view.clone(), denied.clone()));
    // Refused before it started, never asked: declined as the live run shows it.
    let refused = call("c2", "run", json!({}));
    translator.event(finished(&refused, view.clone(), denied));
    // Failed on its own: failed.
    let failed = call("c3", "run", json!({}));
    translator.event(started(&failed, view.clone()));
    let error = Err(ToolError::Failed { message: "exit 1".to_owned() });
    translator.event(finished(&failed, view, error));
    let statuses: Vec<Value> =
        completed(&outputs(&mut translator)).iter().map(|item| item["status"].clone()).collect();
    assert_eq!(statuses, [json!("declined"), json!("declined"), json!("failed")]);
}

#[test]
fn a_command_run_again_outside_the_sandbox_shows_the_second_runs_output() {
    let mut translator = translator();
    let command = call("c1", "run_command", json!({"command": "touch x"}));
    let view = CallView {
        kind: CallKind::Execute,
        command: Some("touch x".to_owned()),
        ..CallView::default()
    };
    let chunk = |text: &str| {
        root(AgentEventKind::ToolOutputDelta {
            call_id: command.id.clone(),
            stream: codecoder_protocol::OutputStream::Stderr,
            chunk: text.to_owned(),
        })
    };
    translator.event(started(&command, view.clone()));
    translator.event(chunk("touch: Read-only file system\n"));
    // The sandbox blocked it: the person is asked to run it outside.
    let (reply, _answer) = codecoder_protocol::Reply::pair();
    translator.event(root(AgentEventKind::ApprovalRequest(ApprovalRequest {
        id: AgentRequestId::new(),
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        call: command.clone(),
        view: view.clone(),
        summary: "touch x".to_owned(),
        permission_keys: Vec::new(),
        reason: Some("the sandbox blocked it".to_owned()),
        reply,
    })));
    translator.event(chunk("made it\n"));
    translator.event(finished(&command, view, success(&command, "[sandbox] blocked, then ran")));
    let items = completed(&outputs(&mut translator));
    assert_eq!(items[0]["aggregatedOutput"], "made it\n");
    assert_eq!(items[0]["status"], "completed");
}
