//! An MCP server as a person gives it to `mcp add` (codex's and Claude Code's flags) or to
//! `mcp add-json` (Claude Code's JSON form of one `.mcp.json` entry), checked whole into the
//! `[mcp_servers.NAME]` table config.toml stores; and the servers as `mcp list` and `mcp get`
//! show them.
//!
//! Invariants: a form is checked whole before anything is written, so a refused server leaves
//! config.toml as it was; every refusal is a `Usage` error naming the problem; a listing never
//! holds an env or header value (they may be secrets), only [`MCP_SECRET_MASK`].

use std::collections::BTreeMap;

use codecoder_config::{McpServerToml, McpTransportToml};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::{McpServerEntry, Runtime};

/// What a listing shows instead of an env or header value.
pub const MCP_SECRET_MASK: &str = "*****";

/// How an MCP server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpTransport {
    /// A command codecoder starts, speaking on its stdin and stdout.
    Stdio,
    /// Streamable HTTP at a URL.
    Http,
    /// The older HTTP+SSE transport at a URL.
    Sse,
}

impl McpTransport {
    /// The spellings, as `mcp add --transport` and `.mcp.json`'s `type` take them.
    const NAMES: &'static [&'static str] = &["stdio", "http", "sse"];

    /// The spelling.
    pub const fn label(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Http => "http",
            Self::Sse => "sse",
        }
    }
}

impl std::str::FromStr for McpTransport {
    type Err = codecoder_protocol::UnknownValue;

    fn from_str(value: &str) -> std::result::Result<Self, Self::Err> {
        match value {
            "stdio" => Ok(Self::Stdio),
            "http" => Ok(Self::Http),
            "sse" => Ok(Self::Sse),
            _ => Err(codecoder_protocol::UnknownValue {
                what: "transport",
                value: value.to_owned(),
                valid: Self::NAMES,
            }),
        }
    }
}

/// `mcp add`'s flags as given, before they are checked.
#[derive(Debug, Clone, Default)]
pub struct McpAddFlags {
    /// `--transport`.
    pub transport: Option<McpTransport>,
    /// The URL as a positional argument (Claude Code's form).
    pub positional_url: Option<String>,
    /// `--url` (codex's form).
    pub url: Option<String>,
    /// `-e KEY=VALUE`, each as given.
    pub env: Vec<String>,
    /// `-H "Name: value"`, each as given.
    pub headers: Vec<String>,
    /// `--bearer-token-env-var`.
    pub bearer_token_env_var: Option<String>,
    /// `--sampling`.
    pub sampling: bool,
    /// The program and its arguments after `--` (empty: none given).
    pub command: Vec<String>,
}

/// The servers of this runtime as `mcp list` and `mcp get` show them.
#[derive(Debug, Clone)]
pub struct McpListing {
    /// config.toml's `[mcp_servers.NAME]` tables, env and header values masked.
    pub configured: BTreeMap<String, McpServerToml>,
    /// The servers a session would start that config.toml does not define (plugins,
    /// `~/.claude.json`, a trusted project's `.mcp.json`).
    pub elsewhere: Vec<McpServerEntry>,
}

impl Runtime {
    /// The MCP servers for `mcp list` and `mcp get`.
    pub fn mcp_listing(&self) -> McpListing {
        let configured = self
            .loaded()
            .config
            .mcp_servers
            .iter()
            .map(|(name, server)| (name.clone(), masked(server)))
            .collect();
        let (entries, _) = self.mcp_servers();
        let elsewhere = entries.into_iter().filter(|entry| entry.origin != "config.toml").collect();
        McpListing { configured, elsewhere }
    }
}

/// How a configured server is reached, in one line: `stdio: CMD ARGS`, `http: URL`, `sse: URL`.
pub fn describe_mcp_server(server: &McpServerToml) -> String {
    match (&server.command, &server.url) {
        (Some(command), _) => {
            let mut line = format!("stdio: {command}");
            for arg in &server.args {
                line.push(' ');
                line.push_str(arg);
            }
            line
        }
        (None, Some(url)) => match server.transport {
            Some(McpTransportToml::Sse) => format!("sse: {url}"),
            Some(McpTransportToml::Http) | None => format!("http: {url}"),
        },
        (None, None) => "(neither command nor url)".to_owned(),
    }
}

