//! Rendering agent events for `exec`: as text for a person, or as codex-compatible JSON lines.
//!
//! JSON lines follow `codex exec --json` (../shared/reference/exec-jsonl.md): `thread.started`,
//! `turn.started`, `item.started|updated|completed` with items `agent_message`, `reasoning`,
//! `command_execution`, `file_change`, `todo_list`, `error`, and `tool_call` for our other tools,
//! then `turn.completed {usage}` or `turn.failed {error}`. An interrupted turn emits no terminal
//! event. The lines are `protocol::exec_event` types (their schema is checked in). A hook's
//! message for the person (`HookMessage`) has no codex event: it goes to stderr in both modes.
//! Invariant: one JSON object per line, flushed as it is written.

use std::collections::HashMap;
use std::io::Write;

use codecoder_protocol::exec_event::{
    FileChange, FileChangeKind, ItemDetails, ItemStatus, ThreadError, ThreadEvent, ThreadItem,
    TodoItem, TurnUsage,
};
use codecoder_protocol::{
    AgentEvent, AgentEventKind, ContentItem, SessionId, ToolCall, ToolCallId, ToolResult,
    ToolResultStatus, TurnOutcome, Usage,
};
use serde_json::Value;

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
    /// The text of the last assistant message of the turn.
    fn final_message(&self) -> String;
    /// The turn completed.
    fn finish(&mut self, final_message: &str, out: &mut dyn Write) -> std::io::Result<()>;
}

/// Text of the current step and of the last step that had text.
#[derive(Default)]
struct Messages {
    step_text: String,
    last_text: String,
}

impl Messages {
    fn push(&mut self, delta: &str) {
        self.step_text.push_str(delta);
    }

    /// Ends the current message; returns its text if any.
    fn close(&mut self) -> Option<String> {
        if self.step_text.trim().is_empty() {
            self.step_text.clear();
            return None;
        }
        let text = std::mem::take(&mut self.step_text);
        self.last_text.clone_from(&text);
        Some(text)
    }
}

