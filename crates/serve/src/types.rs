//! The API's request bodies and answers as types: the routes decode and encode through them,
//! and `schema()` generates from them the JSON Schema checked in at `api-schema.json` and
//! served at `GET /api/schema`, with the table of routes naming each one's body and answer.
//! Items the routes build as JSON (stream and history items, which carry the runtime's
//! `AgentEvent`) are described through the protocol's types; the one place serde writes what
//! the derived schema does not say (the `status` event kind) is rewritten after generation.
//!
//! Invariants: field names are camelCase; a request body refuses unknown fields; the checked-in
//! file is exactly what `schema()` writes (a unit test fails on drift).

use std::path::PathBuf;

use codecoder_protocol::{
    AgentEvent, ApprovalDecision, ApprovalMode, AskUserAnswer, PermissionMode, RewindRecord,
    SandboxMode, ToolCallId, UserInput,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Any error: a 4xx or 5xx status with this body.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ErrorBody {
    /// What went wrong, for a person.
    pub(crate) error: String,
    /// Files a rewind would overwrite that changed outside codecoder since (409 of `undo` and
    /// `rewind`): send the request again with `force: true` to restore them anyway.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) conflicts: Option<Vec<String>>,
}

/// `{ok: true}`: accepted (202) or done (200).
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Accepted {
    /// Always true.
    pub(crate) ok: bool,
}

/// A body with nothing in it: `{}` (or no body at all).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Empty {}

/// `GET /api/server`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ServerInfo {
    /// The project a new session opens on (`-C`).
    pub(crate) cwd: PathBuf,
    /// codecoder's version.
    pub(crate) version: String,
}

/// `GET /api/projects`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Projects {
    /// The server's own directory first, then the index's directories, newest first.
    pub(crate) projects: Vec<Project>,
}

/// A directory sessions ran in.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Project {
    /// The directory.
    pub(crate) cwd: String,
    /// Sessions the index lists in it (subagents' logs left out).
    pub(crate) sessions: usize,
    /// The newest session's last change, in Unix milliseconds (`null`: none yet).
    pub(crate) updated_ms: Option<u64>,
}

/// `GET /api/sessions?q=TEXT&cwd=DIR`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SessionList {
    /// Newest first.
    pub(crate) sessions: Vec<SessionSummary>,
}

/// A session the index knows.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionSummary {
    /// The session id.
    pub(crate) id: String,
    /// Its first prompt, shortened.
    pub(crate) title: String,
    /// Its working directory.
    pub(crate) cwd: String,
    /// The model.
    pub(crate) model: String,
    /// The provider id.
    pub(crate) provider: String,
    /// Created, in Unix milliseconds.
    pub(crate) created_ms: u64,
    /// Last changed, in Unix milliseconds.
    pub(crate) updated_ms: u64,
    /// The session it was forked from.
    pub(crate) parent: Option<String>,
    /// Hosted by this server now.
    pub(crate) live: bool,
}

/// `POST /api/sessions`: a new session, or one resumed or forked by id.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct StartBody {
    /// An existing absolute directory (default: the server's `-C`); not with `resume`/`fork`.
    pub(crate) cwd: Option<PathBuf>,
    /// The first prompt.
    pub(crate) prompt: Option<String>,
    /// An indexed session to continue (in its own project).
    pub(crate) resume: Option<String>,
    /// An indexed session to copy and continue (the original is untouched).
    pub(crate) fork: Option<String>,
    /// A model for this session only.
    pub(crate) model: Option<String>,
    /// A reasoning effort for this session only: none, minimal, low, medium, high, xhigh.
    pub(crate) effort: Option<String>,
    /// The permission mode it starts in (the sandbox and approval mode stay the server's).
    pub(crate) permission_mode: Option<PermissionMode>,
}

/// `201` to `POST /api/sessions`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Started {
    /// The session id.
    pub(crate) id: String,
    /// Its working directory.
    pub(crate) cwd: String,
}

