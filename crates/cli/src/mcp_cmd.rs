//! `codecoder mcp add|add-json|list|get|remove`: the `[mcp_servers.NAME]` tables of
//! `$CODECODER_HOME/config.toml`, as codex's `mcp` command manages them, taking Claude Code's
//! forms too (`--transport http|sse NAME URL`, `--header`, `-e`, `add-json NAME JSON`).
//!
//! Invariants: every form is checked whole before the file is touched, so a refused server
//! leaves config.toml as it was; editing keeps the rest of the file as it is; listing shows the
//! merged configuration with env and header values masked (they may be secrets).

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use codecoder_config::{McpServerToml, McpTransportToml};
use serde_json::Value;

use crate::cli::{GlobalArgs, McpAddArgs, McpCommand, McpTransportArg};

/// What `mcp get` and `mcp list` show instead of an env or header value.
const MASK: &str = "*****";

pub(crate) fn run(
    command: McpCommand,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    match command {
        // A refused server is a usage error (exit 2), as a bad name is.
        McpCommand::Add(args) => {
            let name = args.name.clone();
            let server = from_flags(args)
                .and_then(|spec| build(spec, Form::Flags))
                .map_err(|err| codecoder_app::Error::usage(format!("{err:#}")))?;
            add(&name, &server, out)?;
        }
        McpCommand::AddJson(args) => {
            let server = from_json(&args.json)
                .and_then(|spec| build(Spec { sampling: args.sampling, ..spec }, Form::Json))
                .map_err(|err| {
                    codecoder_app::Error::usage(format!(
                        "the server JSON for `{}`: {err:#}",
                        args.name
                    ))
                })?;
            add(&args.name, &server, out)?;
        }
        McpCommand::Remove(args) => {
            let home = codecoder_app::home()?;
            if codecoder_app::remove_mcp_server(&home, &args.name)? {
                writeln!(out, "removed MCP server `{}`", args.name)?;
            } else {
                anyhow::bail!(
                    "no MCP server `{}` in {}",
                    args.name,
                    home.join("config.toml").display()
                );
            }
        }
        McpCommand::List(args) => {
            let runtime = codecoder_app::Runtime::load(global.overrides())?;
            let servers = &runtime.loaded().config.mcp_servers;
            let others = from_elsewhere(&runtime);
            if args.json {
                let masked: BTreeMap<&String, McpServerToml> =
                    servers.iter().map(|(name, server)| (name, masked(server))).collect();
                writeln!(out, "{}", serde_json::to_string_pretty(&masked)?)?;
            } else if servers.is_empty() && others.is_empty() {
                writeln!(out, "no MCP servers configured (codecoder mcp add NAME -- CMD ARGS…)")?;
            } else {
                for (name, server) in servers {
                    let headers = if server.http_headers.is_empty() {
                        String::new()
                    } else {
                        let names: Vec<&str> =
                            server.http_headers.keys().map(String::as_str).collect();
                        format!(" (headers: {})", names.join(", "))
                    };
                    let enabled = if server.enabled == Some(false) { " (disabled)" } else { "" };
                    writeln!(out, "{name}  {}{headers}{enabled}", describe(server))?;
                }
                for entry in &others {
                    writeln!(out, "{}  {}  (from {})", entry.name, entry.how, entry.origin)?;
                }
            }
        }
        McpCommand::Get(args) => {
            let runtime = codecoder_app::Runtime::load(global.overrides())?;
            let Some(server) = runtime.loaded().config.mcp_servers.get(&args.name) else {
                // A server of `.mcp.json` or `~/.claude.json`: where it comes from and how it is
                // reached (their files hold the rest).
                let others = from_elsewhere(&runtime);
                let entry = others
                    .iter()
                    .find(|entry| entry.name == args.name)
                    .ok_or_else(|| anyhow::anyhow!("no MCP server `{}`", args.name))?;
                if args.json {
                    let value = serde_json::json!({
                        "name": entry.name, "how": entry.how, "origin": entry.origin,
                    });
                    writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
                } else {
                    writeln!(out, "{}\n  {}\n  from: {}", entry.name, entry.how, entry.origin)?;
                }
                return Ok(ExitCode::SUCCESS);
            };
            if args.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&masked(server))?)?;
            } else {
                writeln!(out, "{}", args.name)?;
                writeln!(out, "  {}", describe(server))?;
                // Names only: a value may be a secret.
                if !server.env.is_empty() {
                    writeln!(out, "  env: {}", masked_pairs(&server.env))?;
                }
                if !server.http_headers.is_empty() {
                    writeln!(out, "  headers: {}", masked_pairs(&server.http_headers))?;
                }
                if let Some(cwd) = &server.cwd {
                    writeln!(out, "  cwd: {cwd}")?;
                }
                if let Some(var) = &server.bearer_token_env_var {
                    writeln!(out, "  bearer token from: ${var}")?;
                }
                if server.sampling == Some(true) {
                    writeln!(out, "  sampling: allowed (it may ask the session's model)")?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn add(name: &str, server: &McpServerToml, out: &mut dyn Write) -> anyhow::Result<()> {
    let home = codecoder_app::home()?;
    let path = codecoder_app::add_mcp_server(&home, name, server)?;
    writeln!(out, "added MCP server `{name}` to {}", path.display())?;
    Ok(())
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
    transport: Option<McpTransportArg>,
    url: Option<String>,
    /// The program and its arguments (empty: none given).
    command: Vec<String>,
    env: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    bearer_token_env_var: Option<String>,
    sampling: bool,
}

fn from_flags(args: McpAddArgs) -> anyhow::Result<Spec> {
    let url = match (args.positional_url, args.url) {
        (Some(positional), Some(flag)) => anyhow::bail!(
            "the URL is given twice (`{positional}` and --url `{flag}`): give it once"
        ),
        (Some(url), None) | (None, Some(url)) => Some(url),
        (None, None) => None,
    };
    let mut env = Vec::new();
    for pair in &args.env {
        let Some((key, value)) = pair.split_once('=').filter(|(key, _)| !key.is_empty()) else {
            anyhow::bail!("--env wants KEY=VALUE, got `{pair}`");
        };
        env.push((key.to_owned(), value.to_owned()));
    }
    let mut headers = Vec::new();
    for raw in &args.headers {
        let Some((name, value)) = raw.split_once(':').filter(|(name, _)| !name.trim().is_empty())
        else {
            anyhow::bail!("--header `{raw}` is not `Name: value`");
        };
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    Ok(Spec {
        transport: args.transport,
        url,
        command: args.command,
        env,
        headers,
        bearer_token_env_var: args.bearer_token_env_var,
        sampling: args.sampling,
    })
}

/// Claude Code's JSON form of one server (an entry of `.mcp.json`'s `mcpServers`).
fn from_json(text: &str) -> anyhow::Result<Spec> {
    let value: Value = serde_json::from_str(text).map_err(|err| {
        anyhow::anyhow!("not valid JSON at line {}, column {}: {err}", err.line(), err.column())
    })?;
    let Value::Object(fields) = value else {
        anyhow::bail!(
            "expected an object like {{\"type\":\"stdio\",\"command\":…}} or \
             {{\"type\":\"http\",\"url\":…}}"
        );
    };
    let mut spec = Spec::default();
    let mut command = None;
    let mut args = Vec::new();
    for (key, value) in fields {
        match key.as_str() {
            "type" => {
                let kind = string(&key, value)?;
                spec.transport = Some(match kind.as_str() {
                    "stdio" => McpTransportArg::Stdio,
                    "http" => McpTransportArg::Http,
                    "sse" => McpTransportArg::Sse,
                    _ => anyhow::bail!(
                        "unknown type `{kind}`: the known types are \"stdio\", \"http\" and \
                         \"sse\""
                    ),
                });
            }
            "command" => command = Some(unexpanded(&key, string(&key, value)?)?),
            "url" => spec.url = Some(unexpanded(&key, string(&key, value)?)?),
            "args" => {
                let Value::Array(items) = value else {
                    anyhow::bail!("`args` must be an array of strings");
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
            _ => anyhow::bail!(
                "unknown key `{key}` (the known keys are type, command, args, env, url and \
                 headers)"
            ),
        }
    }
    match command {
        Some(program) => {
            spec.command.push(program);
            spec.command.extend(args);
        }
        None if !args.is_empty() => anyhow::bail!("`args` without a `command`"),
        None => {}
    }
    Ok(spec)
}

fn string(field: &str, value: Value) -> anyhow::Result<String> {
    match value {
        Value::String(text) => Ok(text),
        other => anyhow::bail!("`{field}` must be a string, not {other}"),
    }
}

fn object(field: &str, value: Value) -> anyhow::Result<serde_json::Map<String, Value>> {
    match value {
        Value::Object(map) => Ok(map),
        other => anyhow::bail!("`{field}` must be an object of strings, not {other}"),
    }
}

/// `text`, refused when it holds a `${VAR}`: Claude Code expands those when it reads
/// `.mcp.json`, config.toml does not, so writing it would send the literal text.
fn unexpanded(field: &str, text: String) -> anyhow::Result<String> {
    if text.contains("${") {
        anyhow::bail!(
            "`{field}` uses `${{…}}`, which config.toml does not expand: give the value itself"
        );
    }
    Ok(text)
}

/// The checked `[mcp_servers.NAME]` table of `spec`.
fn build(spec: Spec, form: Form) -> anyhow::Result<McpServerToml> {
    use McpTransportArg::{Http, Sse, Stdio};
    let has_command = !spec.command.is_empty();
    let transport = match (spec.transport, &spec.url, has_command) {
        (None, None, false) => match form {
            Form::Flags => anyhow::bail!(
                "give either a command (`codecoder mcp add NAME -- CMD ARGS…`) or a URL \
                 (`codecoder mcp add --transport http NAME URL`, or --url URL)"
            ),
            Form::Json => anyhow::bail!("it needs a `command` (stdio) or a `url` (http, sse)"),
        },
        (_, Some(url), true) => anyhow::bail!(
            "give either a command or a URL, not both (the URL is `{url}`, the command `{}`)",
            spec.command[0]
        ),
        (None | Some(Stdio), None, true) => Stdio,
        (None, Some(_), false) => Http,
        (Some(Stdio), Some(url), false) => anyhow::bail!(
            "a stdio server is a command, not a URL (`{url}`); for an HTTP server the \
             transport is http or sse"
        ),
        (Some(Stdio), None, false) => match form {
            Form::Flags => {
                anyhow::bail!("a stdio server needs a command: codecoder mcp add NAME -- CMD ARGS…")
            }
            Form::Json => anyhow::bail!("a stdio server needs a `command`"),
        },
        (Some(kind @ (Http | Sse)), None, true) => anyhow::bail!(
            "an {} server is reached at a URL, not by a command (`{}`)",
            label(kind),
            spec.command[0]
        ),
        (Some(kind @ (Http | Sse)), None, false) => {
            anyhow::bail!("an {} server needs a URL", label(kind))
        }
        (Some(kind @ (Http | Sse)), Some(_), false) => kind,
    };
    let mut server = McpServerToml::default();
    match transport {
        Stdio => {
            if let Some((name, _)) = spec.headers.first() {
                anyhow::bail!(
                    "headers are for http and sse servers; `{name}` cannot go to a stdio server \
                     (it takes variables instead)"
                );
            }
            if let Some(var) = &spec.bearer_token_env_var {
                anyhow::bail!(
                    "a bearer token is for http and sse servers; --bearer-token-env-var `{var}` \
                     cannot go to a stdio server"
                );
            }
            if let Some((program, rest)) = spec.command.split_first() {
                if program.trim().is_empty() {
                    anyhow::bail!("the command is empty");
                }
                server.command = Some(program.clone());
                server.args = rest.to_vec();
            }
            for (key, value) in spec.env {
                server.env.insert(key, value);
            }
        }
        Http | Sse => {
            if let Some((key, _)) = spec.env.first() {
                anyhow::bail!(
                    "variables are for stdio servers (a command); `{key}` cannot go to an {} \
                     server",
                    label(transport)
                );
            }
            let url = spec.url.unwrap_or_default();
            check_url(&url)?;
            server.url = Some(url);
            server.bearer_token_env_var = spec.bearer_token_env_var;
            for (name, value) in spec.headers {
                check_header(&name, &value)?;
                if server.http_headers.keys().any(|seen| seen.eq_ignore_ascii_case(&name)) {
                    anyhow::bail!("the header `{name}` is given twice");
                }
                if value.contains("${") {
                    let var = bearer_variable(&name, &value).ok_or_else(|| {
                        anyhow::anyhow!(
                            "the header `{name}` uses `${{…}}`, which config.toml does not \
                             expand: give the value itself (a bearer token can be read from a \
                             variable: `Authorization: Bearer ${{VAR}}` or \
                             --bearer-token-env-var VAR)"
                        )
                    })?;
                    if let Some(given) = &server.bearer_token_env_var {
                        anyhow::bail!(
                            "the bearer token is given twice (from `{given}` and from the \
                             header `{name}`)"
                        );
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

fn label(transport: McpTransportArg) -> &'static str {
    match transport {
        McpTransportArg::Stdio => "stdio",
        McpTransportArg::Http => "http",
        McpTransportArg::Sse => "sse",
    }
}

/// An `http://` or `https://` URL with a host.
fn check_url(url: &str) -> anyhow::Result<()> {
    let lower = url.to_ascii_lowercase();
    let rest = lower.strip_prefix("https://").or_else(|| lower.strip_prefix("http://"));
    let host = rest.and_then(|rest| rest.split(['/', '?', '#']).next()).unwrap_or("");
    if host.is_empty() || url.chars().any(char::is_whitespace) {
        anyhow::bail!(
            "`{url}` is not an http(s) URL (like https://example.com/mcp); a stdio server's \
             command goes after `--`"
        );
    }
    Ok(())
}

/// A header name is an HTTP token; a value is one line.
fn check_header(name: &str, value: &str) -> anyhow::Result<()> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() {
        anyhow::bail!("a header has an empty name");
    }
    if !name.chars().all(token) {
        anyhow::bail!("`{name}` is not a header name (letters, digits and `-`, as in `X-Api-Key`)");
    }
    if value.chars().any(|c| c == '\r' || c == '\n' || c == '\0') {
        anyhow::bail!("the value of the header `{name}` spans lines");
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

/// The servers a session would start that config.toml does not define (plugins,
/// `~/.claude.json`, a trusted project's `.mcp.json`).
fn from_elsewhere(runtime: &codecoder_app::Runtime) -> Vec<codecoder_app::McpServerEntry> {
    let (entries, _) = runtime.mcp_servers();
    entries.into_iter().filter(|entry| entry.origin != "config.toml").collect()
}

/// `server` with its env and header values replaced by [`MASK`].
fn masked(server: &McpServerToml) -> McpServerToml {
    let mut server = server.clone();
    server.env.values_mut().for_each(|value| MASK.clone_into(value));
    server.http_headers.values_mut().for_each(|value| MASK.clone_into(value));
    server
}

/// `A=*****, B=*****`.
fn masked_pairs(map: &BTreeMap<String, String>) -> String {
    map.keys().map(|key| format!("{key}={MASK}")).collect::<Vec<_>>().join(", ")
}

fn describe(server: &McpServerToml) -> String {
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
