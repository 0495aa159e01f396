//! The approval seam: an `ApprovalPolicy` decides Allow, Deny or Ask for each call before it
//! runs (the rules, modes and hooks of the `policy` crate sit behind it).
//!
//! Invariant: deny wins. The loop runs the PreToolUse hooks, then asks the policy (telling it
//! the hooks' verdict and whether a session grant covers the call); only when the policy says
//! `Ask` do the session's grants apply, then the PermissionRequest hooks, and only then is the
//! person asked.

use codecoder_protocol::ToolCall;

use crate::hooks::HookVerdict;
use crate::tool::ToolKind;

/// What the policy is asked about.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalQuery<'a> {
    /// The call, with its arguments.
    pub call: &'a ToolCall,
    /// The tool's kind.
    pub kind: ToolKind,
    /// The permission keys the tool derived from the arguments.
    pub permission_keys: &'a [String],
    /// 0 for the root agent, 1 for its subagents, …
    pub depth: u32,
    /// What the PreToolUse hooks decided, if they decided.
    pub hook: Option<&'a HookVerdict>,
    /// Whether the session's grants ("allow for this session" answers) cover every key.
    pub granted: bool,
}

/// The policy's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyDecision {
    /// Run it.
    Allow,
    /// Do not run it; the reason goes to the model.
    Deny {
        /// Why.
        reason: String,
    },
    /// Ask the person (unless a session grant covers it).
    Ask,
}

/// A decision with what made it, for the log and the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyAnswer {
    /// The decision.
    pub decision: PolicyDecision,
    /// Who decided, as logged in the approval record: `rule`, `mode`, `hook`, `session-grant`,
    /// `policy`.
    pub decided_by: String,
    /// The rule or default behind it, in one line (shown with an approval request).
    pub explanation: Option<String>,
}

/// Decides whether calls may run.
pub trait ApprovalPolicy: Send + Sync {
    /// The decision for one call.
    fn decide(&self, query: &ApprovalQuery<'_>) -> PolicyDecision;

    /// The decision with what made it. Default: `decide`, made by "policy".
    fn explain(&self, query: &ApprovalQuery<'_>) -> PolicyAnswer {
        PolicyAnswer {
            decision: self.decide(query),
            decided_by: "policy".to_owned(),
            explanation: None,
        }
    }
}

/// Allows everything (tests, "full auto" modes).
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl ApprovalPolicy for AllowAll {
    fn decide(&self, _query: &ApprovalQuery<'_>) -> PolicyDecision {
        PolicyDecision::Allow
    }
}
