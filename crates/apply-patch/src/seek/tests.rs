//! Unit tests of `seek`: each level, the order of levels, forward-only search and EOF anchoring.

use crate::seek::{Haystack, Level};

fn check(
    lines: &[&str],
    pattern: &[&str],
    start: usize,
    end_of_file: bool,
) -> Option<(usize, Level)> {
    Haystack::new(lines).seek(pattern, start, end_of_file)
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

#[test]
fn the_index_gives_the_same_answers_as_a_scan() {
    let n_lines = 640;
    let mut lines: Vec<String> = (0..n_lines).map(|idx| format!("line {}", idx % 7)).collect();
    lines[n_lines - 20] = "  needle \u{2014} here".to_owned();
    lines[n_lines - 10] = "needle - here".to_owned();
    lines[n_lines - 9] = "after".to_owned();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let haystack = Haystack::new(&lines);
    assert_eq!(
        haystack.seek(&["needle - here", "after"], 0, false),
        Some((n_lines - 10, Level::Exact))
    );
    assert_eq!(haystack.seek(&["needle - here"], n_lines - 9, false), None);
    assert_eq!(
        haystack.seek(&["needle \u{2013} here"], 0, false),
        Some((n_lines - 20, Level::Normalised))
    );
    assert_eq!(haystack.seek(&["needle - here  "], 0, false), Some((n_lines - 10, Level::TrimEnd)));
    assert_eq!(haystack.seek(&["line 3", "line 4"], 501, false), Some((507, Level::Exact)));
    assert_eq!(haystack.seek(&["line 3", "line 5"], 0, false), None);
    assert_eq!(haystack.seek(&["missing"], 0, false), None);
}

/// The definition: each level in turn, every start position in turn.
fn naive(
    lines: &[&str],
    pattern: &[&str],
    start: usize,
    end_of_file: bool,
) -> Option<(usize, Level)> {
    if pattern.is_empty() {
        return Some((start, Level::Exact));
    }
    let last_start = lines.len().checked_sub(pattern.len())?;
    for level in Level::ALL {
        for idx in start..=last_start {
            if end_of_file && idx != last_start {
                continue;
            }
            if lines[idx..].iter().zip(pattern).all(|(line, pattern)| level.matches(line, pattern))
            {
                return Some((idx, level));
            }
        }
    }
    None
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config { cases: 64, failure_persistence: None, ..Default::default() })]

    #[test]
    fn seek_agrees_with_the_naive_definition(
        lines in proptest::collection::vec("( |\u{a0})?[ab](\u{2014}|-)?( )?", 0..250),
        pattern in proptest::collection::vec("( )?[ab](-|\u{2013})?", 1..3),
        start in 0..260usize,
        end_of_file: bool,
        scan_budget in 0..300usize,
    ) {
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let pattern: Vec<&str> = pattern.iter().map(String::as_str).collect();
        let haystack = Haystack::with_scan_budget(&lines, scan_budget);
        // Twice, so that the second seek may find the index built or the budget spent.
        for start in [start, start / 2] {
            proptest::prop_assert_eq!(
                haystack.seek(&pattern, start, end_of_file),
                naive(&lines, &pattern, start, end_of_file)
            );
        }
    }
}
