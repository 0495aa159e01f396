//! One writer per log: the lock every file writer holds, and what a second taker gets.

use std::io::Write;

use codecoder_session::{Error, SessionStore, load};
use pretty_assertions::assert_eq;

use crate::{config, file_len, new_session, step_start, temp_store, turn_start, user};

/// A session with an open turn, its writer still holding the log.
fn held_session(store: &SessionStore) -> (codecoder_session::SessionWriter, std::path::PathBuf) {
    let mut writer = store.create(new_session("/w"), config(1_000)).unwrap();
    for body in [turn_start(1), user("question"), step_start(1, 1)] {
        writer.append(body).unwrap();
    }
    let path = writer.path().unwrap().to_owned();
    (writer, path)
}

fn sidecar(path: &std::path::Path) -> std::path::PathBuf {
    path.with_extension("lock")
}

#[test]
fn a_second_writer_is_refused_with_the_holders_pid() {
    let (_home, store) = temp_store();
    let (writer, path) = held_session(&store);
    let id = writer.session_id().to_string();
    assert_eq!(
        fs_err::read_to_string(sidecar(&path)).unwrap(),
        format!("{}\n", std::process::id())
    );
    // A line the holder is in the middle of writing: a second writer must not touch it.
    fs_err::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"{\"seq\":5,").unwrap();
    let before = fs_err::read(&path).unwrap();

    let err = store.resume(&path, config(2_000)).unwrap_err();
    match &err {
        Error::Locked { session, pid, path: locked } => {
            assert_eq!(session, &id);
            assert_eq!(*pid, Some(std::process::id()));
            assert_eq!(locked, &path);
        }
        other => panic!("expected Error::Locked, got {other:?}"),
    }
    assert_eq!(
        err.to_string(),
        format!(
            "session {id} is in use by another codecoder process (pid {}); to continue it \
             elsewhere, fork it: codecoder sessions fork {id}",
            std::process::id()
        )
    );
    assert_eq!(fs_err::read(&path).unwrap(), before, "a refused resume changes nothing");

    // Removing it is refused too.
    assert!(matches!(store.remove(&id).unwrap_err(), Error::Locked { .. }));
    assert!(path.exists());

    // Forking only reads it: the complete records are copied, the line being written is not.
    let fork = store.fork(&id, None, config(3_000)).unwrap();
    let fork_path = fork.path().unwrap().to_owned();
    drop(fork);
    let forked = load(&fork_path).unwrap();
    assert_eq!(forked.records().count(), 4 + 2, "4 copied, then step_end and turn_end");
    assert_eq!(forked.torn_tail, None);
    assert_eq!(fs_err::read(&path).unwrap(), before, "the parent is untouched");
    drop(writer);
}

#[test]
fn the_lock_is_released_on_drop() {
    let (_home, store) = temp_store();
    let (writer, path) = held_session(&store);
    let id = writer.session_id().to_string();
    drop(writer);
    assert!(!sidecar(&path).exists(), "the holder removes its pid file");

    let (loaded, writer) = store.resume(&path, config(2_000)).unwrap();
    assert!(loaded.trace.needs_repair());
    assert!(sidecar(&path).exists());
    drop(writer);
    // The repair closed the turn; the log is whole, and free again.
    assert!(!load(&path).unwrap().trace.needs_repair());
    let len = file_len(&path);
    let (_, writer) = store.resume(&path, config(3_000)).unwrap();
    drop(writer);
    assert_eq!(file_len(&path), len);
    store.remove(&id).unwrap();
    assert!(!path.exists());
    assert!(!sidecar(&path).exists());
}

#[test]
fn a_stale_pid_file_without_a_lock_does_not_block() {
    let (_home, store) = temp_store();
    let (writer, path) = held_session(&store);
    drop(writer);
    // What a process killed while holding the lock leaves: the kernel dropped its lock, its pid
    // file stays. Our own pid (alive) and a pid no process has are both just stale text.
    for stale in [std::process::id(), u32::MAX - 1] {
        fs_err::write(sidecar(&path), format!("{stale}\n")).unwrap();
        let (_, writer) = store.resume(&path, config(2_000)).unwrap();
        assert_eq!(
            fs_err::read_to_string(sidecar(&path)).unwrap(),
            format!("{}\n", std::process::id())
        );
        drop(writer);
    }
}

#[test]
fn a_holder_whose_pid_file_is_gone_is_still_refused() {
    let (_home, store) = temp_store();
    let (writer, path) = held_session(&store);
    fs_err::remove_file(sidecar(&path)).unwrap();
    let err = store.resume(&path, config(2_000)).unwrap_err();
    assert!(matches!(err, Error::Locked { pid: None, .. }), "{err:?}");
    assert!(err.to_string().contains("(pid unknown)"), "{err}");
    drop(writer);
}

#[test]
fn a_new_sessions_and_a_forks_writers_hold_their_logs() {
    let (_home, store) = temp_store();
    let (parent, _) = held_session(&store);
    let fork = store.fork(&parent.session_id().to_string(), None, config(2_000)).unwrap();
    for writer in [&parent, &fork] {
        let path = writer.path().unwrap();
        let err = store.resume(path, config(3_000)).unwrap_err();
        assert!(matches!(err, Error::Locked { .. }), "{err:?}");
    }
}
