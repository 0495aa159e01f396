//! A session's log for people: a readable transcript (`sessions show`), and the exact body of one
//! logged request (`sessions show --request N`), rebuilt from the log and encoded by the code
//! the HTTP client uses.
//!
//! The transcript reads the log through its replay (`history`, with every record's detail):
//! this module only lays out lines, and knows nothing of which record follows which.

use std::io::Write;

use codecoder_protocol::{
    AgentEventKind, BlobRef, ContentItem, Message, MessageItem, ToolResult, TurnOutcome,
};
use codecoder_session::{BlobStore, LoadedSession, SessionStore};
use codecoder_stdx::format_utc_ms;

use crate::Runtime;
use crate::error::{Error, Result};
use crate::history::{self, HistoryEvent, LogEvent, Replayed};

/// How many lines of a reasoning block or tool output a transcript shows.
const PREVIEW_LINES: usize = 6;

impl Runtime {
    /// The body of model request `number` (from 1, over the whole session) as it was sent.
    ///
    /// # Errors
    /// `Usage` when the session has no such request; an error when the log records no
    /// context to rebuild it from, or its provider is unknown here.
    pub fn request_body(&self, loaded: &LoadedSession, number: usize) -> Result<Vec<u8>> {
        let count = codecoder_context::request_count(loaded);
        if number == 0 || number > count {
            return Err(Error::usage(format!(
                "--request {number}: the session has {count} model request(s), numbered from 1"
            )));
        }
        let blobs = SessionStore::new(&self.home).blobs();
        let resolve = |blob: &BlobRef| blobs.resolve(blob).ok();
        let rebuilt = codecoder_context::rebuild_request(loaded, number, Some(&resolve))?;
        let provider = self.provider_config(&rebuilt.context.provider)?;
        Ok(codecoder_providers::encode_request(&provider, &rebuilt.request)?)
    }
}

/// Writes a readable transcript of `loaded` (blobs looked up in `blobs`): the session's replay
/// (`history`) with every record the log holds, one block per record.
///
/// # Errors
/// When `out` fails.
pub fn write_transcript(
    blobs: &BlobStore,
    loaded: &LoadedSession,
    out: &mut dyn Write,
) -> Result<()> {
    let meta = &loaded.meta;
    writeln!(out, "session {}", meta.session_id)?;
    writeln!(out, "  model {} ({}) · cwd {}", meta.model, meta.provider, meta.cwd)?;
    if let Some(fork) = &meta.forked_from {
        writeln!(out, "  forked from {} at seq {}", fork.session_id, fork.seq)?;
    }
    if let Some(parent) = &meta.parent {
        writeln!(out, "  subagent of {} (call {})", parent.session_id, parent.tool_call_id)?;
    }
    let viewer = history::BuiltinViewer::new();
    let config = history::ReplayConfig {
        viewer: &viewer,
        detail: history::Detail::Log,
        rewound: history::Rewound::Show,
    };
    // The sink cannot fail: the first write error is kept, and nothing is written after it.
    let mut failed: Result<()> = Ok(());
    history::replay(loaded, &config, &mut |replayed| {
        if failed.is_ok() {
            failed = write_event(blobs, &replayed, out);
        }
    });
    failed?;
    if let Some(torn) = loaded.torn_tail {
        writeln!(out, "  [line {}: torn by a crash ({} bytes), dropped]", torn.line, torn.len)?;
    }
    if loaded.trace.needs_repair() {
        writeln!(out, "  [the log stops mid-turn; it is closed on resume]")?;
    }
    Ok(())
}