/// `GET /api/sessions/{id}`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionInfo {
    /// The session id.
    pub(crate) id: String,
    /// Its working directory.
    pub(crate) cwd: String,
    /// Its first prompt, shortened (empty before one).
    pub(crate) title: String,
    /// Hosted by this server now.
    pub(crate) live: bool,
    /// The model (a live session's: the one it runs with).
    pub(crate) model: String,
    /// The provider id.
    pub(crate) provider: String,
    /// The model's context window in tokens (live sessions only).
    pub(crate) context_window: Option<u64>,
    /// The permission mode now (live sessions only).
    pub(crate) permission_mode: Option<PermissionMode>,
    /// The approval mode now (live sessions only).
    pub(crate) approval: Option<ApprovalMode>,
    /// The sandbox (live sessions only).
    pub(crate) sandbox: Option<SandboxMode>,
}

/// `POST /api/sessions/{id}/prompt` and `/steer`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PromptBody {
    /// The input. A prompt starting with `/name` is a slash command (see `/commands`).
    pub(crate) text: String,
}

/// The answer to a prompt that was a built-in slash command run by the server.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CommandRan {
    /// The command's name (`undo`, `rewind`, `compact`, `plan`).
    pub(crate) command: String,
    /// What `undo` or `rewind` did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) rewound: Option<RewindRecord>,
    /// The permission mode after `plan`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) permission_mode: Option<PermissionMode>,
}

/// `GET /api/sessions/{id}/files?q=TEXT`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Files {
    /// At most 50 paths relative to the session's directory, `/`-separated, best match first.
    pub(crate) files: Vec<String>,
}

/// `GET /api/sessions/{id}/commands`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Commands {
    /// Built-ins first, then skills, then custom prompts.
    pub(crate) commands: Vec<CommandInfo>,
}

/// A slash command.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CommandInfo {
    /// Its name, without the `/`.
    pub(crate) name: String,
    /// What it does.
    pub(crate) description: String,
    /// `builtin` (the server runs it), `skill` (activates the skill, as `$name` does) or
    /// `prompt` (a custom command, expanded into the prompt).
    pub(crate) kind: CommandKind,
}

/// Who carries out a slash command.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CommandKind {
    /// The server.
    Builtin,
    /// A skill.
    Skill,
    /// A custom prompt.
    Prompt,
}

/// `POST /api/sessions/{id}/undo`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UndoBody {
    /// Restore files changed outside codecoder since, too.
    #[serde(default)]
    pub(crate) force: bool,
}

/// `POST /api/sessions/{id}/rewind`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RewindBody {
    /// How many of the newest prompts to go back past (1: to before the last prompt).
    pub(crate) turns: u32,
    /// Restore files changed outside codecoder since, too.
    #[serde(default)]
    pub(crate) force: bool,
}

/// `POST /api/sessions/{id}/mode` body and answer.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Mode {
    /// `default`, `acceptEdits` or `plan`.
    pub(crate) permission_mode: PermissionMode,
}

/// `GET /api/sessions/{id}/pending`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Pending {
    /// Approval requests no client answered yet, each the stream item that asked.
    #[schemars(with = "Vec<StreamItem>")]
    pub(crate) approvals: Vec<Value>,
    /// Questions (`ask_user`, and plan reviews) no client answered yet.
    #[schemars(with = "Vec<StreamItem>")]
    pub(crate) questions: Vec<Value>,
}

