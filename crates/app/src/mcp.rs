//! A session's MCP servers: from config.toml's `[mcp_servers.NAME]` and Claude Code's files
//! (the enabled plugins' `.mcp.json`, the user's `~/.claude.json` `mcpServers`, and a trusted
//! project's `.mcp.json`); started in
//! parallel while the session starts, their tools offered as `mcp__<server>__<tool>` from the
//! first request on (which waits for the servers to settle).
//!
//! Invariants: a server that is misconfigured, fails to start or does not start within its
//! startup timeout is a warning, never a failed session; an untrusted project's `.mcp.json` is
//! not read; a later source replaces an earlier server of the same name (plugins, then
//! `~/.claude.json`, then `.mcp.json`, then config.toml).

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use codecoder_config::{LoadedConfig, McpServerToml, McpTransportToml};
use codecoder_kernel::LateTools;
use codecoder_mcp::{McpManager, ReportOutcome, ServerConfig, Transport};

use crate::Notice;

/// The configured servers, and warnings about the ones left out.
pub(crate) fn server_configs(
    loaded: &LoadedConfig,
    cwd: &Path,
    lookup: &dyn Fn(&str) -> Option<OsString>,
) -> (Vec<ServerConfig>, Vec<Notice>) {
    let (servers, notices) = configured(loaded, cwd, lookup);
    (servers.into_iter().map(|(server, _)| server).collect(), notices)
}

/// The names of the configured servers (a session's `mcp__NAME__…` tools), without starting
/// any.
pub(crate) fn configured_server_names(loaded: &LoadedConfig, cwd: &Path) -> Vec<String> {
    let lookup = |name: &str| std::env::var_os(name);
    let (servers, _) = configured(loaded, cwd, &lookup);
    servers.into_iter().map(|(server, _)| server.name).collect()
}

/// A server a session would start, as `codecoder mcp list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerEntry {
    /// Its name (`mcp__NAME__…`).
    pub name: String,
    /// How it is reached: `stdio: CMD ARGS`, `http: URL`, `sse: URL`.
    pub how: String,
    /// Where it is configured: `config.toml`, or the path of a `.mcp.json` or `.claude.json`.
    pub origin: String,
}

/// Every server a session here would start, with where each is configured, and warnings about
/// the ones left out.
pub(crate) fn entries(
    loaded: &LoadedConfig,
    cwd: &Path,
    lookup: &dyn Fn(&str) -> Option<OsString>,
) -> (Vec<McpServerEntry>, Vec<Notice>) {
    let (servers, notices) = configured(loaded, cwd, lookup);
    let entries = servers
        .into_iter()
        .map(|(server, origin)| McpServerEntry {
            how: describe(&server.transport),
            name: server.name,
            origin,
        })
        .collect();
    (entries, notices)
}

/// How a server is reached, in one line.
fn describe(transport: &Transport) -> String {
    match transport {
        Transport::Stdio { command, args, .. } => {
            format!("stdio: {command} {}", args.join(" ")).trim_end().to_owned()
        }
        Transport::Http { url, .. } => format!("http: {url}"),
        Transport::Sse { url, .. } => format!("sse: {url}"),
        Transport::InProcess(_) => "in-process".to_owned(),
    }
}

