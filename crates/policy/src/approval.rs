//! The chain behind the kernel's approval seam: `ChainPolicy` holds a session's `Policy` and
//! answers the kernel's `ApprovalPolicy` with `decide`'s verdict, who reached it and why.
//!
//! Invariants: the approval mode and the permission mode are the only parts that change while
//! a session runs (`/approvals`, Shift+Tab, plan approval); a poisoned lock still yields the
//! last policy written (a panic elsewhere must not turn every call into an error). A deny's
//! reason for the model names the policy. Plan mode refuses before anything else is asked
//! (bypass included): nothing that writes runs while the model plans.

use std::sync::{PoisonError, RwLock};

use codecoder_kernel::{ApprovalPolicy, ApprovalQuery, HookVerdict, PolicyAnswer};
use codecoder_protocol::{CallView, ToolKind, Verdict};

use crate::chain::{Decision, Policy, Request, Source, decide, edits_inside_roots, plan_refusal};
use crate::mode::{ApprovalMode, Modes, PermissionMode, PermissionSwitch};

/// A session's permission chain, as the kernel's approval policy.
#[derive(Debug)]
pub struct ChainPolicy {
    policy: RwLock<Policy>,
    permission: PermissionSwitch,
}

impl ChainPolicy {
    /// The chain over `policy`, in the default permission mode.
    pub fn new(policy: Policy) -> Self {
        Self::with_permission(policy, PermissionSwitch::new(PermissionMode::Default))
    }

    /// The chain over `policy`, its permission mode read from `permission` at every call.
    pub fn with_permission(policy: Policy, permission: PermissionSwitch) -> Self {
        Self { policy: RwLock::new(policy), permission }
    }

    /// The permission mode's switch (shared: changing it changes the chain's decisions).
    pub fn permission(&self) -> &PermissionSwitch {
        &self.permission
    }

    /// The modes now.
    pub fn modes(&self) -> Modes {
        self.policy.read().unwrap_or_else(PoisonError::into_inner).modes
    }

    /// Adds `allow` rules to the user's layer for the calls decided from now on (rules a
    /// person or an SDK granted for the session).
    ///
    /// # Errors
    /// The first rule that does not parse; nothing is added then.
    pub fn allow_rules(&self, allow: &[String]) -> Result<(), String> {
        let mut policy = self.policy.write().unwrap_or_else(PoisonError::into_inner);
        policy.user_rules = policy.user_rules.with_allowed(allow).map_err(|err| err.to_string())?;
        Ok(())
    }

    /// Switches the approval mode for the calls decided from now on.
    pub fn set_approval(&self, approval: ApprovalMode) {
        self.policy.write().unwrap_or_else(PoisonError::into_inner).modes.approval = approval;
    }

    /// The chain's decision for a call of `tool` (of `kind`, described by `view`, with
    /// permission `keys`), given the PreToolUse hooks' verdict and whether a session grant
    /// covers every key.
    pub fn decide_call(
        &self,
        tool: &str,
        kind: ToolKind,
        view: &CallView,
        keys: &[String],
        hook: Option<&HookVerdict>,
        granted: bool,
    ) -> Decision {
        self.decide_call_in(self.permission.get(), tool, kind, view, keys, hook, granted)
    }

    /// [`Self::decide_call`] in the permission mode `mode` instead of the switch's (a subagent
    /// held to its definition's `permissionMode`).
    #[allow(clippy::too_many_arguments)]
    pub fn decide_call_in(
        &self,
        mode: PermissionMode,
        tool: &str,
        kind: ToolKind,
        view: &CallView,
        keys: &[String],
        hook: Option<&HookVerdict>,
        granted: bool,
    ) -> Decision {
        let policy = self.policy.read().unwrap_or_else(PoisonError::into_inner);
        let request =
            Request { tool, kind, view, permission_keys: keys, hook, session_grant: granted };
        if mode == PermissionMode::Plan
            && let Some(refusal) = plan_refusal(&policy, &request)
        {
            return refusal;
        }
        let decision = decide(&policy, &request);
        if mode == PermissionMode::AcceptEdits
            && decision.verdict == Verdict::Ask
            && matches!(decision.source, Source::Default { .. })
            && edits_inside_roots(&policy, &request)
        {
            return Decision {
                verdict: Verdict::Allow,
                source: Source::PermissionMode { mode },
                reason: format!(
                    "acceptEdits: edits inside the writable roots run ({})",
                    decision.reason
                ),
            };
        }
        decision
    }

    /// The kernel's answer for `query` in the permission mode `mode` (the switch's for
    /// [`ApprovalPolicy::decide`]).
    pub fn decide_in(&self, mode: PermissionMode, query: &ApprovalQuery<'_>) -> PolicyAnswer {
        let decision = self.decide_call_in(
            mode,
            &query.call.name,
            query.kind,
            query.view,
            query.permission_keys,
            query.hook,
            query.granted,
        );
        let reason = match decision.verdict {
            Verdict::Deny => format!("blocked by the permission policy: {}", decision.reason),
            Verdict::Allow | Verdict::Ask => decision.to_string(),
        };
        PolicyAnswer {
            decision: decision.verdict,
            decided_by: decision.source.decided_by(),
            reason: Some(reason),
        }
    }
}

impl ApprovalPolicy for ChainPolicy {
    fn decide(&self, query: &ApprovalQuery<'_>) -> PolicyAnswer {
        self.decide_in(self.permission.get(), query)
    }
}
