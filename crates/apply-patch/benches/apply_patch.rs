//! Benchmark: one patch of 1,000 chunks applied to a 100,000-line file (target: under 100 ms).
//!
//! Prints the median, minimum and maximum of several runs for parsing and for applying
//! (applying includes reading and writing the file). A second case makes every chunk match only
//! at the trailing-whitespace level, the worst realistic case for seeking. Run with
//! `cargo bench -p codecoder-apply-patch`. Invariant: each run starts from a freshly written
//! copy of the original file, and the result is checked once so the figure measures real work.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use codecoder_apply_patch::{apply, parse};

const N_LINES: usize = 100_000;
const N_CHUNKS: usize = 1_000;
const N_RUNS: usize = 11;

fn line(idx: usize) -> String {
    format!("    let value_{idx} = compute({idx}, \"{}\");", idx % 97)
}

/// The original file (with `suffix` after every line) and a patch editing one line in every
/// hundred, with three context lines on each side and an `@@` header on every other chunk.
fn fixture(suffix: &str) -> (String, String, String) {
    let mut original = String::new();
    let mut expected = String::new();
    let mut patch = String::from("*** Begin Patch\n*** Update File: big.rs\n");
    let step = N_LINES / N_CHUNKS;
    for idx in 0..N_LINES {
        writeln!(original, "{}{suffix}", line(idx)).unwrap();
        let edited = idx % step == step / 2;
        if edited {
            writeln!(expected, "    let value_{idx} = compute_faster({idx});").unwrap();
        } else {
            writeln!(expected, "{}{suffix}", line(idx)).unwrap();
        }
    }
    for chunk in 0..N_CHUNKS {
        let target = chunk * step + step / 2;
        if chunk % 2 == 0 {
            writeln!(patch, "@@ {}", line(target - 4)).unwrap();
        } else {
            patch.push_str("@@\n");
        }
        for idx in target - 3..target {
            writeln!(patch, " {}", line(idx)).unwrap();
        }
        writeln!(patch, "-{}", line(target)).unwrap();
        writeln!(patch, "+    let value_{target} = compute_faster({target});").unwrap();
        for idx in target + 1..=target + 3 {
            writeln!(patch, " {}", line(idx)).unwrap();
        }
    }
    patch.push_str("*** End Patch\n");
    (original, patch, expected)
}

fn median(mut times: Vec<Duration>) -> (Duration, Duration, Duration) {
    times.sort();
    (times[times.len() / 2], times[0], times[times.len() - 1])
}

fn bench(name: &str, suffix: &str, dir: &Path) {
    let (original, patch_text, expected) = fixture(suffix);
    let file = dir.join("big.rs");
    let (mut parse_times, mut apply_times, mut total_times) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..N_RUNS {
        fs_err::write(&file, &original).unwrap();
        let started = Instant::now();
        let patch = parse(&patch_text).unwrap();
        let parsed = Instant::now();
        apply(&patch, dir).unwrap();
        let applied = Instant::now();
        parse_times.push(parsed - started);
        apply_times.push(applied - parsed);
        total_times.push(applied - started);
        if run == 0 {
            assert!(fs_err::read_to_string(&file).unwrap() == expected, "{name}: wrong result");
        }
    }
    let (parse_median, ..) = median(parse_times);
    let (apply_median, ..) = median(apply_times);
    let (total_median, total_min, total_max) = median(total_times);
    println!(
        "{name}: {N_CHUNKS} chunks into {N_LINES} lines ({} KiB file, {} KiB patch), {N_RUNS} runs: \
         median {total_median:.1?} (parse {parse_median:.1?}, apply {apply_median:.1?}), \
         min {total_min:.1?}, max {total_max:.1?}",
        original.len() / 1024,
        patch_text.len() / 1024,
    );
}

/// The unavoidable part of applying: reading the file and writing it back.
fn io_floor(dir: &Path) {
    let (original, ..) = fixture("");
    let file = dir.join("big.rs");
    let mut times = Vec::new();
    for _ in 0..N_RUNS {
        fs_err::write(&file, &original).unwrap();
        let started = Instant::now();
        let text = fs_err::read_to_string(&file).unwrap();
        fs_err::write(&file, text).unwrap();
        times.push(started.elapsed());
    }
    let (median, min, max) = median(times);
    println!(
        "i/o floor (read and write back the same file): median {median:.1?}, min {min:.1?}, max {max:.1?}"
    );
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    io_floor(dir.path());
    bench("exact context", "", dir.path());
    bench("trailing-whitespace context", "  ", dir.path());
}
