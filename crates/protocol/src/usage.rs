//! Token usage, as providers report it, in the field names of codex's `turn.completed`.

use std::ops::AddAssign;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Tokens used by one request, one step, or summed over a turn or session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens, including cached ones.
    pub input_tokens: u64,
    /// The part of `input_tokens` served from the provider's prompt cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Generated tokens, including reasoning.
    pub output_tokens: u64,
    /// The part of `output_tokens` spent on reasoning.
    #[serde(default)]
    pub reasoning_output_tokens: u64,
}

impl AddAssign for Usage {
    fn add_assign(&mut self, rhs: Self) {
        self.input_tokens += rhs.input_tokens;
        self.cached_input_tokens += rhs.cached_input_tokens;
        self.output_tokens += rhs.output_tokens;
        self.reasoning_output_tokens += rhs.reasoning_output_tokens;
    }
}
