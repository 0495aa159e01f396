//! The lifecycle-hook seam (design.md "Tools, approvals, sandbox"; Claude Code's hook events).
//!
//! The kernel calls a `Hooks` implementation at fixed points of a session: before a tool call
//! (which may allow, deny or ask, and may rewrite the arguments), when the person is about to be
//! asked, after a call, when the policy refused a call, after all the calls of a response,
//! when a prompt is submitted, when a turn would stop or ends on a model error, around
//! subagents, after a compaction, and at session start and end. What the hooks are (shell scripts, in the `hooks` crate) is
//! none of the kernel's business; `NoHooks` is the default and costs nothing.
//!
//! Every event can also stop the turn (`HookReport::stop`, Claude Code's `continue: false`) and
//! carry messages for the person (`systemMessage`), which the kernel sends as `HookMessage`
//! events.
//!
//! This trait and its outcome types are the whole seam: the `hooks` crate implements `Hooks`
//! for its runner and folds its scripts' answers straight into these types; what a session adds
//! of its own (skills, plan mode) implements `Hooks` too, and a `HookStack` asks each source in
//! turn and folds their answers into one.
//!
//! Invariants: a hook can never make a call run that the approval policy denies (its decision is
//! one input of the policy, and deny wins); a hook's rewritten arguments are validated against
//! the tool's schema like the model's; an implementation bounds its own time (the `hooks` crate
//! kills a hook at its timeout) and stops at once when `HookScope::cancel` fires (the `hooks`
//! crate kills the hook's process group). The loop runs the hooks it calls itself on a helper
//! thread while it keeps reading commands, so a cancel reaches a running hook.

use std::sync::Arc;
use std::time::Duration;

use codecoder_protocol::{ApprovalDecision, ToolCall, ToolResult, Verdict};
use serde_json::Value;

use crate::cancel::CancelToken;
use crate::tool::ToolOutput;

/// What any hook event may say besides its own answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookReport {
    /// A hook said `continue: false`: the turn stops after this event. The text (its
    /// `stopReason`) is for the person, not the model.
    pub stop: Option<String>,
    /// Messages for the person (`systemMessage`s).
    pub messages: Vec<String>,
    /// Non-blocking hook problems (bad output, a failing or timed-out hook), for the person.
    pub errors: Vec<String>,
}

/// A hook's verdict on a call, with its reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookVerdict {
    /// Allow (skip the prompt; rules that ask or deny still do), ask the person, or deny.
    pub decision: Verdict,
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
    /// Stop request and messages for the person.
    pub report: HookReport,
}

/// What the PermissionRequest hooks said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PermissionHook {
    /// Their answer in the person's place; `None`: ask the person.
    pub answer: Option<PermissionAnswer>,
    /// Stop request and messages for the person.
    pub report: HookReport,
}

/// What a PermissionRequest hook answered in the person's place.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionAnswer {
    /// Allow once, or deny (with feedback).
    pub decision: ApprovalDecision,
    /// Arguments that replace the call's, with an allow.
    pub updated_args: Option<Value>,
    /// With a deny, a hook asked to interrupt the turn as well (Claude Code's `interrupt`).
    /// The loop denies the call and the turn goes on. FIXME: stop the turn, as Claude does.
    pub interrupt: bool,
}

impl PermissionAnswer {
    fn denies(&self) -> bool {
        match self.decision {
            ApprovalDecision::Deny | ApprovalDecision::DenyWithFeedback { .. } => true,
            ApprovalDecision::AllowOnce
            | ApprovalDecision::AllowForSession
            | ApprovalDecision::Cancelled => false,
        }
    }
}

/// What the PostToolUse (or PostToolUseFailure) hooks said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostToolUse {
    /// Feedback for the model (a blocking hook's stderr, or a `decision: block` reason).
    pub feedback: Option<String>,
    /// Text for the model.
    pub context: Vec<String>,
    /// Stop request and messages for the person.
    pub report: HookReport,
}

/// What the UserPromptSubmit hooks said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptSubmit {
    /// The prompt is blocked (erased); the reason is for the person.
    pub blocked: Option<String>,
    /// Text added to the prompt for the model.
    pub context: Vec<String>,
    /// Stop request and messages for the person.
    pub report: HookReport,
}

/// What the Stop hooks said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StopHook {
    /// Keep the turn going with this instruction for the model (ignored when `report.stop`
    /// is set: `continue: false` wins).
    pub instruction: Option<String>,
    /// Stop request and messages for the person.
    pub report: HookReport,
}

