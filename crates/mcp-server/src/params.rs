//! The two tools' parameters: their input schemas (what `tools/list` shows) and the parsing of
//! a call's arguments, with codex's `codex`/`codex-reply` names so a client written for one
//! drives the other.
//!
//! Invariant: every rejection names the field it is about (`approval-policy: unknown value
//! …`), and an argument the schema does not list is rejected, not ignored, so a misspelt
//! option (`approval_policy`) is never silently dropped.

use std::path::PathBuf;

use codecoder_app::{ApprovalMode, SandboxMode};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

/// The tool that starts a session.
pub(crate) const START_TOOL: &str = "codecoder";
/// The tool that continues one.
pub(crate) const REPLY_TOOL: &str = "codecoder-reply";

/// `codecoder {prompt, …}`: a new session and its first turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StartParams {
    pub(crate) prompt: String,
    pub(crate) model: Option<String>,
    pub(crate) profile: Option<String>,
    pub(crate) cwd: Option<PathBuf>,
    pub(crate) approval_policy: Option<ApprovalMode>,
    pub(crate) sandbox: Option<SandboxMode>,
    /// `config`: `key=value` overrides in `-c`'s syntax (the value as TOML).
    pub(crate) config: Vec<String>,
}

/// `codecoder-reply {threadId | sessionId, prompt}`: the next turn of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReplyParams {
    pub(crate) session: String,
    pub(crate) prompt: String,
}

/// A rejected argument: the field and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invalid(pub(crate) String);

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

const START_FIELDS: &[&str] =
    &["prompt", "model", "profile", "cwd", "approval-policy", "sandbox", "config"];
const REPLY_FIELDS: &[&str] = &["threadId", "sessionId", "conversationId", "prompt"];

/// The `inputSchema` of `codecoder`.
pub(crate) fn start_schema() -> Map<String, Value> {
    let schema = json!({
        "type": "object",
        "properties": {
            "prompt": {
                "type": "string",
                "description": "The task: the first message of a new codecoder session."
            },
            "model": {
                "type": "string",
                "description": "The model (for example `gpt-5`); default: `model` in config.toml."
            },
            "profile": {
                "type": "string",
                "description": "A `[profiles.NAME]` of config.toml whose settings apply."
            },
            "cwd": {
                "type": "string",
                "description": "The working directory; relative to the server's own. Default: the server's."
            },
            "approval-policy": {
                "type": "string",
                "enum": ["untrusted", "on-request", "never"],
                "description": "When to ask before acting. Questions become elicitation requests when the client supports them; otherwise what would ask is refused. Default: on-request with elicitation, never without."
            },
            "sandbox": {
                "type": "string",
                "enum": ["read-only", "workspace-write", "danger-full-access"],
                "description": "What the model's commands may write. Default: `sandbox_mode` in config.toml, else workspace-write."
            },
            "config": {
                "type": "object",
                "additionalProperties": true,
                "description": "Config overrides, as `-c key=value`: dotted keys and JSON values (`{\"agent.max_steps_per_turn\": 20}`)."
            }
        },
        "required": ["prompt"],
        "additionalProperties": false
    });
    object(schema)
}

/// The `inputSchema` of `codecoder-reply`.
pub(crate) fn reply_schema() -> Map<String, Value> {
    let schema = json!({
        "type": "object",
        "properties": {
            "threadId": {
                "type": "string",
                "description": "The session to continue: `threadId` (or `sessionId`) of an earlier result."
            },
            "sessionId": {
                "type": "string",
                "description": "Same as threadId."
            },
            "prompt": {
                "type": "string",
                "description": "The next message of the session."
            }
        },
        "required": ["prompt"],
        "additionalProperties": false
    });
    object(schema)
}

/// The `outputSchema` of both tools: `structuredContent`.
pub(crate) fn output_schema() -> Map<String, Value> {
    let schema = json!({
        "type": "object",
        "properties": {
            "threadId": { "type": "string", "description": "The session's id, for codecoder-reply." },
            "sessionId": { "type": "string", "description": "The same id." },
            "content": { "type": "string", "description": "The session's final message of this turn." }
        },
        "required": ["threadId", "sessionId", "content"]
    });
    object(schema)
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Parses `codecoder`'s arguments.
pub(crate) fn parse_start(args: &Map<String, Value>) -> Result<StartParams, Invalid> {
    reject_unknown(args, START_FIELDS)?;
    let prompt = prompt(args)?;
    let config = match args.get("config") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(key, value)| Ok(format!("{key}={}", toml_value(key, value)?)))
            .collect::<Result<_, Invalid>>()?,
        Some(other) => {
            return Err(Invalid(format!("config: expected an object of overrides, got {other}")));
        }
    };
    Ok(StartParams {
        prompt,
        model: field(args, "model")?,
        profile: field(args, "profile")?,
        cwd: field::<String>(args, "cwd")?.map(PathBuf::from),
        approval_policy: field(args, "approval-policy")?,
        sandbox: field(args, "sandbox")?,
        config,
    })
}

/// Parses `codecoder-reply`'s arguments (`threadId`, or `sessionId`, or codex's older
/// `conversationId`; when several are given they must agree).
pub(crate) fn parse_reply(args: &Map<String, Value>) -> Result<ReplyParams, Invalid> {
    reject_unknown(args, REPLY_FIELDS)?;
    let prompt = prompt(args)?;
    let mut session: Option<String> = None;
    for name in ["threadId", "sessionId", "conversationId"] {
        let Some(id) = field::<String>(args, name)? else { continue };
        match &session {
            Some(earlier) if *earlier != id => {
                return Err(Invalid(format!(
                    "{name}: `{id}` differs from the session named before (`{earlier}`)"
                )));
            }
            _ => session = Some(id),
        }
    }
    let Some(session) = session.filter(|id| !id.trim().is_empty()) else {
        return Err(Invalid("threadId: missing (the session to continue)".to_owned()));
    };
    Ok(ReplyParams { session, prompt })
}

fn prompt(args: &Map<String, Value>) -> Result<String, Invalid> {
    match field::<String>(args, "prompt")? {
        Some(prompt) if !prompt.trim().is_empty() => Ok(prompt),
        Some(_) => Err(Invalid("prompt: empty".to_owned())),
        None => Err(Invalid("prompt: missing".to_owned())),
    }
}

fn reject_unknown(args: &Map<String, Value>, known: &[&str]) -> Result<(), Invalid> {
    match args.keys().find(|key| !known.contains(&key.as_str())) {
        Some(key) => {
            Err(Invalid(format!("{key}: unknown argument; expected {}", known.join(", "))))
        }
        None => Ok(()),
    }
}

/// One optional field; `null` counts as absent.
fn field<T: DeserializeOwned>(args: &Map<String, Value>, name: &str) -> Result<Option<T>, Invalid> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => serde_json::from_value(value.clone())
            .map(Some)
            .map_err(|err| Invalid(format!("{name}: {err}"))),
    }
}

/// A JSON value as a TOML value for a `-c key=value` override.
fn toml_value(key: &str, value: &Value) -> Result<String, Invalid> {
    let invalid = |what: &str| Invalid(format!("config.{key}: {what}"));
    match value {
        Value::Null => Err(invalid("null is not a config value")),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Number(n) => Ok(n.to_string()),
        Value::String(s) => Ok(toml::Value::String(s.clone()).to_string()),
        Value::Array(_) | Value::Object(_) => {
            let toml: toml::Value = serde_json::from_value(value.clone())
                .map_err(|err| invalid(&format!("not representable in TOML: {err}")))?;
            Ok(toml.to_string())
        }
    }
}
