//! The routes behind the guard: the page and its files, the server's facts (`/api/server`:
//! the project new sessions open on), the session list (the index), starting and driving
//! hosted sessions, their event streams (server-sent events with a resumable `seq` cursor) and
//! their pending approvals and questions. The JSON shapes are documented in the crate's docs (lib.rs).
//!
//! Invariants: a route only reads the request and answers; sessions are started and driven
//! only through `Hub`; a new session's sandbox and approval policy come from the server's own
//! command line and config, never from a request.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use codecoder_app::{SessionSummary, Start};
use codecoder_protocol::{AgentCommand, ApprovalDecision, AskUserAnswer, UserInput};
use serde::Deserialize;
use serde_json::{Value, json};

use tungstenite::Message;

use crate::http::{self, Request, Response};
use crate::hub::{Answer, Answered};
use crate::{Connection, Shared};

/// How long an event stream waits for an event before it sends a keep-alive (an SSE comment,
/// a WebSocket ping), which is also how it finds out that its reader left.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// The page at `/` and its script and style, embedded: the page works offline and loads
/// nothing from elsewhere (the CSP allows only this server's own files).
const STATIC: &[(&str, &str, &str)] = &[
    ("", "text/html; charset=utf-8", include_str!("web/index.html")),
    ("app.js", "text/javascript; charset=utf-8", include_str!("web/app.js")),
    ("app.css", "text/css; charset=utf-8", include_str!("web/app.css")),
];

/// Answers `request` on `out`; returns the status sent.
pub(crate) fn route(shared: &Shared, request: &Request, stream: &mut dyn Connection) -> u16 {
    let segments: Vec<&str> = request.path.trim_matches('/').split('/').collect();
    let response = match (request.method.as_str(), segments.as_slice()) {
        ("GET", [name]) if STATIC.iter().any(|(file, ..)| file == name) => {
            let (_, content_type, text) =
                STATIC.iter().find(|(file, ..)| file == name).copied().unwrap_or_default();
            Response {
                status: 200,
                headers: vec![("Content-Type", content_type.to_owned())],
                body: text.as_bytes().to_vec(),
            }
        }
        ("GET", ["api", "server"]) => Response::json(
            200,
            &json!({ "cwd": shared.default_cwd, "version": env!("CARGO_PKG_VERSION") }),
        ),
        ("GET", ["api", "sessions"]) => list(shared, request),
        ("POST", ["api", "sessions"]) => start(shared, request),
        ("POST", ["api", "sessions", id, "prompt"]) => prompt(shared, id, request, false),
        ("POST", ["api", "sessions", id, "steer"]) => prompt(shared, id, request, true),
        ("POST", ["api", "sessions", id, "cancel"]) => match shared.hub.get(id) {
            Some(live) if live.send(AgentCommand::Cancel) => accepted(),
            Some(_) => Response::error(409, "the session has stopped"),
            None => not_hosted(id),
        },
        ("GET", ["api", "sessions", id, "pending"]) => match shared.hub.get(id) {
            Some(live) => {
                let (approvals, questions) = live.pending();
                Response::json(200, &json!({ "approvals": approvals, "questions": questions }))
            }
            None => not_hosted(id),
        },
        ("GET", ["api", "sessions", id, "events"]) => return events(shared, id, request, stream),
        ("GET", ["api", "sessions", id, "history"]) => history(shared, id),
        ("POST", ["api", "approvals", id]) => answer(shared, id, request),
        ("POST", ["api", "questions", id]) => reply(shared, id, request),
        (_, ["api", ..]) | (_, [""]) => Response::error(405, "method not allowed here"),
        _ => Response::error(404, "no such route"),
    };
    let _ = response.write_to(stream);
    response.status
}

fn accepted() -> Response {
    Response::json(202, &json!({ "ok": true }))
}

fn not_hosted(id: &str) -> Response {
    Response::error(404, &format!("session {id} is not hosted by this server"))
}

/// A JSON body as `T`, or the 400 that says why not. An empty body is `{}`.
fn body<T: for<'de> Deserialize<'de>>(request: &Request) -> Result<T, Response> {
    let bytes: &[u8] = if request.body.is_empty() { b"{}" } else { &request.body };
    serde_json::from_slice(bytes)
        .map_err(|err| Response::error(400, &format!("invalid JSON body: {err}")))
}

