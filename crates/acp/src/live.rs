//! The live translator: the root agent's events, as they come, to the `session/update`s an
//! editor shows — text and reasoning chunks, tool calls from their views (announced while the
//! model still writes them, updated as they run and when they end), plans — and the tool call
//! a permission request is about.
//!
//! Invariants:
//! - A call is read only through its `CallView`: the kind, title, locations, diffs and plan
//!   come from the view; the arguments are only forwarded, as `rawInput`.
//! - Each call is announced by one `tool_call` (pending when its progress or its permission
//!   request comes first, in progress when it starts); every later change of it is a
//!   `tool_call_update` of the same id.
//! - The text shown of a step is the text logged for it (`StepFinished`): what the deltas did
//!   not carry is sent then, so a step known only by its logged text is shown whole.
//! - A command (a call whose view has a command line) is shown as a terminal when the client
//!   advertised `clientCapabilities._meta.terminal_output` (Zed's extension, as codex-acp and
//!   claude-code-acp send it): the `tool_call` carries `{"type": "terminal", "terminalId": ID}`
//!   content and `_meta.terminal_info`, each output chunk goes out as `_meta.terminal_output`,
//!   and the end as `_meta.terminal_exit`, ID being the call's id. The command still runs in
//!   codecoder's sandbox: the client only displays the bytes (no `terminal/create`). Without
//!   the capability the output is a fenced text block, its tail resent at a pace.
//! - A session's history is shown by the same translator: `replay` feeds it the events of the
//!   runtime's replay of the log (`codecoder_app::history`), and the person's messages.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use agent_client_protocol::v1::schema as acp;
use codecoder_app::history::{HistoryEvent, Replayed};
use codecoder_protocol::{AgentEventKind, CallView, ToolCallId, ToolResultStatus};
use serde_json::Value;

use crate::translate;

/// How often a running command's output is sent again at most (each update carries it whole).
const OUTPUT_INTERVAL: Duration = Duration::from_millis(100);
/// The most output of a running command shown (its tail).
const OUTPUT_SHOWN: usize = 64 * 1024;

/// How a call was announced before it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Announced {
    /// By its progress while the model wrote it: the view shown is partial.
    Progress,
    /// By a permission request, which showed its whole view.
    Approval,
}

/// A call that started, as it is shown.
struct Shown {
    view: CallView,
    output: String,
    sent_at: Option<Instant>,
    /// Shown as a client terminal fed through `_meta` (see the module's invariants).
    terminal: bool,
}

/// One session's translator of the root agent's events into updates.
pub(crate) struct Translator {
    cwd: PathBuf,
    /// The client displays terminals fed through `_meta.terminal_output`.
    terminal_output: bool,
    /// Calls announced before they started, until they finish.
    announced: HashMap<ToolCallId, Announced>,
    /// Calls that started, until they finish.
    shown: HashMap<ToolCallId, Shown>,
    /// Plan updates: shown as plans, not as tool calls.
    plans: HashSet<ToolCallId>,
    /// The current step's text as its deltas carried it (since the step started or was
    /// retried).
    streamed: String,
}

fn message_chunk(text: impl Into<String>) -> acp::SessionUpdate {
    acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(acp::ContentBlock::Text(
        acp::TextContent::new(text),
    )))
}

fn thought_chunk(text: impl Into<String>) -> acp::SessionUpdate {
    acp::SessionUpdate::AgentThoughtChunk(acp::ContentChunk::new(acp::ContentBlock::Text(
        acp::TextContent::new(text),
    )))
}

/// `_meta` holding `value` under `key` (Zed's terminal extension: `terminal_info`,
/// `terminal_output`, `terminal_exit`).
fn terminal_meta(key: &str, value: Value) -> acp::Meta {
    let mut meta = acp::Meta::new();
    meta.insert(key.to_owned(), value);
    meta
}

fn call_update(id: &ToolCallId, fields: acp::ToolCallUpdateFields) -> acp::SessionUpdate {
    acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(id.to_string(), fields))
}

