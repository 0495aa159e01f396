//! The TUI's state and how agent events and key presses change it. No terminal, no IO beyond
//! sending `AgentCommand`s and answering requests through their one-shot replies: the run loop
//! performs the `Effect`s this module asks for.
//!
//! Invariants:
//! - Every `ApprovalRequest` and `AskUserRequest` received is answered exactly once, or dropped
//!   (= cancelled) when its turn ends; none is lost while the UI lives.
//! - Finished transcript cells go to `take_history` in order, exactly once; the live part (the
//!   uncommitted tail of the answer, running tools, pending requests) is everything else.
//! - The live answer tail is bounded: text is committed at Markdown block boundaries, and only
//!   the last `LIVE_TAIL_BYTES` of an unbroken block are drawn each frame.
//! - A step's text shows once: as it streamed, or, when none streamed, as its `StepFinished`
//!   carries it. A call still being written (`CallProgress`) is live only until its card starts
//!   or it ends.
//! - A resumed session's past goes through `on_agent_event` like live events (`replay`).

mod keys;
mod plan;

use std::collections::VecDeque;
use std::time::Instant;

use codecoder_app::history::{HistoryEvent, Replayed};
use codecoder_protocol::{
    AgentCommand, AgentEvent, AgentEventKind, AgentStatus, ApprovalRequest, AskUserRequest,
    ContentItem, ToolError, ToolResultStatus, TurnOutcome, Usage, UserInput,
};
use crossbeam_channel::Sender;
use ratatui::text::Line;

use crate::cells::{Cell, ChildTool, NoteKind, ToolCard, WritingCall, call_label, truncate};
use crate::complete::FileIndex;
use crate::input::Editor;
use crate::markdown::{self, Code, StreamSplitter};
use crate::pager::{PagedOutput, Pager};
use crate::{SessionChoice, SessionInfo, SessionSummary, StartRequest};

pub(crate) use plan::{is_plan_review, mode_badge};

/// How much of an unbroken Markdown block the live area re-renders per frame.
const LIVE_TAIL_BYTES: usize = 4096;

/// The slash commands, with their help text.
pub(crate) const COMMANDS: [(&str, &str); 18] = [
    ("/help", "show keys and commands"),
    ("/model", "show the model, or `/model NAME [EFFORT]` to switch (resumes this session)"),
    ("/provider", "show the provider, or `/provider ID` to switch"),
    ("/approvals", "show or change the approval mode (`/approvals never`)"),
    ("/status", "session id, model, tokens, context used, cost"),
    ("/diff", "git diff of the workspace"),
    ("/hooks", "list every hook with its source and state (`/hooks trust`: approve the project's)"),
    ("/init", "write a starter AGENTS.md for this repository"),
    ("/new", "start a new session"),
    ("/resume", "pick a session to resume (or `/resume ID`)"),
    ("/fork", "branch this session into a new one"),
    ("/undo", "restore the files the last turn changed (`/undo force`: even if changed since)"),
    ("/rewind", "go back to before an earlier prompt: files, conversation or both"),
    ("/compact", "summarise the conversation to free context (`/compact FOCUS` to steer it)"),
    ("/ps", "list the model's running command sessions (exec_command)"),
    ("/stop", "end a command session and everything it started (`/stop N`)"),
    ("/quit", "leave (also Ctrl+C twice on empty input, or Ctrl+D)"),
    ("/exit", "leave"),
];

/// Something the run loop must do for the app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Shut the agent down and leave.
    Quit,
    /// Replace the running agent.
    Start(StartRequest),
    /// Switch the approval mode (`/approvals MODE`).
    SetApprovalMode(String),
    /// List sessions for the `/resume` picker.
    ListSessions,
    /// Show `git diff`.
    Diff,
    /// List the hooks (`/hooks`), approving the project's pending ones first (`/hooks trust`).
    Hooks {
        /// Approve the pending project hooks before listing.
        approve: bool,
    },
    /// Write a starter AGENTS.md.
    Init,
    /// Shift+Tab: the next permission mode (default → acceptEdits → plan).
    CyclePermissionMode,
    /// Restore files and/or rewind the conversation (`/undo`, `/rewind N`).
    Rewind(codecoder_app::RewindRequest),
    /// List the turns `/rewind` can go back to.
    RewindList,
}