/// The servers with where each is configured: plugins, then `~/.claude.json`, then the trusted
/// project's `.mcp.json`, then config.toml, a later one replacing an earlier of the same name.
fn configured(
    loaded: &LoadedConfig,
    cwd: &Path,
    lookup: &dyn Fn(&str) -> Option<OsString>,
) -> (Vec<(ServerConfig, String)>, Vec<Notice>) {
    let base = codecoder_mcp::base_env(lookup);
    let text_lookup = |name: &str| lookup(name).and_then(|v| v.into_string().ok());
    let mut notices = Vec::new();
    let mut servers: Vec<(ServerConfig, String)> = Vec::new();
    // The enabled plugins' `.mcp.json`, `${CLAUDE_PLUGIN_ROOT}` being the plugin's directory.
    if let Some(home) = codecoder_stdx::codecoder_home(lookup) {
        let mut warnings = Vec::new();
        let mut files = Vec::new();
        for plugin in crate::plugins::enabled(&home, &mut warnings) {
            files.push((plugin.dir.clone(), plugin.dir.join(".mcp.json")));
            for path in crate::plugins::component_paths(&plugin.dir, "mcpServers", &mut warnings) {
                files.push((plugin.dir.clone(), path));
            }
        }
        for (dir, path) in files {
            let Ok(text) = fs_err::read_to_string(&path) else { continue };
            let root = dir.to_string_lossy().into_owned();
            let plugin_lookup = |name: &str| {
                if name == codecoder_protocol::env::CLAUDE_PLUGIN_ROOT {
                    Some(root.clone())
                } else {
                    text_lookup(name)
                }
            };
            match codecoder_mcp::parse_mcp_json(&path, &text, &base, &plugin_lookup) {
                Ok(parsed) => {
                    for server in parsed {
                        servers.retain(|(s, _)| s.name != server.name);
                        servers.push((server, path.display().to_string()));
                    }
                }
                Err(err) => notices.push(Notice::Warning(format!("MCP servers: {err}"))),
            }
        }
        notices.extend(warnings.into_iter().map(Notice::Warning));
    }
    // Claude Code's user servers (`mcpServers` of `~/.claude.json`), then the trusted project's.
    let mut files = Vec::new();
    if let Some(user_home) = lookup(codecoder_protocol::env::HOME) {
        files.push(Path::new(&user_home).join(".claude.json"));
    }
    let project_servers = codecoder_config::project_root(cwd).join(".mcp.json");
    if loaded.project_trusted {
        files.push(project_servers);
    } else if project_servers.is_file() {
        notices.push(Notice::Warning(format!(
            "MCP servers: {} is not read: this project is not trusted (`codecoder trust` to use \
             its servers)",
            project_servers.display()
        )));
    }
    for path in files {
        let Ok(text) = fs_err::read_to_string(&path) else { continue };
        match codecoder_mcp::parse_mcp_json(&path, &text, &base, &text_lookup) {
            Ok(parsed) => {
                for server in parsed {
                    servers.retain(|(s, _)| s.name != server.name);
                    servers.push((server, path.display().to_string()));
                }
            }
            Err(err) => notices.push(Notice::Warning(format!("MCP servers: {err}"))),
        }
    }
    for (name, table) in &loaded.config.mcp_servers {
        if table.enabled == Some(false) {
            servers.retain(|(s, _)| &s.name != name);
            continue;
        }
        match from_toml(name, table, &base, &text_lookup) {
            Ok(server) => {
                servers.retain(|(s, _)| &s.name != name);
                servers.push((server, "config.toml".to_owned()));
            }
            Err(message) => {
                notices.push(Notice::Warning(format!("[mcp_servers.{name}]: {message}")));
            }
        }
    }
    (servers, notices)
}

