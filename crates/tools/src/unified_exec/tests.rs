//! Unit tests of `exec_command` and `write_stdin`: a session on a terminal answers input, a
//! session without one only polls, the session bound holds, and a cancel ends the whole tree;
//! background jobs are entries of the same table (their bound, idle exemption, timeout, `/ps`),
//! and an idle session is ended by the table's reaper, with no call, the model told at its next
//! process call.

use std::sync::Arc;

use codecoder_protocol::{AskUserAnswer, ToolError};
use serde_json::{Value, json};

use crate::{Builtin, StandaloneEnv, ToolsConfig, builtins, run_checked};

struct Fixture {
    _dir: tempfile::TempDir,
    tools: Vec<Arc<dyn Builtin>>,
    env: StandaloneEnv,
}

fn fixture(edit: impl FnOnce(&mut ToolsConfig)) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let mut config = ToolsConfig::standard(dir.path(), vec![dir.path().to_owned()]);
    config.shell_args = vec!["-c".to_owned()];
    edit(&mut config);
    Fixture {
        tools: builtins(config),
        _dir: dir,
        env: StandaloneEnv::new(AskUserAnswer::Declined, 0),
    }
}

impl Fixture {
    fn call(&self, name: &str, args: Value) -> Result<String, ToolError> {
        let tool = self.tools.iter().find(|tool| tool.name() == name).unwrap();
        let output = run_checked(tool.as_ref(), &self.env, args)?;
        Ok(output.content.iter().map(|item| format!("{item:?}")).collect())
    }
}

