//! Property tests: `parse` and `apply` never panic on arbitrary or mutated patches, and a patch
//! built from random edits of a random file applies to exactly the edited file.
//!
//! This is the crate's fuzz harness (proptest rather than cargo-fuzz, so it runs in `cargo test`
//! on stable). Invariant: `apply` only ever runs on patches whose paths are relative and stay
//! inside the temporary directory, so no case can touch the rest of the filesystem.

use std::io;
use std::path::{Component, Path};

use codecoder_apply_patch::{Hunk, PatchStream, apply, parse, run};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::Config;

fn config() -> Config {
    Config { cases: 256, failure_persistence: None, ..Config::default() }
}

/// Short text from an alphabet that makes accidental matches with the seed files likely.
fn text() -> impl Strategy<Value = String> {
    "[abc \t\u{2014}\u{201C}\u{a0}]{0,6}"
}

fn file_path() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("a.txt"),
        Just("b.txt"),
        Just("dir/c.txt"),
        Just("dir"),
        Just("new/deep/e.txt"),
        Just(""),
        Just(" a.txt "),
    ]
    .prop_map(str::to_owned)
}

/// One line of a patch-like text: markers (some padded), change lines and junk.
fn patch_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("*** Begin Patch".to_owned()),
        Just("*** End Patch".to_owned()),
        Just("  *** End Patch ".to_owned()),
        file_path().prop_map(|path| format!("*** Add File: {path}")),
        file_path().prop_map(|path| format!("*** Delete File: {path}")),
        file_path().prop_map(|path| format!("*** Update File: {path}")),
        file_path().prop_map(|path| format!(" *** Update File: {path}")),
        file_path().prop_map(|path| format!("*** Move to: {path}")),
        Just("*** End of File".to_owned()),
        Just("@@".to_owned()),
        text().prop_map(|text| format!("@@ {text}")),
        text().prop_map(|text| format!(" {text}")),
        text().prop_map(|text| format!("+{text}")),
        text().prop_map(|text| format!("-{text}")),
        Just(String::new()),
        text(),
        Just("<<'EOF'".to_owned()),
        Just("EOF".to_owned()),
    ]
}

/// A patch-like text: random lines, usually inside `*** Begin Patch` … `*** End Patch`.
fn patch_soup() -> impl Strategy<Value = String> {
    (vec(patch_line(), 0..14), any::<bool>(), prop_oneof![Just("\n"), Just("\r\n")]).prop_map(
        |(lines, wrap, line_ending)| {
            let body = lines.join(line_ending);
            if wrap { format!("*** Begin Patch\n{body}\n*** End Patch\n") } else { body }
        },
    )
}

/// A well-formed patch of random hunks against the seed files, so that applying gets exercised
/// (contexts come from the seed files' alphabet and often match).
fn patch_grammar() -> impl Strategy<Value = String> {
    let change_line = prop_oneof![
        text().prop_map(|text| format!(" {text}")),
        text().prop_map(|text| format!("+{text}")),
        text().prop_map(|text| format!("-{text}")),
        prop_oneof![Just(" a"), Just(" b"), Just("-c"), Just("-b "), Just("")]
            .prop_map(str::to_owned),
    ];
    let chunk = (prop::option::of(text()), vec(change_line, 1..5), any::<bool>()).prop_map(
        |(header, lines, eof)| {
            let mut chunk =
                vec![header.map_or_else(|| "@@".to_owned(), |text| format!("@@ {text}"))];
            chunk.extend(lines);
            if eof {
                chunk.push("*** End of File".to_owned());
            }
            chunk.join("\n")
        },
    );
    let hunk = prop_oneof![
        (file_path(), vec(text(), 0..4)).prop_map(|(path, lines)| {
            let body: String = lines.iter().map(|line| format!("\n+{line}")).collect();
            format!("*** Add File: {path}{body}")
        }),
        file_path().prop_map(|path| format!("*** Delete File: {path}")),
        (file_path(), prop::option::of(file_path()), vec(chunk, 1..4)).prop_map(
            |(path, move_to, chunks)| {
                let move_to = move_to.map(|to| format!("\n*** Move to: {to}")).unwrap_or_default();
                format!("*** Update File: {path}{move_to}\n{}", chunks.join("\n"))
            },
        ),
    ];
    vec(hunk, 1..5)
        .prop_map(|hunks| format!("*** Begin Patch\n{}\n*** End Patch\n", hunks.join("\n")))
}

