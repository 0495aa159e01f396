//! Reasoning settings of model requests: how hard the model thinks, which summary it returns,
//! and Anthropic's thinking budget. They are part of what a request shows the model, so the
//! `context` record logs them and a rebuilt request carries them again.
//!
//! Invariant: names are codex's (`model_reasoning_effort`, `model_reasoning_summary`); each
//! wire API maps them to its own fields, and an empty `ReasoningSettings` sends nothing.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How hard a reasoning model thinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    /// No reasoning, where the model allows it.
    None,
    /// As little as the model allows.
    Minimal,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// The most the model offers (Anthropic's adaptive `max`).
    #[serde(rename = "xhigh")]
    XHigh,
}

impl ReasoningEffort {
    /// Every effort, weakest first (for pickers).
    pub const ALL: [ReasoningEffort; 6] =
        [Self::None, Self::Minimal, Self::Low, Self::Medium, Self::High, Self::XHigh];

    /// The name OpenAI's APIs and config files use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::XHigh => "xhigh",
        }
    }
}

impl fmt::Display for ReasoningEffort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ReasoningEffort {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|effort| effort.as_str() == s).ok_or_else(|| {
            format!("unknown reasoning effort `{s}` (none, minimal, low, medium, high, xhigh)")
        })
    }
}

/// Which reasoning summary the Responses API returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningSummary {
    /// The model's choice.
    Auto,
    /// Short.
    Concise,
    /// Long.
    Detailed,
    /// No summary.
    None,
}

impl ReasoningSummary {
    /// The name the API and config files use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Concise => "concise",
            Self::Detailed => "detailed",
            Self::None => "none",
        }
    }
}

/// The reasoning settings of requests (empty: none sent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningSettings {
    /// Responses `reasoning.effort`, Chat `reasoning_effort`, Anthropic thinking (a budget by
    /// effort, or adaptive thinking's effort where the model has it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<ReasoningEffort>,
    /// Responses `reasoning.summary` (`auto` when an effort is set and this is not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<ReasoningSummary>,
    /// Anthropic `thinking.budget_tokens`; overrides the budget the effort maps to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u32>,
}

impl ReasoningSettings {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.effort.is_none() && self.summary.is_none() && self.budget_tokens.is_none()
    }
}
