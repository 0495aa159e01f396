//! `@` completion: the packed list, the background walker, narrowing.

use std::time::{Duration, Instant};

use super::{FileIndex, FileList};

/// Polls `index` until a list is there (the walker runs on its own thread).
fn wait_for_list(index: &mut FileIndex) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !index.poll() {
        assert!(Instant::now() < deadline, "the walker sent no list");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_packed_list_is_sorted_and_deduplicated() {
    let list = FileList::new(vec!["b/c.rs".into(), "a.rs".into(), "b/c.rs".into(), "é/x".into()]);
    assert_eq!(list.len(), 3);
    let all: Vec<&str> = (0..list.len()).map(|i| list.get(i)).collect();
    assert_eq!(all, ["a.rs", "b/c.rs", "é/x"]);
    assert_eq!(list.get(3), "");
}

#[test]
fn the_background_index_answers_queries_and_honours_gitignore() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs_err::create_dir_all(root.join(".git")).unwrap();
    fs_err::create_dir_all(root.join("src/deep")).unwrap();
    fs_err::create_dir_all(root.join("target/debug")).unwrap();
    fs_err::write(root.join(".gitignore"), "target/\n").unwrap();
    fs_err::write(root.join("src/main.rs"), "").unwrap();
    fs_err::write(root.join("src/deep/module.rs"), "").unwrap();
    fs_err::write(root.join("target/debug/main.rs"), "").unwrap();

    let mut index = FileIndex::spawn(root.to_path_buf());
    wait_for_list(&mut index);
    assert_eq!(index.complete("main", 8), ["src/main.rs"]);
    assert_eq!(index.complete("", 8), ["src/deep/module.rs", "src/main.rs"]);

    // A refresh (as at a turn's end) picks up a new file.
    fs_err::write(root.join("src/new_main.rs"), "").unwrap();
    index.refresh();
    wait_for_list(&mut index);
    assert_eq!(index.complete("main", 8), ["src/main.rs", "src/new_main.rs"]);
}

#[test]
fn no_list_yet_means_no_items() {
    let mut index = FileIndex::none();
    assert!(index.complete("a", 8).is_empty());
}

/// A tree-shaped list with many near-duplicates, so ranking ties are exercised.
fn generated() -> Vec<String> {
    let mut paths = Vec::new();
    for service in ["auth", "billing", "search", "Search-UI"] {
        for module in 0..12 {
            for file in ["main.rs", "lib.rs", "mod_a.rs", "README.md", "test_main.py"] {
                paths.push(format!("services/{service}/src/m{module:02}/{file}"));
            }
        }
    }
    paths
}

#[test]
fn narrowing_each_keystroke_gives_what_a_fresh_match_gives() {
    let typed = [
        "s",
        "se",
        "ser",
        "serv",
        "servi",
        "servic",
        "service",
        "services",
        "servicesm",
        "servicesm0",
        "servicesm0m",
        "servicesm0",
        "servicesm",
        "sea",
        "sear",
        "searc",
        "search",
        "searchU",
        "searchUI",
        "search",
        "search ",
        "search m",
        "search m0",
        "s",
        "",
        "^serv",
        "^servi",
        "!main",
        "!mainx",
        "m0$",
        "mai",
        "main.",
        "main.r",
        "main.rs",
    ];
    let mut incremental = FileIndex::fixed(generated());
    for query in typed {
        let mut fresh = FileIndex::fixed(generated());
        assert_eq!(incremental.complete(query, 8), fresh.complete(query, 8), "query {query:?}");
        assert_eq!(incremental.complete(query, 500), fresh.complete(query, 500), "query {query:?}");
    }
}

#[test]
fn ranking_puts_the_closest_path_first() {
    let mut index = FileIndex::fixed(generated());
    let top = index.complete("billing m03 lib", 3);
    assert_eq!(top[0], "services/billing/src/m03/lib.rs");
}

#[test]
fn with_more_survivors_than_are_scored_narrowing_still_matches_a_fresh_pass() {
    let mut paths = Vec::new();
    for dir in 0..60 {
        for file in 0..200 {
            paths.push(format!("pkg{dir:02}/src/file_{file:03}.rs"));
        }
    }
    paths.push("top/f.rs".to_owned());
    assert!(paths.len() > super::SCORE_CAP);
    let typed = ["f", "fi", "fil", "file", "file_", "file_1", "file_12", "f", "p", "pk", "pkg s"];
    let mut incremental = FileIndex::fixed(paths.clone());
    for query in typed {
        let mut fresh = FileIndex::fixed(paths.clone());
        assert_eq!(incremental.complete(query, 8), fresh.complete(query, 8), "query {query:?}");
    }
    // The file-name match with the shortest path is among those scored, and wins.
    assert_eq!(incremental.complete("f", 1), ["top/f.rs"]);
}
