//! A session's history as the events its live run produced: the one interpreter of a session
//! log, so that a front-end shows a resumed session by feeding the replay through the same
//! translator its live events take (the TUI's transcript, ACP's `session/load`, the app server's
//! `thread/resume`, `sessions show`).
//!
//! `replay` walks a loaded log's records in order and hands each event to a sink:
//! `HistoryEvent::Agent` for what the kernel emitted live (`TurnStarted`, `StepStarted`, one
//! `TextDelta` or `ReasoningDelta` per message item, `ToolStarted` and `ToolFinished` with the
//! call's `CallView`, `StepFinished` with the step's text, `Usage`, `Compacted`, `TurnDone`), and
//! the few things the live stream does not carry because the front-end itself sent them: the
//! person's messages (`User`), approval decisions (`Approval`) and rewinds (`Rewind`). With
//! `Detail::Log` the facts only a viewer of the log itself shows (`LogEvent`: context records,
//! checkpoints, every compaction record, a compaction's summary request, results as written,
//! records of unknown types) come too.
//!
//! Invariants:
//! - It only reads: the log, and the viewer the caller gives.
//! - A call shows the same live and replayed: its view comes from the caller's viewer (the
//!   running session's `ToolRegistry`, or `BuiltinViewer` for callers without a session) given
//!   the arguments it ran with (a hook's rewrite, logged with its approval, included).
//! - It never makes the events that carry a reply channel (`ApprovalRequest`, `AskUser`): the
//!   decision and the answer are in the log as an `Approval` and the call's result.
//! - Events come in the order their records were written; a turn that a later conversation
//!   rewind took back is left out entirely with `Rewound::Skip`.
//! - A step that did not finish (cancelled, failed, cut by a crash) has no `StepFinished`, as
//!   live; its turn still ends with `TurnDone` once the log closed it (a log that stops mid-turn,
//!   not yet repaired, stops mid-turn).
//!
//! What a replay cannot know, because the log does not hold it:
//! - what was only shown, never logged: `Warning`s, hook messages, `Status` changes, a command's
//!   output as it streamed (`ToolOutputDelta`), calls still being written (`CallProgress`), a
//!   step's text that a retry voided (`StepRetried`);
//! - how a tool failed: a result the tool reported as an error is `Ok` with an error status (live,
//!   a tool's `Err` became that same text), except a denial (`PermissionDenied`, told by its
//!   text) and a cancel. Other results the harness wrote are `Err(Failed)` with the logged text
//!   (an unknown tool, bad arguments, a crash);
//! - an MCP server's raw `CallToolResult` (`mcp_result` is `None`);
//! - a compaction's trigger and token estimates, read back from the note the kernel logged with
//!   it (zero when the note does not say);
//! - whether a user message was typed or made by the harness (a Stop hook's continuation);
//! - a subagent's events: its log replays on its own, with the subagent's `EventSource`.
//!
//! A compaction's summary request is a step the live run never announced: it is recognized as
//! the step that ends right before a `compaction` record without a stop reason, and its prompt
//! as the user message right before that step. A compaction a crash cut short replays as an
//! ordinary step.

use std::collections::{HashMap, HashSet};
use std::path::Path;

pub use codecoder_kernel::ToolRegistry;
use codecoder_protocol::{
    AgentEvent, AgentEventKind, ApprovalDecision, CallView, CheckpointRecord, ContentItem,
    ContextRecord, EventSource, Message, MessageItem, Record, RecordBody, RewindRecord, StepId,
    SyntheticReason, ToolCall, ToolCallId, ToolError, ToolResult, ToolResultStatus, TurnId,
    TurnOutcome, Usage, UserInput,
};
use codecoder_session::Entry;
pub use codecoder_session::LoadedSession;
use serde_json::Value;

use crate::error::Result;

/// What a replay needs besides the log.
pub struct ReplayConfig<'a> {
    /// Describes each call, as the live run's tools did.
    pub viewer: &'a dyn Viewer,
    /// Whether the log-only facts come too.
    pub detail: Detail,
    /// What becomes of turns a later conversation rewind took back.
    pub rewound: Rewound,
}

/// How much of the log a replay delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// The conversation: agent events, the person's messages, approvals, rewinds.
    Conversation,
    /// The conversation and the log's other records (`HistoryEvent::Log`).
    Log,
}

