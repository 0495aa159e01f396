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
//!
//! Provider-reported usage is the truth: when the last request's input tokens were reported
//! (`StepInfo::reported`) and its history is still the start of this one, the size is those
//! tokens plus the estimate of only what was appended since (the assistant message, tool
//! results, the new input). The estimator stays the fallback when no usage was reported, and
//! the compactor's due-check goes through the same two functions.

use std::sync::{Arc, Mutex};

use codecoder_kernel::{StepInfo, StepInterceptor, StepVerdict, ToolSpec};
use codecoder_protocol::{Message, UserInput};

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
    /// The byte bound of the last tool list a step brought that differs from `tools` (late
    /// tools joined), by its length: late tools only ever append, so the length names the list.
    late_bytes: Mutex<Option<(usize, u64)>>,
}

impl ContextWindowGuard {
    /// A guard for requests built by `builder` for `model` with `tools` (the registry's specs).
    pub fn new(
        builder: Arc<ContextBuilder>,
        model: impl Into<String>,
        tools: Vec<ToolSpec>,
    ) -> Self {
        let tools_bytes = bytes(&tools_json(&tools));
        Self { builder, model: model.into(), tools, tools_bytes, late_bytes: Mutex::new(None) }
    }

    /// The tools the step's request carries: the step's own list when it has one (late tools
    /// joined), else the registry's specs the guard was made with.
    fn tools<'a>(&'a self, info: &StepInfo<'a>) -> &'a [ToolSpec] {
        if info.tools.is_empty() { &self.tools } else { info.tools }
    }

    /// A byte bound of the step's tools as JSON, computed once per tool list.
    fn tools_bound(&self, info: &StepInfo<'_>) -> u64 {
        let tools = self.tools(info);
        if tools.len() == self.tools.len() {
            return self.tools_bytes;
        }
        let mut cached = self.late_bytes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match *cached {
            Some((len, bound)) if len == tools.len() => bound,
            _ => {
                let bound = bytes(&tools_json(tools));
                *cached = Some((tools.len(), bound));
                bound
            }
        }
    }

    /// The estimated size in tokens of the request of the step `info` is about to start, with
    /// `input` added.
    pub fn estimate(&self, info: &StepInfo<'_>, input: &[UserInput]) -> u64 {
        let builder = &self.builder;
        let (base, appended) = match reported(info) {
            Some((tokens, appended)) => (tokens, appended),
            None => {
                let instructions = builder.known_instructions(info.session_id);
                (
                    builder.text_tokens(&instructions) + builder.tools_tokens(self.tools(info)),
                    info.history,
                )
            }
        };
        let history: u64 = appended
            .iter()
            .map(|message| builder.message_tokens(&builder.resolve_message(message)))
            .sum();
        let input: u64 = input
            .iter()
            .map(|input| {
                MESSAGE_OVERHEAD_TOKENS + input.content.iter().map(content_tokens).sum::<u64>()
            })
            .sum();
        base + history + input
    }

    /// An upper bound of `estimate` that counts nothing.
    pub(crate) fn bound(&self, info: &StepInfo<'_>, input: &[UserInput]) -> u64 {
        let builder = &self.builder;
        let (base, appended) = match reported(info) {
            Some((tokens, appended)) => (tokens, appended),
            None => (
                bytes(&builder.known_instructions(info.session_id)) + self.tools_bound(info),
                info.history,
            ),
        };
        let history: u64 =
            appended.iter().map(|message| message_bound(&builder.resolve_message(message))).sum();
        let input: u64 = input
            .iter()
            .map(|input| {
                MESSAGE_OVERHEAD_TOKENS + input.content.iter().map(content_bound).sum::<u64>()
            })
            .sum();
        base + history + input
    }
}

/// The reported input tokens of the last request and the messages appended since, when the
/// provider reported usage for a request whose history `info.history` still starts with.
fn reported<'a>(info: &StepInfo<'a>) -> Option<(u64, &'a [Message])> {
    let reported = info.reported?;
    let appended = info.history.get(reported.history_len..)?;
    Some((reported.input_tokens, appended))
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