/// One item of `GET /api/sessions/{id}/events` (an SSE `data:` line or a WebSocket text frame):
/// exactly one of `event`, `user`, `approvalResolved`, `questionResolved`, `gap`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StreamItem {
    /// Its place in the session's stream, from 1; resume with `after=` the last one seen.
    pub(crate) seq: u64,
    /// The session.
    pub(crate) session_id: String,
    /// The runtime's `AgentEvent`: `{source: {sessionId, subagentPath?}, kind: {type, …}}`.
    /// An `approval_request` kind (`id`, `view`, `summary`, `permissionKeys`, `reason`) is
    /// answered at `/api/approvals/{id}`; an `ask_user` kind (`id`, `question`, `options`) at
    /// `/api/questions/{id}`. A plan review (plan mode's `exit_plan_mode`) is an `ask_user`
    /// whose `options` are `["Approve", "Keep planning"]` and whose `question` is the plan:
    /// answer `{"text": "Approve"}`, `{"text": "Approve edited plan:\nPLAN"}`, or any other
    /// text as feedback (plan mode stays on).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<AgentEvent>")]
    pub(crate) event: Option<Value>,
    /// A client answered an approval request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) approval_resolved: Option<Resolved>,
    /// A client answered a question.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) question_resolved: Option<Resolved>,
    /// Events no longer kept in memory: the reader missed them and reloads
    /// `/api/sessions/{id}/history`; the stream goes on after `to` (this item's `seq`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) gap: Option<Gap>,
    /// A prompt some client sent (`steer`: added to the running turn), before what it starts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) user: Option<UserItem>,
}

/// A prompt in the stream.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub(crate) struct UserItem {
    /// The runtime's `UserInput`: `{content: [{type: "text", text} | {type: "image", …}]}`.
    #[schemars(with = "UserInput")]
    pub(crate) input: Value,
    /// Sent as steering for the running turn rather than as a turn of its own.
    pub(crate) steer: bool,
}

/// A request's answer, as every reader is told.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Resolved {
    /// The request id.
    pub(crate) id: String,
    /// An approval's decision (`{"type": "allow_once"}`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<ApprovalDecision>")]
    pub(crate) decision: Option<Value>,
    /// A question's answer (`{"type": "answer", "text": …}` or `{"type": "declined"}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<AskUserAnswer>")]
    pub(crate) answer: Option<Value>,
}

/// The seqs a reader can no longer get from the stream.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Gap {
    /// The first missed.
    pub(crate) from: u64,
    /// The last missed.
    pub(crate) to: u64,
}

/// `GET /api/sessions/{id}/history`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct History {
    /// The session id.
    pub(crate) id: String,
    /// Its working directory.
    pub(crate) cwd: String,
    /// The log replayed: `{seq, event}` (an `AgentEvent`, as in the stream), `{seq, user}`
    /// (the person's input) or `{seq, approval: {callId, decision, decidedBy,
    /// permissionKeys}}`, `seq` being the log record's.
    #[schemars(with = "Vec<HistoryItem>")]
    pub(crate) events: Vec<Value>,
}

/// One item of a session's history: exactly one of `event`, `user`, `approval`. The route
/// builds these as JSON straight from the replay; this type only describes them.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct HistoryItem {
    /// The log record's `seq`.
    pub(crate) seq: u64,
    /// What the agent did: an `AgentEvent` as in the stream, never a request (nothing in a
    /// history waits for an answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) event: Option<AgentEvent>,
    /// The person's input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) user: Option<UserInput>,
    /// An approval decision about a call, as logged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) approval: Option<HistoryApproval>,
}

/// An approval decision of a session's history.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HistoryApproval {
    /// The call decided about.
    pub(crate) call_id: ToolCallId,
    /// What was decided.
    pub(crate) decision: ApprovalDecision,
    /// Who decided (`user`, `rule`, `mode`, `hook`, `policy`, `session-grant`, `cancel`,
    /// `call-approval`).
    pub(crate) decided_by: String,
    /// The keys a session grant covers.
    pub(crate) permission_keys: Vec<String>,
}

/// `POST /api/approvals/{requestId}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AnswerBody {
    /// `"allow_once"`, `"allow_for_session"`, `"deny"`, or `{"type": "deny_with_feedback",
    /// "feedback": TEXT}`.
    pub(crate) decision: Value,
}