fn list(shared: &Shared, request: &Request) -> Response {
    let cwd = request.query_param("cwd").filter(|cwd| !cwd.is_empty());
    let query = request.query_param("q").unwrap_or_default().to_lowercase();
    // Notes about the index (rebuilt, kept in memory) have no place in the answer.
    let mut warnings = Vec::new();
    let listed =
        match codecoder_app::list_sessions(shared.home(), cwd.as_deref(), None, &mut warnings) {
            Ok(listed) => listed,
            Err(err) => return Response::error(500, &format!("reading the session index: {err}")),
        };
    let sessions: Vec<Value> = listed
        .sessions
        .iter()
        .filter(|s| s.problem.is_none())
        .filter(|s| {
            query.is_empty()
                || s.title.to_lowercase().contains(&query)
                || s.id.starts_with(&query)
                || s.cwd.to_lowercase().contains(&query)
        })
        .filter(|s| !is_subagent(s))
        .map(|s| {
            json!({
                "id": s.id,
                "title": s.title,
                "cwd": s.cwd,
                "model": s.model,
                "provider": s.provider,
                "createdMs": s.created_ms,
                "updatedMs": s.updated_ms,
                "parent": s.parent,
                "live": shared.hub.is_live(&s.id),
            })
        })
        .collect();
    Response::json(200, &json!({ "sessions": sessions }))
}

/// Whether a log is a subagent's: its `session_meta` (the first line) names a parent call.
/// Only logs the index gives a parent (forks and subagents) are read.
fn is_subagent(summary: &SessionSummary) -> bool {
    if summary.parent.is_none() {
        return false;
    }
    let Ok(file) = fs_err::File::open(&summary.path) else { return false };
    let mut first = String::new();
    let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(file), &mut first);
    serde_json::from_str::<Value>(&first)
        .ok()
        .and_then(|meta| meta.get("parent").cloned())
        .is_some_and(|parent| !parent.is_null())
}