/// What a replay does with the turns a conversation rewind took back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rewound {
    /// Replays them like any other (a viewer of the log).
    Show,
    /// Leaves them out, as the model no longer sees them either (a front-end showing the
    /// conversation that goes on).
    Skip,
}

/// Describes a tool call the way its tool does: `CallView` from the tool's name and arguments.
pub trait Viewer {
    /// The view of a call of `name` with `args`.
    fn view(&self, name: &str, args: &Value) -> CallView;
}

impl Viewer for ToolRegistry {
    fn view(&self, name: &str, args: &Value) -> CallView {
        ToolRegistry::view(self, name, args)
    }
}

/// The built-in tools' views, for a caller without a running session (`sessions show`): a call
/// of any other tool (MCP servers', `agent`, `skill`) gets the generic view.
pub struct BuiltinViewer {
    tools: Vec<std::sync::Arc<dyn codecoder_tools::Builtin>>,
}

impl BuiltinViewer {
    /// The built-ins' views.
    pub fn new() -> Self {
        // A view is a pure function of the arguments: the configuration only has to exist.
        let config = codecoder_tools::ToolsConfig::standard(std::path::PathBuf::new(), Vec::new());
        Self { tools: codecoder_tools::builtins(config) }
    }
}

impl Default for BuiltinViewer {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for BuiltinViewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltinViewer").field("tools", &self.tools.len()).finish()
    }
}

impl Viewer for BuiltinViewer {
    fn view(&self, name: &str, args: &Value) -> CallView {
        match self.tools.iter().find(|tool| tool.name() == name) {
            Some(tool) => codecoder_tools::view_of(tool.as_ref(), args),
            None => CallView::generic(name, args),
        }
    }
}

/// One replayed event and where in the log it comes from.
#[derive(Debug)]
pub struct Replayed {
    /// The `seq` of the record it comes from.
    pub seq: u64,
    /// When that record was written: Unix time in milliseconds.
    pub ts: u64,
    /// The agent it is of: the log's session, with the path of `agent` calls for a subagent's
    /// log (as far as the log names its parent).
    pub source: EventSource,
    /// What happened.
    pub event: HistoryEvent,
}

impl Replayed {
    /// The agent event, as the live run sent it; `None` for what the front-end itself sent
    /// (the person's messages, approvals, rewinds) and the log's own facts.
    pub fn into_agent_event(self) -> Option<AgentEvent> {
        match self.event {
            HistoryEvent::Agent(kind) => Some(AgentEvent { source: self.source, kind }),
            HistoryEvent::User(_)
            | HistoryEvent::Approval(_)
            | HistoryEvent::Rewind(_)
            | HistoryEvent::Log(_) => None,
        }
    }
}

/// What a replay delivers.
// The agent event is most of what a replay delivers and is handed on whole, as the live
// channel carries it: boxing it would cost an allocation per event for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum HistoryEvent {
    /// What the kernel emitted live. Never a request that carries a reply channel.
    Agent(AgentEventKind),
    /// A message of the person's, as logged (before the step it starts or joins).
    User(UserInput),
    /// An approval decision about a call (one per call that reached the approval chain; an
    /// escalation is a second one).
    Approval(Approval),
    /// Files, the conversation or both were taken back to before a turn.
    Rewind(RewindRecord),
    /// What only the log holds (with `Detail::Log`).
    Log(LogEvent),
}

/// An approval decision as logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// The call.
    pub call_id: ToolCallId,
    /// What was decided.
    pub decision: ApprovalDecision,
    /// Who decided (`user`, `rule`, `mode`, `hook`, `policy`, `session-grant`, `cancel`,
    /// `call-approval`).
    pub decided_by: String,
    /// The keys a session grant covers.
    pub permission_keys: Vec<String>,
}

