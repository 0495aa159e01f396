//! `SessionStore` and the loader: resume (repair by appending), fork, find, remove, the
//! projection's handling of compaction, and the loader's treatment of odd files.

use std::io::Write;

use codecoder_protocol::{
    ForkOrigin, Message, Record, RecordBody, Role, SyntheticReason, ToolResultStatus, TurnId,
    TurnOutcome,
};
use codecoder_session::{Error, SessionStore, SessionWriter, load};
use pretty_assertions::assert_eq;

use crate::{
    approval, assistant, config, file_len, new_session, result, started, step_end, step_start,
    temp_store, turn_end, turn_start, user,
};

fn append_all(writer: &mut SessionWriter, bodies: Vec<RecordBody>) {
    for body in bodies {
        writer.append(body).unwrap();
    }
}

/// A session that stopped mid-step: `call_a` started, `call_b` approved but not started,
/// `call_c` answered. Returns the store's guard, the store and the log's path.
fn crashed_session() -> (tempfile::TempDir, SessionStore, std::path::PathBuf) {
    let (home, store) = temp_store();
    let mut writer = store.create(new_session("/w"), config(1_000)).unwrap();
    append_all(
        &mut writer,
        vec![
            turn_start(1),
            user("first"),
            step_start(1, 1),
            assistant("hi", &[]),
            step_end(1, 1),
            turn_end(1),
            turn_start(2),
            user("second"),
            step_start(2, 1),
            assistant("running three", &["call_a", "call_b", "call_c"]),
            started("call_a"),
            approval("call_b"),
            result("call_c", "done"),
        ],
    );
    let path = writer.path().unwrap().to_owned();
    drop(writer);
    (home, store, path)
}

#[test]
fn resume_closes_what_a_crash_left_open_by_appending() {
    let (_home, store, path) = crashed_session();
    // The crash also tore a line.
    let before = fs_err::read(&path).unwrap();
    let mut file = fs_err::OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(br#"{"seq":15,"ts":1,"type":"tool_res"#).unwrap();
    drop(file);

    let (loaded, mut writer) = store.resume(&path, config(50_000)).unwrap();
    let torn = loaded.torn_tail.unwrap();
    assert_eq!(torn.offset, before.len() as u64);
    assert_eq!(torn.line, 15);
    assert!(loaded.trace.needs_repair());
    assert!(!writer.trace().needs_repair());
    assert_eq!(writer.session_id(), loaded.meta.session_id);
    // The writer goes on after the repair.
    let next = writer.append(turn_start(3)).unwrap();
    assert_eq!(next, 19);
    drop(writer);

    let after = fs_err::read(&path).unwrap();
    assert_eq!(&after[..before.len()], before.as_slice(), "complete records were rewritten");
    let repaired = load(&path).unwrap();
    assert!(repaired.torn_tail.is_none());
    let tail: Vec<&Record> = repaired.records().skip(14).collect();
    let seqs: Vec<u64> = tail.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, vec![15, 16, 17, 18, 19]);
    let summary: Vec<String> = tail
        .iter()
        .map(|r| match &r.body {
            RecordBody::ToolResult { result, synthetic } => {
                assert_eq!(result.status, ToolResultStatus::Error);
                format!("result {} {synthetic:?}", result.tool_call_id)
            }
            RecordBody::StepEnd { turn, step, .. } => format!("step_end {turn}.{step}"),
            RecordBody::TurnEnd { turn, outcome, .. } => format!("turn_end {turn} {outcome:?}"),
            other => other.type_name().to_owned(),
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            format!("result call_a {:?}", Some(SyntheticReason::OutcomeUnknown)),
            format!("result call_b {:?}", Some(SyntheticReason::NotStarted)),
            "step_end 2.1".to_owned(),
            format!("turn_end 2 {:?}", TurnOutcome::Interrupted),
            "turn_start".to_owned(),
        ]
    );
    assert_eq!(repaired.trace.open_turn(), Some(TurnId::new(3)));
}