/// The job id `run_command {background: true}` gives.
fn job_id(text: &str) -> u64 {
    let rest = text.split("Started background job ").nth(1).unwrap_or_else(|| panic!("{text}"));
    rest.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

/// The session id a result names while its process runs.
fn session_id(text: &str) -> u64 {
    let rest = text.split("session ID ").nth(1).unwrap_or_else(|| panic!("{text}"));
    rest.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

#[test]
fn a_terminal_session_answers_what_is_typed() {
    let fixture = fixture(|_| {});
    let started = fixture
        .call(
            "exec_command",
            json!({"cmd": "printf 'name? '; read name; echo \"got:$name\"", "tty": true, "yield_time_ms": 0}),
        )
        .unwrap();
    let id = session_id(&started);
    // The wait ends when the process exits, long before 30 s.
    let answered = fixture
        .call("write_stdin", json!({"session_id": id, "chars": "ada\n", "yield_time_ms": 30000}))
        .unwrap();
    assert!(answered.contains("got:ada"), "{answered}");
    assert!(answered.contains("Process exited with code 0"), "{answered}");
    // An ended session whose output was read is gone.
    let err = fixture.call("write_stdin", json!({"session_id": id})).unwrap_err();
    assert!(err.to_string().contains(&format!("no command session {id}")), "{err}");
}

#[test]
fn a_session_without_a_terminal_only_polls() {
    let fixture = fixture(|_| {});
    let started =
        fixture.call("exec_command", json!({"cmd": "sleep 100", "yield_time_ms": 0})).unwrap();
    let id = session_id(&started);
    let err = fixture
        .call("write_stdin", json!({"session_id": id, "chars": "x\n", "yield_time_ms": 0}))
        .unwrap_err();
    assert!(err.to_string().contains("has no terminal"), "{err}");
    let polled =
        fixture.call("write_stdin", json!({"session_id": id, "yield_time_ms": 0})).unwrap();
    assert!(polled.contains(&format!("session ID {id}")), "{polled}");
}

#[test]
fn finished_commands_give_their_exit_code_and_no_session() {
    let fixture = fixture(|_| {});
    let done = fixture
        .call("exec_command", json!({"cmd": "echo hi; exit 4", "yield_time_ms": 30000}))
        .unwrap();
    assert!(done.contains("Process exited with code 4"), "{done}");
    assert!(done.contains("hi"), "{done}");
    assert!(!done.contains("session ID"), "{done}");
}

#[test]
fn no_more_sessions_than_the_bound() {
    let fixture = fixture(|config| config.max_sessions = 1);
    fixture.call("exec_command", json!({"cmd": "sleep 100", "yield_time_ms": 0})).unwrap();
    let err =
        fixture.call("exec_command", json!({"cmd": "sleep 100", "yield_time_ms": 0})).unwrap_err();
    assert!(err.to_string().contains("the most allowed"), "{err}");
}

/// How many processes run `sleep SECONDS` (an argument no other test uses).
fn sleepers(seconds: &str) -> usize {
    let wanted = format!("sleep\0{seconds}\0");
    fs_err::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|entry| {
            fs_err::read(entry.path().join("cmdline"))
                .is_ok_and(|cmdline| cmdline == wanted.as_bytes())
        })
        .count()
}

#[test]
fn a_cancel_ends_the_whole_tree() {
    let fixture = fixture(|_| {});
    let started = fixture
        .call(
            "exec_command",
            json!({"cmd": "sleep 987.125 & sleep 987.125; wait", "tty": true, "yield_time_ms": 0}),
        )
        .unwrap();
    let id = session_id(&started);
    fixture.env.cancel_token().cancel();
    let err = fixture.call("write_stdin", json!({"session_id": id, "yield_time_ms": 30000}));
    assert_eq!(err.unwrap_err(), ToolError::Cancelled);
    assert_eq!(sleepers("987.125"), 0);
    let fresh = Fixture { env: StandaloneEnv::new(AskUserAnswer::Declined, 0), ..fixture };
    let missing = fresh.call("write_stdin", json!({"session_id": id})).unwrap_err();
    assert!(missing.to_string().contains("no command session"), "{missing}");
}

#[test]
fn live_sessions_lists_a_running_session_and_stop_session_ends_it() {
    let fixture = fixture(|_| {});
    let started = fixture
        .call("exec_command", json!({"cmd": "sleep 986.375", "tty": true, "yield_time_ms": 0}))
        .unwrap();
    let id = session_id(&started);
    let listed = crate::live_sessions();
    let session = listed.iter().find(|session| session.id == id).unwrap();
    assert_eq!(session.command, "sleep 986.375");
    assert!(session.tty);
    assert!(crate::stop_session(id));
    assert!(!crate::live_sessions().iter().any(|session| session.id == id));
    assert_eq!(sleepers("986.375"), 0);
    assert!(!crate::stop_session(id));
}

#[test]
fn output_over_the_cap_is_spilled_whole_to_a_file() {
    let spill = tempfile::tempdir().unwrap();
    let spill_dir = spill.path().to_owned();
    let fixture = fixture(|config| {
        config.output_limit = 1000;
        config.spill_dir = Some(spill_dir);
    });
    let done = fixture
        .call(
            "exec_command",
            json!({"cmd": "head -c 5000 /dev/zero | tr '\\0' x; echo; echo END", "yield_time_ms": 30000}),
        )
        .unwrap();
    assert!(done.contains("END"), "{done}");
    assert!(done.contains("The full output is in"), "{done}");
    let files: Vec<_> = fs_err::read_dir(spill.path()).unwrap().flatten().collect();
    assert_eq!(files.len(), 1, "{done}");
    let whole = fs_err::read_to_string(files[0].path()).unwrap();
    assert_eq!(whole, format!("{}\nEND\n", "x".repeat(5000)));
}

/// Waits until no `sleep DURATION` runs; false if one still does after 30 s.
fn sleepers_gone(duration: &str) -> bool {
    let started = std::time::Instant::now();
    while sleepers(duration) > 0 {
        if started.elapsed() > std::time::Duration::from_secs(30) {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    true
}

#[test]
fn an_idle_session_is_ended_without_any_call_and_the_model_is_told() {
    let fixture = fixture(|config| config.session_idle_timeout = std::time::Duration::ZERO);
    let started = fixture
        .call("exec_command", json!({"cmd": "sleep 985.625", "tty": true, "yield_time_ms": 0}))
        .unwrap();
    let id = session_id(&started);
    // No call comes: the table's reaper ends it (`/ps` no longer lists it) and kills its tree.
    let started = std::time::Instant::now();
    while crate::live_sessions().iter().any(|session| session.id == id) {
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "still listed");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(sleepers_gone("985.625"), "the idle session's process still runs");
    // The next process call carries a note, once.
    let next =
        fixture.call("exec_command", json!({"cmd": "true", "yield_time_ms": 30000})).unwrap();
    assert!(
        next.contains(&format!("Note: command session {id} (`sleep 985.625`) was ended")),
        "{next}"
    );
    let again =
        fixture.call("exec_command", json!({"cmd": "true", "yield_time_ms": 30000})).unwrap();
    assert!(!again.contains("Note:"), "{again}");
    // A call naming it is told why it is gone.
    let err = fixture.call("write_stdin", json!({"session_id": id})).unwrap_err();
    assert!(err.to_string().contains("without use (the idle timeout"), "{err}");
}

#[test]
fn a_session_a_call_waits_on_is_not_idle() {
    let fixture = fixture(|config| config.session_idle_timeout = std::time::Duration::ZERO);
    // The call's own wait keeps the session in use: it runs to its end.
    let done = fixture
        .call("exec_command", json!({"cmd": "sleep 0.3; echo finished", "yield_time_ms": 30000}))
        .unwrap();
    assert!(done.contains("finished") && done.contains("Process exited with code 0"), "{done}");
}

#[test]
fn a_job_tool_call_tells_of_an_idle_session_too() {
    let fixture = fixture(|config| config.session_idle_timeout = std::time::Duration::ZERO);
    let started =
        fixture.call("exec_command", json!({"cmd": "sleep 978.875", "yield_time_ms": 0})).unwrap();
    let id = session_id(&started);
    let started = std::time::Instant::now();
    while crate::live_sessions().iter().any(|session| session.id == id) {
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "still listed");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let job = job_id(
        &fixture.call("run_command", json!({"command": "true", "background": true})).unwrap(),
    );
    let out = fixture.call("job_output", json!({"id": job})).unwrap();
    assert!(out.contains(&format!("Note: command session {id}")), "{out}");
}

#[test]
fn dropping_the_tools_ends_every_session() {
    let fixture = fixture(|_| {});
    for _ in 0..2 {
        fixture
            .call("exec_command", json!({"cmd": "sleep 984.875", "tty": true, "yield_time_ms": 0}))
            .unwrap();
    }
    drop(fixture);
    assert_eq!(sleepers("984.875"), 0);
}

/// The text a `job_output` reply gives once the job printed `wanted` (or ended), polled.
fn job_output_with(fixture: &Fixture, id: u64, wanted: &str) -> String {
    let started = std::time::Instant::now();
    loop {
        let out = fixture.call("job_output", json!({"id": id})).unwrap();
        if out.contains(wanted) {
            return out;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "{out}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_job_outlives_the_thread_that_started_it() {
    let fixture = Arc::new(fixture(|_| {}));
    let starter = Arc::clone(&fixture);
    let job = std::thread::spawn(move || {
        let out = starter
            .call("run_command", json!({"command": "sleep 983.25", "background": true}))
            .unwrap();
        job_id(&out)
    })
    .join()
    .unwrap();
    // The process belongs to the job's own thread, not to the tool worker that is gone.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(sleepers("983.25"), 1);
    let out = fixture.call("job_output", json!({"id": job})).unwrap();
    assert!(out.contains("running (pid"), "{out}");
    let killed = fixture.call("job_kill", json!({"id": job})).unwrap();
    assert!(killed.contains("Killed.") && killed.contains("killed by job_kill"), "{killed}");
    assert_eq!(sleepers("983.25"), 0);
}

#[test]
fn jobs_and_sessions_share_one_bound() {
    let fixture = fixture(|config| config.max_sessions = 2);
    let session = session_id(
        &fixture.call("exec_command", json!({"cmd": "sleep 982.5", "yield_time_ms": 0})).unwrap(),
    );
    let job = job_id(
        &fixture
            .call("run_command", json!({"command": "sleep 982.5", "background": true}))
            .unwrap(),
    );
    // One numbering: a job's id is a session id of its own.
    assert_ne!(session, job);
    let err = fixture
        .call("run_command", json!({"command": "sleep 982.5", "background": true}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("2 command sessions and background jobs are running"), "{err}");
    assert!(err.contains(&format!("background job {job} `sleep 982.5`")), "{err}");
    let err = fixture
        .call("exec_command", json!({"cmd": "sleep 982.5", "yield_time_ms": 0}))
        .unwrap_err()
        .to_string();
    assert!(err.contains(&format!("session {session} `sleep 982.5`")), "{err}");
    assert!(err.contains("job_kill"), "{err}");
    // An ended job no longer counts.
    fixture.call("job_kill", json!({"id": job})).unwrap();
    fixture.call("run_command", json!({"command": "sleep 982.5", "background": true})).unwrap();
    drop(fixture);
    assert_eq!(sleepers("982.5"), 0);
}

#[test]
fn jobs_are_exempt_from_the_idle_sweep_and_stay_readable_once_ended() {
    let fixture = fixture(|config| config.session_idle_timeout = std::time::Duration::ZERO);
    let sleeper = job_id(
        &fixture
            .call("run_command", json!({"command": "sleep 981.75", "background": true}))
            .unwrap(),
    );
    let ended = job_id(
        &fixture
            .call("run_command", json!({"command": "echo done; exit 3", "background": true}))
            .unwrap(),
    );
    job_output_with(&fixture, ended, "ended: exit code 3");
    // A session call sweeps idle sessions; the jobs, running or ended, stay.
    fixture.call("exec_command", json!({"cmd": "true", "yield_time_ms": 30000})).unwrap();
    assert_eq!(sleepers("981.75"), 1);
    let out = fixture.call("job_output", json!({"id": ended})).unwrap();
    assert!(out.contains("ended: exit code 3"), "{out}");
    let out = fixture.call("job_kill", json!({"id": ended})).unwrap();
    assert!(out.starts_with("Text { text: \"The job had already ended."), "{out}");
    fixture.call("job_kill", json!({"id": sleeper})).unwrap();
    assert_eq!(sleepers("981.75"), 0);
}

#[test]
fn live_sessions_lists_a_job_which_stop_session_ends() {
    let fixture = fixture(|_| {});
    fixture.call("run_command", json!({"command": "sleep 980.125", "background": true})).unwrap();
    let listed = crate::live_sessions();
    let job = listed.iter().find(|session| session.command == "sleep 980.125").unwrap();
    assert_eq!(job.job, Some(job.id));
    assert!(!job.tty);
    assert!(crate::stop_session(job.id));
    assert_eq!(sleepers("980.125"), 0);
    let err = fixture.call("job_output", json!({"id": job.id})).unwrap_err();
    assert!(err.to_string().contains("jobs and sessions of this conversation: none"), "{err}");
}

#[test]
fn a_job_ends_at_its_timeout() {
    let fixture = fixture(|_| {});
    let job = job_id(
        &fixture
            .call(
                "run_command",
                json!({"command": "sleep 979.5", "background": true, "timeout_ms": 200}),
            )
            .unwrap(),
    );
    let out = job_output_with(&fixture, job, "ended:");
    assert!(out.contains("timed out after 200 ms"), "{out}");
    assert_eq!(sleepers("979.5"), 0);
}

/// The wall time a result reports, in seconds.
fn wall_time(text: &str) -> f64 {
    let rest = text.split("Wall time: ").nth(1).unwrap_or_else(|| panic!("{text}"));
    rest.split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn a_poll_reports_its_own_wall_time_not_the_sessions_age() {
    let fixture = fixture(|_| {});
    // The first call waits its whole yield: the session is older than that when polled.
    let started =
        fixture.call("exec_command", json!({"cmd": "sleep 100", "yield_time_ms": 300})).unwrap();
    let id = session_id(&started);
    let before = std::time::Instant::now();
    let polled =
        fixture.call("write_stdin", json!({"session_id": id, "yield_time_ms": 0})).unwrap();
    let around = before.elapsed().as_secs_f64();
    // The reported time lies within the call (the reply rounds to 0.1 ms).
    assert!(wall_time(&polled) <= around + 0.0001, "{polled} (the call took {around} s)");
}

#[test]
fn job_kill_ends_a_session_without_a_terminal_and_frees_its_place() {
    let fixture = fixture(|config| config.max_sessions = 1);
    let id = session_id(
        &fixture.call("exec_command", json!({"cmd": "sleep 977.25", "yield_time_ms": 0})).unwrap(),
    );
    // The bound counts jobs too, and the refusal names what ends the session.
    let err = fixture
        .call("run_command", json!({"command": "sleep 977.25", "background": true}))
        .unwrap_err()
        .to_string();
    assert!(err.contains(&format!("session {id} `sleep 977.25`")), "{err}");
    assert!(err.contains("job_kill"), "{err}");
    let err = fixture
        .call("write_stdin", json!({"session_id": id, "chars": "\u{3}", "yield_time_ms": 0}))
        .unwrap_err()
        .to_string();
    assert!(err.contains(&format!("job_kill {{\"id\": {id}}}")), "{err}");
    let killed = fixture.call("job_kill", json!({"id": id})).unwrap();
    assert!(killed.contains("Killed.") && killed.contains(&format!("Session {id}")), "{killed}");
    assert_eq!(sleepers("977.25"), 0);
    // The ended session is gone, and its place is free.
    let err = fixture.call("write_stdin", json!({"session_id": id})).unwrap_err();
    assert!(err.to_string().contains(&format!("no command session {id}")), "{err}");
    fixture.call("exec_command", json!({"cmd": "true", "yield_time_ms": 30000})).unwrap();
}