/// What the log holds that no live event carries, for a viewer of the log itself.
#[derive(Debug, Clone, PartialEq)]
pub enum LogEvent {
    /// The session began (its first record).
    Started,
    /// The model-visible context of the requests that follow.
    Context(ContextRecord),
    /// A tool call as the model's message holds it (before a hook may rewrite it), in the
    /// message's order among its text and reasoning.
    Call(ToolCall),
    /// A step that no `StepStarted` announced: a compaction's summary request.
    SummaryStep {
        /// The turn.
        turn: TurnId,
        /// The step.
        step: StepId,
    },
    /// The request a compaction sent for its summary (a user message no person wrote).
    SummaryRequest(Message),
    /// The summary that came back (never streamed live).
    SummaryAnswer(Message),
    /// A call's result as logged, right before its `ToolFinished`.
    Result {
        /// The result the model saw.
        result: ToolResult,
        /// Set when the harness wrote it instead of the tool.
        synthetic: Option<SyntheticReason>,
    },
    /// The history was replaced: every compaction record (the summary's, the trim before a
    /// summary request, the restore after a cancelled one).
    Compaction {
        /// How many messages the history became.
        messages: usize,
        /// The note for people.
        note: Option<String>,
    },
    /// The files a turn changed.
    Checkpoint(CheckpointRecord),
    /// Something failed (a turn's failure also ends it with `TurnDone`).
    Error {
        /// What went wrong.
        message: String,
    },
    /// The session closed cleanly.
    SessionEnd,
    /// A record of a type this version does not know (a newer codecoder's), kept in the log.
    Unknown {
        /// Its 1-based line.
        line: usize,
        /// Its `type`.
        type_name: String,
    },
}

/// Reads and validates the log at `path` (a torn last line dropped, what a crash left open
/// reported in `trace`).
///
/// # Errors
/// When the file cannot be read or a line other than the last does not parse.
pub fn load(path: &Path) -> Result<LoadedSession> {
    Ok(codecoder_session::load(path)?)
}

/// The source of every event of `loaded`'s replay: its session, and for a subagent's log the
/// `agent` call of its parent that started it.
pub fn source(loaded: &LoadedSession) -> EventSource {
    EventSource {
        session_id: loaded.meta.session_id,
        subagent_path: loaded
            .meta
            .parent
            .as_ref()
            .map(|parent| vec![parent.tool_call_id.clone()])
            .unwrap_or_default(),
    }
}

/// The replay of `loaded`, collected.
pub fn events(loaded: &LoadedSession, config: &ReplayConfig<'_>) -> Vec<Replayed> {
    let mut out = Vec::new();
    replay(loaded, config, &mut |replayed| out.push(replayed));
    out
}

/// Replays `loaded`, handing each event to `sink` in order.
pub fn replay(loaded: &LoadedSession, config: &ReplayConfig<'_>, sink: &mut dyn FnMut(Replayed)) {
    let records: Vec<&Record> = loaded.records().collect();
    let shape = Shape::of(&records);
    let mut state = State {
        config,
        source: source(loaded),
        shape,
        turn: None,
        step: None,
        in_summary: false,
        step_text: String::new(),
        turn_usage: Usage::default(),
        calls: HashMap::new(),
    };
    for entry in &loaded.entries {
        match entry {
            Entry::Record(record) => state.record(record, sink),
            Entry::Unknown(unknown) => {
                if config.detail == Detail::Log {
                    sink(Replayed {
                        seq: unknown.seq,
                        ts: unknown.raw.get("ts").and_then(Value::as_u64).unwrap_or_default(),
                        source: state.source.clone(),
                        event: HistoryEvent::Log(LogEvent::Unknown {
                            line: unknown.line,
                            type_name: unknown.type_name.clone(),
                        }),
                    });
                }
            }
        }
    }
}

/// What a first pass over the records finds that a record alone does not say.
#[derive(Debug, Default)]
struct Shape {
    /// Compactions' summary steps.
    summary_steps: HashSet<(TurnId, StepId)>,
    /// The seqs of the user messages that are summary requests.
    summary_prompts: HashSet<u64>,
    /// The seqs of the compaction records that ended a compaction (a `Compacted` live).
    compacted: HashSet<u64>,
    /// The turns a later conversation rewind took back.
    rewound: HashSet<TurnId>,
    /// The steps that finished (a `step_end` with a stop reason).
    finished: HashSet<(TurnId, StepId)>,
}

impl Shape {
    fn of(records: &[&Record]) -> Self {
        let mut shape = Self::default();
        let mut started: Vec<TurnId> = Vec::new();
        for (index, record) in records.iter().enumerate() {
            match &record.body {
                RecordBody::TurnStart { turn } => started.push(*turn),
                RecordBody::Rewind(rewind) if rewind.conversation => {
                    shape.rewound.extend(started.iter().filter(|turn| **turn >= rewind.turn));
                }
                RecordBody::Compaction { .. } => shape.compaction(records, index),
                RecordBody::StepEnd { turn, step, stop_reason: Some(_), .. } => {
                    shape.finished.insert((*turn, *step));
                }
                _ => {}
            }
        }
        shape
    }

