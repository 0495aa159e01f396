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