#[test]
fn resume_of_a_clean_log_appends_nothing_and_an_ended_log_stays_ended() {
    let (_home, store) = temp_store();
    let mut writer = store.create(new_session("/w"), config(1_000)).unwrap();
    append_all(&mut writer, vec![turn_start(1), user("x"), turn_end(1)]);
    let path = writer.path().unwrap().to_owned();
    drop(writer);
    let len = file_len(&path);
    let (loaded, mut writer) = store.resume(&path, config(2_000)).unwrap();
    assert!(loaded.repair_plan().is_empty());
    assert_eq!(file_len(&path), len);
    writer.append(RecordBody::SessionEnd).unwrap();
    drop(writer);

    let (_, mut writer) = store.resume(&path, config(3_000)).unwrap();
    let err = writer.append(turn_start(2)).unwrap_err();
    assert!(matches!(err, Error::Trace(ref e) if e.kind() == "after_session_end"), "{err:?}");
}

#[test]
fn fork_mid_turn_leaves_the_parent_untouched() {
    let (_home, store, parent_path) = crashed_session();
    let parent = load(&parent_path).unwrap();
    let parent_bytes = fs_err::read(&parent_path).unwrap();
    // Fork right after the assistant asked for three calls (seq 11).
    let at_record = parent
        .records()
        .find(|r| matches!(r.body, RecordBody::AssistantMessage { .. }) && r.seq > 5)
        .unwrap()
        .clone();
    let at = at_record.seq;
    let parent_id = parent.meta.session_id.to_string();
    let writer = store.fork(&parent_id[..13], Some(at), config(90_000)).unwrap();
    let fork_path = writer.path().unwrap().to_owned();
    let fork_id = writer.session_id();
    drop(writer);

    assert_ne!(fork_path, parent_path);
    assert_ne!(fork_id, parent.meta.session_id);
    assert_eq!(fs_err::read(&parent_path).unwrap(), parent_bytes, "the parent changed");

    let fork = load(&fork_path).unwrap();
    assert!(!fork.trace.needs_repair());
    assert!(fork.torn_tail.is_none());
    assert_eq!(
        fork.meta.forked_from,
        Some(ForkOrigin { session_id: parent.meta.session_id, seq: at })
    );
    assert_eq!(fork.meta.session_id, fork_id);
    assert_eq!(
        (&fork.meta.cwd, &fork.meta.model, &fork.meta.provider),
        (&parent.meta.cwd, &parent.meta.model, &parent.meta.provider)
    );
    // The parent's records up to `at`, then three calls closed as never run, step, turn.
    let parent_bodies: Vec<&RecordBody> =
        parent.records().skip(1).take_while(|r| r.seq <= at).map(|r| &r.body).collect();
    let fork_records: Vec<&Record> = fork.records().skip(1).collect();
    let fork_bodies: Vec<&RecordBody> =
        fork_records.iter().take(parent_bodies.len()).map(|r| &r.body).collect();
    assert_eq!(fork_bodies, parent_bodies);
    let closing: Vec<String> = fork_records[parent_bodies.len()..]
        .iter()
        .map(|r| match &r.body {
            RecordBody::ToolResult { result, synthetic } => {
                format!("{} {synthetic:?}", result.tool_call_id)
            }
            other => other.type_name().to_owned(),
        })
        .collect();
    let not_started = format!("{:?}", Some(SyntheticReason::NotStarted));
    assert_eq!(
        closing,
        vec![
            format!("call_a {not_started}"),
            format!("call_b {not_started}"),
            format!("call_c {not_started}"),
            "step_end".to_owned(),
            "turn_end".to_owned(),
        ]
    );

    // Without --at the fork takes everything; a seq the parent lacks is an error.
    let whole = store.fork(&parent_id, None, config(95_000)).unwrap();
    let whole_path = whole.path().unwrap().to_owned();
    drop(whole);
    let whole = load(&whole_path).unwrap();
    assert_eq!(whole.meta.forked_from.unwrap().seq, parent.trace.last_seq());
    assert!(!whole.trace.needs_repair());
    let err = store.fork(&parent_id, Some(999), config(99_000)).unwrap_err();
    assert!(matches!(err, Error::NoSuchSeq { seq: 999, .. }), "{err:?}");
    assert_eq!(fs_err::read(&parent_path).unwrap(), parent_bytes, "the parent changed");
    assert_eq!(store.session_files().unwrap().len(), 3);
}