    /// Notes what the compaction record at `index` ends, if it ends a summary step.
    fn compaction(&mut self, records: &[&Record], index: usize) {
        let Some(before) = index.checked_sub(1).map(|at| records[at]) else { return };
        let RecordBody::StepEnd { turn, step, stop_reason: None, .. } = before.body else {
            return;
        };
        self.summary_steps.insert((turn, step));
        let start = records[..index].iter().rposition(|record| {
            matches!(record.body, RecordBody::StepStart { turn: t, step: s } if t == turn && s == step)
        });
        if let Some(prompt) = start.and_then(|at| at.checked_sub(1)).map(|at| records[at])
            && matches!(prompt.body, RecordBody::UserMessage { .. })
        {
            self.summary_prompts.insert(prompt.seq);
        }
        // A cancelled compaction restores the history and the turn ends cancelled: it
        // announced nothing.
        let next = records[index + 1..]
            .iter()
            .find(|record| !matches!(record.body, RecordBody::Checkpoint(_)));
        let cancelled = matches!(
            next.map(|record| &record.body),
            Some(RecordBody::TurnEnd { outcome: TurnOutcome::Cancelled, .. })
        );
        if !cancelled {
            self.compacted.insert(records[index].seq);
        }
    }
}

/// A call the model made, as it runs.
struct OpenCall {
    call: ToolCall,
    /// Its view, once it started.
    view: Option<CallView>,
}

/// The replay's state between records.
struct State<'c, 'v> {
    config: &'c ReplayConfig<'v>,
    source: EventSource,
    shape: Shape,
    turn: Option<TurnId>,
    step: Option<StepId>,
    /// The open step is a compaction's summary request.
    in_summary: bool,
    /// The open step's text so far.
    step_text: String,
    /// The open turn's usage so far.
    turn_usage: Usage,
    calls: HashMap<ToolCallId, OpenCall>,
}

impl State<'_, '_> {
    fn record(&mut self, record: &Record, sink: &mut dyn FnMut(Replayed)) {
        let turn = match &record.body {
            RecordBody::TurnStart { turn } => Some(*turn),
            _ => self.turn,
        };
        let skipped = self.config.rewound == Rewound::Skip
            && turn.is_some_and(|turn| self.shape.rewound.contains(&turn));
        let mut out = Vec::new();
        self.events(record, &mut out);
        if skipped {
            return;
        }
        for event in out {
            sink(Replayed { seq: record.seq, ts: record.ts, source: self.source.clone(), event });
        }
    }

    fn log(&self, out: &mut Vec<HistoryEvent>, event: impl FnOnce() -> LogEvent) {
        if self.config.detail == Detail::Log {
            out.push(HistoryEvent::Log(event()));
        }
    }

