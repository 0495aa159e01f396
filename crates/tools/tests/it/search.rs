//! list_dir, glob and grep: gitignored files, hidden files, deep trees, output modes, context,
//! types and globs, limits, bad patterns.

use std::time::{Duration, SystemTime};

use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::*;

/// A small repository: `.gitignore` ignores `target/` and `*.log`.
fn repo() -> Fixture {
    let fixture = Fixture::new();
    fs_err::create_dir_all(fixture.path(".git")).unwrap();
    fixture.write(".gitignore", "target/\n*.log\n");
    fixture.write("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n");
    fixture.write("src/lib.rs", "pub fn hello() -> &'static str {\n    \"Hello\"\n}\n");
    fixture.write("README.md", "# Hello project\n");
    fixture.write("target/debug/out.rs", "fn hello() {}\n");
    fixture.write("debug.log", "hello log\n");
    fixture.write(".hidden/secret.rs", "fn hello() {}\n");
    fixture
}

fn set_mtime(fixture: &Fixture, relative: &str, seconds_ago: u64) {
    let file = fs_err::File::options().write(true).open(fixture.path(relative)).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(seconds_ago)).unwrap();
}

#[test]
fn list_dir_shows_a_tree_without_ignored_entries() {
    let fixture = repo();
    let out = fixture.ok("list_dir", json!({}));
    assert_eq!(
        out,
        "work/\n  .gitignore (14 bytes)\n  .hidden/\n  README.md (16 bytes)\n  src/\n"
            .replace("work/", &format!("{}/", fixture.cwd.display()))
    );
    let out = fixture.ok("list_dir", json!({ "path": "src", "depth": 2 }));
    assert!(out.contains("  lib.rs (") && out.contains("  main.rs ("), "{out}");
    let err = fixture.err("list_dir", json!({ "path": "README.md" }));
    assert!(err.contains("not a directory"), "{err}");
    let err = fixture.err("list_dir", json!({ "depth": 9 }));
    assert!(err.contains("at most 5"), "{err}");
}

#[test]
fn glob_is_gitignore_aware_and_newest_first() {
    let fixture = repo();
    set_mtime(&fixture, "src/main.rs", 100);
    set_mtime(&fixture, "src/lib.rs", 10);
    let out = fixture.ok("glob", json!({ "pattern": "*.rs" }));
    assert_eq!(out, "src/lib.rs\nsrc/main.rs\n");
    let out = fixture.ok("glob", json!({ "pattern": "src/**/main.rs" }));
    assert_eq!(out, "src/main.rs\n");
    let out = fixture.ok("glob", json!({ "pattern": "*.log" }));
    assert!(out.contains("No files match"), "{out}");
    let out = fixture.ok("glob", json!({ "pattern": "*.rs", "path": "src", "head_limit": 1 }));
    assert!(out.starts_with("src/lib.rs\n(1 more not shown"), "{out}");
    let absolute = format!("{}/src/*.rs", fixture.cwd.display());
    let out = fixture.ok("glob", json!({ "pattern": absolute }));
    assert_eq!(out, "src/lib.rs\nsrc/main.rs\n");
    let err = fixture.err("glob", json!({ "pattern": "a[" }));
    assert!(err.contains("not a valid glob"), "{err}");
}

#[test]
fn grep_content_files_count() {
    let fixture = repo();
    let out = fixture.ok("grep", json!({ "pattern": "hello" }));
    assert_eq!(
        out,
        "src/lib.rs:1:pub fn hello() -> &'static str {\nsrc/main.rs:2:    println!(\"hello\");\n(2 matching lines in 2 files)\n"
    );
    let out = fixture
        .ok("grep", json!({ "pattern": "hello", "case_insensitive": true, "output": "files" }));
    assert_eq!(out, "README.md\nsrc/lib.rs\nsrc/main.rs\n(3 files with matches)\n");
    let out = fixture.ok("grep", json!({ "pattern": "l", "output": "count", "type": "rust" }));
    assert!(out.starts_with("src/lib.rs:2\nsrc/main.rs:1\n"), "{out}");
    let out =
        fixture.ok("grep", json!({ "pattern": "hello", "glob": "*.md", "case_insensitive": true }));
    assert!(out.starts_with("README.md:1:# Hello project\n"), "{out}");
    let out = fixture.ok("grep", json!({ "pattern": "nothing-like-this" }));
    assert!(out.contains("No matches"), "{out}");
}

