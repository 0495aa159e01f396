//! Rendering agent events for `exec`: as text for a person, or as codex-compatible JSON lines.
//!
//! JSON lines follow `codex exec --json` (../shared/reference/exec-jsonl.md): `thread.started`,
//! `turn.started`, `item.started|updated|completed` with items `agent_message`, `reasoning`,
//! `command_execution`, `file_change`, `todo_list`, `error`, and `tool_call` for our other tools,
//! then `turn.completed {usage}` or `turn.failed {error}`. An interrupted turn emits no terminal
//! event. A hook's message for the person (`HookMessage`) has no codex event: it goes to stderr
//! in both modes. Invariant: one JSON object per line, flushed as it is written.

use std::collections::HashMap;
use std::io::Write;

use codecoder_protocol::{
    AgentEvent, AgentEventKind, ContentItem, SessionId, ToolCall, ToolCallId, ToolResult,
    ToolResultStatus, TurnOutcome, Usage,
};
use serde_json::{Value, json};

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
    /// Open tool items: call id → (item id, item without status).
    tools: HashMap<ToolCallId, (String, Value)>,
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

    fn line(out: &mut dyn Write, value: &Value) -> std::io::Result<()> {
        serde_json::to_writer(&mut *out, value)?;
        out.write_all(b"\n")?;
        out.flush()
    }

    fn flush_text(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        if !self.reasoning.trim().is_empty() {
            let id = self.item_id();
            let text = std::mem::take(&mut self.reasoning);
            Self::line(
                out,
                &json!({"type": "item.completed", "item": {"id": id, "type": "reasoning", "text": text}}),
            )?;
        }
        self.reasoning.clear();
        if let Some(text) = self.messages.close() {
            let id = self.item_id();
            Self::line(
                out,
                &json!({"type": "item.completed", "item": {"id": id, "type": "agent_message", "text": text}}),
            )?;
        }
        Ok(())
    }

    /// The item a tool call becomes, without its final status.
    fn tool_item(call: &ToolCall) -> Value {
        let args = &call.args;
        match call.name.as_str() {
            "run_command" | "shell" | "exec_command" => json!({
                "type": "command_execution",
                "command": args.get("command").and_then(Value::as_str).unwrap_or_default(),
                "aggregated_output": "",
            }),
            "apply_patch" | "edit" | "write_file" => {
                json!({"type": "file_change", "changes": file_changes(call)})
            }
            "update_plan" => json!({"type": "todo_list", "items": todo_items(args)}),
            _ => json!({"type": "tool_call", "name": call.name, "arguments": args}),
        }
    }
}

fn file_changes(call: &ToolCall) -> Vec<Value> {
    let args = &call.args;
    match call.name.as_str() {
        "apply_patch" => {
            let patch = args.get("input").and_then(Value::as_str).unwrap_or_default();
            patch
                .lines()
                .filter_map(|line| {
                    let line = line.trim();
                    for (marker, kind) in [
                        ("*** Add File: ", "add"),
                        ("*** Delete File: ", "delete"),
                        ("*** Update File: ", "update"),
                    ] {
                        if let Some(path) = line.strip_prefix(marker) {
                            return Some(json!({"path": path.trim(), "kind": kind}));
                        }
                    }
                    None
                })
                .collect()
        }
        _ => {
            let path = args.get("path").and_then(Value::as_str).unwrap_or_default();
            let kind = if call.name == "write_file" { "add" } else { "update" };
            vec![json!({"path": path, "kind": kind})]
        }
    }
}

