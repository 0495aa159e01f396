//! A session's MCP servers: from config.toml's `[mcp_servers.NAME]` and, in a trusted project,
//! the project's `.mcp.json` (Claude Code's format); started in parallel, their tools offered as
//! `mcp__<server>__<tool>`.
//!
//! Invariants: a server that is misconfigured, fails to start or does not start within its
//! startup timeout is a warning, never a failed session; an untrusted project's `.mcp.json` is
//! not read; a config.toml server replaces a `.mcp.json` server of the same name.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use codecoder_config::{LoadedConfig, McpServerToml};
use codecoder_kernel::Tool;
use codecoder_mcp::{McpManager, ReportOutcome, ServerConfig, Transport};

use crate::Notice;

/// The configured servers, and warnings about the ones left out.
pub(crate) fn server_configs(
    loaded: &LoadedConfig,
    cwd: &Path,
    lookup: &dyn Fn(&str) -> Option<OsString>,
) -> (Vec<ServerConfig>, Vec<Notice>) {
    let base = codecoder_mcp::base_env(lookup);
    let text_lookup = |name: &str| lookup(name).and_then(|v| v.into_string().ok());
    let mut notices = Vec::new();
    let mut servers: Vec<ServerConfig> = Vec::new();
    if loaded.project_trusted {
        let path = codecoder_config::project_root(cwd).join(".mcp.json");
        if let Ok(text) = fs_err::read_to_string(&path) {
            match codecoder_mcp::parse_mcp_json(&path, &text, &base, &text_lookup) {
                Ok(parsed) => servers.extend(parsed),
                Err(err) => notices.push(Notice::Warning(format!("MCP servers: {err}"))),
            }
        }
    }
    for (name, table) in &loaded.config.mcp_servers {
        if table.enabled == Some(false) {
            servers.retain(|s| &s.name != name);
            continue;
        }
        match from_toml(name, table, &base, &text_lookup) {
            Ok(server) => {
                servers.retain(|s| &s.name != name);
                servers.push(server);
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
            Transport::Http { url: url.clone(), bearer_token, headers: table.http_headers.clone() }
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
    Ok(server)
}

/// Starts the session's servers and returns their tools, with a warning for each server left
/// out. Waits at most the longest startup timeout.
pub(crate) fn start(loaded: &LoadedConfig, cwd: &Path) -> (Vec<Arc<dyn Tool>>, Vec<Notice>) {
    let lookup = |name: &str| std::env::var_os(name);
    let (servers, mut notices) = server_configs(loaded, cwd, &lookup);
    if servers.is_empty() {
        return (Vec::new(), notices);
    }
    let (manager, reports) = match McpManager::start(servers, cwd) {
        Ok(started) => started,
        Err(err) => {
            notices.push(Notice::Warning(format!("MCP servers: {err}")));
            return (Vec::new(), notices);
        }
    };
    for report in &reports {
        if !matches!(report.outcome, ReportOutcome::Ready { .. }) {
            notices.push(Notice::Warning(report.to_string()));
        }
    }
    (codecoder_mcp::tools(&Arc::new(manager)), notices)
}
