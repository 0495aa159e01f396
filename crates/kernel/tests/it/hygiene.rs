//! Loop hygiene and tool failures: step limit, repeated failing calls, cut-off responses,
//! unknown tools, invalid arguments, panicking tools, model errors, ask_user, interceptors.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use codecoder_kernel::{
    AllowAll, ReportedInput, ResponseEvent, StepInfo, StepInterceptor, StepVerdict,
};
use codecoder_protocol::{
    AgentEventKind, AskUserAnswer, ContentItem, RecordBody, StopReason, SyntheticReason,
    ToolResult, ToolResultStatus, TurnOutcome, Usage, UserInput,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::*;

fn results(logs: &Logs) -> Vec<(ToolResult, Option<SyntheticReason>)> {
    bodies(&logs.root)
        .into_iter()
        .filter_map(|b| match b {
            RecordBody::ToolResult { result, synthetic } => Some((result, synthetic)),
            _ => None,
        })
        .collect()
}

fn all_text(result: &ToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| match c {
            ContentItem::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn step_limit_fails_the_turn() {
    let model = ScriptedModel::new(|request| {
        let n = request.history.len();
        Response::Events(calls(&[(&format!("c{n}"), "echo", json!({ "text": "again" }))]))
    });
    let mut config = config();
    config.max_steps = 3;
    let harness =
        Harness::with(model.clone(), vec![Arc::new(EchoTool)], Arc::new(AllowAll), config, |_| {});
    harness.submit("loop forever");
    let events = harness.turn();
    assert_eq!(
        tags(&events).last().unwrap(),
        "turn_done failed: the turn reached its limit of 3 steps"
    );
    assert_eq!(model.requests().len(), 3);
    let logs = harness.shutdown();
    assert!(matches!(
        bodies(&logs.root).into_iter().last(),
        Some(RecordBody::TurnEnd { outcome: TurnOutcome::Failed { .. }, .. })
    ));
}

#[test]
fn the_same_failing_call_three_times_gets_a_nudge() {
    let fail = Arc::new(FailTool::default());
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "fail", json!({ "path": "x" }))])),
        Response::Events(calls(&[("c2", "fail", json!({ "path": "x" }))])),
        Response::Events(calls(&[("c3", "fail", json!({ "path": "x" }))])),
        Response::Events(answer("giving up")),
    ]);
    let harness = Harness::start(model, vec![fail.clone()]);
    harness.submit("go");
    harness.turn();
    assert_eq!(fail.runs.load(Ordering::SeqCst), 3);
    let logs = harness.shutdown();
    let texts: Vec<String> = results(&logs).iter().map(|(r, _)| all_text(r)).collect();
    assert!(!texts[0].contains("failed 3 times"));
    assert!(!texts[1].contains("Do not repeat it"));
    assert!(
        texts[2].contains("This exact call has now failed 3 times in this turn"),
        "{}",
        texts[2]
    );
}

#[test]
fn calls_of_a_cut_off_response_are_not_run() {
    let fail = Arc::new(FailTool::default());
    let mut cut = call("c1", "fail", json!({}));
    cut.push(completed(StopReason::MaxTokens));
    let model = ScriptedModel::queue(vec![Response::Events(cut), Response::Events(answer("ok"))]);
    let harness = Harness::start(model.clone(), vec![fail.clone()]);
    harness.submit("go");
    let events = harness.turn();
    assert_eq!(tags(&events).last().unwrap(), "turn_done Completed cancelled=false");
    assert_eq!(fail.runs.load(Ordering::SeqCst), 0);
    let logs = harness.shutdown();
    let (result, synthetic) = &results(&logs)[0];
    assert_eq!(*synthetic, Some(SyntheticReason::Refused));
    assert!(all_text(result).contains("cut off by the output-token limit"));
    // The model was told: the second request carries that result.
    assert_eq!(model.requests().len(), 2);
}