fn is_contained(path: &Path) -> bool {
    path.components().all(|component| matches!(component, Component::Normal(_) | Component::CurDir))
}

fn seed_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(dir.path().join("a.txt"), "a\nb\nc\n").unwrap();
    fs_err::write(dir.path().join("b.txt"), "b \r\n\u{2014}c\r\n").unwrap();
    fs_err::create_dir(dir.path().join("dir")).unwrap();
    fs_err::write(dir.path().join("dir/c.txt"), "").unwrap();
    dir
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn parse_never_panics_on_arbitrary_text(text in any::<String>()) {
        let _ = parse(&text);
    }

    #[test]
    fn parse_and_apply_never_panic(patch in prop_oneof![patch_soup(), patch_grammar()]) {
        let Ok(parsed) = parse(&patch) else { return Ok(()) };
        let contained = parsed.hunks().iter().all(|hunk| match hunk {
            Hunk::Update { path, move_to, .. } => {
                is_contained(path) && move_to.as_deref().is_none_or(is_contained)
            }
            Hunk::Add { path, .. } | Hunk::Delete { path } => is_contained(path),
        });
        prop_assume!(contained);
        let dir = seed_dir();
        let _ = apply(&parsed, dir.path());
        // The command path too, with the patch on stdin.
        let dir = seed_dir();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run(&[], patch.as_bytes(), dir.path(), &mut out, &mut err);
        prop_assert!(matches!(code, 0..=2));
    }

    #[test]
    fn a_patch_streamed_in_any_pieces_reads_as_parse_does(
        patch in prop_oneof![patch_soup(), patch_grammar()],
        cuts in vec(any::<prop::sample::Index>(), 0..6),
    ) {
        // The stream reads whole lines: a patch's last line counts once its newline arrives.
        let patch = if patch.ends_with('\n') { patch } else { format!("{patch}\n") };
        let mut at: Vec<usize> = cuts.iter().map(|cut| cut.index(patch.len() + 1)).collect();
        at.retain(|&at| patch.is_char_boundary(at));
        at.sort_unstable();
        let mut stream = PatchStream::new();
        let mut from = 0;
        for to in at.into_iter().chain([patch.len()]) {
            stream.push(&patch[from..to]);
            from = to;
        }
        // Never panics, parsed or not; a patch that parses reads the same.
        let streamed: Vec<_> = stream
            .hunks_as_written()
            .map(|(hunk, head, body)| (hunk, head.to_owned(), body.to_owned()))
            .collect();
        let Ok(parsed) = parse(&patch) else { return Ok(()) };
        prop_assert!(patch.ends_with('\n'));
        let parsed: Vec<_> = parsed
            .hunks_as_written()
            .map(|(hunk, head, body)| (hunk.clone(), head.to_owned(), body.to_owned()))
            .collect();
        prop_assert_eq!(streamed, parsed);
        prop_assert!(stream.is_complete());
    }

    #[test]
    fn parse_never_panics_on_mutated_patches(
        patch in prop_oneof![patch_soup(), patch_grammar()],
        cut in any::<prop::sample::Index>(),
        insert in "[-+ @*\n\r<>EOF]{0,4}",
    ) {
        let mut bytes = patch.into_bytes();
        let at = cut.index(bytes.len() + 1);
        bytes.splice(at..at, insert.bytes());
        let _ = parse(&String::from_utf8_lossy(&bytes));
    }
}

/// One random edit: replace `n_removed` lines at `at` (a fraction of the file) with `added`.
#[derive(Debug, Clone)]
struct Edit {
    at: prop::sample::Index,
    n_removed: usize,
    added: Vec<String>,
    with_header: bool,
}

fn edit() -> impl Strategy<Value = Edit> {
    (any::<prop::sample::Index>(), 0..4usize, vec("[a-z ]{0,8}", 0..4), any::<bool>())
        .prop_map(|(at, n_removed, added, with_header)| Edit { at, n_removed, added, with_header })
}

