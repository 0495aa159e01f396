//! The sessions this server hosts. Each runs as any front-end's session does (the runtime
//! assembles it, the kernel's loop runs it); a worker thread per session reads its agent's
//! events, numbers them, keeps them for readers that come later or reconnect, and holds the
//! replies of its pending approvals and questions until a client answers.
//!
//! Besides the agent's events, the stream holds two of the server's own: `approvalResolved`
//! and `questionResolved`, when a client answered.
//!
//! Invariants: an event's `seq` is its position in the session's stream (1, 2, 3, …), so a
//! reader that resumes `after=N` misses nothing and sees nothing twice; an approval's reply is
//! taken out of the pending map by the first answer, so a second answer finds nothing (first
//! wins); at a turn's end the pending requests it left are dropped (the kernel already
//! resolved them as cancelled).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use codecoder_app::{Overrides, Runtime, SessionRequest, Start};
use codecoder_protocol::{
    AgentCommand, AgentEvent, AgentEventKind, ApprovalDecision, AskUserAnswer, Reply, UserInput,
};
use codecoder_stdx::{JoinOnDrop, spawn_named};
use crossbeam_channel::Sender;
use serde_json::{Value, json};

use crate::error::{Error, Result};

/// One hosted session, shared by the connections that read or drive it.
pub(crate) struct Live {
    /// The session id.
    pub(crate) id: String,
    /// Its working directory.
    pub(crate) cwd: String,
    /// The agent's command channel.
    cmd: Sender<AgentCommand>,
    /// The stream and the pending approvals. A mutex because many connection threads read it
    /// while the session's worker appends; it is never held across a channel operation.
    state: Mutex<LiveState>,
    /// Signalled whenever `state` changes.
    changed: Condvar,
}

#[derive(Default)]
struct LiveState {
    /// Every event so far, as JSON; `events[i]` has seq `i + 1`.
    events: Vec<Value>,
    /// Approval requests not yet answered, by request id.
    pending: BTreeMap<String, Pending>,
    /// The agent stopped: no more events will come.
    closed: bool,
}

struct Pending {
    /// The seq of the event that asked.
    seq: u64,
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
    /// Events with seq above the cursor.
    pub(crate) events: Vec<Value>,
    /// The session has stopped and every event is in this or an earlier batch.
    pub(crate) finished: bool,
}

impl Live {
    fn lock(&self) -> MutexGuard<'_, LiveState> {
        // A panic while the lock was held leaves the state as consistent as each push is.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends a command to the agent; `false` when it has stopped.
    pub(crate) fn send(&self, command: AgentCommand) -> bool {
        self.cmd.send(command).is_ok()
    }

