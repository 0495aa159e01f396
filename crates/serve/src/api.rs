//! The routes behind the guard: the page and its files, the server's facts (`/api/server`:
//! the project new sessions open on), the projects and the session list (the index), starting,
//! driving and closing hosted sessions (prompts and slash commands, undo, rewind, the
//! permission mode), `@file` completion, their event streams (server-sent events or a WebSocket
//! with a resumable `seq` cursor), their pending approvals and questions, and the API's own
//! schema. The JSON shapes are the types of `types.rs`.
//!
//! Invariants: a route only reads the request and answers; sessions are started and driven
//! only through `Hub`; a new session's sandbox and approval policy come from the server's own
//! command line and config, never from a request (a request may pick the model, the reasoning
//! effort and a permission mode, none of which relaxes them); a path in an answer is relative
//! to a session's directory, and no request names a file outside it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use codecoder_app::{PermissionMode, RewindOutcome, RewindRequest, SessionSummary, Start};
use codecoder_protocol::{
    AgentCommand, ApprovalDecision, AskUserAnswer, ReasoningEffort, RewindRecord, UserInput,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use tungstenite::Message;

use crate::http::{self, Request, Response};
use crate::hub::{Answer, Answered, Live, SessionChoices};
use crate::types::{
    AnswerBody, CommandInfo, CommandKind, CommandRan, Commands, Empty, ErrorBody, Files, History,
    Mode, Pending, Project, Projects, PromptBody, ReplyBody, RewindBody, ServerInfo, SessionInfo,
    SessionList, StartBody, Started, UndoBody,
};
use crate::{Connection, Shared};

/// How long an event stream waits for an event before it sends a keep-alive (an SSE comment,
/// a WebSocket ping), which is also how it finds out that its reader left.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// How long an undo or rewind waits for the session's agent to log its record.
const REWIND_LOGGED: Duration = Duration::from_secs(5);
/// Paths `/files` answers with at most.
const MAX_FILE_ANSWERS: usize = 50;
/// Files `/files` looks at at most (a huge tree is answered from its first part).
const MAX_FILES_WALKED: usize = 200_000;

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
        ("GET", ["api", "schema"]) => Response::json(200, &crate::types::schema()),
        ("GET", ["api", "server"]) => typed(
            200,
            &ServerInfo {
                cwd: shared.default_cwd.clone(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
            },
        ),
        ("GET", ["api", "projects"]) => projects(shared),
        ("GET", ["api", "sessions"]) => list(shared, request),
        ("POST", ["api", "sessions"]) => start(shared, request),
        ("GET", ["api", "sessions", id]) => session(shared, id),
        ("POST", ["api", "sessions", id, "prompt"]) => prompt(shared, id, request, false),
        ("POST", ["api", "sessions", id, "steer"]) => prompt(shared, id, request, true),
        ("POST", ["api", "sessions", id, "cancel"]) => {
            match (body::<Empty>(request), shared.hub.get(id)) {
                (Err(response), _) => response,
                (Ok(_), Some(live)) if live.send(AgentCommand::Cancel) => accepted(),
                (Ok(_), Some(_)) => Response::error(409, "the session has stopped"),
                (Ok(_), None) => not_hosted(id),
            }
        }
        ("POST", ["api", "sessions", id, "close"]) => match body::<Empty>(request) {
            Err(response) => response,
            Ok(_) if shared.hub.close(id) => typed(200, &crate::types::Accepted { ok: true }),
            Ok(_) => not_hosted(id),
        },
        ("POST", ["api", "sessions", id, "undo"]) => {
            match (body::<UndoBody>(request), shared.hub.get(id)) {
                (Err(response), _) => response,
                (Ok(undo), Some(live)) => answered(rewind(shared, &live, None, undo.force)),
                (Ok(_), None) => not_hosted(id),
            }
        }
        ("POST", ["api", "sessions", id, "rewind"]) => {
            match (body::<RewindBody>(request), shared.hub.get(id)) {
                (Err(response), _) => response,
                (Ok(back), Some(live)) => {
                    answered(rewind(shared, &live, Some(back.turns), back.force))
                }
                (Ok(_), None) => not_hosted(id),
            }
        }
        ("POST", ["api", "sessions", id, "mode"]) => {
            match (body::<Mode>(request), shared.hub.get(id)) {
                (Err(response), _) => response,
                (Ok(mode), Some(live)) => {
                    live.controls.set_permission_mode(mode.permission_mode);
                    typed(200, &Mode { permission_mode: live.permission_mode() })
                }
                (Ok(_), None) => not_hosted(id),
            }
        }
        ("GET", ["api", "sessions", id, "files"]) => files(shared, id, request),
        ("GET", ["api", "sessions", id, "commands"]) => match shared.hub.get(id) {
            Some(live) => typed(200, &commands(&live)),
            None => not_hosted(id),
        },
        ("GET", ["api", "sessions", id, "pending"]) => match shared.hub.get(id) {
            Some(live) => {
                let (approvals, questions) = live.pending();
                typed(200, &Pending { approvals, questions })
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

/// A JSON answer from one of the API's types.
fn typed<T: Serialize>(status: u16, body: &T) -> Response {
    match serde_json::to_value(body) {
        Ok(value) => Response::json(status, &value),
        Err(err) => Response::error(500, &format!("encoding the answer: {err}")),
    }
}

fn accepted() -> Response {
    typed(202, &crate::types::Accepted { ok: true })
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

/// The index's sessions, subagents' logs and unreadable ones left out, newest first.
fn indexed(shared: &Shared, cwd: Option<&str>) -> Result<Vec<SessionSummary>, Response> {
    // Notes about the index (rebuilt, kept in memory) have no place in the answer.
    let mut warnings = Vec::new();
    match codecoder_app::list_sessions(shared.home(), cwd, None, &mut warnings) {
        Ok(listed) => Ok(listed
            .sessions
            .into_iter()
            .filter(|s| s.problem.is_none())
            .filter(|s| !codecoder_app::is_subagent_log(s))
            .collect()),
        Err(err) => Err(Response::error(500, &format!("reading the session index: {err}"))),
    }
}

fn list(shared: &Shared, request: &Request) -> Response {
    let cwd = request.query_param("cwd").filter(|cwd| !cwd.is_empty());
    let query = request.query_param("q").unwrap_or_default().to_lowercase();
    let listed = match indexed(shared, cwd.as_deref()) {
        Ok(listed) => listed,
        Err(response) => return response,
    };
    let sessions = listed
        .into_iter()
        .filter(|s| {
            query.is_empty()
                || s.title.to_lowercase().contains(&query)
                || s.id.starts_with(&query)
                || s.cwd.to_lowercase().contains(&query)
        })
        .map(|s| crate::types::SessionSummary {
            live: shared.hub.is_live(&s.id),
            id: s.id,
            title: s.title,
            cwd: s.cwd,
            model: s.model,
            provider: s.provider,
            created_ms: s.created_ms,
            updated_ms: s.updated_ms,
            parent: s.parent,
        })
        .collect();
    typed(200, &SessionList { sessions })
}

/// The directories the index knows, newest first, after the server's own (`-C`).
fn projects(shared: &Shared) -> Response {
    let listed = match indexed(shared, None) {
        Ok(listed) => listed,
        Err(response) => return response,
    };
    let own = shared.default_cwd.to_string_lossy().into_owned();
    let mut projects = vec![Project { cwd: own, sessions: 0, updated_ms: None }];
    for summary in listed {
        match projects.iter_mut().find(|p| p.cwd == summary.cwd) {
            Some(project) => {
                project.sessions += 1;
                project.updated_ms = project.updated_ms.max(Some(summary.updated_ms));
            }
            None => projects.push(Project {
                cwd: summary.cwd,
                sessions: 1,
                updated_ms: Some(summary.updated_ms),
            }),
        }
    }
    projects[1..].sort_by(|a, b| b.updated_ms.cmp(&a.updated_ms).then_with(|| a.cwd.cmp(&b.cwd)));
    typed(200, &Projects { projects })
}

/// One session: what the runtime started it with when it is hosted here, else the index's.
fn session(shared: &Shared, id: &str) -> Response {
    let summary = match indexed(shared, None) {
        Ok(listed) => listed.into_iter().find(|s| s.id == id),
        Err(response) => return response,
    };
    let info = match (shared.hub.get(id), summary) {
        (Some(live), summary) => {
            let modes = live.controls.modes();
            SessionInfo {
                id: live.id.clone(),
                cwd: live.cwd.clone(),
                title: summary.map(|s| s.title).unwrap_or_default(),
                live: true,
                model: live.model.clone(),
                provider: live.provider.clone(),
                context_window: Some(live.context_window),
                permission_mode: Some(live.permission_mode()),
                approval: Some(modes.approval),
                sandbox: Some(modes.sandbox),
            }
        }
        (None, Some(summary)) => SessionInfo {
            id: summary.id,
            cwd: summary.cwd,
            title: summary.title,
            live: false,
            model: summary.model,
            provider: summary.provider,
            context_window: None,
            permission_mode: None,
            approval: None,
            sandbox: None,
        },
        (None, None) => return Response::error(404, &format!("no session {id} in the index")),
    };
    typed(200, &info)
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
    typed(200, &History { id: id.to_owned(), cwd: summary.cwd.clone(), events })
}

fn start(shared: &Shared, request: &Request) -> Response {
    let body: StartBody = match body(request) {
        Ok(start) => start,
        Err(response) => return response,
    };
    if let Some(effort) = &body.effort
        && effort.parse::<ReasoningEffort>().is_err()
    {
        return Response::error(
            400,
            &format!("`effort` {effort:?} is not one of none, minimal, low, medium, high, xhigh"),
        );
    }
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
        // A resumed or forked session's directory comes from its log, not the request: say so
        // rather than blame a `cwd` the request never sent.
        _ if earlier.is_some() => {
            return Response::error(
                400,
                &format!("the session's project directory {} no longer exists", cwd.display()),
            );
        }
        Ok(_) => return Response::error(400, "`cwd` is not a directory"),
        Err(err) => return Response::error(400, &format!("`cwd`: {err}")),
    };
    let choices = SessionChoices {
        prompt: body.prompt.filter(|p| !p.trim().is_empty()),
        model: body.model.filter(|m| !m.trim().is_empty()),
        effort: body.effort,
        permission_mode: body.permission_mode,
    };
    match shared.hub.start(&cwd, start, choices) {
        Ok(live) => typed(201, &Started { id: live.id.clone(), cwd: live.cwd.clone() }),
        Err(err) if err.is_usage() => Response::error(409, &err.to_string()),
        Err(err) => Response::error(500, &err.to_string()),
    }
}

/// A prompt: a turn of its own (queued while one runs), or with `steer` input added to the
/// running turn at its next step (a turn of its own when idle). A prompt starting with `/name`
/// is a slash command.
fn prompt(shared: &Shared, id: &str, request: &Request, steer: bool) -> Response {
    let prompt: PromptBody = match body(request) {
        Ok(prompt) => prompt,
        Err(response) => return response,
    };
    if prompt.text.trim().is_empty() {
        return Response::error(400, "`text` is empty");
    }
    let Some(live) = shared.hub.get(id) else {
        return not_hosted(id);
    };
    let text = prompt.text;
    let trimmed = text.trim();
    // `//…` is text that starts with a slash, as in the TUI.
    let input = if !steer && trimmed.starts_with('/') && !trimmed.starts_with("//") {
        let (name, arg) = match trimmed[1..].split_once(char::is_whitespace) {
            Some((name, arg)) => (name, arg.trim()),
            None => (&trimmed[1..], ""),
        };
        match live.commands.iter().find(|(known, ..)| known == name).map(|(_, _, kind)| *kind) {
            Some("builtin") => return builtin(shared, &live, name, arg),
            // A skill is activated as `$name` activates it, with the rest as its arguments.
            Some("skill") => format!("${name} {arg}").trim_end().to_owned(),
            // A custom prompt is expanded by the runtime from the text as typed.
            Some(_) => text.clone(),
            None => {
                return Response::error(
                    400,
                    &format!(
                        "unknown command /{name}: GET /api/sessions/{id}/commands lists them \
                         (start the text with // to send it as it is)"
                    ),
                );
            }
        }
    } else {
        text.clone()
    };
    let input = UserInput::text(input);
    let command = if steer { AgentCommand::Steer(input) } else { AgentCommand::Submit(input) };
    if live.send(command) { accepted() } else { Response::error(409, "the session has stopped") }
}

/// Runs one of the server's own slash commands (`hub::BUILTIN_COMMANDS`).
fn builtin(shared: &Shared, live: &Live, name: &str, arg: &str) -> Response {
    let ran = |rewound, permission_mode| CommandRan {
        command: name.to_owned(),
        rewound,
        permission_mode,
    };
    match name {
        "undo" => match arg {
            "" | "force" => match rewind(shared, live, None, arg == "force") {
                Ok(record) => typed(200, &ran(Some(record), None)),
                Err(response) => response,
            },
            other => {
                Response::error(400, &format!("/undo takes `force` or nothing, not `{other}`"))
            }
        },
        "rewind" => {
            let mut words = arg.split_whitespace();
            let turns = words.next().and_then(|n| n.parse::<u32>().ok());
            let force = match words.next() {
                None => false,
                Some("force") => true,
                Some(_) => return Response::error(400, "usage: /rewind N [force]"),
            };
            match turns {
                Some(turns) if words.next().is_none() => {
                    match rewind(shared, live, Some(turns), force) {
                        Ok(record) => typed(200, &ran(Some(record), None)),
                        Err(response) => response,
                    }
                }
                _ => Response::error(400, "usage: /rewind N [force]"),
            }
        }
        "compact" => {
            let focus = (!arg.is_empty()).then(|| arg.to_owned());
            if live.send(AgentCommand::Compact { focus }) {
                typed(202, &ran(None, None))
            } else {
                Response::error(409, "the session has stopped")
            }
        }
        "plan" => {
            let mode = if arg == "off" { PermissionMode::Default } else { PermissionMode::Plan };
            live.controls.set_permission_mode(mode);
            if !arg.is_empty() && arg != "off" {
                let sent = live.send(AgentCommand::Submit(UserInput::text(arg.to_owned())));
                if !sent {
                    return Response::error(409, "the session has stopped");
                }
            }
            typed(200, &ran(None, Some(live.permission_mode())))
        }
        other => Response::error(400, &format!("unknown command /{other}")),
    }
}

/// `/undo` (`turns: None`: the files of the newest turn not undone yet) or `/rewind N` (the
/// conversation and the files back to before the Nth newest prompt), as the TUI does: the
/// runtime restores the files and the session's agent logs the `rewind` record.
fn rewind(
    shared: &Shared,
    live: &Live,
    turns: Option<u32>,
    force: bool,
) -> Result<RewindRecord, Response> {
    if live.running() {
        return Err(Response::error(409, "a turn is running: cancel it first"));
    }
    let Some(log) = &live.log else {
        return Err(Response::error(409, "this session keeps no log: nothing to restore"));
    };
    let turn = match turns {
        None => None,
        Some(0) => return Err(Response::error(400, "`turns` is at least 1")),
        Some(turns) => {
            let points = match codecoder_app::rewind_points(log) {
                Ok(points) => points,
                Err(err) => return Err(Response::error(500, &err.to_string())),
            };
            let Some(index) = points.len().checked_sub(turns as usize) else {
                return Err(Response::error(
                    409,
                    &format!("only {} prompt(s) can be rewound past", points.len()),
                ));
            };
            Some(points[index].turn)
        }
    };
    let request = RewindRequest { turn, conversation: turn.is_some(), files: true, force };
    match codecoder_app::rewind(shared.home(), log, &request) {
        Ok(RewindOutcome::Conflicts(paths)) => Err(typed(
            409,
            &ErrorBody {
                error: "nothing restored: these files changed outside codecoder since; send \
                        `force: true` to restore them anyway (losing those changes)"
                    .to_owned(),
                conflicts: Some(paths.iter().map(|p| relative(p, &live.cwd)).collect()),
            },
        )),
        Ok(RewindOutcome::Done { record, .. }) => {
            let before = rewinds_logged(log);
            if !live.send(AgentCommand::Rewind(record.clone())) {
                return Err(Response::error(409, "the session has stopped"));
            }
            // The answer waits for the agent to log the record, so the next undo or rewind
            // reads a log that has it (the kernel says nothing when it logs one).
            let deadline = std::time::Instant::now() + REWIND_LOGGED;
            while rewinds_logged(log) <= before && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(record)
        }
        Err(err) if err.is_usage() || err.is_nothing_to_undo() => {
            Err(Response::error(409, &err.to_string()))
        }
        Err(err) => Err(Response::error(500, &err.to_string())),
    }
}

/// A rewind's answer: the `rewind` record, or the refusal.
fn answered(rewound: Result<RewindRecord, Response>) -> Response {
    match rewound {
        Ok(record) => typed(200, &record),
        Err(response) => response,
    }
}

/// The `rewind` records in a log.
fn rewinds_logged(log: &Path) -> usize {
    fs_err::read_to_string(log).map_or(0, |text| text.matches("\"type\":\"rewind\"").count())
}

/// `path` relative to `cwd` when it is inside it.
fn relative(path: &Path, cwd: &str) -> String {
    path.strip_prefix(cwd).unwrap_or(path).to_string_lossy().into_owned()
}

/// The slash commands of a hosted session.
fn commands(live: &Live) -> Commands {
    let commands = live
        .commands
        .iter()
        .map(|(name, description, kind)| CommandInfo {
            name: name.clone(),
            description: description.clone(),
            kind: match *kind {
                "builtin" => CommandKind::Builtin,
                "skill" => CommandKind::Skill,
                _ => CommandKind::Prompt,
            },
        })
        .collect();
    Commands { commands }
}

/// Paths under a session's directory for `@file` completion: `.gitignore` (and `.ignore`)
/// respected, hidden files left out; those whose file name holds the query first, then those
/// whose path does, then those that hold its letters in order; shorter paths first.
fn files(shared: &Shared, id: &str, request: &Request) -> Response {
    let cwd = match shared.hub.get(id) {
        Some(live) => PathBuf::from(&live.cwd),
        None => match indexed(shared, None) {
            Ok(listed) => match listed.into_iter().find(|s| s.id == id) {
                Some(summary) => PathBuf::from(summary.cwd),
                None => return Response::error(404, &format!("no session {id} in the index")),
            },
            Err(response) => return response,
        },
    };
    let query = request.query_param("q").unwrap_or_default().trim().to_lowercase();
    let mut ranked: Vec<(u8, String)> = Vec::new();
    let walk = ignore::WalkBuilder::new(&cwd).require_git(false).build();
    for entry in walk.flatten().take(MAX_FILES_WALKED) {
        if !entry.file_type().is_some_and(|kind| kind.is_file()) {
            continue;
        }
        let Ok(path) = entry.path().strip_prefix(&cwd) else { continue };
        let path = path.to_string_lossy().replace('\\', "/");
        let lower = path.to_lowercase();
        let name = lower.rsplit('/').next().unwrap_or(&lower);
        let rank = if query.is_empty() || name.contains(&query) {
            0
        } else if lower.contains(&query) {
            1
        } else if is_subsequence(&lower, &query) {
            2
        } else {
            continue;
        };
        ranked.push((rank, path));
    }
    ranked.sort_by(|a, b| (a.0, a.1.len(), &a.1).cmp(&(b.0, b.1.len(), &b.1)));
    let files = ranked.into_iter().take(MAX_FILE_ANSWERS).map(|(_, path)| path).collect();
    typed(200, &Files { files })
}

/// Whether `needle`'s characters appear in `haystack` in order.
fn is_subsequence(haystack: &str, needle: &str) -> bool {
    let mut rest = haystack.chars();
    needle.chars().all(|wanted| rest.any(|c| c == wanted))
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
        Answered::Taken => accepted_now(),
        Answered::NotPending => {
            Response::error(409, "no such pending approval: answered already, or withdrawn")
        }
    }
}

fn accepted_now() -> Response {
    typed(200, &crate::types::Accepted { ok: true })
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
        Answered::Taken => accepted_now(),
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
    /// Sends `events`, the ones after `cursor`, and moves the cursor to the last one's `seq`
    /// (a `gap` moves it past the events it names); `false` when the reader is gone.
    fn send(&mut self, events: &[Value], cursor: &mut u64) -> bool {
        match self {
            Self::Sse(out) => {
                let mut text = String::new();
                for event in events {
                    *cursor = event["seq"].as_u64().unwrap_or(*cursor + 1);
                    text.push_str(&format!("id: {cursor}\ndata: {event}\n\n"));
                }
                out.write_all(text.as_bytes()).and_then(|()| out.flush()).is_ok()
            }
            Self::WebSocket(socket) => {
                for event in events {
                    *cursor = event["seq"].as_u64().unwrap_or(*cursor + 1);
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
