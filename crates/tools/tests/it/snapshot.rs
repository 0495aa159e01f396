//! The shell snapshot: commands that source it behave like `bash -lc` (aliases, functions,
//! exported variables, PATH entries from the profile), in the foreground and as background jobs;
//! the snapshot outlives the session for the next one; a profile change is picked up; a profile
//! that fails or hangs leaves commands on `-lc`.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use codecoder_sandbox::{Confinement, Environment};
use codecoder_tools::{ShellSnapshot, SnapshotConfig, SnapshotStatus};
use serde_json::json;

use crate::support::*;

const BASHRC: &str = r#"shopt -s expand_aliases
alias greet='echo hello from alias'
myfunc() { echo "function ran with $1"; }
export MY_VAR="spaces and 'quotes'"
export MY_API_KEY=profile-secret
export PATH="$HOME/bin:$PATH"
"#;

/// A home whose `.bash_profile` sources `.bashrc`, with a program in `~/bin`.
fn home(bash_profile_extra: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let root = home.path();
    fs_err::write(
        root.join(".bash_profile"),
        format!("{bash_profile_extra}\n. \"$HOME/.bashrc\"\n"),
    )
    .unwrap();
    fs_err::write(root.join(".bashrc"), BASHRC).unwrap();
    fs_err::create_dir_all(root.join("bin")).unwrap();
    let tool = root.join("bin/mytool");
    fs_err::write(&tool, "#!/bin/sh\necho mytool on PATH\n").unwrap();
    fs_err::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    home
}

fn environment(home: &Path) -> Environment {
    let vars = vec![
        (OsString::from("HOME"), home.as_os_str().to_owned()),
        (OsString::from("PATH"), OsString::from("/usr/local/bin:/usr/bin:/bin")),
    ];
    Environment::Exactly(Arc::from(vars))
}

fn snapshot_config(home: &Path, timeout: Duration) -> SnapshotConfig {
    SnapshotConfig {
        dir: home.join("codecoder/shell_snapshots"),
        shell: "bash".into(),
        cwd: home.to_owned(),
        environment: environment(home),
        confinement: Confinement::Unconfined,
        keep_name: Arc::new(|name: &OsStr| !name.to_string_lossy().contains("KEY")),
        keep_name_key: "no KEY".to_owned(),
        timeout,
    }
}

fn fixture(home: &Path, snapshot: Option<Arc<ShellSnapshot>>) -> Fixture {
    Fixture::with(|config| {
        config.shell_args = vec!["-lc".to_owned()];
        config.environment = environment(home);
        config.snapshot = snapshot;
    })
}

const PROBE: &str = r#"greet; myfunc arg; echo "var=$MY_VAR"; mytool; echo "key=${MY_API_KEY-unset}"; echo "login=$(shopt -q login_shell && echo yes || echo no)""#;

/// The output without the `[exit code …]` line (durations differ).
fn body(out: &str) -> String {
    out.lines().filter(|line| !line.starts_with("[exit code")).collect::<Vec<_>>().join("\n")
}

