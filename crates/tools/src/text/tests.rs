//! Unit tests of the capped buffer, the UTF-8 stream decoder and the similarity score.

use crate::text::{Capped, Utf8Stream, bigrams, dice, line_of};

#[test]
fn capped_keeps_everything_under_the_limit() {
    let mut capped = Capped::new(100);
    capped.push(b"hello\n");
    capped.push(b"world\n");
    assert_eq!(capped.render(), "hello\nworld\n");
    assert_eq!(capped.total(), 12);
}

#[test]
fn capped_keeps_head_and_tail_and_counts_the_middle() {
    let mut capped = Capped::new(40);
    for index in 0..1000 {
        capped.push(format!("line {index:04}\n").as_bytes());
    }
    let text = capped.render();
    assert!(text.starts_with("line 0000\nline 0001\n"), "{text}");
    assert!(text.ends_with("line 0998\nline 0999\n"), "{text}");
    assert!(text.contains("lines) elided"), "{text}");
    assert!(text.contains("the output was 10000 bytes"), "{text}");
    assert!(text.len() < 300, "{}", text.len());
}

#[test]
fn capped_with_one_huge_push_keeps_its_ends() {
    let mut capped = Capped::new(10);
    let mut bytes = vec![b'a'; 5];
    bytes.extend(vec![b'm'; 1_000_000]);
    bytes.extend(vec![b'z'; 5]);
    capped.push(&bytes);
    let text = capped.render();
    assert!(text.starts_with("aaaaa\n["), "{text}");
    assert!(text.ends_with("zzzzz"), "{text}");
    assert!(text.contains("1000000 bytes (0 lines) elided"), "{text}");
}

#[test]
fn utf8_stream_never_splits_a_character() {
    let text = "héllo wörld ✓ 🚀";
    let bytes = text.as_bytes();
    for split in 0..bytes.len() {
        let mut stream = Utf8Stream::default();
        let mut out = stream.decode(&bytes[..split]);
        out.push_str(&stream.decode(&bytes[split..]));
        out.push_str(&stream.finish());
        assert_eq!(out, text, "split at {split}");
    }
}

#[test]
fn utf8_stream_replaces_invalid_bytes() {
    let mut stream = Utf8Stream::default();
    let mut out = stream.decode(b"a\xffb\xe2\x9c");
    out.push_str(&stream.finish());
    assert_eq!(out, "a\u{FFFD}b\u{FFFD}");
}

#[test]
fn line_numbers_and_similarity() {
    assert_eq!(line_of(b"a\nb\nc", 0), 1);
    assert_eq!(line_of(b"a\nb\nc", 4), 3);
    assert_eq!(line_of(b"a\nb\nc", 99), 3);
    let same = dice(&bigrams("fn main() {"), &bigrams("fn main() {"));
    let close = dice(&bigrams("fn main() {"), &bigrams("fn mian() {"));
    let far = dice(&bigrams("fn main() {"), &bigrams("struct Foo;"));
    assert!((same - 1.0).abs() < 1e-9);
    assert!(close > 0.5 && close < 1.0, "{close}");
    assert!(far < 0.2, "{far}");
}
