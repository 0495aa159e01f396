//! Writer failures that need a crate-private sink (a full disk, a file that cannot sync), the
//! group commit under `FsyncPolicy::Turn` read through the syncer's test-only counters, and
//! concurrent blob writes.

use std::fs::OpenOptions;

use pretty_assertions::assert_eq;
use uuid::Uuid;

use super::*;
use crate::lock::LogLock;
use crate::writer::OpenLog;

/// A lock on a temporary file, for a writer over a device file (`/dev/full`, `/dev/null`) whose
/// own sidecar could not be written beside it.
fn stand_in_lock() -> (tempfile::TempDir, LogLock) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stand-in.jsonl");
    let file = OpenOptions::new().append(true).create(true).open(&path).unwrap();
    let lock = LogLock::acquire(&file, &path).unwrap();
    (dir, lock)
}

/// A full disk: the append is a typed IO error, and neither trace nor projection advance.
#[test]
fn failed_append_leaves_trace_and_projection_alone() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let mut writer = store.create(new_session(), writer_config(FsyncPolicy::Turn)).unwrap();
    writer.append(turn_start(1)).unwrap();
    writer.append(user("first")).unwrap();
    let path = writer.path().unwrap().to_owned();
    drop(writer);
    let loaded = load(&path).unwrap();
    let file_len = fs_err::metadata(&path).unwrap().len();

    let full = OpenOptions::new().append(true).open("/dev/full").unwrap();
    let full = fs_err::File::from_parts(full, "/dev/full");
    let (_lock_dir, lock) = stand_in_lock();
    let mut writer = SessionWriter::from_parts(
        loaded.meta.session_id,
        Some(OpenLog { file: full, len: file_len, lock }),
        Some(store.blobs()),
        loaded.trace.clone(),
        loaded.projection(),
        writer_config(FsyncPolicy::Always),
    )
    .unwrap();
    let history_before = writer.history().to_vec();
    assert_eq!(history_before.len(), 1);
    for body in [user("second"), step_start(1, 1), turn_end(1)] {
        let err = writer.append(body).unwrap_err();
        assert!(matches!(err, Error::Io(_)), "{err:?}");
        assert!(err.to_string().contains("/dev/full"), "{err}");
        assert_eq!(writer.trace(), &loaded.trace);
        assert_eq!(writer.history(), history_before.as_slice());
    }
    // The trace is still usable: a refused record is still refused as such.
    let err = writer.append(step_end(1, 1)).unwrap_err();
    assert!(matches!(err, Error::Trace(TraceError::NoOpenStep { .. })), "{err:?}");
    drop(writer);
    // The real log was never touched.
    assert_eq!(fs_err::metadata(&path).unwrap().len(), file_len);
}

/// An in-memory writer validates and projects like a file writer.
#[test]
fn in_memory_writer_validates_and_projects() {
    let mut writer =
        SessionWriter::in_memory(new_session(), writer_config(FsyncPolicy::Never)).unwrap();
    assert_eq!(writer.path(), None);
    assert!(writer.blobs().is_none());
    assert_eq!(writer.trace().last_seq(), 1);
    assert_eq!(writer.append(turn_start(1)).unwrap(), 2);
    // Large content stays inline without a blob store.
    let big = "x".repeat(1000);
    writer.append(user(&big)).unwrap();
    assert_eq!(writer.history()[0].text(), big);
    let err = writer.append(turn_start(2)).unwrap_err();
    assert!(matches!(err, Error::Trace(TraceError::TurnAlreadyOpen { .. })), "{err:?}");
    assert_eq!(writer.trace().last_seq(), 3);
    writer.sync().unwrap();
}

// ---------------------------------------------------------------------------------------------
// Group commit under `FsyncPolicy::Turn`.

/// Appends one complete turn (`turn_start` … `turn_end`) of five records.
fn append_turn(writer: &mut SessionWriter, turn: u32) {
    for body in
        [turn_start(turn), user("go"), step_start(turn, 1), step_end(turn, 1), turn_end(turn)]
    {
        writer.append(body).unwrap();
    }
}

