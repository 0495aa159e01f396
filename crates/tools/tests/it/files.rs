//! read_file, write_file and edit: empty files, no trailing newline, CRLF, non-UTF-8 bytes,
//! huge lines, binary files, images, offsets, caps, writable roots, file modes.

use std::os::unix::fs::PermissionsExt as _;

use codecoder_protocol::ContentItem;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::*;

#[test]
fn read_numbers_lines() {
    let fixture = Fixture::new();
    fixture.write("a.txt", "alpha\nbeta\ngamma\n");
    let out = fixture.ok("read_file", json!({ "path": "a.txt" }));
    assert_eq!(out, "     1\talpha\n     2\tbeta\n     3\tgamma\n");
    let out = fixture.ok("read_file", json!({ "path": "a.txt", "offset": 2, "limit": 1 }));
    assert!(out.starts_with("     2\tbeta\n"), "{out}");
    assert!(out.contains("offset=3"), "{out}");
    // An absolute path works too.
    let absolute = fixture.path("a.txt").display().to_string();
    assert!(fixture.ok("read_file", json!({ "path": absolute })).contains("gamma"));
}

#[test]
fn read_empty_and_no_trailing_newline() {
    let fixture = Fixture::new();
    fixture.write("empty.txt", "");
    assert!(fixture.ok("read_file", json!({ "path": "empty.txt" })).contains("is empty"));
    fixture.write("tail.txt", "one\ntwo");
    let out = fixture.ok("read_file", json!({ "path": "tail.txt" }));
    assert!(out.starts_with("     1\tone\n     2\ttwo\n"), "{out}");
    assert!(out.contains("does not end with a newline"), "{out}");
    let err = fixture.err("read_file", json!({ "path": "tail.txt", "offset": 5 }));
    assert!(err.contains("past the end") && err.contains("2 line(s)"), "{err}");
    let err = fixture.err("read_file", json!({ "path": "tail.txt", "offset": 3 }));
    assert!(err.contains("past the end"), "{err}");
}

#[test]
fn read_crlf_and_non_utf8() {
    let fixture = Fixture::new();
    fixture.write("dos.txt", "one\r\ntwo\r\n");
    let out = fixture.ok("read_file", json!({ "path": "dos.txt" }));
    assert!(out.starts_with("     1\tone\n     2\ttwo\n"), "{out}");
    assert!(out.contains("CRLF"), "{out}");
    fixture.write("latin1.txt", b"caf\xe9\nok\n");
    let out = fixture.ok("read_file", json!({ "path": "latin1.txt" }));
    assert!(out.starts_with("     1\tcaf\u{FFFD}\n     2\tok\n"), "{out}");
    assert!(out.contains("not valid UTF-8"), "{out}");
}

#[test]
fn read_caps_lines_bytes_and_huge_lines() {
    let _heavy = HEAVY.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let fixture = Fixture::new();
    let many: String = (1..=5000).map(|n| format!("line {n}\n")).collect();
    fixture.write("many.txt", &many);
    let out = fixture.ok("read_file", json!({ "path": "many.txt" }));
    assert_eq!(count_prefixed(&out, " "), 2000);
    assert!(out.contains("offset=2001"), "{out}");
    let out = fixture.ok("read_file", json!({ "path": "many.txt", "offset": 4999 }));
    assert!(out.starts_with("  4999\tline 4999\n  5000\tline 5000\n"), "{out}");
    assert!(!out.contains("offset="), "{out}");

    // One 10 MB line: cut, not loaded; the next line still reads.
    let mut huge = vec![b'x'; 10 * 1024 * 1024];
    huge.extend_from_slice(b"\nafter\n");
    fixture.write("huge.txt", &huge);
    let out = fixture.ok("read_file", json!({ "path": "huge.txt" }));
    assert!(out.len() < 10_000, "{}", out.len());
    assert!(out.contains("line cut: 10485760 bytes"), "{out}");
    assert!(out.contains("     2\tafter"), "{out}");

    // Lines of 3 KiB: the 256 KiB byte cap stops before 2000 lines, with a note.
    let wide: String = (1..=500).map(|n| format!("{n:04}{}\n", "y".repeat(3000))).collect();
    fixture.write("wide.txt", &wide);
    let out = fixture.ok("read_file", json!({ "path": "wide.txt" }));
    assert!(out.len() <= 256 * 1024 + 1024, "{}", out.len());
    assert!(out.contains("output cap"), "{}", &out[out.len() - 300..]);
}

#[test]
fn read_binary_images_and_directories() {
    let fixture = Fixture::new();
    fixture.write("prog", b"\x7FELF\x02\x01\x01\0\0\0\0\0rest");
    let out = fixture.ok("read_file", json!({ "path": "prog" }));
    assert!(out.contains("binary file (ELF"), "{out}");
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR fake png bytes";
    fixture.write("pic.png", png);
    let output = fixture.call("read_file", json!({ "path": "pic.png" })).unwrap();
    let ContentItem::Image(image) = &output.content[1] else { panic!("{output:?}") };
    assert_eq!(image.media_type, "image/png");
    use base64::Engine as _;
    let decoded = base64::engine::general_purpose::STANDARD.decode(&image.data_base64).unwrap();
    assert_eq!(decoded, png);
    fixture.write("dir/file", "x");
    assert!(fixture.err("read_file", json!({ "path": "dir" })).contains("is a directory"));
    let err = fixture.err("read_file", json!({ "path": "missing.txt" }));
    assert!(err.contains("does not exist"), "{err}");
}