#[test]
fn grep_context_and_separators() {
    let fixture = Fixture::new();
    let text: String = (1..=20)
        .map(|n| if n == 5 || n == 15 { "MATCH\n".to_owned() } else { format!("line {n}\n") })
        .collect();
    fixture.write("f.txt", &text);
    let out = fixture.ok("grep", json!({ "pattern": "MATCH", "context": 1 }));
    assert_eq!(
        out,
        "f.txt-4-line 4\nf.txt:5:MATCH\nf.txt-6-line 6\n--\nf.txt-14-line 14\nf.txt:15:MATCH\nf.txt-16-line 16\n(2 matching lines in 1 file)\n"
    );
}

#[test]
fn grep_limits_and_bad_input() {
    let fixture = Fixture::new();
    let text: String = (1..=1000).map(|n| format!("hit {n}\n")).collect();
    fixture.write("big.txt", &text);
    let out = fixture.ok("grep", json!({ "pattern": "hit", "head_limit": 10 }));
    assert_eq!(count_prefixed(&out, "big.txt:"), 10);
    assert!(out.contains("990 more lines not shown"), "{out}");
    // One file with more matching lines than the collection cap: searched up to the cap only.
    let text: String = (1..=50_000).map(|n| format!("many {n}\n")).collect();
    fixture.write("many.txt", &text);
    let out = fixture.ok("grep", json!({ "pattern": "many", "head_limit": 10 }));
    assert_eq!(count_prefixed(&out, "many.txt:"), 10);
    assert!(out.contains("(at least 20000 matching lines"), "{out}");
    let out = fixture.ok("grep", json!({ "pattern": "many", "output": "count" }));
    assert!(out.contains("many.txt:50000"), "{out}");
    let err = fixture.err("grep", json!({ "pattern": "x", "head_limit": 10_001 }));
    assert!(err.contains("at most 10000"), "{err}");
    fs_err::remove_file(fixture.path("many.txt")).unwrap();
    let err = fixture.err("grep", json!({ "pattern": "(unclosed" }));
    assert!(err.contains("not a valid regex"), "{err}");
    let err = fixture.err("grep", json!({ "pattern": "x", "type": "no-such-type" }));
    assert!(err.contains("type"), "{err}");
    let err = fixture.err("grep", json!({ "pattern": "x", "output": "lines" }));
    assert!(err.contains("must be one of"), "{err}");
    let err = fixture.err("grep", json!({ "pattern": "x", "path": "missing" }));
    assert!(err.contains("does not exist"), "{err}");
    // A binary file is skipped; a file path searches that file.
    fixture.write("bin.dat", b"hit\0\0\0binary");
    let out = fixture.ok("grep", json!({ "pattern": "binary" }));
    assert!(out.contains("No matches"), "{out}");
    let out = fixture.ok("grep", json!({ "pattern": "hit 1000", "path": "big.txt" }));
    assert!(out.starts_with("big.txt:1000:hit 1000\n"), "{out}");
    // A huge line is cut.
    fixture.write("min.js", format!("{}needle{}\n", "a".repeat(10_000), "b".repeat(10_000)));
    let out = fixture.ok("grep", json!({ "pattern": "needle" }));
    assert!(out.len() < 2000 && out.contains("line cut"), "{}", out.len());
}

#[test]
fn deep_trees() {
    let fixture = Fixture::new();
    let mut relative = String::new();
    for depth in 0..60 {
        relative.push_str(&format!("d{depth}/"));
    }
    fixture.write(&format!("{relative}deep.txt"), "bottom needle\n");
    let out = fixture.ok("grep", json!({ "pattern": "needle", "output": "files" }));
    assert!(out.starts_with("d0/d1/") && out.contains("d59/deep.txt"), "{out}");
    let out = fixture.ok("glob", json!({ "pattern": "**/deep.txt" }));
    assert!(out.contains("d59/deep.txt"), "{out}");
    let out = fixture.ok("list_dir", json!({ "depth": 5 }));
    assert!(out.contains("          d4/") && !out.contains("d5/"), "{out}");
}
