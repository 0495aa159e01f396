//! Unit tests for path resolution and root placement.

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;

use super::{Placement, Roots, expand_home, normalize_lexically, resolve};

#[test]
fn lexical_normalization() {
    for (input, expected) in
        [("/a/./b/../c", "/a/c"), ("/../../x", "/x"), ("a/../../b", "../b"), ("./a//b/", "a/b")]
    {
        assert_eq!(normalize_lexically(Path::new(input)), PathBuf::from(expected), "{input}");
    }
}

#[test]
fn resolution_follows_symlinks_of_existing_ancestors() {
    let dir = tempfile::tempdir().unwrap();
    let root = fs_err::canonicalize(dir.path()).unwrap();
    fs_err::create_dir_all(root.join("real/sub")).unwrap();
    std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
    assert_eq!(resolve(Path::new("link/sub/new/file"), &root), root.join("real/sub/new/file"));
    assert_eq!(resolve(Path::new("real/../link"), &root), root.join("real"));
    assert_eq!(resolve(&root.join("missing/x"), Path::new("/elsewhere")), root.join("missing/x"));
}

#[test]
fn home_expansion() {
    let home = Path::new("/home/me");
    assert_eq!(expand_home("~", Some(home)), Some(home.to_path_buf()));
    assert_eq!(expand_home("~/x", Some(home)), Some(home.join("x")));
    assert_eq!(expand_home("~bob/x", Some(home)), None);
    assert_eq!(expand_home("~/x", None), None);
    assert_eq!(expand_home("x/~", Some(home)), Some(PathBuf::from("x/~")));
}

#[test]
fn placement_in_roots() {
    let roots = Roots::new(&[PathBuf::from("/w"), PathBuf::from("/t")], Path::new("/"), &[]);
    let protected = |path: &str| match roots.place(Path::new(path)) {
        Placement::Protected(protection) => Some(protection.protected),
        _ => None,
    };
    assert_eq!(roots.place(Path::new("/w/src/a.rs")), Placement::Writable);
    assert_eq!(roots.place(Path::new("/t")), Placement::Writable);
    assert_eq!(protected("/w/.git/config"), Some(PathBuf::from("/w/.git")));
    assert_eq!(protected("/w/.agents"), Some(PathBuf::from("/w/.agents")));
    // A nested repository's `.git` is protected too.
    assert_eq!(protected("/w/src/.git/x"), Some(PathBuf::from("/w/src/.git")));
    assert_eq!(roots.place(Path::new("/wx/a")), Placement::Outside);
    assert!(roots.is_root_or_ancestor(Path::new("/")));
    assert!(!roots.is_root_or_ancestor(Path::new("/w/src")));
}
