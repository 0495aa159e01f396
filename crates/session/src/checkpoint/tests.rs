//! Unit tests of checkpoints: capture, planning and applying a rewind, the grammar of the
//! `checkpoint` and `rewind` records, and the projection of a conversation rewind.

use std::path::Path;

use codecoder_protocol::{
    Message, MessageId, MessageItem, Record, RecordBody, RewindRecord, Role, SessionId,
    SessionMeta, StepId, TurnId, TurnOutcome, Usage,
};
use pretty_assertions::assert_eq;

use super::{TurnCapture, apply, content_hash, live_checkpoints, plan_rewind};
use crate::{BlobStore, Error, Projection, SessionTrace, TraceError};

fn numbered(bodies: Vec<RecordBody>) -> Vec<Record> {
    bodies.into_iter().zip(1..).map(|(body, seq)| Record { seq, ts: seq, body }).collect()
}

fn meta() -> RecordBody {
    RecordBody::SessionMeta(SessionMeta {
        session_id: SessionId::new(),
        format_version: 1,
        cwd: "/w".to_owned(),
        model: "m".to_owned(),
        provider: "p".to_owned(),
        config_hash: None,
        cli_version: "0".to_owned(),
        forked_from: None,
        parent: None,
    })
}

fn user(text: &str) -> RecordBody {
    RecordBody::UserMessage {
        message: Message {
            id: MessageId::new(),
            role: Role::User,
            items: vec![MessageItem::Text { text: text.to_owned() }],
        },
    }
}

fn turn(n: u32, inner: Vec<RecordBody>) -> Vec<RecordBody> {
    let turn = TurnId::new(n);
    let mut out = vec![RecordBody::TurnStart { turn }];
    out.extend(inner);
    out.push(RecordBody::TurnEnd {
        turn,
        outcome: TurnOutcome::Completed,
        usage: Usage::default(),
    });
    out
}

fn rewind(n: u32, conversation: bool, files: bool) -> RecordBody {
    RecordBody::Rewind(RewindRecord {
        turn: TurnId::new(n),
        conversation,
        files,
        restored: Vec::new(),
        skipped: Vec::new(),
    })
}

fn first_violation(records: &[Record]) -> Option<(usize, &'static str)> {
    let mut trace = SessionTrace::new();
    for (index, record) in records.iter().enumerate() {
        match trace.validate(record) {
            Ok(transition) => trace.commit(transition),
            Err(err) => return Some((index, err.kind())),
        }
    }
    None
}

fn write(dir: &Path, name: &str, text: &str) {
    fs_err::write(dir.join(name), text).unwrap();
}

fn read(dir: &Path, name: &str) -> Option<String> {
    fs_err::read_to_string(dir.join(name)).ok()
}

/// One turn in `dir`: `kept` edited, `new` created, `old` deleted. Returns its checkpoint.
fn one_turn(dir: &Path, blobs: &BlobStore, n: u32) -> RecordBody {
    let mut capture = TurnCapture::new(blobs.clone());
    capture.before_write(&dir.join("kept"));
    write(dir, "kept", &format!("turn {n}\n"));
    // A second write of the same path keeps the first prior content.
    capture.before_write(&dir.join("kept"));
    write(dir, "kept", &format!("turn {n}, again\n"));
    capture.before_write(&dir.join(format!("new{n}")));
    write(dir, &format!("new{n}"), "new\n");
    capture.add_prior(
        &dir.join("old"),
        read(dir, "old").as_deref().map(str::as_bytes),
        codecoder_protocol::ChangedBy::Shell,
    );
    let _ = fs_err::remove_file(dir.join("old"));
    RecordBody::Checkpoint(capture.finish(TurnId::new(n)).unwrap())
}

#[test]
fn a_turn_is_captured_and_restored_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = BlobStore::new(dir.path().join("blobs"));
    write(dir.path(), "kept", "original\n");
    write(dir.path(), "old", "old\n");
    let checkpoint = one_turn(dir.path(), &blobs, 1);
    let RecordBody::Checkpoint(record) = &checkpoint else { unreachable!() };
    assert_eq!(record.files.len(), 3);
    assert_eq!(record.files[0].after, content_hash(&dir.path().join("kept")).unwrap());
    assert_eq!(record.files[1].before, None, "created: absent before");
    assert_eq!(record.files[2].after, None, "deleted: absent after");

    let records = numbered(vec![checkpoint]);
    let plan = plan_rewind(records.iter(), None).unwrap();
    assert_eq!(plan.turn, TurnId::new(1));
    assert!(plan.files.iter().all(|file| !file.conflicts()));
    let report = apply(&plan, &blobs, false).unwrap();
    assert_eq!(report.restored.len(), 3);
    assert_eq!(read(dir.path(), "kept").as_deref(), Some("original\n"));
    assert_eq!(read(dir.path(), "new1"), None);
    assert_eq!(read(dir.path(), "old").as_deref(), Some("old\n"));
    // Run again (a crash before the rewind was logged): everything counts as restored.
    let plan = plan_rewind(records.iter(), None).unwrap();
    assert!(plan.files.iter().all(|file| !file.conflicts()));
    assert_eq!(apply(&plan, &blobs, false).unwrap().restored.len(), 3);
}

