//! Reading a step's model stream (design.md "A turn"): deltas become events, the assistant
//! message is assembled, and calls whose tools read their arguments as they come are described
//! while the model writes them (`CallProgress`).
//!
//! Invariants:
//! - `cmd` is looked at between batches of at most `STREAM_BATCH` events, so a cancel is seen at
//!   once even under a flood of tokens.
//! - Coalesced deltas still pending go out before any other event, so events keep the stream's
//!   order.
//! - What is read belongs to one attempt of the step (`Assembly`, with its call readers): a
//!   retried step starts from nothing; nothing read here is logged until the step logs the
//!   assembled message.

use std::time::Instant;

use codecoder_protocol::{
    AgentEventKind, MessageItem, Reasoning, RecordBody, StepId, StopReason, ToolCall, ToolCallId,
    TurnId,
};
use crossbeam_channel::{TryRecvError, select};

use crate::model::{ResponseEvent, ResponseStream};
use crate::tool::InputReader;
use crate::turn::{AgentLoop, StepState, Stop};

/// How many queued stream events are handled before `cmd` is looked at again.
const STREAM_BATCH: usize = 256;

/// How many times the loop yields, waiting for the next stream event, before it parks.
const SPIN_YIELDS: usize = 16;

/// A drained batch at least this large means the stream is flooding.
const FLOOD_BATCH: usize = 32;

/// How reading a stream ended.
pub(crate) enum StreamEnd {
    Completed(StopReason),
    Stopped(Stop),
    /// The stream broke after partial output in a way a new request may fix.
    Broken(String),
    /// The server refused the request as larger than the model's context window.
    Overflow(String),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum DeltaKind {
    Text,
    Reasoning,
}

/// The assistant message being assembled from a stream.
#[derive(Default)]
pub(crate) struct Assembly {
    items: Vec<MessageItem>,
    /// Tool calls by id: the index of their item and their raw argument text.
    calls: Vec<(ToolCallId, usize, String)>,
    /// The readers of the calls being written whose tools read their arguments as they come
    /// (`Tool::input_reader`). They belong to this attempt: a retried step starts without them.
    readers: Vec<CallReader>,
}

/// A call the model is still writing, read as its arguments arrive, for `CallProgress`.
struct CallReader {
    call_id: ToolCallId,
    name: String,
    reader: Box<dyn InputReader>,
    /// When the last `CallProgress` of this call was sent.
    sent_at: Option<Instant>,
}

impl Assembly {
    fn push_text(&mut self, delta: &str) {
        if let Some(MessageItem::Text { text }) = self.items.last_mut() {
            text.push_str(delta);
            return;
        }
        self.items.push(MessageItem::Text { text: delta.to_owned() });
    }

    fn push_reasoning(&mut self, delta: &str) {
        // A reasoning item closed with its signature or payload is complete: a new block starts.
        if let Some(MessageItem::Reasoning(reasoning)) = self.items.last_mut()
            && reasoning.signature.is_none()
            && reasoning.encrypted_content.is_none()
        {
            reasoning.text.push_str(delta);
            return;
        }
        self.items.push(MessageItem::Reasoning(Reasoning {
            text: delta.to_owned(),
            ..Reasoning::default()
        }));
    }

    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        for item in &self.items {
            if let MessageItem::Text { text } = item {
                out.push_str(text);
            }
        }
        out
    }

    /// The message with its tool calls' arguments parsed. Invalid JSON is kept as a JSON string
    /// (the call then fails schema validation with a message the model can act on).
    pub(crate) fn finish(mut self, with_calls: bool) -> Vec<MessageItem> {
        for (_, index, raw) in &self.calls {
            if let MessageItem::ToolCall(call) = &mut self.items[*index] {
                call.args = if raw.trim().is_empty() {
                    serde_json::Value::Object(serde_json::Map::new())
                } else {
                    serde_json::from_str(raw)
                        .unwrap_or_else(|_| serde_json::Value::String(raw.clone()))
                };
            }
        }
        if !with_calls {
            self.items.retain(|item| !matches!(item, MessageItem::ToolCall(_)));
        }
        self.items
    }
}

