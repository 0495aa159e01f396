//! The sessions this server hosts. Each runs as any front-end's session does (the runtime
//! assembles it, the kernel's loop runs it); a worker thread per session reads its agent's
//! events, numbers them, keeps the newest of them for readers that come later or reconnect, and
//! holds the replies of its pending approvals and questions until a client answers.
//!
//! Besides the agent's events, the stream holds the server's own: `approvalResolved` and
//! `questionResolved` when a client answered, and, for a reader whose cursor is older than the
//! oldest event kept, one `gap` first (those events are only in the log now: `/history`).
//!
//! Invariants: an event's `seq` is its position in the session's stream (1, 2, 3, …), so a
//! reader that resumes `after=N` misses nothing and sees nothing twice, or is told by a `gap`
//! exactly which events it can no longer get here; at most `max_events` events are kept per
//! session (the oldest go first), while a pending request's own event is kept with it until it
//! is answered; an approval's reply is taken out of the pending map by the first answer, so a
//! second answer finds nothing (first wins); at a turn's end the pending requests it left are
//! dropped (the kernel already resolved them as cancelled).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use codecoder_app::{Overrides, Runtime, SessionControls, SessionRequest, Start};
use codecoder_protocol::{
    AgentCommand, AgentEvent, AgentEventKind, ApprovalDecision, AskUserAnswer, PermissionMode,
    Reply, UserInput,
};
use codecoder_stdx::{JoinOnDrop, spawn_named};
use crossbeam_channel::Sender;
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::types::{Gap, Resolved, StreamItem, UserItem};

/// The events kept in memory per hosted session by default: the newest ones; older ones are
/// read from the log (`/history`).
pub const MAX_KEPT_EVENTS: usize = 20_000;

/// One hosted session, shared by the connections that read or drive it.
pub(crate) struct Live {
    /// The session id.
    pub(crate) id: String,
    /// Its working directory.
    pub(crate) cwd: String,
    /// The model the runtime started it with.
    pub(crate) model: String,
    /// The provider id.
    pub(crate) provider: String,
    /// The model's context window, in tokens.
    pub(crate) context_window: u64,
    /// The approval and permission modes, changeable while it runs.
    pub(crate) controls: SessionControls,
    /// Its log (`None` for a session that keeps none).
    pub(crate) log: Option<PathBuf>,
    /// The slash commands its prompts may start with: (name, description, kind).
    pub(crate) commands: Vec<(String, String, &'static str)>,
    /// The agent's command channel.
    cmd: Sender<AgentCommand>,
    /// Events kept at most.
    max_events: usize,
    /// The stream and the pending approvals. A mutex because many connection threads read it
    /// while the session's worker appends; it is never held across a channel operation.
    state: Mutex<LiveState>,
    /// Signalled whenever `state` changes.
    changed: Condvar,
}

#[derive(Default)]
struct LiveState {
    /// The newest events, as JSON; `events[i]` has seq `dropped + i + 1`.
    events: VecDeque<Value>,
    /// How many of the oldest events were let go past the cap.
    dropped: u64,
    /// Approval requests not yet answered, by request id.
    pending: BTreeMap<String, Pending>,
    /// A turn runs (from `turn_started` to `turn_done` of the session's own agent).
    running: bool,
    /// The agent stopped: no more events will come.
    closed: bool,
}

impl LiveState {
    /// The seq the next event gets.
    fn next_seq(&self) -> u64 {
        self.dropped + self.events.len() as u64 + 1
    }

    /// Appends `record` and lets the oldest go past `max`.
    fn append(&mut self, record: Value, max: usize) {
        self.events.push_back(record);
        while self.events.len() > max.max(1) {
            self.events.pop_front();
            self.dropped += 1;
        }
    }
}

struct Pending {
    /// The seq of the event that asked.
    seq: u64,
    /// That event, kept while it waits even when the stream let it go.
    event: Value,
    /// Where the answer goes.
    reply: Waiting,
}

/// The reply a pending request waits on.
enum Waiting {
    Approval(Reply<ApprovalDecision>),
    Question(Reply<AskUserAnswer>),
}

/// A client's answer to a pending request.
#[derive(Debug, Clone)]
pub(crate) enum Answer {
    /// To an approval request.
    Approval(ApprovalDecision),
    /// To a question.
    Question(AskUserAnswer),
}

/// What became of an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answered {
    /// It was the first: the agent has it.
    Taken,
    /// Nothing of that kind with that id is pending (answered already, withdrawn, unknown).
    NotPending,
}

