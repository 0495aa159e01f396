//! `ToolContext::request_approval` (a tool asking for more than its call was approved for, as
//! `run_command` does to run again outside the sandbox): who decides, and the `approval`
//! record every decision leaves in the log.

use std::collections::VecDeque;
use std::sync::Arc;

use codecoder_kernel::{
    AllowAll, ApprovalPolicy, EscalationRequest, Tool, ToolContext, ToolKind, ToolOutput,
};
use codecoder_protocol::{AgentEventKind, ApprovalDecision, RecordBody, ToolError};
use serde_json::{Value, json};

use crate::support::{
    AskUnlessReadOnly, Harness, Logs, Response, ScriptedModel, answer, calls, config,
};

/// Asks once for `escalate:<prefix>` (or is refused without asking when `never`), and returns
/// the decision as text.
struct EscalatingTool;

impl Tool for EscalatingTool {
    fn name(&self) -> &str {
        "escalate"
    }
    fn description(&self) -> &str {
        "Asks for more."
    }
    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": { "prefix": { "type": "string" }, "never": { "type": "boolean" } },
            "required": ["prefix"],
            "additionalProperties": false
        })
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Exec
    }
    fn execute(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let prefix = args["prefix"].as_str().unwrap_or_default();
        let decision = ctx.request_approval(EscalationRequest {
            summary: format!("run `{prefix}` again without the sandbox"),
            permission_keys: vec![format!("escalate:{prefix}")],
            reason: Some("the sandbox blocked it".to_owned()),
            may_ask: args["never"].as_bool() != Some(true),
            covered_by_call_approval: true,
        });
        Ok(ToolOutput::text(format!("{decision:?}")))
    }
}

/// Runs one turn of `responses`, answering approval requests from `answers` in order; returns
/// the summaries asked and the logs.
fn run(
    responses: Vec<Response>,
    policy: Arc<dyn ApprovalPolicy>,
    answers: Vec<ApprovalDecision>,
) -> (Vec<String>, Logs) {
    let model = ScriptedModel::queue(responses);
    let harness = Harness::with(model, vec![Arc::new(EscalatingTool)], policy, config(), |_| {});
    harness.submit("go");
    let mut answers: VecDeque<ApprovalDecision> = answers.into();
    let mut asked = Vec::new();
    loop {
        let event = harness.next();
        match event.kind {
            AgentEventKind::ApprovalRequest(request) => {
                asked.push(request.summary.clone());
                assert!(request.reply.send(answers.pop_front().expect("an unexpected request")));
            }
            AgentEventKind::TurnDone { .. } if event.source.subagent_path.is_empty() => break,
            _ => {}
        }
    }
    assert!(answers.is_empty(), "unused answers: {answers:?}");
    (asked, harness.shutdown())
}

/// The approval records: (call id, keys, decision, decided by).
fn approvals(logs: &Logs) -> Vec<(String, Vec<String>, ApprovalDecision, String)> {
    logs.root
        .records()
        .filter_map(|record| match &record.body {
            RecordBody::Approval { call_id, permission_keys, decision, decided_by, .. } => Some((
                call_id.to_string(),
                permission_keys.clone(),
                decision.clone(),
                decided_by.clone(),
            )),
            _ => None,
        })
        .collect()
}

fn keys(key: &str) -> Vec<String> {
    vec![key.to_owned()]
}

#[test]
fn under_never_the_escalation_is_refused_without_asking_and_logged_as_the_modes() {
    let (asked, logs) = run(
        vec![
            Response::Events(calls(&[(
                "c1",
                "escalate",
                json!({ "prefix": "make", "never": true }),
            )])),
            Response::Events(answer("ok")),
        ],
        Arc::new(AllowAll),
        Vec::new(),
    );
    assert!(asked.is_empty(), "{asked:?}");
    assert_eq!(
        approvals(&logs),
        [
            ("c1".to_owned(), keys("escalate"), ApprovalDecision::AllowOnce, "policy".to_owned()),
            ("c1".to_owned(), keys("escalate:make"), ApprovalDecision::Deny, "mode".to_owned()),
        ]
    );
}

