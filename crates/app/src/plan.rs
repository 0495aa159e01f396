//! Plan mode in the session (seed L4.3): `PlanLayer`, stacked after the session's hooks, makes a prompt
//! submitted while the permission mode is `plan` carry a reminder telling the model that it
//! plans (only read-only tools run; it ends by presenting the plan with `exit_plan_mode`). The
//! refusals themselves are the approval chain's (`codecoder_policy::plan_refusal`), and the
//! review is the `exit_plan_mode` tool's.
//!
//! Invariants: the reminder goes only to the root agent's prompts and only while plan mode is
//! on, read when the prompt is submitted (Shift+Tab between turns takes effect at the next
//! prompt); every other hook is the inner hooks' answer unchanged.

use codecoder_kernel::{HookScope, Hooks, PromptSubmit};
use codecoder_policy::PermissionSwitch;

/// What the model reads with a prompt submitted in plan mode.
pub(crate) const PLAN_MODE_REMINDER: &str = "<system-reminder>\nPlan mode is on: the user \
wants a plan before any change. Only read-only tools run (reading, searching, read-only \
commands); writes, edits, patches and other commands are refused. Explore what you need, then \
call `exit_plan_mode` with your plan (Markdown, the steps as a list). Do not make changes until \
the user approves the plan.\n</system-reminder>";

/// The plan-mode reminder, hooks the session stacks after the others (`HookStack`, which shows
/// it no prompt another hook blocked). Quick; never blocks.
pub(crate) struct PlanLayer {
    pub(crate) permission: PermissionSwitch,
}

impl Hooks for PlanLayer {
    fn runs_inline(&self) -> bool {
        true
    }

    fn user_prompt_submit(&self, scope: HookScope<'_>, _prompt: &str) -> PromptSubmit {
        let mut answer = PromptSubmit::default();
        if scope.depth == 0 && self.permission.planning() {
            answer.context.push(PLAN_MODE_REMINDER.to_owned());
        }
        answer
    }
}
