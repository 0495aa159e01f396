//! The streamed field reads what serde_json reads, whatever the pieces.

use proptest::prelude::*;
use serde_json::json;

use super::StringField;

fn read(pieces: &[&str]) -> String {
    let mut field = StringField::new("input");
    let mut out = String::new();
    for piece in pieces {
        field.push(piece, &mut out);
    }
    out
}

#[test]
fn escapes_split_anywhere() {
    let text = "a\"b\\c/\n\t\r\u{8}\u{c}é😀\u{1}end";
    let json = json!({"other": {"input": "nested"}, "input": text, "after": "x"}).to_string();
    for at in 0..=json.len() {
        if json.is_char_boundary(at) {
            let (head, tail) = json.split_at(at);
            assert_eq!(read(&[head, tail]), text, "split at {at}");
        }
    }
}

#[test]
fn unicode_escapes_and_surrogate_pairs() {
    assert_eq!(read(&[r#"{"input": "\u00e9\ud83d"#, r#"\ude00\u0041"}"#]), "é😀A");
    // A lone high surrogate is a replacement character.
    assert_eq!(read(&[r#"{"input": "\ud83dx"}"#]), "\u{fffd}x");
}

#[test]
fn other_shapes_yield_nothing() {
    assert_eq!(read(&[r#"{"input": 5, "x": "input"}"#]), "");
    assert_eq!(read(&[r#"["input", "no"]"#]), "");
    assert_eq!(read(&[r#"{"inputs": "no", "a": {"input": "no"}}"#]), "");
    assert_eq!(read(&[r#"{"input": "\uZZ"}"#]), "");
}

#[test]
fn a_value_being_written_shows_so_far() {
    let mut field = StringField::new("input");
    let mut out = String::new();
    field.push(r#"{"input": "*** Begin Patch\n*** Add"#, &mut out);
    assert_eq!(out, "*** Begin Patch\n*** Add");
    field.push(r#" File: a\"#, &mut out);
    assert_eq!(out, "*** Begin Patch\n*** Add File: a");
    field.push(r#"n"}"#, &mut out);
    assert_eq!(out, "*** Begin Patch\n*** Add File: a\n");
}

proptest! {
    #[test]
    fn any_text_in_any_pieces(text in any::<String>(), cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..5)) {
        let json = json!({"input": text}).to_string();
        let mut at: Vec<usize> = cuts.iter().map(|cut| cut.index(json.len() + 1)).filter(|&at| json.is_char_boundary(at)).collect();
        at.sort_unstable();
        let mut pieces = Vec::new();
        let mut from = 0;
        for to in at.into_iter().chain([json.len()]) {
            pieces.push(&json[from..to]);
            from = to;
        }
        prop_assert_eq!(read(&pieces), text);
    }

    #[test]
    fn never_panics(text in any::<String>()) {
        let _ = read(&[&text]);
    }
}
