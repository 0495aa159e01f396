//! The `exec --json` encoder: agent events → codex's `exec --json` events (`protocol::exec_event`),
//! shared by every front-end that speaks them (`codecoder exec --json`; codex's SDK drives exactly
//! that). Items follow codex: `agent_message`, `reasoning`, `command_execution`, `file_change`
//! (only ever completed), `todo_list`, `error`, and `tool_call` for tools codex has no item for;
//! then `turn.completed {usage}` or `turn.failed {error}`; an interrupted turn emits no terminal
//! event. Subagents' inner events are not items of the parent's turn.

use std::collections::HashMap;

use codecoder_protocol::exec_event::{
    FileChange, FileChangeKind, ItemDetails, ItemStatus, ThreadError, ThreadEvent, ThreadItem,
    TodoItem, TurnUsage,
};
use codecoder_protocol::{
    AgentEvent, AgentEventKind, ContentItem, SessionId, ToolCall, ToolCallId, ToolResult,
    ToolResultStatus, TurnOutcome, Usage,
};
use serde_json::Value;

/// Text of the current step and of the last step that had text.
#[derive(Debug, Default)]
pub struct Messages {
    step_text: String,
    last_text: String,
}

impl Messages {
    /// Adds streamed text to the current message.
    pub fn push(&mut self, delta: &str) {
        self.step_text.push_str(delta);
    }

    /// Ends the current message; returns its text if any.
    pub fn close(&mut self) -> Option<String> {
        if self.step_text.trim().is_empty() {
            self.step_text.clear();
            return None;
        }
        let text = std::mem::take(&mut self.step_text);
        self.last_text.clone_from(&text);
        Some(text)
    }

    /// Drops the current message (a retried step streams it again).
    pub fn discard(&mut self) {
        self.step_text.clear();
    }

    /// The text of the last message that had any.
    pub fn last(&self) -> &str {
        &self.last_text
    }
}

/// A tool result's content as text (images and stored outputs as short placeholders).
pub fn result_text(result: &ToolResult) -> String {
    let mut out = String::new();
    for item in &result.content {
        match item {
            ContentItem::Text { text } => out.push_str(text),
            ContentItem::Image(image) => out.push_str(&format!("[image {}]", image.media_type)),
            ContentItem::BlobRef(blob) => out.push_str(&blob.preview),
        }
    }
    out
}

/// Turns one session's agent events into `exec --json` events.
#[derive(Debug)]
pub struct ExecEventEncoder {
    next_item: u64,
    messages: Messages,
    reasoning: String,
    /// Open tool items: call id → (item id, the item so far).
    tools: HashMap<ToolCallId, (String, ItemDetails)>,
    usage: Usage,
}

impl Default for ExecEventEncoder {
    fn default() -> Self {
        Self::new()
    }
}

impl ExecEventEncoder {
    /// An encoder at the start of a session.
    pub fn new() -> Self {
        Self {
            next_item: 0,
            messages: Messages::default(),
            reasoning: String::new(),
            tools: HashMap::new(),
            usage: Usage::default(),
        }
    }

    fn item_id(&mut self) -> String {
        let id = format!("item_{}", self.next_item);
        self.next_item += 1;
        id
    }

    /// A completed item with a fresh id.
    fn completed(&mut self, out: &mut Vec<ThreadEvent>, details: ItemDetails) {
        let item = ThreadItem { id: self.item_id(), details };
        out.push(ThreadEvent::ItemCompleted { item });
    }

    fn flush_text(&mut self, out: &mut Vec<ThreadEvent>) {
        if !self.reasoning.trim().is_empty() {
            let text = std::mem::take(&mut self.reasoning);
            self.completed(out, ItemDetails::Reasoning { text });
        }
        self.reasoning.clear();
        if let Some(text) = self.messages.close() {
            self.completed(out, ItemDetails::AgentMessage { text });
        }
    }

