//! Token counts: a cheap estimate for the hot path, and the exact `o200k_base` count
//! (tiktoken) where exactness matters.
//!
//! [`estimate_tokens`] classifies bytes in one pass (runs of ASCII letters, digits, whitespace,
//! punctuation; other characters) and weighs the runs the way `o200k_base` tends to split them;
//! it allocates nothing and loads no table. Calibrated against `o200k_base` on code, prose and
//! JSON (`estimator_error_against_o200k` prints the error; BENCHMARKS.md quotes it): within
//! 8% on each of them, 15% asserted. It serves the context-window check and the usage estimate of providers
//! that report none, where the provider's reported usage is the truth anyway.
//!
//! [`count_tokens`] is exact for `o200k_base` (an estimate for other models' tokenizers). The
//! table takes ~100 ms of CPU and ~50 MB to load, so it is loaded once, lazily, and only when an
//! estimate is too close to a threshold to decide it (the prompt sections' budgets); never for a
//! tool output.
//!
//! Invariants: neither function fails nor panics (if the encoding cannot be loaded, the
//! estimate is used); both are at most the byte length (every token covers at least one byte);
//! the checked-in count of the base instructions equals the real one (a unit test).

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

use crate::base::{BASE_INSTRUCTIONS, BASE_INSTRUCTIONS_TOKENS};

/// The encoding, or `None` when it failed to load.
static O200K_BASE: OnceLock<Option<CoreBPE>> = OnceLock::new();

/// The most [`estimate_tokens`] is off from `o200k_base` on ordinary text, as a fraction: a
/// threshold further than this from the estimate is decided without the exact count.
pub const ESTIMATE_ERROR: f64 = 0.3;

/// The exact number of tokens of `text` in `o200k_base` (special tokens count as ordinary
/// text). Loads the encoding on first use: keep it off the hot path.
pub fn count_tokens(text: &str) -> u64 {
    if text.is_empty() {
        return 0;
    }
    if text == BASE_INSTRUCTIONS {
        return BASE_INSTRUCTIONS_TOKENS;
    }
    u64::try_from(count_with_encoding(text)).unwrap_or(u64::MAX)
}

/// The count from the encoding itself, without shortcuts.
pub(crate) fn count_with_encoding(text: &str) -> usize {
    match O200K_BASE.get_or_init(|| tiktoken_rs::o200k_base().ok()) {
        Some(encoding) => encoding.encode_ordinary(text).len(),
        None => usize::try_from(estimate_tokens(text)).unwrap_or(usize::MAX),
    }
}

/// Whether `text` has more than `threshold` tokens: decided from the estimate when it is far
/// enough from the threshold, else counted exactly. Returns the count it decided with.
pub fn tokens_over(text: &str, threshold: u64) -> (bool, u64) {
    let estimate = estimate_tokens(text);
    #[expect(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let (low, high) = (
        (threshold as f64 * (1.0 - ESTIMATE_ERROR)) as u64,
        (threshold as f64 * (1.0 + ESTIMATE_ERROR)) as u64,
    );
    if estimate < low || estimate > high {
        return (estimate > threshold, estimate);
    }
    let exact = count_tokens(text);
    (exact > threshold, exact)
}

/// A cheap estimate of the tokens of `text` in `o200k_base`: one pass over the bytes, no table.
pub fn estimate_tokens(text: &str) -> u64 {
    if text == BASE_INSTRUCTIONS {
        return BASE_INSTRUCTIONS_TOKENS;
    }
    let bytes = text.as_bytes();
    // Weights in thousandths of a token.
    let mut milli: u64 = 0;
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        let start = at;
        if byte.is_ascii_alphabetic() {
            // A word: one token up to about eight letters, one more per further six. A capital
            // after a lower-case letter starts a new piece (camelCase).
            at += 1;
            let mut pieces = 1;
            while at < bytes.len() && bytes[at].is_ascii_alphabetic() {
                if bytes[at].is_ascii_uppercase() && bytes[at - 1].is_ascii_lowercase() {
                    pieces += 1;
                }
                at += 1;
            }
            let len = (at - start) as u64;
            milli += 1000 * pieces.max(1 + len.saturating_sub(8).div_ceil(6));
        } else if byte.is_ascii_digit() {
            // Digits go in groups of up to three.
            while at < bytes.len() && bytes[at].is_ascii_digit() {
                at += 1;
            }
            milli += 1000 * ((at - start) as u64).div_ceil(3);
        } else if byte == b' ' || byte == b'\t' || byte == b'\n' || byte == b'\r' {
            // A single space joins the next word; a longer run (indentation, line breaks) is
            // about one token.
            while at < bytes.len() && matches!(bytes[at], b' ' | b'\t' | b'\n' | b'\r') {
                at += 1;
            }
            let run = &bytes[start..at];
            let newlines = run.iter().filter(|&&b| b == b'\n').count() as u64;
            if run.len() > 1 || newlines > 0 {
                milli += 700 + 150 * newlines.saturating_sub(1);
            } else if bytes.get(at).is_some_and(u8::is_ascii_digit) {
                // Digits never take the space before them: it is a token of its own.
                milli += 1000;
            }
        } else if byte.is_ascii() {
            // Punctuation: common pairs (`::`, `->`, `",`, `();`) are one token.
            while at < bytes.len() && bytes[at].is_ascii_punctuation() {
                at += 1;
            }
            if at == start {
                // A control character.
                at += 1;
            }
            milli += 500 * (at - start) as u64 + 250;
        } else {
            // Other characters: three tokens per four CJK characters (3 bytes), one per emoji (4),
            // two
            // characters per token for accented Latin, Greek, Cyrillic (2 bytes).
            let width = match byte {
                0xF0..=0xFF => 4,
                0xE0..=0xEF => 3,
                _ => 2,
            };
            at = (at + width).min(bytes.len());
            milli += match width {
                2 => 550,
                3 => 750,
                _ => 1000,
            };
        }
    }
    milli.div_ceil(1000).min(bytes.len() as u64)
}
