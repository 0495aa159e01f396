//! What the session adds on top of the user's hooks (skills, plan mode), as layers over them.
//!
//! A [`HookLayer`] sees the inner hooks' answer to the few hooks it cares about and may add to
//! it; [`Layered`] forwards every other hook to the inner hooks unchanged. The forwarding is
//! written once, here: a layer cannot forget one (a layer that did once dropped the user's
//! PreCompact hooks whenever a skill was installed).
//!
//! Invariants: a layer's work is quick and never blocks (the loop may run the hooks inline when
//! the inner hooks are empty, which is what `Layered::is_empty` reports); a layer adds to an
//! answer, it never removes what the inner hooks said.

use std::sync::Arc;

use codecoder_kernel::{
    HookReport, HookScope, Hooks, PermissionHook, PostToolUse, PreToolUse, PromptSubmit,
    SessionStartHook, StopHook,
};
use codecoder_protocol::{ContentItem, ToolCall};

/// Additions to the inner hooks' answers. Every method does nothing by default.
pub(crate) trait HookLayer: Send + Sync {
    /// After the inner PreToolUse hooks answered for `call`.
    fn pre_tool_use(&self, scope: HookScope<'_>, call: &ToolCall, answer: &mut PreToolUse) {
        let _ = (scope, call, answer);
    }

    /// After the inner UserPromptSubmit hooks answered for `prompt`.
    fn user_prompt_submit(&self, scope: HookScope<'_>, prompt: &str, answer: &mut PromptSubmit) {
        let _ = (scope, prompt, answer);
    }

    /// The turn would end; called before the inner Stop hooks.
    fn stop(&self, scope: HookScope<'_>) {
        let _ = scope;
    }
}

/// The inner hooks with `layer` on top.
pub(crate) struct Layered<L> {
    pub(crate) inner: Arc<dyn Hooks>,
    pub(crate) layer: L,
}

impl<L: HookLayer> Hooks for Layered<L> {
    fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    fn pre_tool_use(&self, scope: HookScope<'_>, call: &ToolCall) -> PreToolUse {
        let mut answer = self.inner.pre_tool_use(scope, call);
        self.layer.pre_tool_use(scope, call, &mut answer);
        answer
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
        self.layer.user_prompt_submit(scope, prompt, &mut answer);
        answer
    }

    fn stop(&self, scope: HookScope<'_>, stop_hook_active: bool, last_message: &str) -> StopHook {
        self.layer.stop(scope);
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