impl AgentLoop {
    /// Reads the stream until it completes, fails, or a command stops the turn.
    pub(crate) fn read_stream(
        &mut self,
        turn: TurnId,
        step: &mut StepState,
        stream: &ResponseStream,
        assembly: &mut Assembly,
    ) -> StreamEnd {
        let events = stream.events();
        let coalesce = self.env.config.coalesce_deltas;
        let mut pending: Option<(DeltaKind, String)> = None;
        loop {
            // Drain what is queued without blocking, a batch at a time so `cmd` is looked at
            // between batches even under a flood of tokens.
            let mut end = None;
            let mut drained = 0;
            for _ in 0..STREAM_BATCH {
                match events.try_recv() {
                    Ok(event) => {
                        drained += 1;
                        end = self.on_response(turn, step, event, assembly, coalesce, &mut pending);
                        if end.is_some() {
                            break;
                        }
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        end = Some(StreamEnd::Stopped(Stop::Failed(
                            "the model stream ended without completing".to_owned(),
                        )));
                        break;
                    }
                }
            }
            self.flush_delta(turn, step.id, &mut pending);
            if let Some(end) = end {
                return end;
            }
            if let Err(stop) = self.poll_cmd() {
                return StreamEnd::Stopped(stop);
            }
            // Under a flood (the last batch was large), a stream that is merely between two
            // tokens is refilled within microseconds: yielding a few times before parking saves
            // the futex round trip of a blocking select, the dominant cost then. A slow stream
            // (a real model, a few hundred tokens a second) parks at once.
            if drained >= FLOOD_BATCH && events.is_empty() {
                for _ in 0..SPIN_YIELDS {
                    std::thread::yield_now();
                    if !events.is_empty() {
                        break;
                    }
                }
            }
            if !events.is_empty() {
                continue;
            }
            select! {
                recv(events) -> event => {
                    let end = match event {
                        Ok(event) => self.on_response(turn, step, event, assembly, coalesce, &mut pending),
                        Err(_) => Some(StreamEnd::Stopped(Stop::Failed(
                            "the model stream ended without completing".to_owned(),
                        ))),
                    };
                    self.flush_delta(turn, step.id, &mut pending);
                    if let Some(end) = end {
                        return end;
                    }
                }
                recv(self.cmd) -> cmd => {
                    if let Some(stop) = self.handle_cmd(cmd) {
                        return StreamEnd::Stopped(stop);
                    }
                }
            }
        }
    }

    fn flush_delta(&self, turn: TurnId, step: StepId, pending: &mut Option<(DeltaKind, String)>) {
        match pending.take() {
            Some((DeltaKind::Text, delta)) => {
                self.emit(AgentEventKind::TextDelta { turn, step, delta })
            }
            Some((DeltaKind::Reasoning, delta)) => {
                self.emit(AgentEventKind::ReasoningDelta { turn, step, delta })
            }
            None => {}
        }
    }

    fn on_delta(
        &self,
        turn: TurnId,
        step: &StepState,
        kind: DeltaKind,
        delta: String,
        coalesce: bool,
        pending: &mut Option<(DeltaKind, String)>,
    ) {
        if step.quiet {
            return;
        }
        let step = step.id;
        if !coalesce {
            match kind {
                DeltaKind::Text => self.emit(AgentEventKind::TextDelta { turn, step, delta }),
                DeltaKind::Reasoning => {
                    self.emit(AgentEventKind::ReasoningDelta { turn, step, delta })
                }
            }
            return;
        }
        match pending {
            Some((pending_kind, text)) if *pending_kind == kind => text.push_str(&delta),
            _ => {
                self.flush_delta(turn, step, pending);
                *pending = Some((kind, delta));
            }
        }
    }

    /// Sends the call's view so far, unless one went out less than `progress_interval` ago or
    /// the reader has nothing new. Coalesced deltas still pending go out first, so events keep
    /// the stream's order.
    fn call_progress(
        &self,
        turn: TurnId,
        step: StepId,
        reader: &mut CallReader,
        pending: &mut Option<(DeltaKind, String)>,
    ) {
        let now = Instant::now();
        if reader
            .sent_at
            .is_some_and(|sent_at| now.duration_since(sent_at) < self.env.config.progress_interval)
        {
            return;
        }
        let Some(view) = reader.reader.view() else { return };
        reader.sent_at = Some(now);
        self.flush_delta(turn, step, pending);
        self.emit(AgentEventKind::CallProgress {
            turn,
            step,
            call_id: reader.call_id.clone(),
            name: reader.name.clone(),
            view,
        });
    }

