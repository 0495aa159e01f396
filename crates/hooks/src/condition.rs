//! A handler's `if` condition (Claude Code's newer field): permission-rule syntax such as
//! `Bash(git *)` or `Edit(src/**)`, matched against the call with the policy crate's rule
//! matcher. The hook runs when any part of the call matches (as for a deny rule: `Bash(rm *)`
//! applies to `ls && rm x`). A condition that does not parse fails open: the hook runs (as in
//! Claude Code), and loading warned about it.
//!
//! The call is described by the session's tools ([`CallSubjects`]): the kind of its view and
//! the permission keys its tool derives, exactly what the approval policy matches rules
//! against, so a condition and a permission rule mean the same calls and no tool is named here.
//! A runner given no description of calls cannot tell what a call is about: its conditional
//! hooks run (failing open, like a condition that does not parse).

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use codecoder_policy::{Call, CommandContext, RuleOrigin, RuleSet, Verdict};
use codecoder_protocol::CallKind;
use serde_json::Value;

/// The describer behind [`CallSubjects`].
type Describe = dyn Fn(&str, &Value) -> (CallKind, Vec<String>) + Send + Sync;

/// What a call is, for matching conditions: from a tool's name (ours) and its arguments, the
/// kind of the call's view and the permission keys the tool derives (the session's tool
/// registry gives both).
#[derive(Clone)]
pub struct CallSubjects(Arc<Describe>);

impl CallSubjects {
    /// Calls described by `describe`.
    pub fn new(
        describe: impl Fn(&str, &Value) -> (CallKind, Vec<String>) + Send + Sync + 'static,
    ) -> Self {
        Self(Arc::new(describe))
    }
}

impl fmt::Debug for CallSubjects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallSubjects").finish_non_exhaustive()
    }
}

/// Whether `condition` applies to a call of `tool` (our name) with `args` (ours), in `cwd`,
/// the call described by `subjects` (none: it applies).
pub(crate) fn applies(
    condition: &str,
    tool: &str,
    args: &Value,
    cwd: &Path,
    subjects: Option<&CallSubjects>,
) -> bool {
    let Ok(rules) = RuleSet::parse(&[], &[], &[condition.to_owned()], RuleOrigin::User) else {
        return true;
    };
    let Some(CallSubjects(describe)) = subjects else { return true };
    let ctx = CommandContext {
        cwd: cwd.to_owned(),
        writable_roots: Vec::new(),
        home: std::env::var_os(codecoder_protocol::env::HOME).map(Into::into),
    };
    let (kind, keys) = describe(tool, args);
    let call = Call::new(tool, &kind, &keys, &ctx);
    rules.matching(Verdict::Deny, &call, &ctx).is_some()
}

/// Whether `condition` is a rule the matcher understands (checked when hooks are loaded).
pub(crate) fn check(condition: &str) -> Result<(), String> {
    RuleSet::parse(&[], &[], &[condition.to_owned()], RuleOrigin::User)
        .map(|_| ())
        .map_err(|err| err.to_string())
}

#[cfg(test)]
mod tests;