#[test]
fn fork_of_an_ended_session_can_go_on() {
    let (_home, store) = temp_store();
    let mut writer = store.create(new_session("/w"), config(1_000)).unwrap();
    append_all(&mut writer, vec![turn_start(1), user("x"), turn_end(1), RecordBody::SessionEnd]);
    let id = writer.session_id().to_string();
    drop(writer);
    let mut fork = store.fork(&id, None, config(2_000)).unwrap();
    assert!(!fork.trace().is_ended());
    fork.append(turn_start(2)).unwrap();
}

#[test]
fn find_by_id_prefix_and_path_then_remove() {
    let (_home, store) = temp_store();
    assert!(store.session_files().unwrap().is_empty());
    let mut ids = Vec::new();
    for n in 0..3 {
        let writer = store.create(new_session("/w"), config(1_000 * n)).unwrap();
        ids.push(writer.session_id().to_string());
    }
    // Files that are not logs are ignored.
    fs_err::write(store.sessions_dir().join("notes.txt"), "x").unwrap();
    fs_err::write(store.sessions_dir().join("not-an-id.jsonl"), "x").unwrap();
    let files = store.session_files().unwrap();
    assert_eq!(files.len(), 3);
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(files.iter().map(|(id, _)| id.to_string()).collect::<Vec<_>>(), sorted);

    // The shortest prefix of ids[0] no other id shares.
    let unique_len = (1..=ids[0].len())
        .find(|&n| ids[1..].iter().all(|other| !other.starts_with(&ids[0][..n])))
        .unwrap();
    let expected = store.sessions_dir().join(format!("{}.jsonl", ids[0]));
    assert_eq!(store.find(&ids[0][..unique_len]).unwrap(), expected);
    assert_eq!(store.find(&ids[0]).unwrap(), expected);
    assert_eq!(store.find(&ids[0][..unique_len].to_ascii_uppercase()).unwrap(), expected);
    // All three were created in the same moment or so: they share their first digit.
    let common = &ids[0][..1];
    assert!(ids.iter().all(|id| id.starts_with(common)));
    let err = store.find(common).unwrap_err();
    assert!(matches!(err, Error::Ambiguous { count: 3, .. }), "{err:?}");
    let err = store.find("ffffffff").unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    // A path is taken as is.
    let path = expected.to_str().unwrap();
    assert_eq!(store.find(path).unwrap(), expected);
    let err = store.find("/nonexistent/x.jsonl").unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");

    let removed = store.remove(&ids[0][..unique_len]).unwrap();
    assert_eq!(removed, expected);
    assert!(!expected.exists());
    assert!(matches!(store.find(&ids[0]).unwrap_err(), Error::NotFound { .. }));
    assert_eq!(store.session_files().unwrap().len(), 2);
}

#[test]
fn projection_starts_from_the_newest_compaction() {
    let (_home, store) = temp_store();
    let mut writer = store.create(new_session("/w"), config(1_000)).unwrap();
    let compaction =
        |text: &str| RecordBody::Compaction { history: vec![Message::user_text(text)], note: None };
    append_all(
        &mut writer,
        vec![
            turn_start(1),
            user("one"),
            step_start(1, 1),
            assistant("a1", &["c1"]),
            result("c1", "r1"),
            step_end(1, 1),
            compaction("summary 1"),
            step_start(1, 2),
            assistant("a2", &[]),
            step_end(1, 2),
            turn_end(1),
            compaction("summary 2"),
            turn_start(2),
            user("two"),
        ],
    );
    let texts = |history: &[Message]| -> Vec<(Role, String)> {
        history.iter().map(|m| (m.role, m.text())).collect()
    };
    let expected = vec![(Role::User, "summary 2".to_owned()), (Role::User, "two".to_owned())];
    assert_eq!(texts(writer.history()), expected);
    let path = writer.path().unwrap().to_owned();
    drop(writer);
    let loaded = load(&path).unwrap();
    assert_eq!(texts(loaded.projection().history()), expected);

    // Up to the first compaction and the step after it.
    let records: Vec<Record> = loaded.records().take(11).cloned().collect();
    let mut projection = codecoder_session::Projection::new();
    for record in &records {
        projection.apply(record);
    }
    assert_eq!(
        texts(projection.history()),
        vec![(Role::User, "summary 1".to_owned()), (Role::Assistant, "a2".to_owned())]
    );
}