/// What the SessionStart hooks said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionStartHook {
    /// Text for the model, added to the first prompt.
    pub context: Vec<String>,
    /// Stop request and messages for the person.
    pub report: HookReport,
}

/// What the PermissionDenied hooks said about a refused call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PermissionDeniedHook {
    /// A hook said the model may try the call again (`hookSpecificOutput.retry`): the refusal
    /// the model reads says so.
    pub retry: bool,
    /// Stop request and messages for the person.
    pub report: HookReport,
}

/// Facts about the agent a hook may want, and the turn's cancel.
#[derive(Debug, Clone, Copy)]
pub struct HookScope<'a> {
    /// 0 for the root agent.
    pub depth: u32,
    /// The subagent's type (`None` for the root).
    pub agent_type: Option<&'a str>,
    /// The subagent's id, the id of the `agent` call that started it (`None` for the root).
    pub agent_id: Option<&'a str>,
    /// Fires when the turn is cancelled: stop running hooks at once (kill their processes);
    /// what they said no longer matters.
    pub cancel: &'a CancelToken,
}

/// Lifecycle hooks. Every method has a do-nothing default.
pub trait Hooks: Send + Sync {
    /// True when every method returns at once (it runs no process and waits for nothing), so
    /// the loop may call them on its own thread instead of a helper. Default false.
    fn runs_inline(&self) -> bool {
        false
    }
    /// Before the approval chain runs for a call.
    fn pre_tool_use(&self, scope: HookScope<'_>, call: &ToolCall) -> PreToolUse {
        let _ = (scope, call);
        PreToolUse::default()
    }
    /// The person is about to be asked; `Some` answers in their place.
    fn permission_request(&self, scope: HookScope<'_>, call: &ToolCall) -> PermissionHook {
        let _ = (scope, call);
        PermissionHook::default()
    }
    /// After a call ran for `duration`: `output` is what the model sees (for a tool error, one
    /// text item saying what went wrong, marked as an error).
    fn post_tool_use(
        &self,
        scope: HookScope,
        call: &ToolCall,
        output: &ToolOutput,
        duration: Duration,
    ) -> PostToolUse {
        let _ = (scope, call, output, duration);
        PostToolUse::default()
    }
    /// A prompt is about to be added to the history.
    fn user_prompt_submit(&self, scope: HookScope<'_>, prompt: &str) -> PromptSubmit {
        let _ = (scope, prompt);
        PromptSubmit::default()
    }
    /// The turn would end. An `instruction` continues it with that instruction for the model.
    fn stop(&self, scope: HookScope<'_>, stop_hook_active: bool, last_message: &str) -> StopHook {
        let _ = (scope, stop_hook_active, last_message);
        StopHook::default()
    }
    /// A subagent starts (`scope` is the child's, its cancel the parent call's).
    fn subagent_start(&self, scope: HookScope<'_>, agent_id: &str) -> HookReport {
        let _ = (scope, agent_id);
        HookReport::default()
    }
    /// A subagent finished (`scope` is the child's, its cancel the parent call's).
    fn subagent_stop(&self, scope: HookScope<'_>, agent_id: &str, last: &str) -> HookReport {
        let _ = (scope, agent_id, last);
        HookReport::default()
    }
    /// The first turn of this process (`source` is `startup` or `resume`), and after a
    /// compaction (`compact`): the context goes into the fresh conversation.
    fn session_start(&self, scope: HookScope<'_>, source: &str) -> SessionStartHook {
        let _ = (scope, source);
        SessionStartHook::default()
    }
    /// The conversation is about to be compacted: `trigger` is `auto` or `manual`, `focus`
    /// what the person wants the summary to keep (`/compact TEXT`).
    fn pre_compact(&self, scope: HookScope<'_>, trigger: &str, focus: Option<&str>) -> HookReport {
        let _ = (scope, trigger, focus);
        HookReport::default()
    }
    /// The agent shuts down.
    fn session_end(&self, reason: &str) -> HookReport {
        let _ = reason;
        HookReport::default()
    }
    /// Something wants the person's attention (`permission_prompt`, `idle_prompt`, …).
    fn notification(&self, scope: HookScope<'_>, message: &str, kind: &str) -> HookReport {
        let _ = (scope, message, kind);
        HookReport::default()
    }
    /// The approval policy (a rule, the mode, a hook) refused `call` for `reason`, before the
    /// refusal goes to the model. The person's own denial is not one.
    fn permission_denied(
        &self,
        scope: HookScope<'_>,
        call: &ToolCall,
        reason: &str,
    ) -> PermissionDeniedHook {
        let _ = (scope, call, reason);
        PermissionDeniedHook::default()
    }
    /// Every call of a model response ran and its result is logged (`batch`: each call with
    /// its result, in call order), before the next request. `feedback` (a blocking hook's
    /// reason) stops the turn; `context` goes to the model with the next request.
    fn post_tool_batch(
        &self,
        scope: HookScope<'_>,
        batch: &[(ToolCall, ToolResult)],
    ) -> PostToolUse {
        let _ = (scope, batch);
        PostToolUse::default()
    }
    /// The turn ends on a model error: `error` is its class (`rate_limit`,
    /// `authentication_failed`, `invalid_request`, `server_error`, `unknown`), `details` the
    /// message, `last_message` what the model last said. Nothing a hook says changes the end.
    fn stop_failure(
        &self,
        scope: HookScope<'_>,
        error: &str,
        details: &str,
        last_message: &str,
    ) -> HookReport {
        let _ = (scope, error, details, last_message);
        HookReport::default()
    }
    /// A plan update added a step (`task_id` is its 1-based position, `subject` its text). The
    /// `feedback` and `context` join the plan update's result for the model.
    fn task_created(&self, scope: HookScope<'_>, task_id: &str, subject: &str) -> PostToolUse {
        let _ = (scope, task_id, subject);
        PostToolUse::default()
    }
    /// A plan update marked a step completed that was not before (as `task_created`).
    fn task_completed(&self, scope: HookScope<'_>, task_id: &str, subject: &str) -> PostToolUse {
        let _ = (scope, task_id, subject);
        PostToolUse::default()
    }
    /// The conversation was compacted (`trigger` is `auto` or `manual`); `summary` is the
    /// summary the model wrote (empty when the history was trimmed without one).
    fn post_compact(&self, scope: HookScope<'_>, trigger: &str, summary: &str) -> HookReport {
        let _ = (scope, trigger, summary);
        HookReport::default()
    }
}

