//! Benchmarks of the built-in tools (issue 5): the `grep` tool against ripgrep (`rg`, when
//! installed) on a large tree, and `read_file` at an offset deep into a 1 GB file (time and
//! memory). Prints medians; `cargo bench -p codecoder-tools --bench tools`.
//!
//! Environment: `CODECODER_BENCH_TREES` (colon-separated directories to search; default
//! `/usr:$HOME/.cargo/registry/src`), `CODECODER_BENCH_RUNS` (runs per case, default 5).
//! Invariant: the 1 GB file lives in a temp dir and is deleted at the end, whatever happens.
// A benchmark is an edge binary: it reports on stdout and unwraps.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use codecoder_protocol::AskUserAnswer;
use codecoder_sandbox::{CommandSpec, Outcome, SpawnConfig, Wait};
use codecoder_tools::{Builtin, StandaloneEnv, ToolsConfig, builtins, run_checked};
use serde_json::{Value, json};

fn main() {
    let runs: usize =
        std::env::var("CODECODER_BENCH_RUNS").ok().and_then(|runs| runs.parse().ok()).unwrap_or(5);
    let home = std::env::var("HOME").unwrap_or_default();
    let trees = std::env::var("CODECODER_BENCH_TREES")
        .unwrap_or_else(|_| format!("/usr:{home}/.cargo/registry/src"));
    let rg = which("rg");
    match &rg {
        Some(rg) => println!("rg: {}", rg.display()),
        None => println!("rg: not installed (apt-get install ripgrep); the comparison is skipped"),
    }
    for tree in trees.split(':').filter(|tree| !tree.is_empty()) {
        let tree = Path::new(tree);
        if !tree.is_dir() {
            println!("skipping {}: not a directory", tree.display());
            continue;
        }
        grep_bench(tree, rg.as_deref(), runs);
    }
    read_bench(runs);
}

fn tools_at(cwd: &Path) -> Vec<std::sync::Arc<dyn Builtin>> {
    builtins(ToolsConfig::standard(cwd, vec![cwd.to_path_buf()]))
}

fn call(tools: &[std::sync::Arc<dyn Builtin>], name: &str, args: Value) -> String {
    let env = StandaloneEnv::new(AskUserAnswer::Declined, 0);
    let tool = tools.iter().find(|tool| tool.name() == name).unwrap();
    let output = run_checked(tool.as_ref(), &env, args).unwrap();
    output
        .content
        .iter()
        .map(|item| match item {
            codecoder_protocol::ContentItem::Text { text } => text.clone(),
            _ => String::new(),
        })
        .collect()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time(runs: usize, mut f: impl FnMut()) -> Duration {
    f(); // Warm the page cache.
    median(
        (0..runs)
            .map(|_| {
                let started = Instant::now();
                f();
                started.elapsed()
            })
            .collect(),
    )
}

fn grep_bench(tree: &Path, rg: Option<&Path>, runs: usize) {
    let searched = ignore::WalkBuilder::new(tree)
        .build()
        .flatten()
        .filter(|entry| entry.file_type().is_some_and(|kind| kind.is_file()))
        .count();
    let all = ignore::WalkBuilder::new(tree)
        .standard_filters(false)
        .build()
        .flatten()
        .filter(|entry| entry.file_type().is_some_and(|kind| kind.is_file()))
        .count();
    println!("\n## grep on {} ({all} files, {searched} after ignore rules)", tree.display());
    let tools = tools_at(tree);
    let cases: [(&str, Value, Vec<&str>); 3] = [
        (
            "rare literal, content",
            json!({ "pattern": "codecoder_bench_needle_zz", "output": "content" }),
            vec!["-n", "codecoder_bench_needle_zz"],
        ),
        (
            "regex, files",
            json!({ "pattern": "fn [a-z_]+_mut\\(", "output": "files", "head_limit": 10000 }),
            vec!["-l", "fn [a-z_]+_mut\\("],
        ),
        (
            "case-insensitive literal, count",
            json!({ "pattern": "deprecated", "case_insensitive": true, "output": "count", "head_limit": 10000 }),
            vec!["-c", "-i", "deprecated"],
        ),
    ];
    for (name, args, rg_args) in cases {
        // The two are timed alternately, run by run, so a change in the machine's load (it is
        // shared) hits both alike.
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        call(&tools, "grep", args.clone());
        if let Some(rg) = rg {
            run_rg(rg, tree, &rg_args);
        }
        for _ in 0..runs {
            let started = Instant::now();
            call(&tools, "grep", args.clone());
            ours.push(started.elapsed());
            if let Some(rg) = rg {
                let started = Instant::now();
                run_rg(rg, tree, &rg_args);
                theirs.push(started.elapsed());
            }
        }
        let ours = median(ours);
        let line = if theirs.is_empty() {
            format!("grep tool {ours:>9.1?}   rg (absent)")
        } else {
            let theirs = median(theirs);
            let ratio = ours.as_secs_f64() / theirs.as_secs_f64();
            format!("grep tool {ours:>9.1?}   rg {theirs:>9.1?}   ratio {ratio:.2}x")
        };
        println!("{name:<34} {line}");
    }
}

fn run_rg(rg: &Path, tree: &Path, args: &[&str]) {
    let mut all: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
    all.push(tree.display().to_string());
    let spec = CommandSpec::new(rg.as_os_str(), all);
    let mut child = codecoder_sandbox::spawn(&spec, &SpawnConfig::standard()).unwrap();
    let outcome = child.wait(&Wait::new(), &mut |_| {}).unwrap();
    assert!(matches!(outcome, Outcome::Exited(_)));
}

fn read_bench(runs: usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.txt");
    let line_count: u64 = 10_737_418; // 100-byte lines: 1 GiB.
    let started = Instant::now();
    {
        let file = fs_err::File::create(&path).unwrap();
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        for number in 0..line_count {
            writeln!(out, "{number:>12} the quick brown fox jumps over the lazy dog, again and again, until line end").unwrap();
        }
        out.flush().unwrap();
    }
    let size = fs_err::metadata(&path).unwrap().len();
    println!(
        "\n## read_file on a {size}-byte file of {line_count} lines (written in {:.1?})",
        started.elapsed()
    );
    for offset in [1u64, 5_000_000, 10_000_000, line_count] {
        let rss_before = rss_kib("VmRSS");
        let args = json!({ "path": "big.txt", "offset": offset, "limit": 10 });
        // Cold: a fresh tool set each run, so no line index is known (the page cache is warm).
        let mut text = String::new();
        let cold = time(runs, || {
            text = call(&tools_at(dir.path()), "read_file", args.clone());
        });
        assert!(text.contains(&format!("{offset:>6}\t")), "{}", &text[..text.len().min(200)]);
        // Warm: the same tool set pages on from checkpoints learnt by the first read.
        let tools = tools_at(dir.path());
        call(&tools, "read_file", args.clone());
        let warm = time(runs, || {
            text = call(&tools, "read_file", args.clone());
        });
        let rss_after = rss_kib("VmRSS");
        println!(
            "offset {offset:>9} limit 10: cold {cold:>9.1?}   warm {warm:>9.1?}   RSS {rss_before} KiB -> {rss_after} KiB"
        );
    }
    println!("peak RSS of the process: {} KiB", rss_kib("VmHWM"));
    dir.close().unwrap();
}

fn rss_kib(field: &str) -> u64 {
    let status = fs_err::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|line| line.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| candidate.is_file())
}
