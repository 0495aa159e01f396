//! Token counting with the `o200k_base` encoding (tiktoken), loaded once, lazily.
//!
//! Counts are estimates for every model that does not use `o200k_base` (Anthropic's, most open
//! models); they are used for size policy and the context-window check, which only need to be
//! close. Invariant: counting never fails and never panics: if the encoding cannot be loaded, a
//! bytes/4 estimate is used instead.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

/// The encoding, or `None` when it failed to load.
static O200K_BASE: OnceLock<Option<CoreBPE>> = OnceLock::new();

/// The number of tokens of `text` in `o200k_base` (special tokens count as ordinary text).
pub fn count_tokens(text: &str) -> u64 {
    if text.is_empty() {
        return 0;
    }
    let encoding = O200K_BASE.get_or_init(|| tiktoken_rs::o200k_base().ok());
    let count = match encoding {
        Some(encoding) => encoding.encode_ordinary(text).len(),
        None => text.len().div_ceil(4),
    };
    u64::try_from(count).unwrap_or(u64::MAX)
}