/// No hooks.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;

impl Hooks for NoHooks {
    fn runs_inline(&self) -> bool {
        true
    }
}

/// An answer that folds in what a later source of hooks said (see `HookStack`).
trait Fold: Default {
    fn fold(&mut self, later: Self);
    /// No later source is asked once this holds.
    fn settled(&self) -> bool {
        false
    }
}

impl Fold for HookReport {
    fn fold(&mut self, later: Self) {
        self.stop = self.stop.take().or(later.stop);
        self.messages.extend(later.messages);
        self.errors.extend(later.errors);
    }
}

impl Fold for PreToolUse {
    fn fold(&mut self, later: Self) {
        if let Some(verdict) = later.verdict
            && self.verdict.as_ref().is_none_or(|held| held.decision < verdict.decision)
        {
            self.verdict = Some(verdict);
        }
        self.updated_args = self.updated_args.take().or(later.updated_args);
        self.context.extend(later.context);
        self.report.fold(later.report);
    }
}

impl Fold for PermissionHook {
    fn fold(&mut self, later: Self) {
        let replaces = match (&self.answer, &later.answer) {
            (None, _) => true,
            (Some(held), Some(new)) => new.denies() && !held.denies(),
            (Some(_), None) => false,
        };
        if replaces {
            self.answer = later.answer;
        }
        self.report.fold(later.report);
    }
}

impl Fold for PostToolUse {
    fn fold(&mut self, later: Self) {
        join(&mut self.feedback, later.feedback);
        self.context.extend(later.context);
        self.report.fold(later.report);
    }
}

impl Fold for PromptSubmit {
    fn fold(&mut self, later: Self) {
        self.blocked = later.blocked;
        self.context.extend(later.context);
        self.report.fold(later.report);
    }
    fn settled(&self) -> bool {
        self.blocked.is_some()
    }
}

impl Fold for StopHook {
    fn fold(&mut self, later: Self) {
        join(&mut self.instruction, later.instruction);
        self.report.fold(later.report);
    }
}

impl Fold for SessionStartHook {
    fn fold(&mut self, later: Self) {
        self.context.extend(later.context);
        self.report.fold(later.report);
    }
}

impl Fold for PermissionDeniedHook {
    fn fold(&mut self, later: Self) {
        self.retry |= later.retry;
        self.report.fold(later.report);
    }
}

/// Joins two optional texts with a newline, as several hooks' texts are joined.
fn join(earlier: &mut Option<String>, later: Option<String>) {
    *earlier = match (earlier.take(), later) {
        (Some(earlier), Some(later)) => Some(format!("{earlier}\n{later}")),
        (earlier, later) => earlier.or(later),
    };
}