#[test]
fn write_creates_replaces_and_keeps_mode_and_crlf() {
    let fixture = Fixture::new();
    let out = fixture.ok("write_file", json!({ "path": "new/dir/a.txt", "content": "hi\n" }));
    assert!(out.starts_with("Created"), "{out}");
    assert_eq!(fixture.read("new/dir/a.txt"), b"hi\n");
    let mode = fs_err::metadata(fixture.path("new/dir/a.txt")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o644);

    fixture.write("run.sh", "#!/bin/sh\r\necho hi\r\n");
    fs_err::set_permissions(fixture.path("run.sh"), std::fs::Permissions::from_mode(0o751))
        .unwrap();
    let out =
        fixture.ok("write_file", json!({ "path": "run.sh", "content": "#!/bin/sh\necho bye\n" }));
    assert!(out.contains("converted to CRLF"), "{out}");
    assert_eq!(fixture.read("run.sh"), b"#!/bin/sh\r\necho bye\r\n");
    let mode = fs_err::metadata(fixture.path("run.sh")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o751);
    // No temp file is left behind.
    let names: Vec<String> = fs_err::read_dir(&fixture.cwd)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|name| !name.starts_with(".codecoder-write")), "{names:?}");
}

#[test]
fn writes_outside_the_roots_are_refused() {
    let fixture = Fixture::new();
    let outside = fixture.outside().join("escape.txt");
    let err =
        fixture.err("write_file", json!({ "path": outside.display().to_string(), "content": "x" }));
    assert!(
        err.contains("outside the writable roots")
            && err.contains(&fixture.cwd.display().to_string()),
        "{err}"
    );
    let err = fixture.err("write_file", json!({ "path": "../escape.txt", "content": "x" }));
    assert!(err.contains("outside the writable roots"), "{err}");
    std::os::unix::fs::symlink(fixture.outside(), fixture.path("link")).unwrap();
    let err = fixture.err("write_file", json!({ "path": "link/escape.txt", "content": "x" }));
    assert!(err.contains("really"), "{err}");
    fixture.write("keep.txt", "a\n");
    std::os::unix::fs::symlink(fixture.outside().join("target.txt"), fixture.path("dangling"))
        .unwrap();
    assert!(
        fixture
            .err("edit", json!({ "path": "dangling", "old_string": "a", "new_string": "b" }))
            .contains("symlink")
    );
    assert!(!exists(&outside));
    assert!(!exists(&fixture.outside().join("target.txt")));
}