/// A session's history, replayed from its log by the runtime (the one interpreter of the log):
/// `{"events": [{seq, event} | {seq, user} | {seq, approval}]}`, `seq` being the record's.
fn history(shared: &Shared, id: &str) -> Response {
    use codecoder_app::history::{
        self, BuiltinViewer, Detail, HistoryEvent, ReplayConfig, Rewound,
    };
    let mut warnings = Vec::new();
    let listed = match codecoder_app::list_sessions(shared.home(), None, None, &mut warnings) {
        Ok(listed) => listed,
        Err(err) => return Response::error(500, &format!("reading the session index: {err}")),
    };
    let Some(summary) = listed.sessions.iter().find(|s| s.id == id) else {
        return Response::error(404, &format!("no session {id} in the index"));
    };
    let loaded = match history::load(&summary.path) {
        Ok(loaded) => loaded,
        Err(err) => return Response::error(500, &format!("reading the session's log: {err}")),
    };
    let viewer = BuiltinViewer::new();
    let config =
        ReplayConfig { viewer: &viewer, detail: Detail::Conversation, rewound: Rewound::Skip };
    let mut events = Vec::new();
    history::replay(&loaded, &config, &mut |replayed| {
        let seq = replayed.seq;
        let item = match replayed.event {
            HistoryEvent::Agent(kind) => {
                let event = codecoder_protocol::AgentEvent { source: replayed.source, kind };
                json!({ "seq": seq, "event": event })
            }
            HistoryEvent::User(input) => json!({ "seq": seq, "user": input }),
            HistoryEvent::Approval(approval) => json!({
                "seq": seq,
                "approval": {
                    "callId": approval.call_id,
                    "decision": approval.decision,
                    "decidedBy": approval.decided_by,
                    "permissionKeys": approval.permission_keys,
                },
            }),
            HistoryEvent::Rewind(_) | HistoryEvent::Log(_) => return,
        };
        events.push(item);
    });
    Response::json(200, &json!({ "id": id, "cwd": summary.cwd, "events": events }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StartBody {
    cwd: Option<PathBuf>,
    prompt: Option<String>,
    /// An indexed session to continue (its own project).
    resume: Option<String>,
    /// An indexed session to copy and continue (the original is untouched).
    fork: Option<String>,
}

fn start(shared: &Shared, request: &Request) -> Response {
    let body: StartBody = match body(request) {
        Ok(start) => start,
        Err(response) => return response,
    };
    let (start, earlier) = match (body.resume, body.fork) {
        (None, None) => (Start::New, None),
        (Some(id), None) => (Start::Resume(Some(id.clone())), Some(id)),
        (None, Some(id)) => (Start::Fork(id.clone()), Some(id)),
        (Some(_), Some(_)) => return Response::error(400, "give `resume` or `fork`, not both"),
    };
    let cwd = match (&earlier, body.cwd) {
        (None, cwd) => cwd.unwrap_or_else(|| shared.default_cwd.clone()),
        (Some(_), Some(_)) => {
            return Response::error(400, "a resumed or forked session keeps its own `cwd`");
        }
        // Only a session id the index knows, never a path: a request picks no file.
        (Some(id), None) => {
            if matches!(start, Start::Resume(_)) && shared.hub.is_live(id) {
                return Response::error(409, &format!("session {id} is already hosted here"));
            }
            let mut warnings = Vec::new();
            let listed = codecoder_app::list_sessions(shared.home(), None, None, &mut warnings);
            let known = listed.ok().and_then(|listed| {
                listed.sessions.into_iter().find(|s| &s.id == id && s.problem.is_none())
            });
            match known {
                Some(summary) => PathBuf::from(summary.cwd),
                None => return Response::error(404, &format!("no session {id} in the index")),
            }
        }
    };
    if !cwd.is_absolute() {
        return Response::error(400, "`cwd` must be an absolute path");
    }
    let cwd = match fs_err::canonicalize(&cwd) {
        Ok(cwd) if cwd.is_dir() => cwd,
        Ok(_) => return Response::error(400, "`cwd` is not a directory"),
        Err(err) => return Response::error(400, &format!("`cwd`: {err}")),
    };
    match shared.hub.start(&cwd, start, body.prompt.filter(|p| !p.trim().is_empty())) {
        Ok(live) => Response::json(201, &json!({ "id": live.id, "cwd": live.cwd })),
        Err(err) if err.is_usage() => Response::error(409, &err.to_string()),
        Err(err) => Response::error(500, &err.to_string()),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PromptBody {
    text: String,
}

/// A prompt: a turn of its own (queued while one runs), or with `steer` input added to the
/// running turn at its next step (a turn of its own when idle).
fn prompt(shared: &Shared, id: &str, request: &Request, steer: bool) -> Response {
    let prompt: PromptBody = match body(request) {
        Ok(prompt) => prompt,
        Err(response) => return response,
    };
    if prompt.text.trim().is_empty() {
        return Response::error(400, "`text` is empty");
    }
    match shared.hub.get(id) {
        Some(live) => {
            let input = UserInput::text(prompt.text);
            let command =
                if steer { AgentCommand::Steer(input) } else { AgentCommand::Submit(input) };
            if live.send(command) {
                accepted()
            } else {
                Response::error(409, "the session has stopped")
            }
        }
        None => not_hosted(id),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerBody {
    decision: Value,
}

fn answer(shared: &Shared, request_id: &str, request: &Request) -> Response {
    let answer: AnswerBody = match body(request) {
        Ok(answer) => answer,
        Err(response) => return response,
    };
    // A bare string names a decision without fields (`"allow_once"`).
    let decision = match answer.decision {
        Value::String(name) => json!({ "type": name }),
        other => other,
    };
    let decision: ApprovalDecision = match serde_json::from_value(decision) {
        Ok(ApprovalDecision::Cancelled) | Err(_) => {
            return Response::error(
                400,
                "`decision` is one of \"allow_once\", \"allow_for_session\", \"deny\", or \
                 {\"type\": \"deny_with_feedback\", \"feedback\": TEXT}",
            );
        }
        Ok(decision) => decision,
    };
    match shared.hub.answer(request_id, &Answer::Approval(decision)) {
        Answered::Taken => Response::json(200, &json!({ "ok": true })),
        Answered::NotPending => {
            Response::error(409, "no such pending approval: answered already, or withdrawn")
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplyBody {
    text: Option<String>,
    #[serde(default)]
    decline: bool,
}

fn reply(shared: &Shared, request_id: &str, request: &Request) -> Response {
    let reply: ReplyBody = match body(request) {
        Ok(reply) => reply,
        Err(response) => return response,
    };
    let answer = match (reply.text, reply.decline) {
        (Some(text), false) => AskUserAnswer::Answer { text },
        (None, true) => AskUserAnswer::Declined,
        _ => return Response::error(400, "send {\"text\": ANSWER} or {\"decline\": true}"),
    };
    match shared.hub.answer(request_id, &Answer::Question(answer)) {
        Answered::Taken => Response::json(200, &json!({ "ok": true })),
        Answered::NotPending => {
            Response::error(409, "no such pending question: answered already, or withdrawn")
        }
    }
}

/// Where an event stream goes: server-sent events, or WebSocket text frames (one record
/// each) after an upgrade.
enum Sink<'a> {
    Sse(&'a mut dyn Connection),
    WebSocket(Box<tungstenite::WebSocket<&'a mut dyn Connection>>),
}

impl Sink<'_> {
    /// Sends `events`, the ones after `cursor`, and moves the cursor; `false` when the reader
    /// is gone.
    fn send(&mut self, events: &[Value], cursor: &mut u64) -> bool {
        match self {
            Self::Sse(out) => {
                let mut text = String::new();
                for event in events {
                    *cursor += 1;
                    text.push_str(&format!("id: {cursor}\ndata: {event}\n\n"));
                }
                out.write_all(text.as_bytes()).and_then(|()| out.flush()).is_ok()
            }
            Self::WebSocket(socket) => {
                for event in events {
                    *cursor += 1;
                    if socket.write(Message::text(event.to_string())).is_err() {
                        return false;
                    }
                }
                socket.flush().is_ok()
            }
        }
    }

    /// Tells the reader the stream is alive (and finds out whether the reader is).
    fn keep_alive(&mut self) -> bool {
        match self {
            Self::Sse(out) => out.write_all(b": keep-alive\n\n").and_then(|()| out.flush()).is_ok(),
            Self::WebSocket(socket) => socket.send(Message::Ping(Vec::new().into())).is_ok(),
        }
    }

    /// Ends the stream as its protocol says.
    fn close(self) {
        if let Self::WebSocket(mut socket) = self {
            let _ = socket.close(None);
            let _ = socket.flush();
        }
    }
}

/// Streams a session's events from the cursor on, until the session stops, the reader leaves
/// or the server stops: over a WebSocket when the request asks to upgrade, else as
/// server-sent events. Returns the status sent.
fn events(shared: &Shared, id: &str, request: &Request, stream: &mut dyn Connection) -> u16 {
    let refuse = |stream: &mut dyn Connection, response: Response| {
        let _ = response.write_to(stream);
        response.status
    };
    let Some(live) = shared.hub.get(id) else {
        return refuse(stream, not_hosted(id));
    };
    let cursor = request
        .query_param("after")
        .or_else(|| request.header("last-event-id").map(str::to_owned))
        .map(|after| after.trim().parse::<u64>());
    let mut cursor = match cursor {
        None => 0,
        Some(Ok(after)) => after,
        Some(Err(_)) => return refuse(stream, Response::error(400, "`after` is not a number")),
    };
    let upgrade = request
        .header("upgrade")
        .is_some_and(|value| value.trim().eq_ignore_ascii_case("websocket"));
    let (mut sink, status) = if upgrade {
        let key = request.header("sec-websocket-key").map(str::trim).unwrap_or_default();
        if key.is_empty() || request.header("sec-websocket-version").map(str::trim) != Some("13") {
            return refuse(
                stream,
                Response::error(400, "a WebSocket upgrade needs Sec-WebSocket-Key and version 13"),
            );
        }
        if http::write_switching_protocols(stream, key).is_err() {
            return 101;
        }
        let socket = tungstenite::WebSocket::from_raw_socket(
            stream,
            tungstenite::protocol::Role::Server,
            None,
        );
        (Sink::WebSocket(Box::new(socket)), 101)
    } else {
        if http::write_event_stream_head(stream).is_err() {
            return 200;
        }
        (Sink::Sse(stream), 200)
    };
    loop {
        let batch = live.events_after(cursor, KEEPALIVE);
        let alive = if batch.events.is_empty() {
            if batch.finished {
                break;
            }
            sink.keep_alive()
        } else {
            sink.send(&batch.events, &mut cursor)
        };
        if !alive {
            return status;
        }
        if shared.stop.load(std::sync::atomic::Ordering::SeqCst) && batch.events.is_empty() {
            break;
        }
    }
    sink.close();
    status
}