fn todo_items(args: &Value) -> Vec<Value> {
    args.get("plan")
        .and_then(Value::as_array)
        .map(|plan| {
            plan.iter()
                .map(|step| {
                    json!({
                        "text": step.get("step").and_then(Value::as_str).unwrap_or_default(),
                        "completed": step.get("status").and_then(Value::as_str) == Some("completed"),
                    })
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
        Self::line(out, &json!({"type": "thread.started", "thread_id": session_id.to_string()}))
    }

    fn event(&mut self, event: &AgentEvent, out: &mut dyn Write) -> std::io::Result<()> {
        // Subagents' inner events are not items of the parent's turn.
        if !event.source.subagent_path.is_empty() {
            return Ok(());
        }
        match &event.kind {
            AgentEventKind::TurnStarted { .. } => Self::line(out, &json!({"type": "turn.started"})),
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
                let mut item = Self::tool_item(call);
                item["id"] = json!(id);
                let kind = item["type"].as_str().unwrap_or_default().to_owned();
                self.tools.insert(call.id.clone(), (id, item.clone()));
                if kind == "file_change" {
                    return Ok(()); // codex emits file changes only when completed
                }
                item["status"] = json!("in_progress");
                Self::line(out, &json!({"type": "item.started", "item": item}))
            }
            AgentEventKind::ToolOutputDelta { call_id, chunk, .. } => {
                if let Some((_, item)) = self.tools.get_mut(call_id)
                    && let Some(Value::String(output)) = item.get_mut("aggregated_output")
                {
                    output.push_str(chunk);
                }
                Ok(())
            }
            AgentEventKind::ToolFinished { call_id, result, .. } => {
                let Some((_, mut item)) = self.tools.remove(call_id) else { return Ok(()) };
                let ok = matches!(result, Ok(r) if r.status == ToolResultStatus::Success);
                let kind = item["type"].as_str().unwrap_or_default().to_owned();
                let text = match result {
                    Ok(r) => result_text(r),
                    Err(err) => err.to_string(),
                };
                match kind.as_str() {
                    "command_execution" => {
                        if item["aggregated_output"].as_str().is_none_or(str::is_empty) {
                            item["aggregated_output"] = json!(text);
                        }
                        let exit_code = exit_code_of(&text);
                        item["exit_code"] = exit_code.map_or(Value::Null, |c| json!(c));
                        item["status"] = json!(if ok { "completed" } else { "failed" });
                    }
                    "file_change" | "todo_list" => {
                        item["status"] = json!(if ok { "completed" } else { "failed" })
                    }
                    _ => {
                        item["result"] = json!(text);
                        item["status"] = json!(if ok { "completed" } else { "failed" });
                    }
                }
                Self::line(out, &json!({"type": "item.completed", "item": item}))
            }
            AgentEventKind::StepFinished { usage, .. } => {
                self.usage += *usage;
                self.flush_text(out)
            }
            AgentEventKind::StepRetried { reason, .. } => {
                self.messages.step_text.clear();
                self.reasoning.clear();
                let id = self.item_id();
                Self::line(
                    out,
                    &json!({"type": "item.completed", "item": {"id": id, "type": "error", "message": reason}}),
                )
            }
            AgentEventKind::HookMessage { event, message } => {
                // codex's JSONL has no event for it: stdout stays codex's event set, and the
                // person reads it on stderr as in text mode.
                let mut err = std::io::stderr().lock();
                let _ = writeln!(err, "{event} hook: {message}");
                Ok(())
            }
            AgentEventKind::Warning { message } => {
                let id = self.item_id();
                Self::line(
                    out,
                    &json!({"type": "item.completed", "item": {"id": id, "type": "error", "message": message}}),
                )
            }
            AgentEventKind::TurnDone { outcome, .. } => {
                self.flush_text(out)?;
                match outcome {
                    TurnOutcome::Completed => Self::line(
                        out,
                        &json!({"type": "turn.completed", "usage": usage_json(&self.usage)}),
                    ),
                    TurnOutcome::Failed { message } => Self::line(
                        out,
                        &json!({"type": "turn.failed", "error": {"message": message}}),
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
        let id = self.item_id();
        Self::line(
            out,
            &json!({"type": "item.completed", "item": {"id": id, "type": "error", "message": text}}),
        )
    }

    fn final_message(&self) -> String {
        self.messages.last_text.clone()
    }

    fn finish(&mut self, _final_message: &str, _out: &mut dyn Write) -> std::io::Result<()> {
        Ok(())
    }
}

/// The exit code `run_command` reports (`[exit code N; …]`), the last one in the text.
fn exit_code_of(text: &str) -> Option<i64> {
    let at = text.rfind("exit code ")?;
    let digits: String = text[at + "exit code ".len()..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    digits.parse().ok()
}

fn usage_json(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
        "output_tokens": usage.output_tokens,
        "reasoning_output_tokens": usage.reasoning_output_tokens,
    })
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
