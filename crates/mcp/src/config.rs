//! What a server is: how to reach it and which of its tools to offer. Built by the runtime
//! from config.toml's `[mcp_servers.NAME]` tables and Claude Code's `.mcp.json` files.
//!
//! Invariants: `${VAR}` and `${VAR:-default}` are expanded in `.mcp.json` strings from the
//! lookup given (an unset variable without a default expands to nothing); a `.mcp.json` error
//! names the file, line and column.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::error::{Error, Result};

/// The default wait for a server to start.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// The default wait for a tool call.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// One server to start.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Its name, the `<server>` of `mcp__<server>__<tool>`.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// How long its start may take.
    pub startup_timeout: Duration,
    /// How long one of its calls may take.
    pub tool_timeout: Duration,
    /// When set, only these tools are offered.
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never offered.
    pub disabled_tools: Vec<String>,
    /// The server may ask the session's model (`sampling/createMessage`); otherwise its
    /// requests are declined.
    pub sampling: bool,
}

/// A server in the front-end's process (an Agent SDK's in-process server): each JSON-RPC
/// message is handed over, and a request's response comes back.
pub trait McpBridge: Send + Sync {
    /// Delivers `message`; returns the response of a request (`None` for a notification).
    ///
    /// # Errors
    /// Why no response came (the front-end's peer failed or did not answer in time).
    fn send(
        &self,
        message: serde_json::Value,
    ) -> std::result::Result<Option<serde_json::Value>, String>;
}

/// A bridge, compared by identity.
#[derive(Clone)]
pub struct Bridge(pub std::sync::Arc<dyn McpBridge>);

impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Bridge")
    }
}

impl PartialEq for Bridge {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

/// How to reach a server.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A server in the front-end's own process, reached through its bridge.
    InProcess(Bridge),
    /// A child process speaking newline-delimited JSON-RPC on stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its whole environment: the base set and the server's own table.
        env: BTreeMap<String, String>,
        /// Where it runs (default: the session's working directory).
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Sent as `Authorization: Bearer …`.
        bearer_token: Option<String>,
        /// Extra headers on every request.
        headers: BTreeMap<String, String>,
    },
    /// The older HTTP+SSE transport (2024-11-05): an event stream at `url` and POSTs to the
    /// endpoint it names.
    Sse {
        /// The event stream's URL.
        url: String,
        /// Sent as `Authorization: Bearer …`.
        bearer_token: Option<String>,
        /// Extra headers on every request.
        headers: BTreeMap<String, String>,
    },
}

impl ServerConfig {
    /// A server with the default timeouts and every tool offered.
    pub fn new(name: impl Into<String>, transport: Transport) -> Self {
        Self {
            name: name.into(),
            transport,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            sampling: false,
        }
    }

    /// Whether its tool `tool` is offered.
    pub fn offers(&self, tool: &str) -> bool {
        self.enabled_tools.as_ref().is_none_or(|names| names.iter().any(|n| n == tool))
            && !self.disabled_tools.iter().any(|n| n == tool)
    }
}

/// The variables a stdio server starts with, taken from `lookup`: what programs need to find
/// other programs, the home and temporary directories, the user, the locale and the terminal
/// (the sandbox's core set). The server's own `env` table goes on top.
pub fn base_env(lookup: &dyn Fn(&str) -> Option<OsString>) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for name in codecoder_sandbox::CORE_VARIABLES {
        if name.ends_with('*') {
            continue;
        }
        if let Some(value) = lookup(name).and_then(|v| v.into_string().ok()) {
            env.insert((*name).to_owned(), value);
        }
    }
    env
}

/// `text` with `${VAR}` and `${VAR:-default}` replaced (Claude Code's `.mcp.json` expansion).
/// `$` not followed by `{`, and an unterminated `${`, are kept as they are.
pub fn expand_vars(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match lookup(name).filter(|v| !v.is_empty() || default.is_none()) {
            Some(value) => out.push_str(&value),
            None => out.push_str(default.unwrap_or("")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct McpJson {
    #[serde(default)]
    mcp_servers: BTreeMap<String, McpJsonServer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct McpJsonServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

/// The servers of a Claude Code `.mcp.json` (`{"mcpServers": {NAME: {command, args, env} |
/// {type: "http"|"sse", url, headers}}}`; `sse` is the older HTTP+SSE transport) read from `text` (found at `path`, named in errors).
/// `base` is the environment stdio servers start from; `lookup` expands `${VAR}`.
///
/// # Errors
/// When the JSON is malformed or a server is neither a command nor a URL.
pub fn parse_mcp_json(
    path: &Path,
    text: &str,
    base: &BTreeMap<String, String>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<ServerConfig>> {
    let parsed: McpJson = serde_json::from_str(text).map_err(|err| Error::McpJson {
        path: path.to_owned(),
        line: err.line(),
        column: err.column(),
        message: err.to_string(),
    })?;
    let expand = |s: &str| expand_vars(s, lookup);
    let mut servers = Vec::new();
    for (name, server) in parsed.mcp_servers {
        let transport = match (server.kind.as_deref(), server.command, server.url) {
            (None | Some("stdio"), Some(command), None) => {
                let mut env = base.clone();
                env.extend(server.env.iter().map(|(k, v)| (k.clone(), expand(v))));
                Transport::Stdio {
                    command: expand(&command),
                    args: server.args.iter().map(|a| expand(a)).collect(),
                    env,
                    cwd: None,
                }
            }
            (None | Some("http"), None, Some(url)) => Transport::Http {
                url: expand(&url),
                bearer_token: None,
                headers: server.headers.iter().map(|(k, v)| (k.clone(), expand(v))).collect(),
            },
            (Some("sse"), None, Some(url)) => Transport::Sse {
                url: expand(&url),
                bearer_token: None,
                headers: server.headers.iter().map(|(k, v)| (k.clone(), expand(v))).collect(),
            },
            _ => {
                let (line, column) = position_of(text, &name);
                return Err(Error::McpJson {
                    path: path.to_owned(),
                    line,
                    column,
                    message: format!(
                        "server `{name}` needs either `command` (stdio) or `url` (with `type` \"http\" or \"sse\")"
                    ),
                });
            }
        };
        servers.push(ServerConfig::new(name, transport));
    }
    Ok(servers)
}

/// The 1-based line and column of the first `"name"` in `text` (1, 1 when absent).
fn position_of(text: &str, name: &str) -> (usize, usize) {
    let needle = format!("\"{name}\"");
    let Some(offset) = text.find(&needle) else { return (1, 1) };
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map_or(offset, |nl| offset - nl - 1) + 1;
    (line, column)
}