/// `POST /api/questions/{requestId}`: `{text}` or `{decline: true}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReplyBody {
    /// The answer.
    pub(crate) text: Option<String>,
    /// No answer.
    #[serde(default)]
    pub(crate) decline: bool,
}

/// One route, as the schema's table lists it.
struct Route {
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    request: Option<Value>,
    response: Value,
}

/// The API's JSON Schema: `definitions` from the types above and `routes`, a table naming
/// each route's body and answer by reference.
pub(crate) fn schema() -> Value {
    let mut generator =
        schemars::SchemaGenerator::new(schemars::generate::SchemaSettings::draft07());
    let of = schemars::Schema::to_value;
    let error = of(generator.subschema_for::<ErrorBody>());
    let routes = vec![
        Route {
            method: "GET",
            path: "/api/schema",
            summary: "this document",
            request: None,
            response: Value::Bool(true),
        },
        Route {
            method: "GET",
            path: "/api/server",
            summary: "the server's project and version",
            request: None,
            response: of(generator.subschema_for::<ServerInfo>()),
        },
        Route {
            method: "GET",
            path: "/api/projects",
            summary: "the directories sessions ran in, the server's own first",
            request: None,
            response: of(generator.subschema_for::<Projects>()),
        },
        Route {
            method: "GET",
            path: "/api/sessions?q=TEXT&cwd=DIR",
            summary: "the indexed sessions, newest first, searched and filtered",
            request: None,
            response: of(generator.subschema_for::<SessionList>()),
        },
        Route {
            method: "POST",
            path: "/api/sessions",
            summary: "start, resume or fork a session (201)",
            request: Some(of(generator.subschema_for::<StartBody>())),
            response: of(generator.subschema_for::<Started>()),
        },
        Route {
            method: "GET",
            path: "/api/sessions/{id}",
            summary: "one session: live facts, or the index's",
            request: None,
            response: of(generator.subschema_for::<SessionInfo>()),
        },
        Route {
            method: "POST",
            path: "/api/sessions/{id}/prompt",
            summary: "a turn with this input (202; queued while one runs); a `/name` slash command runs (built-ins: 200 with what ran) or expands",
            request: Some(of(generator.subschema_for::<PromptBody>())),
            response: of(generator.subschema_for::<CommandRan>()),
        },
        Route {
            method: "POST",
            path: "/api/sessions/{id}/steer",
            summary: "input added to the running turn at its next step (202)",
            request: Some(of(generator.subschema_for::<PromptBody>())),
            response: of(generator.subschema_for::<Accepted>()),
        },
        Route {
            method: "POST",
            path: "/api/sessions/{id}/cancel",
            summary: "cancel the running turn (202)",
            request: Some(of(generator.subschema_for::<Empty>())),
            response: of(generator.subschema_for::<Accepted>()),
        },
        Route {
            method: "POST",
            path: "/api/sessions/{id}/close",
            summary: "stop hosting the session: its agent shut down, its log unlocked",
            request: Some(of(generator.subschema_for::<Empty>())),
            response: of(generator.subschema_for::<Accepted>()),
        },
        Route {
            method: "POST",
            path: "/api/sessions/{id}/undo",
            summary: "restore the files the newest turn changed (409 while a turn runs, when nothing is left to undo, or on conflicts)",
            request: Some(of(generator.subschema_for::<UndoBody>())),
            response: of(generator.subschema_for::<RewindRecord>()),
        },
        Route {
            method: "POST",
            path: "/api/sessions/{id}/rewind",
            summary: "conversation and files back to before the Nth newest prompt (409 while a turn runs)",
            request: Some(of(generator.subschema_for::<RewindBody>())),
            response: of(generator.subschema_for::<RewindRecord>()),
        },
        Route {
            method: "POST",
            path: "/api/sessions/{id}/mode",
            summary: "switch the permission mode (never a bypass)",
            request: Some(of(generator.subschema_for::<Mode>())),
            response: of(generator.subschema_for::<Mode>()),
        },
        Route {
            method: "GET",
            path: "/api/sessions/{id}/files?q=TEXT",
            summary: "paths for `@file` completion (.gitignore respected)",
            request: None,
            response: of(generator.subschema_for::<Files>()),
        },
        Route {
            method: "GET",
            path: "/api/sessions/{id}/commands",
            summary: "the slash commands a prompt may start with",
            request: None,
            response: of(generator.subschema_for::<Commands>()),
        },
        Route {
            method: "GET",
            path: "/api/sessions/{id}/pending",
            summary: "approvals and questions no client answered yet",
            request: None,
            response: of(generator.subschema_for::<Pending>()),
        },
        Route {
            method: "GET",
            path: "/api/sessions/{id}/events?after=SEQ",
            summary: "the event stream from the cursor on: server-sent events, or one WebSocket text frame per item after an upgrade",
            request: None,
            response: of(generator.subschema_for::<StreamItem>()),
        },
        Route {
            method: "GET",
            path: "/api/sessions/{id}/history",
            summary: "any indexed session's log replayed by the runtime",
            request: None,
            response: of(generator.subschema_for::<History>()),
        },
        Route {
            method: "POST",
            path: "/api/approvals/{requestId}",
            summary: "answer an approval request (409 when answered already)",
            request: Some(of(generator.subschema_for::<AnswerBody>())),
            response: of(generator.subschema_for::<Accepted>()),
        },
        Route {
            method: "POST",
            path: "/api/questions/{requestId}",
            summary: "answer a question or a plan review (409 when answered already)",
            request: Some(of(generator.subschema_for::<ReplyBody>())),
            response: of(generator.subschema_for::<Accepted>()),
        },
    ];
    let routes: Vec<Value> = routes
        .into_iter()
        .map(|route| {
            serde_json::json!({
                "method": route.method,
                "path": route.path,
                "summary": route.summary,
                "request": route.request,
                "response": route.response,
            })
        })
        .collect();
    let mut definitions = generator.take_definitions(true);
    describe_status_as_sent(&mut definitions);
    // Keys sorted, so the text is the same whether or not serde_json keeps insertion order.
    codecoder_protocol::sorted_json(serde_json::json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "codecoder serve API",
        "description": "Every route needs the token (Authorization: Bearer T, or the cookie the page trades it for); a POST needs Content-Type: application/json; errors are ErrorBody with a 4xx or 5xx status.",
        "error": error,
        "routes": routes,
        "definitions": definitions,
    }))
}

