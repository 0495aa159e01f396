//! `--replay LOG`: a model that answers with a recorded session's responses, comparing each
//! request with the one the log recorded.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use codecoder_kernel::{ModelClient, ModelError, ModelRequest, ResponseEvent, ResponseStream};
use codecoder_protocol::{MessageItem, RecordBody, StopReason};

use crate::error::{Error, Result};

/// Answers each request with the next assistant message recorded in a session log, so a
/// recorded session re-runs offline and deterministically (the tools run for real).
///
/// Each request is first compared with the one the log recorded for the same step (rebuilt
/// from it): at the first difference the request fails with a message naming the request and
/// the first differing place, so a replay never answers a conversation the log did not have.
/// What a replay changes by nature is not compared: the session id, the environment section
/// (working directory, date, git status), the working directory's path wherever it appears
/// (the recorded one and this run's both read as `<cwd>`) and the wall time a command's result
/// ends with. A log without `context` records (older codecoder) is replayed without comparing.
pub(crate) struct ReplayModel {
    loaded: codecoder_session::LoadedSession,
    blobs: codecoder_session::BlobStore,
    responses: Vec<codecoder_protocol::Message>,
    next: AtomicUsize,
    /// Whether the log records the context of its first request.
    pub(crate) compares: bool,
    /// This run's working directory.
    cwd: String,
}

impl ReplayModel {
    pub(crate) fn load(
        path: &Path,
        blobs: codecoder_session::BlobStore,
        cwd: String,
    ) -> Result<Self> {
        let loaded = codecoder_session::load(path)
            .map_err(|err| Error::usage(format!("--replay: {err}")))?;
        let responses: Vec<_> = loaded
            .records()
            .filter_map(|record| match &record.body {
                RecordBody::AssistantMessage { message } => Some(message.clone()),
                _ => None,
            })
            .collect();
        if responses.is_empty() {
            return Err(Error::usage(format!(
                "--replay: {} holds no model response",
                path.display()
            )));
        }
        let compares = codecoder_context::rebuild_request(&loaded, 1, None).is_ok();
        Ok(Self { loaded, blobs, responses, next: AtomicUsize::new(0), compares, cwd })
    }

    /// `Err` with a message when `request` (request `number`) differs from the recorded one.
    fn compare(&self, number: usize, request: &ModelRequest) -> std::result::Result<(), String> {
        let resolve = |blob: &codecoder_protocol::BlobRef| self.blobs.resolve(blob).ok();
        let recorded =
            match codecoder_context::rebuild_request(&self.loaded, number, Some(&resolve)) {
                Ok(rebuilt) => rebuilt.request,
                // Nothing recorded to compare with.
                Err(_) => return Ok(()),
            };
        let recorded = comparable(&recorded, &self.loaded.meta.cwd);
        let replayed = comparable(request, &self.cwd);
        match first_difference(&recorded, &replayed, String::new()) {
            None => Ok(()),
            Some((path, was, now)) => Err(format!(
                "the replay diverged from the recorded session at model request {number}: \
                 `{path}` was {was} but is now {now}"
            )),
        }
    }
}

/// What a replay must reproduce of a request, as JSON: everything model-visible but the session
/// id, the environment section's text, message ids (fresh in every run), the path of `cwd`
/// (written `<cwd>`) and the wall time of commands.
fn comparable(request: &ModelRequest, cwd: &str) -> serde_json::Value {
    let sections: Vec<serde_json::Value> = request
        .sections
        .iter()
        .map(|section| {
            let text = if section.name == codecoder_context::ENVIRONMENT_SECTION {
                "(not compared)"
            } else {
                section.text.as_str()
            };
            serde_json::json!({"name": section.name, "text": text})
        })
        .collect();
    let history: Vec<serde_json::Value> = request
        .history
        .iter()
        .map(|message| {
            let mut value = serde_json::to_value(&**message).unwrap_or_default();
            if let Some(object) = value.as_object_mut() {
                object.remove("id");
            }
            value
        })
        .collect();
    let mut value = serde_json::json!({
        "model": request.model,
        "sections": sections,
        "tools": request.tools,
        "maxOutputTokens": request.max_output_tokens,
        "outputSchema": request.output_schema,
        "history": history,
    });
    // `/` would match every path: only a real directory is replaced.
    let cwd = cwd.trim_end_matches('/');
    if !cwd.is_empty() {
        replace_in_strings(&mut value, cwd, "<cwd>");
    }
    mask_durations(&mut value);
    value
}

