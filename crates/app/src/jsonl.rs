//! The `exec --json` encoder: agent events → codex's `exec --json` events (`protocol::exec_event`),
//! shared by every front-end that speaks them (`codecoder exec --json`; codex's SDK drives exactly
//! that). Items follow codex: `agent_message`, `reasoning`, `command_execution`, `file_change`
//! (only ever completed), `mcp_tool_call` (an MCP server's tool, as the call's view says),
//! `todo_list`, `error`, and `tool_call` for tools codex has no item for; then
//! `turn.completed {usage}` or `turn.failed {error}`; an interrupted turn emits no terminal
//! event. Subagents' inner events are not items of the parent's turn. A model message is an
//! item once it is whole (`AgentMessage`, the text the kernel logged): deltas and a retried
//! step's void text never are.
//!
//! Invariant: every tool call the model makes is an item, with one id from its `item.started`
//! (file changes: none) to its `item.completed`. A call refused before it ran (no `ToolStarted`)
//! is started and completed when its result arrives: a refused command is `declined`, anything
//! else that did not run (a refusal of a tool whose item has no `declined`, an unknown tool, bad
//! arguments) is `failed`, with the reason where the item has room for it.

#[cfg(test)]
mod tests;

use std::collections::HashMap;

use codecoder_protocol::exec_event::{
    FileChange, FileChangeKind, ItemDetails, ItemStatus, McpToolCallResult, ThreadError,
    ThreadEvent, ThreadItem, TodoItem, TurnUsage,
};
use codecoder_protocol::{
    AgentEvent, AgentEventKind, CallKind, CallView, ChangeKind, ContentItem, PlanView, SessionId,
    ToolCall, ToolCallId, ToolError, ToolResult, ToolResultStatus, TurnOutcome, Usage,
};
use serde_json::{Value, json};

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

    fn flush_reasoning(&mut self, out: &mut Vec<ThreadEvent>) {
        if !self.reasoning.trim().is_empty() {
            let text = std::mem::take(&mut self.reasoning);
            self.completed(out, ItemDetails::Reasoning { text });
        }
        self.reasoning.clear();
    }

    /// A model message, whole: an `agent_message` item.
    fn message(&mut self, text: &str, out: &mut Vec<ThreadEvent>) {
        self.flush_reasoning(out);
        if text.trim().is_empty() {
            return;
        }
        self.completed(out, ItemDetails::AgentMessage { text: text.to_owned() });
    }

    /// The item a tool call becomes, in progress, by what its tool says it is.
    fn tool_item(&self, call: &ToolCall, view: &CallView) -> ItemDetails {
        let args = &call.args;
        match (&view.kind, &view.command, &view.plan) {
            (CallKind::Mcp { server, tool }, ..) => ItemDetails::McpToolCall {
                server: server.clone(),
                tool: tool.clone(),
                arguments: args.clone(),
                result: None,
                error: None,
                status: ItemStatus::InProgress,
            },
            (CallKind::Execute, Some(command), _) => ItemDetails::CommandExecution {
                command: command.clone(),
                aggregated_output: String::new(),
                exit_code: None,
                status: ItemStatus::InProgress,
            },
            (CallKind::Edit, ..) => ItemDetails::FileChange {
                changes: file_changes(view),
                status: ItemStatus::InProgress,
            },
            (CallKind::Plan, _, Some(plan)) => ItemDetails::TodoList { items: todo_items(plan) },
            _ => ItemDetails::ToolCall {
                name: call.name.clone(),
                arguments: args.clone(),
                result: None,
                status: ItemStatus::InProgress,
            },
        }
    }
}

impl ExecEventEncoder {
    /// A call about to run: its item, started (file changes only ever complete).
    fn tool_started(&mut self, call: &ToolCall, view: &CallView, out: &mut Vec<ThreadEvent>) {
        self.flush_reasoning(out);
        let id = self.item_id();
        let details = self.tool_item(call, view);
        self.tools.insert(call.id.clone(), (id.clone(), details.clone()));
        if !matches!(details, ItemDetails::FileChange { .. }) {
            out.push(ThreadEvent::ItemStarted { item: ThreadItem { id, details } });
        }
    }

    /// A call that ended without having started: its item, started like a call that runs. A
    /// refused `update_plan` is no plan: it shows as a generic tool call.
    fn tool_refused(
        &mut self,
        call: &ToolCall,
        view: &CallView,
        out: &mut Vec<ThreadEvent>,
    ) -> (String, ItemDetails) {
        self.flush_reasoning(out);
        let id = self.item_id();
        let details = match self.tool_item(call, view) {
            ItemDetails::TodoList { .. } => ItemDetails::ToolCall {
                name: call.name.clone(),
                arguments: call.args.clone(),
                result: None,
                status: ItemStatus::InProgress,
            },
            details => details,
        };
        if !matches!(details, ItemDetails::FileChange { .. }) {
            let item = ThreadItem { id: id.clone(), details: details.clone() };
            out.push(ThreadEvent::ItemStarted { item });
        }
        (id, details)
    }
}