#[test]
fn a_call_the_person_approved_this_turn_is_not_asked_about_again() {
    let (asked, logs) = run(
        vec![
            Response::Events(calls(&[("c1", "escalate", json!({ "prefix": "cargo test" }))])),
            Response::Events(answer("ok")),
        ],
        Arc::new(AskUnlessReadOnly),
        vec![ApprovalDecision::AllowOnce],
    );
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(
        approvals(&logs),
        [
            ("c1".to_owned(), keys("escalate"), ApprovalDecision::AllowOnce, "user".to_owned()),
            (
                "c1".to_owned(),
                keys("escalate:cargo test"),
                ApprovalDecision::AllowOnce,
                "call-approval".to_owned()
            ),
        ]
    );
}

#[test]
fn a_session_approval_covers_later_escalations_of_the_same_keys_and_a_decline_is_logged() {
    let (asked, logs) = run(
        vec![
            Response::Events(calls(&[("c1", "escalate", json!({ "prefix": "cargo test" }))])),
            Response::Events(calls(&[("c2", "escalate", json!({ "prefix": "cargo test" }))])),
            Response::Events(calls(&[("c3", "escalate", json!({ "prefix": "npm run build" }))])),
            Response::Events(answer("ok")),
        ],
        Arc::new(AllowAll),
        vec![ApprovalDecision::AllowForSession, ApprovalDecision::Deny],
    );
    assert_eq!(
        asked,
        [
            "run `cargo test` again without the sandbox",
            "run `npm run build` again without the sandbox"
        ]
    );
    let escalations: Vec<_> = approvals(&logs)
        .into_iter()
        .filter(|(_, keys, _, _)| keys[0].starts_with("escalate:"))
        .collect();
    assert_eq!(
        escalations,
        [
            (
                "c1".to_owned(),
                keys("escalate:cargo test"),
                ApprovalDecision::AllowForSession,
                "user".to_owned()
            ),
            (
                "c2".to_owned(),
                keys("escalate:cargo test"),
                ApprovalDecision::AllowForSession,
                "session-grant".to_owned()
            ),
            (
                "c3".to_owned(),
                keys("escalate:npm run build"),
                ApprovalDecision::Deny,
                "user".to_owned()
            ),
        ]
    );
}

/// Asks from a thread of its own through the call's `Approver` and gives up waiting after a
/// moment (as a proxy's connection does when the command that asked has ended).
struct WithdrawingTool;

impl Tool for WithdrawingTool {
    fn name(&self) -> &str {
        "withdraw"
    }
    fn description(&self) -> &str {
        "Asks, then stops waiting."
    }
    fn schema(&self) -> Value {
        json!({ "type": "object", "properties": {}, "additionalProperties": false })
    }
    fn kind(&self) -> ToolKind {
        ToolKind::ReadOnly
    }
    fn execute(&self, ctx: &ToolContext, _args: Value) -> Result<ToolOutput, ToolError> {
        let approver = ctx.approver();
        let (stop_tx, stop) = crossbeam_channel::bounded::<()>(0);
        let asking = std::thread::spawn(move || {
            approver.request_approval(
                EscalationRequest {
                    summary: "reach example.test:443".to_owned(),
                    permission_keys: vec!["network:example.test".to_owned()],
                    reason: None,
                    may_ask: true,
                    covered_by_call_approval: false,
                },
                &stop,
            )
        });
        // The question is out once the loop has it; the requester then goes away.
        std::thread::sleep(std::time::Duration::from_millis(200));
        drop(stop_tx);
        let decision = asking.join().unwrap();
        Ok(ToolOutput::text(format!("{decision:?}")))
    }
}

#[test]
fn a_question_whose_requester_stops_waiting_is_withdrawn_and_the_turn_goes_on() {
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "withdraw", json!({}))])),
        Response::Events(answer("ok")),
    ]);
    let tool: Arc<dyn Tool> = Arc::new(WithdrawingTool);
    let harness = Harness::with(model, vec![tool], Arc::new(AllowAll), config(), |_| {});
    harness.submit("go");
    let mut asked = 0;
    loop {
        let event = harness.next();
        match event.kind {
            // Never answered: the turn must end without the person.
            AgentEventKind::ApprovalRequest(_) => asked += 1,
            AgentEventKind::TurnDone { .. } if event.source.subagent_path.is_empty() => break,
            _ => {}
        }
    }
    assert_eq!(asked, 1);
    let logs = harness.shutdown();
    assert!(
        approvals(&logs).contains(&(
            "c1".to_owned(),
            keys("network:example.test"),
            ApprovalDecision::Cancelled,
            "cancel".to_owned()
        )),
        "{:?}",
        approvals(&logs)
    );
}
