//! Unit tests of the parser: the leniencies, the chunk structure, and every error with its line.

use std::path::PathBuf;

use pretty_assertions::assert_eq;

use crate::error::ParseError;
use crate::parse::{Hunk, declared_paths, parse};

fn check_err(patch: &str, expected: &ParseError, message: &str) {
    let error = parse(patch).unwrap_err();
    assert_eq!(&error, expected);
    assert_eq!(error.to_string(), message);
}

fn path(text: &str) -> PathBuf {
    PathBuf::from(text)
}

#[test]
fn add_delete_update_move() {
    let patch = parse(
        "*** Begin Patch\n*** Add File: a.txt\n+one\n+\n*** Delete File: b.txt\n\
         *** Update File: c.txt\n*** Move to: d/c.txt\n@@ fn main\n ctx\n-old\n+new\n*** End Patch",
    )
    .unwrap();
    let [add, delete, update] = patch.hunks() else { panic!("{patch:?}") };
    assert_eq!(add, &Hunk::Add { path: path("a.txt"), contents: "one\n\n".to_owned() });
    assert_eq!(delete, &Hunk::Delete { path: path("b.txt") });
    let Hunk::Update { path: update_path, move_to, chunks } = update else { panic!("{update:?}") };
    assert_eq!(update_path, &path("c.txt"));
    assert_eq!(move_to, &Some(path("d/c.txt")));
    let [chunk] = chunks.as_slice() else { panic!("{chunks:?}") };
    assert_eq!(chunk.patch_line(), 8);
    assert_eq!(chunk.context(), Some("fn main"));
    assert_eq!(chunk.old_lines(), ["ctx", "old"]);
    assert_eq!(chunk.new_lines(), ["ctx", "new"]);
    assert_eq!(chunk.sources(), [Some(0), None]);
    assert!(!chunk.end_of_file());
}

#[test]
fn first_chunk_may_omit_at_at_and_blank_lines_are_empty_context() {
    let patch = parse(
        "*** Begin Patch\n*** Update File: f\n a\n\n-b\n@@\n+c\n*** End of File\n*** End Patch\n",
    )
    .unwrap();
    let Hunk::Update { chunks, .. } = &patch.hunks()[0] else { panic!() };
    assert_eq!(chunks.len(), 2);
    assert_eq!(chunks[0].patch_line(), 3);
    assert_eq!(chunks[0].context(), None);
    assert_eq!(chunks[0].old_lines(), ["a", "", "b"]);
    assert_eq!(chunks[0].new_lines(), ["a", ""]);
    assert_eq!(chunks[1].patch_line(), 6);
    assert_eq!(chunks[1].old_lines(), [] as [String; 0]);
    assert_eq!(chunks[1].new_lines(), ["c"]);
    assert!(chunks[1].end_of_file());
}

#[test]
fn heredoc_wrappers_and_padding_are_stripped() {
    for opener in ["<<EOF", "<<'EOF'", "<<\"EOF\"", "  <<'EOF'  "] {
        let patch = format!(
            "\n{opener}\n  *** Begin Patch \n\t*** Delete File:  x y.txt \n *** End Patch\nEOF\n\n"
        );
        let parsed = parse(&patch).unwrap();
        assert_eq!(parsed.hunks(), [Hunk::Delete { path: path("x y.txt") }], "{opener}");
    }
}

#[test]
fn crlf_patch_text_is_accepted() {
    let parsed = parse("*** Begin Patch\r\n*** Add File: a\r\n+x\r\n*** End Patch\r\n").unwrap();
    assert_eq!(parsed.hunks(), [Hunk::Add { path: path("a"), contents: "x\n".to_owned() }]);
}

#[test]
fn empty_patches() {
    check_err("", &ParseError::Empty, "empty patch");
    check_err(" \n\t\n", &ParseError::Empty, "empty patch");
    check_err("<<EOF\n\nEOF", &ParseError::Empty, "empty patch");
    check_err(
        "*** Begin Patch\n\n*** End Patch\n",
        &ParseError::NoHunks { line: 3 },
        "empty patch: no hunks before '*** End Patch' at line 3",
    );
}

#[test]
fn begin_and_end_are_required() {
    check_err(
        "\n\nhello\n*** End Patch",
        &ParseError::MissingBegin { line: 3, found: "hello".to_owned() },
        "invalid patch at line 3: the first line must be '*** Begin Patch', found 'hello'",
    );
    check_err(
        "*** Begin Patch",
        &ParseError::MissingEnd { line: 1, found: "*** Begin Patch".to_owned() },
        "invalid patch at line 1: the last line must be '*** End Patch', found '*** Begin Patch'",
    );
    check_err(
        "*** Begin Patch\n*** Delete File: a\n",
        &ParseError::MissingEnd { line: 2, found: "*** Delete File: a".to_owned() },
        "invalid patch at line 2: the last line must be '*** End Patch', found '*** Delete File: a'",
    );
    // A heredoc opener without its closing `EOF` is not stripped.
    check_err(
        "<<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch",
        &ParseError::MissingBegin { line: 1, found: "<<'EOF'".to_owned() },
        "invalid patch at line 1: the first line must be '*** Begin Patch', found '<<'EOF''",
    );
}

