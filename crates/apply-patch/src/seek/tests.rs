//! Unit tests of `seek`: each level, the order of levels, forward-only search and EOF anchoring.

use crate::seek::{Level, seek};

fn check(
    lines: &[&str],
    pattern: &[&str],
    start: usize,
    end_of_file: bool,
) -> Option<(usize, Level)> {
    seek(lines, pattern, start, end_of_file)
}

#[test]
fn levels() {
    let lines =
        ["fn a() {", "    x();   ", "  \u{201C}q\u{201D} \u{2013} it\u{2019}s\u{00A0}", "}"];
    assert_eq!(check(&lines, &["fn a() {"], 0, false), Some((0, Level::Exact)));
    assert_eq!(check(&lines, &["    x();"], 0, false), Some((1, Level::TrimEnd)));
    assert_eq!(check(&lines, &["x();"], 0, false), Some((1, Level::Trim)));
    assert_eq!(check(&lines, &["\"q\" - it's"], 0, false), Some((2, Level::Normalised)));
    assert_eq!(
        check(&lines, &["x();", "\"q\" - it's", "}"], 0, false),
        Some((1, Level::Normalised))
    );
    assert_eq!(check(&lines, &["y();"], 0, false), None);
}

#[test]
fn every_line_of_the_pattern_must_match() {
    let lines = ["a", "b", "a", "c"];
    assert_eq!(check(&lines, &["a", "c"], 0, false), Some((2, Level::Exact)));
    assert_eq!(check(&lines, &["a", "d"], 0, false), None);
    assert_eq!(check(&lines, &["c", "a"], 0, false), None);
}

#[test]
fn an_exact_match_further_away_wins_over_a_nearer_fuzzy_one() {
    let lines = ["  item", "other", "item"];
    assert_eq!(check(&lines, &["item"], 0, false), Some((2, Level::Exact)));
}

#[test]
fn search_moves_forward_only() {
    let lines = ["x", "y", "x", "y"];
    assert_eq!(check(&lines, &["x"], 0, false), Some((0, Level::Exact)));
    assert_eq!(check(&lines, &["x"], 1, false), Some((2, Level::Exact)));
    assert_eq!(check(&lines, &["x"], 3, false), None);
    assert_eq!(check(&lines, &["x"], 10, false), None);
}

#[test]
fn end_of_file_anchors_at_the_end() {
    let lines = ["end", "mid", "end"];
    assert_eq!(check(&lines, &["end"], 0, true), Some((2, Level::Exact)));
    assert_eq!(check(&lines, &["mid"], 0, true), None);
    assert_eq!(check(&lines, &["mid", " end "], 0, true), Some((1, Level::Trim)));
    // The anchored position must not be before `start`.
    assert_eq!(check(&lines, &["mid", "end"], 2, true), None);
}

#[test]
fn edge_cases() {
    assert_eq!(check(&[], &["a"], 0, false), None);
    assert_eq!(check(&["a"], &["a", "b"], 0, false), None);
    assert_eq!(check(&["a"], &[] as &[&str], 1, false), Some((1, Level::Exact)));
}