fn from_toml(
    name: &str,
    table: &McpServerToml,
    base: &std::collections::BTreeMap<String, String>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerConfig, String> {
    let transport = match (&table.command, &table.url) {
        (Some(_), None) if table.transport.is_some() => {
            return Err("`transport` applies to a `url` server only".to_owned());
        }
        (Some(command), None) => {
            let mut env = base.clone();
            env.extend(table.env.clone());
            Transport::Stdio {
                command: command.clone(),
                args: table.args.clone(),
                env,
                cwd: table.cwd.as_ref().map(Into::into),
            }
        }
        (None, Some(url)) => {
            let bearer_token = match &table.bearer_token_env_var {
                Some(var) => Some(
                    lookup(var)
                        .ok_or_else(|| format!("bearer_token_env_var `{var}` is not set"))?,
                ),
                None => None,
            };
            let (url, headers) = (url.clone(), table.http_headers.clone());
            match table.transport {
                Some(McpTransportToml::Sse) => Transport::Sse { url, bearer_token, headers },
                Some(McpTransportToml::Http) | None => {
                    Transport::Http { url, bearer_token, headers }
                }
            }
        }
        _ => return Err("needs exactly one of `command` (stdio) and `url` (HTTP)".to_owned()),
    };
    let mut server = ServerConfig::new(name, transport);
    let seconds = |value: Option<f64>, default: Duration| {
        value.filter(|s| s.is_finite() && *s > 0.0).map_or(default, Duration::from_secs_f64)
    };
    server.startup_timeout = seconds(table.startup_timeout_sec, server.startup_timeout);
    server.tool_timeout = seconds(table.tool_timeout_sec, server.tool_timeout);
    server.enabled_tools.clone_from(&table.enabled_tools);
    server.disabled_tools.clone_from(&table.disabled_tools);
    server.sampling = table.sampling == Some(true);
    Ok(server)
}

/// What a session offers its servers beyond their tools' calls.
pub(crate) struct McpSession {
    /// A person can answer a server's questions.
    pub(crate) interactive: bool,
    /// The session's model, for servers with `sampling = true`.
    pub(crate) sampler: Option<Arc<codecoder_mcp::Sampler>>,
    /// The servers' log file.
    pub(crate) log: Option<std::path::PathBuf>,
}

/// Starts the session's servers and returns at once: their tools join the returned
/// `LateTools` at the agent's first step, which waits for every server to be ready, failed or
/// past its startup timeout (a failure becomes a warning there); tools a server adds later
/// join at a later step. `None` when no
/// server is configured; the notices are configuration problems found now. `extra` are a
/// front-end's servers (an editor's), started after the configured ones and replacing any of
/// the same name; with `only_extra`, the configured ones are not started at all.
pub(crate) fn start(
    loaded: &LoadedConfig,
    cwd: &Path,
    session: McpSession,
    extra: &[ServerConfig],
    only_extra: bool,
) -> (Option<(LateTools, Arc<McpManager>)>, Vec<Notice>) {
    let lookup = |name: &str| std::env::var_os(name);
    let (mut servers, mut notices) =
        if only_extra { (Vec::new(), Vec::new()) } else { server_configs(loaded, cwd, &lookup) };
    for server in extra {
        servers.retain(|s| s.name != server.name);
        servers.push(server.clone());
    }
    if servers.is_empty() {
        return (None, notices);
    }
    let options = codecoder_mcp::Options {
        elicitation: session.interactive,
        sampler: session.sampler,
        log: session.log,
    };
    match McpManager::launch(servers, cwd, options) {
        Ok(manager) => {
            let manager = Arc::new(manager);
            let source = codecoder_mcp::McpToolSource::new(Arc::clone(&manager));
            (Some((LateTools::with_source(Arc::new(source)), manager)), notices)
        }
        Err(err) => {
            notices.push(Notice::Warning(format!("MCP servers: {err}")));
            (None, notices)
        }
    }
}

/// `codecoder doctor`'s section: each configured server, started to see its state.
pub(crate) fn doctor(
    loaded: &LoadedConfig,
    cwd: &Path,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let lookup = |name: &str| std::env::var_os(name);
    let (servers, notices) = server_configs(loaded, cwd, &lookup);
    writeln!(
        out,
        "MCP servers (stdio servers run outside the command sandbox, as codex runs them):"
    )?;
    if servers.is_empty() && notices.is_empty() {
        writeln!(out, "  (none)")?;
    }
    for notice in &notices {
        writeln!(out, "  {notice}")?;
    }
    let described: Vec<(String, String)> =
        servers.iter().map(|s| (s.name.clone(), describe(&s.transport))).collect();
    if servers.is_empty() {
        return Ok(());
    }
    match McpManager::start(servers, cwd) {
        Ok((manager, reports)) => {
            for ((name, how), report) in described.iter().zip(&reports) {
                let state = match &report.outcome {
                    ReportOutcome::Ready { tools } => {
                        let protocol = manager.protocol_version(name).unwrap_or_default();
                        format!("ready, {tools} tools, protocol {protocol}")
                    }
                    ReportOutcome::Failed { message } => format!("failed: {message}"),
                    ReportOutcome::TimedOut { seconds } => {
                        format!("did not start within {seconds} s")
                    }
                };
                writeln!(out, "  {name} ({how}): {state}")?;
            }
        }
        Err(err) => writeln!(out, "  cannot start the MCP runtime: {err}")?,
    }
    Ok(())
}

/// Adds (or replaces) `[mcp_servers.NAME]` in `$CODECODER_HOME/config.toml`, keeping the rest
/// of the file as it is. Returns the file's path.
///
/// # Errors
/// When the name is not `[A-Za-z0-9_-]+`, or the file cannot be read or written.
pub fn add_mcp_server(
    home: &Path,
    name: &str,
    server: &McpServerToml,
) -> crate::Result<std::path::PathBuf> {
    check_name(name)?;
    let wrapper = codecoder_config::ConfigToml {
        mcp_servers: std::collections::BTreeMap::from([(name.to_owned(), server.clone())]),
        ..Default::default()
    };
    let table = toml::to_string(&wrapper)
        .map_err(|err| crate::Error::usage(format!("[mcp_servers.{name}]: {err}")))?;
    let file = lock_config(home)?;
    let mut kept = without_table(&file.read().map_err(io("reading the config"))?, name);
    if !kept.is_empty() && !kept.ends_with("\n\n") {
        kept.push_str(if kept.ends_with('\n') { "\n" } else { "\n\n" });
    }
    kept.push_str(&table);
    file.write(&kept).map_err(io("writing the config"))?;
    Ok(file.path().to_owned())
}

/// Removes `[mcp_servers.NAME]` (and its sub-tables) from `$CODECODER_HOME/config.toml`,
/// keeping the rest of the file. Returns whether it was there.
///
/// # Errors
/// When the name is not `[A-Za-z0-9_-]+`, or the file cannot be read or written.
pub fn remove_mcp_server(home: &Path, name: &str) -> crate::Result<bool> {
    check_name(name)?;
    let file = lock_config(home)?;
    let text = file.read().map_err(io("reading the config"))?;
    let kept = without_table(&text, name);
    if kept == text {
        return Ok(false);
    }
    file.write(&kept).map_err(io("writing the config"))?;
    Ok(true)
}

/// `$CODECODER_HOME/config.toml`, locked for an edit.
fn lock_config(home: &Path) -> crate::Result<codecoder_config::HomeFile> {
    codecoder_config::HomeFile::lock(&home.join("config.toml")).map_err(io("locking the config"))
}

fn io(context: &'static str) -> impl FnOnce(std::io::Error) -> crate::Error {
    move |source| crate::Error::Io { context: context.to_owned(), source }
}

fn check_name(name: &str) -> crate::Result<()> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err(crate::Error::usage(format!(
            "`{name}` is not a server name: use letters, digits, `_` and `-`"
        )));
    }
    Ok(())
}

