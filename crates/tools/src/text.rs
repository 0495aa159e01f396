//! Text helpers shared by the tools: a head-and-tail capped byte buffer (command output), an
//! incremental UTF-8 decoder for output deltas, and line arithmetic.
//!
//! Invariants: `Capped` holds at most `head + tail` bytes whatever it is fed; `Utf8Stream`
//! never splits a character across two deltas and turns invalid bytes into U+FFFD.

use std::collections::VecDeque;

/// Keeps the first `head` and the last `tail` bytes of a stream, and counts what it dropped.
#[derive(Debug)]
pub(crate) struct Capped {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
    total_lines: u64,
}

impl Capped {
    /// A buffer keeping `limit` bytes in all, half at each end.
    pub(crate) fn new(limit: usize) -> Self {
        let head_cap = limit / 2;
        Self {
            head_cap,
            tail_cap: limit - head_cap,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
            total_lines: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        self.total_lines += memchr::memchr_iter(b'\n', bytes).count() as u64;
        if self.head.len() < self.head_cap {
            let take = bytes.len().min(self.head_cap - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    /// The most bytes it keeps.
    pub(crate) fn limit(&self) -> usize {
        self.head_cap + self.tail_cap
    }

    /// The kept bytes, head then tail (all bytes pushed while nothing was dropped).
    pub(crate) fn kept_bytes(&self) -> Vec<u8> {
        let mut out = self.head.clone();
        out.extend(self.tail.iter());
        out
    }

    /// Bytes pushed in all.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The kept text; when bytes were dropped, head and tail are cut at line boundaries (where
    /// one is near) and a marker in between says how much is missing.
    pub(crate) fn render(&self) -> String {
        let kept = self.head.len() as u64 + self.tail.len() as u64;
        let (tail_first, tail_second) = self.tail.as_slices();
        let mut tail = Vec::with_capacity(self.tail.len());
        tail.extend_from_slice(tail_first);
        tail.extend_from_slice(tail_second);
        if kept == self.total {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        // Cut the head after its last newline and the tail after its first, when that loses
        // less than a quarter of either.
        let head_end = match memchr::memrchr(b'\n', &self.head) {
            Some(at) if at + 1 >= self.head.len() - self.head.len() / 4 => at + 1,
            _ => self.head.len(),
        };
        let tail_start = match memchr::memchr(b'\n', &tail) {
            Some(at) if at < tail.len() / 4 => at + 1,
            _ => 0,
        };
        let head = &self.head[..head_end];
        let tail = &tail[tail_start..];
        let elided = self.total - head.len() as u64 - tail.len() as u64;
        let kept_lines = (memchr::memchr_iter(b'\n', head).count()
            + memchr::memchr_iter(b'\n', tail).count()) as u64;
        let elided_lines = self.total_lines.saturating_sub(kept_lines);
        let mut out = String::from_utf8_lossy(head).into_owned();
        if !out.ends_with('\n') && !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!(
            "[… {elided} bytes ({elided_lines} lines) elided: the output was {} bytes; the first \
             and last parts are shown …]\n",
            self.total
        ));
        out.push_str(&String::from_utf8_lossy(tail));
        out
    }
}

/// Decodes a byte stream into UTF-8 text chunk by chunk, holding back an incomplete character
/// until its remaining bytes arrive.
#[derive(Debug, Default)]
pub(crate) struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    pub(crate) fn decode(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        let mut rest: &[u8] = &self.pending;
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    out.push_str(text);
                    rest = &[];
                    break;
                }
                Err(err) => {
                    let (valid, after) = rest.split_at(err.valid_up_to());
                    out.push_str(&String::from_utf8_lossy(valid));
                    match err.error_len() {
                        Some(len) => {
                            out.push('\u{FFFD}');
                            rest = &after[len..];
                        }
                        // An incomplete character at the end: keep it for the next chunk.
                        None => {
                            rest = after;
                            break;
                        }
                    }
                }
            }
        }
        self.pending = rest.to_vec();
        out
    }

    /// What is left at the end of the stream (an incomplete character, shown as U+FFFD).
    pub(crate) fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }
}

/// The 1-based line number of byte `offset` in `bytes`.
pub(crate) fn line_of(bytes: &[u8], offset: usize) -> usize {
    memchr::memchr_iter(b'\n', &bytes[..offset.min(bytes.len())]).count() + 1
}

/// The Dice coefficient of two sorted bigram lists.
pub(crate) fn dice(a: &[(char, char)], b: &[(char, char)]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    (2 * common) as f64 / (a.len() + b.len()) as f64
}

/// The sorted character bigrams of `text`.
pub(crate) fn bigrams(text: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out: Vec<(char, char)> = chars.windows(2).map(|pair| (pair[0], pair[1])).collect();
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests;