    /// The events `record` becomes, with the state after it.
    fn events(&mut self, record: &Record, out: &mut Vec<HistoryEvent>) {
        let agent = |out: &mut Vec<HistoryEvent>, kind| out.push(HistoryEvent::Agent(kind));
        match &record.body {
            RecordBody::SessionMeta(_) => self.log(out, || LogEvent::Started),
            RecordBody::TurnStart { turn } => {
                self.turn = Some(*turn);
                self.turn_usage = Usage::default();
                self.calls.clear();
                agent(out, AgentEventKind::TurnStarted { turn: *turn });
            }
            RecordBody::TurnEnd { turn, outcome, usage } => {
                self.turn = None;
                self.step = None;
                agent(
                    out,
                    AgentEventKind::TurnDone {
                        turn: *turn,
                        cancelled: *outcome == TurnOutcome::Cancelled,
                        outcome: outcome.clone(),
                        usage: *usage,
                    },
                );
            }
            RecordBody::StepStart { turn, step } => {
                self.step = Some(*step);
                self.step_text.clear();
                self.in_summary = self.shape.summary_steps.contains(&(*turn, *step));
                if self.in_summary {
                    self.log(out, || LogEvent::SummaryStep { turn: *turn, step: *step });
                } else {
                    agent(out, AgentEventKind::StepStarted { turn: *turn, step: *step });
                }
            }
            RecordBody::StepEnd { turn, step, usage, stop_reason } => {
                self.turn_usage += *usage;
                let summary = std::mem::take(&mut self.in_summary);
                self.step = None;
                // A step closed without a stop reason did not finish: it was cancelled, failed,
                // or cut by a crash (or it was a summary request), and the live run announced
                // no end of it.
                if summary || stop_reason.is_none() {
                    return;
                }
                let text = std::mem::take(&mut self.step_text);
                agent(
                    out,
                    AgentEventKind::StepFinished { turn: *turn, step: *step, usage: *usage, text },
                );
                agent(out, AgentEventKind::Usage { turn: *turn, turn_total: self.turn_usage });
            }
            RecordBody::UserMessage { message } => {
                if self.shape.summary_prompts.contains(&record.seq) {
                    self.log(out, || LogEvent::SummaryRequest(message.clone()));
                    return;
                }
                let content = message.items.iter().filter_map(user_content).collect();
                out.push(HistoryEvent::User(UserInput { content }));
            }
            RecordBody::AssistantMessage { message } => {
                if self.in_summary {
                    self.log(out, || LogEvent::SummaryAnswer(message.clone()));
                    return;
                }
                self.assistant(message, out);
            }
            RecordBody::Approval {
                call_id,
                permission_keys,
                decision,
                decided_by,
                updated_args,
            } => {
                if let (Some(args), Some(open)) = (updated_args, self.calls.get_mut(call_id)) {
                    open.call.args = args.clone();
                }
                out.push(HistoryEvent::Approval(Approval {
                    call_id: call_id.clone(),
                    decision: decision.clone(),
                    decided_by: decided_by.clone(),
                    permission_keys: permission_keys.clone(),
                }));
            }
            RecordBody::ToolStarted { call_id } => {
                let (Some(turn), Some(step)) = (self.turn, self.step) else { return };
                let Some(open) = self.calls.get_mut(call_id) else { return };
                let view = self.config.viewer.view(&open.call.name, &open.call.args);
                open.view = Some(view.clone());
                agent(
                    out,
                    AgentEventKind::ToolStarted { turn, step, call: open.call.clone(), view },
                );
            }
            RecordBody::ToolResult { result, synthetic } => {
                self.log(out, || LogEvent::Result {
                    result: result.clone(),
                    synthetic: *synthetic,
                });
                let (Some(turn), Some(step)) = (self.turn, self.step) else { return };
                let Some(open) = self.calls.remove(&result.tool_call_id) else { return };
                let view = match open.view {
                    Some(view) => view,
                    None => self.config.viewer.view(&open.call.name, &open.call.args),
                };
                agent(
                    out,
                    AgentEventKind::ToolFinished {
                        turn,
                        step,
                        call_id: result.tool_call_id.clone(),
                        call: open.call,
                        view,
                        result: finished(result, *synthetic),
                        mcp_result: None,
                    },
                );
            }
            RecordBody::Compaction { history, note } => {
                self.log(out, || LogEvent::Compaction {
                    messages: history.len(),
                    note: note.clone(),
                });
                if let (Some(turn), true) = (self.turn, self.shape.compacted.contains(&record.seq))
                {
                    agent(out, compacted(turn, note.as_deref().unwrap_or_default()));
                }
            }
            RecordBody::Context(context) => self.log(out, || LogEvent::Context(context.clone())),
            RecordBody::Checkpoint(checkpoint) => {
                self.log(out, || LogEvent::Checkpoint(checkpoint.clone()));
            }
            RecordBody::Rewind(rewind) => out.push(HistoryEvent::Rewind(rewind.clone())),
            RecordBody::Error { message } => {
                self.log(out, || LogEvent::Error { message: message.clone() });
            }
            RecordBody::SessionEnd => self.log(out, || LogEvent::SessionEnd),
        }
    }