    /// The events with seq above `after`, waiting up to `wait` for one when there are none.
    pub(crate) fn events_after(&self, after: u64, wait: Duration) -> Batch {
        let start = usize::try_from(after).unwrap_or(usize::MAX);
        let mut state = self.lock();
        if state.events.len() <= start && !state.closed {
            state = self
                .changed
                .wait_timeout(state, wait)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|err| err.into_inner().0);
        }
        let events = state.events.get(start..).map(<[Value]>::to_vec).unwrap_or_default();
        Batch { events, finished: state.closed }
    }

    /// The pending requests, oldest first, each the event that asked: approvals and questions.
    pub(crate) fn pending(&self) -> (Vec<Value>, Vec<Value>) {
        let state = self.lock();
        let mut pending: Vec<&Pending> = state.pending.values().collect();
        pending.sort_by_key(|p| p.seq);
        let event =
            |p: &Pending| state.events.get(usize::try_from(p.seq).ok()?.checked_sub(1)?).cloned();
        let approvals = pending
            .iter()
            .filter(|p| matches!(p.reply, Waiting::Approval(_)))
            .filter_map(|p| event(p))
            .collect();
        let questions = pending
            .iter()
            .filter(|p| matches!(p.reply, Waiting::Question(_)))
            .filter_map(|p| event(p))
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
        let seq = state.events.len() as u64 + 1;
        let resolved = match answer {
            Answer::Approval(decision) => {
                json!({ "approvalResolved": { "id": request_id, "decision": decision } })
            }
            Answer::Question(answer) => {
                json!({ "questionResolved": { "id": request_id, "answer": answer } })
            }
        };
        let mut record = json!({ "seq": seq, "sessionId": self.id });
        if let (Some(record), Some(resolved)) = (record.as_object_mut(), resolved.as_object()) {
            record.extend(resolved.clone());
        }
        state.events.push(record);
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

    /// Takes one agent event into the stream.
    fn push(&self, event: AgentEvent) {
        let (kind, reply) = split_reply(event.kind);
        let turn_done = matches!(kind, AgentEventKind::TurnDone { .. });
        let request_id = match &kind {
            AgentEventKind::ApprovalRequest(request) => Some(request.id.to_string()),
            AgentEventKind::AskUser(request) => Some(request.id.to_string()),
            _ => None,
        };
        let body = AgentEvent { source: event.source, kind };
        let mut state = self.lock();
        let seq = state.events.len() as u64 + 1;
        let value = match serde_json::to_value(&body) {
            Ok(value) => value,
            Err(err) => json!({ "type": "unencodable", "message": err.to_string() }),
        };
        state.events.push(json!({ "seq": seq, "sessionId": self.id, "event": value }));
        if let (Some(id), Some(reply)) = (request_id, reply) {
            state.pending.insert(id, Pending { seq, reply });
        }
        if turn_done {
            state.pending.clear();
        }
        drop(state);
        self.changed.notify_all();
    }

    fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
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

/// The hosted sessions and their workers.
pub(crate) struct Hub {
    /// The overrides every session starts from (the command line's flags).
    overrides: Overrides,
    /// The sessions by id. A mutex because connection threads add and look up sessions.
    sessions: Mutex<HashMap<String, Arc<Live>>>,
    /// The workers, joined when the hub is dropped (after `shutdown` told each agent to stop).
    workers: Mutex<Vec<JoinOnDrop<()>>>,
}

impl Hub {
    pub(crate) fn new(overrides: Overrides) -> Self {
        Self { overrides, sessions: Mutex::default(), workers: Mutex::default() }
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Arc<Live>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
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
    /// submits `prompt` first when given. A resumed log is locked as in any front-end: one
    /// writer across processes.
    pub(crate) fn start(
        &self,
        cwd: &std::path::Path,
        start: Start,
        prompt: Option<String>,
    ) -> Result<Arc<Live>> {
        let mut overrides = self.overrides.clone();
        overrides.cwd = Some(cwd.to_owned());
        let runtime = Runtime::load(overrides).map_err(Error::Runtime)?;
        let request = SessionRequest {
            start,
            interactive: true,
            first_prompt: prompt.clone(),
            ..SessionRequest::new()
        };
        let session = runtime.start(&request).map_err(Error::Runtime)?;
        let id = session.agent.session_id().to_string();
        let live = Arc::new(Live {
            id: id.clone(),
            cwd: session.cwd.to_string_lossy().into_owned(),
            cmd: session.agent.cmd.clone(),
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
        self.workers.lock().unwrap_or_else(PoisonError::into_inner).push(worker);
        self.sessions().insert(id, Arc::clone(&live));
        if let Some(prompt) = prompt {
            live.send(AgentCommand::Submit(UserInput::text(prompt)));
        }
        Ok(live)
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

    /// Tells every agent to stop (running commands are killed, logs closed) and joins the
    /// workers.
    pub(crate) fn shutdown(&self) {
        let sessions: Vec<Arc<Live>> = self.sessions().values().cloned().collect();
        for live in &sessions {
            live.send(AgentCommand::Shutdown);
        }
        let workers =
            std::mem::take(&mut *self.workers.lock().unwrap_or_else(PoisonError::into_inner));
        drop(workers);
    }
}