/// A list to pick from (the `/resume` picker).
#[derive(Debug, Clone)]
pub(crate) struct Picker {
    pub(crate) items: Vec<SessionSummary>,
    pub(crate) selected: usize,
}

/// A completion menu.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Completion {
    /// (text inserted, description).
    pub(crate) items: Vec<(String, String)>,
    pub(crate) selected: usize,
}

/// Where typed keys go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InputMode {
    /// The prompt editor (or answering a question the agent asks).
    Normal,
    /// Writing the feedback of "deny with feedback".
    Feedback,
    /// Editing a presented plan; Enter approves the edited text.
    PlanEdit,
}

/// The whole UI state.
pub(crate) struct App {
    pub(crate) info: SessionInfo,
    pub(crate) approval_mode: String,
    /// The permission mode (`default`, `acceptEdits`, `plan`), as the host reports it.
    pub(crate) permission_mode: String,
    cmd: Sender<AgentCommand>,
    history: Vec<Cell>,
    stream: String,
    committed: usize,
    splitter: StreamSplitter,
    reasoning: String,
    pub(crate) show_reasoning: bool,
    pub(crate) tools: Vec<ToolCard>,
    /// Calls the model is still writing (`CallProgress`), until their card starts.
    pub(crate) writing: Vec<WritingCall>,
    /// Whether the running step has streamed any answer text: a step that has not shows the
    /// text its `StepFinished` carries.
    step_streamed: bool,
    pub(crate) approvals: VecDeque<ApprovalRequest>,
    pub(crate) asks: VecDeque<AskUserRequest>,
    pub(crate) mode: InputMode,
    pub(crate) editor: Editor,
    pub(crate) status: AgentStatus,
    pub(crate) turn_running: bool,
    pub(crate) turn_started: Option<Instant>,
    /// Tokens of finished turns.
    pub(crate) session_usage: Usage,
    /// Tokens of the running turn so far.
    pub(crate) turn_usage: Usage,
    /// The last request's input + output tokens: how full the context is.
    pub(crate) context_tokens: u64,
    pub(crate) quit_armed: bool,
    pub(crate) completion: Option<Completion>,
    pub(crate) picker: Option<Picker>,
    /// The output pager (Ctrl+O), when open.
    pub(crate) pager: Option<Pager>,
    /// The last finished tool's output (bounded), which Ctrl+O pages.
    pub(crate) last_output: Option<PagedOutput>,
    pub(crate) skills: Vec<String>,
    /// Custom command names (without `/`), sent as prompts.
    pub(crate) commands: Vec<String>,
    /// Workspace files for `@` completion, listed in the background (from the run loop's
    /// start, or the first `@` when nothing started it).
    pub(crate) files: FileIndex,
    /// A rewind waiting for the person's yes to overwrite files changed outside codecoder.
    pub(crate) pending_rewind: Option<codecoder_app::RewindRequest>,
    effects: Vec<Effect>,
    /// Set whenever something visible changed.
    pub(crate) dirty: bool,
}