#[test]
fn a_file_changed_outside_is_skipped_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = BlobStore::new(dir.path().join("blobs"));
    write(dir.path(), "kept", "original\n");
    let records = numbered(vec![one_turn(dir.path(), &blobs, 1)]);
    write(dir.path(), "kept", "the person's edit\n");
    let plan = plan_rewind(records.iter(), None).unwrap();
    let conflicts: Vec<_> = plan.files.iter().filter(|f| f.conflicts()).map(|f| &f.path).collect();
    assert_eq!(conflicts, [&dir.path().join("kept")]);
    let report = apply(&plan, &blobs, false).unwrap();
    assert_eq!(report.skipped, [dir.path().join("kept")]);
    assert_eq!(read(dir.path(), "kept").as_deref(), Some("the person's edit\n"));
    assert_eq!(read(dir.path(), "new1"), None, "the others are restored");
    apply(&plan, &blobs, true).unwrap();
    assert_eq!(read(dir.path(), "kept").as_deref(), Some("original\n"));
}

#[test]
fn rewinding_two_turns_restores_the_oldest_prior_content() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = BlobStore::new(dir.path().join("blobs"));
    write(dir.path(), "kept", "original\n");
    let first = one_turn(dir.path(), &blobs, 1);
    let second = one_turn(dir.path(), &blobs, 2);
    let records = numbered(vec![first, second]);
    // Plain undo: the newest turn.
    let plan = plan_rewind(records.iter(), None).unwrap();
    assert_eq!(plan.turns, [TurnId::new(2)]);
    let plan = plan_rewind(records.iter(), Some(TurnId::new(1))).unwrap();
    assert_eq!(plan.turns, [TurnId::new(2), TurnId::new(1)]);
    apply(&plan, &blobs, false).unwrap();
    assert_eq!(read(dir.path(), "kept").as_deref(), Some("original\n"));
    assert_eq!(read(dir.path(), "new1"), None);
    assert_eq!(read(dir.path(), "new2"), None);
}

#[test]
fn a_files_rewind_takes_its_turns_out_of_play() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = BlobStore::new(dir.path().join("blobs"));
    let first = one_turn(dir.path(), &blobs, 1);
    let second = one_turn(dir.path(), &blobs, 2);
    let records = numbered(vec![first.clone(), second.clone(), rewind(2, false, true)]);
    assert_eq!(live_checkpoints(records.iter()).len(), 1);
    assert_eq!(plan_rewind(records.iter(), None).unwrap().turn, TurnId::new(1));
    // A conversation-only rewind leaves the files' checkpoints in play.
    let records = numbered(vec![first, second, rewind(2, true, false)]);
    assert_eq!(live_checkpoints(records.iter()).len(), 2);
    let records = numbered(vec![rewind(1, false, true)]);
    assert!(matches!(plan_rewind(records.iter(), None), Err(Error::NothingToUndo { turn: None })));
}

#[test]
fn checkpoint_and_rewind_records_have_their_place_in_the_grammar() {
    let checkpoint = |n: u32| {
        RecordBody::Checkpoint(codecoder_protocol::CheckpointRecord {
            turn: TurnId::new(n),
            files: Vec::new(),
            notes: Vec::new(),
        })
    };
    let step = |n: u32| RecordBody::StepStart { turn: TurnId::new(n), step: StepId::new(1) };
    let mut valid = vec![meta()];
    valid.extend(turn(1, vec![user("hi"), checkpoint(1)]));
    valid.push(rewind(1, true, true));
    assert_eq!(first_violation(&numbered(valid)), None);

    let mut outside = vec![meta()];
    outside.extend(turn(1, vec![user("hi")]));
    outside.push(checkpoint(1));
    assert_eq!(first_violation(&numbered(outside)), Some((4, "no_open_turn")));

    let mut in_step = vec![meta()];
    in_step.extend(turn(1, vec![step(1), checkpoint(1)]));
    assert_eq!(first_violation(&numbered(in_step)), Some((3, "step_still_open")));

    let mut wrong_turn = vec![meta()];
    wrong_turn.extend(turn(1, vec![checkpoint(2)]));
    assert_eq!(first_violation(&numbered(wrong_turn)), Some((2, "turn_mismatch")));

    let mut in_turn = vec![meta(), RecordBody::TurnStart { turn: TurnId::new(1) }];
    in_turn.push(rewind(1, true, false));
    assert_eq!(first_violation(&numbered(in_turn)), Some((2, "turn_still_open")));

    let mut unknown_turn = vec![meta()];
    unknown_turn.extend(turn(1, Vec::new()));
    unknown_turn.push(rewind(2, true, false));
    assert_eq!(first_violation(&numbered(unknown_turn)), Some((3, "no_such_turn")));
    assert_eq!(
        TraceError::NoSuchTurn { found: TurnId::new(2) }.to_string(),
        "rewind to turn 2, which never began"
    );
}

