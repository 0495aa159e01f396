//! Unit tests of the streaming reader: the same hunks as `parse` whatever the pieces, partial
//! hunks while the patch is written, and nothing read after a bad start or the end.

use pretty_assertions::assert_eq;

use crate::parse::{Hunk, PatchStream, parse};

const PATCH: &str = "*** Begin Patch\n*** Add File: a.txt\n+one\n\n  \n+two\n\n*** Delete File: b.txt\n\n\
     *** Update File: c.txt\n*** Move to: d/c.txt\n@@ fn main\n ctx\n-old\n+new\n\n@@\n-x\n+y\n\
     *** End of File\n\n*** Update File: e.txt\n-gone\n*** End Patch\n";

type Written = Vec<(Hunk, String, String)>;

fn streamed(pieces: &[&str]) -> Written {
    let mut stream = PatchStream::new();
    for piece in pieces {
        stream.push(piece);
    }
    stream.hunks_as_written().map(|(hunk, head, body)| (hunk, head.into(), body.into())).collect()
}

fn parsed(text: &str) -> Written {
    let patch = parse(text).unwrap();
    patch
        .hunks_as_written()
        .map(|(hunk, head, body)| (hunk.clone(), head.into(), body.into()))
        .collect()
}

#[test]
fn any_two_pieces_read_as_parse_does() {
    let expected = parsed(PATCH);
    assert_eq!(expected.len(), 4);
    for at in 0..=PATCH.len() {
        if PATCH.is_char_boundary(at) {
            let (head, tail) = PATCH.split_at(at);
            assert_eq!(streamed(&[head, tail]), expected, "split at {at}");
        }
    }
}

#[test]
fn byte_by_byte_with_crlf_and_a_heredoc() {
    let text = format!("\n<<'EOF'\n{}EOF\n", PATCH.replace('\n', "\r\n"));
    let pieces: Vec<String> = text.chars().map(String::from).collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    assert_eq!(streamed(&pieces), parsed(&text));
}

#[test]
fn a_patch_being_written_shows_its_hunks_so_far() {
    let mut stream = PatchStream::new();
    stream.push("*** Begin Patch\n*** Add File: a.txt\n+one\n+tw");
    let hunks: Vec<Hunk> = stream.hunks_as_written().map(|(hunk, _, _)| hunk).collect();
    // The last line is not complete yet.
    assert_eq!(hunks, [Hunk::Add { path: "a.txt".into(), contents: "one\n".to_owned() }]);
    assert_eq!(stream.lines_read(), 3);
    assert!(!stream.is_complete());

    stream.push("o\n*** Update File: b.txt\n@@\n-x\n+y\n");
    let hunks: Vec<(Hunk, String, String)> = stream
        .hunks_as_written()
        .map(|(hunk, head, body)| (hunk, head.to_owned(), body.to_owned()))
        .collect();
    let [(add, _, _), (update, head, body)] = hunks.as_slice() else { panic!("{hunks:?}") };
    assert_eq!(add, &Hunk::Add { path: "a.txt".into(), contents: "one\ntwo\n".to_owned() });
    // The update's open chunk shows before the next marker closes it.
    let Hunk::Update { path, move_to: None, chunks } = update else { panic!("{update:?}") };
    assert_eq!(path.to_str(), Some("b.txt"));
    assert_eq!(chunks.len(), 1);
    assert_eq!(
        (chunks[0].old_lines(), chunks[0].new_lines()),
        (&["x".to_owned()][..], &["y".to_owned()][..])
    );
    assert_eq!((head.as_str(), body.as_str()), ("*** Update File: b.txt\n", "@@\n-x\n+y\n"));

    stream.push("*** End Patch\n*** Add File: late.txt\n+ignored\n");
    assert!(stream.is_complete());
    assert_eq!(stream.hunks_as_written().count(), 2);
}

#[test]
fn nothing_is_read_after_a_first_line_that_is_not_the_begin_marker() {
    let mut stream = PatchStream::new();
    stream.push("here is my patch:\n*** Begin Patch\n*** Add File: a.txt\n+one\n");
    assert_eq!(stream.hunks_as_written().count(), 0);
    assert_eq!(stream.lines_read(), 4);
}

#[test]
fn lines_parse_would_refuse_are_passed_over() {
    let mut stream = PatchStream::new();
    stream.push("*** Begin Patch\n*** Add File:\n*** Update File: a.txt\njunk\n@@\n-x\n+y\n");
    let hunks: Vec<Hunk> = stream.hunks_as_written().map(|(hunk, _, _)| hunk).collect();
    let [Hunk::Update { path, chunks, .. }] = hunks.as_slice() else { panic!("{hunks:?}") };
    assert_eq!(path.to_str(), Some("a.txt"));
    assert_eq!(chunks[0].new_lines(), ["y".to_owned()]);
}