    /// A model's message: its text and reasoning as one delta per item, its calls noted.
    fn assistant(&mut self, message: &Message, out: &mut Vec<HistoryEvent>) {
        let (Some(turn), Some(step)) = (self.turn, self.step) else { return };
        for item in &message.items {
            match item {
                MessageItem::Text { text } => {
                    self.step_text.push_str(text);
                    if !text.is_empty() {
                        let delta = text.clone();
                        out.push(HistoryEvent::Agent(AgentEventKind::TextDelta {
                            turn,
                            step,
                            delta,
                        }));
                    }
                }
                MessageItem::Reasoning(reasoning) => {
                    if !reasoning.text.is_empty() {
                        let delta = reasoning.text.clone();
                        out.push(HistoryEvent::Agent(AgentEventKind::ReasoningDelta {
                            turn,
                            step,
                            delta,
                        }));
                    }
                }
                MessageItem::ToolCall(call) => {
                    self.log(out, || LogEvent::Call(call.clone()));
                    self.calls.insert(call.id.clone(), OpenCall { call: call.clone(), view: None });
                }
                // A model's message holds no results, images or stored attachments.
                MessageItem::ToolResult(_) | MessageItem::Image(_) | MessageItem::BlobRef(_) => {}
            }
        }
        // Live, a message is announced whole once its stream completed, before its calls run:
        // its step finished, or it holds calls (a stream cut off logs none), whatever came
        // after.
        let completed = self.shape.finished.contains(&(turn, step))
            || message.items.iter().any(|item| matches!(item, MessageItem::ToolCall(_)));
        if completed && !self.step_text.is_empty() {
            let text = self.step_text.clone();
            out.push(HistoryEvent::Agent(AgentEventKind::AgentMessage { turn, step, text }));
        }
    }
}

/// A user message's item as the person's input; what a person cannot send is left out.
fn user_content(item: &MessageItem) -> Option<ContentItem> {
    match item {
        MessageItem::Text { text } => Some(ContentItem::Text { text: text.clone() }),
        MessageItem::Image(image) => Some(ContentItem::Image(image.clone())),
        MessageItem::BlobRef(blob) => Some(ContentItem::BlobRef(blob.clone())),
        MessageItem::Reasoning(_) | MessageItem::ToolCall(_) | MessageItem::ToolResult(_) => None,
    }
}

/// The result a `ToolFinished` carries for a logged result: the tool's own output as it was,
/// an error the kernel logged as the error it was (a refusal, a cancel, a crash).
///
/// The kernel logs a tool's or the approval chain's `ToolError` as its text; a denial is told by
/// that text (`permission denied: {reason}`, the first item: the kernel may add a nudge after
/// it), because front-ends show a denied call differently from a failed one.
fn finished(
    result: &ToolResult,
    synthetic: Option<SyntheticReason>,
) -> std::result::Result<ToolResult, ToolError> {
    let denied_prefix = ToolError::PermissionDenied { reason: String::new() }.to_string();
    let denial = match (result.status, synthetic, result.content.first()) {
        (
            ToolResultStatus::Error,
            None | Some(SyntheticReason::Refused),
            Some(ContentItem::Text { text }),
        ) => text.strip_prefix(&denied_prefix),
        _ => None,
    };
    if let Some(reason) = denial {
        return Err(ToolError::PermissionDenied { reason: reason.to_owned() });
    }
    match synthetic {
        None if result.status == ToolResultStatus::Cancelled => Err(ToolError::Cancelled),
        None => Ok(result.clone()),
        Some(SyntheticReason::Cancelled) => Err(ToolError::Cancelled),
        Some(
            SyntheticReason::Refused
            | SyntheticReason::NotStarted
            | SyntheticReason::OutcomeUnknown,
        ) => Err(ToolError::Failed { message: crate::jsonl::result_text(result) }),
    }
}

/// The `Compacted` event of a compaction that logged `note`: the kernel's note says
/// `context compacted ({trigger}): ~{before} → ~{after} tokens`, or
/// `context trimmed without a summary ({trigger}; {why}): ~{before} → ~{after} tokens`.
fn compacted(turn: TurnId, note: &str) -> AgentEventKind {
    let summarized = !note.starts_with("context trimmed");
    let trigger = note
        .split_once('(')
        .map(|(_, rest)| rest)
        .and_then(|rest| rest.split([')', ';']).next())
        .unwrap_or("auto")
        .to_owned();
    let (tokens_before, tokens_after) = note
        .rsplit_once("): ~")
        .and_then(|(_, tokens)| {
            let (before, after) = tokens.split_once(" → ~")?;
            let after = after.strip_suffix(" tokens")?;
            Some((before.parse().ok()?, after.parse().ok()?))
        })
        .unwrap_or((0, 0));
    AgentEventKind::Compacted {
        turn,
        trigger,
        summarized,
        tokens_before,
        tokens_after,
        message: note.to_owned(),
    }
}

#[cfg(test)]
mod tests;
