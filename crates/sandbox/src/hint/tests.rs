//! Unit tests of `denial_hint`.

use std::path::PathBuf;

use crate::{FsAccess, SandboxPolicy, denial_hint};

fn policy(network: bool) -> SandboxPolicy {
    SandboxPolicy {
        access: FsAccess::WorkspaceWrite,
        writable_roots: vec![PathBuf::from("/work/ws"), PathBuf::from("/tmp")],
        network,
        network_proxy: None,
        protected_paths: Vec::new(),
        hidden_paths: vec![PathBuf::from("/home/me/.ssh"), PathBuf::from("/home/me/.netrc")],
    }
}

fn check(output: &str, expected: Option<&str>) {
    assert_eq!(denial_hint(Some(1), output, &policy(false)).as_deref(), expected, "{output}");
}

#[test]
fn writes_outside_the_roots() {
    let expected = Some("writing /etc/foo was blocked by the sandbox (outside the writable roots)");
    check("sh: 1: cannot create /etc/foo: Read-only file system", expected);
    check("touch: cannot touch '/etc/foo': Permission denied", expected);
    check("bash: /etc/foo: Operation not permitted", expected);
}

#[test]
fn writes_into_protected_subpaths() {
    check(
        "sh: 1: cannot create /work/ws/.git/hooks/pre-commit: Read-only file system",
        Some(
            "writing /work/ws/.git/hooks/pre-commit was blocked by the sandbox (it is protected: \
             `.git` inside the writable root /work/ws (files there run code later))",
        ),
    );
    // A workspace under another root (`/tmp`): its own names are protected, and new ones too.
    check(
        "touch: cannot touch '/tmp/ws/.mcp.json': Permission denied",
        Some(
            "writing /tmp/ws/.mcp.json was blocked by the sandbox (it is protected: \
             `ws/.mcp.json` inside the writable root /tmp (the MCP servers it names are started \
             later))",
        ),
    );
}

#[test]
fn reads_of_hidden_paths() {
    check(
        "cat: /home/me/.ssh/id_ed25519: Permission denied",
        Some(
            "reading /home/me/.ssh/id_ed25519 was blocked by the sandbox (a hidden credential store)",
        ),
    );
}

#[test]
fn ordinary_permission_problems_inside_the_roots_get_no_hint() {
    check("cat: /work/ws/locked.txt: Permission denied", None);
    check("error: something unrelated failed", None);
}

#[test]
fn network_failures_only_when_the_network_is_off() {
    let expected = Some("network access was blocked by the sandbox (the network is off)");
    check("curl: (6) Could not resolve host: example.com", expected);
    check("ping: connect: Network is unreachable", expected);
    check("fatal: unable to access: Temporary failure in name resolution", expected);
    check("PermissionError: [Errno 1] Operation not permitted (socket)", expected);
    let on = denial_hint(Some(6), "curl: (6) Could not resolve host: example.com", &policy(true));
    assert_eq!(on, None);
}

#[test]
fn a_proxied_network_hint_names_the_proxy() {
    let proxied = SandboxPolicy {
        network_proxy: Some(crate::NetworkProxy { socket: "/run/proxy.sock".into(), tcp: None }),
        ..policy(false)
    };
    let hint = denial_hint(Some(6), "curl: (6) Could not resolve host: example.com", &proxied);
    let hint = hint.unwrap();
    assert!(hint.starts_with("network access was blocked by the sandbox (only the managed proxy"));
    assert!(hint.contains("HTTP_PROXY"), "{hint}");
}

#[test]
fn success_never_gets_a_hint() {
    assert_eq!(
        denial_hint(
            Some(0),
            "touch: cannot touch '/etc/foo': Read-only file system",
            &policy(false)
        ),
        None
    );
    // Killed by a signal (no exit code) still counts as a failure.
    assert!(
        denial_hint(None, "cannot create /etc/x: Read-only file system", &policy(false)).is_some()
    );
}

#[test]
fn read_only_policy_blocks_every_write() {
    let mut policy = policy(false);
    policy.access = FsAccess::ReadOnly;
    assert_eq!(
        denial_hint(Some(2), "sh: 1: cannot create /work/ws/a.txt: Read-only file system", &policy)
            .as_deref(),
        Some("writing /work/ws/a.txt was blocked by the sandbox (outside the writable roots)")
    );
}
