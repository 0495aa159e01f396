//! One loaded thread's worker: it owns the session's agent and turns its events into the
//! protocol's notifications (written straight to the writer) and approval requests (handed to
//! the dispatcher, which owns the request ids and the answers). A translation only: the turns
//! run in the kernel's agent loop, as in every front-end.
//!
//! Invariants: a turn's notifications go out in the agent's order; `item/started` of a call that
//! needs approval precedes its approval request; every turn that starts ends with exactly one
//! `Internal::TurnEnded`, which the dispatcher turns into `turn/completed` after it settled the
//! turn's open requests. Subagents' inner events are not items of the thread's turns, but their
//! approval requests are forwarded (the person must still answer them).

use std::collections::HashMap;
use std::time::Instant;

use codecoder_app::result_text;
use codecoder_kernel::AgentHandle;
use codecoder_protocol::{
    AgentCommand, AgentEvent, AgentEventKind, AskUserAnswer, AskUserRequest, ToolCall, ToolCallId,
    ToolError, ToolResult, ToolResultStatus, TurnOutcome, Usage,
};
use crossbeam_channel::{Receiver, Sender, select};
use serde_json::Value;

use crate::types::{
    CommandExecutionRequestApprovalParams, CompactedNotification, DeltaNotification,
    ErrorNotification, FileChangeRequestApprovalParams, FileUpdateChange,
    ItemCompletedNotification, ItemStartedNotification, ItemStatus, PatchChangeKind,
    ReasoningTextDeltaNotification, ServerNotification, ServerRequest, ThreadItem,
    ThreadTokenUsage, TokenUsageBreakdown, TokenUsageNotification, ToolCallRequestApprovalParams,
    ToolOutputContentItem, ToolRequestUserInputOption, ToolRequestUserInputParams,
    ToolRequestUserInputQuestion, Turn, TurnError, TurnNotification, TurnStatus, UserInput,
    WarningNotification, now_ms,
};
use crate::writer::WriterMsg;

/// Dispatcher → worker.
pub(crate) enum Control {
    /// Start a turn with this id and input.
    Start {
        /// The id the client was given.
        turn_id: String,
        /// The input for the agent.
        input: codecoder_protocol::UserInput,
        /// The input as the client sent it, for the `userMessage` item.
        items: Vec<UserInput>,
    },
    /// Compact the conversation now, as a turn with this id.
    Compact {
        /// The id the turn will have.
        turn_id: String,
    },
    /// Shut the agent down and end.
    Shutdown,
}

/// Worker → dispatcher.
pub(crate) enum Internal {
    /// Ask the client; answer through `reply`.
    Approval {
        /// The thread.
        thread_id: String,
        /// The request (its method and params).
        request: ServerRequest,
        /// Where the answer goes.
        reply: codecoder_protocol::Reply<codecoder_protocol::ApprovalDecision>,
    },
    /// Ask the client a question (if it takes questions); answer through `reply`.
    Question {
        /// The thread.
        thread_id: String,
        /// The `item/tool/requestUserInput` request, with one question.
        request: ServerRequest,
        /// The id of that question, the key of its answer.
        question_id: String,
        /// Where the answer goes.
        reply: codecoder_protocol::Reply<AskUserAnswer>,
    },
    /// A turn ended.
    TurnEnded {
        /// The thread.
        thread_id: String,
        /// The turn, with its final status.
        turn: Turn,
    },
    /// The agent stopped (shut down, or died): the thread is no longer loaded.
    Closed {
        /// The thread.
        thread_id: String,
    },
}

/// A tool call's item while it is open.
pub(crate) struct OpenTool {
    pub(crate) item: ThreadItem,
    /// When `item/started` was sent, in Unix milliseconds.
    pub(crate) started_at_ms: i64,
    pub(crate) started: Option<Instant>,
    /// The client was asked to approve it.
    pub(crate) asked: bool,
}