/// A tool's item as its call ended with `result` (and, for an MCP call, the server's
/// `CallToolResult`).
fn finish_item(
    mut details: ItemDetails,
    result: &Result<ToolResult, ToolError>,
    mcp_result: Option<&Value>,
) -> ItemDetails {
    let ok = matches!(result, Ok(r) if r.status == ToolResultStatus::Success);
    let ended = if ok { ItemStatus::Completed } else { ItemStatus::Failed };
    let text = match result {
        Ok(r) => result_text(r),
        Err(err) => err.to_string(),
    };
    match &mut details {
        ItemDetails::CommandExecution { aggregated_output, exit_code, status, .. } => {
            *exit_code = result.as_ref().ok().and_then(|r| r.exit?.code);
            match result {
                // Refused (before it ran, or its escalation while it ran): codex's `declined`,
                // with the output of what did run, if anything.
                Err(ToolError::PermissionDenied { .. }) => *status = ItemStatus::Declined,
                Ok(_) | Err(_) => {
                    if aggregated_output.is_empty() {
                        *aggregated_output = text;
                    }
                    *status = ended;
                }
            }
        }
        ItemDetails::FileChange { status, .. } => *status = ended,
        ItemDetails::McpToolCall { result: item_result, error, status, .. } => {
            *status = ended;
            match result {
                // The server's result as it sent it; without it, the blocks the output came from.
                Ok(r) if ok => {
                    *item_result = Some(match mcp_result {
                        Some(sent) => McpToolCallResult {
                            content: sent
                                .get("content")
                                .and_then(Value::as_array)
                                .cloned()
                                .unwrap_or_default(),
                            structured_content: sent
                                .get("structuredContent")
                                .filter(|value| !value.is_null())
                                .cloned(),
                        },
                        None => McpToolCallResult {
                            content: r.content.iter().map(mcp_block).collect(),
                            structured_content: None,
                        },
                    });
                }
                Ok(_) | Err(_) => {
                    *item_result = None;
                    *error = Some(ThreadError { message: text });
                }
            }
        }
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
    details
}

/// A result's content item as the MCP content block it came from.
fn mcp_block(item: &ContentItem) -> Value {
    match item {
        ContentItem::Text { text } => json!({"type": "text", "text": text}),
        ContentItem::Image(image) => {
            json!({"type": "image", "data": image.data_base64, "mimeType": image.media_type})
        }
        ContentItem::BlobRef(blob) => json!({"type": "text", "text": blob.preview}),
    }
}

fn file_changes(view: &CallView) -> Vec<FileChange> {
    view.changes
        .iter()
        .map(|change| FileChange {
            path: change.path.clone(),
            kind: match change.kind {
                ChangeKind::Add => FileChangeKind::Add,
                ChangeKind::Delete => FileChangeKind::Delete,
                ChangeKind::Update { .. } => FileChangeKind::Update,
            },
        })
        .collect()
}

fn todo_items(plan: &PlanView) -> Vec<TodoItem> {
    plan.steps
        .iter()
        .map(|step| TodoItem { text: step.text.clone(), completed: step.status == "completed" })
        .collect()
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

    /// Text the front-end gives as the assistant's answer (the plan `exec --plan` presents):
    /// an `agent_message` item.
    pub fn answer(&mut self, text: &str) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        self.message(text, &mut out);
        out
    }

    fn encode_into(&mut self, event: &AgentEvent, out: &mut Vec<ThreadEvent>) {
        match &event.kind {
            AgentEventKind::TurnStarted { .. } => out.push(ThreadEvent::TurnStarted {}),
            // codex shows a model message once it is whole.
            AgentEventKind::TextDelta { .. } => {}
            AgentEventKind::AgentMessage { text, .. } => self.message(text, out),
            AgentEventKind::ReasoningDelta { delta, .. } => self.reasoning.push_str(delta),
            AgentEventKind::ToolStarted { call, view, .. } => self.tool_started(call, view, out),
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
                    Some((id, details @ ItemDetails::McpToolCall { .. })) => {
                        if let ItemDetails::McpToolCall { result, .. } = details {
                            let progress = result.get_or_insert_with(|| McpToolCallResult {
                                content: vec![json!({"type": "text", "text": ""})],
                                structured_content: None,
                            });
                            if let Some(Value::String(text)) =
                                progress.content.first_mut().and_then(|block| block.get_mut("text"))
                            {
                                text.push_str(chunk);
                            }
                        }
                        let item = ThreadItem { id: id.clone(), details: details.clone() };
                        out.push(ThreadEvent::ItemUpdated { item });
                    }
                    _ => {}
                }
            }
            AgentEventKind::ToolFinished { call_id, call, view, result, mcp_result, .. } => {
                let (id, details) = match self.tools.remove(call_id) {
                    Some(open) => open,
                    // Refused before it ran: announced now, so it is an item like the others.
                    None => self.tool_refused(call, view, out),
                };
                let details = finish_item(details, result, mcp_result.as_ref());
                out.push(ThreadEvent::ItemCompleted { item: ThreadItem { id, details } });
            }
            AgentEventKind::StepFinished { usage, .. } => {
                self.usage += *usage;
                self.flush_reasoning(out);
            }
            AgentEventKind::StepRetried { reason, .. } => {
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
                self.flush_reasoning(out);
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
            | AgentEventKind::CallProgress { .. }
            | AgentEventKind::Status(_)
            | AgentEventKind::ApprovalRequest(_)
            | AgentEventKind::AskUser(_)
            | AgentEventKind::Usage { .. }
            | AgentEventKind::ShutdownComplete
            | AgentEventKind::UserPrompt { .. } => {}
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
