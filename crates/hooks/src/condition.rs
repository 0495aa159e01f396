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
mod tests {
    use codecoder_protocol::CallKind;
    use serde_json::{Value, json};

    use super::{CallSubjects, applies, check};

    /// Our tools' kinds and keys for the calls these tests make, as the tools give them.
    fn subjects() -> CallSubjects {
        CallSubjects::new(|tool: &str, args: &Value| {
            let text = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default();
            match tool {
                "run_command" => (CallKind::Execute, vec![format!("shell:{}", text("command"))]),
                "read_file" => (CallKind::Read, vec![format!("read:{}", text("path"))]),
                "edit" => (CallKind::Edit, vec![format!("edit:{}", text("path"))]),
                "web_fetch" => (CallKind::Fetch, vec!["web_fetch:docs.rs".to_owned()]),
                "relabel_files" => (CallKind::Edit, vec![format!("edit:{}", text("from"))]),
                other => (CallKind::Other, vec![other.to_owned()]),
            }
        })
    }

    #[test]
    fn conditions_match_the_call_like_permission_rules() {
        let cwd = std::path::Path::new("/work");
        let subjects = subjects();
        let applies = |condition: &str, tool: &str, args: &Value| {
            applies(condition, tool, args, cwd, Some(&subjects))
        };
        let git = json!({ "command": "git status" });
        assert!(applies("Bash(git *)", "run_command", &git));
        assert!(applies("run_command(git:*)", "run_command", &git));
        assert!(!applies("Bash(rm *)", "run_command", &git));
        // Any part of a compound command is enough.
        let compound = json!({ "command": "ls && rm -rf build" });
        assert!(applies("Bash(rm *)", "run_command", &compound));
        assert!(!applies("Bash(rm *)", "read_file", &json!({ "path": "rm x" })));
        assert!(applies("Edit(src/**)", "edit", &json!({ "path": "src/a.rs" })));
        assert!(!applies("Edit(src/**)", "edit", &json!({ "path": "docs/a.md" })));
        assert!(applies(
            "WebFetch(domain:docs.rs)",
            "web_fetch",
            &json!({ "url": "https://docs.rs/x" })
        ));
        // A tool the conditions know nothing of is matched by what its call is about.
        let relabel = json!({ "from": "src/a.rs" });
        assert!(applies("Edit(src/**)", "relabel_files", &relabel));
        assert!(applies("Edit", "relabel_files", &relabel));
        assert!(!applies("Bash", "relabel_files", &relabel));
        // A condition that does not parse fails open.
        assert!(applies("Bash(", "run_command", &git));
        assert!(check("Bash(").is_err());
        assert!(check("Bash(git *)").is_ok());
    }

    #[test]
    fn without_a_description_of_calls_a_condition_applies() {
        let cwd = std::path::Path::new("/work");
        let git = json!({ "command": "git status" });
        assert!(applies("Bash(rm *)", "run_command", &git, cwd, None));
    }
}
