//! One writer per session log, end to end: concurrent resumes, a holder killed with SIGKILL,
//! `sessions rm` of a session in use, the index shared by concurrent processes and surviving a
//! corrupt file, and `sessions fork` keeping records of unknown types.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codecoder_protocol::{Message, RecordBody, TurnId, TurnOutcome};
use codecoder_session::{Entry, FsyncPolicy, NewSession, SessionStore, WriterConfig};
use codecoder_stdx::ManualClock;
use codecoder_test_support::{FakeModelServer, Reply, Script};

use crate::exec::{Run, openai_env};
use crate::{codecoder, stderr, stdout};

/// How long a test waits for a process that should end on its own before it gives up.
const PATIENCE: Duration = Duration::from_secs(60);

/// The message a refused writer prints (after `codecoder: `).
fn in_use_message(id: &str, pid: u32) -> String {
    format!(
        "session {id} is in use by another codecoder process (pid {pid}); to continue it \
         elsewhere, fork it: codecoder sessions fork {id}"
    )
}

/// The ids of the session logs in `home`.
fn session_ids(home: &Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(home.join("sessions"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().and_then(|e| e.to_str()) == Some("jsonl"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    ids
}

/// `codecoder sessions validate ID` succeeds; returns what it printed.
fn assert_valid(home: &Path, id: &str) -> String {
    let out = codecoder(home, &["sessions", "validate", id]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    stdout(&out)
}

fn spawn(run: &Run<'_>, args: &[&str]) -> Child {
    run.command(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until one of `children` has exited and returns its index.
fn first_to_exit(children: &mut [Child]) -> usize {
    let started = Instant::now();
    loop {
        for (i, child) in children.iter_mut().enumerate() {
            if child.try_wait().unwrap().is_some() {
                return i;
            }
        }
        assert!(started.elapsed() < PATIENCE, "neither process ended");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Two `exec resume --last` on one session at once, three rounds in a row: the one that gets
/// the log runs its turn (held at a gate, a command waiting for a file, until the other has
/// ended), the other exits 2 naming the holder's pid and `sessions fork`. The log validates
/// after every round and holds every winner's turn.
#[test]
fn concurrent_resumes_one_writes_the_other_exits_2_naming_the_holder() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let server = FakeModelServer::start(Script::new().reply(Reply::text("First."))).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "first question"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let [id] = session_ids(home.path()).try_into().unwrap();

    for round in 1..=3 {
        let release = format!("release-{round}");
        server.push(Reply::tool_call(
            format!("gate_{round}"),
            "run_command",
            serde_json::json!({"command": format!("while [ ! -e {release} ]; do sleep 0.05; done")}),
        ));
        server.push(Reply::text(format!("Round {round} done.")));
        let prompts = [format!("round {round}, first"), format!("round {round}, second")];
        let mut children: Vec<Child> = prompts
            .iter()
            .map(|prompt| spawn(&run, &["exec", "resume", "--last", prompt]))
            .collect();
        // The refused one ends on its own; the writer waits at the gate until then.
        let loser = first_to_exit(&mut children);
        let winner = 1 - loser;
        let winner_pid = children[winner].id();
        std::fs::write(cwd.path().join(&release), "").unwrap();
        let outputs: Vec<Output> =
            children.into_iter().map(|child| child.wait_with_output().unwrap()).collect();

        let (won, lost) = (&outputs[winner], &outputs[loser]);
        assert!(won.status.success(), "round {round}: {}", stderr(won));
        assert_eq!(stdout(won), format!("Round {round} done.\n"));
        assert_eq!(lost.status.code(), Some(2), "round {round}: {}", stderr(lost));
        assert!(
            stderr(lost).contains(&in_use_message(&id, winner_pid)),
            "round {round}: {}",
            stderr(lost)
        );
        assert_eq!(stdout(lost), "");
        assert!(!home.path().join(format!("sessions/{id}.lock")).exists(), "round {round}");
        assert_valid(home.path(), &id);
        assert_eq!(
            session_ids(home.path()),
            std::slice::from_ref(&id),
            "round {round}: no new session"
        );
    }
    // Each round's winner asked the model twice (gate, answer); no loser ever did.
    assert_eq!(server.requests().len(), 1 + 3 * 2);
    let log = codecoder_session::load(&home.path().join(format!("sessions/{id}.jsonl"))).unwrap();
    assert_eq!(log.trace.last_turn(), 4);
}

/// A holder killed with SIGKILL leaves a pid file but no lock: the session resumes (the
/// killed turn closed as interrupted) and validates. While it lived, resume and rm were refused.
#[test]
fn a_holder_killed_with_sigkill_blocks_nothing() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let script = Script::new().reply(Reply::text("First.")).reply(Reply::endless_text());
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "first question"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let [id] = session_ids(home.path()).try_into().unwrap();

    let mut holder = spawn(&run, &["exec", "resume", &id, "go on forever"]);
    server.wait_for_requests(2, PATIENCE).unwrap();
    let pid = holder.id();
    let sidecar = home.path().join(format!("sessions/{id}.lock"));
    assert_eq!(std::fs::read_to_string(&sidecar).unwrap(), format!("{pid}\n"));

    let out = run.run(&["exec", "resume", &id, "too soon"], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains(&in_use_message(&id, pid)), "{}", stderr(&out));
    let out = codecoder(home.path(), &["sessions", "rm", &id]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains(&in_use_message(&id, pid)), "{}", stderr(&out));
    assert_eq!(session_ids(home.path()), std::slice::from_ref(&id));
    // Forking only reads: allowed while it is held.
    let out = codecoder(home.path(), &["sessions", "fork", &id]);
    assert!(out.status.success(), "{}", stderr(&out));
    let fork_id = stdout(&out).trim().to_owned();
    assert_valid(home.path(), &fork_id);

    holder.kill().unwrap();
    let status = holder.wait().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9));
    server.wait_for_disconnects(1, PATIENCE).unwrap();
    assert!(sidecar.exists(), "SIGKILL leaves the pid file behind");

    server.push(Reply::text("Back again."));
    let out = run.run(&["exec", "resume", &id, "again"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Back again.\n");
    assert!(!sidecar.exists());
    assert_valid(home.path(), &id);
    let log = codecoder_session::load(&home.path().join(format!("sessions/{id}.jsonl"))).unwrap();
    let outcomes: Vec<(u32, TurnOutcome)> = log
        .records()
        .filter_map(|record| match &record.body {
            RecordBody::TurnEnd { turn, outcome, .. } => Some((turn.get(), outcome.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        outcomes,
        [(1, TurnOutcome::Completed), (2, TurnOutcome::Interrupted), (3, TurnOutcome::Completed)]
    );
    // Free now: rm works.
    let out = codecoder(home.path(), &["sessions", "rm", &id]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Writes a session with one turn in `cwd` straight through the library.
fn write_session(store: &SessionStore, cwd: &str, question: &str) -> PathBuf {
    let config = WriterConfig {
        fsync: FsyncPolicy::Never,
        blob_threshold: 16 * 1024,
        clock: Arc::new(ManualClock::new(1_764_000_000_000, 1000)),
    };
    let new = NewSession {
        cwd: cwd.to_owned(),
        model: "test-model".into(),
        provider: "fake".into(),
        config_hash: None,
        parent: None,
    };
    let mut writer = store.create(new, config).unwrap();
    let turn = TurnId::new(1);
    for body in [
        RecordBody::TurnStart { turn },
        RecordBody::UserMessage { message: Message::user_text(question) },
        RecordBody::TurnEnd { turn, outcome: TurnOutcome::Completed, usage: Default::default() },
    ] {
        writer.append(body).unwrap();
    }
    writer.path().unwrap().to_owned()
}

/// Garbage in the index file, or a directory in its place: `sessions list`, `exec resume
/// --last` and `exec` work, and say what happened to the index as a warning.
#[test]
fn a_corrupt_or_unusable_index_is_a_warning() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let script = Script::new().reply(Reply::text("First.")).when_exhausted(Reply::text("More."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "first question"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let [id] = session_ids(home.path()).try_into().unwrap();
    let index = home.path().join("sessions/index/sessions.sqlite");
    let garbage: Vec<u8> =
        (0..8192u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();

    let damage: [(&str, &dyn Fn()); 2] = [
        ("garbage", &|| {
            std::fs::create_dir_all(index.parent().unwrap()).unwrap();
            std::fs::write(&index, &garbage).unwrap();
        }),
        ("a directory", &|| {
            let _ = std::fs::remove_file(&index);
            std::fs::create_dir_all(index.join("inside")).unwrap();
        }),
    ];
    for (what, damage) in damage {
        damage();
        let out = codecoder(home.path(), &["sessions", "list"]);
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        assert!(stdout(&out).contains(&id), "{what}: {}", stdout(&out));
        assert!(stderr(&out).starts_with("warning: session index "), "{what}: {}", stderr(&out));

        damage();
        let out = run.run(&["exec", "resume", "--last", "more"], "");
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        assert_eq!(stdout(&out), "More.\n", "{what}");
        assert!(stderr(&out).contains("warning: session index "), "{what}: {}", stderr(&out));
        assert_eq!(session_ids(home.path()), std::slice::from_ref(&id), "{what}: resumed, not new");

        damage();
        let out = run.run(&["exec", "a new one"], "");
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        std::fs::remove_file(home.path().join(format!("sessions/{}.jsonl", newest(home.path()))))
            .unwrap();
    }
    assert_valid(home.path(), &id);
}

/// The session id other than the first one made (the one `exec` just started).
fn newest(home: &Path) -> String {
    session_ids(home).pop().unwrap()
}

/// Several `sessions list` (each refreshes the index) and `sessions reindex` at once, over logs
/// that change between rounds: none fails, none falls back ("database is locked" or otherwise),
/// and they all list every session.
#[test]
fn concurrent_lists_and_reindexes_share_the_index() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let mut paths: Vec<PathBuf> =
        (0..40).map(|i| write_session(&store, "/repo", &format!("question {i}"))).collect();
    for round in 0..3 {
        let mut children: Vec<(&str, Child)> = Vec::new();
        for n in 0..6 {
            let args: &[&str] =
                if n % 3 == 2 { &["sessions", "reindex"] } else { &["sessions", "list", "--json"] };
            let child = Command::new(env!("CARGO_BIN_EXE_codecoder"))
                .args(args)
                .env_clear()
                .env("CODECODER_HOME", home.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            children.push((args[1], child));
        }
        for (what, child) in children {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "round {round} {what}: {}", stderr(&out));
            assert_eq!(stderr(&out), "", "round {round} {what}");
            if what == "list" {
                let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout(&out)).unwrap();
                assert_eq!(rows.len(), paths.len(), "round {round}");
            }
        }
        // Change half the logs and add some, so the next round has rows to rewrite.
        for path in paths.iter().step_by(2) {
            let config = WriterConfig { fsync: FsyncPolicy::Never, ..WriterConfig::standard() };
            let (loaded, mut writer) = store.resume(path, config).unwrap();
            let turn = TurnId::new(loaded.trace.last_turn() + 1);
            writer.append(RecordBody::TurnStart { turn }).unwrap();
            writer
                .append(RecordBody::TurnEnd {
                    turn,
                    outcome: TurnOutcome::Completed,
                    usage: Default::default(),
                })
                .unwrap();
        }
        paths.extend((0..5).map(|i| write_session(&store, "/repo", &format!("added {round}.{i}"))));
    }
}

/// `sessions fork` of a log written by a newer codecoder keeps the record it does not know.
#[test]
fn fork_keeps_a_record_of_unknown_type() {
    let home = tempfile::tempdir().unwrap();
    let golden =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../session/tests/golden/unknown_type.jsonl");
    let parent = codecoder_session::load(&golden).unwrap();
    let parent_id = parent.meta.session_id.to_string();
    std::fs::create_dir_all(home.path().join("sessions")).unwrap();
    std::fs::copy(&golden, home.path().join(format!("sessions/{parent_id}.jsonl"))).unwrap();

    let out = codecoder(home.path(), &["sessions", "fork", &parent_id]);
    assert!(out.status.success(), "{}", stderr(&out));
    let fork_id = stdout(&out).trim().to_owned();
    let report = assert_valid(home.path(), &fork_id);
    assert!(
        report.contains("note: line 4: record type `bookmark` is unknown to this version; kept"),
        "{report}"
    );
    let fork =
        codecoder_session::load(&home.path().join(format!("sessions/{fork_id}.jsonl"))).unwrap();
    let unknown: Vec<_> = fork.unknown().collect();
    assert_eq!(unknown.len(), 1);
    assert_eq!(unknown[0].raw["files"], serde_json::json!(["src/lib.rs"]));
    assert!(matches!(fork.entries[3], Entry::Unknown(_)));
    assert_eq!(fork.records().count(), parent.records().count());
}
