//! Where `exec`'s events go: codex's JSON lines on stdout (`--json`, [`ExecEventEncoder`]), or
//! progress for a person on stderr and the final message on stdout ([`ProgressEncoder`]).
//!
//! The caller passes both streams as writers, so the runtime never touches the process's own.
//! A failing stdout fails the run (a closed pipe ends it); a failing stderr is the reader's
//! business and is ignored, so the turn goes on.

use std::io::{self, Write};
use std::path::Path;

use codecoder_protocol::exec_event::ThreadEvent;
use codecoder_protocol::{AgentEventKind, SessionId};

use crate::{ExecEventEncoder, HeadlessEnd, Progress, ProgressEncoder, Shown};

/// How `exec` shows its run: as JSON lines, or as text progress.
#[derive(Debug)]
pub enum ExecOutput {
    /// codex's JSON lines on stdout.
    Json(ExecEventEncoder),
    /// Progress on stderr, the final message on stdout.
    Text {
        /// The encoder of the progress lines.
        progress: ProgressEncoder,
        /// Whether stderr's cursor is at the start of a line (streamed text may leave it not).
        at_line_start: bool,
    },
}

impl ExecOutput {
    /// JSON lines when `json`, else text progress.
    pub fn new(json: bool) -> Self {
        if json {
            Self::Json(ExecEventEncoder::new())
        } else {
            Self::Text { progress: ProgressEncoder::new(), at_line_start: true }
        }
    }

    /// Shows that the session started.
    ///
    /// # Errors
    /// When `out` fails.
    pub fn session_started(
        &mut self,
        session_id: SessionId,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> io::Result<()> {
        match self {
            Self::Json(encoder) => json_line(out, &encoder.session_started(session_id)),
            Self::Text { progress, at_line_start } => {
                progress_line(err, at_line_start, &progress.session_started(session_id));
                Ok(())
            }
        }
    }

    /// Shows one thing the headless turn showed.
    ///
    /// # Errors
    /// When `out` fails.
    pub fn show(
        &mut self,
        shown: Shown<'_>,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> io::Result<()> {
        match (self, shown) {
            (Self::Json(encoder), Shown::Event(event)) => {
                if let AgentEventKind::HookMessage { event, message } = &event.kind {
                    // stdout stays codex's event set; the person reads it on stderr as in text
                    // mode.
                    let _ = writeln!(err, "{event} hook: {message}");
                }
                for line in encoder.encode(event) {
                    json_line(out, &line)?;
                }
            }
            (Self::Json(encoder), Shown::Note(text)) => json_line(out, &encoder.note(&text))?,
            // codex ends a plan-mode turn with the plan as its answer, not as an error.
            (Self::Json(encoder), Shown::Plan(plan)) => {
                for line in encoder.answer(plan) {
                    json_line(out, &line)?;
                }
            }
            (Self::Text { progress, at_line_start }, Shown::Event(event)) => {
                match progress.encode(event) {
                    Some(Progress::Text(delta)) => {
                        let _ = err.write_all(delta.as_bytes());
                        let _ = err.flush();
                        *at_line_start = delta.ends_with('\n');
                    }
                    Some(Progress::Line(line)) => progress_line(err, at_line_start, &line),
                    None => {}
                }
            }
            (Self::Text { at_line_start, .. }, Shown::Note(text)) => {
                progress_line(err, at_line_start, &text);
            }
            // The plan goes to stdout as the final message (`finish`).
            (Self::Text { at_line_start, .. }, Shown::Plan(_)) => {
                progress_line(err, at_line_start, "plan presented (no one to approve it in exec)");
            }
        }
        Ok(())
    }

    /// The turn completed: its answer (in plan mode the plan, else the final message) is written
    /// to `last_message_file` if asked (with a warning on `err` when there is none) and shown
    /// (`finish`).
    ///
    /// # Errors
    /// When the file cannot be written, or `out` fails.
    pub fn answer(
        &self,
        end: HeadlessEnd,
        last_message_file: Option<&Path>,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> io::Result<()> {
        let answer = end.plan.unwrap_or(end.final_message);
        if let Some(path) = last_message_file {
            if answer.is_empty() {
                let _ = writeln!(
                    err,
                    "warning: the turn ended without a final message; writing an empty file"
                );
            }
            fs_err::write(path, &answer)?;
        }
        self.finish(&answer, out)
    }

    /// The turn completed: a person gets the final message on stdout (JSON lines carried it).
    ///
    /// # Errors
    /// When `out` fails.
    pub fn finish(&self, final_message: &str, out: &mut dyn Write) -> io::Result<()> {
        if matches!(self, Self::Text { .. }) && !final_message.is_empty() {
            writeln!(out, "{}", final_message.trim_end())?;
        }
        Ok(())
    }
}

/// One JSON object per line, flushed as it is written.
fn json_line(out: &mut dyn Write, event: &ThreadEvent) -> io::Result<()> {
    serde_json::to_writer(&mut *out, event)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// A line on stderr, on a line of its own.
fn progress_line(err: &mut dyn Write, at_line_start: &mut bool, text: &str) {
    if !*at_line_start {
        let _ = err.write_all(b"\n");
    }
    let _ = writeln!(err, "{text}");
    *at_line_start = true;
}

#[cfg(test)]
mod tests;