/// The translation state of one thread.
pub(crate) struct Worker {
    thread_id: String,
    cwd: String,
    context_window: u64,
    out: Sender<WriterMsg>,
    internal: Sender<Internal>,
    turn: Option<String>,
    /// The client's input of the turn being started, for its `userMessage` item.
    pending_input: Vec<UserInput>,
    next_item: u64,
    /// The open agent message: (item id, text).
    message: Option<(String, String)>,
    /// The open reasoning item: (item id, text).
    reasoning: Option<(String, String)>,
    tools: HashMap<ToolCallId, OpenTool>,
    total: Usage,
}

impl Worker {
    pub(crate) fn new(
        thread_id: String,
        cwd: String,
        context_window: u64,
        out: Sender<WriterMsg>,
        internal: Sender<Internal>,
    ) -> Self {
        Self {
            thread_id,
            cwd,
            context_window,
            out,
            internal,
            turn: None,
            pending_input: Vec::new(),
            next_item: 0,
            message: None,
            reasoning: None,
            tools: HashMap::new(),
            total: Usage::default(),
        }
    }

    /// Runs until the dispatcher says `Shutdown` (or is gone) or the agent stops.
    pub(crate) fn run(mut self, agent: AgentHandle, control: &Receiver<Control>) {
        loop {
            select! {
                recv(control) -> message => match message {
                    Ok(Control::Start { turn_id, input, items }) => {
                        self.turn = Some(turn_id);
                        self.pending_input = items;
                        if agent.cmd.send(AgentCommand::Submit(input)).is_err() {
                            self.end_turn(TurnStatus::Failed, Some("the agent stopped".into()));
                        }
                    }
                    Ok(Control::Compact { turn_id }) => {
                        self.turn = Some(turn_id);
                        if agent.cmd.send(AgentCommand::Compact { focus: None }).is_err() {
                            self.end_turn(TurnStatus::Failed, Some("the agent stopped".into()));
                        }
                    }
                    Ok(Control::Shutdown) | Err(_) => break,
                },
                recv(agent.events) -> event => match event {
                    Ok(event) => self.event(event),
                    Err(_) => {
                        if self.turn.is_some() {
                            self.end_turn(TurnStatus::Failed, Some("the agent stopped".into()));
                        }
                        break;
                    }
                },
            }
        }
        // Cancel whatever runs (its processes are killed), close the log, join the agent.
        let _ = agent.cmd.send(AgentCommand::Shutdown);
        for event in agent.events.iter() {
            if matches!(event.kind, AgentEventKind::ShutdownComplete) {
                break;
            }
            // Requests that arrive meanwhile are dropped unanswered: cancelled.
        }
        let _ = agent.join();
        let _ = self.internal.send(Internal::Closed { thread_id: self.thread_id.clone() });
    }

    fn notify(&self, notification: ServerNotification) {
        let _ = self.out.send(WriterMsg::Notification(notification));
    }

    fn item_id(&mut self) -> String {
        let id = format!("item_{}", self.next_item);
        self.next_item += 1;
        id
    }

    fn turn_id(&self) -> String {
        self.turn.clone().unwrap_or_default()
    }

    fn started(&self, item: ThreadItem) {
        self.notify(ServerNotification::ItemStarted(ItemStartedNotification {
            item,
            thread_id: self.thread_id.clone(),
            turn_id: self.turn_id(),
            started_at_ms: now_ms(),
        }));
    }

    fn completed(&self, item: ThreadItem) {
        self.notify(ServerNotification::ItemCompleted(ItemCompletedNotification {
            item,
            thread_id: self.thread_id.clone(),
            turn_id: self.turn_id(),
            completed_at_ms: now_ms(),
        }));
    }

    fn delta(&self, item_id: &str, delta: &str) -> DeltaNotification {
        DeltaNotification {
            thread_id: self.thread_id.clone(),
            turn_id: self.turn_id(),
            item_id: item_id.to_owned(),
            delta: delta.to_owned(),
        }
    }

    /// Completes the open reasoning and agent message items.
    fn flush_text(&mut self) {
        if let Some((id, text)) = self.reasoning.take() {
            self.completed(ThreadItem::Reasoning { id, summary: Vec::new(), content: vec![text] });
        }
        if let Some((id, text)) = self.message.take() {
            self.completed(ThreadItem::AgentMessage { id, text });
        }
    }

