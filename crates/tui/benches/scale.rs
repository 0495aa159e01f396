//! `cargo bench -p codecoder-tui --bench scale`: the UI at scale, through its real rendering
//! path (the app, the run loop's drain and frame policy, ratatui's inline viewport, crossterm's
//! escape sequences into a byte counter instead of a tty), at 100×40:
//!
//! - an answer streamed at 2,000 tokens/s for 10 s (one delta a token): the UI thread's and the
//!   process's CPU over the wall time, and each frame's time (target: ≤ 10 % of one core, no
//!   frame over 16 ms);
//! - a 5,000-line command output streamed, then paged with Ctrl+O and scrolled: each scroll
//!   keystroke's time, the key applied and its frame drawn (target: ≤ 16 ms);
//! - a 5,000-step transcript (short answers, 20-line outputs, a 5,000-line one every 100th
//!   step): RSS at 1k, 2k and 5k steps (target: bounded);
//! - `@` completion over 200,000 paths: each keystroke's time, completion and frame (target:
//!   ≤ 30 ms), and the background index's build over a generated 200,000-file tree.
//!
//! Figures are medians, p99 and maxima of one run; the machine is shared, so the load average
//! is printed with them.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::cast_precision_loss)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use codecoder_tui::bench;

const WIDTH: u16 = 100;
const HEIGHT: u16 = 40;

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// "median / p99 / max" of `times`, in milliseconds.
fn spread(times: &[Duration]) -> String {
    let mut sorted = times.to_vec();
    sorted.sort();
    if sorted.is_empty() {
        return "no samples".to_owned();
    }
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    format!(
        "median {:.3} ms, p99 {:.3} ms, max {:.3} ms ({} samples)",
        ms(at(0.5)),
        ms(at(0.99)),
        ms(sorted[sorted.len() - 1]),
        sorted.len()
    )
}

fn load() -> String {
    fs_err::read_to_string("/proc/loadavg").unwrap_or_default().trim().to_owned()
}

/// Monorepo-shaped paths: 100 services × 40 modules × 50 files = 200,000.
fn monorepo_paths() -> Vec<String> {
    const MODULES: [&str; 8] =
        ["api", "handlers", "models", "storage", "util", "config", "tests", "client"];
    const FILES: [&str; 10] = [
        "mod.rs",
        "lib.rs",
        "handler.rs",
        "types.rs",
        "error.rs",
        "README.md",
        "schema.json",
        "index.ts",
        "main.go",
        "test_main.py",
    ];
    let mut paths = Vec::with_capacity(200_000);
    for service in 0..100 {
        for module in 0..40 {
            let module_name = format!("{}_{:02}", MODULES[module % MODULES.len()], module);
            for file in 0..50 {
                let name = FILES[file % FILES.len()];
                paths
                    .push(format!("services/svc-{service:03}/src/{module_name}/f{file:02}_{name}"));
            }
        }
    }
    paths
}

/// The paths on disk under the target directory (made once), in a git-shaped tree with an
/// ignored build directory.
fn monorepo_tree() -> PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tui-scale-monorepo-200k");
    let done = root.join(".complete");
    if done.exists() {
        return root;
    }
    let started = Instant::now();
    fs_err::create_dir_all(root.join(".git")).unwrap();
    fs_err::write(root.join(".gitignore"), "target/\n").unwrap();
    for path in monorepo_paths() {
        let path = root.join(path);
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent).unwrap();
        }
        fs_err::write(&path, "").unwrap();
    }
    fs_err::create_dir_all(root.join("target/debug")).unwrap();
    for i in 0..5_000 {
        fs_err::write(root.join(format!("target/debug/obj{i}.o")), "").unwrap();
    }
    fs_err::write(&done, "").unwrap();
    println!("(generated the 200,000-file tree in {:.1} s)", started.elapsed().as_secs_f64());
    root
}

fn main() {
    // `cargo bench -p codecoder-tui --bench scale -- stream` runs only the parts named.
    let only: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let run = |part: &str| only.is_empty() || only.iter().any(|name| name == part);
    println!("load average at start: {}", load());
    if run("stream") {
        stream();
    }
    if run("scroll") {
        scroll();
    }
    if run("memory") {
        memory();
    }
    if run("complete") {
        complete();
    }
    if run("index") {
        index();
    }
}

fn stream() {
    let report = bench::paced_stream(2_000, 10, WIDTH, HEIGHT).unwrap();
    let wall = report.wall.as_secs_f64();
    println!(
        "stream 2,000 tokens/s for 10 s ({} tokens): UI thread {:.1} % of one core, process {:.1} %, {} frames, {:.0} KB/s to the terminal, most events queued at once {}",
        report.tokens,
        report.ui_cpu.as_secs_f64() / wall * 100.0,
        report.process_cpu.as_secs_f64() / wall * 100.0,
        report.frames.len(),
        report.bytes as f64 / wall / 1e3,
        report.max_batch,
    );
    println!("  frame time: {}", spread(&report.frames));
    println!("  frames over 16 ms: {}", report.frames.iter().filter(|t| ms(**t) > 16.0).count());
}

fn scroll() {
    let report = bench::scroll_output(5_000, WIDTH, HEIGHT).unwrap();
    println!("5,000-line output streaming, 50 lines a frame: {}", spread(&report.streaming));
    println!(
        "5,000-line output in the pager ({} lines), scroll keystroke + frame: {}",
        report.lines,
        spread(&report.keystrokes)
    );
    println!("  the same keystrokes' UI-thread CPU: {}", spread(&report.keystrokes_cpu));
}

fn memory() {
    let samples =
        bench::transcript_memory(5_000, 100, &[1, 100, 1_000, 2_000, 5_000], WIDTH, HEIGHT)
            .unwrap();
    for sample in samples {
        println!(
            "transcript after {} steps: RSS {:.1} MiB, kept output {} KB",
            sample.steps,
            sample.rss_kib as f64 / 1024.0,
            sample.kept_output_bytes / 1000,
        );
    }
}

fn complete() {
    let paths = monorepo_paths();
    let queries = [
        "svc042handler",
        "src/main",
        "readme",
        "api_08/f03",
        "schema.json",
        "tmp.py",
        "svc 7 types",
    ];
    let (wall, cpu) = bench::at_completion(paths, &queries, WIDTH, HEIGHT).unwrap();
    println!("@ completion over 200,000 paths, keystroke + frame: {}", spread(&wall));
    println!("  the same keystrokes' UI-thread CPU: {}", spread(&cpu));
}

fn index() {
    let tree = monorepo_tree();
    let mut builds = Vec::new();
    for _ in 0..3 {
        builds.push(bench::index_build(tree.clone()));
    }
    for build in &builds {
        println!(
            "background index of the 200,000-file tree: ready after {:.0} ms (walk {:.0} ms), {} files, {:.1} MB packed",
            ms(build.ready),
            ms(build.walk),
            build.files,
            build.heap_bytes as f64 / 1e6,
        );
    }
}
