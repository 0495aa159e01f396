//! run_command and background jobs: exit codes, merged streams, streaming, a 100 MB flood,
//! a command that ignores SIGTERM, timeouts, cancel mid-command, jobs dying with the session.

use std::time::{Duration, Instant};

use codecoder_protocol::ToolError;
use serde_json::json;

use crate::support::*;

/// The number after `pid=` in `text`.
fn pid_in(text: &str) -> u32 {
    find_pid(text).unwrap_or_else(|| panic!("no pid in {text}"))
}

fn find_pid(text: &str) -> Option<u32> {
    text.match_indices("pid=")
        .map(|(at, _)| text[at + 4..].chars().take_while(char::is_ascii_digit).collect::<String>())
        .find(|digits| !digits.is_empty())
        .map(|digits| digits.parse().unwrap())
}

/// The peak resident memory of this process, in KiB.
fn peak_rss_kib() -> u64 {
    let status = fs_err::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn exit_code_and_merged_output() {
    let fixture = Fixture::new();
    let output = fixture
        .call("run_command", json!({ "command": "echo one; echo two >&2; echo three; exit 3" }))
        .unwrap();
    let out = text(&output);
    assert!(output.is_error);
    let (one, three) = (out.find("one").unwrap(), out.find("three").unwrap());
    assert!(one < three && out.contains("two"), "{out}");
    assert!(out.contains("[exit code 3;"), "{out}");
    // How it ended is also data, for front-ends.
    let exit = output.exit.unwrap();
    assert_eq!((exit.code, exit.signal), (Some(3), None));
    let streamed = fixture.env.streamed();
    assert!(streamed.contains("one\n") && streamed.contains("two\n"), "{streamed}");

    let out = fixture.ok(
        "run_command",
        json!({ "command": "pwd; echo $GREETING", "env": { "GREETING": "hi there" } }),
    );
    assert!(
        out.starts_with(&format!("{}\nhi there\n[exit code 0;", fixture.cwd.display())),
        "{out}"
    );
    fixture.write("sub/x", "");
    let out = fixture.ok("run_command", json!({ "command": "pwd", "cwd": "sub" }));
    assert!(out.starts_with(&format!("{}\n", fixture.path("sub").display())), "{out}");
    let out = fixture.ok("run_command", json!({ "command": "true" }));
    assert!(out.starts_with("(no output)\n[exit code 0;"), "{out}");
    let output = fixture.call("run_command", json!({ "command": "kill -9 $$" })).unwrap();
    assert!(output.is_error && text(&output).contains("killed by signal 9"), "{}", text(&output));
    let exit = output.exit.unwrap();
    assert_eq!((exit.code, exit.signal), (None, Some(9)));
}

#[test]
fn the_default_shell_is_a_login_bash() {
    let config = codecoder_tools::ToolsConfig::standard("/", Vec::new());
    assert_eq!(
        (config.shell.to_str(), config.shell_args.as_slice()),
        (Some("bash"), &["-lc".to_owned()][..])
    );
}

#[test]
fn bad_arguments_are_refused() {
    let fixture = Fixture::new();
    assert!(
        fixture
            .err("run_command", json!({ "command": "ls", "cwd": "missing" }))
            .contains("does not exist")
    );
    assert!(
        fixture
            .err("run_command", json!({ "command": "ls", "env": { "A=B": "x" } }))
            .contains("env.A=B")
    );
    assert!(
        fixture
            .err("run_command", json!({ "command": "ls", "timeout_ms": 100_000_000 }))
            .contains("at most")
    );
    assert!(fixture.err("run_command", json!({ "command": "   " })).contains("empty"));
    assert!(
        fixture
            .err("run_command", json!({ "command": "ls", "env": { "A": 1 } }))
            .contains("must be string")
    );
    let err = fixture.err("job_output", json!({ "id": 999_999 }));
    assert!(err.contains("no background job or command session 999999"), "{err}");
    let err = fixture.err("job_kill", json!({ "id": 999_999 }));
    assert!(err.contains("jobs and sessions of this conversation: none"), "{err}");
    let fixture = Fixture::with(|config| config.shell = "/nonexistent/shell".into());
    assert!(fixture.err("run_command", json!({ "command": "ls" })).contains("could not start"));
}

#[test]
fn a_100_mb_flood_is_capped_with_bounded_memory() {
    // Other tests that allocate megabytes wait, so the peak below is this test's.
    let _heavy = HEAVY.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let fixture = Fixture::new();
    let before = peak_rss_kib();
    let started = Instant::now();
    let out = fixture.ok(
        "run_command",
        json!({ "command": "echo first; yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 100000000; echo; echo last" }),
    );
    let elapsed = started.elapsed();
    assert!(out.len() < 40 * 1024, "{}", out.len());
    assert!(out.starts_with("first\n0123456789"), "{}", &out[..100]);
    assert!(out.contains("bytes (") && out.contains("lines) elided"), "{out}");
    assert!(out.contains("\nlast\n[exit code 0;"), "{}", &out[out.len() - 200..]);
    let (streamed, deltas) = fixture.env.streamed_totals();
    assert_eq!(streamed, 100_000_000 + "first\n\nlast\n".len());
    assert!(deltas > 100, "{deltas}");
    let grown_mib = peak_rss_kib().saturating_sub(before) / 1024;
    assert!(grown_mib < 80, "peak memory grew by {grown_mib} MiB");
    assert!(elapsed < Duration::from_secs(60), "{elapsed:?}");
}

#[test]
fn timeout_kills_a_command_that_ignores_sigterm() {
    let fixture = Fixture::new();
    let started = Instant::now();
    let output = fixture
        .call(
            "run_command",
            json!({ "command": "trap '' TERM; echo pid=$$; sleep 30 & while :; do sleep 1; done", "timeout_ms": 2000 }),
        )
        .unwrap();
    let elapsed = started.elapsed();
    let out = text(&output);
    assert!(output.is_error);
    assert!(out.contains("timed out after 2000 ms"), "{out}");
    let pid = pid_in(&out);
    // 2 s timeout + 300 ms grace before SIGKILL.
    assert!(elapsed >= Duration::from_millis(2250), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(8), "{elapsed:?}");
    assert_eq!(live(pid), Vec::<u32>::new());
}

#[test]
fn plain_timeout() {
    let fixture = Fixture::new();
    let started = Instant::now();
    let output =
        fixture.call("run_command", json!({ "command": "sleep 20", "timeout_ms": 200 })).unwrap();
    assert!(output.is_error && text(&output).contains("timed out"), "{}", text(&output));
    let exit = output.exit.unwrap();
    assert_eq!((exit.code, exit.signal), (None, None), "a timeout has no exit code");
    assert!(exit.duration_ms >= 200, "{exit:?}");
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

#[test]
fn cancel_mid_command_kills_the_group() {
    let fixture = Fixture::new();
    let started = Instant::now();
    let result = std::thread::scope(|scope| {
        let running = scope.spawn(|| {
            fixture
                .call("run_command", json!({ "command": "echo pid=$$; sleep 30 & sleep 30; wait" }))
        });
        while !fixture.env.streamed().contains("pid=") {
            assert!(started.elapsed() < PATIENCE, "the command never started");
            std::thread::sleep(Duration::from_millis(5));
        }
        fixture.env.cancel_token().cancel();
        running.join().unwrap()
    });
    assert_eq!(result, Err(ToolError::Cancelled));
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let pid = pid_in(&fixture.env.streamed());
    assert_eq!(live(pid), Vec::<u32>::new());
}

#[test]
fn background_jobs_output_and_kill() {
    let fixture = Fixture::new();
    let out = fixture.ok(
        "run_command",
        json!({ "command": "echo hello; trap '' TERM; while :; do sleep 0.05; done", "background": true }),
    );
    assert!(out.starts_with("Started background job "), "{out}");
    let job = job_id(&out);
    let started = Instant::now();
    let out = loop {
        let out = fixture.ok("job_output", json!({ "id": job }));
        if out.contains("New output") {
            break out;
        }
        assert!(started.elapsed() < PATIENCE, "{out}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(out.contains("running (pid "), "{out}");
    let pid: u32 = out.split("pid ").nth(1).unwrap().split(',').next().unwrap().parse().unwrap();
    assert!(!live(pid).is_empty());
    // Already read: nothing new.
    let again = fixture.ok("job_output", json!({ "id": job }));
    assert!(again.contains("no new output"), "{again}");
    let out = fixture.ok("job_kill", json!({ "id": job }));
    assert!(out.starts_with("Killed.") && out.contains("killed by job_kill"), "{out}");
    assert_eq!(live(pid), Vec::<u32>::new());
    let out = fixture.ok("job_kill", json!({ "id": job }));
    assert!(out.starts_with("The job had already ended."), "{out}");

    let out =
        fixture.ok("run_command", json!({ "command": "echo done; exit 4", "background": true }));
    let second = job_id(&out);
    assert!(second > job, "{out}");
    let out = loop {
        let out = fixture.ok("job_output", json!({ "id": second }));
        if out.contains("ended") {
            break out;
        }
        assert!(started.elapsed() < PATIENCE, "{out}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(out.contains("ended: exit code 4"), "{out}");
}

#[test]
fn jobs_die_with_the_session() {
    let fixture = Fixture::with(|config| config.max_jobs = 2);
    let mut ids = Vec::new();
    for _ in 0..2 {
        let out = fixture
            .ok("run_command", json!({ "command": "echo pid=$$; sleep 60", "background": true }));
        ids.push(job_id(&out));
    }
    let err = fixture.err("run_command", json!({ "command": "sleep 60", "background": true }));
    assert!(err.contains("background jobs are running"), "{err}");
    let mut pids = Vec::new();
    let started = Instant::now();
    for id in ids {
        loop {
            let out = fixture.ok("job_output", json!({ "id": id }));
            if let Some(pid) = find_pid(&out) {
                pids.push(pid);
                break;
            }
            assert!(started.elapsed() < PATIENCE, "{out}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    assert!(pids.iter().all(|&pid| !live(pid).is_empty()));
    drop(fixture);
    for pid in pids {
        assert_eq!(live(pid), Vec::<u32>::new());
    }
}

#[test]
fn the_full_output_is_spilled_to_a_file_when_asked() {
    let spill = tempfile::tempdir().unwrap();
    let spill_dir = spill.path().to_path_buf();
    let fixture = Fixture::with(|config| {
        config.output_limit = 1000;
        config.spill_dir = Some(spill_dir);
    });
    let out = fixture.ok("run_command", json!({ "command": "seq 1 100000" }));
    assert!(out.contains("elided"), "{out}");
    let path = out.split("The full output is in `").nth(1).unwrap().split('`').next().unwrap();
    let expected: String = (1..=100_000).map(|n| format!("{n}\n")).collect();
    assert_eq!(fs_err::read_to_string(path).unwrap(), expected);
    // Small output: no file.
    let out = fixture.ok("run_command", json!({ "command": "echo small" }));
    assert!(!out.contains("full output"), "{out}");
    assert_eq!(fs_err::read_dir(spill.path()).unwrap().count(), 1);
}

#[test]
fn the_full_output_becomes_a_content_addressed_blob_when_a_store_is_given() {
    let home = tempfile::tempdir().unwrap();
    let blobs = codecoder_session::BlobStore::new(home.path().join("blobs"));
    let store = blobs.clone();
    let fixture = Fixture::with(move |config| {
        config.output_limit = 1000;
        config.spill_dir = Some(store.dir().join("spill"));
        config.blobs = Some(store.clone());
    });
    let out = fixture.ok("run_command", json!({ "command": "seq 1 100000" }));
    assert!(out.contains("elided"), "{out}");
    let sha = out.split("blob sha256:").nth(1).unwrap().split_whitespace().next().unwrap();
    let expected: String = (1..=100_000).map(|n| format!("{n}\n")).collect();
    assert_eq!(blobs.get(sha).unwrap(), expected.as_bytes());
    assert!(out.contains(&format!("({} bytes)", expected.len())), "{out}");
    // The spill file itself was moved, not copied.
    assert_eq!(fs_err::read_dir(home.path().join("blobs/spill")).unwrap().count(), 0);
}

#[test]
fn secrets_in_the_spilled_output_are_redacted_with_the_sessions_redactor() {
    let home = tempfile::tempdir().unwrap();
    let blobs = codecoder_session::BlobStore::new(home.path().join("blobs"));
    let store = blobs.clone();
    let mut fixture = Fixture::with(move |config| {
        config.output_limit = 1000;
        config.spill_dir = Some(store.dir().join("spill"));
        config.blobs = Some(store.clone());
    });
    let redactor = codecoder_kernel::Redactor::new([]).unwrap();
    fixture.env =
        codecoder_tools::StandaloneEnv::new(codecoder_protocol::AskUserAnswer::Declined, 1 << 20)
            .with_redactor(std::sync::Arc::new(redactor));
    let token = format!("ghp_{}", "A1b2C3d4".repeat(5));
    // The token sits past the cap, in the part only the spilled file holds; the key block is
    // split over two writes with a pause between them.
    let command = format!(
        "seq 1 20000; echo token={token}; printf -- '-----BEGIN RSA PRIVATE KEY-----\\nMIIEow'; \
         sleep 0.2; printf 'IBAAKCAQEA\\n-----END RSA PRIVATE KEY-----\\n'; seq 1 20000"
    );
    let out = fixture.ok("run_command", json!({ "command": command }));
    assert!(out.contains("2 secrets redacted"), "{out}");
    let sha = out.split("blob sha256:").nth(1).unwrap().split_whitespace().next().unwrap();
    let stored = String::from_utf8(blobs.get(sha).unwrap()).unwrap();
    assert!(!stored.contains(&token), "the token reached the blob");
    assert!(!stored.contains("MIIEow") && !stored.contains("IBAAKC"), "the key reached the blob");
    assert!(stored.contains("token=[REDACTED:"), "{}", &stored[stored.len() / 2..][..200]);
    assert!(stored.starts_with("1\n2\n") && stored.ends_with("19999\n20000\n"));
    // exec_command spills the same way.
    let out = fixture.ok(
        "exec_command",
        json!({ "cmd": format!("seq 1 20000; echo {token}"), "yield_time_ms": 10000 }),
    );
    let sha = out.split("blob sha256:").nth(1).unwrap().split_whitespace().next().unwrap();
    let stored = String::from_utf8(blobs.get(sha).unwrap()).unwrap();
    assert!(stored.contains("20000\n") && !stored.contains(&token), "{out}");
}

#[test]
fn commands_and_jobs_start_from_exactly_the_configured_environment() {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let vars: Vec<(std::ffi::OsString, std::ffi::OsString)> =
        vec![("PATH".into(), path), ("FROM_POLICY".into(), "kept".into())];
    let fixture = Fixture::with(|config| {
        config.environment = codecoder_sandbox::Environment::Exactly(vars.into());
    });
    // The test process has CARGO_* variables; none of them may reach the command.
    let out = fixture.ok("run_command", json!({ "command": "env", "env": { "EXTRA": "call" } }));
    assert!(out.contains("FROM_POLICY=kept\n") && out.contains("EXTRA=call\n"), "{out}");
    assert!(!out.contains("CARGO_"), "{out}");
    let out = fixture.ok("run_command", json!({ "command": "env", "background": true }));
    let job = job_id(&out);
    let started = Instant::now();
    let out = loop {
        let out = fixture.ok("job_output", json!({ "id": job }));
        if out.contains("ended") {
            break out;
        }
        assert!(started.elapsed() < PATIENCE, "{out}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(out.contains("FROM_POLICY=kept\n"), "{out}");
    assert!(!out.contains("CARGO_"), "{out}");
}

#[test]
fn a_background_job_stops_at_its_timeout() {
    let fixture = Fixture::new();
    let out = fixture.ok(
        "run_command",
        json!({ "command": "echo pid=$$; sleep 60", "background": true, "timeout_ms": 300 }),
    );
    let job = job_id(&out);
    let started = Instant::now();
    let mut seen = String::new();
    let out = loop {
        let out = fixture.ok("job_output", json!({ "id": job }));
        seen.push_str(&out);
        if out.contains("ended") {
            break out;
        }
        assert!(started.elapsed() < PATIENCE, "{out}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(out.contains("ended: timed out after 300 ms"), "{out}");
    assert_eq!(live(pid_in(&seen)), Vec::<u32>::new());
}

/// The names of the threads of the process that runs the tools, as a command it starts sees
/// them (`/proc/<parent>/task/*/comm`, cut to 15 bytes by the kernel) while it runs, once the
/// last thread the sandbox starts for it (its stderr reader) is there.
fn tool_threads_while_running(fixture: &Fixture) -> Vec<String> {
    let command = "while ! grep -qs ^sandbox-err /proc/$PPID/task/*/comm; do sleep 0.01; done; \
                   sleep 0.1; cat /proc/$PPID/task/*/comm";
    let out = fixture.ok("run_command", json!({ "command": command }));
    out.lines().filter(|line| !line.starts_with('[')).map(str::to_owned).collect()
}

#[test]
fn waiting_for_commands_and_jobs_starts_no_watcher_thread() {
    let fixture = Fixture::new();
    let out = fixture.ok("run_command", json!({ "command": "sleep 60", "background": true }));
    let job = job_id(&out);
    let threads = tool_threads_while_running(&fixture);
    // The foreground command's own readers and waiter, and the job's one thread, are there…
    let job_thread = format!("job-{job}");
    for expected in ["sandbox-out-", "sandbox-err-", "sandbox-wait-", job_thread.as_str()] {
        assert!(threads.iter().any(|name| name.starts_with(expected)), "{expected}: {threads:?}");
    }
    // …and nothing else waits for either (a thread of the tool's own would be named
    // `run-command-…`): the sandbox's wait takes the cancel, the deadline and the kill itself.
    assert!(
        !threads.iter().any(|name| name.starts_with("run-command") || name.contains("watch")),
        "{threads:?}"
    );
    let out = fixture.ok("job_kill", json!({ "id": job }));
    assert!(out.contains("killed by job_kill"), "{out}");
}