#[test]
fn unknown_tool_invalid_arguments_and_panics_are_error_results() {
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[
            ("c1", "nope", json!({})),
            ("c2", "echo", json!({ "text": 5 })),
            ("c3", "echo", json!({ "txt": "x" })),
            ("c4", "explode", json!({})),
            ("c5", "echo", json!({ "text": "fine" })),
        ])),
        Response::Events(answer("ok")),
    ]);
    let harness =
        Harness::start(model, vec![Arc::new(EchoTool), Arc::new(PanicTool), Arc::new(NotOffered)]);
    harness.submit("go");
    let events = harness.turn();
    let finished: Vec<String> =
        tags(&events).into_iter().filter(|t| t.starts_with("tool_finished")).collect();
    assert_eq!(
        finished,
        [
            "tool_finished c1 error: unknown tool `nope`",
            "tool_finished c2 error: invalid arguments: `args.text` must be string, found number",
            "tool_finished c3 error: invalid arguments: `args.text` is required",
            "tool_finished c4 error: the tool crashed: the tool exploded",
            "tool_finished c5 Success",
        ]
    );
    assert_eq!(tags(&events).last().unwrap(), "turn_done Completed cancelled=false");
    let logs = harness.shutdown();
    let results = results(&logs);
    // A tool not offered at this step is not named (`exit_plan_mode` outside plan mode).
    assert!(all_text(&results[0].0).contains("The available tools are: echo, explode."));
    assert!(all_text(&results[1].0).contains("Fix the arguments"));
    let statuses: Vec<(ToolResultStatus, Option<SyntheticReason>)> =
        results.iter().map(|(r, s)| (r.status, *s)).collect();
    assert_eq!(
        statuses,
        [
            (ToolResultStatus::Error, Some(SyntheticReason::Refused)),
            (ToolResultStatus::Error, Some(SyntheticReason::Refused)),
            (ToolResultStatus::Error, Some(SyntheticReason::Refused)),
            (ToolResultStatus::Error, None),
            (ToolResultStatus::Success, None),
        ]
    );
}

#[test]
fn invalid_json_arguments_are_reported() {
    let events = vec![
        codecoder_kernel::ResponseEvent::ToolCallStart { id: "c1".into(), name: "echo".to_owned() },
        codecoder_kernel::ResponseEvent::ToolCallArgsDelta {
            id: "c1".into(),
            delta: "{\"text\": ".to_owned(),
        },
        codecoder_kernel::ResponseEvent::ToolCallDone { id: "c1".into() },
        completed(StopReason::ToolUse),
    ];
    let model =
        ScriptedModel::queue(vec![Response::Events(events), Response::Events(answer("ok"))]);
    let harness = Harness::start(model, vec![Arc::new(EchoTool)]);
    harness.submit("go");
    let events = harness.turn();
    assert!(
        tags(&events).contains(
            &"tool_finished c1 error: invalid arguments: `args` must be object, found string"
                .to_owned()
        )
    );
    harness.shutdown();
}

#[test]
fn model_errors_fail_the_turn_and_the_agent_lives() {
    let mut failing = vec![text("partial ")];
    failing.push(codecoder_kernel::ResponseEvent::Error(codecoder_kernel::ModelError::new(
        "overloaded",
    )));
    let model = ScriptedModel::queue(vec![
        Response::Fail("no credentials".to_owned()),
        Response::Events(failing),
        Response::Events(answer("fine now")),
    ]);
    let harness = Harness::start(model, vec![]);
    harness.submit("one");
    assert_eq!(
        tags(&harness.turn()).last().unwrap(),
        "turn_done failed: model request failed: no credentials"
    );
    harness.submit("two");
    assert_eq!(tags(&harness.turn()).last().unwrap(), "turn_done failed: model error: overloaded");
    harness.submit("three");
    assert_eq!(tags(&harness.turn()).last().unwrap(), "turn_done Completed cancelled=false");
    let logs = harness.shutdown();
    let errors =
        bodies(&logs.root).into_iter().filter(|b| matches!(b, RecordBody::Error { .. })).count();
    assert_eq!(errors, 2);
}

#[test]
fn ask_user_goes_through_the_reply() {
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "ask", json!({ "question": "which one?" }))])),
        Response::Events(answer("ok")),
    ]);
    let harness = Harness::start(model.clone(), vec![Arc::new(AskTool)]);
    harness.submit("go");
    loop {
        if let AgentEventKind::AskUser(request) = harness.next().kind {
            assert_eq!(request.question, "which one?");
            assert_eq!(request.call_id.as_str(), "c1");
            assert!(request.reply.send(AskUserAnswer::Answer { text: "the blue one".to_owned() }));
            break;
        }
    }
    harness.turn();
    let logs = harness.shutdown();
    assert_eq!(all_text(&results(&logs)[0].0), "the blue one");
}