/// Rewrites the `status` variant of `AgentEventKind` to the shape serde writes: a unit variant
/// (`AgentStatus`) inside an internally tagged one goes out as its name for a key holding
/// `null` (`{"type": "status", "thinking": null}`), where the derived schema would ask for a
/// string and an object at once. The names and their descriptions come from `AgentStatus`'s
/// own definition, so a new status shows up here without an edit.
fn describe_status_as_sent(definitions: &mut serde_json::Map<String, Value>) {
    let statuses: Vec<Value> = definitions
        .get("AgentStatus")
        .and_then(|status| status.get("oneOf"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|status| {
            let name = status.get("const")?.as_str()?;
            let mut schema = serde_json::json!({ "type": "null" });
            if let Some(description) = status.get("description") {
                schema["description"] = description.clone();
            }
            Some(serde_json::json!({
                "properties": { name: schema },
                "required": [name],
            }))
        })
        .collect();
    let variants = definitions.get_mut("AgentEventKind").and_then(|kind| kind.get_mut("oneOf"));
    let Some(variants) = variants.and_then(Value::as_array_mut) else { return };
    for variant in variants {
        if variant.pointer("/properties/type/const").and_then(Value::as_str) != Some("status") {
            continue;
        }
        if let Some(variant) = variant.as_object_mut() {
            variant.remove("allOf");
            variant.insert("oneOf".to_owned(), Value::Array(statuses.clone()));
        }
    }
}