/// `server` with its env and header values replaced by [`MCP_SECRET_MASK`].
fn masked(server: &McpServerToml) -> McpServerToml {
    let mut server = server.clone();
    server.env.values_mut().for_each(|value| MCP_SECRET_MASK.clone_into(value));
    server.http_headers.values_mut().for_each(|value| MCP_SECRET_MASK.clone_into(value));
    server
}

/// The checked `[mcp_servers.NAME]` table of `mcp add`'s flags.
///
/// # Errors
/// `Usage`, naming the problem, when the flags do not describe one server.
pub fn mcp_server_from_flags(flags: McpAddFlags) -> Result<McpServerToml> {
    from_flags(flags).and_then(|spec| build(spec, Form::Flags)).map_err(Error::usage)
}

/// The checked `[mcp_servers.NAME]` table of Claude Code's JSON form of server `name` (an entry
/// of `.mcp.json`'s `mcpServers`); `sampling` is `--sampling`.
///
/// # Errors
/// `Usage`, naming the server and the problem, when the JSON is not one server.
pub fn mcp_server_from_json(name: &str, json: &str, sampling: bool) -> Result<McpServerToml> {
    from_json(json)
        .and_then(|spec| build(Spec { sampling, ..spec }, Form::Json))
        .map_err(|err| Error::usage(format!("the server JSON for `{name}`: {err}")))
}

/// Where a server's description came from; it only changes how errors name things.
#[derive(Clone, Copy)]
enum Form {
    Flags,
    Json,
}

/// A server as given, before it is checked.
#[derive(Default)]
struct Spec {
    transport: Option<McpTransport>,
    url: Option<String>,
    /// The program and its arguments (empty: none given).
    command: Vec<String>,
    env: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    bearer_token_env_var: Option<String>,
    sampling: bool,
}

/// A refusal: what is wrong, for the person.
type Checked<T> = std::result::Result<T, String>;

fn from_flags(flags: McpAddFlags) -> Checked<Spec> {
    let url = match (flags.positional_url, flags.url) {
        (Some(positional), Some(flag)) => {
            return Err(format!(
                "the URL is given twice (`{positional}` and --url `{flag}`): give it once"
            ));
        }
        (Some(url), None) | (None, Some(url)) => Some(url),
        (None, None) => None,
    };
    let mut env = Vec::new();
    for pair in &flags.env {
        let Some((key, value)) = pair.split_once('=').filter(|(key, _)| !key.is_empty()) else {
            return Err(format!("--env wants KEY=VALUE, got `{pair}`"));
        };
        env.push((key.to_owned(), value.to_owned()));
    }
    let mut headers = Vec::new();
    for raw in &flags.headers {
        let Some((name, value)) = raw.split_once(':').filter(|(name, _)| !name.trim().is_empty())
        else {
            return Err(format!("--header `{raw}` is not `Name: value`"));
        };
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    Ok(Spec {
        transport: flags.transport,
        url,
        command: flags.command,
        env,
        headers,
        bearer_token_env_var: flags.bearer_token_env_var,
        sampling: flags.sampling,
    })
}

/// Claude Code's JSON form of one server (an entry of `.mcp.json`'s `mcpServers`).
fn from_json(text: &str) -> Checked<Spec> {
    let value: Value = serde_json::from_str(text).map_err(|err| {
        format!("not valid JSON at line {}, column {}: {err}", err.line(), err.column())
    })?;
    let Value::Object(fields) = value else {
        return Err("expected an object like {\"type\":\"stdio\",\"command\":…} or \
             {\"type\":\"http\",\"url\":…}"
            .to_owned());
    };
    let mut spec = Spec::default();
    let mut command = None;
    let mut args = Vec::new();
    for (key, value) in fields {
        match key.as_str() {
            "type" => {
                let kind = string(&key, value)?;
                spec.transport = Some(kind.parse().map_err(|_| {
                    format!(
                        "unknown type `{kind}`: the known types are \"stdio\", \"http\" and \
                         \"sse\""
                    )
                })?);
            }
            "command" => command = Some(unexpanded(&key, string(&key, value)?)?),
            "url" => spec.url = Some(unexpanded(&key, string(&key, value)?)?),
            "args" => {
                let Value::Array(items) = value else {
                    return Err("`args` must be an array of strings".to_owned());
                };
                for item in items {
                    args.push(unexpanded("args", string("args", item)?)?);
                }
            }
            "env" => {
                for (name, value) in object(&key, value)? {
                    let field = format!("env.{name}");
                    let value = unexpanded(&field, string(&field, value)?)?;
                    spec.env.push((name, value));
                }
            }
            "headers" => {
                for (name, value) in object(&key, value)? {
                    let value = string(&format!("headers.{name}"), value)?;
                    spec.headers.push((name, value));
                }
            }
            _ => {
                return Err(format!(
                    "unknown key `{key}` (the known keys are type, command, args, env, url and \
                     headers)"
                ));
            }
        }
    }
    match command {
        Some(program) => {
            spec.command.push(program);
            spec.command.extend(args);
        }
        None if !args.is_empty() => return Err("`args` without a `command`".to_owned()),
        None => {}
    }
    Ok(spec)
}

fn string(field: &str, value: Value) -> Checked<String> {
    match value {
        Value::String(text) => Ok(text),
        other => Err(format!("`{field}` must be a string, not {other}")),
    }
}

fn object(field: &str, value: Value) -> Checked<serde_json::Map<String, Value>> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(format!("`{field}` must be an object of strings, not {other}")),
    }
}

