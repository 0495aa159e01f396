//! The agent side of `--remote`: an `AgentHandle` whose loop runs in a `codecoder serve`, so the
//! UI drives it exactly as a local one.
//!
//! Two threads per session. `remote-events` reads the session's event stream (a WebSocket on
//! `/api/sessions/{id}/events`), turns each item back into the runtime's `AgentEvent` and passes
//! it on; a request (approval, question) gets a local reply whose receiver goes to the other
//! thread first. `remote-session` (the handle's own thread) forwards the UI's commands to their
//! routes, posts each answer the UI gives to `/api/approvals/{id}` or `/api/questions/{id}`, and
//! after `Shutdown` sends `ShutdownComplete` and joins the reader. When the stream ends for good
//! (the session or the server stopped, the connection is lost) the reader says why and the
//! session thread ends too, as a kernel loop that stopped: the UI sees its events close.
//!
//! Invariants:
//! - The stream is read from a cursor (`after=` the last `seq` seen), so a connection that
//!   breaks is opened again without losing or repeating an event; a close frame from the server
//!   means the session stopped there (or the server did), and ends the stream for good.
//! - A request answered by another client first (`approvalResolved`, `questionResolved`, or a
//!   409 to the UI's answer) is let go and the person told; the UI takes its prompt down when
//!   the call starts or finishes, so nothing waits on it.
//! - Leaving the UI detaches: the session goes on in the server for its other clients.

use std::collections::VecDeque;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context;
use codecoder_app::AgentHandle;
use codecoder_protocol::{
    AgentCommand, AgentEvent, AgentEventKind, ApprovalDecision, AskUserAnswer, CallKind,
    ContentItem, EventSource, Reply, SessionId, UserInput,
};
use codecoder_stdx::spawn_named;
use crossbeam_channel::{Receiver, Select, Sender};
use serde_json::{Value, json};
use tungstenite::client::IntoClientRequest;
use tungstenite::protocol::WebSocket;
use tungstenite::{HandshakeError, Message};

use crate::remote::client::{self, ApiError, Client};

/// How often a blocked read of the stream looks up to see whether the UI left.
const POLL: Duration = Duration::from_millis(200);
/// How long the upgrade may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a broken stream is tried again before the session counts as lost.
const RECONNECT_PATIENCE: Duration = Duration::from_secs(20);
/// Events between the reader and the UI; the UI drains them continuously, as a local agent's.
const EVENT_CAPACITY: usize = 1024;

/// What the reader tells the session thread, in stream order.
enum Note {
    /// An approval request went to the UI; its answer comes on `answer`.
    Approval { id: String, answer: Receiver<ApprovalDecision> },
    /// A question went to the UI; its answer comes on `answer`.
    Question { id: String, answer: Receiver<AskUserAnswer> },
    /// A client answered request `id` (this one or another): `what` says how. `quiet` when it
    /// came with what the server sent at once on joining (answered before the UI was there).
    Resolved { id: String, what: String, quiet: bool },
}

/// Why the stream could not be opened.
#[derive(Debug)]
enum Refused {
    /// Trying again cannot help: nothing listens there any more, the server does not host the
    /// session (any more), or it refuses the token (another run of the server).
    Final(String),
    /// Anything else (a broken connection, a timeout): worth trying again.
    Failed(ApiError),
}

/// What the reader keeps up to date for the host while it follows a session.
#[derive(Debug, Default)]
pub(crate) struct Followed {
    /// The last `seq` passed to the UI: following the same session again goes on from there.
    pub(crate) cursor: AtomicU64,
    /// The session's permission mode as the server last said (it changes on its own when a plan
    /// is approved). A mutex because the UI thread reads it while the reader writes it; held
    /// only to copy the value in or out.
    pub(crate) permission_mode: Mutex<Option<String>>,
    /// The prompts this client sent whose `user` item the stream has not brought back yet:
    /// the UI showed them when they were typed, so their echo is not shown again. A mutex
    /// because the session thread adds while the reader takes; held only to push or pop.
    sent: Mutex<VecDeque<String>>,
}

