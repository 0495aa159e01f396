//! Unit tests of process spawning, output streaming and group termination.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use crossbeam_channel::bounded;

use crate::{
    CommandSpec, Outcome, SpawnConfig, Stream, Wait, live_group_members, output, run, spawn,
};

/// A shell that prints a line, then sleeps with a second sleeper in its group.
fn sleeper() -> CommandSpec {
    CommandSpec::new("sh", ["-c", "echo before; sleep 100 & sleep 100; wait"])
}

#[test]
fn streams_output_and_exit_status() {
    let spec = CommandSpec::new("sh", ["-c", "echo out; echo err >&2; exit 3"]);
    let mut child = spawn(&spec, &SpawnConfig::standard()).unwrap();
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let outcome = child
        .wait(&Wait::new(), &mut |chunk| match chunk.stream {
            Stream::Stdout => stdout.extend_from_slice(&chunk.bytes),
            Stream::Stderr => stderr.extend_from_slice(&chunk.bytes),
        })
        .unwrap();
    match outcome {
        Outcome::Exited(status) => assert_eq!(status.code(), Some(3)),
        stopped => panic!("{stopped:?}"),
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
    let (cancel_tx, cancel) = bounded(1);
    cancel_tx.send(()).unwrap();
    let started = Instant::now();
    let outcome = child.wait(&Wait::new().cancel_on(&cancel), &mut |_| {}).unwrap();
    assert_eq!(outcome, Outcome::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
    drop(child);
    assert_eq!(live_group_members(pgid), Vec::<u32>::new());
}

/// The processes whose command line starts with `prefix` (arguments joined by NUL).
fn processes_with(prefix: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in fs_err::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(cmdline) = fs_err::read(entry.path().join("cmdline")) else { continue };
        if String::from_utf8_lossy(&cmdline).starts_with(prefix) {
            found.push(pid);
        }
    }
    found
}

/// A `sleep` argument no other process has: `base` plus this process's id mod 9, then the
/// time's nanoseconds (`23.041234567` for base 20).
fn unique_marker(base: u32) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    format!("{}.{nanos:09}", base + std::process::id() % 9)
}

#[test]
fn cancel_kills_descendants_that_left_the_group() {
    // bubblewrap's --new-session does this to every sandboxed command: its tree runs in a
    // session (and process group) of its own, out of reach of a signal to the leader's group.
    let marker = unique_marker(20);
    // `setsid` calls setsid(2) and then execs `sleep`: once the command line is sleep's, the
    // sleeper is in its own session.
    let sleeper = format!("sleep\0{marker}");
    let script = format!("setsid sleep {marker} & echo started; sleep 100; wait");
    let mut child =
        spawn(&CommandSpec::new("sh", ["-c", &script]), &SpawnConfig::standard()).unwrap();
    let (cancel_tx, cancel) = bounded(1);
    let outcome = child
        .wait(&Wait::new().cancel_on(&cancel), &mut |chunk| {
            if chunk.bytes.starts_with(b"started") {
                // The setsid'd sleeper exists once its own session is made: wait for it.
                let deadline = Instant::now() + Duration::from_secs(5);
                while processes_with(&sleeper).is_empty() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                let _ = cancel_tx.try_send(());
            }
        })
        .unwrap();
    assert_eq!(outcome, Outcome::Cancelled);
    // The cancel terminated the group: the sleeper in its own session is gone with it (it held
    // the output pipe, so a survivor would also hold up the drop below until it ended).
    assert_eq!(processes_with(&sleeper), Vec::<u32>::new(), "the sleeper in its own session");
    drop(child);
}

