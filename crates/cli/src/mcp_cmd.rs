//! `codecoder mcp add|add-json|list|get|remove`: the `[mcp_servers.NAME]` tables of
//! `$CODECODER_HOME/config.toml`. The runtime checks a server's form and edits the file
//! (`codecoder_app::mcp_server_from_flags`, `add_mcp_server`, …) and writes the listings
//! (`McpListing::write_list`), masked: no env or header value is ever printed. This file maps
//! the flags.

use std::io::Write;
use std::process::ExitCode;

use codecoder_app::McpAddFlags;

use crate::cli::{GlobalArgs, McpCommand};

pub(crate) fn run(
    command: McpCommand,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    match command {
        McpCommand::Add(args) => {
            let server = codecoder_app::mcp_server_from_flags(McpAddFlags {
                transport: args.transport,
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
            listing.write_list(args.json, out)?;
        }
        McpCommand::Get(args) => {
            let listing = codecoder_app::Runtime::load(global.overrides())?.mcp_listing();
            let found = listing.write_server(&args.name, args.json, out)?;
            anyhow::ensure!(found, "no MCP server `{}`", args.name);
        }
    }
    Ok(ExitCode::SUCCESS)
}