/// `text`, refused when it holds a `${VAR}`: Claude Code expands those when it reads
/// `.mcp.json`, config.toml does not, so writing it would send the literal text.
fn unexpanded(field: &str, text: String) -> Checked<String> {
    if text.contains("${") {
        return Err(format!(
            "`{field}` uses `${{…}}`, which config.toml does not expand: give the value itself"
        ));
    }
    Ok(text)
}

/// The checked `[mcp_servers.NAME]` table of `spec`.
fn build(spec: Spec, form: Form) -> Checked<McpServerToml> {
    use McpTransport::{Http, Sse, Stdio};
    let has_command = !spec.command.is_empty();
    let transport = match (spec.transport, &spec.url, has_command) {
        (None, None, false) => {
            return Err(match form {
                Form::Flags => "give either a command (`codecoder mcp add NAME -- CMD ARGS…`) or \
                                a URL (`codecoder mcp add --transport http NAME URL`, or --url URL)"
                    .to_owned(),
                Form::Json => "it needs a `command` (stdio) or a `url` (http, sse)".to_owned(),
            });
        }
        (_, Some(url), true) => {
            return Err(format!(
                "give either a command or a URL, not both (the URL is `{url}`, the command `{}`)",
                spec.command[0]
            ));
        }
        (None | Some(Stdio), None, true) => Stdio,
        (None, Some(_), false) => Http,
        (Some(Stdio), Some(url), false) => {
            return Err(format!(
                "a stdio server is a command, not a URL (`{url}`); for an HTTP server the \
                 transport is http or sse"
            ));
        }
        (Some(Stdio), None, false) => {
            return Err(match form {
                Form::Flags => {
                    "a stdio server needs a command: codecoder mcp add NAME -- CMD ARGS…".to_owned()
                }
                Form::Json => "a stdio server needs a `command`".to_owned(),
            });
        }
        (Some(kind @ (Http | Sse)), None, true) => {
            return Err(format!(
                "an {} server is reached at a URL, not by a command (`{}`)",
                kind.label(),
                spec.command[0]
            ));
        }
        (Some(kind @ (Http | Sse)), None, false) => {
            return Err(format!("an {} server needs a URL", kind.label()));
        }
        (Some(kind @ (Http | Sse)), Some(_), false) => kind,
    };
    let mut server = McpServerToml::default();
    match transport {
        Stdio => {
            if let Some((name, _)) = spec.headers.first() {
                return Err(format!(
                    "headers are for http and sse servers; `{name}` cannot go to a stdio server \
                     (it takes variables instead)"
                ));
            }
            if let Some(var) = &spec.bearer_token_env_var {
                return Err(format!(
                    "a bearer token is for http and sse servers; --bearer-token-env-var `{var}` \
                     cannot go to a stdio server"
                ));
            }
            if let Some((program, rest)) = spec.command.split_first() {
                if program.trim().is_empty() {
                    return Err("the command is empty".to_owned());
                }
                server.command = Some(program.clone());
                server.args = rest.to_vec();
            }
            server.env.extend(spec.env);
        }
        Http | Sse => {
            if let Some((key, _)) = spec.env.first() {
                return Err(format!(
                    "variables are for stdio servers (a command); `{key}` cannot go to an {} \
                     server",
                    transport.label()
                ));
            }
            let url = spec.url.unwrap_or_default();
            check_url(&url)?;
            server.url = Some(url);
            server.bearer_token_env_var = spec.bearer_token_env_var;
            for (name, value) in spec.headers {
                check_header(&name, &value)?;
                if server.http_headers.keys().any(|seen| seen.eq_ignore_ascii_case(&name)) {
                    return Err(format!("the header `{name}` is given twice"));
                }
                if value.contains("${") {
                    let var = bearer_variable(&name, &value).ok_or_else(|| {
                        format!(
                            "the header `{name}` uses `${{…}}`, which config.toml does not \
                             expand: give the value itself (a bearer token can be read from a \
                             variable: `Authorization: Bearer ${{VAR}}` or \
                             --bearer-token-env-var VAR)"
                        )
                    })?;
                    if let Some(given) = &server.bearer_token_env_var {
                        return Err(format!(
                            "the bearer token is given twice (from `{given}` and from the \
                             header `{name}`)"
                        ));
                    }
                    server.bearer_token_env_var = Some(var.to_owned());
                    continue;
                }
                server.http_headers.insert(name, value);
            }
            if transport == Sse {
                server.transport = Some(McpTransportToml::Sse);
            }
        }
    }
    if spec.sampling {
        server.sampling = Some(true);
    }
    Ok(server)
}

