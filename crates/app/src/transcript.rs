//! A session's log for people: a readable transcript (`sessions show`), and the exact body of one
//! logged request (`sessions show --request N`), rebuilt from the log and encoded by the code
//! the HTTP client uses.

use std::io::Write;

use codecoder_protocol::{
    BlobRef, ContentItem, Message, MessageItem, Record, RecordBody, ToolResult,
};
use codecoder_session::{BlobStore, Entry, LoadedSession, SessionStore};
use codecoder_stdx::format_utc_ms;

use crate::Runtime;
use crate::error::{Error, Result};

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

/// Writes a readable transcript of `loaded` (blobs looked up in `blobs`).
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
    for entry in &loaded.entries {
        match entry {
            Entry::Record(record) => write_record(blobs, record, out)?,
            Entry::Unknown(unknown) => writeln!(
                out,
                "  [line {}: record of unknown type `{}` (from a newer codecoder), kept]",
                unknown.line, unknown.type_name
            )?,
        }
    }
    if let Some(torn) = loaded.torn_tail {
        writeln!(out, "  [line {}: torn by a crash ({} bytes), dropped]", torn.line, torn.len)?;
    }
    if loaded.trace.needs_repair() {
        writeln!(out, "  [the log stops mid-turn; it is closed on resume]")?;
    }
    Ok(())
}

fn write_record(blobs: &BlobStore, record: &Record, out: &mut dyn Write) -> Result<()> {
    match &record.body {
        RecordBody::SessionMeta(_) => {
            writeln!(out, "  started {}", format_utc_ms(record.ts))?;
        }
        RecordBody::TurnStart { turn } => {
            writeln!(out, "\n── turn {turn} · {} ──", format_utc_ms(record.ts))?;
        }
        RecordBody::TurnEnd { turn, outcome, usage } => {
            let outcome = match outcome {
                codecoder_protocol::TurnOutcome::Completed => "completed".to_owned(),
                codecoder_protocol::TurnOutcome::Cancelled => "cancelled".to_owned(),
                codecoder_protocol::TurnOutcome::Interrupted => "interrupted".to_owned(),
                codecoder_protocol::TurnOutcome::Failed { message } => format!("failed: {message}"),
            };
            writeln!(
                out,
                "── end of turn {turn}: {outcome} · {} in ({} cached) / {} out ──",
                usage.input_tokens, usage.cached_input_tokens, usage.output_tokens
            )?;
        }
        RecordBody::StepStart { step, .. } => writeln!(out, "  · step {step}")?,
        RecordBody::StepEnd { .. } => {}
        RecordBody::UserMessage { message } => write_message("user", message, out)?,
        RecordBody::AssistantMessage { message } => write_message("assistant", message, out)?,
        RecordBody::ToolStarted { call_id } => writeln!(out, "    ▶ running {call_id}")?,
        RecordBody::ToolResult { result, synthetic } => {
            write_tool_result(blobs, result, synthetic.is_some(), out)?;
        }
        RecordBody::Approval { call_id, decision, decided_by, .. } => {
            writeln!(out, "    approval for {call_id}: {decision:?} (by {decided_by})")?;
        }
        RecordBody::Compaction { history, note } => writeln!(
            out,
            "  [compaction: history replaced by {} message(s){}]",
            history.len(),
            note.as_ref().map(|n| format!(": {n}")).unwrap_or_default()
        )?,
        RecordBody::Context(context) => {
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
        RecordBody::Checkpoint(checkpoint) => {
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
        RecordBody::Rewind(rewind) => {
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
                format_utc_ms(record.ts)
            )?;
            for path in &rewind.restored {
                writeln!(out, "    restored {path}")?;
            }
            for path in &rewind.skipped {
                writeln!(out, "    left alone (changed outside codecoder) {path}")?;
            }
        }
        RecordBody::Error { message } => writeln!(out, "  error: {message}")?,
        RecordBody::SessionEnd => writeln!(out, "\nsession ended {}", format_utc_ms(record.ts))?,
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