/// What `events_after` found.
pub(crate) struct Batch {
    /// Events with seq above the cursor (a `gap` first when some are no longer kept).
    pub(crate) events: Vec<Value>,
    /// The session has stopped and every event is in this or an earlier batch.
    pub(crate) finished: bool,
}

impl Live {
    fn lock(&self) -> MutexGuard<'_, LiveState> {
        // A panic while the lock was held leaves the state as consistent as each push is.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends a command to the agent; `false` when it has stopped. Input and a compaction
    /// start a turn: the session counts as running from here, before `turn_started` comes, so
    /// an undo sent meanwhile is refused rather than ignored by a busy agent.
    pub(crate) fn send(&self, command: AgentCommand) -> bool {
        let starts_turn = matches!(
            command,
            AgentCommand::Submit(_) | AgentCommand::Steer(_) | AgentCommand::Compact { .. }
        );
        // A prompt is in the stream before what it starts, so every reader (another browser,
        // a remote TUI, one that joins later) sees who asked what.
        let user = match &command {
            AgentCommand::Submit(input) => Some((input, false)),
            AgentCommand::Steer(input) => Some((input, true)),
            _ => None,
        };
        {
            let mut state = self.lock();
            if starts_turn {
                state.running = true;
            }
            if let Some((input, steer)) = user {
                let seq = state.next_seq();
                let input = serde_json::to_value(input).unwrap_or(Value::Null);
                let record = self.item(seq, |item| item.user = Some(UserItem { input, steer }));
                state.append(record, self.max_events);
            }
        }
        self.changed.notify_all();
        self.cmd.send(command).is_ok()
    }

    /// Whether a turn runs now.
    pub(crate) fn running(&self) -> bool {
        self.lock().running
    }

    /// The permission mode now.
    pub(crate) fn permission_mode(&self) -> PermissionMode {
        self.controls.permission_mode()
    }

    /// The events with seq above `after`, waiting up to `wait` for one when there are none.
    /// When events after `after` were let go, the batch starts with `{seq, sessionId, gap:
    /// {from, to}}` naming them, `seq` being `to` (the cursor to go on from).
    pub(crate) fn events_after(&self, after: u64, wait: Duration) -> Batch {
        let mut state = self.lock();
        if state.next_seq() <= after + 1 && !state.closed {
            state = self
                .changed
                .wait_timeout(state, wait)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|err| err.into_inner().0);
        }
        let mut events = Vec::new();
        if after < state.dropped {
            let gap = Gap { from: after + 1, to: state.dropped };
            events.push(self.item(state.dropped, |item| item.gap = Some(gap)));
        }
        let skip = usize::try_from(after.saturating_sub(state.dropped)).unwrap_or(usize::MAX);
        events.extend(state.events.iter().skip(skip).cloned());
        Batch { events, finished: state.closed }
    }

    /// The pending requests, oldest first, each the event that asked: approvals and questions.
    pub(crate) fn pending(&self) -> (Vec<Value>, Vec<Value>) {
        let state = self.lock();
        let mut pending: Vec<&Pending> = state.pending.values().collect();
        pending.sort_by_key(|p| p.seq);
        let approvals = pending
            .iter()
            .filter(|p| matches!(p.reply, Waiting::Approval(_)))
            .map(|p| p.event.clone())
            .collect();
        let questions = pending
            .iter()
            .filter(|p| matches!(p.reply, Waiting::Question(_)))
            .map(|p| p.event.clone())
            .collect();
        (approvals, questions)
    }

    /// Answers a pending request of this session if `answer` is of its kind.
    fn answer(&self, request_id: &str, answer: &Answer) -> Answered {
        let mut state = self.lock();
        let fits = matches!(
            (state.pending.get(request_id).map(|p| &p.reply), answer),
            (Some(Waiting::Approval(_)), Answer::Approval(_))
                | (Some(Waiting::Question(_)), Answer::Question(_))
        );
        // An answer of the other kind leaves the request pending for the right one.
        let Some(pending) = fits.then(|| state.pending.remove(request_id)).flatten() else {
            return Answered::NotPending;
        };
        // Every reader is told, in the stream, before the call goes on: a client that showed
        // the request takes it down.
        let seq = state.next_seq();
        let id = request_id.to_owned();
        let record = match answer {
            Answer::Approval(decision) => self.item(seq, |item| {
                let decision = serde_json::to_value(decision).ok();
                item.approval_resolved = Some(Resolved { id, decision, answer: None });
            }),
            Answer::Question(answer) => self.item(seq, |item| {
                let answer = serde_json::to_value(answer).ok();
                item.question_resolved = Some(Resolved { id, decision: None, answer });
            }),
        };
        state.append(record, self.max_events);
        drop(state);
        self.changed.notify_all();
        match (pending.reply, answer) {
            (Waiting::Approval(reply), Answer::Approval(decision)) => {
                let _ = reply.send(decision.clone());
            }
            (Waiting::Question(reply), Answer::Question(answer)) => {
                let _ = reply.send(answer.clone());
            }
            // `fits` held: the kinds match.
            (Waiting::Approval(_) | Waiting::Question(_), _) => {}
        }
        Answered::Taken
    }

    /// A stream item of this session: `fill` sets what it holds.
    fn item(&self, seq: u64, fill: impl FnOnce(&mut StreamItem)) -> Value {
        let mut item = StreamItem {
            seq,
            session_id: self.id.clone(),
            event: None,
            approval_resolved: None,
            question_resolved: None,
            gap: None,
            user: None,
        };
        fill(&mut item);
        serde_json::to_value(&item)
            .unwrap_or_else(|err| json!({ "seq": seq, "error": err.to_string() }))
    }

    /// Takes one agent event into the stream.
    fn push(&self, event: AgentEvent) {
        let (kind, reply) = split_reply(event.kind);
        let own = event.source.subagent_path.is_empty();
        let turn_started = own && matches!(kind, AgentEventKind::TurnStarted { .. });
        let turn_done = matches!(kind, AgentEventKind::TurnDone { .. });
        let request_id = match &kind {
            AgentEventKind::ApprovalRequest(request) => Some(request.id.to_string()),
            AgentEventKind::AskUser(request) => Some(request.id.to_string()),
            _ => None,
        };
        let body = AgentEvent { source: event.source, kind };
        let mut state = self.lock();
        let seq = state.next_seq();
        let value = match serde_json::to_value(&body) {
            Ok(value) => value,
            Err(err) => json!({ "type": "unencodable", "message": err.to_string() }),
        };
        let record = self.item(seq, |item| item.event = Some(value));
        if let (Some(id), Some(reply)) = (request_id, reply) {
            state.pending.insert(id, Pending { seq, event: record.clone(), reply });
        }
        state.append(record, self.max_events);
        if turn_started {
            state.running = true;
        }
        if turn_done && own {
            state.pending.clear();
            state.running = false;
        }
        drop(state);
        self.changed.notify_all();
    }

    fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.running = false;
        state.pending.clear();
        drop(state);
        self.changed.notify_all();
    }
}