#[test]
fn a_straggler_s_child_in_a_session_of_its_own_ends_with_the_command() {
    // The leader exits at once; a subshell it left behind in its group has started a sleeper
    // in a session of its own. The leader's own tree is gone by then: the group's is not.
    let marker = unique_marker(30);
    let sleeper = format!("sleep\0{marker}");
    let script = format!("(setsid sleep {marker} & sleep 100) >/dev/null 2>&1 & echo started");
    let mut child =
        spawn(&CommandSpec::new("sh", ["-c", &script]), &SpawnConfig::standard()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_with(&sleeper).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!processes_with(&sleeper).is_empty(), "the sleeper never started");
    let outcome = child.wait(&Wait::new(), &mut |_| {}).unwrap();
    assert!(matches!(outcome, Outcome::Exited(_)), "{outcome:?}");
    assert_eq!(processes_with(&sleeper), Vec::<u32>::new(), "the sleeper in its own session");
}

#[test]
fn sigterm_ignored_then_sigkill_after_grace() {
    let spec =
        CommandSpec::new("sh", ["-c", "trap '' TERM; echo ready; while :; do sleep 1; done"]);
    let config = SpawnConfig { kill_grace: Duration::from_millis(200), ..SpawnConfig::standard() };
    let mut child = spawn(&spec, &config).unwrap();
    let pgid = child.pid();
    let (cancel_tx, cancel) = bounded(1);
    // Wait until the trap is installed: the shell prints after it.
    let outcome = child
        .wait(&Wait::new().cancel_on(&cancel), &mut |chunk| {
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
    let mut out = Vec::new();
    let outcome =
        child.wait(&Wait::new(), &mut |chunk| out.extend_from_slice(&chunk.bytes)).unwrap();
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
    let mut stdout = Vec::new();
    let outcome =
        child.wait(&Wait::new(), &mut |chunk| stdout.extend_from_slice(&chunk.bytes)).unwrap();
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
    let outcome = child.wait(&Wait::new(), &mut |_| {}).unwrap();
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
    let mut stdout = Vec::new();
    let outcome = child
        .wait(&Wait::new(), &mut |chunk| {
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
    let mut stdout = Vec::new();
    let outcome =
        child.wait(&Wait::new(), &mut |chunk| stdout.extend_from_slice(&chunk.bytes)).unwrap();
    assert!(matches!(outcome, Outcome::Exited(status) if status.success()));
    assert_eq!(stdout, b"ok\n");
}

#[test]
fn a_cancel_ends_the_wait_and_the_group_with_the_output_so_far() {
    let mut child = spawn(&sleeper(), &SpawnConfig::standard()).unwrap();
    let pgid = child.pid();
    // Like a cancel token's signal: nothing is ever sent, the sender is dropped.
    let (cancel_tx, cancel) = bounded::<Infallible>(0);
    let mut cancel_tx = Some(cancel_tx);
    let (_kill_tx, kill) = bounded::<()>(1);
    let wait = Wait::within(Duration::from_secs(100)).cancel_on(&cancel).kill_on(&kill);
    let mut out = Vec::new();
    let outcome = child
        .wait(&wait, &mut |chunk| {
            out.extend_from_slice(&chunk.bytes);
            if out.ends_with(b"before\n") {
                cancel_tx.take();
            }
        })
        .unwrap();
    assert_eq!(outcome, Outcome::Cancelled);
    assert_eq!(out, b"before\n");
    assert_eq!(live_group_members(pgid), Vec::<u32>::new());
}

#[test]
fn a_deadline_ends_the_wait_and_the_group_with_the_output_so_far() {
    let mut child = spawn(&sleeper(), &SpawnConfig::standard()).unwrap();
    let pgid = child.pid();
    let (_cancel_tx, cancel) = bounded::<Infallible>(0);
    let wait = Wait::within(Duration::from_secs(1)).cancel_on(&cancel);
    let mut out = Vec::new();
    let outcome = child.wait(&wait, &mut |chunk| out.extend_from_slice(&chunk.bytes)).unwrap();
    assert_eq!(outcome, Outcome::TimedOut);
    assert_eq!(out, b"before\n");
    assert_eq!(live_group_members(pgid), Vec::<u32>::new());
}

#[test]
fn a_kill_ends_the_wait_and_the_group_with_the_output_so_far() {
    let mut child = spawn(&sleeper(), &SpawnConfig::standard()).unwrap();
    let pgid = child.pid();
    let (_cancel_tx, cancel) = bounded::<Infallible>(0);
    let (kill_tx, kill) = bounded::<()>(1);
    let wait = Wait {
        cancel: Some(&cancel),
        deadline: Some(Instant::now() + Duration::from_secs(100)),
        kill: Some(&kill),
    };
    let mut out = Vec::new();
    let outcome = child
        .wait(&wait, &mut |chunk| {
            out.extend_from_slice(&chunk.bytes);
            let _ = kill_tx.try_send(());
        })
        .unwrap();
    assert_eq!(outcome, Outcome::Killed);
    assert_eq!(out, b"before\n");
    assert_eq!(live_group_members(pgid), Vec::<u32>::new());
}

#[test]
fn a_process_that_exits_first_reports_exited() {
    let spec = CommandSpec::new("sh", ["-c", "echo done; exit 4"]);
    let mut child = spawn(&spec, &SpawnConfig::standard()).unwrap();
    let (_cancel_tx, cancel) = bounded::<Infallible>(0);
    let (_kill_tx, kill) = bounded::<()>(1);
    let wait = Wait::within(Duration::from_secs(100)).cancel_on(&cancel).kill_on(&kill);
    let mut out = Vec::new();
    let outcome = child.wait(&wait, &mut |chunk| out.extend_from_slice(&chunk.bytes)).unwrap();
    assert!(matches!(outcome, Outcome::Exited(status) if status.code() == Some(4)), "{outcome:?}");
    assert_eq!(out, b"done\n");
}

#[test]
fn when_several_fired_kill_wins_then_cancel_then_the_deadline() {
    let (cancel_tx, cancel) = bounded::<()>(1);
    let (kill_tx, kill) = bounded::<()>(1);
    cancel_tx.send(()).unwrap();
    kill_tx.send(()).unwrap();
    let past = Some(Instant::now());
    let all = Wait { cancel: Some(&cancel), deadline: past, kill: Some(&kill) };
    let mut child = spawn(&sleeper(), &SpawnConfig::standard()).unwrap();
    assert_eq!(child.wait(&all, &mut |_| {}).unwrap(), Outcome::Killed);

    let (cancel_tx, cancel) = bounded::<()>(1);
    cancel_tx.send(()).unwrap();
    let cancel_and_deadline = Wait::new().cancel_on(&cancel).deadline(past);
    let mut child = spawn(&sleeper(), &SpawnConfig::standard()).unwrap();
    assert_eq!(child.wait(&cancel_and_deadline, &mut |_| {}).unwrap(), Outcome::Cancelled);
}

#[test]
fn output_keeps_each_stream_up_to_the_limit() {
    let spec = CommandSpec::new("sh", ["-c", "printf 0123456789; printf abc >&2"]);
    let collected = output(&spec, &SpawnConfig::standard(), &Wait::new(), 4).unwrap();
    assert!(collected.success(), "{:?}", collected.outcome);
    assert_eq!(collected.stdout, b"0123");
    assert_eq!(collected.stderr, b"abc");
}

#[test]
fn output_stops_at_its_deadline_with_what_was_printed() {
    let collected =
        output(&sleeper(), &SpawnConfig::standard(), &Wait::within(Duration::from_secs(1)), 1024)
            .unwrap();
    assert_eq!(collected.outcome, Outcome::TimedOut);
    assert!(!collected.success());
    assert_eq!(collected.stdout_text(), "before\n");
}

#[test]
fn run_streams_until_its_cancel() {
    let (cancel_tx, cancel) = bounded::<()>(1);
    let mut chunks = Vec::new();
    let outcome =
        run(&sleeper(), &SpawnConfig::standard(), &Wait::new().cancel_on(&cancel), &mut |chunk| {
            chunks.push(chunk.clone());
            let _ = cancel_tx.try_send(());
        })
        .unwrap();
    assert_eq!(outcome, Outcome::Cancelled);
    assert_eq!(chunks.len(), 1);
    assert_eq!((chunks[0].stream, chunks[0].bytes.as_slice()), (Stream::Stdout, &b"before\n"[..]));
}