/// `text` without the `[mcp_servers.NAME]` table and its `[mcp_servers.NAME.*]` sub-tables
/// (a table runs from its header to the next header).
pub(crate) fn without_table(text: &str, name: &str) -> String {
    let heads = [format!("mcp_servers.{name}"), format!("mcp_servers.\"{name}\"")];
    let is_ours = |header: &str| {
        heads.iter().any(|head| {
            header == head || header.strip_prefix(head.as_str()).is_some_and(|r| r.starts_with('.'))
        })
    };
    let mut out = String::with_capacity(text.len());
    let mut skipping = false;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            let header = trimmed.trim_start_matches('[').split(']').next().unwrap_or("").trim();
            skipping = is_ours(header);
        }
        if !skipping {
            out.push_str(line);
        }
    }
    out
}

/// A server given in Claude Code's JSON form (an entry of `mcpServers`, as `--mcp-config` or an
/// SDK's `initialize` carries it), ready for `SessionRequest::mcp_servers`. `lookup` reads the
/// environment for the server's base set and `bearer_token_env_var`.
///
/// # Errors
/// `Usage`, naming the server and the problem, when the JSON is not one server.
pub fn mcp_server_config(
    name: &str,
    json: &serde_json::Value,
    lookup: &dyn Fn(&str) -> Option<OsString>,
) -> crate::Result<ServerConfig> {
    let table = crate::mcp_server_from_json(name, &json.to_string(), false)?;
    let base = codecoder_mcp::base_env(lookup);
    let text_lookup = |var: &str| lookup(var).and_then(|v| v.into_string().ok());
    from_toml(name, &table, &base, &text_lookup)
        .map_err(|err| crate::Error::usage(format!("MCP server `{name}`: {err}")))
}
