//! `exit_plan_mode {plan}`: in plan mode, the model presents its plan and the person approves
//! it, approves an edited version, or sends it back with feedback (seed L4.3: Draft → Reviewed
//! → Executing). The review is an `ask_user` question through the kernel's reply one-shot, so
//! any front-end can answer it: the question is the plan (Markdown) and the suggested answers
//! are [`PLAN_APPROVE`] and [`PLAN_KEEP_PLANNING`]; an answer starting with
//! [`PLAN_EDITED_PREFIX`] approves the text after it instead; any other answer is feedback.
//!
//! Invariants: the tool is offered only in plan mode and refuses to run outside it; only an
//! approval leaves plan mode (back to the mode that was on before it), and its result gives
//! the model the approved plan as its todo list (`[ ] step` lines, as `update_plan` shows
//! them); a decline or feedback leaves plan mode on; a review nobody answers (a headless run)
//! ends the turn after the step, with no further model request.

use codecoder_kernel::{ToolKind, ToolOutput};
use codecoder_policy::PermissionSwitch;
use codecoder_protocol::{AskUserAnswer, CallKind, CallView, PlanStep, PlanView, ToolError};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::env::CallEnv;
use crate::{Builtin, invalid, parse_args, str_arg};

/// The answer that approves the plan as presented.
pub const PLAN_APPROVE: &str = "Approve";
/// The suggested answer that sends the plan back without feedback.
pub const PLAN_KEEP_PLANNING: &str = "Keep planning";
/// An answer starting with this approves the (edited) plan that follows it.
pub const PLAN_EDITED_PREFIX: &str = "Approve edited plan:\n";
/// The tool's name.
pub const EXIT_PLAN_MODE: &str = "exit_plan_mode";

/// Steps taken from a plan at most.
const MAX_STEPS: usize = 50;

pub(crate) struct ExitPlanMode {
    pub(crate) permission: PermissionSwitch,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    plan: String,
}

/// How the person answered a plan review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanReview {
    /// Approved, with the plan to carry out (the presented one or the person's edit).
    Approved {
        /// The plan.
        plan: String,
    },
    /// Sent back; the feedback, if any.
    KeepPlanning {
        /// What the person said.
        feedback: Option<String>,
    },
    /// Nobody answered (a headless run).
    Declined,
}

/// Reads a review answer.
pub fn plan_review(plan: &str, answer: &AskUserAnswer) -> PlanReview {
    let text = match answer {
        AskUserAnswer::Declined | AskUserAnswer::Unavailable { .. } => {
            return PlanReview::Declined;
        }
        AskUserAnswer::Answer { text } => text,
    };
    if text.trim() == PLAN_APPROVE {
        return PlanReview::Approved { plan: plan.trim().to_owned() };
    }
    if let Some(edited) = text.strip_prefix(PLAN_EDITED_PREFIX) {
        if edited.trim().is_empty() {
            return PlanReview::KeepPlanning {
                feedback: Some("The user emptied the plan.".to_owned()),
            };
        }
        return PlanReview::Approved { plan: edited.trim().to_owned() };
    }
    let feedback = text.trim();
    PlanReview::KeepPlanning {
        feedback: (!feedback.is_empty() && feedback != PLAN_KEEP_PLANNING)
            .then(|| feedback.to_owned()),
    }
}

/// The steps of a Markdown plan: its list items (`-`, `*`, `+`, `1.`, `1)`, nested ones
/// included, in order); without any, its non-empty lines that are not headings. Trimmed, at
/// most 50.
pub fn plan_steps(plan: &str) -> Vec<String> {
    let items: Vec<String> = plan.lines().filter_map(list_item).collect();
    let steps = if items.is_empty() {
        plan.lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#') && !line.starts_with("```"))
            .map(str::to_owned)
            .collect()
    } else {
        items
    };
    steps.into_iter().take(MAX_STEPS).collect()
}