#[test]
fn a_command_with_the_snapshot_sees_what_a_login_shell_sees() {
    let home = home("");
    let snapshot = ShellSnapshot::take_now(snapshot_config(home.path(), Duration::from_secs(10)));
    let SnapshotStatus::Ready(path) = snapshot.status() else { panic!("{:?}", snapshot.status()) };
    assert_eq!(path.parent(), Some(home.path().join("codecoder/shell_snapshots").as_path()));
    let mode = fs_err::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let script = fs_err::read_to_string(&path).unwrap();
    assert!(!script.contains("profile-secret"), "{script}");
    assert!(!script.contains("PWD="), "{script}");

    let login = body(&fixture(home.path(), None).ok("run_command", json!({ "command": PROBE })));
    let with_snapshot = fixture(home.path(), Some(Arc::clone(&snapshot)));
    let sourced = body(&with_snapshot.ok("run_command", json!({ "command": PROBE })));
    // The same set-up, except what the snapshot leaves out on purpose: the secret the profile
    // exports (the command environment policy applies to it) and being a login shell.
    assert_eq!(
        login,
        "hello from alias\nfunction ran with arg\nvar=spaces and 'quotes'\nmytool on PATH\n\
         key=profile-secret\nlogin=yes"
    );
    assert_eq!(
        sourced,
        "hello from alias\nfunction ran with arg\nvar=spaces and 'quotes'\nmytool on PATH\n\
         key=unset\nlogin=no"
    );

    // The user's command keeps its own semantics: `set -e`, exit status, quoting.
    let out = with_snapshot
        .call("run_command", json!({ "command": "set -e; false; echo not reached" }))
        .unwrap();
    assert!(out.is_error && !text(&out).contains("not reached"), "{}", text(&out));
    let out =
        with_snapshot.ok("run_command", json!({ "command": "printf '%s\\n' \"a'b\" 'c\"d'" }));
    assert!(out.starts_with("a'b\nc\"d\n"), "{out}");

    // A background job sources it too.
    let started = with_snapshot.ok("run_command", json!({ "command": PROBE, "background": true }));
    let job = job_id(&started);
    let mut seen = String::new();
    for _ in 0..200 {
        seen.push_str(&with_snapshot.ok("job_output", json!({ "id": job })));
        if seen.contains("login=no") {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(seen.contains("hello from alias") && seen.contains("mytool on PATH"), "{seen}");

    // The file outlives the session: the next one with the same profile uses it at once.
    drop(with_snapshot);
    drop(snapshot);
    assert!(exists(&path));
    let next = ShellSnapshot::start(snapshot_config(home.path(), Duration::from_secs(10)));
    assert_eq!(next.status(), SnapshotStatus::Ready(path.clone()));
    assert!(next.reused());
}

#[test]
fn an_rc_file_change_retakes_the_snapshot() {
    let home = home("");
    let snapshot = ShellSnapshot::take_now(snapshot_config(home.path(), Duration::from_secs(10)));
    let fixture = fixture(home.path(), Some(snapshot));
    assert!(fixture.ok("run_command", json!({ "command": "echo $MY_VAR" })).starts_with("spaces"));
    let rc = home.path().join(".bashrc");
    fs_err::write(&rc, BASHRC.replace("spaces and 'quotes'", "changed")).unwrap();
    // Make sure the modification time differs even on a coarse clock.
    let file = fs_err::File::options().write(true).open(&rc).unwrap();
    file.set_modified(std::time::SystemTime::now() + Duration::from_secs(5)).unwrap();
    let out = fixture.ok("run_command", json!({ "command": "echo $MY_VAR" }));
    assert!(out.starts_with("changed\n"), "{out}");
}

#[test]
fn a_failing_or_hanging_profile_leaves_commands_on_the_login_shell() {
    // `exit 1` unless `~/ready` exists: the snapshot fails, then commands run with `-lc`.
    let home_dir = home("[ -e \"$HOME/ready\" ] || exit 1");
    let snapshot =
        ShellSnapshot::take_now(snapshot_config(home_dir.path(), Duration::from_secs(10)));
    let SnapshotStatus::Failed(reason) = snapshot.status() else {
        panic!("{:?}", snapshot.status())
    };
    assert!(reason.contains("failed"), "{reason}");
    fs_err::write(home_dir.path().join("ready"), "").unwrap();
    let fallback = fixture(home_dir.path(), Some(snapshot));
    let out = fallback.ok("run_command", json!({ "command": PROBE }));
    assert!(out.contains("hello from alias") && out.contains("login=yes"), "{out}");
    // The person is told once.
    fallback.ok("run_command", json!({ "command": "true" }));
    let warnings = fallback.env.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("shell snapshot unavailable (the login shell failed"),
        "{warnings:?}"
    );

    // A profile that hangs past the timeout.
    let home_dir = home("[ -e \"$HOME/ready\" ] || sleep 30");
    let snapshot =
        ShellSnapshot::take_now(snapshot_config(home_dir.path(), Duration::from_millis(500)));
    let SnapshotStatus::Failed(reason) = snapshot.status() else {
        panic!("{:?}", snapshot.status())
    };
    assert!(reason.contains("longer"), "{reason}");
    // Commands then run without the profile (a login shell would hang them too), and say so.
    let hung = fixture(home_dir.path(), Some(snapshot));
    let out = hung.ok(
        "run_command",
        json!({ "command": "echo ran; shopt -q login_shell || echo not-login" }),
    );
    assert!(out.contains("ran\nnot-login"), "{out}");
    let warnings = hung.env.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("commands run with `bash -c`, without the profile"),
        "{warnings:?}"
    );

    // Not bash: no snapshot.
    let home_dir = home("");
    let mut config = snapshot_config(home_dir.path(), Duration::from_secs(10));
    config.shell = "sh".into();
    let snapshot = ShellSnapshot::take_now(config);
    assert!(matches!(snapshot.status(), SnapshotStatus::Failed(_)));
}

#[test]
fn a_snapshot_started_in_the_background_is_used_once_ready() {
    let home = home("");
    let snapshot = ShellSnapshot::start(snapshot_config(home.path(), Duration::from_secs(10)));
    let fixture = fixture(home.path(), Some(Arc::clone(&snapshot)));
    // Whether or not it is ready yet, the command sees the set-up.
    let out = fixture.ok("run_command", json!({ "command": "greet" }));
    assert!(out.starts_with("hello from alias\n"), "{out}");
    for _ in 0..400 {
        if snapshot.status() != SnapshotStatus::Pending {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(matches!(snapshot.status(), SnapshotStatus::Ready(_)), "{:?}", snapshot.status());
    let out = fixture
        .ok("run_command", json!({ "command": "greet; shopt -q login_shell || echo non-login" }));
    assert!(out.starts_with("hello from alias\nnon-login\n"), "{out}");
}
