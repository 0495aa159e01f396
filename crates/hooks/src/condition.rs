//! A handler's `if` condition (Claude Code's newer field): permission-rule syntax such as
//! `Bash(git *)` or `Edit(src/**)`, matched against the call with the policy crate's rule
//! matcher. The hook runs when any part of the call matches (as for a deny rule: `Bash(rm *)`
//! applies to `ls && rm x`). A condition that does not parse fails open: the hook runs (as in
//! Claude Code), and loading warned about it.

use std::path::Path;

use codecoder_policy::{Call, CommandContext, RuleOrigin, RuleSet, Verdict};
use codecoder_protocol::CallKind;
use serde_json::Value;

/// Whether `condition` applies to a call of `tool` (our name) with `args` (ours), in `cwd`.
pub(crate) fn applies(condition: &str, tool: &str, args: &Value, cwd: &Path) -> bool {
    let Ok(rules) = RuleSet::parse(&[], &[], &[condition.to_owned()], RuleOrigin::User) else {
        return true;
    };
    let ctx = CommandContext {
        cwd: cwd.to_owned(),
        writable_roots: Vec::new(),
        home: std::env::var_os(codecoder_protocol::env::HOME).map(Into::into),
    };
    let (kind, keys) = keys(tool, args);
    let call = Call::new(tool, &kind, &keys, &ctx);
    rules.matching(Verdict::Deny, &call, &ctx).is_some()
}

/// Whether `condition` is a rule the matcher understands (checked when hooks are loaded).
pub(crate) fn check(condition: &str) -> Result<(), String> {
    RuleSet::parse(&[], &[], &[condition.to_owned()], RuleOrigin::User)
        .map(|_| ())
        .map_err(|err| err.to_string())
}

/// The kind of a call and its permission keys, as the tools give them.
fn keys(tool: &str, args: &Value) -> (CallKind, Vec<String>) {
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    match tool {
        "run_command" => {
            (CallKind::Execute, vec![format!("shell:{}", text("command").unwrap_or_default())])
        }
        "read_file" => (CallKind::Read, vec![format!("read:{}", text("path").unwrap_or("."))]),
        "list_dir" | "glob" | "grep" => {
            (CallKind::Search, vec![format!("read:{}", text("path").unwrap_or("."))])
        }
        "write_file" | "edit" => {
            (CallKind::Edit, vec![format!("edit:{}", text("path").unwrap_or_default())])
        }
        "web_fetch" => (
            CallKind::Fetch,
            vec![format!("web_fetch:{}", host(text("url").unwrap_or_default()))],
        ),
        other => (CallKind::Other, vec![other.to_owned()]),
    }
}

/// The host of a URL, lower-cased, without user info or port.
fn host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let host = authority.split(':').next().unwrap_or_default();
    host.to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{applies, check};

    #[test]
    fn conditions_match_the_call_like_permission_rules() {
        let cwd = std::path::Path::new("/work");
        let git = json!({ "command": "git status" });
        assert!(applies("Bash(git *)", "run_command", &git, cwd));
        assert!(applies("run_command(git:*)", "run_command", &git, cwd));
        assert!(!applies("Bash(rm *)", "run_command", &git, cwd));
        // Any part of a compound command is enough.
        let compound = json!({ "command": "ls && rm -rf build" });
        assert!(applies("Bash(rm *)", "run_command", &compound, cwd));
        assert!(!applies("Bash(rm *)", "read_file", &json!({ "path": "rm x" }), cwd));
        assert!(applies("Edit(src/**)", "edit", &json!({ "path": "src/a.rs" }), cwd));
        assert!(!applies("Edit(src/**)", "edit", &json!({ "path": "docs/a.md" }), cwd));
        assert!(applies(
            "WebFetch(domain:docs.rs)",
            "web_fetch",
            &json!({ "url": "https://user@Docs.rs:443/x" }),
            cwd
        ));
        // A condition that does not parse fails open.
        assert!(applies("Bash(", "run_command", &git, cwd));
        assert!(check("Bash(").is_err());
        assert!(check("Bash(git *)").is_ok());
    }
}