#[test]
fn tool_messages_in_the_projection_have_stable_ids() {
    let (_home, store) = temp_store();
    let mut writer = store.create(new_session("/w"), config(1_000)).unwrap();
    append_all(
        &mut writer,
        vec![turn_start(1), user("x"), step_start(1, 1), assistant("", &["a", "b"])],
    );
    writer.append(result("b", "rb")).unwrap();
    writer.append(result("a", "ra")).unwrap();
    let path = writer.path().unwrap().to_owned();
    let live = writer.history().to_vec();
    drop(writer);
    let first = load(&path).unwrap().projection().into_history();
    let second = load(&path).unwrap().projection().into_history();
    assert_eq!(first, live);
    assert_eq!(first, second);
    assert_ne!(first[2].id, first[3].id);
    assert_eq!(first[2].role, Role::Tool);
}

#[test]
fn loader_handles_blank_lines_bad_last_lines_and_empty_files() {
    let (_home, store, path) = crashed_session();
    let good = fs_err::read_to_string(&path).unwrap();
    let lines: Vec<&str> = good.lines().collect();
    let dir = store.sessions_dir();

    // Blank lines are skipped (but counted).
    let blank = dir.join("blank.jsonl");
    fs_err::write(&blank, format!("{}\n\n  \n{}\n", lines[0], lines[1..].join("\n"))).unwrap();
    let loaded = load(&blank).unwrap();
    assert_eq!(loaded.records().count(), lines.len());
    assert_eq!(loaded.line_count, lines.len() + 2);

    // A last line that ends with a newline but does not parse is torn too.
    let bad_last = dir.join("bad_last.jsonl");
    fs_err::write(&bad_last, format!("{good}{{\"seq\":99,\"ty\n")).unwrap();
    let loaded = load(&bad_last).unwrap();
    let torn = loaded.torn_tail.unwrap();
    assert_eq!((torn.line, torn.offset), (lines.len() + 1, good.len() as u64));
    assert_eq!(loaded.records().count(), lines.len());

    // A complete record missing only its newline is torn: it may not have been written whole.
    let no_newline = dir.join("no_newline.jsonl");
    fs_err::write(&no_newline, good.trim_end()).unwrap();
    let loaded = load(&no_newline).unwrap();
    assert_eq!(loaded.torn_tail.unwrap().line, lines.len());
    assert_eq!(loaded.records().count(), lines.len() - 1);

    // Nothing but a torn meta, or nothing at all: empty.
    for (name, content) in [("empty.jsonl", ""), ("torn_meta.jsonl", &lines[0][..30])] {
        let file = dir.join(name);
        fs_err::write(&file, content).unwrap();
        let err = load(&file).unwrap_err();
        assert!(matches!(err, Error::Empty { .. }), "{name}: {err:?}");
        assert!(err.to_string().contains(name), "{err}");
    }

    // One whole line that is no record at all is no torn write: the error names it.
    let not_json = dir.join("not_json.jsonl");
    fs_err::write(&not_json, "not json\n").unwrap();
    let err = load(&not_json).unwrap_err();
    assert!(matches!(err, Error::Corrupt { line: 1, .. }), "{err:?}");
    assert!(err.to_string().contains("not_json.jsonl:1: not a session record"), "{err}");

    // A first record that is not the meta.
    let headless = dir.join("headless.jsonl");
    fs_err::write(&headless, format!("{}\n", lines[1..].join("\n"))).unwrap();
    let err = load(&headless).unwrap_err();
    match err {
        Error::Invalid { line: 1, source, .. } => assert_eq!(source.kind(), "missing_meta"),
        other => panic!("expected Error::Invalid, got {other:?}"),
    }

    // A missing file: an IO error naming it.
    let err = load(&dir.join("missing.jsonl")).unwrap_err();
    assert!(matches!(err, Error::Io(_)), "{err:?}");
    assert!(err.to_string().contains("missing.jsonl"), "{err}");
}

