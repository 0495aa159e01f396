//! Prompt sections and the size policy: a section over the refusal threshold is an error, one
//! over the warning threshold adds a `Warning` the caller can show.
//!
//! Loading the tokenizer costs ~100 ms and ~50 MB (a second under load), on the session's
//! start path, so the policy decides without it when it can: a text never has more
//! `o200k_base` tokens than bytes, so a section of at most the threshold's bytes needs no count
//! at all. The refusal is decided by the cheap estimate unless it is within `ESTIMATE_ERROR` of
//! the threshold, where the exact count does (`tokens_over`); the warning, which stops nothing,
//! by the estimate alone, so a section near 1,000 tokens never costs the tokenizer.
//! Invariant: refusals are those of counting every section exactly, for every text the
//! estimate is within `ESTIMATE_ERROR` of (ordinary code, prose and JSON are within 8%).

use std::fmt;
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::tokens::{estimate_tokens, tokens_over};

/// One part of the system prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// What it is (`base instructions`, `environment`, `AGENTS.md`).
    pub name: String,
    /// The text, as it appears in the prompt.
    pub text: String,
}

impl Section {
    /// Its estimated size in tokens.
    pub fn tokens(&self) -> u64 {
        estimate_tokens(&self.text)
    }
}

/// Something the person should know about the prompt; never fatal.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// A section is larger than the warning threshold.
    LargeSection {
        /// The section's name.
        section: String,
        /// Its size in tokens.
        tokens: u64,
        /// The warning threshold.
        threshold: u64,
    },
    /// The AGENTS.md files were longer than the budget and were cut.
    AgentsMdTruncated {
        /// Bytes kept.
        shown_bytes: usize,
        /// Bytes of all the files joined.
        total_bytes: usize,
        /// The budget.
        budget_bytes: usize,
    },
    /// An instruction file exists but could not be read; it was left out.
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LargeSection { section, tokens, threshold } => write!(
                f,
                "the prompt section `{section}` has ~{tokens} tokens (more than {threshold}); \
                 it is sent with every request"
            ),
            Self::AgentsMdTruncated { shown_bytes, total_bytes, budget_bytes } => write!(
                f,
                "AGENTS.md files total {total_bytes} bytes, over the budget of {budget_bytes}; \
                 only the first {shown_bytes} bytes are used"
            ),
            Self::Unreadable { path, message } => {
                write!(f, "left out {}: {message}", path.display())
            }
        }
    }
}

/// The size thresholds of a section, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionPolicy {
    /// Larger than this is refused.
    pub refuse_tokens: u64,
    /// Larger than this is warned about.
    pub warn_tokens: u64,
}

impl SectionPolicy {
    /// Refuse over 10,000 tokens, warn over 1,000.
    pub fn standard() -> Self {
        Self { refuse_tokens: 10_000, warn_tokens: 1_000 }
    }

    /// An error when `text` is too large to be the section `name`; counts tokens only when it
    /// has more bytes than the refusal threshold.
    pub fn refuse(&self, name: &str, text: &str) -> Result<()> {
        if bytes(text) <= self.refuse_tokens {
            return Ok(());
        }
        let (over, tokens) = tokens_over(text, self.refuse_tokens);
        if over {
            return Err(Error::SectionTooLarge {
                section: name.to_owned(),
                tokens,
                limit: self.refuse_tokens,
            });
        }
        Ok(())
    }

    /// Like `refuse`, then a warning when `text` is large by the estimate (never the exact
    /// count: a warning is not worth the tokenizer's start-up).
    pub fn check(&self, name: &str, text: &str) -> Result<Option<Warning>> {
        self.refuse(name, text)?;
        if bytes(text) <= self.warn_tokens {
            return Ok(None);
        }
        let tokens = estimate_tokens(text);
        Ok((tokens > self.warn_tokens).then(|| Warning::LargeSection {
            section: name.to_owned(),
            tokens,
            threshold: self.warn_tokens,
        }))
    }
}

/// The length of `text` in bytes: an upper bound of its token count.
fn bytes(text: &str) -> u64 {
    u64::try_from(text.len()).unwrap_or(u64::MAX)
}