impl Followed {
    pub(crate) fn permission_mode(&self) -> Option<String> {
        self.permission_mode.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub(crate) fn set_permission_mode(&self, mode: Option<String>) {
        *self.permission_mode.lock().unwrap_or_else(PoisonError::into_inner) = mode;
    }

    pub(crate) fn sent(&self) -> std::sync::MutexGuard<'_, VecDeque<String>> {
        self.sent.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a prompt the stream brings is the echo of the oldest one this client sent (a
    /// slash command's echo is its expansion, so any text matches a sent `/name`).
    pub(crate) fn is_own_echo(&self, text: &str) -> bool {
        let mut sent = self.sent();
        let own = sent.front().is_some_and(|first| first == text || first.starts_with('/'));
        if own {
            sent.pop_front();
        }
        own
    }
}

/// Starts following hosted session `id` after `followed`'s cursor: the stream is opened here
/// (so a refusal is the caller's error), then read on a thread of its own. `joining`: the
/// session ran before this client came, and what the server sends at once is its past. `log`:
/// the session's log when this machine can read it (the handle's `session_path`).
pub(crate) fn attach(
    client: Arc<Client>,
    id: &str,
    followed: Arc<Followed>,
    joining: bool,
    log: Option<PathBuf>,
) -> anyhow::Result<AgentHandle> {
    let session_id: SessionId = id
        .parse()
        .map_err(|_| anyhow::anyhow!("the server named a session `{id}` that is not an id"))?;
    let socket = match connect(&client, id, followed.cursor.load(Ordering::SeqCst)) {
        Ok(socket) => socket,
        Err(Refused::Final(message) | Refused::Failed(ApiError { message, .. })) => {
            anyhow::bail!("following session {id}: {message}")
        }
    };
    let source = EventSource { session_id, subagent_path: Vec::new() };
    let (cmd_tx, cmd_rx) = crossbeam_channel::bounded(64);
    let (events_tx, events_rx) = crossbeam_channel::bounded(EVENT_CAPACITY);
    // Notes are few (one per request) and must never hold the reader up behind the UI.
    let (notes_tx, notes_rx) = crossbeam_channel::unbounded();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = Reader {
        client: Arc::clone(&client),
        id: id.to_owned(),
        followed: Arc::clone(&followed),
        caught_up: !joining,
        events: events_tx.clone(),
        notes: notes_tx,
        stop: Arc::clone(&stop),
        source: source.clone(),
    };
    let short: String = id.chars().rev().take(8).collect();
    let reader = spawn_named(format!("remote-events-{short}"), move || reader.run(socket))
        .context("starting the event reader")?;
    let session = Session {
        client,
        id: id.to_owned(),
        followed,
        events: Some(events_tx),
        source,
        approvals: Vec::new(),
        questions: Vec::new(),
    };
    let thread = spawn_named(format!("remote-session-{short}"), move || {
        session.run(&cmd_rx, &notes_rx);
        stop.store(true, Ordering::SeqCst);
        // Joins the reader, which sees `stop` within `POLL`, or a closed channel.
        drop(reader);
    })
    .context("starting the session thread")?;
    Ok(AgentHandle::from_parts(cmd_tx, events_rx, session_id, log, thread))
}

/// Opens the event stream of session `id` after `after`, as a WebSocket.
fn connect(client: &Client, id: &str, after: u64) -> Result<WebSocket<TcpStream>, Refused> {
    let url = client.url();
    let failed = |message: String| {
        Refused::Failed(ApiError { status: None, message, conflicts: Vec::new() })
    };
    let not_running = |err: &dyn std::fmt::Display| failed(client::not_running(url, err));
    let bare = url.host.trim_start_matches('[').trim_end_matches(']');
    let addr = (bare, url.port)
        .to_socket_addrs()
        .map_err(|err| not_running(&err))?
        .next()
        .ok_or_else(|| failed(format!("{} has no address", url.host)))?;
    let stream =
        TcpStream::connect_timeout(&addr, HANDSHAKE_TIMEOUT).map_err(|err| match err.kind() {
            std::io::ErrorKind::ConnectionRefused => Refused::Final(client::not_running(url, &err)),
            _ => not_running(&err),
        })?;
    let _ = stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
    let _ = stream.set_write_timeout(Some(HANDSHAKE_TIMEOUT));
    let path = format!("/api/sessions/{id}/events?after={after}");
    let mut request = format!("ws://{}:{}{path}", url.host, url.port)
        .into_client_request()
        .map_err(|err| failed(format!("the stream's address: {err}")))?;
    let bearer = format!("Bearer {}", client.token())
        .parse()
        .map_err(|_| failed("the token is not a valid header value".to_owned()))?;
    request.headers_mut().insert("Authorization", bearer);
    match tungstenite::client::client(request, stream) {
        Ok((socket, _)) => {
            let _ = socket.get_ref().set_read_timeout(Some(POLL));
            Ok(socket)
        }
        Err(HandshakeError::Failure(tungstenite::Error::Http(response))) => {
            let status = response.status().as_u16();
            let body = response.body().as_deref().map(String::from_utf8_lossy).unwrap_or_default();
            let refusal = client.refusal("GET", &path, status, &body);
            if matches!(status, 401 | 403 | 404) {
                Err(Refused::Final(refusal.message))
            } else {
                Err(Refused::Failed(refusal))
            }
        }
        Err(err) => Err(failed(format!("opening the event stream at {}: {err}", url.base()))),
    }
}

/// The `remote-events` thread's state.
struct Reader {
    client: Arc<Client>,
    id: String,
    /// The cursor and the permission mode, shared with the host.
    followed: Arc<Followed>,
    /// Past what the server sent at once when a running session was joined (a read found
    /// nothing more waiting); from the start for a session this client started.
    caught_up: bool,
    events: Sender<AgentEvent>,
    notes: Sender<Note>,
    stop: Arc<AtomicBool>,
    source: EventSource,
}

/// How reading one connection ended.
enum Ended {
    /// The UI left: stop.
    Left,
    /// The server closed the stream: the session stopped there.
    Closed,
    /// The connection broke: open it again from the cursor.
    Broken(String),
}

impl Reader {
    fn run(mut self, first: WebSocket<TcpStream>) {
        let mut socket = first;
        loop {
            let why = match self.read(&mut socket) {
                Ended::Left => return,
                Ended::Closed => "the server closed the session's event stream (the session or \
                                  the server stopped)"
                    .to_owned(),
                Ended::Broken(err) => match self.reconnect(&err) {
                    Ok(again) => {
                        socket = again;
                        continue;
                    }
                    Err(why) => why,
                },
            };
            if !self.stop.load(Ordering::SeqCst) {
                self.warn(format!("{why}; /new starts another session on the server"));
            }
            return;
        }
    }

    /// Reads one connection until it ends.
    fn read(&mut self, socket: &mut WebSocket<TcpStream>) -> Ended {
        loop {
            if self.stop.load(Ordering::SeqCst) {
                let _ = socket.close(None);
                let _ = socket.flush();
                return Ended::Left;
            }
            match socket.read() {
                Ok(Message::Text(text)) => {
                    if !self.take(text.as_str()) {
                        return Ended::Left;
                    }
                }
                Ok(Message::Close(_)) => return Ended::Closed,
                Ok(_) => {}
                Err(tungstenite::Error::Io(err))
                    if matches!(
                        err.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    self.caught_up = true;
                }
                Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => {
                    return Ended::Closed;
                }
                Err(err) => return Ended::Broken(err.to_string()),
            }
        }
    }

    /// Opens the stream again after the cursor, trying for `RECONNECT_PATIENCE`; `Err` says why
    /// it is lost.
    fn reconnect(&self, broke: &str) -> Result<WebSocket<TcpStream>, String> {
        let deadline = Instant::now() + RECONNECT_PATIENCE;
        let mut pause = Duration::from_millis(100);
        loop {
            if self.stop.load(Ordering::SeqCst) {
                return Err("the UI left".to_owned());
            }
            match connect(&self.client, &self.id, self.followed.cursor.load(Ordering::SeqCst)) {
                Ok(socket) => return Ok(socket),
                Err(Refused::Final(message)) => return Err(message),
                Err(Refused::Failed(err)) if Instant::now() >= deadline => {
                    return Err(format!(
                        "the connection to the server broke ({broke}) and could not be opened \
                         again: {err}"
                    ));
                }
                Err(Refused::Failed(_)) => {}
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }

    /// Takes one stream item; `false` when the UI is gone.
    fn take(&mut self, text: &str) -> bool {
        let item: Value = match serde_json::from_str(text) {
            Ok(item) => item,
            Err(err) => return self.warn(format!("an unreadable item in the event stream: {err}")),
        };
        let seen = self.followed.cursor.load(Ordering::SeqCst);
        let seq = item.get("seq").and_then(Value::as_u64).unwrap_or(seen + 1);
        if seq <= seen {
            // Seen before the connection was opened again.
            return true;
        }
        self.followed.cursor.store(seq, Ordering::SeqCst);
        if let Some(event) = item.get("event") {
            let mut event = match serde_json::from_value::<AgentEvent>(event.clone()) {
                Ok(event) => event,
                Err(err) => return self.warn(format!("an event this client cannot read: {err}")),
            };
            // The request's own reply stayed in the server; the UI answers a local one, whose
            // receiver the session thread gets first.
            let note = match &mut event.kind {
                AgentEventKind::ApprovalRequest(request) => {
                    let (reply, answer) = Reply::pair();
                    request.reply = reply;
                    Some(Note::Approval { id: request.id.to_string(), answer })
                }
                AgentEventKind::AskUser(request) => {
                    let (reply, answer) = Reply::pair();
                    request.reply = reply;
                    Some(Note::Question { id: request.id.to_string(), answer })
                }
                _ => None,
            };
            if let Some(note) = note {
                let _ = self.notes.send(note);
            }
            // A question answered (a plan review among them) or a turn's end may have changed
            // the permission mode in the server.
            let mode_may_change = match &event.kind {
                AgentEventKind::ToolFinished { view, .. } => view.kind == CallKind::Ask,
                AgentEventKind::TurnDone { .. } => true,
                _ => false,
            };
            let sent = self.events.send(event).is_ok();
            if mode_may_change
                && let Ok(facts) = self.client.get(&format!("/api/sessions/{}", self.id))
            {
                let mode = facts.get("permissionMode").and_then(Value::as_str).map(str::to_owned);
                self.followed.set_permission_mode(mode);
            }
            return sent;
        }
        if let Some(user) = item.get("user") {
            let input = match serde_json::from_value::<UserInput>(user["input"].clone()) {
                Ok(input) => input,
                Err(err) => return self.warn(format!("a prompt this client cannot read: {err}")),
            };
            if self.followed.is_own_echo(&text_of(&input.content)) {
                return true;
            }
            let steer = user["steer"].as_bool().unwrap_or(false);
            let kind = AgentEventKind::UserPrompt { input, steer };
            return self.events.send(AgentEvent { source: self.source.clone(), kind }).is_ok();
        }
        if let Some(gap) = item.get("gap") {
            let (from, to) = (&gap["from"], &gap["to"]);
            return self.warn(format!(
                "the server no longer keeps events {from} to {to} of this session; its log has \
                 them (`codecoder sessions show {}`)",
                self.id
            ));
        }
        let resolved = item
            .get("approvalResolved")
            .map(|resolved| (resolved, describe(resolved.get("decision"))))
            .or_else(|| {
                item.get("questionResolved").map(|resolved| (resolved, "answered".to_owned()))
            });
        if let Some((resolved, what)) = resolved
            && let Some(id) = resolved.get("id").and_then(Value::as_str)
        {
            let quiet = !self.caught_up;
            let _ = self.notes.send(Note::Resolved { id: id.to_owned(), what, quiet });
        }
        true
    }

    /// Shows `message` as a warning; `false` when the UI is gone.
    fn warn(&self, message: String) -> bool {
        self.events.send(warning(&self.source, message)).is_ok()
    }
}

/// `allow_once` → "allow once", for a decision as the stream gives it.
fn describe(decision: Option<&Value>) -> String {
    let name = match decision {
        Some(Value::String(name)) => name.as_str(),
        Some(decision) => decision.get("type").and_then(Value::as_str).unwrap_or("answered"),
        None => "answered",
    };
    name.replace('_', " ")
}

fn warning(source: &EventSource, message: String) -> AgentEvent {
    AgentEvent { source: source.clone(), kind: AgentEventKind::Warning { message } }
}

/// The `remote-session` thread's state.
struct Session {
    client: Arc<Client>,
    id: String,
    /// Where the prompts it sends are noted, for the reader to know their echo.
    followed: Arc<Followed>,
    /// Where warnings go; taken at `Shutdown` to send `ShutdownComplete` last.
    events: Option<Sender<AgentEvent>>,
    source: EventSource,
    /// Requests shown in the UI and not answered yet, by request id.
    approvals: Vec<(String, Receiver<ApprovalDecision>)>,
    questions: Vec<(String, Receiver<AskUserAnswer>)>,
}

/// What the session thread's select picked.
enum Picked {
    Command(Option<AgentCommand>),
    Note(Option<Note>),
    Approval(usize, Option<ApprovalDecision>),
    Question(usize, Option<AskUserAnswer>),
}

impl Session {
    /// Serves the UI's commands and answers until `Shutdown` or until the UI drops the handle.
    fn run(mut self, cmd: &Receiver<AgentCommand>, notes: &Receiver<Note>) {
        loop {
            match self.pick(cmd, notes) {
                Picked::Command(Some(AgentCommand::Shutdown)) => {
                    if let Some(events) = self.events.take() {
                        let _ = events.send(AgentEvent {
                            source: self.source.clone(),
                            kind: AgentEventKind::ShutdownComplete,
                        });
                    }
                    return;
                }
                Picked::Command(None) => return,
                Picked::Command(Some(command)) => self.forward(command),
                Picked::Note(Some(note)) => self.note(note),
                // The stream ended: as a kernel loop that stopped, this thread ends, so the UI
                // sees the events close and its commands fail (the UI keeps a command sender
                // of its own, so it does not wait for this one to close).
                Picked::Note(None) => return,
                Picked::Approval(index, answer) => {
                    let (id, _) = self.approvals.remove(index);
                    if let Some(decision) = answer {
                        self.answer_approval(&id, &decision);
                    }
                }
                Picked::Question(index, answer) => {
                    let (id, _) = self.questions.remove(index);
                    if let Some(answer) = answer {
                        self.answer_question(&id, &answer);
                    }
                }
            }
        }
    }

    /// Waits for the next command, note or answer (a closed channel counts: `None`).
    fn pick(&self, cmd: &Receiver<AgentCommand>, notes: &Receiver<Note>) -> Picked {
        /// What each of the select's operations (numbered from 0 as added) receives from.
        #[derive(Clone, Copy)]
        enum Target {
            Command,
            Note,
            Approval(usize),
            Question(usize),
        }
        let mut select = Select::new();
        let mut targets = Vec::new();
        select.recv(cmd);
        targets.push(Target::Command);
        select.recv(notes);
        targets.push(Target::Note);
        for (at, (_, answer)) in self.approvals.iter().enumerate() {
            select.recv(answer);
            targets.push(Target::Approval(at));
        }
        for (at, (_, answer)) in self.questions.iter().enumerate() {
            select.recv(answer);
            targets.push(Target::Question(at));
        }
        let operation = select.select();
        match targets.get(operation.index()).copied() {
            Some(Target::Note) => Picked::Note(operation.recv(notes).ok()),
            Some(Target::Approval(at)) if at < self.approvals.len() => {
                Picked::Approval(at, operation.recv(&self.approvals[at].1).ok())
            }
            Some(Target::Question(at)) if at < self.questions.len() => {
                Picked::Question(at, operation.recv(&self.questions[at].1).ok())
            }
            // The command channel is operation 0, and the others were matched above.
            _ => Picked::Command(operation.recv(cmd).ok()),
        }
    }

    fn note(&mut self, note: Note) {
        match note {
            Note::Approval { id, answer } => self.approvals.push((id, answer)),
            Note::Question { id, answer } => self.questions.push((id, answer)),
            Note::Resolved { id, what, quiet } => {
                // Still waiting here: another client answered first. Dropping the receiver
                // lets the UI's answer, if it comes, go nowhere.
                let before = self.approvals.len() + self.questions.len();
                self.approvals.retain(|(pending, _)| *pending != id);
                self.questions.retain(|(pending, _)| *pending != id);
                if self.approvals.len() + self.questions.len() < before && !quiet {
                    self.warn(format!("another client answered first: {what}"));
                }
            }
        }
    }

    fn forward(&mut self, command: AgentCommand) {
        let session = &self.id;
        if let AgentCommand::Submit(input) | AgentCommand::Steer(input) = &command
            && input.content.iter().any(|item| !matches!(item, ContentItem::Text { .. }))
        {
            self.warn(
                "only text reaches a remote session: images and attachments were left out"
                    .to_owned(),
            );
        }
        let (route, body, what) = match command {
            AgentCommand::Submit(input) => (
                format!("/api/sessions/{session}/prompt"),
                json!({ "text": text_of(&input.content) }),
                "sending the prompt",
            ),
            AgentCommand::Steer(input) => (
                format!("/api/sessions/{session}/steer"),
                json!({ "text": text_of(&input.content) }),
                "steering the turn",
            ),
            AgentCommand::Cancel => {
                (format!("/api/sessions/{session}/cancel"), json!({}), "cancelling the turn")
            }
            AgentCommand::Compact { focus } => {
                let text = match focus {
                    Some(focus) => format!("/compact {focus}"),
                    None => "/compact".to_owned(),
                };
                (format!("/api/sessions/{session}/prompt"), json!({ "text": text }), "compacting")
            }
            // The server's own agent logged the rewind before it answered `/undo` or
            // `/rewind`; the UI sends the record on as it would to a local agent.
            AgentCommand::Rewind(_) => return,
            // Handled by `run`.
            AgentCommand::Shutdown => return,
        };
        let prompt = body.get("text").and_then(Value::as_str).map(str::to_owned);
        // Noted before it is sent: the echo may come back before the answer does.
        let noted = prompt.is_some_and(|text| {
            !text.starts_with("/compact") && {
                self.followed.sent().push_back(text);
                true
            }
        });
        if let Err(err) = self.client.post(&route, &body) {
            if noted {
                self.followed.sent().pop_back();
            }
            self.warn(format!("{what}: {err}"));
        }
    }

    fn answer_approval(&mut self, id: &str, decision: &ApprovalDecision) {
        // A withdrawn request needs no answer: the server dropped it with its turn.
        if *decision == ApprovalDecision::Cancelled {
            return;
        }
        let body = json!({ "decision": decision });
        self.post_answer(&format!("/api/approvals/{id}"), &body);
    }

    fn answer_question(&mut self, id: &str, answer: &AskUserAnswer) {
        let body = match answer {
            AskUserAnswer::Answer { text } => json!({ "text": text }),
            AskUserAnswer::Declined | AskUserAnswer::Unavailable { .. } => {
                json!({ "decline": true })
            }
        };
        self.post_answer(&format!("/api/questions/{id}"), &body);
    }

    fn post_answer(&mut self, route: &str, body: &Value) {
        match self.client.post(route, body) {
            Ok(_) => {}
            Err(ApiError { status: Some(409), .. }) => {
                self.warn("another client answered first; its answer stands".to_owned());
            }
            Err(err) => self.warn(format!("sending the answer: {err}")),
        }
    }

    fn warn(&self, message: String) {
        if let Some(events) = &self.events {
            let _ = events.send(warning(&self.source, message));
        }
    }
}

/// The text of the person's input, its text items joined.
fn text_of(content: &[ContentItem]) -> String {
    content
        .iter()
        .filter_map(|item| match item {
            ContentItem::Text { text } => Some(text.as_str()),
            ContentItem::Image(_) | ContentItem::BlobRef(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}
