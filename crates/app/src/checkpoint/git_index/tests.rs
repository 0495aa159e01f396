//! Tests of the index reader: it reads the index files real git writes (versions 2, 3 and 4)
//! as `git ls-files --stage` lists them, and its stat test agrees with git's.

use std::path::Path;
use std::time::Duration;

use codecoder_sandbox::{CommandSpec, SpawnConfig, Wait};

use super::{Entry, parse};

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let mut spec = CommandSpec::new("git", args.iter().copied());
    spec.cwd = Some(dir.to_owned());
    spec.env.push(("GIT_AUTHOR_NAME".into(), "t".into()));
    spec.env.push(("GIT_AUTHOR_EMAIL".into(), "t@example.com".into()));
    spec.env.push(("GIT_COMMITTER_NAME".into(), "t".into()));
    spec.env.push(("GIT_COMMITTER_EMAIL".into(), "t@example.com".into()));
    let collected = codecoder_sandbox::output(
        &spec,
        &SpawnConfig::standard(),
        &Wait::within(Duration::from_secs(30)),
        1 << 24,
    )
    .unwrap();
    assert!(collected.success(), "git {args:?}: {}", collected.stderr_text());
    collected.stdout_text()
}

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q"]);
    for (path, text) in [
        ("a.txt", "a\n"),
        ("src/lib.rs", "fn main() {}\n"),
        ("src/deep/er/name with space.md", "x\n"),
        ("src/deep/er/namf.md", "y\n"),
        ("z", ""),
    ] {
        let path = dir.path().join(path);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, text).unwrap();
    }
    git(dir.path(), &["add", "-A"]);
    dir
}

fn entries(dir: &Path) -> Vec<Entry<'static>> {
    let bytes: &'static [u8] = fs_err::read(dir.join(".git/index")).unwrap().leak();
    parse(bytes).unwrap()
}

/// What `git ls-files --stage` says: `(path, object name)` of stage-0 entries.
fn listed(dir: &Path) -> Vec<(String, String)> {
    git(dir, &["ls-files", "--stage", "-z"])
        .split('\0')
        .filter(|line| !line.is_empty())
        .map(|line| {
            let (meta, path) = line.split_once('\t').unwrap();
            (path.to_owned(), meta.split(' ').nth(1).unwrap().to_owned())
        })
        .collect()
}

fn read(entries: &[Entry]) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|entry| {
            let oid: String = entry.oid.iter().map(|byte| format!("{byte:02x}")).collect();
            (String::from_utf8(entry.path.to_vec()).unwrap(), oid)
        })
        .collect()
}

#[test]
fn every_index_version_reads_as_git_lists_it() {
    for version in ["2", "3", "4"] {
        let dir = repo();
        git(dir.path(), &["update-index", "--index-version", version]);
        let entries = entries(dir.path());
        assert_eq!(read(&entries), listed(dir.path()), "index version {version}");
        assert_eq!(entries.len(), 5);
    }
}

#[test]
fn intent_to_add_and_skip_worktree_entries_are_not_clean_candidates() {
    let dir = repo();
    fs_err::write(dir.path().join("later.txt"), "later\n").unwrap();
    git(dir.path(), &["add", "-N", "later.txt"]);
    git(dir.path(), &["update-index", "--skip-worktree", "z"]);
    let paths: Vec<String> = read(&entries(dir.path())).into_iter().map(|(path, _)| path).collect();
    assert!(!paths.contains(&"later.txt".to_owned()), "{paths:?}");
    assert!(!paths.contains(&"z".to_owned()), "{paths:?}");
    assert!(paths.contains(&"a.txt".to_owned()), "{paths:?}");
}

#[test]
fn the_stat_test_sees_a_rewrite_and_passes_an_untouched_file() {
    let dir = repo();
    let entries = entries(dir.path());
    let stat_of =
        |name: &str| entries.iter().find(|entry| *entry.path == *name.as_bytes()).unwrap().stat;
    let meta = |name: &str| fs_err::symlink_metadata(dir.path().join(name)).unwrap();
    assert!(stat_of("a.txt").matches(&meta("a.txt")));
    assert!(stat_of("src/lib.rs").matches(&meta("src/lib.rs")));
    // Same size, new content: the times and (through a rename) the inode differ.
    std::thread::sleep(Duration::from_millis(20));
    fs_err::write(dir.path().join("tmp"), "b\n").unwrap();
    fs_err::rename(dir.path().join("tmp"), dir.path().join("a.txt")).unwrap();
    assert!(!stat_of("a.txt").matches(&meta("a.txt")));
    // A file of another type is never clean.
    assert!(!stat_of("src/lib.rs").matches(&meta("src")));
}

#[test]
fn a_damaged_or_foreign_index_is_an_error_not_a_panic() {
    let dir = repo();
    let bytes = fs_err::read(dir.path().join(".git/index")).unwrap();
    for end in 0..bytes.len().min(200) {
        let _ = parse(&bytes[..end]);
    }
    assert!(parse(&bytes[..40]).is_err());
    assert!(parse(b"DIRC\0\0\0\x09\0\0\0\0").is_err());
    assert!(parse(b"not an index at all").is_err());
    let mut flipped = bytes.clone();
    for at in (12..flipped.len()).step_by(7) {
        flipped[at] ^= 0xff;
        let _ = parse(&flipped);
    }
}
