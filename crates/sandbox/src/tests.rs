//! Unit tests of process spawning, output streaming and group termination.

use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, bounded};

use crate::{CommandSpec, Outcome, SpawnConfig, Stream, live_group_members, spawn};

fn no_cancel() -> (crossbeam_channel::Sender<()>, Receiver<()>) {
    bounded(1)
}

#[test]
fn streams_output_and_exit_status() {
    let spec = CommandSpec::new("sh", ["-c", "echo out; echo err >&2; exit 3"]);
    let mut child = spawn(&spec, &SpawnConfig::standard()).unwrap();
    let (_keep, cancel) = no_cancel();
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let outcome = child
        .wait(&cancel, &mut |chunk| match chunk.stream {
            Stream::Stdout => stdout.extend_from_slice(&chunk.bytes),
            Stream::Stderr => stderr.extend_from_slice(&chunk.bytes),
        })
        .unwrap();
    match outcome {
        Outcome::Exited(status) => assert_eq!(status.code(), Some(3)),
        Outcome::Cancelled => panic!("not cancelled"),
    }
    assert_eq!(stdout, b"out\n");
    assert_eq!(stderr, b"err\n");
}

#[test]
fn cancel_kills_the_whole_group() {
    // A shell with a background grandchild: both are in the group.
    let spec = CommandSpec::new("sh", ["-c", "sleep 100 & sleep 100; wait"]);
    let mut child = spawn(&spec, &SpawnConfig::standard()).unwrap();
    let pgid = child.pid();
    let (cancel_tx, cancel) = no_cancel();
    cancel_tx.send(()).unwrap();
    let started = Instant::now();
    let outcome = child.wait(&cancel, &mut |_| {}).unwrap();
    assert_eq!(outcome, Outcome::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
    drop(child);
    assert_eq!(live_group_members(pgid), Vec::<u32>::new());
}

#[test]
fn sigterm_ignored_then_sigkill_after_grace() {
    let spec =
        CommandSpec::new("sh", ["-c", "trap '' TERM; echo ready; while :; do sleep 1; done"]);
    let config = SpawnConfig { kill_grace: Duration::from_millis(200), ..SpawnConfig::standard() };
    let mut child = spawn(&spec, &config).unwrap();
    let pgid = child.pid();
    let (cancel_tx, cancel) = no_cancel();
    // Wait until the trap is installed: the shell prints after it.
    let outcome = child
        .wait(&cancel, &mut |chunk| {
            if chunk.bytes.starts_with(b"ready") {
                let _ = cancel_tx.try_send(());
            }
        })
        .unwrap();
    assert_eq!(outcome, Outcome::Cancelled);
    drop(child);
    assert_eq!(live_group_members(pgid), Vec::<u32>::new());
}

#[test]
fn background_process_does_not_outlive_its_command() {
    let spec = CommandSpec::new("sh", ["-c", "sleep 100 & echo done"]);
    let mut child = spawn(&spec, &SpawnConfig::standard()).unwrap();
    let pgid = child.pid();
    let (_keep, cancel) = no_cancel();
    let mut out = Vec::new();
    let outcome = child.wait(&cancel, &mut |chunk| out.extend_from_slice(&chunk.bytes)).unwrap();
    assert!(matches!(outcome, Outcome::Exited(status) if status.success()));
    assert_eq!(out, b"done\n");
    assert_eq!(live_group_members(pgid), Vec::<u32>::new());
}

#[test]
fn dropping_a_running_child_kills_it() {
    let spec = CommandSpec::new("sleep", ["100"]);
    let child = spawn(&spec, &SpawnConfig::standard()).unwrap();
    let pgid = child.pid();
    assert_eq!(live_group_members(pgid), vec![pgid]);
    drop(child);
    assert_eq!(live_group_members(pgid), Vec::<u32>::new());
}

#[test]
fn missing_program_is_an_error() {
    let spec = CommandSpec::new("/nonexistent/codecoder-test", Vec::<String>::new());
    let err = spawn(&spec, &SpawnConfig::standard()).unwrap_err();
    assert!(err.to_string().contains("could not start"), "{err}");
}

#[test]
fn stdin_bytes_reach_the_child_and_are_closed() {
    let mut spec = CommandSpec::new("sh", ["-c", "wc -c; cat >/dev/null; echo done"]);
    // More than a pipe buffer, so the writer thread must keep up with the reader.
    spec.stdin = Some(vec![b'x'; 200_000]);
    let mut child = spawn(&spec, &SpawnConfig::standard()).unwrap();
    let (_keep, cancel) = no_cancel();
    let mut stdout = Vec::new();
    let outcome = child.wait(&cancel, &mut |chunk| stdout.extend_from_slice(&chunk.bytes)).unwrap();
    assert!(matches!(outcome, Outcome::Exited(status) if status.success()));
    assert_eq!(
        String::from_utf8(stdout).unwrap().split_whitespace().collect::<Vec<_>>(),
        ["200000", "done"]
    );
}

#[test]
fn a_child_that_ignores_its_stdin_does_not_hang_the_writer() {
    let mut spec = CommandSpec::new("true", Vec::<String>::new());
    spec.stdin = Some(vec![b'x'; 1 << 20]);
    let mut child = spawn(&spec, &SpawnConfig::standard()).unwrap();
    let (_keep, cancel) = no_cancel();
    let outcome = child.wait(&cancel, &mut |_| {}).unwrap();
    assert!(matches!(outcome, Outcome::Exited(status) if status.success()));
}

#[test]
fn an_exact_environment_replaces_the_inherited_one() {
    let base: Vec<(std::ffi::OsString, std::ffi::OsString)> =
        vec![("FROM_POLICY".into(), "1".into()), ("SHADOWED".into(), "policy".into())];
    // No PATH in the environment: the program is found on the system's default path.
    let mut spec = CommandSpec::new("env", Vec::<String>::new());
    spec.env = vec![("SHADOWED".into(), "spec".into())];
    let config = SpawnConfig {
        environment: crate::Environment::Exactly(base.into()),
        ..SpawnConfig::standard()
    };
    let mut child = spawn(&spec, &config).unwrap();
    let (_keep, cancel) = no_cancel();
    let mut stdout = Vec::new();
    let outcome = child
        .wait(&cancel, &mut |chunk| {
            if chunk.stream == Stream::Stdout {
                stdout.extend_from_slice(&chunk.bytes);
            }
        })
        .unwrap();
    assert!(matches!(outcome, Outcome::Exited(status) if status.success()));
    let mut lines: Vec<String> =
        String::from_utf8(stdout).unwrap().lines().map(str::to_owned).collect();
    lines.sort();
    assert_eq!(lines, ["FROM_POLICY=1", "SHADOWED=spec"]);
}

#[cfg(target_os = "linux")]
#[test]
fn a_protected_process_is_not_dumpable() {
    crate::protect_process().unwrap();
    assert!(!nix::sys::prctl::get_dumpable().unwrap());
    // Children still start, and the group reaper still reads their /proc entries.
    let spec = CommandSpec::new("sh", ["-c", "cat /proc/self/stat >/dev/null && echo ok"]);
    let mut child = spawn(&spec, &SpawnConfig::standard()).unwrap();
    let (_keep, cancel) = no_cancel();
    let mut stdout = Vec::new();
    let outcome = child.wait(&cancel, &mut |chunk| stdout.extend_from_slice(&chunk.bytes)).unwrap();
    assert!(matches!(outcome, Outcome::Exited(status) if status.success()));
    assert_eq!(stdout, b"ok\n");
}