/// Masks the wall time of commands (a result's `exit.durationMs`, and the `[exit code 0; 0.15 s]`
/// its text ends with, which reads `[exit code 0; <time>]`): a replayed command takes its own
/// time.
fn mask_durations(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) => {
            if let Some(open) = text.rfind("; ")
                && text.ends_with(" s]")
                && text[open + 2..text.len() - 3].parse::<f64>().is_ok()
            {
                text.replace_range(open + 2.., "<time>]");
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(mask_durations),
        serde_json::Value::Object(map) => {
            if let Some(duration) = map.get_mut("durationMs") {
                *duration = serde_json::Value::Null;
            }
            map.values_mut().for_each(mask_durations);
        }
        _ => {}
    }
}

/// Replaces `from` with `to` in every string of `value`.
fn replace_in_strings(value: &mut serde_json::Value, from: &str, to: &str) {
    match value {
        serde_json::Value::String(text) if text.contains(from) => *text = text.replace(from, to),
        serde_json::Value::Array(items) => {
            items.iter_mut().for_each(|item| replace_in_strings(item, from, to));
        }
        serde_json::Value::Object(map) => {
            map.values_mut().for_each(|item| replace_in_strings(item, from, to));
        }
        _ => {}
    }
}

/// The first place (a JSON path) where `a` and `b` differ, with a short excerpt of each.
fn first_difference(
    a: &serde_json::Value,
    b: &serde_json::Value,
    path: String,
) -> Option<(String, String, String)> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (key, value) in x {
                let inner = format!("{path}.{key}");
                match y.get(key) {
                    Some(other) => {
                        if let Some(found) = first_difference(value, other, inner) {
                            return Some(found);
                        }
                    }
                    None => return Some((inner, excerpt(value), "absent".to_owned())),
                }
            }
            y.iter()
                .find(|(key, _)| !x.contains_key(*key))
                .map(|(key, value)| (format!("{path}.{key}"), "absent".to_owned(), excerpt(value)))
        }
        (Value::Array(x), Value::Array(y)) => {
            for (index, (value, other)) in x.iter().zip(y).enumerate() {
                if let Some(found) = first_difference(value, other, format!("{path}[{index}]")) {
                    return Some(found);
                }
            }
            (x.len() != y.len())
                .then(|| (format!("{path}.length"), x.len().to_string(), y.len().to_string()))
        }
        _ if a == b => None,
        _ => Some((path, excerpt(a), excerpt(b))),
    }
}

/// A value's JSON, cut to a readable length.
fn excerpt(value: &serde_json::Value) -> String {
    const MAX_CHARS: usize = 120;
    let text = value.to_string();
    if text.chars().count() <= MAX_CHARS {
        return text;
    }
    let cut: String = text.chars().take(MAX_CHARS).collect();
    format!("{cut}…")
}

impl ModelClient for ReplayModel {
    fn stream(&self, request: ModelRequest) -> std::result::Result<ResponseStream, ModelError> {
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        if self.compares {
            self.compare(index + 1, &request).map_err(ModelError::new)?;
        }
        let Some(message) = self.responses.get(index).cloned() else {
            return Err(ModelError::new(format!(
                "the replayed session has only {} model response(s)",
                self.responses.len()
            )));
        };
        // Unbounded: it holds one recorded message, which is already in memory.
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut calls = false;
        for item in message.items {
            let _ = match item {
                MessageItem::Text { text } => tx.send(ResponseEvent::TextDelta(text)),
                MessageItem::Reasoning(r) => {
                    let _ = tx.send(ResponseEvent::ReasoningDelta(r.text));
                    tx.send(ResponseEvent::ReasoningDone {
                        signature: r.signature,
                        encrypted_content: r.encrypted_content,
                    })
                }
                MessageItem::ToolCall(call) => {
                    calls = true;
                    let _ = tx.send(ResponseEvent::ToolCallStart {
                        id: call.id.clone(),
                        name: call.name,
                    });
                    let _ = tx.send(ResponseEvent::ToolCallArgsDelta {
                        id: call.id.clone(),
                        delta: call.args.to_string(),
                    });
                    tx.send(ResponseEvent::ToolCallDone { id: call.id })
                }
                MessageItem::ToolResult(_) | MessageItem::Image(_) | MessageItem::BlobRef(_) => {
                    Ok(())
                }
            };
        }
        let stop_reason = if calls { StopReason::ToolUse } else { StopReason::EndTurn };
        let _ = tx.send(ResponseEvent::Completed { stop_reason });
        Ok(ResponseStream::new(rx))
    }
}