/// An `http://` or `https://` URL with a host.
fn check_url(url: &str) -> Checked<()> {
    let lower = url.to_ascii_lowercase();
    let rest = lower.strip_prefix("https://").or_else(|| lower.strip_prefix("http://"));
    let host = rest.and_then(|rest| rest.split(['/', '?', '#']).next()).unwrap_or("");
    if host.is_empty() || url.chars().any(char::is_whitespace) {
        return Err(format!(
            "`{url}` is not an http(s) URL (like https://example.com/mcp); a stdio server's \
             command goes after `--`"
        ));
    }
    Ok(())
}

/// A header name is an HTTP token; a value is one line.
fn check_header(name: &str, value: &str) -> Checked<()> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() {
        return Err("a header has an empty name".to_owned());
    }
    if !name.chars().all(token) {
        return Err(format!(
            "`{name}` is not a header name (letters, digits and `-`, as in `X-Api-Key`)"
        ));
    }
    if value.chars().any(|c| c == '\r' || c == '\n' || c == '\0') {
        return Err(format!("the value of the header `{name}` spans lines"));
    }
    Ok(())
}

/// `VAR` when the header is `Authorization: Bearer ${VAR}`.
fn bearer_variable<'a>(name: &str, value: &'a str) -> Option<&'a str> {
    if !name.eq_ignore_ascii_case("authorization") {
        return None;
    }
    let (scheme, rest) = value.split_at_checked(7)?;
    if !scheme.eq_ignore_ascii_case("bearer ") {
        return None;
    }
    let var = rest.strip_prefix("${")?.strip_suffix('}')?;
    let valid = !var.is_empty()
        && !var.starts_with(|c: char| c.is_ascii_digit())
        && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some(var)
}

#[cfg(test)]
mod tests;
