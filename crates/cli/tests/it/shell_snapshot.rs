//! The shell snapshot end to end: the real binary against the fake model server, in a HOME
//! whose profile defines an alias, a function, a variable and a PATH entry. Once the snapshot
//! is ready, commands run in a non-login shell that still sees all of them, under every sandbox
//! backend and with no sandbox; the snapshot holds no secret and is gone when the session ends;
//! `shell.snapshot = false` keeps the login shell.

use std::path::{Path, PathBuf};
use std::process::Command;

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::json;

use crate::stderr;

const PROFILE: &str = r#"shopt -s expand_aliases
alias greet='echo hello from alias'
myfunc() { echo "function ran"; }
export MY_VAR=from-profile
export PROFILE_API_KEY=profile-secret-91c2
export PATH="$HOME/bin:$PATH"
"#;

const PROBE: &str = r#"greet; myfunc; echo "var=$MY_VAR"; mytool; shopt -q login_shell && echo shell=login || echo shell=snapshot"#;

fn world() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (cchome, home, workspace) = (root.join("cchome"), root.join("home"), root.join("ws"));
    for dir in [&cchome, &home.join("bin"), &workspace] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(home.join(".bash_profile"), ". \"$HOME/.bashrc\"\n").unwrap();
    std::fs::write(home.join(".bashrc"), PROFILE).unwrap();
    let tool = home.join("bin/mytool");
    std::fs::write(&tool, "#!/bin/sh\necho mytool on PATH\n").unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, cchome, home, workspace)
}

/// Runs one exec task: wait for the snapshot file, then the probe; returns the probe's output
/// as the model saw it and what the snapshot file held while the session ran.
fn run(cchome: &Path, home: &Path, workspace: &Path, args: &[&str]) -> (String, String) {
    let wait = "for i in $(seq 100); do ls \"$CODECODER_HOME\"/shell_snapshots/*.sh >/dev/null 2>&1 && break; sleep 0.05; done; cat \"$CODECODER_HOME\"/shell_snapshots/*.sh";
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "run_command", json!({ "command": PROBE })))
            .reply(Reply::tool_call("c2", "run_command", json!({ "command": wait })))
            .reply(Reply::tool_call("c3", "run_command", json!({ "command": PROBE })))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_codecoder"))
        .args(args)
        .args(["exec", "probe the shell"])
        .current_dir(workspace)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home)
        .env("CODECODER_HOME", cchome)
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{args:?}");
    // The first command may run before the snapshot is ready: it sees the same set-up.
    let first = &requests[1].raw_body;
    assert!(first.contains("hello from alias") && first.contains("mytool on PATH"), "{first}");
    (requests[3].raw_body.clone(), requests[2].raw_body.clone())
}

#[test]
fn commands_source_the_snapshot_under_every_sandbox_mode() {
    let (_dir, cchome, home, workspace) = world();
    for mode in [
        &["-c", "sandbox.backend=\"bwrap\""][..],
        &["-c", "sandbox.backend=\"landlock\""],
        &["--yolo"],
    ] {
        let (probe, snapshot) = run(&cchome, &home, &workspace, mode);
        for expected in ["hello from alias", "function ran", "var=from-profile", "mytool on PATH"] {
            assert!(probe.contains(expected), "{mode:?}: {expected}: {probe}");
        }
        assert!(probe.contains("shell=snapshot"), "{mode:?}: {probe}");
        assert!(snapshot.contains("export MY_VAR='from-profile'"), "{mode:?}: {snapshot}");
        // A key the profile exports is withheld like the agent's own.
        assert!(!snapshot.contains("profile-secret-91c2"), "{mode:?}: {snapshot}");
        // The sandbox's markers are the spawner's, per command: not baked in.
        assert!(!snapshot.contains("CODECODER_SANDBOX"), "{mode:?}: {snapshot}");
        let left: Vec<_> = std::fs::read_dir(cchome.join("shell_snapshots"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        assert!(left.is_empty(), "{mode:?}: removed with the session: {left:?}");
    }
}

#[test]
fn the_snapshot_can_be_turned_off() {
    let (_dir, cchome, home, workspace) = world();
    let (probe, _) = run(&cchome, &home, &workspace, &["--yolo", "-c", "shell.snapshot=false"]);
    assert!(probe.contains("hello from alias") && probe.contains("shell=login"), "{probe}");
    assert!(!cchome.join("shell_snapshots").exists());
}

#[test]
fn doctor_says_how_commands_start() {
    let (_dir, cchome, home, workspace) = world();
    let doctor = |profile: &str, args: &[&str]| {
        std::fs::write(home.join(".bash_profile"), profile).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_codecoder"))
            .args(args)
            .arg("doctor")
            .current_dir(&workspace)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &home)
            .env("CODECODER_HOME", &cchome)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines().find(|line| line.starts_with("shell: ")).unwrap().to_owned()
    };
    let line = doctor(". \"$HOME/.bashrc\"\n", &[]);
    assert!(line.starts_with("shell: bash -c with a snapshot"), "{line}");
    let line = doctor("exit 1\n", &[]);
    assert!(line.starts_with("shell: bash -lc per command: the shell snapshot failed"), "{line}");
    let line = doctor("", &["-c", "shell.snapshot=false"]);
    assert_eq!(line, "shell: bash -lc per command (shell.snapshot = false)");
    let left = std::fs::read_dir(cchome.join("shell_snapshots")).unwrap().count();
    assert_eq!(left, 0, "doctor's snapshot is removed");
}
