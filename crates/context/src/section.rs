//! Prompt sections and the size policy: a section over the refusal threshold is an error, one
//! over the warning threshold adds a `Warning` the caller can show.
//!
//! Loading the tokenizer costs about half a second, so the policy counts only when the byte
//! length leaves the answer open: a text never has more `o200k_base` tokens than bytes, so a
//! section of at most `warn_tokens` bytes needs no count at all. Invariant: the decisions are
//! exactly those of counting every section.

use std::fmt;
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::tokens::count_tokens;

/// One part of the system prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// What it is (`base instructions`, `environment`, `AGENTS.md`).
    pub name: String,
    /// The text, as it appears in the prompt.
    pub text: String,
}

impl Section {
    /// Its size in tokens (loads the tokenizer on first use).
    pub fn tokens(&self) -> u64 {
        count_tokens(&self.text)
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
        let tokens = count_tokens(text);
        if tokens > self.refuse_tokens {
            return Err(Error::SectionTooLarge {
                section: name.to_owned(),
                tokens,
                limit: self.refuse_tokens,
            });
        }
        Ok(())
    }

    /// Like `refuse`, then a warning when `text` is large; counts tokens only when it has more
    /// bytes than the warning threshold.
    pub fn check(&self, name: &str, text: &str) -> Result<Option<Warning>> {
        self.refuse(name, text)?;
        if bytes(text) <= self.warn_tokens {
            return Ok(None);
        }
        let tokens = count_tokens(text);
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