    fn event(&mut self, event: AgentEvent) {
        let root = event.source.subagent_path.is_empty();
        match event.kind {
            AgentEventKind::ApprovalRequest(request) => {
                self.flush_text();
                let (item_id, started_at_ms) = match self.tools.get_mut(&request.call.id) {
                    Some(open) => {
                        open.asked = true;
                        (open.item.id().to_owned(), open.started_at_ms)
                    }
                    None if root => {
                        let item = self.tool_item(&request.call);
                        let id = item.id().to_owned();
                        self.started(item.clone());
                        let started_at_ms = now_ms();
                        self.tools.insert(
                            request.call.id.clone(),
                            OpenTool { item, started_at_ms, started: None, asked: true },
                        );
                        (id, started_at_ms)
                    }
                    None => (request.call.id.to_string(), now_ms()),
                };
                let thread_id = self.thread_id.clone();
                let turn_id = self.turn_id();
                let reason = request.reason.clone().or_else(|| Some(request.summary.clone()));
                let call = &request.call;
                let server_request = match call.name.as_str() {
                    "run_command" => ServerRequest::CommandExecutionRequestApproval(
                        CommandExecutionRequestApprovalParams {
                            thread_id: thread_id.clone(),
                            turn_id,
                            item_id,
                            started_at_ms,
                            reason,
                            command: Some(command_of(call)),
                            cwd: Some(self.cwd.clone()),
                        },
                    ),
                    "apply_patch" | "edit" | "write_file" => {
                        ServerRequest::FileChangeRequestApproval(FileChangeRequestApprovalParams {
                            thread_id: thread_id.clone(),
                            turn_id,
                            item_id,
                            started_at_ms,
                            reason,
                        })
                    }
                    _ => ServerRequest::ToolCallRequestApproval(ToolCallRequestApprovalParams {
                        thread_id: thread_id.clone(),
                        turn_id,
                        item_id,
                        started_at_ms,
                        tool: call.name.clone(),
                        arguments: call.args.clone(),
                        reason,
                    }),
                };
                let _ = self.internal.send(Internal::Approval {
                    thread_id,
                    request: server_request,
                    reply: request.reply,
                });
            }
            AgentEventKind::AskUser(request) => {
                self.flush_text();
                self.ask(request);
            }
            _ if !root => {}
            AgentEventKind::TurnStarted { .. } => {
                if self.turn.is_none() {
                    self.turn = Some(uuid::Uuid::now_v7().to_string());
                }
                self.notify(ServerNotification::TurnStarted(TurnNotification {
                    thread_id: self.thread_id.clone(),
                    turn: turn(self.turn_id(), TurnStatus::InProgress, None),
                }));
                let content = std::mem::take(&mut self.pending_input);
                if !content.is_empty() {
                    let item = ThreadItem::UserMessage { id: self.item_id(), content };
                    self.started(item.clone());
                    self.completed(item);
                }
            }
            AgentEventKind::TextDelta { delta, .. } => {
                if let Some((id, text)) = self.reasoning.take() {
                    self.completed(ThreadItem::Reasoning {
                        id,
                        summary: Vec::new(),
                        content: vec![text],
                    });
                }
                let id = match &self.message {
                    Some((id, _)) => id.clone(),
                    None => {
                        let id = self.item_id();
                        self.started(ThreadItem::AgentMessage {
                            id: id.clone(),
                            text: String::new(),
                        });
                        self.message = Some((id.clone(), String::new()));
                        id
                    }
                };
                self.notify(ServerNotification::AgentMessageDelta(self.delta(&id, &delta)));
                if let Some((_, text)) = &mut self.message {
                    text.push_str(&delta);
                }
            }
            AgentEventKind::ReasoningDelta { delta, .. } => {
                let id = match &self.reasoning {
                    Some((id, _)) => id.clone(),
                    None => {
                        let id = self.item_id();
                        self.started(ThreadItem::Reasoning {
                            id: id.clone(),
                            summary: Vec::new(),
                            content: Vec::new(),
                        });
                        self.reasoning = Some((id.clone(), String::new()));
                        id
                    }
                };
                let DeltaNotification { thread_id, turn_id, item_id, delta: text } =
                    self.delta(&id, &delta);
                self.notify(ServerNotification::ReasoningTextDelta(
                    ReasoningTextDeltaNotification {
                        thread_id,
                        turn_id,
                        item_id,
                        delta: text,
                        content_index: 0,
                    },
                ));
                if let Some((_, text)) = &mut self.reasoning {
                    text.push_str(&delta);
                }
            }
            AgentEventKind::ToolStarted { call, .. } => {
                self.flush_text();
                if let Some(open) = self.tools.get_mut(&call.id) {
                    open.started = Some(Instant::now());
                    return;
                }
                let item = self.tool_item(&call);
                self.started(item.clone());
                self.tools.insert(
                    call.id,
                    OpenTool {
                        item,
                        started_at_ms: now_ms(),
                        started: Some(Instant::now()),
                        asked: false,
                    },
                );
            }
            AgentEventKind::ToolOutputDelta { call_id, chunk, .. } => {
                let Some(open) = self.tools.get_mut(&call_id) else { return };
                let ThreadItem::CommandExecution { id, aggregated_output, .. } = &mut open.item
                else {
                    return;
                };
                aggregated_output.get_or_insert_with(String::new).push_str(&chunk);
                let id = id.clone();
                self.notify(ServerNotification::CommandExecutionOutputDelta(
                    self.delta(&id, &chunk),
                ));
            }
            AgentEventKind::ToolFinished { call_id, call, result, .. } => {
                // A call refused before it was announced (unknown tool, bad arguments, a policy
                // deny) gets its item now: started and completed at once, a deny `declined`.
                let open = match self.tools.remove(&call_id) {
                    Some(open) => open,
                    None => {
                        self.flush_text();
                        let item = self.tool_item(&call);
                        self.started(item.clone());
                        OpenTool {
                            item,
                            started_at_ms: now_ms(),
                            started: None,
                            asked: matches!(result, Err(ToolError::PermissionDenied { .. })),
                        }
                    }
                };
                self.completed(finish(open, &result));
            }
            AgentEventKind::StepFinished { usage, .. } => {
                self.flush_text();
                self.total += usage;
                self.notify(ServerNotification::ThreadTokenUsageUpdated(TokenUsageNotification {
                    thread_id: self.thread_id.clone(),
                    turn_id: self.turn_id(),
                    token_usage: ThreadTokenUsage {
                        total: breakdown(&self.total),
                        last: breakdown(&usage),
                        model_context_window: Some(self.context_window),
                    },
                }));
            }
            AgentEventKind::StepRetried { reason, .. } => {
                self.flush_text();
                self.notify(ServerNotification::Error(ErrorNotification {
                    error: TurnError { message: reason },
                    will_retry: true,
                    thread_id: self.thread_id.clone(),
                    turn_id: self.turn_id(),
                }));
            }
            AgentEventKind::Warning { message } => self.warning(message),
            AgentEventKind::HookMessage { event, message } => {
                self.warning(format!("{event} hook: {message}"));
            }
            AgentEventKind::Compacted { .. } => {
                self.flush_text();
                let item = ThreadItem::ContextCompaction { id: self.item_id() };
                self.started(item.clone());
                self.completed(item);
                self.notify(ServerNotification::ThreadCompacted(CompactedNotification {
                    thread_id: self.thread_id.clone(),
                    turn_id: self.turn_id(),
                }));
            }
            AgentEventKind::TurnDone { outcome, .. } => {
                self.flush_text();
                let (status, error) = match outcome {
                    TurnOutcome::Completed => (TurnStatus::Completed, None),
                    TurnOutcome::Cancelled | TurnOutcome::Interrupted => {
                        (TurnStatus::Interrupted, None)
                    }
                    TurnOutcome::Failed { message } => (TurnStatus::Failed, Some(message)),
                };
                self.end_turn(status, error);
            }
            AgentEventKind::StepStarted { .. }
            | AgentEventKind::CallProgress { .. }
            | AgentEventKind::Status(_)
            | AgentEventKind::Usage { .. }
            | AgentEventKind::ShutdownComplete => {}
        }
    }