fn write_event(blobs: &BlobStore, replayed: &Replayed, out: &mut dyn Write) -> Result<()> {
    let ts = replayed.ts;
    match &replayed.event {
        HistoryEvent::Agent(kind) => write_agent_event(kind, ts, out)?,
        HistoryEvent::User(input) => {
            for item in &input.content {
                match item {
                    ContentItem::Text { text } => write_block("user:", text, usize::MAX, out)?,
                    ContentItem::Image(image) => {
                        writeln!(out, "user: [image {}]", image.media_type)?
                    }
                    ContentItem::BlobRef(blob) => writeln!(
                        out,
                        "user: [attachment {} · {} bytes]",
                        blob.media_type, blob.size
                    )?,
                }
            }
        }
        HistoryEvent::Approval(approval) => writeln!(
            out,
            "    approval for {}: {:?} (by {})",
            approval.call_id, approval.decision, approval.decided_by
        )?,
        HistoryEvent::Rewind(rewind) => {
            let what = match (rewind.conversation, rewind.files) {
                (true, true) => "conversation and files",
                (true, false) => "conversation",
                (false, true) => "files",
                (false, false) => "nothing",
            };
            writeln!(
                out,
                "\n── rewound {what} to before turn {} · {} ──",
                rewind.turn,
                format_utc_ms(ts)
            )?;
            for path in &rewind.restored {
                writeln!(out, "    restored {path}")?;
            }
            for path in &rewind.skipped {
                writeln!(out, "    left alone (changed outside codecoder) {path}")?;
            }
        }
        HistoryEvent::Log(event) => write_log_event(blobs, event, ts, out)?,
    }
    Ok(())
}

/// The lines of what the live run showed. Results, calls and compactions are written from the
/// log's own events, which say more (who wrote a result, every compaction record).
fn write_agent_event(kind: &AgentEventKind, ts: u64, out: &mut dyn Write) -> Result<()> {
    match kind {
        AgentEventKind::TurnStarted { turn } => {
            writeln!(out, "\n── turn {turn} · {} ──", format_utc_ms(ts))?;
        }
        AgentEventKind::TurnDone { turn, outcome, usage, .. } => {
            let outcome = match outcome {
                TurnOutcome::Completed => "completed".to_owned(),
                TurnOutcome::Cancelled => "cancelled".to_owned(),
                TurnOutcome::Interrupted => "interrupted".to_owned(),
                TurnOutcome::Failed { message } => format!("failed: {message}"),
            };
            writeln!(
                out,
                "── end of turn {turn}: {outcome} · {} in ({} cached) / {} out ──",
                usage.input_tokens, usage.cached_input_tokens, usage.output_tokens
            )?;
        }
        AgentEventKind::StepStarted { step, .. } => writeln!(out, "  · step {step}")?,
        AgentEventKind::TextDelta { delta, .. } => {
            write_block("assistant:", delta, usize::MAX, out)?;
        }
        AgentEventKind::ReasoningDelta { delta, .. } => {
            write_block("  (reasoning)", delta, PREVIEW_LINES, out)?;
        }
        AgentEventKind::ToolStarted { call, .. } => writeln!(out, "    ▶ running {}", call.id)?,
        AgentEventKind::ToolFinished { .. }
        | AgentEventKind::CallProgress { .. }
        | AgentEventKind::ToolOutputDelta { .. }
        | AgentEventKind::StepRetried { .. }
        | AgentEventKind::Compacted { .. }
        | AgentEventKind::StepFinished { .. }
        | AgentEventKind::AgentMessage { .. }
        | AgentEventKind::Status(_)
        | AgentEventKind::ApprovalRequest(_)
        | AgentEventKind::AskUser(_)
        | AgentEventKind::Usage { .. }
        | AgentEventKind::Warning { .. }
        | AgentEventKind::HookMessage { .. }
        | AgentEventKind::ShutdownComplete
        | AgentEventKind::UserPrompt { .. } => {}
    }
    Ok(())
}

