//! Unit tests of the stage's argument encoding and Landlock grant computation.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use crate::policy::{FsAccess, Sockets};
use crate::stage::StageArgs;

fn sample() -> StageArgs {
    StageArgs {
        landlock: true,
        network: Sockets::UnixAndTcp,
        relay: Some(PathBuf::from("/run/proxy s.sock")),
        proxy_port: Some(3128),
        access: FsAccess::WorkspaceWrite,
        writable_roots: vec![PathBuf::from("/w s"), PathBuf::from("/tmp")],
        protected: vec![PathBuf::from("/w s/.git")],
        hidden: vec![PathBuf::from(OsString::from_vec(b"/home/\xffodd".to_vec()))],
        no_namespaces: true,
        tty: true,
        command: vec!["sh".into(), "-c".into(), "echo -- --write x".into()],
    }
}

#[test]
fn arguments_round_trip() {
    let args = sample();
    assert_eq!(StageArgs::parse(args.encode()), Ok(args));
    let plain = StageArgs {
        landlock: false,
        network: Sockets::Any,
        relay: None,
        proxy_port: None,
        no_namespaces: false,
        tty: false,
        ..sample()
    };
    assert_eq!(StageArgs::parse(plain.encode()), Ok(plain));
}

#[test]
fn bad_arguments_are_errors() {
    let parse = |args: &[&str]| StageArgs::parse(args.iter().map(OsString::from).collect());
    assert_eq!(parse(&["--mode", "landlock"]), Err("no `--` before the command".to_owned()));
    assert_eq!(
        parse(&["--mode", "x", "--", "true"]),
        Err("expected `landlock` or `seccomp`, got `x`".to_owned())
    );
    assert_eq!(parse(&["--bogus", "1", "--", "true"]), Err("unknown option `--bogus`".to_owned()));
    assert_eq!(parse(&["--write"]), Err("option `--write` needs a value".to_owned()));
    assert_eq!(parse(&["--"]), Err("no command after `--`".to_owned()));
}

#[cfg(target_os = "linux")]
#[test]
fn grants_go_around_excluded_trees() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("root");
    for dir in ["a/secret/inner", "a/open", "b"] {
        fs_err::create_dir_all(root.join(dir)).unwrap();
    }
    fs_err::write(root.join("a/file.txt"), "x").unwrap();
    std::os::unix::fs::symlink(root.join("a/secret"), root.join("link-to-secret")).unwrap();
    std::os::unix::fs::symlink(root.join("b"), root.join("link-to-b")).unwrap();
    let excluded = vec![root.join("a/secret")];
    let grants = crate::stage::grant_tree(&root, &excluded);
    assert_eq!(grants.split, vec![root.clone(), root.join("a")]);
    let mut grants = grants.whole;
    grants.sort();
    let expected: Vec<PathBuf> = ["a/file.txt", "a/open", "b", "link-to-b"]
        .iter()
        .map(|relative| root.join(relative))
        .collect();
    assert_eq!(grants, expected);
    // Nothing excluded inside: the root itself; the root excluded: nothing.
    assert_eq!(crate::stage::grant_tree(&root.join("b"), &excluded).whole, vec![root.join("b")]);
    assert_eq!(
        crate::stage::grant_tree(&root.join("a/secret/inner"), &excluded),
        crate::stage::Grants::default()
    );
}
