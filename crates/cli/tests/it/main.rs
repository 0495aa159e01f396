//! End-to-end tests of the `codecoder` binary: each runs the real executable against a
//! temporary `CODECODER_HOME`.
// Tests run the real binary (std::process::Command), use std::fs freely, and unwrap in helpers.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

mod acp;
mod agent_defs;
mod app_server;
mod app_server_ws;
mod claude_print;
mod claude_sdk;
mod codex_sdk;
mod command_env;
mod compact;
mod config;
mod exec;
mod guard;
mod hooks;
mod hooks_events;
mod hooks_handlers;
mod hooks_lifecycle;
mod hooks_trust;
mod llama_cpp;
mod local;
mod lock;
mod lsp;
mod many_sessions;
mod mcp;
mod mcp_add;
mod mcp_server;
mod mcp_wait;
mod models;
mod network;
mod plan;
mod plugins;
mod provider_fallback;
mod pty;
mod reasoning;
mod redact;
mod remote_tui;
mod replay;
mod safety;
mod sandbox_proxy;
mod serve;
mod serve_web;
mod sessions;
mod shell_snapshot;
mod skills;
mod text_tool_calls;
mod tui;
mod undo;

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

/// The npm prefix holding the pinned Node packages the tests drive (`.ci/run` installs them and
/// sets `CODECODER_TEST_NPM`). Without it a test fails under `CI=true` and is skipped elsewhere,
/// so that `cargo test` works on a machine without Node.
#[allow(clippy::print_stderr)]
pub(crate) fn npm_dir() -> Option<std::path::PathBuf> {
    use codecoder_protocol::env;
    match std::env::var_os(env::CODECODER_TEST_NPM) {
        Some(dir) => Some(dir.into()),
        None if std::env::var(env::CI).is_ok_and(|v| v == "true") => panic!(
            "{} is not set: .ci/run installs the pinned npm test packages and sets it",
            env::CODECODER_TEST_NPM
        ),
        None => {
            eprintln!("skipped: {} is not set", env::CODECODER_TEST_NPM);
            None
        }
    }
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

#[test]
fn the_mode_flags_take_the_shared_spellings_with_their_help() {
    let home = tempfile::tempdir().unwrap();
    let help = stdout(&codecoder(home.path(), &["--help"]));
    for line in [
        "- read-only:          Read anywhere (but hidden credential stores), write nowhere",
        "- workspace-write:    Write in the workspace, /tmp, $TMPDIR and --add-dir directories",
        "- danger-full-access: No sandbox",
        "- untrusted:  Only known-safe read-only commands run without asking",
        "- on-request: Ask for what is destructive, leaves the workspace or reaches the network",
        "- never:      Never ask",
    ] {
        assert!(help.contains(line), "{line}\n{help}");
    }
    let out = codecoder(home.path(), &["-s", "read-only", "-a", "untrusted", "doctor"]);
    assert!(
        stdout(&out).contains("sandbox read-only, approvals untrusted"),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let out = codecoder(home.path(), &["-a", "sometimes", "doctor"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("[possible values: untrusted, on-request, never]"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn apply_patch_from_an_argument_and_from_stdin() {
    use std::io::Write;
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+2\n*** Add File: b.txt\n+new\n*** End Patch\n";
    let out = Command::new(env!("CARGO_BIN_EXE_codecoder"))
        .args(["apply-patch", patch])
        .current_dir(dir.path())
        .env("CODECODER_HOME", home.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Success. Updated the following files:\nM a.txt\nA b.txt\n");
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "one\n2\n");

    let mut child = Command::new(env!("CARGO_BIN_EXE_codecoder"))
        .arg("apply-patch")
        .current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            b"*** Begin Patch\n*** Update File: a.txt\n@@\n-missing line\n+x\n*** End Patch\n",
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("a.txt"), "{}", stderr(&out));
    let out = codecoder(home.path(), &["apply-patch", "a", "b"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_missing_directory_or_a_broken_settings_file_is_a_usage_error() {
    let home = tempfile::tempdir().unwrap();
    let out = codecoder(home.path(), &["-C", "/nonexistent-codecoder-dir", "doctor"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("-C /nonexistent-codecoder-dir"), "{}", stderr(&out));

    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join(".claude")).unwrap();
    std::fs::write(project.path().join(".claude/settings.json"), "{bad").unwrap();
    let dir = project.path().to_str().unwrap();
    assert!(codecoder(home.path(), &["-C", dir, "trust"]).status.success());
    let out = codecoder(home.path(), &["-C", dir, "doctor"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("settings.json:1:2: invalid JSON"), "{}", stderr(&out));
}

#[test]
fn every_part_reports_the_same_version() {
    // `--version` and doctor (the app crate) name one version: the workspace's.
    let home = tempfile::tempdir().unwrap();
    let version = stdout(&codecoder(home.path(), &["--version"]));
    let version = version.trim().strip_prefix("codecoder ").unwrap().to_owned();
    let doctor = stdout(&codecoder(home.path(), &["doctor"]));
    assert!(doctor.contains(&format!("codecoder {version}")), "{doctor}");
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
}
