//! Unit tests of the shared snapshot: what its key covers, that processes taking it at once
//! run one login shell and all end with the same whole file, and the stale-file sweep.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use codecoder_sandbox::{Confinement, Environment};

use super::{
    MARKER, ShellSnapshot, SnapshotConfig, SnapshotStatus, key, merged_path, profile_stamp,
    remove_stale, render, reuse, write_private,
};

fn environment(home: &Path, extra: &[(&str, &str)]) -> Environment {
    let mut vars = vec![
        (OsString::from("HOME"), home.as_os_str().to_owned()),
        (OsString::from("PATH"), OsString::from("/usr/local/bin:/usr/bin:/bin")),
    ];
    vars.extend(extra.iter().map(|(n, v)| (OsString::from(n), OsString::from(v))));
    Environment::Exactly(Arc::from(vars))
}

fn config(home: &Path) -> SnapshotConfig {
    SnapshotConfig {
        dir: home.join("cchome/shell_snapshots"),
        shell: "bash".into(),
        cwd: home.to_owned(),
        environment: environment(home, &[]),
        confinement: Confinement::Unconfined,
        keep_name: Arc::new(|name: &OsStr| !name.to_string_lossy().contains("KEY")),
        keep_name_key: "policy-a".to_owned(),
        timeout: Duration::from_secs(10),
    }
}

fn key_now(config: &SnapshotConfig) -> String {
    key(config, &profile_stamp(&config.environment))
}

#[test]
fn the_key_changes_with_what_the_script_depends_on_and_only_that() {
    let home = tempfile::tempdir().unwrap();
    let base = config(home.path());
    let first = key_now(&base);
    assert_eq!(first.len(), 32);
    assert_eq!(key_now(&base), first, "stable");

    // The shell's own variables and the working directory are not part of it.
    let mut same = base.clone();
    same.environment = environment(home.path(), &[("PWD", "/elsewhere"), ("SHLVL", "3")]);
    same.cwd = "/".into();
    assert_eq!(key_now(&same), first);
    // Of a per-terminal variable, only whether it is set.
    let mut terminal = base.clone();
    terminal.environment = environment(home.path(), &[("SSH_AUTH_SOCK", "/tmp/agent.1")]);
    let with_agent = key_now(&terminal);
    assert_ne!(with_agent, first);
    terminal.environment = environment(home.path(), &[("SSH_AUTH_SOCK", "/tmp/agent.2")]);
    assert_eq!(key_now(&terminal), with_agent);

    let mut other = base.clone();
    other.environment = environment(home.path(), &[("LANG", "C.UTF-8")]);
    assert_ne!(key_now(&other), first, "the environment");
    let mut other = base.clone();
    other.keep_name_key = "policy-b".to_owned();
    assert_ne!(key_now(&other), first, "the name filter");
    let mut other = base.clone();
    other.shell = "/usr/local/bin/bash".into();
    assert_ne!(key_now(&other), first, "the shell");

    // A profile file appearing, changing size, or only its modification time.
    let profile = home.path().join(".bash_profile");
    fs_err::write(&profile, "export A=1\n").unwrap();
    let created = key_now(&base);
    assert_ne!(created, first);
    fs_err::write(&profile, "export A=22\n").unwrap();
    let file = fs_err::File::options().write(true).open(&profile).unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000)).unwrap();
    let resized = key_now(&base);
    assert_ne!(resized, created);
    fs_err::write(&profile, "export A=33\n").unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(2_000_000)).unwrap();
    assert_ne!(key_now(&base), resized, "same size, new mtime");
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000)).unwrap();
    // Same size and mtime but a new inode (an editor's write-and-rename).
    let replacement = home.path().join("replacement");
    fs_err::write(&replacement, "export A=44\n").unwrap();
    let other_file = fs_err::File::options().write(true).open(&replacement).unwrap();
    other_file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000)).unwrap();
    let before_rename = key_now(&base);
    fs_err::rename(&replacement, &profile).unwrap();
    assert_ne!(key_now(&base), before_rename, "new inode");
}