fn list_item(line: &str) -> Option<String> {
    let trimmed = line.trim_start();
    let rest = if let Some(rest) =
        trimmed.strip_prefix("- ").or(trimmed.strip_prefix("* ")).or(trimmed.strip_prefix("+ "))
    {
        rest
    } else {
        let digits = trimmed.len() - trimmed.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return None;
        }
        trimmed[digits..].strip_prefix(". ").or(trimmed[digits..].strip_prefix(") "))?
    };
    let rest = rest.trim_start_matches("[ ] ").trim();
    (!rest.is_empty()).then(|| rest.to_owned())
}

impl Builtin for ExitPlanMode {
    fn name(&self) -> &'static str {
        EXIT_PLAN_MODE
    }
    fn description(&self) -> &'static str {
        "You are in plan mode: only read-only tools run. When you have explored enough, call \
         this with your plan (Markdown, the steps as a list) to present it to the user. If they \
         approve it, plan mode ends, the plan becomes your todo list and you carry it out; if \
         they send it back, revise it with their feedback and present it again. Do not call it \
         for questions: use ask_user for those."
    }
    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "plan": { "type": "string", "minLength": 1, "description": "The plan, in Markdown, with its steps as a list." }
            },
            "required": ["plan"],
            "additionalProperties": false
        })
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Interactive
    }
    fn offered(&self) -> bool {
        self.permission.planning()
    }
    fn summary(&self, args: &Value) -> String {
        let plan = str_arg(args, "plan");
        format!("plan: {} steps", plan_steps(plan).len())
    }
    /// A plan presented for the person's approval: it asks, and it states the plan (its steps
    /// pending, the whole text as the explanation).
    fn view(&self, args: &Value) -> CallView {
        let text = str_arg(args, "plan");
        let steps = plan_steps(text)
            .into_iter()
            .map(|text| PlanStep { text, status: "pending".to_owned() })
            .collect();
        CallView {
            kind: CallKind::Ask,
            plan: Some(PlanView { explanation: text.to_owned(), steps }),
            ..CallView::generic(self.name(), args)
        }
    }
    fn run(&self, env: &dyn CallEnv, args: Value) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(args)?;
        let plan = args.plan.trim();
        if plan.is_empty() {
            return Err(invalid("`plan` is empty"));
        }
        if !self.permission.planning() {
            return Ok(ToolOutput::error(
                "Plan mode is not on: carry on with the task (track its steps with update_plan).",
            ));
        }
        let answer = env.ask_user(
            plan.to_owned(),
            vec![PLAN_APPROVE.to_owned(), PLAN_KEEP_PLANNING.to_owned()],
        )?;
        let text = match plan_review(plan, &answer) {
            PlanReview::Approved { plan } => {
                let mode = self.permission.leave_plan();
                let mut text = format!(
                    "The user approved the plan. Plan mode is over (now: {mode}): carry the plan \
                     out. Your todo list (keep it current with update_plan):\n"
                );
                for step in plan_steps(&plan) {
                    text.push_str(&format!("[ ] {step}\n"));
                }
                text.push_str(&format!("\nThe approved plan:\n{plan}\n"));
                text
            }
            PlanReview::KeepPlanning { feedback: Some(feedback) } => format!(
                "The user did not approve the plan and wants you to keep planning (still in plan \
                 mode: only read-only tools run). Their feedback: {feedback}"
            ),
            PlanReview::KeepPlanning { feedback: None } => "The user did not approve the plan \
                 and wants you to keep planning (still in plan mode: only read-only tools run). \
                 Revise it and present it again."
                .to_owned(),
            PlanReview::Declined => {
                // Nobody can approve it now: the turn ends with the plan presented.
                env.end_turn();
                "The plan was shown to the user, who is not here to approve it now. End your \
                 turn: make no changes."
                    .to_owned()
            }
        };
        Ok(ToolOutput::text(text))
    }
}