fn result_text(result: &ToolResult) -> String {
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

/// What `--json` prints.
pub(crate) struct JsonRenderer {
    next_item: u64,
    messages: Messages,
    reasoning: String,
    /// Open tool items: call id → (item id, the item so far).
    tools: HashMap<ToolCallId, (String, ItemDetails)>,
    usage: Usage,
}

impl JsonRenderer {
    pub(crate) fn new() -> Self {
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

    fn line(out: &mut dyn Write, event: &ThreadEvent) -> std::io::Result<()> {
        serde_json::to_writer(&mut *out, event)?;
        out.write_all(b"\n")?;
        out.flush()
    }

    /// A completed item with a fresh id.
    fn completed(&mut self, out: &mut dyn Write, details: ItemDetails) -> std::io::Result<()> {
        let item = ThreadItem { id: self.item_id(), details };
        Self::line(out, &ThreadEvent::ItemCompleted { item })
    }

    fn flush_text(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        if !self.reasoning.trim().is_empty() {
            let text = std::mem::take(&mut self.reasoning);
            self.completed(out, ItemDetails::Reasoning { text })?;
        }
        self.reasoning.clear();
        if let Some(text) = self.messages.close() {
            self.completed(out, ItemDetails::AgentMessage { text })?;
        }
        Ok(())
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

impl Renderer for JsonRenderer {
    fn session_started(
        &mut self,
        session_id: SessionId,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        Self::line(out, &ThreadEvent::ThreadStarted { thread_id: session_id.to_string() })
    }

    fn event(&mut self, event: &AgentEvent, out: &mut dyn Write) -> std::io::Result<()> {
        // Subagents' inner events are not items of the parent's turn.
        if !event.source.subagent_path.is_empty() {
            return Ok(());
        }
        match &event.kind {
            AgentEventKind::TurnStarted { .. } => Self::line(out, &ThreadEvent::TurnStarted {}),
            AgentEventKind::TextDelta { delta, .. } => {
                self.messages.push(delta);
                Ok(())
            }
            AgentEventKind::ReasoningDelta { delta, .. } => {
                self.reasoning.push_str(delta);
                Ok(())
            }
            AgentEventKind::ToolStarted { call, .. } => {
                self.flush_text(out)?;
                let id = self.item_id();
                let details = Self::tool_item(call);
                self.tools.insert(call.id.clone(), (id.clone(), details.clone()));
                if matches!(details, ItemDetails::FileChange { .. }) {
                    return Ok(()); // codex emits file changes only when completed
                }
                Self::line(out, &ThreadEvent::ItemStarted { item: ThreadItem { id, details } })
            }
            AgentEventKind::ToolOutputDelta { call_id, chunk, .. } => {
                if let Some((_, ItemDetails::CommandExecution { aggregated_output, .. })) =
                    self.tools.get_mut(call_id)
                {
                    aggregated_output.push_str(chunk);
                }
                Ok(())
            }
            AgentEventKind::ToolFinished { call_id, result, .. } => {
                let Some((id, mut details)) = self.tools.remove(call_id) else { return Ok(()) };
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
                Self::line(out, &ThreadEvent::ItemCompleted { item: ThreadItem { id, details } })
            }
            AgentEventKind::StepFinished { usage, .. } => {
                self.usage += *usage;
                self.flush_text(out)
            }
            AgentEventKind::StepRetried { reason, .. } => {
                self.messages.step_text.clear();
                self.reasoning.clear();
                self.completed(out, ItemDetails::Error { message: reason.clone() })
            }
            AgentEventKind::HookMessage { event, message } => {
                // codex's JSONL has no event for it: stdout stays codex's event set, and the
                // person reads it on stderr as in text mode.
                let mut err = std::io::stderr().lock();
                let _ = writeln!(err, "{event} hook: {message}");
                Ok(())
            }
            AgentEventKind::Warning { message } => {
                self.completed(out, ItemDetails::Error { message: message.clone() })
            }
            AgentEventKind::Compacted { trigger, summarized, message, .. } => self.completed(
                out,
                ItemDetails::ContextCompaction {
                    trigger: trigger.clone(),
                    summarized: *summarized,
                    message: message.clone(),
                },
            ),
            AgentEventKind::TurnDone { outcome, .. } => {
                self.flush_text(out)?;
                match outcome {
                    TurnOutcome::Completed => Self::line(
                        out,
                        &ThreadEvent::TurnCompleted { usage: turn_usage(&self.usage) },
                    ),
                    TurnOutcome::Failed { message } => Self::line(
                        out,
                        &ThreadEvent::TurnFailed {
                            error: ThreadError { message: message.clone() },
                        },
                    ),
                    TurnOutcome::Cancelled | TurnOutcome::Interrupted => Ok(()),
                }
            }
            AgentEventKind::StepStarted { .. }
            | AgentEventKind::Status(_)
            | AgentEventKind::ApprovalRequest(_)
            | AgentEventKind::AskUser(_)
            | AgentEventKind::Usage { .. }
            | AgentEventKind::ShutdownComplete => Ok(()),
        }
    }

    fn note(&mut self, text: &str, out: &mut dyn Write) -> std::io::Result<()> {
        self.completed(out, ItemDetails::Error { message: text.to_owned() })
    }

    fn final_message(&self) -> String {
        self.messages.last_text.clone()
    }

    fn finish(&mut self, _final_message: &str, _out: &mut dyn Write) -> std::io::Result<()> {
        Ok(())
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
                self.messages.step_text.clear();
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

    fn final_message(&self) -> String {
        self.messages.last_text.clone()
    }

    fn finish(&mut self, final_message: &str, out: &mut dyn Write) -> std::io::Result<()> {
        if !final_message.is_empty() {
            writeln!(out, "{}", final_message.trim_end())?;
        }
        Ok(())
    }
}
