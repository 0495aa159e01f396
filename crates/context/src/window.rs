//! `ContextWindowGuard`: a pre-step interceptor that fails the turn, with a clear message, when
//! the step's request would not fit the model's context window less the output reserve.
//!
//! `PromptBuilder::build` cannot fail, so the check runs before the step instead: the kernel
//! calls interceptors with the history and the input about to be added, which is exactly what
//! the next request will hold. Invariants: the estimate counts the same things as
//! `ContextBuilder::estimate_tokens` on the built request (instructions, tool JSON, the history
//! with blobs inlined as the builder will inline them, the new input), so the guard and
//! `check_fits` agree; tokens are counted only when a byte bound (never below the estimate) does
//! not already show that the request fits.

use std::sync::Arc;

use codecoder_kernel::{StepInfo, StepInterceptor, StepVerdict, ToolSpec};
use codecoder_protocol::UserInput;

use crate::builder::{
    ContextBuilder, MESSAGE_OVERHEAD_TOKENS, bytes, content_bound, content_tokens, message_bound,
    tools_json,
};

/// Rejects a step whose request would not fit. Register it in `AgentDeps::interceptors`.
#[derive(Debug)]
pub struct ContextWindowGuard {
    builder: Arc<ContextBuilder>,
    model: String,
    tools: Vec<ToolSpec>,
    tools_bytes: u64,
}

impl ContextWindowGuard {
    /// A guard for requests built by `builder` for `model` with `tools` (the registry's specs).
    pub fn new(
        builder: Arc<ContextBuilder>,
        model: impl Into<String>,
        tools: Vec<ToolSpec>,
    ) -> Self {
        let tools_bytes = bytes(&tools_json(&tools));
        Self { builder, model: model.into(), tools, tools_bytes }
    }

    /// The estimated size in tokens of the request of the step `info` is about to start, with
    /// `input` added.
    pub fn estimate(&self, info: &StepInfo<'_>, input: &[UserInput]) -> u64 {
        let builder = &self.builder;
        let instructions = builder.known_instructions(info.session_id);
        let history: u64 = info
            .history
            .iter()
            .map(|message| builder.message_tokens(&builder.resolve_message(message)))
            .sum();
        let input: u64 = input
            .iter()
            .map(|input| {
                MESSAGE_OVERHEAD_TOKENS + input.content.iter().map(content_tokens).sum::<u64>()
            })
            .sum();
        builder.text_tokens(&instructions) + builder.tools_tokens(&self.tools) + history + input
    }

    /// An upper bound of `estimate` that counts nothing.
    pub(crate) fn bound(&self, info: &StepInfo<'_>, input: &[UserInput]) -> u64 {
        let builder = &self.builder;
        let history: u64 = info
            .history
            .iter()
            .map(|message| message_bound(&builder.resolve_message(message)))
            .sum();
        let input: u64 = input
            .iter()
            .map(|input| {
                MESSAGE_OVERHEAD_TOKENS + input.content.iter().map(content_bound).sum::<u64>()
            })
            .sum();
        bytes(&builder.known_instructions(info.session_id)) + self.tools_bytes + history + input
    }
}

impl StepInterceptor for ContextWindowGuard {
    fn before_step(&self, info: &StepInfo<'_>, input: &mut Vec<UserInput>) -> StepVerdict {
        if self.bound(info, input) <= self.builder.available() {
            return StepVerdict::Proceed;
        }
        match self.builder.check_needed(&self.model, self.estimate(info, input)) {
            Ok(()) => StepVerdict::Proceed,
            Err(err) => StepVerdict::Reject { message: err.to_string() },
        }
    }
}
