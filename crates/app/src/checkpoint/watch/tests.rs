//! Tests of the change watcher: a turn's commands' changes (tracked, untracked, modified before
//! the session, deleted, created, moved directories, ignored files, rewrites to the same
//! content) come out of the watcher exactly as git's whole-tree snapshots find them, and the
//! next turn starts from what the last one left.

use std::collections::BTreeMap;
use std::path::Path;

use codecoder_kernel::Checkpoints;
use codecoder_protocol::{CheckpointRecord, TurnId};
use codecoder_sandbox::Environment;
use codecoder_session::checkpoint::TurnCapture;
use codecoder_session::{BlobStore, sha256_hex};

use crate::checkpoint::SessionCheckpoints;
use crate::checkpoint::git::GitRepo;
use crate::checkpoint::git_index::tests::git;

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, text).unwrap();
}

/// A committed repository, then changed before any session: one tracked file modified, one
/// untracked file, one ignored file.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q"]);
    for (path, text) in [
        ("a.txt", "a\n"),
        ("b.txt", "b\n"),
        ("same.txt", "same\n"),
        ("dir/c.txt", "c\n"),
        ("dir/sub/d.txt", "d\n"),
        (".gitignore", "*.log\nbuild/\n"),
    ] {
        write(root, path, text);
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "init"]);
    write(root, "b.txt", "b modified before\n");
    write(root, "u.txt", "untracked before\n");
    write(root, "old.log", "ignored before\n");
    dir
}

/// Checkpoints of a session in a fresh `repo()`, its blobs in a directory of their own.
struct Session {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    _blob_dir: tempfile::TempDir,
    blobs: BlobStore,
    checkpoints: SessionCheckpoints,
}

fn session() -> Session {
    let dir = repo();
    let root = dir.path().canonicalize().unwrap();
    let blob_dir = tempfile::tempdir().unwrap();
    let blobs = BlobStore::new(blob_dir.path());
    let checkpoints = SessionCheckpoints::new(blobs.clone(), &root, Environment::Inherited);
    Session { _dir: dir, root, _blob_dir: blob_dir, blobs, checkpoints }
}

/// What a turn's command does.
fn first_command(root: &Path) {
    write(root, "a.txt", "a changed\n");
    write(root, "b.txt", "b changed\n");
    write(root, "u.txt", "u changed\n");
    fs_err::remove_file(root.join("dir/c.txt")).unwrap();
    write(root, "new.txt", "new\n");
    write(root, "x.log", "ignored\n");
    write(root, "old.log", "ignored, changed\n");
    write(root, "newdir/deeper/e.txt", "e\n");
    write(root, "build/out.o", "ignored dir\n");
    fs_err::create_dir_all(root.join("moved")).unwrap();
    fs_err::rename(root.join("dir/sub"), root.join("moved/sub")).unwrap();
    write(root, "same.txt", "same\n");
}

/// Path (relative) → the SHA-256 of its content before the turn (`None`: absent).
fn priors(
    root: &Path,
    blobs: &BlobStore,
    record: &CheckpointRecord,
) -> BTreeMap<String, Option<String>> {
    let root = root.canonicalize().unwrap();
    record
        .files
        .iter()
        .map(|file| {
            let path = Path::new(&file.path);
            let relative = path.strip_prefix(&root).unwrap_or(path).to_string_lossy().into_owned();
            let before = file.before.as_ref().map(|sha| {
                let bytes = fs_err::read(blobs.path_of(sha)).unwrap();
                assert_eq!(sha256_hex(&bytes), *sha);
                sha.clone()
            });
            (relative, before)
        })
        .collect()
}

fn sha(text: &str) -> Option<String> {
    Some(sha256_hex(text.as_bytes()))
}

fn watched_turn(
    checkpoints: &SessionCheckpoints,
    turn: u32,
    command: impl FnOnce(),
) -> CheckpointRecord {
    let turn = TurnId::new(turn);
    checkpoints.turn_started(turn);
    checkpoints.before_command();
    command();
    checkpoints.turn_ended(turn).expect("a checkpoint")
}

#[test]
fn the_watcher_finds_what_the_whole_tree_snapshot_finds() {
    // The watcher.
    let watched = repo();
    let root = watched.path().canonicalize().unwrap();
    let blob_dir = tempfile::tempdir().unwrap();
    let blobs = BlobStore::new(blob_dir.path());
    let checkpoints = SessionCheckpoints::new(blobs.clone(), &root, Environment::Inherited);
    let record = watched_turn(&checkpoints, 1, || first_command(&root));
    assert!(record.notes.is_empty(), "{:?}", record.notes);
    let by_watcher = priors(&root, &blobs, &record);

    // Git's snapshots of the same changes in a twin repository.
    let twin = repo();
    let twin_root = twin.path().canonicalize().unwrap();
    let twin_blobs_dir = tempfile::tempdir().unwrap();
    let twin_blobs = BlobStore::new(twin_blobs_dir.path());
    let repo = GitRepo::detect(&twin_root, Environment::Inherited, twin_blobs_dir.path().join("i"))
        .unwrap();
    let start = repo.snapshot().unwrap();
    first_command(&twin_root);
    let mut capture = TurnCapture::new(twin_blobs.clone());
    repo.add_changes(&start, &mut capture).unwrap();
    let by_snapshot = priors(&twin_root, &twin_blobs, &capture.finish(TurnId::new(1)).unwrap());

    assert_eq!(by_watcher, by_snapshot);
    let expected: BTreeMap<String, Option<String>> = [
        ("a.txt", sha("a\n")),
        ("b.txt", sha("b modified before\n")),
        ("u.txt", sha("untracked before\n")),
        ("dir/c.txt", sha("c\n")),
        ("dir/sub/d.txt", sha("d\n")),
        ("new.txt", None),
        ("newdir/deeper/e.txt", None),
        ("moved/sub/d.txt", None),
    ]
    .into_iter()
    .map(|(path, before)| (path.to_owned(), before))
    .collect();
    assert_eq!(by_watcher, expected);
}

