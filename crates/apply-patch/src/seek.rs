//! Finding a chunk's old lines in a file, with increasingly forgiving comparisons.
//!
//! The levels are tried in order over the whole search range, so an exact match anywhere after
//! `start` wins over a fuzzy one nearer: exact, then trailing whitespace ignored, then
//! surrounding whitespace ignored, then surrounding whitespace ignored and Unicode punctuation
//! (dashes, quotes, odd spaces) mapped to ASCII.
//!
//! Invariant: a match never starts before `start`, so callers that advance `start` past each
//! match scan the file once per level in total, not once per chunk.

#[cfg(test)]
mod tests;

/// How forgiving the comparison that matched was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Exact,
    TrimEnd,
    Trim,
    Normalised,
}

impl Level {
    const ALL: [Level; 4] = [Level::Exact, Level::TrimEnd, Level::Trim, Level::Normalised];

    fn matches(self, line: &str, pattern: &str) -> bool {
        match self {
            Level::Exact => line == pattern,
            Level::TrimEnd => line.trim_end() == pattern.trim_end(),
            Level::Trim => line.trim() == pattern.trim(),
            Level::Normalised => {
                line.trim().chars().map(normalise).eq(pattern.trim().chars().map(normalise))
            }
        }
    }
}

/// Finds `pattern` in `lines` at or after `start`; with `end_of_file`, only where it would end
/// the file. Returns the index of the first matching line and the level that matched. An empty
/// pattern matches at `start`.
pub(crate) fn seek(
    lines: &[&str],
    pattern: &[impl AsRef<str>],
    start: usize,
    end_of_file: bool,
) -> Option<(usize, Level)> {
    if pattern.is_empty() {
        return Some((start, Level::Exact));
    }
    let last_start = lines.len().checked_sub(pattern.len())?;
    let first = if end_of_file { last_start } else { start };
    if first < start {
        return None;
    }
    for level in Level::ALL {
        for idx in first..=last_start {
            let mut candidate = lines[idx..].iter().zip(pattern);
            if candidate.all(|(line, pattern)| level.matches(line, pattern.as_ref())) {
                return Some((idx, level));
            }
        }
    }
    None
}

/// Maps typographic punctuation and unusual spaces to their ASCII look-alikes.
fn normalise(ch: char) -> char {
    match ch {
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{2018}'..='\u{201B}' | '\u{2032}' => '\'',
        '\u{201C}'..='\u{201F}' | '\u{2033}' => '"',
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}