#[test]
fn takers_at_once_run_one_login_shell_and_share_one_whole_file() {
    let home = tempfile::tempdir().unwrap();
    let counter = home.path().join("sourced");
    fs_err::write(
        home.path().join(".bash_profile"),
        format!(
            "echo x >> '{}'\nsleep 0.2\nexport FROM_PROFILE=yes\nexport PROFILE_API_KEY=secret-7\n",
            counter.display()
        ),
    )
    .unwrap();
    let config = config(home.path());
    let takers: Vec<_> = (0..6)
        .map(|_| {
            let config = config.clone();
            std::thread::spawn(move || {
                let snapshot = ShellSnapshot::take_now(config);
                (snapshot.status(), snapshot.reused())
            })
        })
        .collect();
    let outcomes: Vec<_> = takers.into_iter().map(|t| t.join().unwrap()).collect();
    let SnapshotStatus::Ready(path) = outcomes[0].0.clone() else { panic!("{outcomes:?}") };
    assert!(outcomes.iter().all(|(status, _)| *status == SnapshotStatus::Ready(path.clone())));
    assert_eq!(outcomes.iter().filter(|(_, reused)| !reused).count(), 1, "{outcomes:?}");
    assert_eq!(fs_err::read_to_string(&counter).unwrap(), "x\n", "one login shell");
    let script = fs_err::read_to_string(&path).unwrap();
    assert!(script.contains("export FROM_PROFILE='yes'\n"), "{script}");
    assert!(!script.contains("secret-7"), "{script}");
    let names: Vec<_> =
        fs_err::read_dir(&config.dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, [path.file_name().unwrap()], "no temporary file left");
    let mode = |p: &Path| fs_err::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode(&path), mode(&config.dir)), (0o600, 0o700));

    // A later session finds it at start: ready at once, no login shell.
    let later = ShellSnapshot::start(config.clone());
    assert_eq!(later.status(), SnapshotStatus::Ready(path.clone()));
    assert!(later.reused());
    assert_eq!(later.script_for_command(), Some(path.clone()));
    // Gone from under it (removed by hand or as stale): taken again before the next command.
    fs_err::remove_file(&path).unwrap();
    assert_eq!(later.script_for_command(), Some(path.clone()));
    assert!(path.is_file());
    assert_eq!(fs_err::read_to_string(&counter).unwrap(), "x\nx\n");
}

#[test]
fn snapshots_nobody_used_for_three_days_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let old = SystemTime::now() - Duration::from_secs(4 * 24 * 3600);
    let make = |name: &str| {
        let path = dir.path().join(name);
        write_private(&path, b"# script\n").unwrap();
        fs_err::File::options().write(true).open(&path).unwrap().set_modified(old).unwrap();
        path
    };
    let (used, unused, temp, other) =
        (make("a.sh"), make("b.sh"), make("c.sh.123-0.tmp"), make("notes.txt"));
    let fresh = dir.path().join("d.sh");
    write_private(&fresh, b"# script\n").unwrap();
    assert!(reuse(&used));
    remove_stale(dir.path());
    assert!(used.exists() && fresh.exists() && other.exists());
    assert!(!unused.exists() && !temp.exists());
    // An empty file is no snapshot.
    let empty = dir.path().join("e.sh");
    fs_err::write(&empty, "").unwrap();
    assert!(!reuse(&empty));
}

#[test]
fn a_profile_that_resets_path_keeps_the_callers_directories_first() {
    assert_eq!(
        merged_path(b"/venv/bin:/usr/bin", b"/usr/bin:/bin:/opt/nvm/bin"),
        b"/venv/bin:/usr/bin:/bin:/opt/nvm/bin"
    );
    assert_eq!(merged_path(b"", b"/bin"), b"/bin");
    // A dump whose profile set PATH anew (Debian's /etc/profile does) and added one directory.
    let base = Environment::Exactly(Arc::from(vec![
        (OsString::from("PATH"), OsString::from("/ci/tools/bin:/usr/bin")),
        (OsString::from("HOME"), OsString::from("/home/u")),
    ]));
    let dump =
        format!("{MARKER}\nPATH=/usr/local/bin:/usr/bin:/bin\0HOME=/home/u\0{MARKER}\n{MARKER}\n");
    let script = String::from_utf8(render(dump.as_bytes(), &base, &|_| true).unwrap()).unwrap();
    assert!(
        script.contains("export PATH='/ci/tools/bin:/usr/bin:/usr/local/bin:/bin'"),
        "{script}"
    );
    // A profile that leaves PATH alone exports nothing for it.
    let dump = format!("{MARKER}\nPATH=/ci/tools/bin:/usr/bin\0HOME=/home/u\0{MARKER}\n{MARKER}\n");
    let script = String::from_utf8(render(dump.as_bytes(), &base, &|_| true).unwrap()).unwrap();
    assert!(!script.contains("PATH"), "{script}");
}
