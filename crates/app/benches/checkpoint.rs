//! What checkpointing adds to a turn that edits 100 files, printing medians (no harness).
//!
//! Three ways to run the same turn (100 files of 4 KiB, each rewritten once): without
//! checkpoints; with `SessionCheckpoints` in a git repository when the turn runs no command (each
//! file's prior content kept as a blob before its write, the after-hashes at the turn's end; no
//! git process); and the same turn when it also runs a command first, so the work tree is
//! snapshotted before it and at the turn's end (`git add -A` into a temporary index, `git
//! write-tree`, `git diff-tree`: five git processes). Target: checkpointing adds < 20 ms.
//!
//! Run with `cargo bench -p codecoder-app --bench checkpoint`.

// A benchmark binary is an edge like `main`: it prints, and it panics on setup failures.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use codecoder_app::SessionCheckpoints;
use codecoder_kernel::Checkpoints;
use codecoder_protocol::TurnId;
use codecoder_sandbox::{CommandSpec, Environment, SpawnConfig, Wait};
use codecoder_session::BlobStore;

const FILES: usize = 100;
const FILE_BYTES: usize = 4096;
const RUNS: usize = 15;

fn main() {
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
