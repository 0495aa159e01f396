//! Unit tests of path resolution and the writable-roots check.

use std::path::{Path, PathBuf};

use codecoder_protocol::ToolError;

use crate::ToolsConfig;
use crate::path::{display, real_path, resolve, resolve_writable};

fn setup() -> (tempfile::TempDir, PathBuf, ToolsConfig) {
    let dir = tempfile::tempdir().unwrap();
    let root = fs_err::canonicalize(dir.path()).unwrap();
    let work = root.join("work");
    fs_err::create_dir_all(work.join("src")).unwrap();
    let config = ToolsConfig::standard(&work, vec![work.clone()]);
    (dir, root, config)
}

#[test]
fn relative_paths_resolve_against_the_cwd() {
    let cwd = Path::new("/a/b");
    assert_eq!(resolve(cwd, "c.txt").unwrap(), Path::new("/a/b/c.txt"));
    assert_eq!(resolve(cwd, "/etc/hosts").unwrap(), Path::new("/etc/hosts"));
    assert!(matches!(resolve(cwd, ""), Err(ToolError::InvalidArguments { .. })));
    assert!(matches!(resolve(cwd, "a\0b"), Err(ToolError::InvalidArguments { .. })));
    assert_eq!(display(cwd, Path::new("/a/b/c/d")), "c/d");
    assert_eq!(display(cwd, Path::new("/x")), "/x");
}

#[test]
fn writes_inside_the_roots_are_allowed_even_for_new_directories() {
    let (_dir, _root, config) = setup();
    let path = resolve_writable(&config, "src/new/deeper/file.rs").unwrap();
    assert_eq!(path, config.cwd.join("src/new/deeper/file.rs"));
    let path = resolve_writable(&config, "src/new/../other.rs").unwrap();
    assert_eq!(path, config.cwd.join("src/other.rs"));
}

#[test]
fn writes_outside_the_roots_are_refused_with_the_roots_named() {
    let (_dir, root, config) = setup();
    let err = resolve_writable(&config, "../outside.txt").unwrap_err();
    let ToolError::PermissionDenied { reason } = err else { panic!("{err:?}") };
    assert!(reason.contains("outside the writable roots"), "{reason}");
    assert!(reason.contains(&config.cwd.display().to_string()), "{reason}");
    assert!(resolve_writable(&config, root.join("x").to_str().unwrap()).is_err());
    assert!(resolve_writable(&config, "/etc/passwd").is_err());
}

#[test]
fn symlinks_are_resolved_before_the_check() {
    let (_dir, root, config) = setup();
    let outside = root.join("outside");
    fs_err::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, config.cwd.join("escape")).unwrap();
    let err = resolve_writable(&config, "escape/file.txt").unwrap_err();
    let ToolError::PermissionDenied { reason } = err else { panic!("{err:?}") };
    assert!(reason.contains("really"), "{reason}");
    // A symlink to a file inside the roots resolves to its target.
    fs_err::write(config.cwd.join("src/real.txt"), "x").unwrap();
    std::os::unix::fs::symlink(config.cwd.join("src/real.txt"), config.cwd.join("link.txt"))
        .unwrap();
    assert_eq!(resolve_writable(&config, "link.txt").unwrap(), config.cwd.join("src/real.txt"));
    // A dangling symlink cannot be checked.
    std::os::unix::fs::symlink(root.join("nowhere"), config.cwd.join("dangling")).unwrap();
    assert!(matches!(
        resolve_writable(&config, "dangling"),
        Err(ToolError::Failed { message }) if message.contains("does not exist")
    ));
}

#[test]
fn real_path_of_a_missing_path_keeps_the_missing_part() {
    let (_dir, root, _config) = setup();
    assert_eq!(real_path(&root.join("work/a/b/../c")).unwrap(), root.join("work/a/c"));
}

#[test]
fn writable_root_given_relative_or_through_a_symlink() {
    let (_dir, root, mut config) = setup();
    std::os::unix::fs::symlink(root.join("work"), root.join("alias")).unwrap();
    config.writable_roots = vec![root.join("alias")];
    assert!(resolve_writable(&config, "file.txt").is_ok());
    config.writable_roots = vec![PathBuf::from("src")];
    assert!(resolve_writable(&config, "src/file.txt").is_ok());
    assert!(resolve_writable(&config, "file.txt").is_err());
}

#[test]
fn a_symlink_into_a_protected_path_is_refused() {
    let (_dir, _root, config) = setup();
    let work = config.cwd.clone();
    fs_err::create_dir_all(work.join(".git/hooks")).unwrap();
    std::os::unix::fs::symlink(work.join(".git/hooks"), work.join("src/hooks")).unwrap();
    std::os::unix::fs::symlink(work.join(".git"), work.join("innocent")).unwrap();
    for raw in ["src/hooks/pre-commit", "innocent/config"] {
        let err = resolve_writable(&config, raw).unwrap_err();
        let ToolError::PermissionDenied { reason } = err else { panic!("{raw}: {err:?}") };
        assert!(reason.contains("leads through a symlink to a protected path"), "{reason}");
        assert!(reason.contains("`.git` inside the writable root"), "{reason}");
    }
    // The path as written is the chain's to decide (it asks): the tool writes it when approved.
    assert_eq!(
        resolve_writable(&config, ".git/hooks/pre-commit").unwrap(),
        work.join(".git/hooks/pre-commit")
    );
    // Without the guard (bypass) the symlink is followed as before.
    let mut off = config.clone();
    off.protected_paths = None;
    assert_eq!(
        resolve_writable(&off, "src/hooks/pre-commit").unwrap(),
        work.join(".git/hooks/pre-commit")
    );
}

#[test]
fn dot_dot_after_a_symlink_is_refused_when_the_readings_differ() {
    let (_dir, root, config) = setup();
    let work = config.cwd.clone();
    fs_err::create_dir_all(work.join("deep/er")).unwrap();
    std::os::unix::fs::symlink(work.join("deep/er"), work.join("src/link")).unwrap();
    // The OS reads `src/link/../x` as `deep/x`; the lexical reading is `src/x`.
    let err = resolve_writable(&config, "src/link/../x").unwrap_err();
    assert!(matches!(err, ToolError::PermissionDenied { .. }), "{err:?}");
    // Without a symlink before it, `..` is fine.
    assert_eq!(resolve_writable(&config, "deep/er/../x").unwrap(), work.join("deep/x"));
    let _ = root;
}
