//! Conditions matched as the policy matches rules: by what the call is about (its kind and
//! permission keys, from the describer a session gives the runner), failing open when a
//! condition does not parse or calls cannot be described.

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