impl Translator {
    pub(crate) fn new(cwd: PathBuf) -> Self {
        Self {
            cwd,
            terminal_output: false,
            announced: HashMap::new(),
            shown: HashMap::new(),
            plans: HashSet::new(),
            streamed: String::new(),
        }
    }

    /// Shows commands as terminals fed through `_meta` (the client advertised
    /// `_meta.terminal_output`).
    pub(crate) fn terminal_output(self, on: bool) -> Self {
        Self { terminal_output: on, ..self }
    }

    /// The call as a new `tool_call` with `status`.
    fn tool_call(
        &self,
        id: &ToolCallId,
        view: &CallView,
        args: Option<&Value>,
        status: acp::ToolCallStatus,
    ) -> acp::ToolCall {
        acp::ToolCall::new(id.to_string(), view.title.clone())
            .kind(translate::tool_kind(view))
            .status(status)
            .locations(translate::locations(view, &self.cwd))
            .content(translate::call_content(view, &self.cwd))
            .raw_input(args.cloned())
    }

    /// The whole of what the view shows, as the fields of an update.
    fn view_fields(&self, view: &CallView, args: &Value) -> acp::ToolCallUpdateFields {
        acp::ToolCallUpdateFields::new()
            .title(view.title.clone())
            .kind(translate::tool_kind(view))
            .locations(translate::locations(view, &self.cwd))
            .content(translate::call_content(view, &self.cwd))
            .raw_input(args.clone())
    }

    /// The updates of one event of the root agent; `now` paces a running command's output.
    /// Permission requests and questions are answered by the bridge (see `approval`); the
    /// turn's end answers the prompt there.
    pub(crate) fn event(&mut self, kind: &AgentEventKind, now: Instant) -> Vec<acp::SessionUpdate> {
        match kind {
            AgentEventKind::StepStarted { .. } => {
                self.streamed.clear();
                Vec::new()
            }
            AgentEventKind::TextDelta { delta, .. } => {
                self.streamed.push_str(delta);
                vec![message_chunk(delta.clone())]
            }
            AgentEventKind::ReasoningDelta { delta, .. } => vec![thought_chunk(delta.clone())],
            AgentEventKind::StepRetried { reason, .. } => {
                // The text streamed so far is void: the step's text starts again.
                self.streamed.clear();
                vec![thought_chunk(format!("\n{reason}\n"))]
            }
            AgentEventKind::StepFinished { text, .. } => {
                // What the deltas did not carry; a text that does not go on from them (never
                // the case: it is their concatenation) is not sent twice.
                let streamed = std::mem::take(&mut self.streamed);
                let missing = text.strip_prefix(streamed.as_str()).unwrap_or_default();
                if missing.is_empty() { Vec::new() } else { vec![message_chunk(missing)] }
            }
            // The text streamed, and `StepFinished` fills in what the deltas did not carry.
            AgentEventKind::AgentMessage { .. } => Vec::new(),
            AgentEventKind::CallProgress { call_id, view, .. } => self.progress(call_id, view),
            AgentEventKind::ToolStarted { call, view, .. } => {
                self.started(&call.id, view, &call.args)
            }
            AgentEventKind::ToolOutputDelta { call_id, chunk, .. } => {
                self.output(call_id, chunk, now).into_iter().collect()
            }
            AgentEventKind::ToolFinished { call_id, result, .. } => {
                if self.plans.remove(call_id) {
                    return Vec::new();
                }
                self.announced.remove(call_id);
                let shown = self.shown.remove(call_id);
                let (status, text, ok) = match result {
                    Ok(result) => (
                        translate::result_status(result.status),
                        codecoder_app::result_text(result),
                        result.status == ToolResultStatus::Success,
                    ),
                    Err(err) => (acp::ToolCallStatus::Failed, err.to_string(), false),
                };
                let raw_output = serde_json::json!({ "text": text, "ok": ok });
                if shown.as_ref().is_some_and(|shown| shown.terminal) {
                    // The terminal keeps what it displayed; its end is what is added.
                    let exit = result.as_ref().ok().and_then(|result| result.exit.as_ref());
                    let end = serde_json::json!({
                        "terminal_id": call_id.to_string(),
                        "exit_code": exit.and_then(|exit| exit.code),
                        "signal": exit.and_then(|exit| exit.signal),
                    });
                    let fields =
                        acp::ToolCallUpdateFields::new().status(status).raw_output(raw_output);
                    let update = acp::ToolCallUpdate::new(call_id.to_string(), fields)
                        .meta(terminal_meta("terminal_exit", end));
                    return vec![acp::SessionUpdate::ToolCallUpdate(update)];
                }
                let view = shown.as_ref().map(|shown| &shown.view);
                let content = translate::result_content(view, &text, ok, &self.cwd);
                let fields = acp::ToolCallUpdateFields::new()
                    .status(status)
                    .content(content)
                    .raw_output(raw_output);
                vec![call_update(call_id, fields)]
            }
            AgentEventKind::Warning { message } | AgentEventKind::HookMessage { message, .. } => {
                vec![thought_chunk(format!("\n{message}\n"))]
            }
            AgentEventKind::TurnStarted { .. }
            | AgentEventKind::TurnDone { .. }
            | AgentEventKind::ApprovalRequest(_)
            | AgentEventKind::AskUser(_)
            | AgentEventKind::Compacted { .. }
            | AgentEventKind::Status(_)
            | AgentEventKind::Usage { .. }
            | AgentEventKind::ShutdownComplete
            | AgentEventKind::UserPrompt { .. } => Vec::new(),
        }
    }

