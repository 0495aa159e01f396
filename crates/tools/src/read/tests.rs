//! Unit tests of line skipping and capped line reading over small buffers (so that lines and
//! newlines straddle buffer boundaries).

use std::io::{BufReader, Cursor};

use codecoder_protocol::AskUserAnswer;

use crate::env::StandaloneEnv;
use crate::read::{
    CHECKPOINT_LINES, MAX_LINE_BYTES, Skip, image_type, read_line_capped, skip_lines,
};

fn env() -> StandaloneEnv {
    StandaloneEnv::new(AskUserAnswer::Declined, 0)
}

fn skip(reader: &mut impl std::io::BufRead, count: u64) -> (u64, bool) {
    let mut checkpoints = Vec::new();
    skip_lines(&env(), reader, count, Skip { done: 0, position: 0, checkpoints: &mut checkpoints })
        .unwrap()
}

#[test]
fn skip_lines_across_buffer_boundaries() {
    let text: String = (1..=100).map(|n| format!("line {n}\n")).collect();
    for capacity in [1, 2, 3, 7, 64, 4096] {
        let mut reader = BufReader::with_capacity(capacity, Cursor::new(text.as_bytes()));
        assert_eq!(skip(&mut reader, 41), (41, false));
        let mut line = Vec::new();
        assert_eq!(read_line_capped(&mut reader, &mut line).unwrap(), Some((7, true)));
        assert_eq!(line, b"line 42", "capacity {capacity}");
    }
}

#[test]
fn skip_lines_past_the_end_counts_a_last_partial_line() {
    let mut reader = BufReader::with_capacity(2, Cursor::new(&b"a\nb\nc"[..]));
    assert_eq!(skip(&mut reader, 10), (2, true));
    let mut reader = BufReader::with_capacity(2, Cursor::new(&b"a\nb\n"[..]));
    assert_eq!(skip(&mut reader, 10), (2, false));
}

#[test]
fn long_lines_are_cut_and_their_rest_skipped() {
    let mut bytes = vec![b'x'; MAX_LINE_BYTES * 3];
    bytes.extend_from_slice(b"\nnext");
    let mut reader = BufReader::with_capacity(100, Cursor::new(bytes));
    let mut line = Vec::new();
    let read = read_line_capped(&mut reader, &mut line).unwrap();
    assert_eq!(read, Some(((MAX_LINE_BYTES * 3) as u64, true)));
    assert_eq!(line.len(), MAX_LINE_BYTES);
    assert_eq!(read_line_capped(&mut reader, &mut line).unwrap(), Some((4, false)));
    assert_eq!(line, b"next");
    assert_eq!(read_line_capped(&mut reader, &mut line).unwrap(), None);
}

#[test]
fn images_are_told_by_magic_bytes() {
    assert_eq!(image_type(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
    assert_eq!(image_type(b"\xFF\xD8\xFF\xE0"), Some("image/jpeg"));
    assert_eq!(image_type(b"GIF89a..."), Some("image/gif"));
    assert_eq!(image_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
    assert_eq!(image_type(b"RIFF\0\0\0\0WAVE"), None);
    assert_eq!(image_type(b"hello"), None);
}

#[test]
fn checkpoints_are_recorded_and_resume_a_skip() {
    // Lines of varying length, so offsets are not a multiple of anything.
    let text: String = (0..(CHECKPOINT_LINES * 3 + 10))
        .map(|n| format!("{}\n", "x".repeat((n % 7) as usize)))
        .collect();
    let bytes = text.as_bytes();
    let offset_of_line = |line: u64| -> u64 {
        // Byte offset of the start of 1-based line `line`.
        let mut newlines = 0;
        for (at, byte) in bytes.iter().enumerate() {
            if newlines == line - 1 {
                return at as u64;
            }
            newlines += u64::from(*byte == b'\n');
        }
        bytes.len() as u64
    };
    for capacity in [5, 4096, 1 << 20] {
        let mut checkpoints = Vec::new();
        let mut reader = BufReader::with_capacity(capacity, Cursor::new(bytes));
        let target = CHECKPOINT_LINES * 2 + 5;
        let skip = Skip { done: 0, position: 0, checkpoints: &mut checkpoints };
        assert_eq!(skip_lines(&env(), &mut reader, target, skip).unwrap(), (target, false));
        assert_eq!(
            checkpoints,
            [offset_of_line(CHECKPOINT_LINES + 1), offset_of_line(2 * CHECKPOINT_LINES + 1)],
            "capacity {capacity}"
        );
        // Resuming from the second checkpoint reaches the same line.
        let mut reader = BufReader::with_capacity(capacity, Cursor::new(bytes));
        std::io::Seek::seek(&mut reader, std::io::SeekFrom::Start(checkpoints[1])).unwrap();
        let skip = Skip {
            done: 2 * CHECKPOINT_LINES,
            position: checkpoints[1],
            checkpoints: &mut checkpoints,
        };
        assert_eq!(skip_lines(&env(), &mut reader, target, skip).unwrap(), (target, false));
        let mut line = Vec::new();
        read_line_capped(&mut reader, &mut line).unwrap();
        assert_eq!(line.len() as u64, (target) % 7, "capacity {capacity}");
    }
}
