//! Unit tests of the standalone command: argument and stdin modes, exit codes and outputs.

use std::path::Path;

use pretty_assertions::assert_eq;

use crate::run;

/// Runs the command in `cwd`; returns the exit code, stdout and stderr.
fn check(args: &[&str], stdin: &str, cwd: &Path) -> (i32, String, String) {
    let args: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run(&args, stdin.as_bytes(), cwd, &mut out, &mut err);
    (code, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

const ADD: &str = "*** Begin Patch\n*** Add File: a.txt\n+hello\n*** End Patch\n";

#[test]
fn patch_as_argument() {
    let dir = tempfile::tempdir().unwrap();
    let result = check(&[ADD], "ignored", dir.path());
    assert_eq!(
        result,
        (0, "Success. Updated the following files:\nA a.txt\n".to_owned(), String::new())
    );
    assert_eq!(fs_err::read_to_string(dir.path().join("a.txt")).unwrap(), "hello\n");
}

#[test]
fn patch_on_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let result = check(&[], ADD, dir.path());
    assert_eq!(
        result,
        (0, "Success. Updated the following files:\nA a.txt\n".to_owned(), String::new())
    );
}

#[test]
fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = check(&[ADD, ADD], "", dir.path());
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(
        err.starts_with("expected the patch as exactly one argument, got 2 arguments\nusage:"),
        "{err}"
    );
    let (code, out, err) = check(&[], " \n", dir.path());
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(err.starts_with("no patch given: stdin is empty\nusage:"), "{err}");
    assert!(!dir.path().join("a.txt").exists());
}

#[test]
fn failures_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(check(&[""], "", dir.path()), (1, String::new(), "empty patch\n".to_owned()));
    assert_eq!(
        check(&["*** Begin Patch\n*** Delete File: nope\n*** End Patch"], "", dir.path()),
        (1, String::new(), "cannot delete nope: no such file\n".to_owned())
    );
    let (code, out, err) = check(&[], "not a patch", dir.path());
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "invalid patch at line 1: the first line must be '*** Begin Patch', found 'not a patch'\n"
    );
}

#[test]
fn stdin_that_is_not_utf8_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run(&[], &b"\xff\xfe"[..], dir.path(), &mut out, &mut err);
    assert_eq!(code, 1);
    assert!(String::from_utf8(err).unwrap().starts_with("cannot read the patch from stdin"));
}
