//! The translation of one thread's agent events into the protocol: item, delta, token-usage and
//! compaction notifications, and the approval and question requests the dispatcher asks the
//! client. The live worker (`thread.rs`) feeds it the agent's events; `thread/resume` feeds it
//! the runtime's replay of the session log (`history.rs`), so a thread's earlier turns are the
//! items the live run showed.
//!
//! What a call is comes from the `CallView` its tool gave (on `ToolStarted`, `ToolFinished`,
//! `CallProgress` and approval requests), never from the tool's name or arguments: a call that
//! runs a command (`Execute` with a command line) is a `commandExecution` item and asks with
//! `item/commandExecution/requestApproval`; a call that edits files (`Edit`) is a `fileChange`
//! item with the view's changes and asks with `item/fileChange/requestApproval`; any other call
//! is a `dynamicToolCall` item carrying the tool's name and arguments as the model sent them
//! (MCP servers' tools and plan updates too: this server sends no `mcpToolCall` or `plan`
//! items).
//!
//! Invariants:
//! - A turn's outputs come in the agent's order; every item that starts completes once, with
//!   the id it started with; items start in the order the model produced them.
//! - `item/started` of a call that needs approval precedes its approval request.
//! - An agent message's text is the step's text as the kernel logged it (`AgentMessage`, sent
//!   once the message is whole and before the step's calls run, as codex completes it): a
//!   retried step's void text is never in a completed item. Only a step stopped before it
//!   finished (an interrupt, a failure) ends its message with the text streamed so far.
//! - Every turn that starts ends with exactly one `Internal::TurnEnded`.
//! - Subagents' inner events are not items of the thread's turns, but their approval requests
//!   and questions are forwarded (the person must still answer them).

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use codecoder_app::result_text;
use codecoder_protocol::{
    AgentEvent, AgentEventKind, AskUserRequest, CallKind, CallView, ChangeKind, ToolCall,
    ToolCallId, ToolError, ToolResult, ToolResultStatus, TurnOutcome, Usage,
};

use crate::thread::Internal;
use crate::types::{
    CommandExecutionRequestApprovalParams, CompactedNotification, DeltaNotification,
    ErrorNotification, FileChangePatchUpdatedNotification, FileChangeRequestApprovalParams,
    FileUpdateChange, ItemCompletedNotification, ItemStartedNotification, ItemStatus,
    PatchChangeKind, ReasoningTextDeltaNotification, ServerNotification, ServerRequest, ThreadItem,
    ThreadTokenUsage, TokenUsageBreakdown, TokenUsageNotification, ToolCallRequestApprovalParams,
    ToolOutputContentItem, ToolRequestUserInputOption, ToolRequestUserInputParams,
    ToolRequestUserInputQuestion, Turn, TurnError, TurnNotification, TurnStatus, UserInput,
    WarningNotification, now_ms,
};

/// What translating an event gives, in order.
pub(crate) enum Output {
    /// A notification for the client.
    Notify(ServerNotification),
    /// A request or report for the dispatcher.
    Internal(Internal),
}

/// A tool call's item while it is open.
pub(crate) struct OpenTool {
    pub(crate) item: ThreadItem,
    /// When `item/started` was sent, in Unix milliseconds.
    pub(crate) started_at_ms: i64,
    /// When the call started to run (`ToolStarted`).
    pub(crate) started: Option<Instant>,
    /// The client was asked to approve it.
    pub(crate) asked: bool,
    /// The item was opened while the model was still writing the call (`CallProgress`), and
    /// neither its `ToolStarted` nor an approval request has come yet.
    pub(crate) written: bool,
}

/// An agent message the model is streaming.
struct OpenMessage {
    id: String,
    /// What was streamed of it in the current attempt of the step: its text only when the step
    /// stops before it finishes (a finished step's text comes with `AgentMessage`).
    streamed: String,
}