struct Rewrite;

impl StepInterceptor for Rewrite {
    fn before_step(&self, info: &StepInfo<'_>, input: &mut Vec<UserInput>) -> StepVerdict {
        if let Some(first) = input.first()
            && first.content == UserInput::text("forbidden").content
        {
            return StepVerdict::Reject { message: "rejected by hook".to_owned() };
        }
        if info.step.get() == 1 {
            input.push(UserInput::text("(added by hook)"));
        }
        StepVerdict::Proceed
    }
}

#[test]
fn interceptors_rewrite_input_or_reject_the_step() {
    let model = ScriptedModel::queue(vec![Response::Events(answer("ok"))]);
    let harness = Harness::with(model.clone(), vec![], Arc::new(AllowAll), config(), |deps| {
        deps.interceptors.push(Arc::new(Rewrite));
    });
    harness.submit("hello");
    harness.turn();
    let users: Vec<String> = model.requests()[0].history.iter().map(|m| m.text()).collect();
    assert_eq!(users, ["hello", "(added by hook)"]);
    harness.submit("forbidden");
    assert_eq!(tags(&harness.turn()).last().unwrap(), "turn_done failed: rejected by hook");
    assert_eq!(model.requests().len(), 1);
    harness.shutdown();
}

/// Records what each step's interceptor call saw of the provider's reported input.
#[derive(Default)]
struct SeeReported(std::sync::Mutex<Vec<Option<ReportedInput>>>);

impl StepInterceptor for SeeReported {
    fn before_step(&self, info: &StepInfo<'_>, _input: &mut Vec<UserInput>) -> StepVerdict {
        self.0.lock().unwrap().push(info.reported);
        StepVerdict::Proceed
    }
}

#[test]
fn steps_see_the_last_reported_input_tokens_and_not_an_estimate() {
    let mut estimated = answer("guessed");
    estimated.retain(|event| !matches!(event, ResponseEvent::Usage(_)));
    estimated.insert(
        estimated.len() - 1,
        ResponseEvent::UsageEstimate(Usage { input_tokens: 5_000, ..Usage::default() }),
    );
    let model = ScriptedModel::queue(vec![
        Response::Events(answer("ok")),
        Response::Events(estimated),
        Response::Events(answer("ok")),
    ]);
    let seen = Arc::new(SeeReported::default());
    let interceptor = Arc::clone(&seen);
    let harness = Harness::with(model.clone(), vec![], Arc::new(AllowAll), config(), |deps| {
        deps.interceptors.push(interceptor);
    });
    for prompt in ["one", "two", "three"] {
        harness.submit(prompt);
        harness.turn();
    }
    harness.shutdown();
    // The first request held one message and its usage reported 100 input tokens; the second
    // reported only an estimate, which is not the truth: the third step still counts from the
    // first request (whose history is still the start of the third's).
    let first = ReportedInput { input_tokens: 100, history_len: 1 };
    assert_eq!(*seen.0.lock().unwrap(), [None, Some(first), Some(first)]);
}

/// A tool registered but not offered now.
struct NotOffered;

impl codecoder_kernel::Tool for NotOffered {
    fn name(&self) -> &str {
        "hidden"
    }
    fn description(&self) -> &str {
        "Not offered."
    }
    fn schema(&self) -> serde_json::Value {
        json!({ "type": "object" })
    }
    fn kind(&self) -> codecoder_kernel::ToolKind {
        codecoder_kernel::ToolKind::ReadOnly
    }
    fn offered(&self) -> bool {
        false
    }
    fn execute(
        &self,
        _ctx: &codecoder_kernel::ToolContext,
        _args: serde_json::Value,
    ) -> Result<codecoder_kernel::ToolOutput, codecoder_protocol::ToolError> {
        Ok(codecoder_kernel::ToolOutput::text("hidden"))
    }
}
