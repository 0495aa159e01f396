//! Finding a chunk's old lines in a file, with increasingly forgiving comparisons.
//!
//! The levels are tried in order over the whole search range, so an exact match anywhere after
//! `start` wins over a fuzzy one nearer: exact, then trailing whitespace ignored, then
//! surrounding whitespace ignored, then surrounding whitespace ignored and Unicode punctuation
//! (dashes, quotes, odd spaces) mapped to ASCII.
//!
//! Cost: levels scan line by line from `start`. Callers move `start` forward past each match,
//! so hits cost at most one pass over the file in total; only misses (a scan to the end of the
//! file) are expensive. Once a level has scanned twice the file's length in total, it builds
//! an index of the file's lines (their hashes sorted with their positions) and from then on
//! looks candidates up with a binary search, so a patch that misses on every chunk stays
//! linear too.
//!
//! Invariant: a match never starts before `start`, and the result is exactly that of a linear
//! scan level by level (the index only yields candidates, which are checked in full).

#[cfg(test)]
mod tests;

use std::cell::{Cell, OnceCell};

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

    /// A hash that is equal for lines this level considers equal.
    fn key(self, line: &str) -> u64 {
        match self {
            Level::Exact => hash_bytes(line.as_bytes()),
            Level::TrimEnd => hash_bytes(line.trim_end().as_bytes()),
            Level::Trim => hash_bytes(line.trim().as_bytes()),
            Level::Normalised => line
                .trim()
                .chars()
                .map(normalise)
                .fold(0, |hash, ch| mix(hash, u64::from(u32::from(ch)))),
        }
    }
}

/// The lines of one file, with the per-level indexes built on demand.
pub(crate) struct Haystack<'a> {
    lines: &'a [&'a str],
    /// Per level: how many more start positions may be tried one by one before the index is
    /// built.
    scan_budgets: [Cell<usize>; 4],
    /// Per level: `(key, line index)` for every line, sorted.
    indexes: [OnceCell<Vec<(u64, usize)>>; 4],
}

impl<'a> Haystack<'a> {
    pub(crate) fn new(lines: &'a [&'a str]) -> Haystack<'a> {
        Haystack::with_scan_budget(lines, 2 * lines.len() + 1024)
    }

    /// Like [`Haystack::new`], with `scan_budget` start positions per level before the index.
    pub(crate) fn with_scan_budget(lines: &'a [&'a str], scan_budget: usize) -> Haystack<'a> {
        Haystack {
            lines,
            scan_budgets: std::array::from_fn(|_| Cell::new(scan_budget)),
            indexes: Default::default(),
        }
    }

    /// Finds `pattern` at or after `start`; with `end_of_file`, only where it would end the
    /// file. Returns the index of the first matching line and the level that matched. An
    /// empty pattern matches at `start`.
    pub(crate) fn seek(
        &self,
        pattern: &[impl AsRef<str>],
        start: usize,
        end_of_file: bool,
    ) -> Option<(usize, Level)> {
        if pattern.is_empty() {
            return Some((start, Level::Exact));
        }
        let last_start = self.lines.len().checked_sub(pattern.len())?;
        let first = if end_of_file { last_start } else { start };
        if first < start || first > last_start {
            return None;
        }
        Level::ALL.into_iter().find_map(|level| {
            self.seek_level(level, pattern, first, last_start).map(|idx| (idx, level))
        })
    }

    fn matches_at(&self, level: Level, pattern: &[impl AsRef<str>], idx: usize) -> bool {
        self.lines[idx..]
            .iter()
            .zip(pattern)
            .all(|(line, pattern)| level.matches(line, pattern.as_ref()))
    }

    /// The first start in `first..=last_start` where `pattern` matches at `level`.
    fn seek_level(
        &self,
        level: Level,
        pattern: &[impl AsRef<str>],
        first: usize,
        last_start: usize,
    ) -> Option<usize> {
        let scan_budget = &self.scan_budgets[level as usize];
        let mut idx = first;
        while scan_budget.get() > 0 {
            if idx > last_start {
                return None;
            }
            if self.matches_at(level, pattern, idx) {
                return Some(idx);
            }
            scan_budget.set(scan_budget.get() - 1);
            idx += 1;
        }
        let index = self.indexes[level as usize].get_or_init(|| {
            let mut index: Vec<(u64, usize)> =
                self.lines.iter().enumerate().map(|(idx, line)| (level.key(line), idx)).collect();
            index.sort_unstable();
            index
        });
        let key = level.key(pattern[0].as_ref());
        let from = index.partition_point(|&entry| entry < (key, idx));
        index[from..]
            .iter()
            .take_while(|&&(entry_key, idx)| entry_key == key && idx <= last_start)
            .map(|&(_, idx)| idx)
            .find(|&idx| self.matches_at(level, pattern, idx))
    }
}

/// One step of a small multiplicative hash (in the style of FxHash): fast, not DoS-resistant,
/// which is fine because every candidate it yields is compared in full.
fn mix(hash: u64, word: u64) -> u64 {
    (hash.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95)
}

fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut chunks = bytes.chunks_exact(8);
    let mut hash = 0;
    for chunk in &mut chunks {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        hash = mix(hash, u64::from_le_bytes(word));
    }
    let mut word = [0; 8];
    word[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    mix(mix(hash, u64::from_le_bytes(word)), bytes.len() as u64)
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
