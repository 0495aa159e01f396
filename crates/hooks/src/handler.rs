//! The handler types besides a shell command, as Claude Code configures them: a command's exec
//! form (`args`), `http` (the event's JSON posted to a URL), `prompt` (one model call that
//! answers `{ok, reason}`), `agent` (a subagent with read-only tools that answers the same) and
//! `mcp_tool` (a tool of a configured MCP server).
//!
//! Parsing turns a handler's JSON into a [`Kind`]; running turns the event's input into the
//! same [`Answer`] a command's exit code and stdout give, so one fold serves every type:
//! - `http`: a 2xx reply's JSON body is the hook's JSON output, an empty one is success, any
//!   other status or a transport error is a non-blocking failure (a status cannot block).
//! - `prompt` and `agent`: `{"ok": false, "reason"}` blocks as exit 2 does, with the reason;
//!   `{"ok": true}` is success.
//! - `mcp_tool`: the tool's text is read as a command's stdout (a JSON object is the hook's
//!   output); a tool error is a non-blocking failure.
//!
//! Invariants: the model, subagent and MCP calls go through [`HookServices`], which the session
//! provides; a runner without services answers those hooks with a non-blocking failure naming
//! what is missing. An `http` hook reaches only loopback addresses, unless the host is one the
//! runner was told the network policy allows.

mod background;
mod http;

pub(crate) use background::Background;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::outcome::Answer;
use crate::{Error, Result};

/// The default timeout of an `http` or a `prompt` hook (Claude Code's 30 s).
const SHORT_TIMEOUT: Duration = Duration::from_secs(30);
/// The default timeout of an `agent` or an `mcp_tool` hook (Claude Code's agent hooks' 60 s).
const LONG_TIMEOUT: Duration = Duration::from_secs(60);

/// What a handler does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `sh -c COMMAND`, or with `args` the program `COMMAND` run with them and no shell.
    Command { args: Option<Vec<String>> },
    /// POSTs the input to `url`.
    Http(http::Http),
    /// One model call: `prompt` with `$ARGUMENTS` replaced by the input.
    Prompt { prompt: String, model: Option<String> },
    /// A subagent with read-only tools, given `prompt` as `prompt` hooks are.
    Agent { prompt: String, model: Option<String> },
    /// Calls `tool` of the MCP server `server` with `input` (its strings' `${path}` replaced
    /// by the event input's values).
    McpTool { server: String, tool: String, input: Value },
}

/// A `once: true` handler's mark: set when it first runs, shared by every clone of the set, so
/// the handler runs once per session (compared by identity).
#[derive(Debug, Clone, Default)]
pub(crate) struct Once(Arc<AtomicBool>);

impl Once {
    /// True the first time only.
    pub(crate) fn first(&self) -> bool {
        !self.0.swap(true, Ordering::SeqCst)
    }
}

impl PartialEq for Once {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Once {}

/// A model call or a subagent a `prompt` or `agent` hook asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookPrompt {
    /// The hook's prompt, `$ARGUMENTS` replaced by the event's JSON input.
    pub prompt: String,
    /// The model the hook names (an alias or a provider's name); `None`: a small fast one.
    pub model: Option<String>,
    /// How long the answer may take.
    pub timeout: Duration,
}

/// What a session gives hooks that are not commands: a model, a read-only subagent, its MCP
/// servers. Each method returns the answer's text (for `prompt` and `agent` the model's last
/// message, expected to hold `{"ok": …, "reason": …}`), or why there is none.
pub trait HookServices: Send + Sync {
    /// One model call with `request.prompt` as the user message, no tools.
    ///
    /// # Errors
    /// Why the model gave no answer.
    fn prompt(&self, request: &HookPrompt) -> std::result::Result<String, String>;

    /// A subagent with read-only tools, given `request.prompt`; its final message.
    ///
    /// # Errors
    /// Why the subagent gave no answer.
    fn agent(&self, request: &HookPrompt) -> std::result::Result<String, String>;

    /// Calls `tool` of the configured MCP server `server` with `input`: the result's text, or
    /// `Err` with the tool's error text when it reported one.
    ///
    /// # Errors
    /// No such server or tool, the call failed, or the tool reported an error.
    fn mcp_tool(
        &self,
        server: &str,
        tool: &str,
        input: &Value,
        timeout: Duration,
    ) -> std::result::Result<String, String>;
}

