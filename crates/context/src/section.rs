//! Prompt sections and the size policy: a section over the refusal threshold is an error, one
//! over the warning threshold adds a `Warning` the caller can show.
//!
//! Invariant: a section's `tokens` is the `o200k_base` count of exactly its `text`.

use std::fmt;
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::tokens::count_tokens;

/// One part of the system prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// What it is (`base instructions`, `environment`, `AGENTS.md`, `agent instructions`).
    pub name: String,
    /// The text, as it appears in the prompt.
    pub text: String,
    /// Its size in tokens.
    pub tokens: u64,
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

    /// Measures `text` as the section `name`: an error when it is too large, else the section
    /// and, when it is large, a warning.
    pub fn check(&self, name: &str, text: String) -> Result<(Section, Option<Warning>)> {
        let tokens = count_tokens(&text);
        if tokens > self.refuse_tokens {
            return Err(Error::SectionTooLarge {
                section: name.to_owned(),
                tokens,
                limit: self.refuse_tokens,
            });
        }
        let warning = (tokens > self.warn_tokens).then(|| Warning::LargeSection {
            section: name.to_owned(),
            tokens,
            threshold: self.warn_tokens,
        });
        Ok((Section { name: name.to_owned(), text, tokens }, warning))
    }
}