fn write_log_event(
    blobs: &BlobStore,
    event: &LogEvent,
    ts: u64,
    out: &mut dyn Write,
) -> Result<()> {
    match event {
        LogEvent::Started => writeln!(out, "  started {}", format_utc_ms(ts))?,
        LogEvent::Context(context) => {
            let names: Vec<&str> =
                context.sections.iter().map(|section| section.name.as_str()).collect();
            writeln!(
                out,
                "  [context: {} ({}) · sections: {} · {} tool(s)]",
                context.model,
                context.provider,
                names.join(", "),
                context.tools.len()
            )?;
        }
        LogEvent::Call(call) => writeln!(out, "    → {} {} [{}]", call.name, call.args, call.id)?,
        LogEvent::SummaryStep { step, .. } => writeln!(out, "  · step {step}")?,
        LogEvent::SummaryRequest(message) => write_message("user", message, out)?,
        LogEvent::SummaryAnswer(message) => write_message("assistant", message, out)?,
        LogEvent::Result { result, synthetic } => {
            write_tool_result(blobs, result, synthetic.is_some(), out)?;
        }
        LogEvent::Compaction { messages, note } => writeln!(
            out,
            "  [compaction: history replaced by {messages} message(s){}]",
            note.as_ref().map(|n| format!(": {n}")).unwrap_or_default()
        )?,
        LogEvent::Checkpoint(checkpoint) => {
            writeln!(
                out,
                "  [checkpoint of turn {}: {} file(s)]",
                checkpoint.turn,
                checkpoint.files.len()
            )?;
            for file in &checkpoint.files {
                let what = match (&file.before, &file.after) {
                    (None, Some(_)) => "created",
                    (Some(_), None) => "deleted",
                    (None, None) => "created and removed",
                    (Some(_), Some(_)) => "changed",
                };
                let by = match file.by {
                    codecoder_protocol::ChangedBy::Tool => "by a tool",
                    codecoder_protocol::ChangedBy::Shell => "by a command",
                };
                writeln!(out, "    {what} {by}: {}", file.path)?;
            }
            for note in &checkpoint.notes {
                writeln!(out, "    note: {note}")?;
            }
        }
        LogEvent::Error { message } => writeln!(out, "  error: {message}")?,
        LogEvent::SessionEnd => writeln!(out, "\nsession ended {}", format_utc_ms(ts))?,
        LogEvent::Unknown { line, type_name } => writeln!(
            out,
            "  [line {line}: record of unknown type `{type_name}` (from a newer codecoder), kept]"
        )?,
    }
    Ok(())
}

fn write_message(who: &str, message: &Message, out: &mut dyn Write) -> Result<()> {
    for item in &message.items {
        match item {
            MessageItem::Text { text } => write_block(&format!("{who}:"), text, usize::MAX, out)?,
            MessageItem::Reasoning(reasoning) => {
                write_block("  (reasoning)", &reasoning.text, PREVIEW_LINES, out)?;
            }
            MessageItem::ToolCall(call) => {
                writeln!(out, "    → {} {} [{}]", call.name, call.args, call.id)?;
            }
            MessageItem::ToolResult(result) => {
                writeln!(out, "    ← result for {}", result.tool_call_id)?
            }
            MessageItem::Image(image) => writeln!(out, "{who}: [image {}]", image.media_type)?,
            MessageItem::BlobRef(blob) => {
                writeln!(out, "{who}: [attachment {} · {} bytes]", blob.media_type, blob.size)?;
            }
        }
    }
    Ok(())
}

fn write_tool_result(
    blobs: &BlobStore,
    result: &ToolResult,
    synthetic: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let marker = if synthetic { " (written by codecoder)" } else { "" };
    writeln!(out, "    ← {} {:?}{marker}", result.tool_call_id, result.status)?;
    for item in &result.content {
        match item {
            ContentItem::Text { text } => write_block("     ", text, PREVIEW_LINES, out)?,
            ContentItem::Image(image) => writeln!(out, "      [image {}]", image.media_type)?,
            ContentItem::BlobRef(blob) => {
                let stored = blobs.path_of(&blob.sha256).exists();
                writeln!(
                    out,
                    "      [{} bytes in blob {}{}]",
                    blob.size,
                    &blob.sha256[..blob.sha256.len().min(12)],
                    if stored { "" } else { ", missing" }
                )?;
                write_block("     ", &blob.preview, PREVIEW_LINES, out)?;
            }
        }
    }
    Ok(())
}

fn write_block(label: &str, text: &str, max_lines: usize, out: &mut dyn Write) -> Result<()> {
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().take(max_lines).enumerate() {
        let prefix = if i == 0 { label } else { &" ".repeat(label.chars().count()) };
        writeln!(out, "{prefix} {line}")?;
    }
    if lines.len() > max_lines {
        writeln!(
            out,
            "{} … {} more line(s)",
            " ".repeat(label.chars().count()),
            lines.len() - max_lines
        )?;
    }
    Ok(())
}