/// `sync()` returns only once the syncer's synced generation has caught up with the written one,
/// also for records after the last turn boundary.
#[test]
fn turn_sync_waits_until_everything_written_is_synced() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let mut writer = store.create(new_session(), writer_config(FsyncPolicy::Turn)).unwrap();
    for turn in 1..=3 {
        append_turn(&mut writer, turn);
    }
    writer.sync().unwrap();
    let counts = writer.sync_counts().unwrap();
    assert_eq!(counts.written, 16);
    assert_eq!(counts.synced, counts.written);
    // An open turn has asked for no sync; `sync()` still covers it.
    writer.append(turn_start(4)).unwrap();
    writer.append(user("unfinished")).unwrap();
    assert_eq!(writer.sync_counts().unwrap().written, 18);
    writer.sync().unwrap();
    let counts = writer.sync_counts().unwrap();
    assert_eq!(counts.synced, 18);
    // Nothing new: no sync.
    writer.sync().unwrap();
    assert_eq!(writer.sync_counts().unwrap().syncs, counts.syncs);
    // Other policies and in-memory writers have no syncer.
    let never = store.create(new_session(), writer_config(FsyncPolicy::Never)).unwrap();
    assert_eq!(never.sync_counts(), None);
    let in_memory =
        SessionWriter::in_memory(new_session(), writer_config(FsyncPolicy::Turn)).unwrap();
    assert_eq!(in_memory.sync_counts(), None);
}

/// Turn boundaries that arrive while a sync is pending share one sync: the syncer is held at
/// its gate while 100 turns are appended, so at most one request is in flight and one queued.
#[test]
fn turn_syncs_coalesce() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let mut writer = store.create(new_session(), writer_config(FsyncPolicy::Turn)).unwrap();
    writer.sync().unwrap();
    let before = writer.sync_counts().unwrap();
    assert_eq!(before.syncs, 1, "{before:?}");
    {
        let shared = writer.sync_shared().unwrap();
        let _gate = shared.gate.lock().unwrap();
        for turn in 1..=100 {
            append_turn(&mut writer, turn);
        }
    }
    writer.sync().unwrap();
    let after = writer.sync_counts().unwrap();
    assert_eq!(after.written, 501);
    assert_eq!(after.synced, after.written);
    // The one in flight, the one queued, and at most one more for `sync()` itself.
    assert!(after.syncs - before.syncs <= 3, "{after:?}");
    let path = writer.path().unwrap().to_owned();
    drop(writer);
    assert_eq!(load(&path).unwrap().trace.last_turn(), 100);
}

/// A background sync that fails (`/dev/null` takes writes but cannot sync) is sticky: `sync()`
/// and every later `append` return it as `Error::Io`, and the refused appends write nothing.
#[test]
fn failed_turn_sync_is_sticky() {
    let null = OpenOptions::new().append(true).open("/dev/null").unwrap();
    let null = fs_err::File::from_parts(null, "/dev/null");
    let (_lock_dir, lock) = stand_in_lock();
    let mut writer = SessionWriter::from_parts(
        SessionId::from(Uuid::from_u128(1)),
        Some(OpenLog { file: null, len: 0, lock }),
        None,
        SessionTrace::new(),
        Projection::new(),
        writer_config(FsyncPolicy::Turn),
    )
    .unwrap();
    // The records themselves are written; the failure comes later, on the syncer thread (held
    // at its gate here so that it cannot fail before the turn is complete).
    {
        let shared = writer.sync_shared().unwrap();
        let _gate = shared.gate.lock().unwrap();
        writer.append(meta()).unwrap();
        append_turn(&mut writer, 1);
    }
    let trace = writer.trace().clone();
    for _ in 0..2 {
        let err = writer.sync().unwrap_err();
        assert!(matches!(err, Error::Io(_)), "{err:?}");
        assert!(err.to_string().contains("/dev/null"), "{err}");
        assert!(err.to_string().contains("turn-boundary sync failed"), "{err}");
        let err = writer.append(turn_start(2)).unwrap_err();
        assert!(matches!(err, Error::Io(_)), "{err:?}");
        assert_eq!(writer.trace(), &trace);
    }
    assert_eq!(writer.sync_counts().unwrap().written, 6);
    // Dropping a failed writer neither hangs nor panics.
    drop(writer);
}

#[test]
fn threads_storing_the_same_blob_at_once_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = crate::BlobStore::new(dir.path().join("blobs"));
    let bytes = vec![b'x'; 256 * 1024];
    let shas: Vec<String> = std::thread::scope(|scope| {
        let puts: Vec<_> = (0..8).map(|_| scope.spawn(|| blobs.put(&bytes).unwrap())).collect();
        puts.into_iter().map(|put| put.join().unwrap()).collect()
    });
    assert!(shas.iter().all(|sha| *sha == shas[0]));
    assert_eq!(blobs.get_verified(&shas[0]).unwrap(), bytes);
    let left: Vec<_> = fs_err::read_dir(blobs.path_of(&shas[0]).parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "no temporary file left: {left:?}");
}
