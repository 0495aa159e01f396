//! Compaction: the history the model sees is replaced by a summary and what must survive it
//! (design.md "Context": compaction is a projection, not truncation).
//!
//! The `Compactor` seam (implemented by the `context` crate, which can count tokens) decides
//! when a request passes the auto-compaction limit, fits the summary request into the window and
//! builds the replacement history. The loop runs the summary request as a step of its own, so
//! the log keeps exactly what the model saw:
//!
//! ```text
//! [compaction {history: the history with the oldest tool outputs dropped}]   only when needed
//! user_message {the summary prompt}
//! step_start · context {no tools} · assistant_message {the summary} · step_end
//! compaction {replacement history}
//! ```
//!
//! Invariants:
//! - Every record is valid where it is written (compaction and user input between steps), so a
//!   crash anywhere leaves a log that validates and resumes; at worst its projection ends with
//!   the summary prompt, which the next compaction replaces.
//! - A compaction never fails a turn because the summary could not be had: a failed or empty
//!   summary falls back to a deterministic trim with a note. Only a cancel (or a hook's
//!   `continue: false`) stops it, and a cancelled one restores the history it started from.
//! - The summary step's text is not streamed to the person and is not the turn's final text;
//!   it sends no step events (its usage counts in the turn's), only `Compacted` at the end.

use codecoder_protocol::{
    AgentEventKind, AgentStatus, Message, RecordBody, Role, SessionId, StepId, UserInput,
};

use crate::agent::StepInfo;
use crate::prompt::PromptInput;
use crate::stream::{Assembly, StreamEnd};
use crate::turn::{AgentLoop, StepState, Stop, TurnState, hook_stop};

/// Why a compaction runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactTrigger {
    /// The next request would pass the auto-compaction limit.
    Auto,
    /// The person asked (`/compact`, `sessions compact`).
    Manual,
}

impl CompactTrigger {
    /// `auto` or `manual` (the PreCompact hook's matcher and `trigger`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Manual => "manual",
        }
    }
}

/// The history for a summary request, fitted into the window.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRequest {
    /// The prompt, sent as the last user message (without tools).
    pub prompt: String,
    /// The history to send before it when it differs from the current one (the oldest tool
    /// outputs dropped so that the request fits); `None` when the history fits as it is.
    pub trimmed: Option<Vec<Message>>,
}

/// What the loop needs to compact: token estimates and the replacement history.
pub trait Compactor: Send + Sync {
    /// Whether the request of the step `info` is about to start, with `input` added, passes the
    /// auto-compaction limit.
    fn should_compact(&self, info: &StepInfo<'_>, input: &[UserInput]) -> bool;
    /// The estimated tokens of `history` as the model sees it.
    fn history_tokens(&self, history: &[Message]) -> u64;
    /// The summary request for `history` (`focus`: what the person wants it to focus on).
    fn summary_request(
        &self,
        session_id: SessionId,
        history: &[Message],
        focus: Option<&str>,
    ) -> SummaryRequest;
    /// The replacement history for `history`: the recent user messages, what must survive
    /// verbatim (plan, files, `extra_context`), and `summary` marked as such, or, when it is
    /// `None`, a note that the history was trimmed without one (`why`).
    fn replacement(
        &self,
        history: &[Message],
        summary: Option<&str>,
        why: &str,
        extra_context: &[String],
    ) -> Vec<Message>;
}

impl AgentLoop {
    /// Compacts the history, running the summary request as step `step` of the turn. Its usage
    /// is added to the turn's. Does nothing without a compactor.
    pub(crate) fn compact(
        &mut self,
        turn_state: &mut TurnState,
        step: StepId,
        trigger: CompactTrigger,
        focus: Option<&str>,
    ) -> Result<(), Stop> {
        let turn = turn_state.id;
        let Some(compactor) = self.env.deps.compactor.clone() else {
            return Ok(());
        };
        if self.writer.history().is_empty() {
            self.emit(AgentEventKind::Warning {
                message: "nothing to compact: the conversation is empty".to_owned(),
            });
            return Ok(());
        }
        let report =
            self.call_hooks(|hooks, scope| hooks.pre_compact(scope, trigger.as_str(), focus))?;
        if let Some(reason) = self.show_hook_report("PreCompact", report) {
            return Err(hook_stop("PreCompact", &reason));
        }
        let original: Vec<Message> = self.writer.history().to_vec();
        let tokens_before = compactor.history_tokens(&original);
        let request = compactor.summary_request(self.writer.session_id(), &original, focus);
        if let Some(trimmed) = request.trimmed {
            self.append(RecordBody::Compaction {
                history: trimmed,
                note: Some(
                    "the oldest tool outputs were dropped so that the summary request fits"
                        .to_owned(),
                ),
            })?;
            self.shared_history.clear();
        }
        self.append(RecordBody::UserMessage { message: Message::user_text(request.prompt) })?;
        let summary = match self.summary_step(turn_state, step) {
            Ok(summary) => summary,
            Err(stop) => {
                // The history goes back to what it was: a cancelled compaction changes nothing
                // the model sees.
                self.close_summary_step(turn_state)?;
                self.append(RecordBody::Compaction {
                    history: original,
                    note: Some("compaction cancelled; the history is restored".to_owned()),
                })?;
                self.shared_history.clear();
                return Err(stop);
            }
        };
        let (summary, why) = match summary {
            Ok(text) if !text.trim().is_empty() => (Some(text), String::new()),
            Ok(_) => (None, "the summary came back empty".to_owned()),
            Err(message) => (None, message),
        };
        let started = self.call_hooks(|hooks, scope| hooks.session_start(scope, "compact"))?;
        if let Some(reason) = self.show_hook_report("SessionStart", started.report) {
            return Err(hook_stop("SessionStart", &reason));
        }
        let history = compactor.replacement(&original, summary.as_deref(), &why, &started.context);
        let tokens_after = compactor.history_tokens(&history);
        let summarized = summary.is_some();
        let message = if summarized {
            format!(
                "context compacted ({}): ~{tokens_before} → ~{tokens_after} tokens",
                trigger.as_str()
            )
        } else {
            format!(
                "context trimmed without a summary ({}; {why}): ~{tokens_before} → ~{tokens_after} tokens",
                trigger.as_str()
            )
        };
        self.append(RecordBody::Compaction { history, note: Some(message.clone()) })?;
        self.shared_history.clear();
        self.emit(AgentEventKind::Compacted {
            turn,
            trigger: trigger.as_str().to_owned(),
            summarized,
            tokens_before,
            tokens_after,
            message,
        });
        let summary = summary.as_deref().unwrap_or("");
        let report =
            self.call_hooks(|hooks, scope| hooks.post_compact(scope, trigger.as_str(), summary))?;
        if let Some(reason) = self.show_hook_report("PostCompact", report) {
            return Err(hook_stop("PostCompact", &reason));
        }
        Ok(())
    }