/// A fork copies records of types this version does not know (a newer codecoder wrote them),
/// renumbered like the others, so a log survives being forked by an older version.
#[test]
fn fork_keeps_records_of_unknown_types() {
    let (_home, store) = temp_store();
    let golden =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/unknown_type.jsonl");
    // The parent's seqs go up by ten, so the fork's renumbering shows.
    let parent_text: String = fs_err::read_to_string(&golden)
        .unwrap()
        .lines()
        .map(|line| {
            let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
            value["seq"] = (value["seq"].as_u64().unwrap() * 10).into();
            format!("{value}\n")
        })
        .collect();
    fs_err::create_dir_all(store.sessions_dir()).unwrap();
    let parent_id = load(&golden).unwrap().meta.session_id;
    let parent_path = store.path_of(parent_id);
    fs_err::write(&parent_path, &parent_text).unwrap();
    let parent = load(&parent_path).unwrap();
    assert_eq!(parent.unknown().count(), 1);

    let writer = store.fork(&parent_id.to_string(), None, config(1_000)).unwrap();
    let fork_path = writer.path().unwrap().to_owned();
    drop(writer);
    let fork = load(&fork_path).unwrap();
    let unknown: Vec<_> = fork.unknown().collect();
    assert_eq!(unknown.len(), 1);
    assert_eq!((unknown[0].line, unknown[0].seq), (4, 4));
    assert_eq!(unknown[0].type_name, "bookmark");
    assert_eq!(unknown[0].raw["files"], serde_json::json!(["src/lib.rs"]));
    assert_eq!(unknown[0].raw["label"], "before edit");
    assert_eq!(fork.records().count(), parent.records().count());
    let seqs: Vec<u64> = fork.records().map(|record| record.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 5, 6, 7, 8]);
    assert_eq!(fs_err::read_to_string(&parent_path).unwrap(), parent_text);

    // Forked at the unknown record itself: it is the last copied record, and the turn it is in
    // is closed after it.
    let writer = store.fork(&parent_id.to_string(), Some(40), config(2_000)).unwrap();
    let fork_path = writer.path().unwrap().to_owned();
    drop(writer);
    let fork = load(&fork_path).unwrap();
    let kinds: Vec<String> = fork
        .entries
        .iter()
        .map(|entry| match entry {
            codecoder_session::Entry::Record(record) => record.body.type_name().to_owned(),
            codecoder_session::Entry::Unknown(unknown) => format!("unknown {}", unknown.type_name),
        })
        .collect();
    assert_eq!(
        kinds,
        ["session_meta", "turn_start", "user_message", "unknown bookmark", "turn_end"]
    );
    assert!(!fork.trace.needs_repair());
}

#[test]
fn logs_are_private_to_their_user() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    // A home the store creates is private with everything in it; one that exists keeps its mode.
    let fresh = home.path().join("fresh-home");
    let store = SessionStore::new(&fresh);
    let writer = store.create(new_session("/w"), config(1_000)).unwrap();
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&fresh), 0o700);
    assert_eq!(mode(&store.sessions_dir()), 0o700);
    assert_eq!(mode(writer.path().unwrap()), 0o600, "the log itself");
    let (_shared, store) = temp_store();
    std::fs::set_permissions(store.home(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let writer = store.create(new_session("/w"), config(1_000)).unwrap();
    assert_eq!(mode(store.home()), 0o755, "an existing home is left as it is");
    assert_eq!(mode(&store.sessions_dir()), 0o700);
    assert_eq!(mode(writer.path().unwrap()), 0o600);
}