    /// The item a tool call becomes, in progress.
    fn tool_item(call: &ToolCall) -> ItemDetails {
        let args = &call.args;
        match call.name.as_str() {
            "run_command" | "shell" | "exec_command" => ItemDetails::CommandExecution {
                command: args.get("command").and_then(Value::as_str).unwrap_or_default().to_owned(),
                aggregated_output: String::new(),
                exit_code: None,
                status: ItemStatus::InProgress,
            },
            "apply_patch" | "edit" | "write_file" => ItemDetails::FileChange {
                changes: file_changes(call),
                status: ItemStatus::InProgress,
            },
            "update_plan" => ItemDetails::TodoList { items: todo_items(args) },
            _ => ItemDetails::ToolCall {
                name: call.name.clone(),
                arguments: args.clone(),
                result: None,
                status: ItemStatus::InProgress,
            },
        }
    }
}

fn file_changes(call: &ToolCall) -> Vec<FileChange> {
    let args = &call.args;
    match call.name.as_str() {
        "apply_patch" => {
            let patch = args.get("input").and_then(Value::as_str).unwrap_or_default();
            patch
                .lines()
                .filter_map(|line| {
                    let line = line.trim();
                    for (marker, kind) in [
                        ("*** Add File: ", FileChangeKind::Add),
                        ("*** Delete File: ", FileChangeKind::Delete),
                        ("*** Update File: ", FileChangeKind::Update),
                    ] {
                        if let Some(path) = line.strip_prefix(marker) {
                            return Some(FileChange { path: path.trim().to_owned(), kind });
                        }
                    }
                    None
                })
                .collect()
        }
        _ => {
            let path = args.get("path").and_then(Value::as_str).unwrap_or_default();
            let kind = if call.name == "write_file" {
                FileChangeKind::Add
            } else {
                FileChangeKind::Update
            };
            vec![FileChange { path: path.to_owned(), kind }]
        }
    }
}

fn todo_items(args: &Value) -> Vec<TodoItem> {
    args.get("plan")
        .and_then(Value::as_array)
        .map(|plan| {
            plan.iter()
                .map(|step| TodoItem {
                    text: step.get("step").and_then(Value::as_str).unwrap_or_default().to_owned(),
                    completed: step.get("status").and_then(Value::as_str) == Some("completed"),
                })
                .collect()
        })
        .unwrap_or_default()
}

impl ExecEventEncoder {
    /// The first line: the session is known.
    pub fn session_started(&mut self, session_id: SessionId) -> ThreadEvent {
        ThreadEvent::ThreadStarted { thread_id: session_id.to_string() }
    }