    /// Hands the model's question to the dispatcher as `item/tool/requestUserInput` (which asks
    /// only a client that takes questions), on the item of the `ask_user` call.
    fn ask(&mut self, request: AskUserRequest) {
        let AskUserRequest { id, call_id, question, options, reply } = request;
        let item_id = match self.tools.get_mut(&call_id) {
            Some(open) => {
                open.asked = true;
                open.item.id().to_owned()
            }
            None => call_id.to_string(),
        };
        let question_id = id.to_string();
        let free_text = options.is_empty();
        let options = (!free_text).then(|| {
            options
                .into_iter()
                .map(|label| ToolRequestUserInputOption { label, description: String::new() })
                .collect()
        });
        let params = ToolRequestUserInputParams {
            thread_id: self.thread_id.clone(),
            turn_id: self.turn_id(),
            item_id,
            questions: vec![ToolRequestUserInputQuestion {
                id: question_id.clone(),
                header: "Question".to_owned(),
                question,
                // The tool lets the person answer in their own words besides the options.
                is_other: !free_text,
                is_secret: false,
                options,
            }],
            is_blocking: true,
            auto_resolution_ms: None,
        };
        let _ = self.internal.send(Internal::Question {
            thread_id: self.thread_id.clone(),
            request: ServerRequest::ToolRequestUserInput(params),
            question_id,
            reply,
        });
    }