impl App {
    /// A fresh state for a session.
    pub(crate) fn new(info: SessionInfo, approval_mode: String, cmd: Sender<AgentCommand>) -> Self {
        Self {
            info,
            approval_mode,
            permission_mode: "default".to_owned(),
            cmd,
            history: Vec::new(),
            stream: String::new(),
            committed: 0,
            splitter: StreamSplitter::default(),
            reasoning: String::new(),
            show_reasoning: false,
            tools: Vec::new(),
            writing: Vec::new(),
            step_streamed: false,
            approvals: VecDeque::new(),
            asks: VecDeque::new(),
            mode: InputMode::Normal,
            editor: Editor::default(),
            status: AgentStatus::Idle,
            turn_running: false,
            turn_started: None,
            session_usage: Usage::default(),
            turn_usage: Usage::default(),
            context_tokens: 0,
            quit_armed: false,
            completion: None,
            picker: None,
            pager: None,
            last_output: None,
            skills: Vec::new(),
            commands: Vec::new(),
            files: FileIndex::none(),
            pending_rewind: None,
            effects: Vec::new(),
            dirty: true,
        }
    }

    /// Switches to a new agent (after `/new`, `/resume`, …), keeping the editor and history.
    /// The token counts go on (the same conversation continues) until `replay` shows another
    /// session's past.
    pub(crate) fn switch_session(&mut self, info: SessionInfo, cmd: Sender<AgentCommand>) {
        self.flush_live();
        if info.cwd != self.info.cwd && self.files.is_live() {
            self.files = FileIndex::spawn(info.cwd.clone());
        }
        self.info = info;
        self.cmd = cmd;
        self.approvals.clear();
        self.asks.clear();
        self.turn_running = false;
        self.turn_started = None;
        self.status = AgentStatus::Idle;
        self.turn_usage = Usage::default();
        self.dirty = true;
    }

    /// Finished cells, in order, each returned once.
    pub(crate) fn take_history(&mut self) -> Vec<Cell> {
        std::mem::take(&mut self.history)
    }

    /// Effects to perform, in order, each returned once.
    /// Opens the `/resume` picker, as if the person had typed `/resume`.
    pub(crate) fn open_resume_picker(&mut self) {
        self.effects.push(Effect::ListSessions);
    }

    pub(crate) fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// Adds a finished cell.
    pub(crate) fn push(&mut self, cell: Cell) {
        self.history.push(cell);
        self.dirty = true;
    }

    /// Adds a note.
    pub(crate) fn note(&mut self, kind: NoteKind, text: impl Into<String>) {
        self.push(Cell::Note { text: text.into(), kind });
    }

    /// Shows a session's past (empty for a new session) as its live run showed it: the
    /// runtime's replay of its log goes through `on_agent_event` like live events, and the
    /// person's messages become their cells as when they were sent. The token counts start
    /// from the replay's.
    pub(crate) fn replay(&mut self, history: Vec<Replayed>) {
        self.session_usage = Usage::default();
        self.context_tokens = 0;
        for replayed in history {
            match replayed.event {
                HistoryEvent::Agent(kind) => {
                    self.on_agent_event(AgentEvent { source: replayed.source, kind });
                }
                HistoryEvent::User(input) => {
                    let text = input_text(&input);
                    if !text.trim().is_empty() {
                        self.push(Cell::User { text, queued: false });
                    }
                }
                // A decision shows in its call's result; a rewind's turns are left out of the
                // replay; the log's own records are not part of the conversation.
                HistoryEvent::Approval(_) | HistoryEvent::Rewind(_) | HistoryEvent::Log(_) => {}
            }
        }
        // A log that ends inside a turn (the process died) leaves its calls without results and
        // nothing running here.
        self.end_open_cards("no result (interrupted)");
        self.flush_live();
        self.turn_running = false;
        self.turn_started = None;
        self.turn_usage = Usage::default();
        self.status = AgentStatus::Idle;
    }

    /// Whether the agent is busy (drives the spinner).
    pub(crate) fn busy(&self) -> bool {
        self.turn_running
    }

