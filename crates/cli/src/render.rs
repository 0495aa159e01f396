//! Rendering agent events for `exec`: as text for a person (progress on stderr, the final
//! message on stdout), or as codex-compatible JSON lines (the runtime's `ExecEventEncoder`; see
//! ../shared/reference/exec-jsonl.md). A hook's message for the person (`HookMessage`) has no
//! codex event: it goes to stderr in both modes. Invariant: one JSON object per line, flushed as
//! it is written.

use std::io::Write;

use codecoder_app::{ExecEventEncoder, Messages, result_text};
use codecoder_protocol::exec_event::ThreadEvent;
use codecoder_protocol::{AgentEvent, AgentEventKind, SessionId, ToolResultStatus, Usage};

/// Turns events into output.
pub(crate) trait Renderer {
    /// The session is known.
    fn session_started(
        &mut self,
        session_id: SessionId,
        out: &mut dyn Write,
    ) -> std::io::Result<()>;
    /// One event.
    fn event(&mut self, event: &AgentEvent, out: &mut dyn Write) -> std::io::Result<()>;
    /// A remark of codecoder's own.
    fn note(&mut self, text: &str, out: &mut dyn Write) -> std::io::Result<()>;
    /// The turn ends after the model presented a plan (plan mode) that nobody approves in
    /// exec: the plan is the turn's answer.
    fn plan(&mut self, plan: &str, out: &mut dyn Write) -> std::io::Result<()>;
    /// The text of the last assistant message of the turn.
    fn final_message(&self) -> String;
    /// The turn completed.
    fn finish(&mut self, final_message: &str, out: &mut dyn Write) -> std::io::Result<()>;
}

/// What `--json` prints.
pub(crate) struct JsonRenderer {
    encoder: ExecEventEncoder,
}

impl JsonRenderer {
    /// A renderer at the start of a session.
    pub(crate) fn new() -> Self {
        Self { encoder: ExecEventEncoder::new() }
    }

    fn line(out: &mut dyn Write, event: &ThreadEvent) -> std::io::Result<()> {
        serde_json::to_writer(&mut *out, event)?;
        out.write_all(b"\n")?;
        out.flush()
    }
}

impl Renderer for JsonRenderer {
    fn session_started(
        &mut self,
        session_id: SessionId,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        Self::line(out, &self.encoder.session_started(session_id))
    }

    fn event(&mut self, event: &AgentEvent, out: &mut dyn Write) -> std::io::Result<()> {
        if let AgentEventKind::HookMessage { event, message } = &event.kind {
            // stdout stays codex's event set; the person reads it on stderr as in text mode.
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{event} hook: {message}");
        }
        for line in self.encoder.encode(event) {
            Self::line(out, &line)?;
        }
        Ok(())
    }

    fn note(&mut self, text: &str, out: &mut dyn Write) -> std::io::Result<()> {
        Self::line(out, &self.encoder.note(text))
    }

    fn plan(&mut self, plan: &str, out: &mut dyn Write) -> std::io::Result<()> {
        // codex ends a plan-mode turn with the plan as its answer, not as an error.
        for line in self.encoder.answer(plan) {
            Self::line(out, &line)?;
        }
        Ok(())
    }

    fn final_message(&self) -> String {
        self.encoder.final_message().to_owned()
    }

    fn finish(&mut self, _final_message: &str, _out: &mut dyn Write) -> std::io::Result<()> {
        Ok(())
    }
}

/// What a person sees: progress on stderr, the final message on stdout.
pub(crate) struct HumanRenderer {
    messages: Messages,
    usage: Usage,
    at_line_start: bool,
}

impl HumanRenderer {
    pub(crate) fn new() -> Self {
        Self { messages: Messages::default(), usage: Usage::default(), at_line_start: true }
    }

    fn progress(&mut self, text: &str) {
        let mut err = std::io::stderr().lock();
        if !self.at_line_start {
            let _ = err.write_all(b"\n");
        }
        let _ = writeln!(err, "{text}");
        self.at_line_start = true;
    }
}

impl Renderer for HumanRenderer {
    fn session_started(
        &mut self,
        session_id: SessionId,
        _out: &mut dyn Write,
    ) -> std::io::Result<()> {
        self.progress(&format!("codecoder session {session_id}"));
        Ok(())
    }

    fn event(&mut self, event: &AgentEvent, _out: &mut dyn Write) -> std::io::Result<()> {
        let nested = !event.source.subagent_path.is_empty();
        match &event.kind {
            AgentEventKind::TextDelta { delta, .. } if !nested => {
                self.messages.push(delta);
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(delta.as_bytes());
                let _ = err.flush();
                self.at_line_start = delta.ends_with('\n');
            }
            AgentEventKind::ToolStarted { call, .. } => {
                self.messages.close();
                let args = call.args.to_string();
                let args: String = args.chars().take(160).collect();
                let indent = if nested { "  ↳ " } else { "▸ " };
                self.progress(&format!("{indent}{} {args}", call.name));
            }
            AgentEventKind::ToolFinished { result, .. } => match result {
                Ok(r) if r.status == ToolResultStatus::Success => {}
                Ok(r) => {
                    let text = result_text(r);
                    let first = text.lines().next().unwrap_or_default();
                    self.progress(&format!("  ✗ {first}"));
                }
                Err(err) => self.progress(&format!("  ✗ {err}")),
            },
            AgentEventKind::StepFinished { usage, .. } if !nested => {
                self.usage += *usage;
                self.messages.close();
            }
            AgentEventKind::Warning { message } => self.progress(&format!("warning: {message}")),
            AgentEventKind::Compacted { message, .. } if !nested => {
                self.messages.close();
                self.progress(&format!("[{message}]"));
            }
            AgentEventKind::HookMessage { event, message } => {
                self.progress(&format!("{event} hook: {message}"));
            }
            AgentEventKind::StepRetried { reason, .. } if !nested => {
                self.messages.discard();
                self.progress(&format!("\n[{reason}]"));
            }
            AgentEventKind::TurnDone { .. } if !nested => {
                self.messages.close();
                let u = self.usage;
                self.progress(&format!(
                    "tokens: {} in ({} cached), {} out",
                    u.input_tokens, u.cached_input_tokens, u.output_tokens
                ));
            }
            _ => {}
        }
        Ok(())
    }

    fn note(&mut self, text: &str, _out: &mut dyn Write) -> std::io::Result<()> {
        self.progress(text);
        Ok(())
    }

    fn plan(&mut self, _plan: &str, _out: &mut dyn Write) -> std::io::Result<()> {
        // The plan goes to stdout as the final message (`finish`).
        self.progress("plan presented (no one to approve it in exec)");
        Ok(())
    }

    fn final_message(&self) -> String {
        self.messages.last().to_owned()
    }

    fn finish(&mut self, final_message: &str, out: &mut dyn Write) -> std::io::Result<()> {
        if !final_message.is_empty() {
            writeln!(out, "{}", final_message.trim_end())?;
        }
        Ok(())
    }
}
