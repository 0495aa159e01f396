//! Unit tests: the shapes' layouts (counts, sizes, depth, unique paths, determinism) without
//! writing them, and `ensure(Small)` end to end (committed clean, the promised words and
//! directories there, a second call reusing the first's repository).
#![allow(clippy::disallowed_methods)] // The tests read the fixture with std::fs and run git.

use std::collections::HashSet;
use std::path::Path;

use super::{
    Entry, KERNEL_FILES, MONOREPO, RARE_FILES, RARE_WORD, SMALL, Shape, ensure, kernel_like,
    monorepo,
};

fn is_ignored(entry: &Entry) -> bool {
    entry.path.contains("node_modules/") || entry.path.contains("dist/")
}

fn unique_paths(entries: &[Entry]) {
    let mut seen = HashSet::new();
    for entry in entries {
        assert!(seen.insert(entry.path.as_str()), "{} twice", entry.path);
    }
}

#[test]
fn the_monorepo_has_200k_tracked_files_about_2_gb_and_ignored_dependencies() {
    let entries = monorepo(&MONOREPO);
    unique_paths(&entries);
    let tracked: Vec<&Entry> = entries.iter().filter(|e| !is_ignored(e)).collect();
    assert_eq!(tracked.len(), 200_000);
    assert_eq!(entries.len() - tracked.len(), MONOREPO.ignored_files);
    let bytes: usize = entries.iter().map(|e| e.size).sum();
    assert!((1_800 << 20..2_400 << 20).contains(&bytes), "{} MB", bytes >> 20);
    for agents in ["AGENTS.md", "packages/billing/AGENTS.md", "services/search/AGENTS.md"] {
        assert!(entries.iter().any(|e| e.path == agents), "{agents}");
    }
    let nested = format!("{}/", Shape::Monorepo.nested_dir());
    assert!(entries.iter().any(|e| e.path.starts_with(&nested)));
    assert!(tracked.iter().filter(|e| e.path.ends_with(".proto")).count() > 100);
    assert_eq!(entries.iter().filter(|e| e.rare).count(), RARE_FILES);
}

#[test]
fn layouts_are_deterministic() {
    let paths = |entries: Vec<Entry>| -> Vec<(String, usize)> {
        entries.into_iter().map(|e| (e.path, e.size)).collect()
    };
    assert_eq!(paths(monorepo(&SMALL)), paths(monorepo(&SMALL)));
    assert_eq!(paths(kernel_like()), paths(kernel_like()));
}

#[test]
fn the_kernel_like_tree_is_deep_mostly_c_and_about_5k_directories() {
    let entries = kernel_like();
    unique_paths(&entries);
    assert_eq!(entries.len(), KERNEL_FILES);
    let dirs: HashSet<&str> =
        entries.iter().filter_map(|e| e.path.rsplit_once('/').map(|(dir, _)| dir)).collect();
    assert!((4_000..6_500).contains(&dirs.len()), "{} directories", dirs.len());
    let c_or_h = entries.iter().filter(|e| e.path.ends_with(".c") || e.path.ends_with(".h"));
    assert!(c_or_h.count() * 100 / entries.len() >= 70);
    let deepest = entries.iter().map(|e| e.path.matches('/').count()).max().unwrap();
    assert!(deepest >= 7, "deepest {deepest}");
    let bytes: usize = entries.iter().map(|e| e.size).sum();
    assert!((800 << 20..1_230 << 20).contains(&bytes), "{} MB", bytes >> 20);
    assert!(entries.iter().any(|e| e.path.ends_with(".dts")));
    assert_eq!(entries.iter().filter(|e| e.rare).count(), RARE_FILES);
}

fn files_with(dir: &Path, word: &str, found: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        if entry.file_name() == ".git" {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            files_with(&path, word, found);
        } else if std::fs::read_to_string(&path).is_ok_and(|text| text.contains(word)) {
            found.push(path.display().to_string());
        }
    }
}

#[test]
fn ensure_small_commits_a_clean_repository_once() {
    let dir = ensure(Shape::Small).unwrap();
    assert!(dir.join(".git").is_dir());
    assert!(dir.join(Shape::Small.nested_dir()).is_dir());
    assert!(dir.join("packages/billing/AGENTS.md").is_file());
    let status = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(status.status.success());
    assert_eq!(String::from_utf8_lossy(&status.stdout), "", "committed and clean");
    let files =
        std::process::Command::new("git").args(["ls-files"]).current_dir(&dir).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&files.stdout).lines().count(), SMALL.tracked_files);
    assert!(dir.join("node_modules").is_dir(), "ignored dependencies on disk");
    let mut rare = Vec::new();
    files_with(&dir, RARE_WORD, &mut rare);
    assert_eq!(rare.len(), RARE_FILES, "{rare:?}");
    assert_eq!(ensure(Shape::Small).unwrap(), dir);
}