    /// A call the model is still writing: announced as pending the first time, its view so
    /// far (title, locations, diffs) updated after that.
    fn progress(&mut self, id: &ToolCallId, view: &CallView) -> Vec<acp::SessionUpdate> {
        if translate::plan_update(view).is_some() || self.shown.contains_key(id) {
            return Vec::new();
        }
        if self.announced.contains_key(id) {
            let fields = acp::ToolCallUpdateFields::new()
                .title(view.title.clone())
                .locations(translate::locations(view, &self.cwd))
                .content(translate::call_content(view, &self.cwd));
            return vec![call_update(id, fields)];
        }
        self.announced.insert(id.clone(), Announced::Progress);
        vec![acp::SessionUpdate::ToolCall(self.tool_call(
            id,
            view,
            None,
            acp::ToolCallStatus::Pending,
        ))]
    }

    /// A call that starts: a plan update becomes the plan; any other call is shown running,
    /// whole (a call announced by its progress gets its whole view now).
    fn started(
        &mut self,
        id: &ToolCallId,
        view: &CallView,
        args: &Value,
    ) -> Vec<acp::SessionUpdate> {
        if let Some(plan) = translate::plan_update(view) {
            self.plans.insert(id.clone());
            return translate::plan(plan).map(acp::SessionUpdate::Plan).into_iter().collect();
        }
        let terminal = self.terminal_output && view.command.is_some();
        let update = if terminal {
            let content = vec![acp::ToolCallContent::Terminal(acp::Terminal::new(id.to_string()))];
            let info = serde_json::json!({ "terminal_id": id.to_string(), "cwd": self.cwd });
            let meta = terminal_meta("terminal_info", info);
            match self.announced.get(id).copied() {
                Some(Announced::Approval | Announced::Progress) => {
                    let fields = self
                        .view_fields(view, args)
                        .content(content)
                        .status(acp::ToolCallStatus::InProgress);
                    acp::SessionUpdate::ToolCallUpdate(
                        acp::ToolCallUpdate::new(id.to_string(), fields).meta(meta),
                    )
                }
                None => acp::SessionUpdate::ToolCall(
                    self.tool_call(id, view, Some(args), acp::ToolCallStatus::InProgress)
                        .content(content)
                        .meta(meta),
                ),
            }
        } else {
            match self.announced.get(id).copied() {
                Some(Announced::Approval) => call_update(
                    id,
                    acp::ToolCallUpdateFields::new().status(acp::ToolCallStatus::InProgress),
                ),
                Some(Announced::Progress) => call_update(
                    id,
                    self.view_fields(view, args).status(acp::ToolCallStatus::InProgress),
                ),
                None => acp::SessionUpdate::ToolCall(self.tool_call(
                    id,
                    view,
                    Some(args),
                    acp::ToolCallStatus::InProgress,
                )),
            }
        };
        let shown = Shown { view: view.clone(), output: String::new(), sent_at: None, terminal };
        self.shown.insert(id.clone(), shown);
        vec![update]
    }

