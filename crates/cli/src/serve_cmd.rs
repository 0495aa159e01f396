//! `codecoder acp`, `codecoder app-server` and `codecoder mcp-server`: a protocol server on this
//! process's stdin and stdout (`codecoder_acp`, `codecoder_app_server`, `codecoder_mcp_server`).
//! Each loads the configuration once first, so a bad flag or config file fails at start (exit
//! 2) rather than at the first request.
//!
//! Invariant: nothing but the protocol reaches stdout; everything for the person (notices)
//! goes to stderr, which editors keep as the agent's log.

use std::io::{self, BufReader};
use std::process::ExitCode;
use std::sync::Arc;

use crate::cli::{AcpArgs, AppServerArgs, GlobalArgs, McpServerArgs};

pub(crate) fn run_acp(args: &AcpArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let mut overrides = global.overrides();
    overrides.model.clone_from(&args.model);
    overrides.provider.clone_from(&args.provider);
    codecoder_app::Runtime::load(overrides.clone())?;
    let config = codecoder_acp::ServeConfig {
        overrides,
        notice: Arc::new(|text: &str| eprintln!("{text}")),
    };
    codecoder_acp::serve(config, Box::new(BufReader::new(io::stdin())), Box::new(io::stdout()))?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn run_app_server(
    args: &AppServerArgs,
    global: &GlobalArgs,
) -> anyhow::Result<ExitCode> {
    if args.listen != "stdio://" {
        return Err(crate::exec::usage(format!(
            "--listen {}: only stdio:// is served (JSON lines on stdin and stdout)",
            args.listen
        )));
    }
    drop(crate::load_runtime(global, None, None)?);
    let config = codecoder_app_server::ServeConfig {
        overrides: global.overrides(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    codecoder_app_server::serve(
        config,
        Box::new(BufReader::new(io::stdin())),
        Box::new(io::stdout()),
    )?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn run_mcp_server(
    args: &McpServerArgs,
    global: &GlobalArgs,
) -> anyhow::Result<ExitCode> {
    let runtime = crate::load_runtime(global, args.model.clone(), args.provider.clone())?;
    let overrides = runtime.overrides().clone();
    drop(runtime);
    codecoder_mcp_server::serve_stdio(codecoder_mcp_server::Config {
        overrides,
        version: env!("CARGO_PKG_VERSION").to_owned(),
    })?;
    Ok(ExitCode::SUCCESS)
}