    fn warning(&self, message: String) {
        self.notify(ServerNotification::Warning(WarningNotification {
            thread_id: Some(self.thread_id.clone()),
            message,
        }));
    }

    /// Closes what is open and reports the end of the turn to the dispatcher.
    fn end_turn(&mut self, status: TurnStatus, error: Option<String>) {
        let open: Vec<OpenTool> = self.tools.drain().map(|(_, open)| open).collect();
        for open in open {
            let result = Err(ToolError::Cancelled);
            self.completed(finish(open, &result));
        }
        if let Some(message) = &error {
            self.notify(ServerNotification::Error(ErrorNotification {
                error: TurnError { message: message.clone() },
                will_retry: false,
                thread_id: self.thread_id.clone(),
                turn_id: self.turn_id(),
            }));
        }
        let turn = turn(self.turn_id(), status, error.map(|message| TurnError { message }));
        self.turn = None;
        let _ = self.internal.send(Internal::TurnEnded { thread_id: self.thread_id.clone(), turn });
    }

    /// The item a tool call becomes, in progress.
    fn tool_item(&mut self, call: &ToolCall) -> ThreadItem {
        let id = self.item_id();
        tool_item(id, call, &self.cwd)
    }
}

/// The item a tool call becomes, in progress.
pub(crate) fn tool_item(id: String, call: &ToolCall, cwd: &str) -> ThreadItem {
    {
        match call.name.as_str() {
            "run_command" => ThreadItem::CommandExecution {
                id,
                command: command_of(call),
                cwd: cwd.to_owned(),
                status: ItemStatus::InProgress,
                command_actions: Vec::new(),
                aggregated_output: None,
                exit_code: None,
                duration_ms: None,
            },
            "apply_patch" | "edit" | "write_file" => ThreadItem::FileChange {
                id,
                changes: file_changes(call),
                status: ItemStatus::InProgress,
            },
            _ => ThreadItem::DynamicToolCall {
                id,
                tool: call.name.clone(),
                arguments: call.args.clone(),
                status: ItemStatus::InProgress,
                content_items: None,
                success: None,
                duration_ms: None,
            },
        }
    }
}

pub(crate) fn turn(id: String, status: TurnStatus, error: Option<TurnError>) -> Turn {
    Turn { id, items: Vec::new(), status, error }
}

fn command_of(call: &ToolCall) -> String {
    call.args.get("command").and_then(Value::as_str).unwrap_or_default().to_owned()
}

