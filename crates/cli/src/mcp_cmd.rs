//! `codecoder mcp add|add-json|list|get|remove`: the `[mcp_servers.NAME]` tables of
//! `$CODECODER_HOME/config.toml`. The runtime checks a server's form and edits the file
//! (`codecoder_app::mcp_server_from_flags`, `add_mcp_server`, …); this file maps the flags and
//! prints. Listings come masked from the runtime: no env or header value is ever printed.

use std::io::Write;
use std::process::ExitCode;

use codecoder_app::{McpAddFlags, McpTransport, describe_mcp_server};

use crate::cli::{GlobalArgs, McpCommand, McpTransportArg};

pub(crate) fn run(
    command: McpCommand,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    match command {
        McpCommand::Add(args) => {
            let server = codecoder_app::mcp_server_from_flags(McpAddFlags {
                transport: args.transport.map(|transport| match transport {
                    McpTransportArg::Stdio => McpTransport::Stdio,
                    McpTransportArg::Http => McpTransport::Http,
                    McpTransportArg::Sse => McpTransport::Sse,
                }),
                positional_url: args.positional_url,
                url: args.url,
                env: args.env,
                headers: args.headers,
                bearer_token_env_var: args.bearer_token_env_var,
                sampling: args.sampling,
                command: args.command,
            })?;
            let path = codecoder_app::add_mcp_server(&codecoder_app::home()?, &args.name, &server)?;
            writeln!(out, "added MCP server `{}` to {}", args.name, path.display())?;
        }
        McpCommand::AddJson(args) => {
            let server =
                codecoder_app::mcp_server_from_json(&args.name, &args.json, args.sampling)?;
            let path = codecoder_app::add_mcp_server(&codecoder_app::home()?, &args.name, &server)?;
            writeln!(out, "added MCP server `{}` to {}", args.name, path.display())?;
        }
        McpCommand::Remove(args) => {
            let home = codecoder_app::home()?;
            anyhow::ensure!(
                codecoder_app::remove_mcp_server(&home, &args.name)?,
                "no MCP server `{}` in {}",
                args.name,
                home.join("config.toml").display()
            );
            writeln!(out, "removed MCP server `{}`", args.name)?;
        }
        McpCommand::List(args) => {
            let listing = codecoder_app::Runtime::load(global.overrides())?.mcp_listing();
            if args.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&listing.configured)?)?;
            } else if listing.configured.is_empty() && listing.elsewhere.is_empty() {
                writeln!(out, "no MCP servers configured (codecoder mcp add NAME -- CMD ARGS…)")?;
            } else {
                for (name, server) in &listing.configured {
                    let headers = if server.http_headers.is_empty() {
                        String::new()
                    } else {
                        let names: Vec<&str> =
                            server.http_headers.keys().map(String::as_str).collect();
                        format!(" (headers: {})", names.join(", "))
                    };
                    let enabled = if server.enabled == Some(false) { " (disabled)" } else { "" };
                    writeln!(out, "{name}  {}{headers}{enabled}", describe_mcp_server(server))?;
                }
                for entry in &listing.elsewhere {
                    writeln!(out, "{}  {}  (from {})", entry.name, entry.how, entry.origin)?;
                }
            }
        }
        McpCommand::Get(args) => {
            let listing = codecoder_app::Runtime::load(global.overrides())?.mcp_listing();
            let Some(server) = listing.configured.get(&args.name) else {
                // A server of `.mcp.json` or `~/.claude.json`: where it comes from and how it is
                // reached (their files hold the rest).
                let entry = listing
                    .elsewhere
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
                writeln!(out, "{}", serde_json::to_string_pretty(server)?)?;
                return Ok(ExitCode::SUCCESS);
            }
            writeln!(out, "{}\n  {}", args.name, describe_mcp_server(server))?;
            // The listing's values are masked already: a value may be a secret.
            let pairs = |map: &std::collections::BTreeMap<String, String>| {
                map.iter().map(|(key, value)| format!("{key}={value}")).collect::<Vec<_>>()
            };
            if !server.env.is_empty() {
                writeln!(out, "  env: {}", pairs(&server.env).join(", "))?;
            }
            if !server.http_headers.is_empty() {
                writeln!(out, "  headers: {}", pairs(&server.http_headers).join(", "))?;
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
    Ok(ExitCode::SUCCESS)
}
