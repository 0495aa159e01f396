//! The one translator from runtime events to Claude's messages: `assistant` frames with
//! Messages-API blocks (thinking, text, tool_use under Claude's tool names and input shapes),
//! `user` frames with tool results, and `stream_event` partials.
//!
//! Invariants: a call is announced by exactly one `tool_use` block, before its result (at its
//! permission request, its start, or its end, whichever comes first); the text of a step is
//! the text logged for it (`AgentMessage`, else `StepFinished`), never rebuilt from deltas; a
//! subagent's frames carry the id of the call that runs it as `parent_tool_use_id`.

use std::collections::HashSet;

use codecoder_protocol::{AgentEvent, AgentEventKind, ToolCall, ToolCallId};
use serde_json::{Value, json};

/// Claude's name and input for one of our calls.
pub(crate) fn claude_call(name: &str, args: &Value) -> (String, Value) {
    (
        codecoder_protocol::claude_tool_name(name).to_owned(),
        codecoder_hooks::mapping::to_claude(name, args),
    )
}

/// One agent's step as it streams (thinking and text so far, the stream's partial blocks).
#[derive(Default)]
struct Step {
    message_id: String,
    thinking: String,
    streamed_text: bool,
    /// The text was sent as a frame (from `AgentMessage`).
    text_sent: bool,
    /// Partial blocks opened (`--include-partial-messages`): index of the open block.
    open_block: Option<(usize, &'static str)>,
    blocks: usize,
}

/// Frames for one session.
pub(crate) struct Translator {
    session_id: String,
    model: String,
    partial: bool,
    next_id: u64,
    step: Step,
    announced: HashSet<ToolCallId>,
}

impl Translator {
    pub(crate) fn new(session_id: String, model: String, partial: bool) -> Self {
        Self {
            session_id,
            model,
            partial,
            next_id: 0,
            step: Step::default(),
            announced: HashSet::new(),
        }
    }

    /// A fresh id for a frame, shaped as a UUID (version 4 layout): the session's id mixed
    /// with a counter, so ids differ across sessions and frames.
    pub(crate) fn uuid(&mut self) -> String {
        self.next_id += 1;
        let next_id = self.next_id;
        let seed = self.session_id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
        let high = seed ^ next_id.rotate_left(17);
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            high >> 32,
            (high >> 16) & 0xffff,
            high & 0xfff,
            (next_id >> 48) & 0xfff,
            next_id & 0xffff_ffff_ffff
        )
    }

    fn parent(event: &AgentEvent) -> Value {
        event.source.subagent_path.last().map_or(Value::Null, |id| json!(id.to_string()))
    }

    fn assistant(&mut self, parent: Value, content: Vec<Value>) -> Value {
        let uuid = self.uuid();
        json!({
            "type": "assistant",
            "message": {
                "id": self.step.message_id,
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": content,
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {"input_tokens": 0, "output_tokens": 0},
            },
            "parent_tool_use_id": parent,
            "session_id": self.session_id,
            "uuid": uuid,
        })
    }

    fn stream_event(&mut self, parent: &Value, event: Value) -> Value {
        let uuid = self.uuid();
        json!({
            "type": "stream_event",
            "event": event,
            "parent_tool_use_id": parent,
            "session_id": self.session_id,
            "uuid": uuid,
        })
    }

    /// The `tool_use` frame of `call`, once.
    pub(crate) fn announce(&mut self, parent: Value, call: &ToolCall) -> Option<Value> {
        let (name, input) = claude_call(&call.name, &call.args);
        self.announce_claude(parent, &call.id, &name, input)
    }

    /// The `tool_use` frame of a call already in Claude's terms, once.
    pub(crate) fn announce_claude(
        &mut self,
        parent: Value,
        id: &ToolCallId,
        name: &str,
        input: Value,
    ) -> Option<Value> {
        if !self.announced.insert(id.clone()) {
            return None;
        }
        let block = json!({"type": "tool_use", "id": id.to_string(), "name": name, "input": input});
        Some(self.assistant(parent, vec![block]))
    }

    /// Closes the open partial block, if any.
    fn close_block(&mut self, parent: &Value, out: &mut Vec<Value>) {
        if let Some((index, _)) = self.step.open_block.take() {
            out.push(
                self.stream_event(parent, json!({"type": "content_block_stop", "index": index})),
            );
        }
    }

