//! The lifecycle-hook seam (design.md "Tools, approvals, sandbox"; Claude Code's hook events).
//!
//! The kernel calls a `Hooks` implementation at fixed points of a session: before a tool call
//! (which may allow, deny or ask, and may rewrite the arguments), when the person is about to be
//! asked, after a call, when a prompt is submitted, when a turn would stop, around subagents,
//! and at session start and end. What the hooks are (shell scripts, in the `hooks` crate) is
//! none of the kernel's business; `NoHooks` is the default and costs nothing.
//!
//! Invariants: a hook can never make a call run that the approval policy denies (its decision is
//! one input of the policy, and deny wins); a hook's rewritten arguments are validated against
//! the tool's schema like the model's; hooks run on the thread that calls them, so an
//! implementation must bound its own time (the `hooks` crate kills a hook at its timeout).

use codecoder_protocol::{ApprovalDecision, ContentItem, ToolCall};
use serde_json::Value;

/// What a PreToolUse hook decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookDecision {
    /// Skip the prompt (rules that ask or deny still do).
    Allow,
    /// Ask the person.
    Ask,
    /// Do not run the call.
    Deny,
}

/// A hook's verdict on a call, with its reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookVerdict {
    /// The decision.
    pub decision: HookDecision,
    /// Why (to the model on deny, to the person on ask).
    pub reason: Option<String>,
}

/// What the PreToolUse hooks said about a call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PreToolUse {
    /// Their verdict, if any expressed one.
    pub verdict: Option<HookVerdict>,
    /// Arguments that replace the model's (in the tool's own argument names).
    pub updated_args: Option<Value>,
    /// Text for the model, added to the call's result.
    pub context: Vec<String>,
    /// Messages for the person (`systemMessage`, non-blocking hook errors).
    pub messages: Vec<String>,
}

/// What a PermissionRequest hook answered in the person's place.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionAnswer {
    /// Allow once, or deny (with feedback).
    pub decision: ApprovalDecision,
    /// Arguments that replace the call's, with an allow.
    pub updated_args: Option<Value>,
}

/// What the PostToolUse (or PostToolUseFailure) hooks said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostToolUse {
    /// Feedback for the model (a blocking hook's stderr, or a `decision: block` reason).
    pub feedback: Option<String>,
    /// Text for the model.
    pub context: Vec<String>,
    /// Messages for the person.
    pub messages: Vec<String>,
}

/// What the UserPromptSubmit hooks said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptSubmit {
    /// The prompt is blocked (erased); the reason is for the person.
    pub blocked: Option<String>,
    /// Text added to the prompt for the model.
    pub context: Vec<String>,
    /// Messages for the person.
    pub messages: Vec<String>,
}

/// Facts about the agent a hook may want.
#[derive(Debug, Clone, Copy)]
pub struct HookScope<'a> {
    /// 0 for the root agent.
    pub depth: u32,
    /// The subagent's type (`None` for the root).
    pub agent_type: Option<&'a str>,
}

/// Lifecycle hooks. Every method has a do-nothing default.
pub trait Hooks: Send + Sync {
    /// Before the approval chain runs for a call.
    fn pre_tool_use(&self, scope: HookScope<'_>, call: &ToolCall) -> PreToolUse {
        let _ = (scope, call);
        PreToolUse::default()
    }
    /// The person is about to be asked; `Some` answers in their place.
    fn permission_request(
        &self,
        scope: HookScope<'_>,
        call: &ToolCall,
        reason: Option<&str>,
    ) -> Option<PermissionAnswer> {
        let _ = (scope, call, reason);
        None
    }
    /// After a call ran: `response` is what the model sees (for a tool error, one text item
    /// saying what went wrong), `failed` whether it is an error.
    fn post_tool_use(
        &self,
        scope: HookScope<'_>,
        call: &ToolCall,
        response: &[ContentItem],
        failed: bool,
    ) -> PostToolUse {
        let _ = (scope, call, response, failed);
        PostToolUse::default()
    }
    /// A prompt is about to be added to the history.
    fn user_prompt_submit(&self, scope: HookScope<'_>, prompt: &str) -> PromptSubmit {
        let _ = (scope, prompt);
        PromptSubmit::default()
    }
    /// The turn would end. `Some(instruction)` continues it with that instruction for the model.
    fn stop(
        &self,
        scope: HookScope<'_>,
        stop_hook_active: bool,
        last_message: &str,
    ) -> Option<String> {
        let _ = (scope, stop_hook_active, last_message);
        None
    }
    /// A subagent starts (`scope` is the child's).
    fn subagent_start(&self, scope: HookScope<'_>, agent_id: &str) {
        let _ = (scope, agent_id);
    }
    /// A subagent finished (`scope` is the child's).
    fn subagent_stop(&self, scope: HookScope<'_>, agent_id: &str, last_message: &str) {
        let _ = (scope, agent_id, last_message);
    }
    /// The first turn of this process: `source` is `startup` or `resume`. Returns context for
    /// the model.
    fn session_start(&self, source: &str) -> Vec<String> {
        let _ = source;
        Vec::new()
    }
    /// The agent shuts down.
    fn session_end(&self, reason: &str) {
        let _ = reason;
    }
    /// Something wants the person's attention (`permission_prompt`, `idle_prompt`, …).
    fn notification(&self, message: &str, kind: &str) {
        let _ = (message, kind);
    }
}

/// No hooks.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;

impl Hooks for NoHooks {}
