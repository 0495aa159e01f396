//! What checkpointing adds to a turn that edits 100 files, printing medians (no harness).
//!
//! Three ways to run the same turn (100 files of 4 KiB, each rewritten once): without
//! checkpoints; with `SessionCheckpoints` in a git repository when the turn runs no command (each
//! file's prior content kept as a blob before its write, the after-hashes at the turn's end; no
//! git process); and the same turn when it also runs a command first, so the work tree is
//! snapshotted before it and at the turn's end (`git add -A` into a temporary index, `git
//! write-tree`, `git diff-tree`: five git processes). Target: checkpointing adds < 20 ms.
//!
//! Then, in the generated huge repositories (`codecoder_test_support::huge_repo`: the 200,000-file
//! monorepo and the kernel-shaped tree), a turn whose command changes 3 tracked files: what the
//! change watcher costs the turn (its mark before the command, its look-ups at the end), against
//! what the whole-tree snapshots cost the same turn (the fallback: the same git commands the
//! runtime runs then), the watcher's first scan (in the background from the session's first
//! turn), and its memory. Every turn's record is checked: exactly the 3 files, each with the
//! content it had before the command, so undo restores it. Target: ≤ 20 ms a turn.
//!
//! Run with `cargo bench -p codecoder-app --bench checkpoint` (`-- huge` for the huge
//! repositories only, `-- small` for the 100-file turn only).

// A benchmark binary is an edge like `main`: it prints, and it panics on setup failures.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use codecoder_app::SessionCheckpoints;
use codecoder_kernel::Checkpoints;
use codecoder_protocol::TurnId;
use codecoder_sandbox::{CommandSpec, Environment, SpawnConfig, Wait};
use codecoder_session::{BlobStore, sha256_hex};
use codecoder_test_support::huge_repo;

const FILES: usize = 100;
const FILE_BYTES: usize = 4096;
const RUNS: usize = 15;

fn main() {
    let only: Option<String> = std::env::args().skip(1).find(|arg| !arg.starts_with('-'));
    if only.as_deref() != Some("huge") {
        small_turns();
    }
    if only.as_deref() != Some("small") {
        for shape in [huge_repo::Shape::Monorepo, huge_repo::Shape::KernelLike] {
            huge_turns(shape);
        }
    }
}

