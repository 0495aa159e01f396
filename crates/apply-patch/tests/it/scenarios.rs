//! Runs every conformance scenario in `tests/scenarios/NNN_name/` through [`run`].
//!
//! A scenario is `input/` (the tree before; optional), `patch.txt` and `expected/` (the whole
//! tree after; optional, meaning an empty tree, because git cannot store empty directories).
//! For a rejected patch `expected/` equals `input/`. The runner copies `input/` to a temporary
//! directory, runs the command there with the patch as its one argument, ignores the exit
//! status, and compares the whole tree (directories, and files as bytes) with `expected/`.
//! The one liberty taken with the reference layout: `{cwd}` in `patch.txt` is replaced by the
//! temporary directory, so that absolute paths can be tested hermetically.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::Path;

use codecoder_apply_patch::run;

#[derive(PartialEq, Eq)]
enum Entry {
    Dir,
    File(Vec<u8>),
}

/// Shows UTF-8 files as strings so that a failing comparison reads well.
impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entry::Dir => f.write_str("Dir"),
            Entry::File(bytes) => match std::str::from_utf8(bytes) {
                Ok(text) => write!(f, "File({text:?})"),
                Err(_) => write!(f, "File({bytes:?})"),
            },
        }
    }
}

fn snapshot(root: &Path) -> BTreeMap<String, Entry> {
    fn walk(root: &Path, dir: &Path, tree: &mut BTreeMap<String, Entry>) {
        for entry in fs_err::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            if path.is_dir() {
                tree.insert(relative, Entry::Dir);
                walk(root, &path, tree);
            } else {
                tree.insert(relative, Entry::File(fs_err::read(&path).unwrap()));
            }
        }
    }
    let mut tree = BTreeMap::new();
    if root.exists() {
        walk(root, root, &mut tree);
    }
    tree
}

fn copy_tree(from: &Path, to: &Path) {
    if !from.exists() {
        return;
    }
    for entry in fs_err::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            fs_err::create_dir(&target).unwrap();
            copy_tree(&path, &target);
        } else {
            fs_err::copy(&path, &target).unwrap();
        }
    }
}

#[test]
fn scenarios() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios");
    let mut scenarios: Vec<_> = fs_err::read_dir(&root)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    scenarios.sort();
    assert!(scenarios.len() >= 40, "only {} scenarios", scenarios.len());

    let mut failures = Vec::new();
    for scenario in &scenarios {
        let name = scenario.file_name().unwrap().to_string_lossy();
        let work = tempfile::tempdir().unwrap();
        copy_tree(&scenario.join("input"), work.path());
        let patch = fs_err::read_to_string(scenario.join("patch.txt"))
            .unwrap()
            .replace("{cwd}", work.path().to_str().unwrap());
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run(&[patch], io::empty(), work.path(), &mut out, &mut err);

        let expected = snapshot(&scenario.join("expected"));
        let actual = snapshot(work.path());
        if actual != expected {
            failures.push(format!(
                "{name} (exit {code}, stdout {:?}, stderr {:?}):\n{}",
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(&err),
                pretty_assertions::Comparison::new(&expected, &actual)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed:\n\n{}",
        failures.len(),
        scenarios.len(),
        failures.join("\n\n")
    );
}
