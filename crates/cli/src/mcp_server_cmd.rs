//! `codecoder mcp-server`: loads the configuration once (so a bad flag or config file fails at
//! start, with exit 2, rather than at the first call), shows its notices on stderr, and hands
//! stdin/stdout to the MCP server until the client closes them.
//!
//! Invariant: nothing but MCP reaches stdout; everything for the person goes to stderr.

use std::process::ExitCode;

use crate::cli::{GlobalArgs, McpServerArgs};

pub(crate) fn run(args: &McpServerArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let runtime = crate::load_runtime(global, args.model.clone(), args.provider.clone())?;
    let overrides = runtime.overrides().clone();
    drop(runtime);
    codecoder_mcp_server::serve_stdio(codecoder_mcp_server::Config {
        overrides,
        version: env!("CARGO_PKG_VERSION").to_owned(),
    })?;
    Ok(ExitCode::SUCCESS)
}
