//! Unit tests of the runtime's host services.

#[test]
fn init_writes_a_starter_agents_md_once() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(dir.path().join("Cargo.toml"), "[workspace]\n").unwrap();
    let message = crate::init_agents_md(dir.path()).unwrap();
    assert!(message.starts_with("wrote "), "{message}");
    let text = fs_err::read_to_string(dir.path().join("AGENTS.md")).unwrap();
    assert!(text.contains("`cargo test`"), "{text}");
    fs_err::write(dir.path().join("AGENTS.md"), "mine").unwrap();
    let message = crate::init_agents_md(dir.path()).unwrap();
    assert!(message.contains("already exists"), "{message}");
    assert_eq!(
        fs_err::read_to_string(dir.path().join("AGENTS.md")).unwrap(),
        "mine",
        "never overwritten"
    );
}

#[test]
fn allowed_tools_entries_cover_calls_by_our_name_or_claudes_and_by_command_prefix() {
    use codecoder_protocol::{ToolCall, ToolCallId};
    let call = |name: &str, args: serde_json::Value| ToolCall {
        id: ToolCallId::new("c"),
        name: name.to_owned(),
        args,
    };
    let git_add = call("run_command", serde_json::json!({ "command": "git add src" }));
    let git_push = call("run_command", serde_json::json!({ "command": "git push" }));
    let git_addx = call("run_command", serde_json::json!({ "command": "git addx" }));
    let read = call("read_file", serde_json::json!({ "path": "a" }));
    let covers = crate::skills::covers;
    assert!(covers("Bash(git add:*)", &git_add));
    assert!(!covers("Bash(git add:*)", &git_push));
    assert!(!covers("Bash(git add:*)", &git_addx));
    assert!(covers("Bash", &git_push));
    assert!(covers("run_command(git add*)", &git_add));
    assert!(covers("Read", &read) && covers("read_file", &read));
    assert!(!covers("Write", &read));
}
