//! The shell snapshot end to end: the real binary against the fake model server, in a HOME
//! whose profile defines an alias, a function, a variable and a PATH entry. Once the snapshot
//! is ready, commands run in a non-login shell that still sees all of them, under every sandbox
//! backend and with no sandbox; the snapshot holds no secret and outlives the session, shared:
//! the next session with the same profile runs its first command from it with no login shell,
//! and a touched profile makes a new one; `shell.snapshot = false` keeps the login shell.

use std::os::unix::fs::PermissionsExt as _;
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
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, cchome, home, workspace)
}

/// Runs one exec task: wait for `snapshots` snapshot files, then the probe; returns the probe's
/// output as the model saw it and what the snapshot files held while the session ran.
fn run(
    cchome: &Path,
    home: &Path,
    workspace: &Path,
    args: &[&str],
    snapshots: usize,
) -> (String, String) {
    let wait = format!(
        "for i in $(seq 100); do [ \"$(ls \"$CODECODER_HOME\"/shell_snapshots/*.sh 2>/dev/null | wc -l)\" -ge {snapshots} ] && break; sleep 0.05; done; cat \"$CODECODER_HOME\"/shell_snapshots/*.sh"
    );
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
    for (done, mode) in [
        &["-c", "sandbox.backend=\"bwrap\""][..],
        &["-c", "sandbox.backend=\"landlock\""],
        &["--yolo"],
    ]
    .into_iter()
    .enumerate()
    {
        let (probe, snapshot) = run(&cchome, &home, &workspace, mode, done + 1);
        for expected in ["hello from alias", "function ran", "var=from-profile", "mytool on PATH"] {
            assert!(probe.contains(expected), "{mode:?}: {expected}: {probe}");
        }
        assert!(probe.contains("shell=snapshot"), "{mode:?}: {probe}");
        assert!(snapshot.contains("export MY_VAR='from-profile'"), "{mode:?}: {snapshot}");
        // A key the profile exports is withheld like the agent's own.
        assert!(!snapshot.contains("profile-secret-91c2"), "{mode:?}: {snapshot}");
        // The sandbox's markers are the spawner's, per command: not baked in.
        assert!(!snapshot.contains("CODECODER_SANDBOX"), "{mode:?}: {snapshot}");
        // It stays for the next session; each confinement has its own.
        let left = snapshots(&cchome);
        assert_eq!(left.len(), done + 1, "{mode:?}: {left:?}");
        for path in &left {
            let mode_bits = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode_bits, 0o600, "{}", path.display());
        }
    }
}

/// The files in the snapshot directory (no temporary file is ever left there).
fn snapshots(cchome: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(cchome.join("shell_snapshots"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    for path in &paths {
        assert_eq!(path.extension().unwrap(), "sh", "{}", path.display());
    }
    paths
}

/// Runs one exec task whose one command is `command`, against `server` (one for every session
/// of a test: its URL is in the command environment, which keys the snapshot); returns that
/// command's output as the model saw it.
fn exec_once(server: &FakeModelServer, cchome: &Path, home: &Path, workspace: &Path) -> String {
    let before = server.requests().len();
    let out = Command::new(env!("CARGO_BIN_EXE_codecoder"))
        .args(["--yolo", "exec", "probe the shell"])
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
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), before + 2);
    requests[before + 1].raw_body.clone()
}

#[test]
fn a_second_session_with_the_same_profile_runs_no_login_shell() {
    let (_dir, cchome, home, workspace) = world();
    // The profile counts the times it is sourced.
    std::fs::write(
        home.join(".bash_profile"),
        "echo sourced >> \"$HOME/sourced\"\n. \"$HOME/.bashrc\"\n",
    )
    .unwrap();
    let sourced = || std::fs::read_to_string(home.join("sourced")).unwrap().lines().count();
    let mut script = Script::new();
    for session in 0..4 {
        script = script
            .reply(Reply::tool_call(
                format!("c{session}"),
                "run_command",
                json!({ "command": PROBE }),
            ))
            .reply(Reply::text("done"));
    }
    let server = FakeModelServer::start(script).unwrap();

    let first = exec_once(&server, &cchome, &home, &workspace);
    assert!(first.contains("hello from alias"), "{first}");
    let after_first = sourced();
    assert!(after_first >= 1, "the first session takes the snapshot");
    assert_eq!(snapshots(&cchome).len(), 1);

    // Same profile: the first command already runs from the shared snapshot, and no login shell
    // runs at all.
    let second = exec_once(&server, &cchome, &home, &workspace);
    assert!(second.contains("hello from alias") && second.contains("shell=snapshot"), "{second}");
    assert_eq!(sourced(), after_first, "no login shell in the second session");
    assert_eq!(snapshots(&cchome).len(), 1);

    // A touched profile file: a new snapshot, taken by a login shell, beside the old one.
    let file = std::fs::File::options().write(true).open(home.join(".bashrc")).unwrap();
    file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5)).unwrap();
    let third = exec_once(&server, &cchome, &home, &workspace);
    assert!(third.contains("hello from alias"), "{third}");
    assert!(sourced() > after_first, "the changed profile was sourced again");
    assert_eq!(snapshots(&cchome).len(), 2);
    // And the session after it reuses that one.
    let after_third = sourced();
    let fourth = exec_once(&server, &cchome, &home, &workspace);
    assert!(fourth.contains("shell=snapshot"), "{fourth}");
    assert_eq!(sourced(), after_third);
}

#[test]
fn the_snapshot_can_be_turned_off() {
    let (_dir, cchome, home, workspace) = world();
    let (probe, _) = run(&cchome, &home, &workspace, &["--yolo", "-c", "shell.snapshot=false"], 0);
    assert!(probe.contains("hello from alias") && probe.contains("shell=login"), "{probe}");
    assert!(!cchome.join("shell_snapshots").exists());
}

#[test]
fn doctor_says_how_commands_start() {
    let (_dir, cchome, home, workspace) = world();
    let doctor = |profile: Option<&str>, args: &[&str]| {
        if let Some(profile) = profile {
            std::fs::write(home.join(".bash_profile"), profile).unwrap();
        }
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
    let line = doctor(Some(". \"$HOME/.bashrc\"\n"), &[]);
    assert!(line.starts_with("shell: bash -c with a snapshot"), "{line}");
    assert!(line.contains("(taken in"), "{line}");
    // Doctor's snapshot is the one sessions share: the next look finds it.
    let snapshot = snapshots(&cchome);
    assert_eq!(snapshot.len(), 1);
    let line = doctor(None, &[]);
    assert_eq!(
        line,
        format!(
            "shell: bash -c with a snapshot of the login shell's set-up (shared, reused: {})",
            snapshot[0].display()
        )
    );
    let line = doctor(Some("exit 1\n"), &[]);
    assert!(line.starts_with("shell: bash -lc per command: the shell snapshot failed"), "{line}");
    let line = doctor(Some(""), &["-c", "shell.snapshot=false"]);
    assert_eq!(line, "shell: bash -lc per command (shell.snapshot = false)");
}