    /// The lines one agent event becomes (often none). A hook's message for the person has no
    /// codex event: front-ends show it themselves.
    pub fn encode(&mut self, event: &AgentEvent) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        // Subagents' inner events are not items of the parent's turn.
        if event.source.subagent_path.is_empty() {
            self.encode_into(event, &mut out);
        }
        out
    }

    /// A remark of the front-end's own (a declined request), as an `error` item.
    pub fn note(&mut self, text: &str) -> ThreadEvent {
        ThreadEvent::ItemCompleted {
            item: ThreadItem {
                id: self.item_id(),
                details: ItemDetails::Error { message: text.to_owned() },
            },
        }
    }

    /// The text of the turn's last assistant message.
    pub fn final_message(&self) -> &str {
        self.messages.last()
    }

    fn encode_into(&mut self, event: &AgentEvent, out: &mut Vec<ThreadEvent>) {
        match &event.kind {
            AgentEventKind::TurnStarted { .. } => out.push(ThreadEvent::TurnStarted {}),
            AgentEventKind::TextDelta { delta, .. } => self.messages.push(delta),
            AgentEventKind::ReasoningDelta { delta, .. } => self.reasoning.push_str(delta),
            AgentEventKind::ToolStarted { call, .. } => {
                self.flush_text(out);
                let id = self.item_id();
                let details = Self::tool_item(call);
                self.tools.insert(call.id.clone(), (id.clone(), details.clone()));
                // codex emits file changes only when completed.
                if !matches!(details, ItemDetails::FileChange { .. }) {
                    out.push(ThreadEvent::ItemStarted { item: ThreadItem { id, details } });
                }
            }
            AgentEventKind::ToolOutputDelta { call_id, chunk, .. } => {
                match self.tools.get_mut(call_id) {
                    Some((_, ItemDetails::CommandExecution { aggregated_output, .. })) => {
                        aggregated_output.push_str(chunk);
                    }
                    // Another tool's output while it runs (an MCP server's progress): the item so
                    // far, its output in `result` until the result replaces it.
                    Some((id, details @ ItemDetails::ToolCall { .. })) => {
                        if let ItemDetails::ToolCall { result, .. } = details {
                            result.get_or_insert_with(String::new).push_str(chunk);
                        }
                        let item = ThreadItem { id: id.clone(), details: details.clone() };
                        out.push(ThreadEvent::ItemUpdated { item });
                    }
                    _ => {}
                }
            }
            AgentEventKind::ToolFinished { call_id, result, .. } => {
                let Some((id, mut details)) = self.tools.remove(call_id) else { return };
                let ok = matches!(result, Ok(r) if r.status == ToolResultStatus::Success);
                let ended = if ok { ItemStatus::Completed } else { ItemStatus::Failed };
                let text = match result {
                    Ok(r) => result_text(r),
                    Err(err) => err.to_string(),
                };
                match &mut details {
                    ItemDetails::CommandExecution {
                        aggregated_output, exit_code, status, ..
                    } => {
                        if aggregated_output.is_empty() {
                            *aggregated_output = text;
                        }
                        *exit_code = result.as_ref().ok().and_then(|r| r.exit?.code);
                        *status = ended;
                    }
                    ItemDetails::FileChange { status, .. } => *status = ended,
                    ItemDetails::ToolCall { result, status, .. } => {
                        *result = Some(text);
                        *status = ended;
                    }
                    ItemDetails::TodoList { .. }
                    | ItemDetails::AgentMessage { .. }
                    | ItemDetails::Reasoning { .. }
                    | ItemDetails::ContextCompaction { .. }
                    | ItemDetails::Error { .. } => {}
                }
                out.push(ThreadEvent::ItemCompleted { item: ThreadItem { id, details } });
            }
            AgentEventKind::StepFinished { usage, .. } => {
                self.usage += *usage;
                self.flush_text(out);
            }
            AgentEventKind::StepRetried { reason, .. } => {
                self.messages.discard();
                self.reasoning.clear();
                self.completed(out, ItemDetails::Error { message: reason.clone() });
            }
            AgentEventKind::Warning { message } => {
                self.completed(out, ItemDetails::Error { message: message.clone() });
            }
            AgentEventKind::Compacted { trigger, summarized, message, .. } => {
                let details = ItemDetails::ContextCompaction {
                    trigger: trigger.clone(),
                    summarized: *summarized,
                    message: message.clone(),
                };
                self.completed(out, details);
            }
            AgentEventKind::TurnDone { outcome, .. } => {
                self.flush_text(out);
                match outcome {
                    TurnOutcome::Completed => {
                        out.push(ThreadEvent::TurnCompleted { usage: turn_usage(&self.usage) });
                    }
                    TurnOutcome::Failed { message } => out.push(ThreadEvent::TurnFailed {
                        error: ThreadError { message: message.clone() },
                    }),
                    TurnOutcome::Cancelled | TurnOutcome::Interrupted => {}
                }
            }
            AgentEventKind::HookMessage { .. }
            | AgentEventKind::StepStarted { .. }
            | AgentEventKind::Status(_)
            | AgentEventKind::ApprovalRequest(_)
            | AgentEventKind::AskUser(_)
            | AgentEventKind::Usage { .. }
            | AgentEventKind::ShutdownComplete => {}
        }
    }
}

fn turn_usage(usage: &Usage) -> TurnUsage {
    TurnUsage {
        input_tokens: usage.input_tokens,
        cached_input_tokens: usage.cached_input_tokens,
        output_tokens: usage.output_tokens,
        reasoning_output_tokens: usage.reasoning_output_tokens,
    }
}