#[test]
fn edit_replaces_exactly_once() {
    let fixture = Fixture::new();
    fixture.write("lib.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
    let out = fixture.ok(
        "edit",
        json!({ "path": "lib.rs", "old_string": "fn b() {}", "new_string": "fn b() {\n    todo()\n}" }),
    );
    assert!(out.contains("line 2") && out.contains("lines 2-4"), "{out}");
    assert_eq!(fixture.read("lib.rs"), b"fn a() {}\nfn b() {\n    todo()\n}\nfn c() {}\n");
}

#[test]
fn edit_refuses_ambiguous_and_missing_strings_with_candidates() {
    let fixture = Fixture::new();
    let source = "let x = 1;\nlet y = 2;\nlet x = 1;\nprintln!(\"{x} {y}\");\n";
    fixture.write("main.rs", source);
    let err = fixture.err(
        "edit",
        json!({ "path": "main.rs", "old_string": "let x = 1;", "new_string": "let x = 3;" }),
    );
    assert!(err.contains("occurs 2 times") && err.contains("lines 1, 3"), "{err}");
    assert_eq!(fixture.read("main.rs"), source.as_bytes());
    let out = fixture.ok(
        "edit",
        json!({ "path": "main.rs", "old_string": "let x = 1;", "new_string": "let x = 3;", "replace_all": true }),
    );
    assert!(out.contains("2 occurrences"), "{out}");

    let err = fixture.err(
        "edit",
        json!({ "path": "main.rs", "old_string": "prinltn!(\"{x} {y}\");", "new_string": "" }),
    );
    assert!(
        err.contains("not found") && err.contains("line 4 (") && err.contains("     4\tprintln!"),
        "{err}"
    );
    let err = fixture.err(
        "edit",
        json!({ "path": "main.rs", "old_string": "  let y = 2;  ", "new_string": "" }),
    );
    assert!(err.contains("whitespace"), "{err}");
    let err = fixture
        .err("edit", json!({ "path": "main.rs", "old_string": "zzzz qqqq", "new_string": "" }));
    assert!(err.contains("No similar lines"), "{err}");
    let err =
        fixture.err("edit", json!({ "path": "main.rs", "old_string": "let", "new_string": "let" }));
    assert!(err.contains("the same"), "{err}");
    let err =
        fixture.err("edit", json!({ "path": "main.rs", "old_string": "", "new_string": "x" }));
    assert!(err.contains("invalid arguments"), "{err}");
}

#[test]
fn edit_keeps_crlf_mode_and_non_utf8_bytes() {
    let fixture = Fixture::new();
    fixture.write("dos.txt", b"one\r\ntwo\r\nthree \xff\r\n");
    fs_err::set_permissions(fixture.path("dos.txt"), std::fs::Permissions::from_mode(0o600))
        .unwrap();
    fixture.ok(
        "edit",
        json!({ "path": "dos.txt", "old_string": "one\ntwo", "new_string": "1\n2\n2.5" }),
    );
    assert_eq!(fixture.read("dos.txt"), b"1\r\n2\r\n2.5\r\nthree \xff\r\n");
    fixture.ok("edit", json!({ "path": "dos.txt", "old_string": "three", "new_string": "3" }));
    assert_eq!(fixture.read("dos.txt"), b"1\r\n2\r\n2.5\r\n3 \xff\r\n");
    let mode = fs_err::metadata(fixture.path("dos.txt")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn edit_through_a_symlink_changes_the_target() {
    let fixture = Fixture::new();
    fixture.write("real.txt", "old\n");
    std::os::unix::fs::symlink(fixture.path("real.txt"), fixture.path("alias.txt")).unwrap();
    fixture.ok("edit", json!({ "path": "alias.txt", "old_string": "old", "new_string": "new" }));
    assert_eq!(fixture.read("real.txt"), b"new\n");
    assert!(fs_err::symlink_metadata(fixture.path("alias.txt")).unwrap().file_type().is_symlink());
}

#[test]
fn special_files_are_refused() {
    let fixture = Fixture::new();
    let err = fixture.err("read_file", json!({ "path": "/dev/null" }));
    assert!(err.contains("not a regular file"), "{err}");
    let fixture = Fixture::with(|config| config.writable_roots = vec!["/dev".into()]);
    let err = fixture.err("write_file", json!({ "path": "/dev/null", "content": "x" }));
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn edit_in_a_crlf_file_converts_new_lines_of_a_one_line_match() {
    let fixture = Fixture::new();
    fixture.write("dos.txt", "a\r\nb\r\n");
    fixture.ok("edit", json!({ "path": "dos.txt", "old_string": "b", "new_string": "b\nc" }));
    assert_eq!(fixture.read("dos.txt"), b"a\r\nb\r\nc\r\n");
}

#[test]
fn deep_reads_reuse_checkpoints_and_notice_changes() {
    let fixture = Fixture::new();
    let text: String = (1..=300_000).map(|n| format!("{n}\n")).collect();
    fixture.write("long.txt", &text);
    for offset in [250_000u64, 250_001, 70_000, 131_072, 131_073, 300_000, 1] {
        for _ in 0..2 {
            let out = fixture
                .ok("read_file", json!({ "path": "long.txt", "offset": offset, "limit": 2 }));
            let first = out.lines().next().unwrap();
            assert_eq!(first, format!("{offset:>6}\t{offset}"), "{out}");
        }
    }
    // A changed file is not read through stale checkpoints.
    let text: String = (1..=300_000).map(|n| format!("v2 {n}\n")).collect();
    fixture.write("long.txt", &text);
    let out = fixture.ok("read_file", json!({ "path": "long.txt", "offset": 250_000, "limit": 1 }));
    assert!(out.starts_with("250000\tv2 250000\n"), "{out}");
    let err = fixture.err("read_file", json!({ "path": "long.txt", "offset": 300_001 }));
    assert!(err.contains("it has 300000 line(s)"), "{err}");
}

#[test]
fn an_old_text_holding_a_redaction_placeholder_is_explained_not_retried() {
    let fixture = Fixture::new();
    fixture.write("ci.env", "TOKEN=ghp_secretsecret\nREGION=eu\n");
    // The model copies the line as read_file showed it, the secret redacted.
    let err = fixture.err(
        "edit",
        json!({
            "path": "ci.env",
            "old_string": "TOKEN=[REDACTED:github-token]\nREGION=eu",
            "new_string": "TOKEN=[REDACTED:github-token]\nREGION=us"
        }),
    );
    assert!(err.contains("`[REDACTED:github-token]`"), "{err}");
    assert!(err.contains("cannot see") && err.contains("sed"), "{err}");
    assert!(!err.contains("copy the text exactly"), "{err}");
    let patch = "*** Begin Patch\n*** Update File: ci.env\n@@\n-TOKEN=[REDACTED:github-token]\n+TOKEN=x\n*** End Patch\n";
    let output = fixture.call("apply_patch", json!({ "input": patch })).unwrap();
    assert!(output.is_error);
    let shown = text(&output);
    assert!(shown.contains("`[REDACTED:github-token]`") && shown.contains("cannot see"), "{shown}");
    assert_eq!(fixture.read("ci.env"), b"TOKEN=ghp_secretsecret\nREGION=eu\n");
}