/// Builds the patch chunks for `edits` of `lines` and the expected edited lines. Edits are
/// placed in order without overlap; each chunk carries up to three lines of context on each
/// side, never reaching into a neighbour's, and an edit that would have no old lines at all is
/// dropped (a context-free pure addition means "append at EOF", not "insert here").
fn build(lines: &[String], edits: &[Edit], eof_marker: bool) -> (Vec<String>, Vec<String>) {
    let n_lines = lines.len();
    let mut spans: Vec<(usize, usize, &Edit)> = Vec::new();
    let mut positions: Vec<usize> = edits.iter().map(|edit| edit.at.index(n_lines + 1)).collect();
    positions.sort_unstable();
    let mut taken_to = 0;
    for (edit, start) in edits.iter().zip(positions) {
        let start = start.max(taken_to);
        let end = (start + edit.n_removed).min(n_lines);
        spans.push((start, end, edit));
        taken_to = end;
    }

    let mut patch_lines = Vec::new();
    let mut expected = Vec::new();
    let mut copied_to = 0;
    let mut window_end = 0;
    for (idx, &(start, end, edit)) in spans.iter().enumerate() {
        let next_start = spans.get(idx + 1).map_or(n_lines, |&(next, _, _)| next);
        let window_start = start.saturating_sub(3).max(window_end);
        let new_window_end = (end + 3).min(next_start).max(end);
        if window_start == new_window_end {
            continue;
        }
        if edit.with_header && window_start > window_end {
            patch_lines.push(format!("@@ {}", lines[window_start - 1]));
        } else if !patch_lines.is_empty() || edit.with_header {
            patch_lines.push("@@".to_owned());
        }
        patch_lines.extend(lines[window_start..start].iter().map(|line| format!(" {line}")));
        patch_lines.extend(lines[start..end].iter().map(|line| format!("-{line}")));
        patch_lines.extend(edit.added.iter().map(|line| format!("+{line}")));
        patch_lines.extend(lines[end..new_window_end].iter().map(|line| format!(" {line}")));
        if eof_marker && new_window_end == n_lines {
            patch_lines.push("*** End of File".to_owned());
        }
        expected.extend_from_slice(&lines[copied_to..start]);
        expected.extend_from_slice(&edit.added);
        copied_to = end;
        window_end = new_window_end;
    }
    expected.extend_from_slice(&lines[copied_to..]);
    (patch_lines, expected)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn applying_a_built_patch_gives_the_edited_file(
        words in vec("[a-z ]{0,6}", 0..40),
        edits in vec(edit(), 1..6),
        crlf in any::<bool>(),
        trailing_newline in any::<bool>(),
        eof_marker in any::<bool>(),
    ) {
        // Numbered lines are unique, so every chunk has exactly one place to go.
        let lines: Vec<String> =
            words.iter().enumerate().map(|(idx, word)| format!("line {idx} {word}")).collect();
        let (patch_lines, expected_lines) = build(&lines, &edits, eof_marker);
        prop_assume!(!patch_lines.is_empty());

        let line_ending = if crlf { "\r\n" } else { "\n" };
        let mut original = lines.join(line_ending);
        if trailing_newline && !original.is_empty() {
            original.push_str(line_ending);
        }
        // A one-line file without a line ending gives no hint of CRLF, so it is written with LF.
        let line_ending = if original.contains('\n') { line_ending } else { "\n" };
        let expected: String =
            expected_lines.iter().map(|line| format!("{line}{line_ending}")).collect();
        let patch = format!(
            "*** Begin Patch\n*** Update File: f.txt\n{}\n*** End Patch\n",
            patch_lines.join("\n")
        );

        let dir = tempfile::tempdir().unwrap();
        fs_err::write(dir.path().join("f.txt"), &original).unwrap();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run(std::slice::from_ref(&patch), io::empty(), dir.path(), &mut out, &mut err);
        prop_assert_eq!(code, 0, "{}\n{}", String::from_utf8_lossy(&err), patch);
        let actual = fs_err::read_to_string(dir.path().join("f.txt")).unwrap();
        prop_assert_eq!(actual, expected, "{}", patch);
    }
}