    /// Runs the summary request as a step: `Ok(Ok(text))` the summary, `Ok(Err(why))` when it
    /// failed (the step is closed and the error logged), `Err` when the turn must stop (the
    /// step is left open for the caller).
    fn summary_step(
        &mut self,
        turn_state: &mut TurnState,
        step: StepId,
    ) -> Result<Result<String, String>, Stop> {
        let turn = turn_state.id;
        self.append(RecordBody::StepStart { turn, step })?;
        self.emit(AgentEventKind::Status(AgentStatus::Thinking));
        // Quiet: nothing of the summary is streamed to the person.
        turn_state.step = StepState::new(step, true);
        self.sync_shared_history();
        let request = self.env.deps.prompt.build(&PromptInput {
            session_id: self.writer.session_id(),
            model: &self.env.config.model,
            agent_instructions: self.env.config.agent_instructions.as_deref(),
            history: &self.shared_history,
            tools: &[],
            turn,
            step,
        });
        self.log_context(&request)?;
        let outcome = match self.env.deps.model.stream(request) {
            Err(err) => Err(format!("the summary request failed: {err}")),
            Ok(mut stream) => {
                let mut assembly = Assembly::default();
                let end = self.read_stream(turn, &mut turn_state.step, &stream, &mut assembly);
                match end {
                    StreamEnd::Completed(_) => {
                        drop(stream);
                        let text = assembly.text();
                        let items = assembly.finish(false);
                        if !items.is_empty() {
                            self.append(RecordBody::AssistantMessage {
                                message: Message::new(Role::Assistant, items),
                            })?;
                        }
                        Ok(text)
                    }
                    StreamEnd::Broken(message) | StreamEnd::Overflow(message) => {
                        stream.abort();
                        turn_state.retired.push(stream);
                        Err(format!("the summary request failed: {message}"))
                    }
                    StreamEnd::Stopped(Stop::Failed(message)) => {
                        stream.abort();
                        turn_state.retired.push(stream);
                        Err(format!("the summary request failed: {message}"))
                    }
                    StreamEnd::Stopped(stop) => {
                        stream.abort();
                        turn_state.retired.push(stream);
                        turn_state.usage += turn_state.step.usage;
                        return Err(stop);
                    }
                }
            }
        };
        if let Err(message) = &outcome {
            self.append(RecordBody::Error { message: message.clone() })?;
        }
        let step_usage = turn_state.step.usage;
        turn_state.usage += step_usage;
        self.append(RecordBody::StepEnd { turn, step, usage: step_usage, stop_reason: None })?;
        Ok(outcome)
    }

    /// Ends the summary step if it is still open.
    fn close_summary_step(&mut self, turn_state: &TurnState) -> Result<(), Stop> {
        if self.writer.trace().open_step().is_some() {
            let (turn, step) = (turn_state.id, turn_state.step.id);
            let usage = turn_state.step.usage;
            self.append(RecordBody::StepEnd { turn, step, usage, stop_reason: None })?;
        }
        Ok(())
    }
}