    /// A running call's output: each chunk to a client terminal, or else its tail, at most
    /// every `OUTPUT_INTERVAL`.
    fn output(&mut self, id: &ToolCallId, chunk: &str, now: Instant) -> Option<acp::SessionUpdate> {
        let shown = self.shown.get_mut(id)?;
        if shown.terminal {
            let data = serde_json::json!({ "terminal_id": id.to_string(), "data": chunk });
            let update = acp::ToolCallUpdate::new(id.to_string(), acp::ToolCallUpdateFields::new())
                .meta(terminal_meta("terminal_output", data));
            return Some(acp::SessionUpdate::ToolCallUpdate(update));
        }
        shown.output.push_str(chunk);
        if shown.output.len() > 2 * OUTPUT_SHOWN {
            let mut cut = shown.output.len() - OUTPUT_SHOWN;
            while !shown.output.is_char_boundary(cut) {
                cut += 1;
            }
            shown.output.drain(..cut);
        }
        if shown.sent_at.is_some_and(|at| now.saturating_duration_since(at) < OUTPUT_INTERVAL) {
            return None;
        }
        shown.sent_at = Some(now);
        let fields = acp::ToolCallUpdateFields::new()
            .content(vec![translate::terminal_content(&shown.output)]);
        Some(call_update(id, fields))
    }

    /// A permission request about a call: the updates that go first (a call of the root agent
    /// not yet announced is announced as pending), and the call as the request shows it,
    /// titled by its view (a subagent's by `summary`), with `reason` after the title.
    pub(crate) fn approval(
        &mut self,
        id: &ToolCallId,
        view: &CallView,
        args: &Value,
        summary: &str,
        reason: Option<&str>,
        root: bool,
    ) -> (Vec<acp::SessionUpdate>, acp::ToolCallUpdate) {
        let mut title = if root { view.title.clone() } else { summary.to_owned() };
        if let Some(reason) = reason {
            title = format!("{title} ({reason})");
        }
        let mut updates = Vec::new();
        if root {
            match self.announced.get(id).copied() {
                Some(Announced::Approval) => {}
                // The call was shown as far as it was written: now it is whole.
                Some(Announced::Progress) => {
                    self.announced.insert(id.clone(), Announced::Approval);
                    updates.push(call_update(id, self.view_fields(view, args)));
                }
                None => {
                    self.announced.insert(id.clone(), Announced::Approval);
                    updates.push(acp::SessionUpdate::ToolCall(self.tool_call(
                        id,
                        view,
                        Some(args),
                        acp::ToolCallStatus::Pending,
                    )));
                }
            }
        }
        let fields = self.view_fields(view, args).title(title).status(acp::ToolCallStatus::Pending);
        (updates, acp::ToolCallUpdate::new(id.to_string(), fields))
    }
}

/// The updates that show a session's history again: the root agent's replayed events through
/// a translator of their own, the person's messages as user chunks, in the log's order.
pub(crate) fn replay(
    events: impl IntoIterator<Item = Replayed>,
    cwd: PathBuf,
) -> Vec<acp::SessionUpdate> {
    let mut translator = Translator::new(cwd);
    // Nothing is paced in a replay: no command output is replayed.
    let now = Instant::now();
    let mut out = Vec::new();
    for replayed in events {
        if !replayed.source.subagent_path.is_empty() {
            continue;
        }
        match replayed.event {
            HistoryEvent::Agent(kind) => out.extend(translator.event(&kind, now)),
            HistoryEvent::User(input) => out.extend(translate::user_updates(&input)),
            HistoryEvent::Approval(_) | HistoryEvent::Rewind(_) | HistoryEvent::Log(_) => {}
        }
    }
    out
}