/// The translation state of one thread.
pub(crate) struct Translator {
    thread_id: String,
    cwd: String,
    context_window: u64,
    /// The prefix of item ids: distinct for live items and those read back from the log, so a
    /// resumed thread's ids never collide.
    item_prefix: &'static str,
    next_item: u64,
    turn: Option<String>,
    /// The client's input of the turn being started, for its `userMessage` item.
    pending_input: Vec<UserInput>,
    message: Option<OpenMessage>,
    /// The open reasoning item: (item id, text).
    reasoning: Option<(String, String)>,
    tools: HashMap<ToolCallId, OpenTool>,
    /// Calls the person was asked about before their item opened (a replayed approval).
    asked: HashSet<ToolCallId>,
    total: Usage,
    out: Vec<Output>,
}

impl Translator {
    pub(crate) fn new(
        thread_id: String,
        cwd: String,
        context_window: u64,
        item_prefix: &'static str,
    ) -> Self {
        Self {
            thread_id,
            cwd,
            context_window,
            item_prefix,
            next_item: 0,
            turn: None,
            pending_input: Vec::new(),
            message: None,
            reasoning: None,
            tools: HashMap::new(),
            asked: HashSet::new(),
            total: Usage::default(),
            out: Vec::new(),
        }
    }

    /// What the events so far gave, in order; the translator keeps none of it.
    pub(crate) fn take_output(&mut self) -> Vec<Output> {
        std::mem::take(&mut self.out)
    }

    /// The next turn is `turn_id`, started by the client with `items` (its `userMessage` item
    /// goes out when the agent starts the turn).
    pub(crate) fn begin_turn(&mut self, turn_id: String, items: Vec<UserInput>) {
        self.turn = Some(turn_id);
        self.pending_input = items;
    }

    /// The thread's id.
    pub(crate) fn thread_id(&self) -> &str {
        &self.thread_id
    }

    /// Whether a turn is running.
    pub(crate) fn in_turn(&self) -> bool {
        self.turn.is_some()
    }

    /// A message of the person's: a `userMessage` item, started and completed.
    pub(crate) fn user_message(&mut self, content: Vec<UserInput>) {
        if content.is_empty() {
            return;
        }
        let item = ThreadItem::UserMessage { id: self.item_id(), content };
        self.started(item.clone());
        self.completed(item);
    }

    /// The person was asked about `call_id` (an approval the log holds): a refusal of it is the
    /// person's `declined`, as it was live.
    pub(crate) fn asked(&mut self, call_id: &ToolCallId) {
        match self.tools.get_mut(call_id) {
            Some(open) => open.asked = true,
            None => {
                self.asked.insert(call_id.clone());
            }
        }
    }

    fn notify(&mut self, notification: ServerNotification) {
        self.out.push(Output::Notify(notification));
    }

    fn item_id(&mut self) -> String {
        let id = format!("{}{}", self.item_prefix, self.next_item);
        self.next_item += 1;
        id
    }

    fn turn_id(&self) -> String {
        self.turn.clone().unwrap_or_default()
    }

    fn started(&mut self, item: ThreadItem) {
        let notification = ItemStartedNotification {
            item,
            thread_id: self.thread_id.clone(),
            turn_id: self.turn_id(),
            started_at_ms: now_ms(),
        };
        self.notify(ServerNotification::ItemStarted(notification));
    }

    fn completed(&mut self, item: ThreadItem) {
        let notification = ItemCompletedNotification {
            item,
            thread_id: self.thread_id.clone(),
            turn_id: self.turn_id(),
            completed_at_ms: now_ms(),
        };
        self.notify(ServerNotification::ItemCompleted(notification));
    }

    fn delta(&self, item_id: &str, delta: &str) -> DeltaNotification {
        DeltaNotification {
            thread_id: self.thread_id.clone(),
            turn_id: self.turn_id(),
            item_id: item_id.to_owned(),
            delta: delta.to_owned(),
        }
    }

    /// Completes the open reasoning item.
    fn close_reasoning(&mut self) {
        if let Some((id, text)) = self.reasoning.take() {
            self.completed(ThreadItem::Reasoning { id, summary: Vec::new(), content: vec![text] });
        }
    }

    /// Completes the open agent message with `text`.
    fn close_message(&mut self, text: String) {
        if let Some(OpenMessage { id, .. }) = self.message.take() {
            self.completed(ThreadItem::AgentMessage { id, text });
        }
    }

