//! `codecoder mcp add|list|get|remove`: the `[mcp_servers.NAME]` tables of
//! `$CODECODER_HOME/config.toml`, as codex's `mcp` command manages them. Editing keeps the rest
//! of the file as it is; listing shows the merged configuration.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use codecoder_config::McpServerToml;

use crate::cli::{GlobalArgs, McpCommand};

pub(crate) fn run(
    command: McpCommand,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    match command {
        McpCommand::Add(args) => {
            let mut server = McpServerToml::default();
            match (args.url, args.command.split_first()) {
                (Some(url), None) => {
                    anyhow::ensure!(args.env.is_empty(), "--env is for stdio servers (a command)");
                    server.url = Some(url);
                    server.bearer_token_env_var = args.bearer_token_env_var;
                }
                (None, Some((program, rest))) => {
                    server.command = Some(program.clone());
                    server.args = rest.to_vec();
                    for pair in &args.env {
                        let (key, value) = pair.split_once('=').ok_or_else(|| {
                            anyhow::anyhow!("--env wants KEY=VALUE, got `{pair}`")
                        })?;
                        server.env.insert(key.to_owned(), value.to_owned());
                    }
                }
                _ => anyhow::bail!(
                    "give either a command (`codecoder mcp add NAME -- CMD ARGS…`) or --url URL"
                ),
            }
            if args.sampling {
                server.sampling = Some(true);
            }
            let home = codecoder_app::home()?;
            let path = codecoder_app::add_mcp_server(&home, &args.name, &server)?;
            writeln!(out, "added MCP server `{}` to {}", args.name, path.display())?;
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
            let servers = servers(global)?;
            if args.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&servers)?)?;
            } else if servers.is_empty() {
                writeln!(out, "no MCP servers configured (codecoder mcp add NAME -- CMD ARGS…)")?;
            } else {
                for (name, server) in &servers {
                    let enabled = if server.enabled == Some(false) { " (disabled)" } else { "" };
                    writeln!(out, "{name}  {}{enabled}", describe(server))?;
                }
            }
        }
        McpCommand::Get(args) => {
            let servers = servers(global)?;
            let server = servers
                .get(&args.name)
                .ok_or_else(|| anyhow::anyhow!("no MCP server `{}`", args.name))?;
            if args.json {
                writeln!(out, "{}", serde_json::to_string_pretty(server)?)?;
            } else {
                writeln!(out, "{}", args.name)?;
                writeln!(out, "  {}", describe(server))?;
                // Names only: a value may be a secret.
                if !server.env.is_empty() {
                    let keys: Vec<&str> = server.env.keys().map(String::as_str).collect();
                    writeln!(out, "  env: {}", keys.join(", "))?;
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

fn servers(global: &GlobalArgs) -> anyhow::Result<BTreeMap<String, McpServerToml>> {
    let runtime = codecoder_app::Runtime::load(global.overrides())?;
    Ok(runtime.loaded().config.mcp_servers.clone())
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
        (None, Some(url)) => format!("http: {url}"),
        (None, None) => "(neither command nor url)".to_owned(),
    }
}
