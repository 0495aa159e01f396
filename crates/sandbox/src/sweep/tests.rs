//! Unit tests for the sweep: what appears at an absent protected name is removed and reported,
//! what existed at the start is never touched, and only workspace-write sweeps.

use std::path::PathBuf;

use super::{Sweep, report};
use crate::policy::{FsAccess, SandboxPolicy};

fn policy(access: FsAccess, root: &std::path::Path) -> SandboxPolicy {
    SandboxPolicy {
        access,
        writable_roots: vec![root.to_path_buf()],
        network: false,
        network_proxy: None,
        hidden_paths: Vec::new(),
        protected_paths: Vec::new(),
    }
}

#[test]
fn what_the_command_created_at_an_absent_name_is_removed_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let root = fs_err::canonicalize(dir.path()).unwrap();
    fs_err::create_dir_all(root.join(".claude")).unwrap();
    fs_err::write(root.join(".claude/settings.json"), "{}").unwrap();
    fs_err::write(root.join(".mcp.json"), "{}").unwrap();
    let policy = policy(FsAccess::WorkspaceWrite, &root);
    let sweep = Sweep::before(&policy).unwrap();
    // What a command does in the meantime.
    fs_err::create_dir_all(root.join(".git/hooks")).unwrap();
    fs_err::write(root.join(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    std::os::unix::fs::symlink("/etc", root.join(".codecoder")).unwrap();
    fs_err::write(root.join(".claude/settings.local.json"), "{}").unwrap();
    fs_err::write(root.join(".claude/settings.json"), "{\"changed\":1}").unwrap();
    fs_err::write(root.join(".mcp.json"), "{\"changed\":1}").unwrap();
    fs_err::write(root.join("README"), "ok").unwrap();
    let swept = sweep.after(&policy);
    let mut paths: Vec<PathBuf> = swept.iter().map(|s| s.path.clone()).collect();
    paths.sort();
    assert_eq!(
        paths,
        vec![root.join(".claude/settings.local.json"), root.join(".codecoder"), root.join(".git"),]
    );
    assert!(swept.iter().all(|s| s.failed.is_none()), "{swept:?}");
    for gone in [".git", ".codecoder", ".claude/settings.local.json"] {
        assert!(fs_err::symlink_metadata(root.join(gone)).is_err(), "{gone} is still there");
    }
    // The link went, not what it pointed to; what existed before stays as the command left it.
    assert!(std::path::Path::new("/etc/passwd").exists());
    assert_eq!(fs_err::read_to_string(root.join(".mcp.json")).unwrap(), "{\"changed\":1}");
    assert_eq!(fs_err::read_to_string(root.join("README")).unwrap(), "ok");
    let text = report(&swept);
    assert!(text.contains(&format!("removed `{}`", root.join(".git").display())), "{text}");
    assert!(text.contains("files there run code later"), "{text}");
    assert_eq!(text.lines().count(), 3, "{text}");
    // A second sweep finds nothing.
    assert_eq!(sweep.after(&policy), Vec::new());
}

#[test]
fn a_claude_directory_created_whole_loses_only_its_settings() {
    let dir = tempfile::tempdir().unwrap();
    let root = fs_err::canonicalize(dir.path()).unwrap();
    let policy = policy(FsAccess::WorkspaceWrite, &root);
    let sweep = Sweep::before(&policy).unwrap();
    fs_err::create_dir_all(root.join(".claude/commands")).unwrap();
    fs_err::write(root.join(".claude/settings.json"), "{}").unwrap();
    fs_err::write(root.join(".claude/commands/x.md"), "x").unwrap();
    let swept = sweep.after(&policy);
    assert_eq!(swept.len(), 1, "{swept:?}");
    assert_eq!(swept[0].path, root.join(".claude/settings.json"));
    assert!(swept[0].rule.contains("Claude Code settings"), "{}", swept[0].rule);
    assert!(root.join(".claude/commands/x.md").exists());
}

#[test]
fn only_workspace_write_sweeps() {
    let dir = tempfile::tempdir().unwrap();
    for access in [FsAccess::ReadOnly, FsAccess::FullAccess] {
        assert_eq!(Sweep::before(&policy(access, dir.path())), None);
    }
}