/// A parsed handler of a type other than `command`: its label (what messages and
/// de-duplication use), what it does and its default timeout. `Ok(None)`: an unknown type,
/// skipped with a warning.
pub(crate) fn parse(
    kind: &str,
    handler: &Map<String, Value>,
    source: &Path,
    at: &str,
    warnings: &mut Vec<String>,
) -> Result<Option<(String, Kind, Duration)>> {
    let shape = |key: &str, message: &str| Error::Shape {
        path: source.to_owned(),
        at: format!("{at}.{key}"),
        message: message.to_owned(),
    };
    let text = |key: &str| match handler.get(key) {
        Some(Value::String(text)) if !text.trim().is_empty() => Ok(text.clone()),
        _ => Err(shape(key, "expected a non-empty string")),
    };
    let model = match handler.get("model") {
        None | Some(Value::Null) => None,
        Some(Value::String(model)) => Some(model.clone()),
        Some(_) => return Err(shape("model", "expected a model name")),
    };
    let known: &[&str] = match kind {
        "http" => &["url", "headers", "allowedEnvVars"],
        "prompt" | "agent" => &["prompt", "model"],
        "mcp_tool" => &["server", "tool", "input"],
        _ => {
            warnings.push(format!(
                "{}: `{at}` is a `{kind}` hook, not a type codecoder knows (command, http, prompt, \
                 agent, mcp_tool); it is skipped",
                source.display()
            ));
            return Ok(None);
        }
    };
    for key in handler.keys() {
        let common = ["type", "timeout", "if", "once", "statusMessage"];
        if !known.contains(&key.as_str()) && !common.contains(&key.as_str()) {
            warnings.push(format!(
                "{}: `{at}.{key}` is not a setting of `{kind}` hooks; ignored",
                source.display()
            ));
        }
    }
    let parsed = match kind {
        "http" => {
            let url = text("url")?;
            let parsed = http::Http::parse(&url, handler, |key, message| shape(key, message))?;
            (format!("POST {url}"), Kind::Http(parsed), SHORT_TIMEOUT)
        }
        "prompt" => {
            let prompt = text("prompt")?;
            (format!("prompt {prompt}"), Kind::Prompt { prompt, model }, SHORT_TIMEOUT)
        }
        "agent" => {
            let prompt = text("prompt")?;
            (format!("agent {prompt}"), Kind::Agent { prompt, model }, LONG_TIMEOUT)
        }
        _ => {
            let server = text("server")?;
            let tool = text("tool")?;
            let input = match handler.get("input") {
                None | Some(Value::Null) => Value::Object(Map::new()),
                Some(input @ Value::Object(_)) => input.clone(),
                Some(_) => {
                    return Err(shape("input", "expected an object of the tool's arguments"));
                }
            };
            // The input is part of the label, which de-duplicates: two hooks calling one tool
            // with different inputs both run.
            let label = match &input {
                Value::Object(map) if map.is_empty() => format!("mcp_tool {server}/{tool}"),
                input => format!("mcp_tool {server}/{tool} {input}"),
            };
            (label, Kind::McpTool { server, tool, input }, LONG_TIMEOUT)
        }
    };
    Ok(Some(parsed))
}

/// Parses a command handler's `args` (the exec form): `None` when absent.
pub(crate) fn parse_args(
    handler: &Map<String, Value>,
    source: &Path,
    at: &str,
) -> Result<Option<Vec<String>>> {
    match handler.get("args") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(arg) => Ok(arg.clone()),
                _ => Err(Error::Shape {
                    path: source.to_owned(),
                    at: format!("{at}.args"),
                    message: "expected a list of strings".to_owned(),
                }),
            })
            .collect::<Result<Vec<_>>>()
            .map(Some),
        Some(_) => Err(Error::Shape {
            path: source.to_owned(),
            at: format!("{at}.args"),
            message: "expected a list of strings".to_owned(),
        }),
    }
}

/// What hooks that are not commands may use: the session's services and the hosts besides
/// loopback that `http` hooks may post to.
#[derive(Clone, Default)]
pub(crate) struct Reachable {
    pub(crate) services: Option<Arc<dyn HookServices>>,
    pub(crate) allowed_hosts: Arc<[String]>,
}

impl std::fmt::Debug for Reachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reachable")
            .field("services", &self.services.is_some())
            .field("allowed_hosts", &self.allowed_hosts)
            .finish()
    }
}