    /// Opens a partial block of `kind` unless one is open.
    fn open_block(&mut self, parent: &Value, kind: &'static str, out: &mut Vec<Value>) -> usize {
        match self.step.open_block {
            Some((index, open)) if open == kind => return index,
            Some(_) => self.close_block(parent, out),
            None => {}
        }
        let index = self.step.blocks;
        self.step.blocks += 1;
        self.step.open_block = Some((index, kind));
        let block = match kind {
            "thinking" => json!({"type": "thinking", "thinking": "", "signature": ""}),
            _ => json!({"type": "text", "text": ""}),
        };
        out.push(self.stream_event(
            parent,
            json!({"type": "content_block_start", "index": index, "content_block": block}),
        ));
        index
    }

    /// The frames of one event (approval requests and the turn's end are the engine's).
    pub(crate) fn event(&mut self, event: &AgentEvent) -> Vec<Value> {
        let parent = Self::parent(event);
        let mut out = Vec::new();
        match &event.kind {
            AgentEventKind::StepStarted { turn, step } => {
                self.step = Step {
                    message_id: format!(
                        "msg_{}_{}_{}",
                        self.session_id.replace('-', ""),
                        turn,
                        step
                    ),
                    ..Step::default()
                };
                if self.partial {
                    let message = json!({
                        "type": "message_start",
                        "message": {
                            "id": self.step.message_id, "type": "message", "role": "assistant",
                            "model": self.model, "content": [], "stop_reason": null,
                            "usage": {"input_tokens": 0, "output_tokens": 0},
                        },
                    });
                    out.push(self.stream_event(&parent, message));
                }
            }
            AgentEventKind::TextDelta { delta, .. } => {
                self.step.streamed_text = true;
                if self.partial {
                    let index = self.open_block(&parent, "text", &mut out);
                    let delta = json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": delta}});
                    out.push(self.stream_event(&parent, delta));
                }
            }
            AgentEventKind::ReasoningDelta { delta, .. } => {
                self.step.thinking.push_str(delta);
                if self.partial {
                    let index = self.open_block(&parent, "thinking", &mut out);
                    let delta = json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "thinking_delta", "thinking": delta}});
                    out.push(self.stream_event(&parent, delta));
                }
            }
            AgentEventKind::StepRetried { .. } => {
                let message_id = std::mem::take(&mut self.step.message_id);
                self.step = Step { message_id, ..Step::default() };
            }
            AgentEventKind::AgentMessage { text, .. } => {
                out.extend(self.message_text(&parent, text));
            }
            AgentEventKind::StepFinished { text, .. } => {
                if !self.step.text_sent {
                    out.extend(self.message_text(&parent, text));
                }
                if self.partial {
                    self.close_block(&parent, &mut out);
                    out.push(self.stream_event(&parent, json!({"type": "message_stop"})));
                }
            }
            AgentEventKind::ToolStarted { call, .. } => {
                out.extend(self.announce(parent, call));
            }
            AgentEventKind::ToolFinished { call, result, .. } => {
                out.extend(self.announce(parent.clone(), call));
                let (content, is_error) = match result {
                    Ok(result) => (
                        codecoder_app::result_text(result),
                        result.status != codecoder_protocol::ToolResultStatus::Success,
                    ),
                    Err(err) => (err.to_string(), true),
                };
                let uuid = self.uuid();
                out.push(json!({
                    "type": "user",
                    "message": {"role": "user", "content": [{
                        "type": "tool_result",
                        "tool_use_id": call.id.to_string(),
                        "content": content,
                        "is_error": is_error,
                    }]},
                    "parent_tool_use_id": parent,
                    "session_id": self.session_id,
                    "uuid": uuid,
                }));
            }
            _ => {}
        }
        out
    }

    /// The step's thinking and text as assistant frames, once.
    fn message_text(&mut self, parent: &Value, text: &str) -> Vec<Value> {
        let mut out = Vec::new();
        if self.step.text_sent {
            return out;
        }
        self.step.text_sent = true;
        let thinking = std::mem::take(&mut self.step.thinking);
        if !thinking.trim().is_empty() {
            let block = json!({"type": "thinking", "thinking": thinking, "signature": ""});
            out.push(self.assistant(parent.clone(), vec![block]));
        }
        if !text.trim().is_empty() {
            let block = json!({"type": "text", "text": text});
            out.push(self.assistant(parent.clone(), vec![block]));
        }
        out
    }
}