#[test]
fn a_conversation_rewind_cuts_the_history_back_to_where_the_turn_began() {
    let mut bodies = vec![meta()];
    bodies.extend(turn(1, vec![user("one")]));
    bodies.extend(turn(2, vec![user("two")]));
    bodies.extend(turn(3, vec![user("three")]));
    bodies.push(rewind(2, true, false));
    bodies.extend(turn(4, vec![user("four")]));
    let mut projection = Projection::new();
    for record in &numbered(bodies) {
        projection.apply(record);
    }
    let texts: Vec<String> = projection.history().iter().map(Message::text).collect();
    assert_eq!(texts, ["one", "four"]);
    assert!(projection.can_rewind_to(TurnId::new(1)));
    assert!(!projection.can_rewind_to(TurnId::new(2)), "rewound away");

    // A files-only rewind leaves the history; a compaction hides the turns before it.
    let mut bodies = vec![meta()];
    bodies.extend(turn(1, vec![user("one")]));
    bodies.push(rewind(1, false, true));
    bodies.extend(turn(
        2,
        vec![user("two"), RecordBody::Compaction { history: Vec::new(), note: None }],
    ));
    bodies.extend(turn(3, vec![user("three")]));
    let mut projection = Projection::new();
    for record in &numbered(bodies) {
        projection.apply(record);
    }
    assert!(!projection.can_rewind_to(TurnId::new(1)));
    assert!(!projection.can_rewind_to(TurnId::new(2)));
    assert!(projection.can_rewind_to(TurnId::new(3)));
}

#[test]
fn a_blob_name_that_is_no_hash_is_refused_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = BlobStore::new(dir.path().join("blobs"));
    for name in ["aé", "../../etc/passwd", ""] {
        assert!(matches!(blobs.get_verified(name), Err(Error::BlobDamaged { .. })), "{name}");
    }
    let sha = blobs.put_unsynced(b"content").unwrap();
    assert_eq!(blobs.get_verified(&sha).unwrap(), b"content");
    fs_err::write(blobs.path_of(&sha), b"cut").unwrap();
    assert!(matches!(blobs.get_verified(&sha), Err(Error::BlobDamaged { .. })));
    // Stored again, a damaged blob (another size) is written whole.
    blobs.put_unsynced(b"content").unwrap();
    assert_eq!(blobs.get_verified(&sha).unwrap(), b"content");
}

#[test]
fn a_restore_replaces_a_symlink_instead_of_writing_through_it() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = BlobStore::new(dir.path().join("blobs"));
    write(dir.path(), "victim", "not the session's\n");
    write(dir.path(), "kept", "original\n");
    let mut capture = TurnCapture::new(blobs.clone());
    capture.before_write(&dir.path().join("kept"));
    // The turn replaced the file with a link to a file it never touched.
    fs_err::remove_file(dir.path().join("kept")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("victim"), dir.path().join("kept")).unwrap();
    let records = numbered(vec![RecordBody::Checkpoint(capture.finish(TurnId::new(1)).unwrap())]);
    let plan = plan_rewind(records.iter(), None).unwrap();
    apply(&plan, &blobs, true).unwrap();
    assert_eq!(read(dir.path(), "victim").as_deref(), Some("not the session's\n"));
    assert_eq!(read(dir.path(), "kept").as_deref(), Some("original\n"));
    assert!(!fs_err::symlink_metadata(dir.path().join("kept")).unwrap().file_type().is_symlink());
}

#[test]
fn a_file_and_a_directory_that_swapped_places_are_both_restored() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let blobs = BlobStore::new(root.join("blobs"));
    fs_err::create_dir(root.join("dir")).unwrap();
    write(root, "dir/a.txt", "a\n");
    write(root, "file.txt", "f\n");
    let mut capture = TurnCapture::new(blobs.clone());
    capture.before_write(&root.join("dir/a.txt"));
    capture.before_write(&root.join("file.txt"));
    // As the change watcher keeps them: no file was at either path before.
    capture.add_prior(&root.join("dir"), None, codecoder_protocol::ChangedBy::Shell);
    capture.add_prior(&root.join("file.txt/inner"), None, codecoder_protocol::ChangedBy::Shell);
    // `dir` became a file and `file.txt` a directory.
    fs_err::remove_dir_all(root.join("dir")).unwrap();
    write(root, "dir", "x\n");
    fs_err::remove_file(root.join("file.txt")).unwrap();
    fs_err::create_dir(root.join("file.txt")).unwrap();
    write(root, "file.txt/inner", "in\n");
    let records = numbered(vec![RecordBody::Checkpoint(capture.finish(TurnId::new(1)).unwrap())]);
    let plan = plan_rewind(records.iter(), None).unwrap();
    apply(&plan, &blobs, true).unwrap();
    assert_eq!(read(root, "dir/a.txt").as_deref(), Some("a\n"));
    assert_eq!(read(root, "file.txt").as_deref(), Some("f\n"));
}
