//! `update_plan {explanation?, plan: [{step, status}]}`: the model's task list.
//!
//! The protocol has no plan event yet, so the plan is surfaced as the tool's output (logged like
//! every result, so a client can render it from `ToolFinished`) and in `summary()`.
//!
//! Invariant: an accepted plan has at least one step, no empty step, and at most one step
//! `in_progress`.

use codecoder_kernel::{ToolKind, ToolOutput};
use codecoder_protocol::{CallKind, CallView, PlanStep, PlanView, ToolError};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::env::CallEnv;
use crate::{Builtin, invalid, parse_args, str_arg};

pub(crate) struct UpdatePlan;

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Status {
    Pending,
    InProgress,
    Completed,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Item {
    step: String,
    status: Status,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    explanation: Option<String>,
    plan: Vec<Item>,
}

impl Builtin for UpdatePlan {
    fn name(&self) -> &'static str {
        "update_plan"
    }
    fn description(&self) -> &'static str {
        "Records your plan for the task as a list of steps with a status (pending, in_progress, \
         completed) and shows it to the user. Send the whole plan each time; at most one step \
         may be in_progress. Use it for tasks of several steps; skip it for simple ones."
    }
    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "explanation": { "type": "string", "description": "Why the plan changed, if it did." },
                "plan": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "step": { "type": "string", "minLength": 1 },
                            "status": { "type": "string", "enum": ["pending", "in_progress", "completed"] }
                        },
                        "required": ["step", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["plan"],
            "additionalProperties": false
        })
    }
    fn kind(&self) -> ToolKind {
        // It changes nothing outside the conversation; it may run beside read-only calls.
        ToolKind::ReadOnly
    }
    fn summary(&self, args: &Value) -> String {
        let steps = args.get("plan").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let done =
            steps.iter().filter(|step| step.get("status") == Some(&json!("completed"))).count();
        let current = steps
            .iter()
            .find(|step| step.get("status") == Some(&json!("in_progress")))
            .and_then(|step| step.get("step"))
            .and_then(Value::as_str);
        match current {
            Some(current) => format!("plan: {done}/{} done; now: {current}", steps.len()),
            None => format!("plan: {done}/{} done", steps.len()),
        }
    }
    fn view(&self, args: &Value) -> CallView {
        let steps = args.get("plan").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let plan = PlanView {
            explanation: str_arg(args, "explanation").to_owned(),
            steps: steps
                .iter()
                .map(|step| PlanStep {
                    text: str_arg(step, "step").to_owned(),
                    status: str_arg(step, "status").to_owned(),
                })
                .collect(),
        };
        CallView {
            kind: CallKind::Plan,
            title: "Update the plan".to_owned(),
            plan: Some(plan),
            ..CallView::default()
        }
    }
    fn run(&self, _env: &dyn CallEnv, args: Value) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(args)?;
        if args.plan.is_empty() {
            return Err(invalid("`plan` needs at least one step"));
        }
        if let Some(index) = args.plan.iter().position(|item| item.step.trim().is_empty()) {
            return Err(invalid(format!("`plan[{index}].step` is empty")));
        }
        let in_progress: Vec<usize> = args
            .plan
            .iter()
            .enumerate()
            .filter(|(_, item)| item.status == Status::InProgress)
            .map(|(index, _)| index)
            .collect();
        if in_progress.len() > 1 {
            let indexes: Vec<String> = in_progress.iter().map(usize::to_string).collect();
            return Err(invalid(format!(
                "at most one step may be in_progress; steps {} are",
                indexes.join(", ")
            )));
        }
        let done = args.plan.iter().filter(|item| item.status == Status::Completed).count();
        let mut text = format!("Plan updated ({done}/{} completed):\n", args.plan.len());
        if let Some(explanation) =
            args.explanation.as_deref().filter(|text| !text.trim().is_empty())
        {
            text.push_str(&format!("{}\n", explanation.trim()));
        }
        for item in &args.plan {
            let mark = match item.status {
                Status::Pending => "[ ]",
                Status::InProgress => "[>]",
                Status::Completed => "[x]",
            };
            text.push_str(&format!("{mark} {}\n", item.step.trim()));
        }
        Ok(ToolOutput::text(text))
    }
}