    /// The live answer tail: the uncommitted Markdown, rendered plain, bounded.
    pub(crate) fn live_answer(&self) -> Vec<Line<'static>> {
        let tail = self.stream.get(self.committed..).unwrap_or_default();
        if tail.is_empty() {
            return Vec::new();
        }
        let mut start = tail.len().saturating_sub(LIVE_TAIL_BYTES);
        while !tail.is_char_boundary(start) {
            start += 1;
        }
        markdown::render(tail.get(start..).unwrap_or_default(), Code::Plain)
    }

    /// The live reasoning tail.
    pub(crate) fn live_reasoning(&self) -> &str {
        &self.reasoning
    }

    /// Commits the streamed text up to the last safe Markdown boundary.
    fn commit_stream(&mut self, all: bool) {
        let end = if all { self.stream.len() } else { self.splitter.advance(&self.stream) };
        if end > self.committed {
            let chunk = self.stream.get(self.committed..end).unwrap_or_default();
            if !chunk.trim().is_empty() {
                let lines = markdown::render(chunk, Code::Highlighted);
                self.history.push(Cell::Assistant { lines });
            }
            self.committed = end;
        }
        if all {
            self.stream.clear();
            self.committed = 0;
            self.splitter = StreamSplitter::default();
        }
    }

    fn flush_reasoning(&mut self) {
        if !self.reasoning.trim().is_empty() {
            let text = std::mem::take(&mut self.reasoning);
            self.history.push(Cell::Reasoning { text, expanded: self.show_reasoning });
        }
        self.reasoning.clear();
    }

    /// Ends the cards of calls still running, failed with `why`, into the history.
    fn end_open_cards(&mut self, why: &str) {
        let now = Instant::now();
        for mut card in std::mem::take(&mut self.tools) {
            card.finish(Err(why.to_owned()), now);
            self.history.push(Cell::Tool(card));
        }
    }

    /// Moves everything live into the history (turn end, switching sessions, exit).
    pub(crate) fn flush_live(&mut self) {
        self.flush_reasoning();
        self.commit_stream(true);
        self.end_open_cards("cancelled");
        // A call still being written never ran: its card, if any, comes with its end.
        self.writing.clear();
        self.step_streamed = false;
        self.dirty = true;
    }

    /// Applies one agent event.
    pub(crate) fn on_agent_event(&mut self, event: AgentEvent) {
        self.dirty = true;
        let AgentEvent { source, kind } = event;
        if let Some(root_call) = source.subagent_path.first() {
            self.on_subagent_event(&root_call.to_string(), kind);
            return;
        }
        match kind {
            AgentEventKind::TurnStarted { .. } => {
                self.turn_running = true;
                self.turn_started = Some(Instant::now());
                self.turn_usage = Usage::default();
            }
            AgentEventKind::StepStarted { .. } => self.step_streamed = false,
            // The text streamed; `StepFinished` shows a step's text that did not.
            AgentEventKind::AgentMessage { .. } => {}
            AgentEventKind::ShutdownComplete => {}
            // Another client's prompt to a shared session: shown as the person's own would be.
            AgentEventKind::UserPrompt { input, .. } => {
                let text = input_text(&input);
                if !text.trim().is_empty() {
                    self.flush_live();
                    self.push(Cell::User { text, queued: false });
                }
            }
            AgentEventKind::CallProgress { call_id, name, view, .. } => {
                match self.writing.iter_mut().find(|writing| writing.id == call_id) {
                    Some(writing) => writing.view = view,
                    None => self.writing.push(WritingCall { id: call_id, name, view }),
                }
            }
            AgentEventKind::TextDelta { delta, .. } => {
                if !self.reasoning.is_empty() {
                    self.flush_reasoning();
                }
                self.step_streamed = true;
                self.stream.push_str(&delta);
                self.commit_stream(false);
            }
            AgentEventKind::ReasoningDelta { delta, .. } => self.reasoning.push_str(&delta),
            AgentEventKind::ToolStarted { call, view, .. } => {
                self.flush_reasoning();
                self.commit_stream(true);
                self.writing.retain(|writing| writing.id != call.id);
                // A call runs once its approval was answered, here or by another client of a
                // hosted session: a prompt still showing for it is taken down.
                self.approvals.retain(|request| request.call.id != call.id);
                self.tools.push(ToolCard::new(call.id, call.name, view, Instant::now()));
            }
            AgentEventKind::ToolOutputDelta { call_id, chunk, .. } => {
                if let Some(card) = self.tools.iter_mut().find(|c| c.id == call_id) {
                    card.push_output(&chunk);
                }
            }
            AgentEventKind::ToolFinished { call_id, result, .. } => {
                self.writing.retain(|writing| writing.id != call_id);
                // Answered elsewhere (denied, or the question answered): the prompt goes.
                self.approvals.retain(|request| request.call.id != call_id);
                self.asks.retain(|request| request.call_id != call_id);
                let Some(index) = self.tools.iter().position(|c| c.id == call_id) else {
                    // A call refused before it started (a rule, the mode, a hook) has no card:
                    // say what stopped it.
                    let by_person = matches!(&result, Err(ToolError::PermissionDenied { reason })
                        if reason.starts_with("the user denied"));
                    if let Err(err) = &result
                        && !matches!(err, ToolError::Cancelled)
                        && !by_person
                    {
                        self.note(NoteKind::Warning, format!("✗ not run: {err}"));
                    }
                    return;
                };
                let mut card = self.tools.remove(index);
                card.finish(result.as_ref().map_err(ToString::to_string), Instant::now());
                if let Some(output) = card.take_output() {
                    self.last_output = Some(output);
                }
                self.history.push(Cell::Tool(card));
            }
            AgentEventKind::StepRetried { reason, .. } => {
                // What the broken stream showed is void: its uncommitted tail and the calls it
                // was writing go; the step's text comes again, or with `StepFinished`.
                self.reasoning.clear();
                self.writing.clear();
                self.step_streamed = false;
                let tail_start = self.committed;
                self.stream.truncate(tail_start);
                self.note(
                    NoteKind::Warning,
                    format!("the model stream broke; retrying ({reason})"),
                );
            }
            AgentEventKind::StepFinished { usage, text, .. } => {
                self.context_tokens = usage.input_tokens + usage.output_tokens;
                // The step's text is final: what streamed is shown whole, and a step whose text
                // did not stream (a replayed one) shows the text as logged.
                if self.step_streamed {
                    self.commit_stream(true);
                } else if !text.trim().is_empty() {
                    self.flush_reasoning();
                    self.commit_stream(true);
                    self.history.push(Cell::Assistant {
                        lines: markdown::render(&text, Code::Highlighted),
                    });
                }
                self.step_streamed = false;
            }
            AgentEventKind::Compacted { tokens_after, message, .. } => {
                self.context_tokens = tokens_after;
                self.note(NoteKind::Info, format!("⟳ {message}"));
            }
            AgentEventKind::Status(status) => self.status = status,
            AgentEventKind::ApprovalRequest(request) => {
                // The call is whole once it is asked about: the approval shows it.
                self.writing.retain(|writing| writing.id != request.call.id);
                self.approvals.push_back(request);
            }
            AgentEventKind::AskUser(request) => self.asks.push_back(request),
            AgentEventKind::Usage { turn_total, .. } => self.turn_usage = turn_total,
            AgentEventKind::Warning { message } => self.note(NoteKind::Warning, message),
            AgentEventKind::HookMessage { event, message } => {
                self.note(NoteKind::Hook, format!("{event} hook: {message}"));
            }
            AgentEventKind::TurnDone { outcome, usage, .. } => {
                self.flush_live();
                // The turn may have added or removed files: list them again for `@`.
                self.files.refresh();
                self.session_usage += usage;
                self.turn_usage = Usage::default();
                self.turn_running = false;
                self.turn_started = None;
                self.status = AgentStatus::Idle;
                // Requests still open belong to the ended turn: dropping them answers "cancelled".
                self.approvals.clear();
                self.asks.clear();
                if self.mode == InputMode::Feedback {
                    self.mode = InputMode::Normal;
                    self.editor.clear();
                }
                match outcome {
                    TurnOutcome::Completed => {}
                    TurnOutcome::Cancelled => self.note(NoteKind::Warning, "■ turn cancelled"),
                    TurnOutcome::Interrupted => self.note(NoteKind::Warning, "■ turn interrupted"),
                    TurnOutcome::Failed { message } => {
                        self.note(NoteKind::Error, format!("■ the turn failed: {message}"));
                    }
                }
            }
        }
    }

    fn on_subagent_event(&mut self, root_call: &str, kind: AgentEventKind) {
        match kind {
            AgentEventKind::ApprovalRequest(request) => self.approvals.push_back(request),
            AgentEventKind::AskUser(request) => self.asks.push_back(request),
            AgentEventKind::ToolStarted { call, view, .. } => {
                if let Some(card) = self.tools.iter_mut().find(|c| c.id.to_string() == root_call) {
                    card.children.push(ChildTool {
                        id: call.id.to_string(),
                        title: truncate(&call_label(&call.name, &view), 120),
                        ok: None,
                    });
                }
            }
            AgentEventKind::ToolFinished { call_id, result, .. } => {
                let id = call_id.to_string();
                let ok = matches!(&result, Ok(r) if r.status == ToolResultStatus::Success);
                for card in &mut self.tools {
                    if let Some(child) = card.children.iter_mut().find(|c| c.id == id) {
                        child.ok = Some(ok);
                    }
                }
            }
            _ => {}
        }
    }

    fn send(&mut self, command: AgentCommand) {
        if self.cmd.send(command).is_err() {
            self.note(NoteKind::Error, "the agent has stopped; /new starts another");
        }
    }

    /// Sends the editor's text: a prompt, a steering message, or a slash command.
    fn submit(&mut self) {
        let text = self.editor.take();
        self.send_text(text);
    }

    /// Sends `text` as if typed and entered: a prompt, a steering message or a slash command.
    pub(crate) fn send_text(&mut self, text: String) {
        self.dirty = true;
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return;
        }
        let custom = trimmed
            .strip_prefix('/')
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|name| {
                // The UI's own commands win over a custom one of the same name.
                !COMMANDS.iter().any(|(builtin, _)| builtin.strip_prefix('/') == Some(name))
                    && self.commands.iter().any(|command| command == name)
            });
        if trimmed.starts_with('/') && !trimmed.starts_with("//") && !custom {
            self.slash(trimmed);
            return;
        }
        if self.turn_running {
            self.push(Cell::User { text: text.clone(), queued: true });
            self.send(AgentCommand::Steer(UserInput::text(text)));
        } else {
            self.push(Cell::User { text: text.clone(), queued: false });
            self.send(AgentCommand::Submit(UserInput::text(text)));
        }
    }

    /// Runs a slash command.
    pub(crate) fn slash(&mut self, line: &str) {
        let (name, arg) = match line.split_once(char::is_whitespace) {
            Some((name, arg)) => (name, arg.trim()),
            None => (line, ""),
        };
        match name {
            "/help" => {
                let mut text = String::from(
                    "Keys: Enter send · Ctrl+J or Shift+Enter newline · Up/Down history · Tab complete\n\
                     Ctrl+O pages the last tool's whole output (↑↓ PgUp PgDn Home End, Esc closes)\n\
                     Esc or Ctrl+C cancel the running turn · Ctrl+C twice on empty input quits · Ctrl+T reasoning\n\
                     Approvals: y allow once · a allow for session · n deny · f deny with feedback\n\
                     Shift+Tab cycles default → accept edits → plan mode · a plan: 1 approve · 2 or feedback sends it back · Ctrl+G edit\n\
                     @path completes a file · $skill a skill · typing while a turn runs queues a steering message\n",
                );
                for (command, help) in COMMANDS {
                    text.push_str(&format!("{command:<11} {help}\n"));
                }
                self.note(NoteKind::Info, text.trim_end().to_owned());
            }
            "/model" if arg.is_empty() => {
                let text = format!(
                    "model: {} (switch with `/model NAME [EFFORT]` or `/model EFFORT`, EFFORT one of none, minimal, low, medium, high, xhigh; or start with --model)",
                    self.info.model
                );
                self.note(NoteKind::Info, text);
            }
            "/model" => self.switch_model(arg),
            "/provider" if arg.is_empty() => {
                let text = format!(
                    "provider: {} (switch with `/provider ID`, or start with --provider)",
                    self.info.provider
                );
                self.note(NoteKind::Info, text);
            }
            "/provider" => self.restart_current(None, Some(arg.to_owned())),
            "/approvals" if arg.is_empty() => {
                let text = format!(
                    "approval mode: {}\n/approvals untrusted — ask for everything but known read-only commands\n/approvals on-request — ask for what is destructive, leaves the sandbox or reaches the network\n/approvals never — never ask; what needs a person is refused and the model is told why\n(the sandbox is chosen at start: -s/--sandbox)",
                    self.approval_mode
                );
                self.note(NoteKind::Info, text);
            }
            "/approvals" => self.effects.push(Effect::SetApprovalMode(arg.to_owned())),
            "/status" => {
                let text = self.status_report();
                self.note(NoteKind::Info, text);
            }
            "/diff" => self.effects.push(Effect::Diff),
            "/hooks" => self.effects.push(Effect::Hooks { approve: arg == "trust" }),
            "/init" => self.effects.push(Effect::Init),
            "/new" => self.start(StartRequest {
                session: SessionChoice::New,
                model: None,
                provider: None,
                reasoning_effort: None,
            }),
            "/resume" if arg.is_empty() => self.effects.push(Effect::ListSessions),
            "/resume" => self.start(StartRequest {
                session: SessionChoice::Resume(arg.to_owned()),
                model: None,
                provider: None,
                reasoning_effort: None,
            }),
            "/fork" => {
                let id = self.info.session_id.to_string();
                self.start(StartRequest {
                    session: SessionChoice::Fork(id),
                    model: None,
                    provider: None,
                    reasoning_effort: None,
                });
            }
            "/compact" => {
                let focus = (!arg.is_empty()).then(|| arg.to_owned());
                if self.turn_running {
                    self.note(NoteKind::Info, "the conversation will be compacted after this step");
                }
                self.send(AgentCommand::Compact { focus });
            }
            "/ps" => {
                let text = process_list(&codecoder_app::live_sessions());
                self.note(NoteKind::Info, text);
            }
            "/stop" => match arg.parse::<u64>() {
                Ok(id) if codecoder_app::stop_session(id) => {
                    self.note(NoteKind::Info, format!("command session {id} ended"));
                }
                Ok(id) => self.note(
                    NoteKind::Warning,
                    format!("there is no running command session {id} (see /ps)"),
                ),
                Err(_) => self.note(NoteKind::Warning, "usage: /stop N (N from /ps)"),
            },
            "/undo" => crate::rewind::slash_undo(self, arg),
            "/rewind" => crate::rewind::slash_rewind(self, arg),
            "/quit" | "/exit" => self.effects.push(Effect::Quit),
            other => self.note(NoteKind::Warning, format!("unknown command {other} (try /help)")),
        }
    }

    /// Queues an effect for the run loop.
    pub(crate) fn push_effect(&mut self, effect: Effect) {
        self.effects.push(effect);
    }

    /// Sends a command to the agent.
    pub(crate) fn send_command(&mut self, command: AgentCommand) {
        self.send(command);
    }

    fn start(&mut self, request: StartRequest) {
        if self.turn_running {
            self.note(NoteKind::Warning, "a turn is running: cancel it (Esc) first");
            return;
        }
        self.effects.push(Effect::Start(request));
    }

    fn restart_current(&mut self, model: Option<String>, provider: Option<String>) {
        let id = self.info.session_id.to_string();
        self.start(StartRequest {
            session: SessionChoice::Resume(id),
            model,
            provider,
            reasoning_effort: None,
        });
    }

    /// `/model NAME`, `/model NAME EFFORT` or `/model EFFORT`: resumes this session with
    /// another model and/or reasoning effort.
    fn switch_model(&mut self, arg: &str) {
        let is_effort = |word: &str| word.parse::<codecoder_protocol::ReasoningEffort>().is_ok();
        let words: Vec<&str> = arg.split_whitespace().collect();
        let (model, effort) = match words.as_slice() {
            [effort] if is_effort(effort) => (None, Some(*effort)),
            [model] => (Some(*model), None),
            [model, effort] if is_effort(effort) => (Some(*model), Some(*effort)),
            _ => {
                let text = format!(
                    "/model {arg}: expected `/model NAME`, `/model NAME EFFORT` or `/model EFFORT` (EFFORT: none, minimal, low, medium, high, xhigh)"
                );
                self.note(NoteKind::Error, text);
                return;
            }
        };
        let id = self.info.session_id.to_string();
        self.start(StartRequest {
            session: SessionChoice::Resume(id),
            model: model.map(str::to_owned),
            provider: None,
            reasoning_effort: effort.map(str::to_owned),
        });
    }

    /// The `/status` text.
    pub(crate) fn status_report(&self) -> String {
        let total = self.total_usage();
        format!(
            "session: {}\nmodel: {} ({})\napproval mode: {}\npermission mode: {}\ntokens: {} in ({} cached), {} out\ncontext: {} of {} tokens ({}%)\ncost: {}\ncwd: {}",
            self.info.session_id,
            self.info.model,
            self.info.provider,
            self.approval_mode,
            self.permission_mode,
            total.input_tokens,
            total.cached_input_tokens,
            total.output_tokens,
            self.context_tokens,
            self.info.context_window,
            self.context_percent(),
            self.cost().map_or_else(|| "unknown for this model".to_owned(), |c| format!("${c:.4}")),
            self.info.cwd.display(),
        )
    }

    /// Tokens so far, finished turns plus the running one.
    pub(crate) fn total_usage(&self) -> Usage {
        let mut total = self.session_usage;
        total += self.turn_usage;
        total
    }

    /// Context used, in percent of the window.
    pub(crate) fn context_percent(&self) -> u64 {
        (self.context_tokens * 100).checked_div(self.info.context_window).unwrap_or(0).min(100)
    }

    /// Dollars so far, when the model's prices are known.
    pub(crate) fn cost(&self) -> Option<f64> {
        self.info.pricing.cost(&self.total_usage())
    }
}

/// The text of a message the person sent, its parts on lines of their own.
fn input_text(input: &UserInput) -> String {
    let parts: Vec<&str> = input
        .content
        .iter()
        .filter_map(|item| match item {
            ContentItem::Text { text } => Some(text.as_str()),
            ContentItem::Image(_) | ContentItem::BlobRef(_) => None,
        })
        .collect();
    parts.join("\n")
}

/// `/ps`'s text: one line per running command session or background job (the same kind of
/// entry), or a line saying there is none.
pub(crate) fn process_list(sessions: &[codecoder_app::ExecSessionInfo]) -> String {
    if sessions.is_empty() {
        return "no command sessions are running".to_owned();
    }
    let mut lines = vec!["command sessions (end one with /stop N):".to_owned()];
    for session in sessions {
        let terminal = if session.tty { ", on a terminal" } else { "" };
        let job = session.job.map(|job| format!(", background job {job}")).unwrap_or_default();
        lines.push(format!(
            "  {}  `{}` (pid {}{terminal}{job}, {} s)",
            session.id,
            truncate(&session.command, 80),
            session.pid,
            session.seconds
        ));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests;