/// Runs a handler of a type other than `command` on `input` (the event's JSON), within
/// `timeout`; `hook` names it in messages.
pub(crate) fn run(
    kind: &Kind,
    input: &[u8],
    timeout: Duration,
    hook: &str,
    reach: &Reachable,
) -> Answer {
    let missing = |what: &str| {
        Answer::Failed(format!(
            "{hook}: this session has no {what} for hooks; the hook did not run"
        ))
    };
    match kind {
        Kind::Command { .. } => Answer::Failed(format!("{hook}: a command is run by the runner")),
        Kind::Http(http) => http.post(input, timeout, hook, &reach.allowed_hosts),
        Kind::Prompt { prompt, model } | Kind::Agent { prompt, model } => {
            let Some(services) = reach.services.as_deref() else { return missing("model") };
            let request = HookPrompt {
                prompt: prompt.replace("$ARGUMENTS", &String::from_utf8_lossy(input)),
                model: model.clone(),
                timeout,
            };
            let answer = match kind {
                Kind::Agent { .. } => services.agent(&request),
                _ => services.prompt(&request),
            };
            match answer {
                Ok(text) => verdict(&text, hook),
                Err(err) => Answer::Failed(format!("{hook}: {err}")),
            }
        }
        Kind::McpTool { server, tool, input: arguments } => {
            let Some(services) = reach.services.as_deref() else { return missing("MCP servers") };
            let event = serde_json::from_slice::<Value>(input).unwrap_or(Value::Null);
            let arguments = substitute(arguments, &event);
            match services.mcp_tool(server, tool, &arguments, timeout) {
                Ok(text) => stdout_answer(text.trim(), hook),
                Err(err) => Answer::Failed(format!("{hook}: {err}")),
            }
        }
    }
}

/// A command's stdout read as Claude Code reads it: a JSON object is the hook's output, other
/// text is plain output.
pub(crate) fn stdout_answer(stdout: &str, hook: &str) -> Answer {
    if !stdout.starts_with('{') {
        return Answer::Text(stdout.to_owned());
    }
    match serde_json::from_str::<Value>(stdout) {
        Ok(Value::Object(json)) => Answer::Json(json),
        Ok(_) => Answer::Text(stdout.to_owned()),
        Err(err) => {
            Answer::Failed(format!("{hook}: printed invalid JSON ({err}); its output was ignored"))
        }
    }
}

/// A `prompt` or `agent` hook's answer: the first JSON object in `text` with a boolean `ok`.
/// `ok: false` blocks with `reason`; anything unreadable is a non-blocking failure.
fn verdict(text: &str, hook: &str) -> Answer {
    // Models wrap JSON in prose or fences: try every `{` until an object with `ok` parses.
    let found = text.match_indices('{').find_map(|(start, _)| {
        let mut stream =
            serde_json::Deserializer::from_str(&text[start..]).into_iter::<Map<String, Value>>();
        match stream.next() {
            Some(Ok(object)) if object.get("ok").is_some_and(Value::is_boolean) => Some(object),
            _ => None,
        }
    });
    let Some(object) = found else {
        let shown: String = text.chars().take(200).collect();
        return Answer::Failed(format!(
            "{hook}: answered without a JSON object {{\"ok\": true|false, \"reason\"}}: {shown}"
        ));
    };
    let reason = match object.get("reason") {
        Some(Value::String(reason)) if !reason.trim().is_empty() => reason.clone(),
        _ => String::new(),
    };
    if object.get("ok") == Some(&Value::Bool(true)) {
        return Answer::Text(String::new());
    }
    if reason.is_empty() {
        return Answer::Blocked(format!("{hook} answered ok: false without a reason"));
    }
    Answer::Blocked(reason)
}

/// `template` with every string's `${a.b.c}` replaced by that path of `event` (a string as is,
/// anything else as JSON; a missing path as empty). A string that is exactly one `${path}`
/// becomes the value itself, so a number or an object keeps its type.
fn substitute(template: &Value, event: &Value) -> Value {
    let lookup = |path: &str| {
        path.split('.').try_fold(event, |value, key| match value {
            Value::Object(map) => map.get(key),
            Value::Array(items) => key.parse::<usize>().ok().and_then(|idx| items.get(idx)),
            _ => None,
        })
    };
    match template {
        Value::String(text) => {
            if let Some(path) = text.strip_prefix("${").and_then(|rest| rest.strip_suffix('}'))
                && !path.contains('}')
            {
                return lookup(path).cloned().unwrap_or(Value::String(String::new()));
            }
            let mut out = String::new();
            let mut rest = text.as_str();
            while let Some(start) = rest.find("${") {
                let Some(len) = rest[start..].find('}') else { break };
                out.push_str(&rest[..start]);
                match lookup(&rest[start + 2..start + len]) {
                    Some(Value::String(value)) => out.push_str(value),
                    Some(value) => out.push_str(&value.to_string()),
                    None => {}
                }
                rest = &rest[start + len + 1..];
            }
            out.push_str(rest);
            Value::String(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|it| substitute(it, event)).collect()),
        Value::Object(map) => Value::Object(
            map.iter().map(|(key, value)| (key.clone(), substitute(value, event))).collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests;
