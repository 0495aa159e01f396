//! The approval seam: an `ApprovalPolicy` decides Allow, Deny or Ask for each call before it
//! runs (the rules, modes and hooks of the `policy` crate sit behind it).
//!
//! Invariant: deny wins. The loop runs the PreToolUse hooks, then asks the policy (telling it
//! the hooks' verdict and whether a session grant covers the call); only when the policy says
//! `Ask` do the session's grants apply, then the PermissionRequest hooks, and only then is the
//! person asked.

use codecoder_protocol::{CallView, DecidedBy, ToolCall, ToolKind, Verdict};

use crate::hooks::HookVerdict;

/// What the policy is asked about.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalQuery<'a> {
    /// The call, with its arguments.
    pub call: &'a ToolCall,
    /// What the call is, as its tool describes it (for the rewritten arguments when a hook
    /// rewrote them): the policy reads an MCP call and a destructive one from it.
    pub view: &'a CallView,
    /// The tool's kind.
    pub kind: ToolKind,
    /// The permission keys the tool derived from the arguments.
    pub permission_keys: &'a [String],
    /// 0 for the root agent, 1 for its subagents, …
    pub depth: u32,
    /// The subagent type making the call (`general-purpose` or a defined agent's name); `None`
    /// for the root agent. A policy may hold an agent type to its own permission mode.
    pub agent_type: Option<&'a str>,
    /// What the PreToolUse hooks decided, if they decided.
    pub hook: Option<&'a HookVerdict>,
    /// Whether the session's grants ("allow for this session" answers) cover every key.
    pub granted: bool,
}

/// The policy's answer: the verdict, who reached it, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyAnswer {
    /// Allow, ask the person (unless a session grant covers the call), or deny.
    pub decision: Verdict,
    /// Who decided, as logged in the approval record (`rule`, `mode`, `hook`, `session-grant`,
    /// `policy`).
    pub decided_by: DecidedBy,
    /// Why, in one line: on a deny the reason the model gets, on an ask the rule or default
    /// behind it (shown with the approval request).
    pub reason: Option<String>,
}

impl PolicyAnswer {
    /// Run it, decided by "policy".
    pub fn allow() -> Self {
        Self { decision: Verdict::Allow, decided_by: DecidedBy::Policy, reason: None }
    }

    /// Ask the person, decided by "policy".
    pub fn ask() -> Self {
        Self { decision: Verdict::Ask, decided_by: DecidedBy::Policy, reason: None }
    }

    /// Do not run it, decided by "policy"; `reason` goes to the model.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self { decision: Verdict::Deny, decided_by: DecidedBy::Policy, reason: Some(reason.into()) }
    }
}

/// Decides whether calls may run.
pub trait ApprovalPolicy: Send + Sync {
    /// The decision for one call, with what made it.
    fn decide(&self, query: &ApprovalQuery<'_>) -> PolicyAnswer;
}

/// Allows everything (tests, "full auto" modes).
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl ApprovalPolicy for AllowAll {
    fn decide(&self, _query: &ApprovalQuery<'_>) -> PolicyAnswer {
        PolicyAnswer::allow()
    }
}