/// Moves a request's reply out of its event (an approval's, a question's), so the event can be
/// kept and shown while the reply waits for an answer.
fn split_reply(kind: AgentEventKind) -> (AgentEventKind, Option<Waiting>) {
    match kind {
        AgentEventKind::ApprovalRequest(mut request) => {
            let (placeholder, _) = Reply::pair();
            let reply = std::mem::replace(&mut request.reply, placeholder);
            (AgentEventKind::ApprovalRequest(request), Some(Waiting::Approval(reply)))
        }
        AgentEventKind::AskUser(mut request) => {
            let (placeholder, _) = Reply::pair();
            let reply = std::mem::replace(&mut request.reply, placeholder);
            (AgentEventKind::AskUser(request), Some(Waiting::Question(reply)))
        }
        other => (other, None),
    }
}

/// What a request may choose for its own session, on top of the server's flags.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionChoices {
    /// The first prompt.
    pub(crate) prompt: Option<String>,
    /// Another model.
    pub(crate) model: Option<String>,
    /// A reasoning effort.
    pub(crate) effort: Option<String>,
    /// The permission mode to start in (never a bypass: the type has none).
    pub(crate) permission_mode: Option<PermissionMode>,
}

/// The hosted sessions and their workers.
pub(crate) struct Hub {
    /// The overrides every session starts from (the command line's flags).
    overrides: Overrides,
    /// Events kept per session.
    max_events: usize,
    /// The sessions by id. A mutex because connection threads add and look up sessions.
    sessions: Mutex<HashMap<String, Arc<Live>>>,
    /// Each session's worker by session id, joined when the session is closed or the hub is
    /// dropped (after `shutdown` told each agent to stop).
    workers: Mutex<HashMap<String, JoinOnDrop<()>>>,
}

