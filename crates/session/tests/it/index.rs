//! `Index`: the SQLite cache of session summaries follows the files, which are the truth.

use codecoder_protocol::Record;
use codecoder_session::{Index, RefreshStats, SessionStore, load};
use pretty_assertions::assert_eq;

use crate::{config, new_session, step_end, step_start, temp_store, turn_end, turn_start, user};

/// Writes a one-turn session in `cwd` whose records are stamped from `start_ms`.
fn session(store: &SessionStore, cwd: &str, start_ms: u64, input: &str) -> String {
    let mut writer = store.create(new_session(cwd), config(start_ms)).unwrap();
    for body in [turn_start(1), user(input), step_start(1, 1), step_end(1, 1), turn_end(1)] {
        writer.append(body).unwrap();
    }
    writer.session_id().to_string()
}

fn ids(index: &Index, cwd: Option<&str>) -> Vec<String> {
    index.list(cwd).unwrap().into_iter().map(|summary| summary.id).collect()
}

#[test]
fn list_filters_by_cwd_newest_first_with_titles() {
    let (_home, store) = temp_store();
    let old = session(&store, "/repo/a", 1_000, "\n  Fix the parser  \nwith details");
    let other = session(&store, "/repo/b", 2_000, "Write docs");
    let new = session(&store, "/repo/a", 3_000, &"long title ".repeat(20));

    let mut index = Index::open(&store).unwrap();
    assert_eq!(index.refresh(&store).unwrap(), RefreshStats { files: 3, updated: 3, removed: 0 });
    // Nothing changed: nothing is re-read.
    assert_eq!(index.refresh(&store).unwrap(), RefreshStats { files: 3, updated: 0, removed: 0 });

    assert_eq!(ids(&index, None), vec![new.clone(), other.clone(), old.clone()]);
    assert_eq!(ids(&index, Some("/repo/a")), vec![new.clone(), old.clone()]);
    assert_eq!(ids(&index, Some("/repo/b")), vec![other]);
    assert!(ids(&index, Some("/elsewhere")).is_empty());

    let rows = index.list(Some("/repo/a")).unwrap();
    let oldest = &rows[1];
    assert_eq!(oldest.title, "Fix the parser");
    assert_eq!(oldest.cwd, "/repo/a");
    assert_eq!(oldest.model, "test-model");
    assert_eq!(oldest.provider, "fake");
    assert_eq!((oldest.created_ms, oldest.updated_ms), (1_000, 1_005));
    assert_eq!(oldest.record_count, 6);
    assert_eq!(oldest.parent, None);
    assert_eq!(oldest.problem, None);
    assert_eq!(oldest.path, store.path_of(old.parse().unwrap()));
    assert_eq!(rows[0].title.chars().count(), 80);
    assert!(rows[0].title.starts_with("long title long title"));

    // A fork names its parent.
    let fork = store.fork(&new, None, config(4_000)).unwrap();
    let fork_id = fork.session_id().to_string();
    drop(fork);
    index.refresh(&store).unwrap();
    let rows = index.list(None).unwrap();
    assert_eq!(rows[0].id, fork_id);
    assert_eq!(rows[0].parent.as_deref(), Some(new.as_str()));
}

#[test]
fn refresh_follows_changed_and_deleted_files() {
    let (_home, store) = temp_store();
    let first = session(&store, "/repo", 1_000, "first");
    let second = session(&store, "/repo", 2_000, "second");
    let mut index = Index::open(&store).unwrap();
    index.refresh(&store).unwrap();
    assert_eq!(ids(&index, None), vec![second.clone(), first.clone()]);

    // The older session goes on: its row is re-read and it becomes the newest.
    let path = store.path_of(first.parse().unwrap());
    let (_, mut writer) = store.resume(&path, config(10_000)).unwrap();
    writer.append(turn_start(2)).unwrap();
    writer.append(user("again")).unwrap();
    drop(writer);
    assert_eq!(index.refresh(&store).unwrap(), RefreshStats { files: 2, updated: 1, removed: 0 });
    let rows = index.list(None).unwrap();
    assert_eq!(rows[0].id, first);
    assert_eq!(rows[0].record_count, 8);
    assert_eq!(rows[0].updated_ms, 10_001);
    assert_eq!(rows[0].title, "first");

    // A deleted file loses its row.
    store.remove(&second).unwrap();
    assert_eq!(index.refresh(&store).unwrap(), RefreshStats { files: 1, updated: 0, removed: 1 });
    assert_eq!(ids(&index, None), vec![first.clone()]);

    // Rebuild reads everything again.
    assert_eq!(index.rebuild(&store).unwrap(), RefreshStats { files: 1, updated: 1, removed: 0 });
    assert_eq!(ids(&index, None), vec![first]);
}