fn breakdown(usage: &Usage) -> TokenUsageBreakdown {
    TokenUsageBreakdown {
        total_tokens: usage.input_tokens + usage.output_tokens,
        input_tokens: usage.input_tokens,
        cached_input_tokens: usage.cached_input_tokens,
        output_tokens: usage.output_tokens,
        reasoning_output_tokens: usage.reasoning_output_tokens,
    }
}

/// The files an edit tool's call changes, with the change as the model wrote it.
fn file_changes(call: &ToolCall) -> Vec<FileUpdateChange> {
    let args = &call.args;
    let text = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    match call.name.as_str() {
        "apply_patch" => {
            let patch = text("input");
            let mut changes: Vec<FileUpdateChange> = Vec::new();
            for line in patch.lines() {
                let line = line.trim_end();
                let header = [
                    ("*** Add File: ", PatchChangeKind::Add),
                    ("*** Delete File: ", PatchChangeKind::Delete),
                    ("*** Update File: ", PatchChangeKind::Update),
                ]
                .into_iter()
                .find_map(|(marker, kind)| line.strip_prefix(marker).map(|path| (path, kind)));
                match header {
                    Some((path, kind)) => changes.push(FileUpdateChange {
                        path: path.trim().to_owned(),
                        kind,
                        diff: String::new(),
                    }),
                    None if line == "*** End Patch" => {}
                    None => {
                        if let Some(change) = changes.last_mut() {
                            change.diff.push_str(line);
                            change.diff.push('\n');
                        }
                    }
                }
            }
            changes
        }
        "write_file" => vec![FileUpdateChange {
            path: text("path"),
            kind: PatchChangeKind::Add,
            diff: text("content").lines().map(|line| format!("+{line}\n")).collect(),
        }],
        _ => {
            let removed: String =
                text("old_string").lines().map(|line| format!("-{line}\n")).collect();
            let added: String =
                text("new_string").lines().map(|line| format!("+{line}\n")).collect();
            vec![FileUpdateChange {
                path: text("path"),
                kind: PatchChangeKind::Update,
                diff: removed + &added,
            }]
        }
    }
}

/// An open tool item, completed with its call's result.
pub(crate) fn finish(open: OpenTool, result: &Result<ToolResult, ToolError>) -> ThreadItem {
    let ok = matches!(result, Ok(r) if r.status == ToolResultStatus::Success);
    let status = match result {
        _ if ok => ItemStatus::Completed,
        Err(ToolError::PermissionDenied { .. } | ToolError::Cancelled) if open.asked => {
            ItemStatus::Declined
        }
        _ => ItemStatus::Failed,
    };
    let text = match result {
        Ok(result) => result_text(result),
        Err(err) => err.to_string(),
    };
    let duration_ms =
        open.started.map(|at| i64::try_from(at.elapsed().as_millis()).unwrap_or(i64::MAX));
    match open.item {
        ThreadItem::CommandExecution {
            id,
            command,
            cwd,
            command_actions,
            aggregated_output,
            ..
        } => ThreadItem::CommandExecution {
            id,
            command,
            cwd,
            status,
            command_actions,
            aggregated_output: Some(aggregated_output.unwrap_or(text)),
            exit_code: result.as_ref().ok().and_then(|r| r.exit.as_ref()?.code),
            duration_ms,
        },
        ThreadItem::FileChange { id, changes, .. } => {
            ThreadItem::FileChange { id, changes, status }
        }
        ThreadItem::DynamicToolCall { id, tool, arguments, .. } => ThreadItem::DynamicToolCall {
            id,
            tool,
            arguments,
            // Codex's dynamic tool calls end `completed` or `failed`; there is no `declined`.
            status: match status {
                ItemStatus::Declined => ItemStatus::Failed,
                other => other,
            },
            content_items: Some(vec![ToolOutputContentItem::InputText { text }]),
            success: Some(ok),
            duration_ms,
        },
        other @ (ThreadItem::UserMessage { .. }
        | ThreadItem::AgentMessage { .. }
        | ThreadItem::Reasoning { .. }
        | ThreadItem::ContextCompaction { .. }) => other,
    }
}