impl Hub {
    pub(crate) fn new(overrides: Overrides, max_events: usize) -> Self {
        Self { overrides, max_events, sessions: Mutex::default(), workers: Mutex::default() }
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Arc<Live>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn workers(&self) -> MutexGuard<'_, HashMap<String, JoinOnDrop<()>>> {
        self.workers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A hosted session by id.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Live>> {
        self.sessions().get(id).cloned()
    }

    /// Whether a session is hosted here.
    pub(crate) fn is_live(&self, id: &str) -> bool {
        self.sessions().contains_key(id)
    }

    /// Starts a session in `cwd` (new, resumed or forked) with the server's overrides (sandbox
    /// and approval policy as the command line and config say, as the TUI's would be), and
    /// what the request chose (model, effort, permission mode), and submits the first prompt
    /// when given. A resumed log is locked as in any front-end: one writer across processes.
    pub(crate) fn start(
        &self,
        cwd: &Path,
        start: Start,
        choices: SessionChoices,
    ) -> Result<Arc<Live>> {
        let mut overrides = self.overrides.clone();
        overrides.cwd = Some(cwd.to_owned());
        let runtime = Runtime::load(overrides).map_err(Error::Runtime)?;
        let request = SessionRequest {
            start,
            model: choices.model,
            reasoning_effort: choices.effort,
            interactive: true,
            first_prompt: choices.prompt.clone(),
            ..SessionRequest::new()
        };
        let session = runtime.start(&request).map_err(Error::Runtime)?;
        if let Some(mode) = choices.permission_mode {
            session.controls.set_permission_mode(mode);
        }
        let id = session.agent.session_id().to_string();
        let mut commands: Vec<(String, String, &'static str)> = BUILTIN_COMMANDS
            .iter()
            .map(|(name, description)| ((*name).to_owned(), (*description).to_owned(), "builtin"))
            .collect();
        for (name, description) in &session.catalog.skills {
            commands.push((name.clone(), description.clone(), "skill"));
        }
        for (name, description) in &session.catalog.commands {
            commands.push((name.clone(), description.clone(), "prompt"));
        }
        let live = Arc::new(Live {
            id: id.clone(),
            cwd: session.cwd.to_string_lossy().into_owned(),
            model: session.model.clone(),
            provider: session.provider_id.clone(),
            context_window: session.context_window,
            controls: session.controls.clone(),
            log: session.agent.session_path().map(Path::to_owned),
            commands,
            cmd: session.agent.cmd.clone(),
            max_events: self.max_events,
            state: Mutex::default(),
            changed: Condvar::new(),
        });
        let agent = session.agent;
        let worker_live = Arc::clone(&live);
        let short: String = id.chars().rev().take(8).collect();
        let worker = spawn_named(format!("serve-session-{short}"), move || {
            for event in agent.events.iter() {
                worker_live.push(event);
            }
            worker_live.close();
            // Closes the log and joins the agent's threads.
            let _ = agent.shutdown();
        })
        .map_err(|source| Error::Thread { source })?;
        self.workers().insert(id.clone(), worker);
        self.sessions().insert(id, Arc::clone(&live));
        if let Some(prompt) = choices.prompt {
            live.send(AgentCommand::Submit(UserInput::text(prompt)));
        }
        Ok(live)
    }

    /// Stops hosting a session: its agent is shut down (a running turn cancelled, its commands
    /// killed, its log closed and unlocked) before this returns. `false` when it is not hosted.
    pub(crate) fn close(&self, id: &str) -> bool {
        let Some(live) = self.sessions().remove(id) else { return false };
        live.send(AgentCommand::Shutdown);
        let worker = self.workers().remove(id);
        // Joins the worker, which ends once the agent has shut down.
        drop(worker);
        true
    }

    /// Answers the pending request `request_id` of whichever session asked it.
    pub(crate) fn answer(&self, request_id: &str, answer: &Answer) -> Answered {
        let sessions: Vec<Arc<Live>> = self.sessions().values().cloned().collect();
        if sessions.iter().any(|live| live.answer(request_id, answer) == Answered::Taken) {
            Answered::Taken
        } else {
            Answered::NotPending
        }
    }

    /// Tells every agent to stop (running turns cancelled, their commands killed, logs closed)
    /// and joins the workers.
    pub(crate) fn shutdown(&self) {
        let sessions: Vec<Arc<Live>> = self.sessions().values().cloned().collect();
        for live in &sessions {
            live.send(AgentCommand::Shutdown);
        }
        let workers = std::mem::take(&mut *self.workers());
        drop(workers);
    }
}

/// The commands the server itself runs when a prompt starts with them: (name, description).
pub(crate) const BUILTIN_COMMANDS: &[(&str, &str)] = &[
    ("undo", "restore the files the last turn changed (`/undo force`: even if changed since)"),
    ("rewind", "`/rewind N`: conversation and files back to before the Nth newest prompt"),
    ("compact", "summarise the conversation to free context (`/compact FOCUS` to steer it)"),
    ("plan", "plan mode on (`/plan TEXT`: and plan that; `/plan off`: back to default)"),
];
