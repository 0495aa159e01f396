//! `--replay LOG`: a model that answers with a recorded session's responses.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use codecoder_kernel::{ModelClient, ModelError, ModelRequest, ResponseEvent, ResponseStream};
use codecoder_protocol::{MessageItem, RecordBody, StopReason};

use crate::error::{Error, Result};

/// Answers each request with the next assistant message recorded in a session log, so a
/// recorded session re-runs offline and deterministically (the tools run for real).
pub(crate) struct ReplayModel {
    responses: Vec<codecoder_protocol::Message>,
    next: AtomicUsize,
}

impl ReplayModel {
    pub(crate) fn load(path: &Path) -> Result<Self> {
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
        Ok(Self { responses, next: AtomicUsize::new(0) })
    }
}

impl ModelClient for ReplayModel {
    fn stream(&self, _request: ModelRequest) -> std::result::Result<ResponseStream, ModelError> {
        let index = self.next.fetch_add(1, Ordering::SeqCst);
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