/// Hooks from several sources (the person's hook scripts, then what the session adds), asked in
/// order; their answers fold into one as several hooks of one event do:
/// - a verdict on a call: the strongest wins (deny > ask > allow), the earlier of two equal ones;
/// - rewritten arguments and stop requests: the earliest wins;
/// - a PermissionRequest answer: a deny wins over an allow, else the earliest;
/// - texts for the model and messages for the person: all of them, in order.
///
/// A prompt that a source blocked is shown to no later one, so nothing acts on a prompt that
/// will not be sent.
pub struct HookStack(pub Vec<Arc<dyn Hooks>>);

impl HookStack {
    /// Asks every source in order (until the answer is settled) and folds what they said.
    fn ask<T: Fold>(&self, event: impl Fn(&dyn Hooks) -> T) -> T {
        let mut answer = T::default();
        for hooks in &self.0 {
            if answer.settled() {
                break;
            }
            answer.fold(event(hooks.as_ref()));
        }
        answer
    }
}

impl Hooks for HookStack {
    fn runs_inline(&self) -> bool {
        self.0.iter().all(|hooks| hooks.runs_inline())
    }

    fn pre_tool_use(&self, scope: HookScope<'_>, call: &ToolCall) -> PreToolUse {
        self.ask(|hooks| hooks.pre_tool_use(scope, call))
    }

    fn permission_request(&self, scope: HookScope<'_>, call: &ToolCall) -> PermissionHook {
        self.ask(|hooks| hooks.permission_request(scope, call))
    }

    fn post_tool_use(
        &self,
        scope: HookScope,
        call: &ToolCall,
        output: &ToolOutput,
        duration: Duration,
    ) -> PostToolUse {
        self.ask(|hooks| hooks.post_tool_use(scope, call, output, duration))
    }

    fn user_prompt_submit(&self, scope: HookScope<'_>, prompt: &str) -> PromptSubmit {
        self.ask(|hooks| hooks.user_prompt_submit(scope, prompt))
    }

    fn stop(&self, scope: HookScope<'_>, stop_hook_active: bool, last_message: &str) -> StopHook {
        self.ask(|hooks| hooks.stop(scope, stop_hook_active, last_message))
    }

    fn subagent_start(&self, scope: HookScope<'_>, agent_id: &str) -> HookReport {
        self.ask(|hooks| hooks.subagent_start(scope, agent_id))
    }

    fn subagent_stop(&self, scope: HookScope<'_>, agent_id: &str, last: &str) -> HookReport {
        self.ask(|hooks| hooks.subagent_stop(scope, agent_id, last))
    }

    fn session_start(&self, scope: HookScope<'_>, source: &str) -> SessionStartHook {
        self.ask(|hooks| hooks.session_start(scope, source))
    }

    fn pre_compact(&self, scope: HookScope<'_>, trigger: &str, focus: Option<&str>) -> HookReport {
        self.ask(|hooks| hooks.pre_compact(scope, trigger, focus))
    }

    fn session_end(&self, reason: &str) -> HookReport {
        self.ask(|hooks| hooks.session_end(reason))
    }

    fn notification(&self, scope: HookScope<'_>, message: &str, kind: &str) -> HookReport {
        self.ask(|hooks| hooks.notification(scope, message, kind))
    }

    fn permission_denied(
        &self,
        scope: HookScope<'_>,
        call: &ToolCall,
        reason: &str,
    ) -> PermissionDeniedHook {
        self.ask(|hooks| hooks.permission_denied(scope, call, reason))
    }

    fn post_tool_batch(
        &self,
        scope: HookScope<'_>,
        batch: &[(ToolCall, ToolResult)],
    ) -> PostToolUse {
        self.ask(|hooks| hooks.post_tool_batch(scope, batch))
    }

    fn stop_failure(
        &self,
        scope: HookScope<'_>,
        error: &str,
        details: &str,
        last_message: &str,
    ) -> HookReport {
        self.ask(|hooks| hooks.stop_failure(scope, error, details, last_message))
    }

    fn post_compact(&self, scope: HookScope<'_>, trigger: &str, summary: &str) -> HookReport {
        self.ask(|hooks| hooks.post_compact(scope, trigger, summary))
    }

    fn task_created(&self, scope: HookScope<'_>, task_id: &str, subject: &str) -> PostToolUse {
        self.ask(|hooks| hooks.task_created(scope, task_id, subject))
    }

    fn task_completed(&self, scope: HookScope<'_>, task_id: &str, subject: &str) -> PostToolUse {
        self.ask(|hooks| hooks.task_completed(scope, task_id, subject))
    }
}