    /// Completes what the model was streaming when its step stopped before it finished: the
    /// message ends with what was streamed of it.
    fn close_stopped(&mut self) {
        self.close_reasoning();
        if let Some(OpenMessage { streamed, .. }) = &mut self.message {
            let text = std::mem::take(streamed);
            self.close_message(text);
        }
    }

    /// Translates one agent event.
    pub(crate) fn event(&mut self, event: AgentEvent) {
        let root = event.source.subagent_path.is_empty();
        match event.kind {
            AgentEventKind::ApprovalRequest(request) => self.approval(request, root),
            AgentEventKind::AskUser(request) => {
                self.close_reasoning();
                self.ask(request);
            }
            _ if !root => {}
            AgentEventKind::TurnStarted { .. } => {
                if self.turn.is_none() {
                    self.turn = Some(uuid::Uuid::now_v7().to_string());
                }
                let turn = turn(self.turn_id(), TurnStatus::InProgress, None);
                self.notify(ServerNotification::TurnStarted(TurnNotification {
                    thread_id: self.thread_id.clone(),
                    turn,
                }));
                let content = std::mem::take(&mut self.pending_input);
                self.user_message(content);
            }
            AgentEventKind::TextDelta { delta, .. } => {
                self.close_reasoning();
                let id = match &self.message {
                    Some(message) => message.id.clone(),
                    None => {
                        let id = self.item_id();
                        self.started(ThreadItem::AgentMessage {
                            id: id.clone(),
                            text: String::new(),
                        });
                        self.message =
                            Some(OpenMessage { id: id.clone(), streamed: String::new() });
                        id
                    }
                };
                let notification = self.delta(&id, &delta);
                self.notify(ServerNotification::AgentMessageDelta(notification));
                if let Some(message) = &mut self.message {
                    message.streamed.push_str(&delta);
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
            AgentEventKind::CallProgress { call_id, view, .. } => self.progress(call_id, &view),
            AgentEventKind::ToolStarted { call, view, .. } => {
                self.close_reasoning();
                if let Some(mut open) = self.tools.remove(&call.id) {
                    open.started = Some(Instant::now());
                    open.written = false;
                    self.refresh(&mut open, &view);
                    self.tools.insert(call.id, open);
                    return;
                }
                let item = self.tool_item(&call, &view);
                self.started(item.clone());
                let asked = self.asked.remove(&call.id);
                self.tools.insert(
                    call.id,
                    OpenTool {
                        item,
                        started_at_ms: now_ms(),
                        started: Some(Instant::now()),
                        asked,
                        written: false,
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
                let notification = self.delta(&id, &chunk);
                self.notify(ServerNotification::CommandExecutionOutputDelta(notification));
            }
            AgentEventKind::ToolFinished { call_id, call, view, result, .. } => {
                // A call refused before it was announced (unknown tool, bad arguments, a policy
                // deny) gets its item now: started and completed at once, a deny `declined`.
                let mut open = match self.tools.remove(&call_id) {
                    Some(open) => open,
                    None => {
                        self.close_reasoning();
                        let item = self.tool_item(&call, &view);
                        self.started(item.clone());
                        let denied = matches!(result, Err(ToolError::PermissionDenied { .. }));
                        OpenTool {
                            item,
                            started_at_ms: now_ms(),
                            started: None,
                            asked: self.asked.remove(&call_id) || denied,
                            written: false,
                        }
                    }
                };
                // The completed item carries the files of the whole call.
                if let ThreadItem::FileChange { changes, .. } = &mut open.item {
                    *changes = file_changes(&view);
                }
                self.completed(finish(open, &result));
            }
            // The message completes when it is whole, before the step's calls, as in codex.
            AgentEventKind::AgentMessage { text, .. } => {
                self.close_reasoning();
                self.close_message(text);
            }
            AgentEventKind::StepFinished { usage, .. } => {
                self.close_reasoning();
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
                // The attempt's text is void: the message stays open for the step's text, which
                // `AgentMessage` brings. Calls the attempt was writing were never made.
                self.close_reasoning();
                if let Some(message) = &mut self.message {
                    message.streamed.clear();
                }
                self.close_written();
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
                self.close_stopped();
                let item = ThreadItem::ContextCompaction { id: self.item_id() };
                self.started(item.clone());
                self.completed(item);
                self.notify(ServerNotification::ThreadCompacted(CompactedNotification {
                    thread_id: self.thread_id.clone(),
                    turn_id: self.turn_id(),
                }));
            }
            AgentEventKind::TurnDone { outcome, .. } => {
                self.close_stopped();
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
            | AgentEventKind::Status(_)
            | AgentEventKind::Usage { .. }
            | AgentEventKind::ShutdownComplete
            | AgentEventKind::UserPrompt { .. } => {}
        }
    }

    /// A call the model is still writing. Codex shows a file change while it is written as a
    /// `fileChange` item started `inProgress` and then `item/fileChange/patchUpdated` with the
    /// item's files whole (codex's `item/fileChange/outputDelta` is a deprecated stream of
    /// `apply_patch`'s output that codex no longer sends, so clients do not expect it). Other
    /// calls have no such form in the protocol: their item starts when they run.
    fn progress(&mut self, call_id: ToolCallId, view: &CallView) {
        if view.kind != CallKind::Edit {
            return;
        }
        if let Some(mut open) = self.tools.remove(&call_id) {
            self.refresh(&mut open, view);
            self.tools.insert(call_id, open);
            return;
        }
        self.close_reasoning();
        let item = ThreadItem::FileChange {
            id: self.item_id(),
            changes: file_changes(view),
            status: ItemStatus::InProgress,
        };
        self.started(item.clone());
        self.tools.insert(
            call_id,
            OpenTool { item, started_at_ms: now_ms(), started: None, asked: false, written: true },
        );
    }

    /// An open file change with the files `view` has: the client is sent them when they differ
    /// from what it has.
    fn refresh(&mut self, open: &mut OpenTool, view: &CallView) {
        let ThreadItem::FileChange { id, changes, .. } = &mut open.item else { return };
        let now = file_changes(view);
        if *changes == now {
            return;
        }
        changes.clone_from(&now);
        let notification = FileChangePatchUpdatedNotification {
            thread_id: self.thread_id.clone(),
            turn_id: self.turn_id(),
            item_id: id.clone(),
            changes: now,
        };
        self.notify(ServerNotification::FileChangePatchUpdated(notification));
    }

    /// Completes, as failed, the items of calls the model was writing in a void attempt.
    fn close_written(&mut self) {
        let written: Vec<ToolCallId> =
            self.tools.iter().filter(|(_, open)| open.written).map(|(id, _)| id.clone()).collect();
        for call_id in written {
            if let Some(open) = self.tools.remove(&call_id) {
                self.completed(finish(open, &Err(ToolError::Cancelled)));
            }
        }
    }

    /// Hands an approval request to the dispatcher, on the item of its call (opened now when
    /// the call has none yet). A subagent's call has no item: the request names the call.
    fn approval(&mut self, request: codecoder_protocol::ApprovalRequest, root: bool) {
        self.close_reasoning();
        let (item_id, started_at_ms) = match self.tools.remove(&request.call.id) {
            Some(mut open) => {
                open.asked = true;
                open.written = false;
                // Asked again after it ran (the sandbox blocked it; approved, it runs outside):
                // the blocked attempt's output is not the command's, the next run's is.
                if let ThreadItem::CommandExecution { aggregated_output, .. } = &mut open.item {
                    *aggregated_output = None;
                }
                self.refresh(&mut open, &request.view);
                let ids = (open.item.id().to_owned(), open.started_at_ms);
                self.tools.insert(request.call.id.clone(), open);
                ids
            }
            None if root => {
                let item = self.tool_item(&request.call, &request.view);
                let id = item.id().to_owned();
                self.started(item.clone());
                let started_at_ms = now_ms();
                self.tools.insert(
                    request.call.id.clone(),
                    OpenTool { item, started_at_ms, started: None, asked: true, written: false },
                );
                (id, started_at_ms)
            }
            None => (request.call.id.to_string(), now_ms()),
        };
        let thread_id = self.thread_id.clone();
        let turn_id = self.turn_id();
        let reason = request.reason.clone().or_else(|| Some(request.summary.clone()));
        let server_request = match shape(&request.view) {
            Shape::Command(command) => ServerRequest::CommandExecutionRequestApproval(
                CommandExecutionRequestApprovalParams {
                    thread_id: thread_id.clone(),
                    turn_id,
                    item_id,
                    started_at_ms,
                    reason,
                    command: Some(command),
                    cwd: Some(self.cwd.clone()),
                },
            ),
            Shape::FileChange => {
                ServerRequest::FileChangeRequestApproval(FileChangeRequestApprovalParams {
                    thread_id: thread_id.clone(),
                    turn_id,
                    item_id,
                    started_at_ms,
                    reason,
                })
            }
            Shape::Dynamic => {
                ServerRequest::ToolCallRequestApproval(ToolCallRequestApprovalParams {
                    thread_id: thread_id.clone(),
                    turn_id,
                    item_id,
                    started_at_ms,
                    tool: request.call.name.clone(),
                    arguments: request.call.args.clone(),
                    reason,
                })
            }
        };
        self.out.push(Output::Internal(Internal::Approval {
            thread_id,
            request: server_request,
            reply: request.reply,
        }));
    }

    /// Hands the model's question to the dispatcher as `item/tool/requestUserInput` (which asks
    /// only a client that takes questions), on the item of the call that asks.
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
        self.out.push(Output::Internal(Internal::Question {
            thread_id: self.thread_id.clone(),
            request: ServerRequest::ToolRequestUserInput(params),
            question_id,
            reply,
        }));
    }

    fn warning(&mut self, message: String) {
        self.notify(ServerNotification::Warning(WarningNotification {
            thread_id: Some(self.thread_id.clone()),
            message,
        }));
    }

    /// Closes what is open and reports the end of the turn to the dispatcher.
    pub(crate) fn end_turn(&mut self, status: TurnStatus, error: Option<String>) {
        self.close_stopped();
        let open: Vec<OpenTool> = self.tools.drain().map(|(_, open)| open).collect();
        for open in open {
            self.completed(finish(open, &Err(ToolError::Cancelled)));
        }
        self.asked.clear();
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
        self.out.push(Output::Internal(Internal::TurnEnded {
            thread_id: self.thread_id.clone(),
            turn,
        }));
    }

    /// The item a tool call becomes, in progress.
    fn tool_item(&mut self, call: &ToolCall, view: &CallView) -> ThreadItem {
        let id = self.item_id();
        match shape(view) {
            Shape::Command(command) => ThreadItem::CommandExecution {
                id,
                command,
                cwd: self.cwd.clone(),
                status: ItemStatus::InProgress,
                command_actions: Vec::new(),
                aggregated_output: None,
                exit_code: None,
                duration_ms: None,
            },
            Shape::FileChange => ThreadItem::FileChange {
                id,
                changes: file_changes(view),
                status: ItemStatus::InProgress,
            },
            Shape::Dynamic => ThreadItem::DynamicToolCall {
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

/// What item a call is, by its view.
enum Shape {
    /// Runs this command line.
    Command(String),
    /// Changes files.
    FileChange,
    /// Anything else: the protocol's generic tool call.
    Dynamic,
}

fn shape(view: &CallView) -> Shape {
    match (&view.kind, &view.command) {
        (CallKind::Execute, Some(command)) => Shape::Command(command.clone()),
        (CallKind::Edit, _) => Shape::FileChange,
        _ => Shape::Dynamic,
    }
}

/// The files a call changes, as its view has them.
fn file_changes(view: &CallView) -> Vec<FileUpdateChange> {
    view.changes
        .iter()
        .map(|change| FileUpdateChange {
            path: change.path.clone(),
            kind: match &change.kind {
                ChangeKind::Add => PatchChangeKind::Add,
                ChangeKind::Delete => PatchChangeKind::Delete,
                ChangeKind::Update { move_to } => {
                    PatchChangeKind::Update { move_path: move_to.clone() }
                }
            },
            diff: change.diff.clone(),
        })
        .collect()
}

pub(crate) fn turn(id: String, status: TurnStatus, error: Option<TurnError>) -> Turn {
    Turn { id, items: Vec::new(), status, error }
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

/// An open tool item, completed with its call's result.
fn finish(open: OpenTool, result: &Result<ToolResult, ToolError>) -> ThreadItem {
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

#[cfg(test)]
mod tests;