#[test]
fn corrupt_index_file_is_rebuilt() {
    let (_home, store) = temp_store();
    let id = session(&store, "/repo", 1_000, "hello");
    {
        let mut index = Index::open(&store).unwrap();
        index.refresh(&store).unwrap();
    }
    let garbage: Vec<u8> =
        (0..8192u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    fs_err::write(store.index_path(), garbage).unwrap();

    let mut index = Index::open(&store).unwrap();
    assert_eq!(index.refresh(&store).unwrap(), RefreshStats { files: 1, updated: 1, removed: 0 });
    assert_eq!(ids(&index, None), vec![id.clone()]);
    let [warning] = index.warnings() else { panic!("one warning: {:?}", index.warnings()) };
    assert!(warning.contains(&store.index_path().display().to_string()), "{warning}");
    assert!(warning.ends_with("rebuilt it from the logs"), "{warning}");
    drop(index);
    // And the rebuilt file is a good index from then on.
    let index = Index::open(&store).unwrap();
    assert_eq!(ids(&index, None), vec![id]);
    assert!(index.warnings().is_empty(), "{:?}", index.warnings());
}

/// An index path that cannot be a database at all (a directory): the index lives in memory for
/// the run, built from the logs, and says so.
#[test]
fn an_index_that_cannot_be_opened_or_replaced_is_kept_in_memory() {
    let (_home, store) = temp_store();
    let first = session(&store, "/repo", 1_000, "first");
    let second = session(&store, "/repo", 2_000, "second");
    fs_err::create_dir_all(store.index_path().join("inside")).unwrap();

    let mut index = Index::open(&store).unwrap();
    assert_eq!(index.refresh(&store).unwrap(), RefreshStats { files: 2, updated: 2, removed: 0 });
    assert_eq!(ids(&index, Some("/repo")), vec![second, first]);
    let [warning] = index.warnings() else { panic!("one warning: {:?}", index.warnings()) };
    assert!(warning.ends_with("using an index in memory for this run"), "{warning}");
    assert!(store.index_path().join("inside").is_dir(), "the directory is left alone");
    // Rebuilding works in memory as well.
    assert_eq!(index.rebuild(&store).unwrap(), RefreshStats { files: 2, updated: 2, removed: 0 });
}

/// A database whose pages are damaged after the header: the refresh notices, and the index is
/// rebuilt instead of failing.
#[test]
fn an_index_damaged_past_its_header_is_rebuilt() {
    let (_home, store) = temp_store();
    let id = session(&store, "/repo", 1_000, "hello");
    {
        let mut index = Index::open(&store).unwrap();
        index.refresh(&store).unwrap();
    }
    // Keep the 100-byte header; scribble over the rest of the first page and beyond.
    let mut bytes = fs_err::read(store.index_path()).unwrap();
    for (i, byte) in bytes.iter_mut().enumerate().skip(100) {
        *byte = (i as u8).wrapping_mul(31) ^ 0x5a;
    }
    fs_err::write(store.index_path(), bytes).unwrap();

    let mut index = Index::open(&store).unwrap();
    index.refresh(&store).unwrap();
    assert_eq!(ids(&index, None), vec![id]);
    assert_eq!(index.warnings().len(), 1, "{:?}", index.warnings());
}

/// Processes (here: connections on threads) refreshing and listing one index while sessions are
/// written: nobody fails with "database is locked", nobody falls back, every refresh leaves a row
/// for every file it saw, and all agree at the end.
#[test]
fn concurrent_refreshes_share_the_index() {
    let (_home, store) = temp_store();
    session(&store, "/repo", 1_000, "seed");
    let writers = 2;
    let sessions_each = 8;
    std::thread::scope(|scope| {
        for w in 0..writers {
            let store = &store;
            scope.spawn(move || {
                for i in 0..sessions_each {
                    session(store, "/repo", 10_000 * (w + 1) + i * 10, "more");
                    let mut index = Index::open(store).unwrap();
                    index.refresh(store).unwrap();
                    assert!(index.warnings().is_empty(), "{:?}", index.warnings());
                }
            });
        }
        for reader in 0..3 {
            let store = &store;
            scope.spawn(move || {
                for _ in 0..sessions_each {
                    let mut index = Index::open(store).unwrap();
                    // One of them rebuilds: nobody may see the index emptied meanwhile.
                    let stats = if reader == 0 {
                        index.rebuild(store).unwrap()
                    } else {
                        index.refresh(store).unwrap()
                    };
                    // Every file the refresh listed has its row, whatever the others did.
                    assert!(index.list(None).unwrap().len() >= stats.files);
                    assert!(index.warnings().is_empty(), "{:?}", index.warnings());
                }
            });
        }
    });
    let mut index = Index::open(&store).unwrap();
    index.refresh(&store).unwrap();
    let expected = 1 + writers * sessions_each;
    assert_eq!(index.list(None).unwrap().len(), usize::try_from(expected).unwrap());
}

#[test]
fn unreadable_log_gets_a_row_with_its_problem() {
    let (_home, store) = temp_store();
    let good = session(&store, "/repo", 1_000, "fine");
    let bad = session(&store, "/repo", 2_000, "broken");
    let path = store.path_of(bad.parse().unwrap());
    let text = fs_err::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "{\"seq\":3, this is not json";
    fs_err::write(&path, format!("{}\n", lines.join("\n"))).unwrap();
    let expected_problem = load(&path).unwrap_err().to_string();

    let mut index = Index::open(&store).unwrap();
    index.refresh(&store).unwrap();
    let rows = index.list(None).unwrap();
    assert_eq!(rows.len(), 2);
    let broken = rows.iter().find(|row| row.id == bad).unwrap();
    let problem = broken.problem.as_deref().unwrap();
    assert_eq!(problem, expected_problem);
    assert!(problem.contains(":3:"), "{problem}");
    assert_eq!(broken.record_count, 0);
    let fine = rows.iter().find(|row| row.id == good).unwrap();
    assert_eq!(fine.problem, None);
    assert_eq!(fine.title, "fine");
    // Listing by cwd skips the unreadable row: its cwd is unknown.
    assert_eq!(ids(&index, Some("/repo")), vec![good]);
    assert!(matches!(load(&path).unwrap_err(), codecoder_session::Error::Corrupt { line: 3, .. }));
}

/// Sets the mtime of the logs' directory a minute back, as if nothing had changed in it lately:
/// the next full refresh may then record it for quick refreshes.
fn settle(store: &SessionStore) {
    let minute_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    let dir = fs_err::File::open(store.sessions_dir()).unwrap();
    dir.file().set_times(std::fs::FileTimes::new().set_modified(minute_ago)).unwrap();
}

/// Once a full refresh recorded a settled directory, later refreshes look only at the logs of
/// sessions that held their lock: a log changed behind the store's back (no lock, no change to
/// the directory) keeps its row until the directory changes, and then it is read again.
#[test]
fn an_unchanged_directory_is_not_listed_again() {
    let (_home, store) = temp_store();
    let first = session(&store, "/repo", 1_000, "first");
    let second = session(&store, "/repo", 2_000, "second");
    let mut index = Index::open(&store).unwrap();
    settle(&store);
    assert_eq!(index.refresh(&store).unwrap(), RefreshStats { files: 2, updated: 2, removed: 0 });

    // Appended by hand, as no writer would: the directory does not move, so neither does the row.
    let path = store.path_of(first.parse().unwrap());
    let record = Record { seq: 7, ts: 30_000, body: turn_start(2) };
    let mut line = serde_json::to_vec(&record).unwrap();
    line.push(b'\n');
    let mut file = fs_err::OpenOptions::new().append(true).open(&path).unwrap();
    std::io::Write::write_all(&mut file, &line).unwrap();
    drop(file);
    assert_eq!(index.refresh(&store).unwrap(), RefreshStats { files: 2, updated: 0, removed: 0 });
    assert_eq!(index.list(None).unwrap()[1].record_count, 6);

    // Any change to the directory (here a new session) brings a full look, and the row is right.
    let third = session(&store, "/repo", 40_000, "third");
    assert_eq!(index.refresh(&store).unwrap(), RefreshStats { files: 3, updated: 2, removed: 0 });
    let rows = index.list(None).unwrap();
    let order: Vec<&str> = rows.iter().map(|row| row.id.as_str()).collect();
    assert_eq!(order, [third.as_str(), first.as_str(), second.as_str()]);
    assert_eq!((rows[1].record_count, rows[1].updated_ms), (7, 30_000));
    assert!(index.warnings().is_empty(), "{:?}", index.warnings());
}

/// A session that holds its lock while the directory is settled is still followed: each quick
/// refresh looks at its log and re-reads it when it grew; once the writer lets go, the
/// directory changes and the next refresh looks at everything.
#[test]
fn a_running_session_is_followed_by_quick_refreshes() {
    let (_home, store) = temp_store();
    let done = session(&store, "/repo", 1_000, "done");
    let mut running = store.create(new_session("/repo"), config(2_000)).unwrap();
    let running_id = running.session_id().to_string();
    for body in [turn_start(1), user("running")] {
        running.append(body).unwrap();
    }
    let mut index = Index::open(&store).unwrap();
    settle(&store);
    assert_eq!(index.refresh(&store).unwrap(), RefreshStats { files: 2, updated: 2, removed: 0 });
    assert_eq!(index.refresh(&store).unwrap(), RefreshStats { files: 2, updated: 0, removed: 0 });

    for body in [step_start(1, 1), step_end(1, 1), turn_end(1)] {
        running.append(body).unwrap();
    }
    assert_eq!(index.refresh(&store).unwrap(), RefreshStats { files: 2, updated: 1, removed: 0 });
    let rows = index.list(None).unwrap();
    assert_eq!((rows[0].id.as_str(), rows[0].record_count), (running_id.as_str(), 6));
    assert_eq!(rows[0].title, "running");

    // Letting go removes the lock's sidecar: the directory moved, so a full look follows, and a
    // log removed meanwhile loses its row.
    drop(running);
    store.remove(&done).unwrap();
    assert_eq!(index.refresh(&store).unwrap(), RefreshStats { files: 1, updated: 0, removed: 1 });
    assert_eq!(ids(&index, None), vec![running_id]);
}

/// The index used to live beside the logs: that file is removed when the index is opened, and
/// a fresh one is built in the index's own directory.
#[test]
fn the_index_beside_the_logs_is_replaced() {
    let (_home, store) = temp_store();
    let id = session(&store, "/repo", 1_000, "hello");
    let legacy = store.sessions_dir().join("index.sqlite");
    fs_err::write(&legacy, b"an index of an earlier version").unwrap();
    let mut index = Index::open(&store).unwrap();
    index.refresh(&store).unwrap();
    assert!(!legacy.exists());
    assert_eq!(store.index_path().parent().unwrap(), store.sessions_dir().join("index"));
    assert!(store.index_path().is_file());
    assert_eq!(ids(&index, None), vec![id]);
    assert!(index.warnings().is_empty(), "{:?}", index.warnings());
}
