//! The approval seam: an `ApprovalPolicy` decides Allow, Deny or Ask for each call before it
//! runs (the rules, modes and hooks of the `policy` crate sit behind it).
//!
//! Invariant: deny wins. The loop asks the policy first; only when it says `Ask` are the
//! session's grants consulted, and only then is the person asked.

use codecoder_protocol::ToolCall;

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

/// Decides whether calls may run.
pub trait ApprovalPolicy: Send + Sync {
    /// The decision for one call.
    fn decide(&self, query: &ApprovalQuery<'_>) -> PolicyDecision;
}

/// Allows everything (tests, "full auto" modes).
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl ApprovalPolicy for AllowAll {
    fn decide(&self, _query: &ApprovalQuery<'_>) -> PolicyDecision {
        PolicyDecision::Allow
    }
}
