//! Plan mode in the session (seed L4.3): `PlanHooks` wraps the session's hooks so that a prompt
//! submitted while the permission mode is `plan` carries a reminder telling the model that it
//! plans (only read-only tools run; it ends by presenting the plan with `exit_plan_mode`). The
//! refusals themselves are the approval chain's (`codecoder_policy::plan_refusal`), and the
//! review is the `exit_plan_mode` tool's.
//!
//! Invariants: the reminder goes only to the root agent's prompts and only while plan mode is
//! on, read when the prompt is submitted (Shift+Tab between turns takes effect at the next
//! prompt); every other hook is the inner hooks' answer unchanged.

use std::sync::Arc;

use codecoder_kernel::{
    HookReport, HookScope, Hooks, PermissionHook, PostToolUse, PreToolUse, PromptSubmit,
    SessionStartHook, StopHook,
};
use codecoder_policy::PermissionSwitch;
use codecoder_protocol::{ContentItem, ToolCall};

/// What the model reads with a prompt submitted in plan mode.
pub(crate) const PLAN_MODE_REMINDER: &str = "<system-reminder>\nPlan mode is on: the user \
wants a plan before any change. Only read-only tools run (reading, searching, read-only \
commands); writes, edits, patches and other commands are refused. Explore what you need, then \
call `exit_plan_mode` with your plan (Markdown, the steps as a list). Do not make changes until \
the user approves the plan.\n</system-reminder>";

/// The session's hooks plus the plan-mode reminder.
pub(crate) struct PlanHooks {
    pub(crate) inner: Arc<dyn Hooks>,
    pub(crate) permission: PermissionSwitch,
}

impl Hooks for PlanHooks {
    /// The reminder is quick and never blocks: the loop may call it inline when the inner
    /// hooks are empty.
    fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    fn pre_tool_use(&self, scope: HookScope<'_>, call: &ToolCall) -> PreToolUse {
        self.inner.pre_tool_use(scope, call)
    }

    fn permission_request(
        &self,
        scope: HookScope<'_>,
        call: &ToolCall,
        reason: Option<&str>,
    ) -> PermissionHook {
        self.inner.permission_request(scope, call, reason)
    }

    fn post_tool_use(
        &self,
        scope: HookScope<'_>,
        call: &ToolCall,
        response: &[ContentItem],
        failed: bool,
    ) -> PostToolUse {
        self.inner.post_tool_use(scope, call, response, failed)
    }

    fn user_prompt_submit(&self, scope: HookScope<'_>, prompt: &str) -> PromptSubmit {
        let mut answer = self.inner.user_prompt_submit(scope, prompt);
        if answer.blocked.is_none() && scope.depth == 0 && self.permission.planning() {
            answer.context.push(PLAN_MODE_REMINDER.to_owned());
        }
        answer
    }

    fn stop(&self, scope: HookScope<'_>, stop_hook_active: bool, last_message: &str) -> StopHook {
        self.inner.stop(scope, stop_hook_active, last_message)
    }

    fn subagent_start(&self, scope: HookScope<'_>, agent_id: &str) -> HookReport {
        self.inner.subagent_start(scope, agent_id)
    }

    fn subagent_stop(
        &self,
        scope: HookScope<'_>,
        agent_id: &str,
        last_message: &str,
    ) -> HookReport {
        self.inner.subagent_stop(scope, agent_id, last_message)
    }

    fn session_start(&self, scope: HookScope<'_>, source: &str) -> SessionStartHook {
        self.inner.session_start(scope, source)
    }

    fn pre_compact(
        &self,
        scope: HookScope<'_>,
        trigger: &str,
        custom_instructions: Option<&str>,
    ) -> HookReport {
        self.inner.pre_compact(scope, trigger, custom_instructions)
    }

    fn session_end(&self, reason: &str) -> HookReport {
        self.inner.session_end(reason)
    }

    fn notification(&self, scope: HookScope<'_>, message: &str, kind: &str) -> HookReport {
        self.inner.notification(scope, message, kind)
    }
}
