//! Unit tests of `exec_command` and `write_stdin`: a session on a terminal answers input, a
//! session without one only polls, the session bound holds, and a cancel ends the whole tree.

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

#[test]
fn an_idle_session_is_ended_at_the_next_session_call() {
    let fixture = fixture(|config| config.session_idle_timeout = std::time::Duration::ZERO);
    let started = fixture
        .call("exec_command", json!({"cmd": "sleep 985.625", "tty": true, "yield_time_ms": 0}))
        .unwrap();
    let id = session_id(&started);
    fixture.call("exec_command", json!({"cmd": "true", "yield_time_ms": 30000})).unwrap();
    assert_eq!(sleepers("985.625"), 0);
    let err = fixture.call("write_stdin", json!({"session_id": id})).unwrap_err();
    assert!(err.to_string().contains("no command session"), "{err}");
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
