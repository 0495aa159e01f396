//! Unit tests of applying: text updates, line endings, permissions, moves, the report and
//! error messages.

use std::path::Path;

use pretty_assertions::assert_eq;

use crate::apply::{Change, ChangeKind, apply, update_text};
use crate::error::{ApplyFailure, Error};
use crate::parse::{Hunk, parse};

/// Applies the chunks of the one update hunk in `patch` to `text`.
fn update(text: &str, patch: &str) -> Result<String, ApplyFailure> {
    let patch = parse(patch).unwrap();
    let [Hunk::Update { chunks, .. }] = patch.hunks() else { panic!("{patch:?}") };
    update_text(text, chunks, Path::new("f"))
}

#[test]
fn crlf_is_kept_and_stray_cr_survives_in_lf_files() {
    let patch = "*** Begin Patch\n*** Update File: f\n a\n-b\n+B\n*** End Patch";
    assert_eq!(update("a\r\nb\r\nc\r\n", patch).unwrap(), "a\r\nB\r\nc\r\n");
    assert_eq!(update("a\nb\nc\r\n", patch).unwrap(), "a\nB\nc\r\n");
}

#[test]
fn chunks_apply_in_order_and_pure_additions() {
    let text = "h\na\nb\n";
    let patch =
        "*** Begin Patch\n*** Update File: f\n@@\n+end\n@@ h\n+after h\n@@\n-b\n+B\n*** End Patch";
    assert_eq!(update(text, patch).unwrap(), "h\nafter h\na\nB\nend\n");
}

#[test]
fn trailing_blank_context_is_dropped_when_it_does_not_match() {
    let patch = "*** Begin Patch\n*** Update File: f\n-a\n+A\n\n\n*** End Patch";
    assert_eq!(update("a\nb\n", patch).unwrap(), "A\nb\n");
}

#[test]
fn lines_not_found_message_shows_the_lines() {
    let patch =
        "*** Begin Patch\n*** Update File: f\n@@\n one\n-two\n*** End of File\n*** End Patch";
    let error = update("one\nthree\n", patch).unwrap_err();
    assert_eq!(
        error.to_string(),
        "failed to find the expected lines in f (chunk at patch line 3, anchored at the end of the file):\none\ntwo"
    );
}

#[test]
fn report_and_partial_failure() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(dir.path().join("b.txt"), "b\n").unwrap();
    let patch = parse(
        "*** Begin Patch\n*** Add File: a.txt\n+a\n*** Update File: b.txt\n*** Move to: c/b.txt\n-b\n+B\n\
         *** Delete File: c/b.txt\n*** Delete File: c/b.txt\n*** End Patch",
    )
    .unwrap();
    let error = apply(&patch, dir.path()).unwrap_err();
    assert_eq!(
        error.applied(),
        [
            Change { kind: ChangeKind::Added, path: "a.txt".into() },
            Change { kind: ChangeKind::Modified, path: "c/b.txt".into() },
            Change { kind: ChangeKind::Deleted, path: "c/b.txt".into() },
        ]
    );
    assert!(matches!(error.failure(), ApplyFailure::DeleteMissing { .. }));
    assert_eq!(
        Error::from(error).to_string(),
        "cannot delete c/b.txt: no such file\n\
         these files were changed before the failure and were not rolled back:\n\
         A a.txt\nM c/b.txt\nD c/b.txt"
    );

    let patch =
        parse("*** Begin Patch\n*** Add File: z\n+z\n*** Update File: a.txt\n-a\n*** End Patch")
            .unwrap();
    let report = apply(&patch, dir.path()).unwrap();
    assert_eq!(report.to_string(), "Success. Updated the following files:\nA z\nM a.txt\n");
    assert_eq!(fs_err::read_to_string(dir.path().join("a.txt")).unwrap(), "");
}

#[cfg(unix)]
#[test]
fn file_mode_is_kept_on_update_and_move() {
    use std::os::unix::fs::PermissionsExt;

    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("run.sh");
    fs_err::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    fs_err::set_permissions(&script, std::fs::Permissions::from_mode(0o751)).unwrap();
    let patch = parse(
        "*** Begin Patch\n*** Update File: run.sh\n-echo hi\n+echo hello\n\
         *** Update File: run.sh\n*** Move to: bin/run.sh\n+echo bye\n*** End Patch",
    )
    .unwrap();
    apply(&patch, dir.path()).unwrap();
    let moved = dir.path().join("bin/run.sh");
    assert_eq!(fs_err::read_to_string(&moved).unwrap(), "#!/bin/sh\necho hello\necho bye\n");
    assert_eq!(fs_err::metadata(&moved).unwrap().permissions().mode() & 0o777, 0o751);
    assert!(!script.exists());
}

#[test]
fn move_onto_itself_keeps_the_file() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(dir.path().join("same.txt"), "x\n").unwrap();
    let patch =
        parse("*** Begin Patch\n*** Update File: same.txt\n*** Move to: ./same.txt\n-x\n+y\n*** End Patch").unwrap();
    apply(&patch, dir.path()).unwrap();
    assert_eq!(fs_err::read_to_string(dir.path().join("same.txt")).unwrap(), "y\n");
}

#[test]
fn directories_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::create_dir(dir.path().join("d")).unwrap();
    fs_err::write(dir.path().join("f"), "x\n").unwrap();
    for (patch, message) in [
        ("*** Add File: d\n+x", "cannot add d: it is a directory"),
        ("*** Delete File: d", "cannot delete d: it is a directory"),
        ("*** Update File: d\n+x", "cannot update d: it is a directory"),
        ("*** Update File: f\n*** Move to: d\n+x", "cannot move to d: it is a directory"),
    ] {
        let patch = parse(&format!("*** Begin Patch\n{patch}\n*** End Patch")).unwrap();
        assert_eq!(apply(&patch, dir.path()).unwrap_err().to_string(), message);
    }
    assert_eq!(fs_err::read_to_string(dir.path().join("f")).unwrap(), "x\n");
}