#[test]
fn the_next_turn_starts_from_what_the_last_one_left() {
    let Session { _dir, root, _blob_dir, blobs, checkpoints } = session();
    watched_turn(&checkpoints, 1, || first_command(&root));
    // Between turns the person edits a file too.
    write(&root, "same.txt", "edited between turns\n");
    let record = watched_turn(&checkpoints, 2, || {
        write(&root, "a.txt", "a changed twice\n");
        fs_err::remove_file(root.join("new.txt")).unwrap();
        write(&root, "same.txt", "changed in turn 2\n");
        write(&root, "moved/sub/d.txt", "d moved and changed\n");
    });
    let expected: BTreeMap<String, Option<String>> = [
        ("a.txt", sha("a changed\n")),
        ("new.txt", sha("new\n")),
        ("same.txt", sha("edited between turns\n")),
        ("moved/sub/d.txt", sha("d\n")),
    ]
    .into_iter()
    .map(|(path, before)| (path.to_owned(), before))
    .collect();
    assert_eq!(priors(&root, &blobs, &record), expected);
    // A turn whose command changes nothing has nothing to record.
    let turn = TurnId::new(3);
    checkpoints.turn_started(turn);
    checkpoints.before_command();
    assert_eq!(checkpoints.turn_ended(turn), None);
}

#[test]
fn the_frozen_index_goes_with_the_session_and_a_killed_one_s_with_the_next() {
    let dir = repo();
    let root = dir.path().canonicalize().unwrap();
    let blob_dir = tempfile::tempdir().unwrap();
    let copies = blob_dir.path().join("git-index");
    fs_err::create_dir_all(&copies).unwrap();
    // Left by a process that was killed: no such pid.
    fs_err::write(copies.join("4000000000-base-0"), "stale").unwrap();
    let listed = || -> Vec<String> {
        let mut names: Vec<String> = fs_err::read_dir(&copies)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let checkpoints =
        SessionCheckpoints::new(BlobStore::new(blob_dir.path()), &root, Environment::Inherited);
    watched_turn(&checkpoints, 1, || write(&root, "a.txt", "changed\n"));
    let during = listed();
    assert_eq!(during.len(), 1, "{during:?}");
    assert!(during[0].starts_with(&format!("{}-base-", std::process::id())), "{during:?}");
    drop(checkpoints);
    assert_eq!(listed(), Vec::<String>::new());

    // A session outside any repository removes a killed one's copy too.
    fs_err::write(copies.join("4000000000-base-1"), "stale").unwrap();
    let plain = tempfile::tempdir().unwrap();
    let checkpoints = SessionCheckpoints::new(
        BlobStore::new(blob_dir.path()),
        plain.path(),
        Environment::Inherited,
    );
    let turn = TurnId::new(1);
    checkpoints.turn_started(turn);
    checkpoints.before_command();
    assert_eq!(checkpoints.turn_ended(turn), None);
    assert_eq!(listed(), Vec::<String>::new());
}

#[test]
fn outside_a_repository_commands_are_not_followed_and_file_tools_still_are() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write(&root, "plain.txt", "plain\n");
    let blob_dir = tempfile::tempdir().unwrap();
    let blobs = BlobStore::new(blob_dir.path());
    let checkpoints = SessionCheckpoints::new(blobs.clone(), &root, Environment::Inherited);
    let turn = TurnId::new(1);
    checkpoints.turn_started(turn);
    checkpoints.before_command();
    checkpoints.before_write(&root.join("plain.txt"));
    write(&root, "plain.txt", "changed\n");
    write(&root, "by-command.txt", "x\n");
    let record = checkpoints.turn_ended(turn).unwrap();
    let expected: BTreeMap<String, Option<String>> =
        [("plain.txt".to_owned(), sha("plain\n"))].into_iter().collect();
    assert_eq!(priors(&root, &blobs, &record), expected);
}

#[test]
fn a_tool_writing_what_a_command_changed_keeps_the_content_from_before_the_command() {
    let Session { _dir, root, _blob_dir, blobs, checkpoints } = session();
    let turn = TurnId::new(1);
    checkpoints.turn_started(turn);
    checkpoints.before_command();
    // The command appends to a tracked file and deletes another, then the edit tools write both.
    write(&root, "a.txt", "a\ncmd\n");
    fs_err::remove_file(root.join("dir/c.txt")).unwrap();
    write(&root, "u.txt", "u by command\n");
    for path in ["a.txt", "dir/c.txt", "u.txt"] {
        checkpoints.before_write(&root.join(path));
        write(&root, path, "by a tool\n");
    }
    let record = checkpoints.turn_ended(turn).unwrap();
    let expected: BTreeMap<String, Option<String>> =
        [("a.txt", sha("a\n")), ("dir/c.txt", sha("c\n")), ("u.txt", sha("untracked before\n"))]
            .into_iter()
            .map(|(path, before)| (path.to_owned(), before))
            .collect();
    assert_eq!(priors(&root, &blobs, &record), expected);
}
