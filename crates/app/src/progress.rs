//! `codecoder exec`'s progress for a person (its text mode; `--json` is `ExecEventEncoder`'s):
//! agent events → the model's text as it streams and one line per thing that happened (a call
//! started, a call failed, a warning, a retry, a compaction, a hook's message, the turn's
//! tokens). A call is shown by its tool's name and its arguments, cut to 160 characters.
//!
//! Invariant: the root agent's text is shown, its subagents' is not; a subagent's calls are
//! shown indented under the call that started it.

use codecoder_protocol::{AgentEvent, AgentEventKind, SessionId, ToolResultStatus, Usage};

use crate::result_text;

/// How many characters of a call's arguments a progress line shows.
const ARGS_SHOWN: usize = 160;

/// A piece of progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// The model's text, as it streams: written as it comes.
    Text(String),
    /// A line of its own (it starts on a new line).
    Line(String),
}

/// Turns one session's agent events into progress.
#[derive(Debug, Default)]
pub struct ProgressEncoder {
    usage: Usage,
}

impl ProgressEncoder {
    /// An encoder at the start of a session.
    pub fn new() -> Self {
        Self::default()
    }

    /// The first line: the session is known.
    pub fn session_started(&self, session_id: SessionId) -> String {
        format!("codecoder session {session_id}")
    }

    /// The progress one event becomes, if any.
    pub fn encode(&mut self, event: &AgentEvent) -> Option<Progress> {
        let nested = !event.source.subagent_path.is_empty();
        let line = match &event.kind {
            AgentEventKind::TextDelta { delta, .. } if !nested => {
                return Some(Progress::Text(delta.clone()));
            }
            AgentEventKind::ToolStarted { call, .. } => {
                let args: String = call.args.to_string().chars().take(ARGS_SHOWN).collect();
                let indent = if nested { "  ↳ " } else { "▸ " };
                format!("{indent}{} {args}", call.name)
            }
            AgentEventKind::ToolFinished { result, .. } => match result {
                Ok(r) if r.status == ToolResultStatus::Success => return None,
                Ok(r) => {
                    let text = result_text(r);
                    format!("  ✗ {}", text.lines().next().unwrap_or_default())
                }
                Err(err) => format!("  ✗ {err}"),
            },
            AgentEventKind::StepFinished { usage, .. } if !nested => {
                self.usage += *usage;
                return None;
            }
            AgentEventKind::Warning { message } => format!("warning: {message}"),
            AgentEventKind::Compacted { message, .. } if !nested => format!("[{message}]"),
            AgentEventKind::HookMessage { event, message } => format!("{event} hook: {message}"),
            AgentEventKind::StepRetried { reason, .. } if !nested => format!("\n[{reason}]"),
            AgentEventKind::TurnDone { .. } if !nested => {
                let u = self.usage;
                format!(
                    "tokens: {} in ({} cached), {} out",
                    u.input_tokens, u.cached_input_tokens, u.output_tokens
                )
            }
            _ => return None,
        };
        Some(Progress::Line(line))
    }
}

#[cfg(test)]
mod tests;
