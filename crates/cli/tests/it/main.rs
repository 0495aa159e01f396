//! End-to-end tests of the `codecoder` binary: each runs the real executable against a
//! temporary `CODECODER_HOME`.
// Tests run the real binary (std::process::Command), use std::fs freely, and unwrap in helpers.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

mod sessions;

use std::path::Path;
use std::process::{Command, Output};

/// Runs `codecoder ARGS` with `home` as `CODECODER_HOME` and no `HOME`.
pub(crate) fn codecoder(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codecoder"))
        .args(args)
        .env_clear()
        .env("CODECODER_HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .expect("run codecoder")
}

pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn version_and_help() {
    let home = tempfile::tempdir().unwrap();
    let out = codecoder(home.path(), &["--version"]);
    assert!(out.status.success());
    assert_eq!(stdout(&out).trim(), format!("codecoder {}", env!("CARGO_PKG_VERSION")));
    let out = codecoder(home.path(), &["--help"]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("sessions"), "{}", stdout(&out));
    let out = codecoder(home.path(), &["sessions", "nonsense"]);
    assert_eq!(out.status.code(), Some(2), "usage errors exit 2");
}