    fn on_response(
        &mut self,
        turn: TurnId,
        step: &mut StepState,
        event: ResponseEvent,
        assembly: &mut Assembly,
        coalesce: bool,
        pending: &mut Option<(DeltaKind, String)>,
    ) -> Option<StreamEnd> {
        match event {
            ResponseEvent::TextDelta(delta) => {
                assembly.push_text(&delta);
                self.on_delta(turn, step, DeltaKind::Text, delta, coalesce, pending);
            }
            ResponseEvent::ReasoningDelta(delta) => {
                assembly.push_reasoning(&delta);
                self.on_delta(turn, step, DeltaKind::Reasoning, delta, coalesce, pending);
            }
            ResponseEvent::ReasoningDone { signature, encrypted_content } => {
                // A block with nothing readable (redacted thinking) after a completed one is
                // its own item, so each goes back to the provider as it came.
                let open = matches!(
                    assembly.items.last(),
                    Some(MessageItem::Reasoning(r)) if r.signature.is_none() && r.encrypted_content.is_none()
                );
                if !open {
                    assembly.items.push(MessageItem::Reasoning(Reasoning::default()));
                }
                if let Some(MessageItem::Reasoning(reasoning)) = assembly.items.last_mut() {
                    reasoning.signature = signature;
                    reasoning.encrypted_content = encrypted_content;
                }
            }
            ResponseEvent::ToolCallStart { id, name } => {
                // The summary step of a compaction shows nothing of what it streams.
                if !step.quiet
                    && let Some(reader) = self.env.deps.tools.input_reader(&name)
                {
                    assembly.readers.push(CallReader {
                        call_id: id.clone(),
                        name: name.clone(),
                        reader,
                        sent_at: None,
                    });
                }
                let index = assembly.items.len();
                assembly.items.push(MessageItem::ToolCall(ToolCall {
                    id: id.clone(),
                    name,
                    args: serde_json::Value::Null,
                }));
                assembly.calls.push((id, index, String::new()));
            }
            ResponseEvent::ToolCallArgsDelta { id, delta } => {
                if let Some((_, _, raw)) =
                    assembly.calls.iter_mut().find(|(call_id, _, _)| *call_id == id)
                {
                    raw.push_str(&delta);
                }
                if let Some(reader) =
                    assembly.readers.iter_mut().find(|reader| reader.call_id == id)
                {
                    reader.reader.push(&delta);
                    self.call_progress(turn, step.id, reader, pending);
                }
            }
            // Arguments are parsed once, when the message is assembled.
            ResponseEvent::ToolCallDone { .. } => {}
            ResponseEvent::Warning(message) => {
                // A provider's note (a fallback it took, text that only looked like a tool
                // call) stays in the log for audits, as an `error` record, not model-visible.
                if let Err(stop) = self.append(RecordBody::Error { message: message.clone() }) {
                    return Some(StreamEnd::Stopped(stop));
                }
                self.emit(AgentEventKind::Warning { message });
            }
            ResponseEvent::Usage(usage) => {
                step.usage = usage;
                step.usage_reported = true;
            }
            ResponseEvent::UsageEstimate(usage) => {
                step.usage = usage;
                step.usage_reported = false;
            }
            ResponseEvent::Completed { stop_reason } => {
                return Some(StreamEnd::Completed(stop_reason));
            }
            ResponseEvent::Error(err) if err.context_overflow => {
                return Some(StreamEnd::Overflow(err.message));
            }
            ResponseEvent::Error(err) if err.retryable => {
                return Some(StreamEnd::Broken(err.message));
            }
            ResponseEvent::Error(err) => {
                return Some(StreamEnd::Stopped(Stop::Failed(format!("model error: {err}"))));
            }
        }
        None
    }
}
