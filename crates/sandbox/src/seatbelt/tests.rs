//! Unit tests of the generated Seatbelt profile text.

use std::path::PathBuf;

use crate::{FsAccess, SandboxPolicy, seatbelt_profile};

fn policy(access: FsAccess, network: bool) -> SandboxPolicy {
    SandboxPolicy {
        access,
        writable_roots: vec![PathBuf::from("/nonexistent-ws"), PathBuf::from("/nonexistent-tmp")],
        network,
        network_proxy: None,
        protected_paths: Vec::new(),
        hidden_paths: vec![
            PathBuf::from("/nonexistent-home/.ssh"),
            PathBuf::from("/nonexistent-home/.netrc"),
        ],
    }
}

#[test]
fn denies_by_default_and_reads_everything_but_hidden_paths() {
    let profile = seatbelt_profile(&policy(FsAccess::WorkspaceWrite, false));
    assert!(profile.starts_with("(version 1)\n(deny default)\n"), "{profile}");
    let read = "(allow file-read*\n  (require-all\n    (subpath \"/\")\n    \
                (require-not (subpath \"/nonexistent-home/.netrc\"))\n    \
                (require-not (subpath \"/nonexistent-home/.ssh\"))))\n";
    assert!(profile.contains(read), "{profile}");
}

#[test]
fn writes_only_the_roots_minus_protected_subpaths() {
    let profile = seatbelt_profile(&policy(FsAccess::WorkspaceWrite, false));
    let ws = "(allow file-write*\n  (require-all\n    (subpath \"/nonexistent-ws\")\n    \
              (require-not (subpath \"/nonexistent-ws/.agents\"))\n    \
              (require-not (subpath \"/nonexistent-ws/.claude/settings.json\"))\n    \
              (require-not (subpath \"/nonexistent-ws/.claude/settings.local.json\"))\n    \
              (require-not (subpath \"/nonexistent-ws/.codecoder\"))\n    \
              (require-not (subpath \"/nonexistent-ws/.git\"))\n    \
              (require-not (subpath \"/nonexistent-ws/.mcp.json\"))))\n";
    assert!(profile.contains(ws), "{profile}");
    assert!(profile.contains("(subpath \"/nonexistent-tmp\")"), "{profile}");
    assert_eq!(profile.matches("(allow file-write*").count(), 2, "{profile}");
    assert!(!profile.contains("(subpath \"/\")\n    (require-not (subpath \"/nonexistent-ws"));
}

#[test]
fn read_only_writes_nothing_but_devices() {
    let profile = seatbelt_profile(&policy(FsAccess::ReadOnly, false));
    assert!(!profile.contains("(allow file-write*"), "{profile}");
    assert!(profile.contains("(allow file-write-data\n  (literal \"/dev/null\")"), "{profile}");
}

#[test]
fn full_access_writes_everywhere_but_hidden_paths() {
    let profile = seatbelt_profile(&policy(FsAccess::FullAccess, true));
    let write = "(allow file-write*\n  (require-all\n    (subpath \"/\")\n    \
                 (require-not (subpath \"/nonexistent-home/.netrc\"))\n    \
                 (require-not (subpath \"/nonexistent-home/.ssh\"))))\n";
    assert!(profile.contains(write), "{profile}");
}

#[test]
fn network_only_when_allowed() {
    let off = seatbelt_profile(&policy(FsAccess::WorkspaceWrite, false));
    assert!(!off.contains("(allow network-outbound)"), "{off}");
    assert!(!off.contains("(allow network-inbound)"), "{off}");
    assert!(off.contains("(allow network-outbound (remote unix-socket))"), "{off}");
    let on = seatbelt_profile(&policy(FsAccess::WorkspaceWrite, true));
    assert!(on.contains("(allow network-outbound)\n(allow network-inbound)\n"), "{on}");
}

#[test]
fn paths_are_escaped() {
    let mut policy = policy(FsAccess::ReadOnly, false);
    policy.hidden_paths = vec![PathBuf::from("/x/we\"ird\\name")];
    let profile = seatbelt_profile(&policy);
    assert!(profile.contains("(require-not (subpath \"/x/we\\\"ird\\\\name\"))"), "{profile}");
}
