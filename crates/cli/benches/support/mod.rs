//! Helpers the cli benches share: medians, the slow-profile HOME, the bug-fix project in git,
//! peak RSS sampling (of one process, or of a process tree), and in `agents` the peer agents
//! (codex, Claude Code) and the offline namespace they run in. Included by `#[path]` (bench
//! targets are separate crates), so each bench uses what it needs.
#![allow(dead_code)]

pub(crate) mod agents;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

pub(crate) fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// A HOME whose login profile takes about 90 ms (what pyenv and friends cost on the machine
/// the issue was measured on) and exports a PATH entry.
pub(crate) fn slow_home(dir: &Path) {
    std::fs::write(
        dir.join(".bash_profile"),
        "sleep 0.09\nexport PATH=\"$HOME/bin:$PATH\"\nalias ll='ls -l'\n",
    )
    .unwrap();
}

pub(crate) fn git(repo: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(repo)
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@example.com")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@example.com")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}");
}

/// The bug-fix example (a failing test) committed in git, with an untracked `notes.txt`.
pub(crate) fn project(dir: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bugfix/repo");
    for name in ["calc.py", "test_calc.py"] {
        std::fs::copy(source.join(name), dir.join(name)).unwrap();
    }
    git(dir, &["init", "-q"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-qm", "init"]);
    std::fs::write(dir.join("notes.txt"), "todo\n").unwrap();
}

/// Peak RSS (VmHWM) of a running child in MiB, sampled every 2 ms until it exits; `what`
/// names it when it fails.
pub(crate) fn wait_peak_rss_mib(mut child: std::process::Child, what: &str) -> f64 {
    let status = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0_u64;
    loop {
        if let Ok(text) = std::fs::read_to_string(&status)
            && let Some(line) = text.lines().find(|l| l.starts_with("VmHWM:"))
        {
            let kib = line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or(0);
            peak_kib = peak_kib.max(kib);
        }
        if let Some(exit) = child.try_wait().unwrap() {
            assert!(exit.success(), "{what} failed");
            return peak_kib as f64 / 1024.0;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Peak memory of a process tree, in MiB.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TreePeak {
    /// The root process's own VmHWM (its peak resident set).
    pub(crate) root_mib: f64,
    /// The largest sum of VmRSS over the root and its live descendants in one sample.
    pub(crate) tree_mib: f64,
}

/// Samples a running child and its descendants every 2 ms until it exits (asserting success;
/// `what` names it): the child's VmHWM and the tree's largest summed VmRSS.
pub(crate) fn wait_peak_tree_rss(mut child: std::process::Child, what: &str) -> TreePeak {
    let root = child.id();
    let mut peak = TreePeak { root_mib: 0.0, tree_mib: 0.0 };
    loop {
        let mut tree_kib = 0;
        let mut pending = vec![root];
        while let Some(pid) = pending.pop() {
            if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
                tree_kib += status_kib(&text, "VmRSS:");
                if pid == root {
                    peak.root_mib = peak.root_mib.max(status_kib(&text, "VmHWM:") as f64 / 1024.0);
                }
            }
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { continue };
            for task in tasks.flatten() {
                let children = std::fs::read_to_string(task.path().join("children"));
                pending.extend(
                    children
                        .unwrap_or_default()
                        .split_whitespace()
                        .filter_map(|p| p.parse::<u32>().ok()),
                );
            }
        }
        peak.tree_mib = peak.tree_mib.max(tree_kib as f64 / 1024.0);
        if let Some(exit) = child.try_wait().unwrap() {
            assert!(exit.success(), "{what} failed");
            return peak;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The KiB figure of a `/proc/PID/status` line such as `VmHWM:   1234 kB`; 0 when absent.
fn status_kib(status: &str, key: &str) -> u64 {
    status
        .lines()
        .find(|line| line.starts_with(key))
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}