fn loadavg() -> String {
    let loadavg = fs_err::read_to_string("/proc/loadavg").unwrap_or_default();
    loadavg.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

fn small_turns() {
    let loadavg = fs_err::read_to_string("/proc/loadavg").unwrap_or_default();
    let loadavg = loadavg.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    println!(
        "checkpoint benchmark: a turn rewriting {FILES} files of {FILE_BYTES} bytes (median of {RUNS} runs; {} CPUs; load average {loadavg})",
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    let plain = median(RUNS, |round| {
        let dir = workspace(false, round);
        let started = Instant::now();
        edit_all(dir.path(), round, None);
        started.elapsed()
    });
    // One blob store for all the runs of a case, as a session's store outlives its turns (its
    // fan-out directories exist after the first few).
    let checkpointed = |command: bool| {
        let blobs = tempfile::tempdir().unwrap();
        median(RUNS, |round| {
            let dir = workspace(true, round);
            let checkpoints = SessionCheckpoints::new(
                BlobStore::new(blobs.path()),
                dir.path(),
                Environment::Inherited,
            );
            let started = Instant::now();
            edit_all(dir.path(), round, Some((&checkpoints, command)));
            started.elapsed()
        })
    };
    let no_command = checkpointed(false);
    let command = checkpointed(true);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("  without checkpoints:                 {:8.2} ms", ms(plain));
    println!(
        "  with checkpoints, no command:         {:8.2} ms  (adds {:.2} ms)",
        ms(no_command),
        ms(no_command) - ms(plain)
    );
    println!(
        "  with checkpoints and a command (git): {:8.2} ms  (adds {:.2} ms)",
        ms(command),
        ms(command) - ms(plain)
    );
}

/// A directory holding the files, their content new in each round so that no blob is stored
/// already (and, for `git`, a repository whose index knows them).
fn workspace(git: bool, round: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for index in 0..FILES {
        let text = content(index, 2 * round);
        fs_err::write(dir.path().join(format!("file{index}.txt")), text).unwrap();
    }
    if git {
        run_git(dir.path(), &["init", "-q"]);
        run_git(dir.path(), &["add", "-A"]);
    }
    dir
}

/// One turn: every file rewritten once, checkpointed first when `checkpoints` is given (after
/// a command, which is not run, when its flag is set).
fn edit_all(dir: &Path, round: usize, checkpoints: Option<(&SessionCheckpoints, bool)>) {
    let turn = TurnId::new(1);
    if let Some((checkpoints, command)) = checkpoints {
        checkpoints.turn_started(turn);
        if command {
            checkpoints.before_command();
        }
    }
    for index in 0..FILES {
        let path = dir.join(format!("file{index}.txt"));
        if let Some((checkpoints, _)) = checkpoints {
            checkpoints.before_write(&path);
        }
        // As the edit tools write: a temporary file renamed over the old one.
        let tmp = dir.join(format!(".file{index}.tmp"));
        fs_err::write(&tmp, content(index, 2 * round + 1)).unwrap();
        fs_err::rename(&tmp, &path).unwrap();
    }
    if let Some((checkpoints, _)) = checkpoints {
        let record = checkpoints.turn_ended(turn).expect("a checkpoint");
        assert_eq!(record.files.len(), FILES, "{:?}", record.notes);
    }
}

fn content(index: usize, round: usize) -> Vec<u8> {
    let line = format!("file {index} round {round} ");
    line.bytes().cycle().take(FILE_BYTES).collect()
}

fn run_git(dir: &Path, args: &[&str]) {
    let mut spec = CommandSpec::new("git", args.iter().copied());
    spec.cwd = Some(dir.to_owned());
    let collected = codecoder_sandbox::output(
        &spec,
        &SpawnConfig::standard(),
        &Wait::within(Duration::from_secs(30)),
        1 << 20,
    )
    .unwrap();
    assert!(collected.success(), "git {args:?}: {}", collected.stderr_text());
}

fn median(runs: usize, mut run: impl FnMut(usize) -> Duration) -> Duration {
    let mut times: Vec<Duration> = (0..runs).map(&mut run).collect();
    times.sort();
    times[times.len() / 2]
}

/// Files the huge-repository turns change (tracked in every shape): the first three tracked
/// files with "3" in their name, a stable choice.
fn three_tracked(root: &Path) -> Vec<std::path::PathBuf> {
    let listed = git_out(root, &["ls-files", "-z"]);
    listed
        .split('\0')
        .filter(|path| path.contains('3') && !path.is_empty())
        .take(3)
        .map(|path| root.join(path))
        .collect()
}

const HUGE_RUNS: usize = 11;

fn huge_turns(shape: huge_repo::Shape) {
    let root = huge_repo::ensure(shape).unwrap();
    let files = three_tracked(&root);
    let originals: Vec<Vec<u8>> = files.iter().map(|path| fs_err::read(path).unwrap()).collect();
    let tracked = git_out(&root, &["ls-files", "-z"]).matches('\0').count();
    println!(
        "\ncheckpoint of a turn whose command changes 3 files, {} ({tracked} tracked files; median of {HUGE_RUNS} turns; load average {})",
        shape.name(),
        loadavg()
    );
    let blobs_dir = tempfile::tempdir().unwrap();
    let blobs = BlobStore::new(blobs_dir.path());
    let rss_before = rss_kib();
    let checkpoints = SessionCheckpoints::new(blobs.clone(), &root, Environment::Inherited);
    // The first turn: its mark waits for the watcher's first scan.
    let turn = TurnId::new(1);
    let started = Instant::now();
    checkpoints.turn_started(turn);
    checkpoints.before_command();
    let first_mark = started.elapsed();
    let rss_after = rss_kib();
    let mut previous = originals.clone();
    let change = |round: usize, previous: &mut Vec<Vec<u8>>| {
        for (at, path) in files.iter().enumerate() {
            let mut text = previous[at].clone();
            text.extend_from_slice(format!("// round {round}\n").as_bytes());
            fs_err::write(path, &text).unwrap();
            previous[at] = text;
        }
    };
    let check = |record: &codecoder_protocol::CheckpointRecord, before: &[Vec<u8>]| {
        assert!(record.notes.is_empty(), "{:?}", record.notes);
        assert_eq!(record.files.len(), 3, "{:?}", record.files);
        for (at, path) in files.iter().enumerate() {
            let file = record
                .files
                .iter()
                .find(|file| Path::new(&file.path) == path)
                .expect("each changed file is in the checkpoint");
            assert_eq!(file.before.as_deref(), Some(sha256_hex(&before[at]).as_str()));
        }
    };
    let before = previous.clone();
    change(0, &mut previous);
    check(&checkpoints.turn_ended(turn).unwrap(), &before);

    let mut watched = Vec::new();
    for round in 1..=HUGE_RUNS {
        let turn = TurnId::new(u32::try_from(round + 1).unwrap());
        checkpoints.turn_started(turn);
        let started = Instant::now();
        checkpoints.before_command();
        let marked = started.elapsed();
        let before = previous.clone();
        change(round, &mut previous);
        let ended = Instant::now();
        let record = checkpoints.turn_ended(turn).unwrap();
        watched.push(marked + ended.elapsed());
        check(&record, &before);
    }
    drop(checkpoints);

    // The fallback's cost for the same turn: a snapshot before the command and one after it,
    // then the diff of the two trees.
    let mut snapshots = Vec::new();
    for round in 0..3 {
        let started = Instant::now();
        let start = snapshot(&root, blobs_dir.path());
        let before_command = started.elapsed();
        change(100 + round, &mut previous);
        let ended = Instant::now();
        let end = snapshot(&root, blobs_dir.path());
        let diff = git_out(&root, &["diff-tree", "-r", "-z", "--no-renames", &start, &end]);
        assert_eq!(diff.matches(":100").count(), 3, "{diff}");
        snapshots.push(before_command + ended.elapsed());
    }
    for (path, original) in files.iter().zip(&originals) {
        fs_err::write(path, original).unwrap();
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    watched.sort();
    snapshots.sort();
    println!(
        "  watcher's first scan (background; waited for by the first mark): {:8.1} ms",
        ms(first_mark)
    );
    println!(
        "  watcher's memory after the scan: {:.1} MiB",
        (rss_after.saturating_sub(rss_before)) as f64 / 1024.0
    );
    println!(
        "  a turn's checkpoint with the watcher: median {:.2} ms (min {:.2}, max {:.2})",
        ms(watched[watched.len() / 2]),
        ms(watched[0]),
        ms(watched[watched.len() - 1])
    );
    println!(
        "  the same turn with whole-tree snapshots: median {:.1} ms (of {})",
        ms(snapshots[snapshots.len() / 2]),
        snapshots.len()
    );
}

/// The work tree as a tree object, as the fallback takes it (a copy of the index, `git add -A`
/// into it, `git write-tree`).
fn snapshot(root: &Path, scratch: &Path) -> String {
    let index = scratch.join("bench-index");
    fs_err::copy(root.join(".git/index"), &index).unwrap();
    let mut spec = CommandSpec::new("git", ["add", "-A", "--", "."]);
    spec.cwd = Some(root.to_owned());
    spec.env.push(("GIT_INDEX_FILE".into(), index.clone().into()));
    let wait = Wait::within(Duration::from_secs(300));
    assert!(
        codecoder_sandbox::output(&spec, &SpawnConfig::standard(), &wait, 1 << 20)
            .unwrap()
            .success()
    );
    let mut spec = CommandSpec::new("git", ["write-tree"]);
    spec.cwd = Some(root.to_owned());
    spec.env.push(("GIT_INDEX_FILE".into(), index.into()));
    let out = codecoder_sandbox::output(&spec, &SpawnConfig::standard(), &wait, 1 << 20).unwrap();
    out.stdout_text().trim().to_owned()
}

fn git_out(dir: &Path, args: &[&str]) -> String {
    let mut spec = CommandSpec::new("git", args.iter().copied());
    spec.cwd = Some(dir.to_owned());
    let collected = codecoder_sandbox::output(
        &spec,
        &SpawnConfig::standard(),
        &Wait::within(Duration::from_secs(300)),
        1 << 30,
    )
    .unwrap();
    assert!(collected.success(), "git {args:?}: {}", collected.stderr_text());
    collected.stdout_text()
}

fn rss_kib() -> u64 {
    let status = fs_err::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