#[test]
fn unknown_header_names_its_line() {
    check_err(
        "*** Begin Patch\n*** Add File: a\n+x\n*** Rename File: a\n*** End Patch",
        &ParseError::UnknownHeader { line: 4, found: "*** Rename File: a".to_owned() },
        "invalid hunk at line 4: expected '*** Add File', '*** Delete File' or '*** Update File', found '*** Rename File: a'",
    );
    // Line numbers count the heredoc wrapper and leading blank lines.
    check_err(
        "\n<<EOF\n*** Begin Patch\n-x\n*** End Patch\nEOF",
        &ParseError::UnknownHeader { line: 4, found: "-x".to_owned() },
        "invalid hunk at line 4: expected '*** Add File', '*** Delete File' or '*** Update File', found '-x'",
    );
}

#[test]
fn missing_paths() {
    check_err(
        "*** Begin Patch\n*** Add File:  \n*** End Patch",
        &ParseError::MissingPath { line: 2, marker: "*** Add File:" },
        "invalid hunk at line 2: missing path after '*** Add File:'",
    );
    check_err(
        "*** Begin Patch\n*** Update File: a\n*** Move to:\n x\n*** End Patch",
        &ParseError::MissingPath { line: 3, marker: "*** Move to:" },
        "invalid hunk at line 3: missing path after '*** Move to:'",
    );
}

#[test]
fn update_errors() {
    check_err(
        "*** Begin Patch\n*** Update File: a.txt\n\n*** Delete File: b\n*** End Patch",
        &ParseError::EmptyUpdate { line: 2, path: path("a.txt") },
        "invalid hunk at line 2: the update of 'a.txt' has no chunks",
    );
    check_err(
        "*** Begin Patch\n*** Update File: a.txt\n@@ one\n@@ two\n-x\n*** End Patch",
        &ParseError::EmptyChunk { line: 3, path: path("a.txt") },
        "invalid hunk at line 3: a chunk in the update of 'a.txt' has no lines",
    );
    check_err(
        "*** Begin Patch\n*** Update File: a.txt\n-x\n+y\nz\n*** End Patch",
        &ParseError::InvalidLine { line: 5, path: path("a.txt"), found: "z".to_owned() },
        "invalid hunk at line 5: expected a line starting with ' ', '+', '-' or '@@' in the update of 'a.txt', found 'z'",
    );
    check_err(
        "*** Begin Patch\n*** Update File: a.txt\n*** End of File\n*** End Patch",
        &ParseError::InvalidLine {
            line: 3,
            path: path("a.txt"),
            found: "*** End of File".to_owned(),
        },
        "invalid hunk at line 3: expected a line starting with ' ', '+', '-' or '@@' in the update of 'a.txt', found '*** End of File'",
    );
}

#[test]
fn hunks_as_written_keep_each_hunks_lines_after_its_headers() {
    let patch = parse(
        "*** Begin Patch\n\
         *** Add File: new.txt\n\
         +one\n\
         +two\n\
         *** Update File: src/a.rs\n\
         *** Move to: src/b.rs\n\
         @@ fn main\n \
         keep\n\
         -old\n\
         +new\n\
         *** Delete File: gone.txt\n\
         *** End Patch\n",
    )
    .unwrap();
    let written: Vec<(String, &str, &str)> = patch
        .hunks_as_written()
        .map(|(hunk, header, body)| (hunk.path().display().to_string(), header, body))
        .collect();
    assert_eq!(
        written,
        [
            ("new.txt".to_owned(), "*** Add File: new.txt\n", "+one\n+two\n"),
            (
                "src/a.rs".to_owned(),
                "*** Update File: src/a.rs\n*** Move to: src/b.rs\n",
                "@@ fn main\n keep\n-old\n+new\n"
            ),
            ("gone.txt".to_owned(), "*** Delete File: gone.txt\n", ""),
        ]
    );
}

#[test]
fn declared_paths_come_from_the_parse_or_else_from_the_file_lines() {
    let valid = "*** Begin Patch\n*** Update File: a.rs\n*** Move to: b.rs\n@@\n-x\n+y\n\
                 *** Add File: c.txt\n+c\n*** End Patch\n";
    assert_eq!(declared_paths(valid), ["a.rs", "b.rs", "c.txt"]);
    // No chunk under the update: it does not parse, but the files it names are still listed.
    let broken = "*** Begin Patch\n  *** Update File: a.rs  \n*** Delete File: \n\
                  *** Move to: d.rs\n*** End Patch\n";
    assert!(parse(broken).is_err());
    assert_eq!(declared_paths(broken), ["a.rs", "d.rs"]);
    assert!(declared_paths("no patch at all").is_empty());
}
