//! Token counting with the `o200k_base` encoding (tiktoken), loaded once, lazily.
//!
//! Counts are estimates for every model that does not use `o200k_base` (Anthropic's, most open
//! models); they serve the size policy and the context-window check, which only need to be
//! close. Loading the encoding takes about half a second (release build), so callers first try
//! the byte length, an upper bound (every token covers at least one byte), and count only when
//! that bound does not settle the question; the standard base instructions have a checked-in
//! count. Invariants: counting never fails and never panics (if the encoding cannot be loaded,
//! a bytes/4 estimate is used); the checked-in count equals the real one (a unit test).

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

use crate::base::{BASE_INSTRUCTIONS, BASE_INSTRUCTIONS_TOKENS};

/// The encoding, or `None` when it failed to load.
static O200K_BASE: OnceLock<Option<CoreBPE>> = OnceLock::new();

/// The number of tokens of `text` in `o200k_base` (special tokens count as ordinary text).
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
        None => text.len().div_ceil(4),
    }
}
