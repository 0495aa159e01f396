//! `codecoder app-server`: serves codex's app-server protocol on stdin/stdout
//! (`codecoder-app-server`). stdout carries only protocol lines; notes go to stderr.

use std::process::ExitCode;

use crate::cli::{AppServerArgs, GlobalArgs};

pub(crate) fn run(args: &AppServerArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    if args.listen != "stdio://" {
        return Err(crate::exec::usage(format!(
            "--listen {}: only stdio:// is served (JSON lines on stdin and stdout)",
            args.listen
        )));
    }
    // Fail early, before the client sends anything, on a config that cannot load.
    let runtime = crate::load_runtime(global, None, None)?;
    drop(runtime);
    let config = codecoder_app_server::ServeConfig {
        overrides: global.overrides(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    codecoder_app_server::serve(
        config,
        Box::new(std::io::BufReader::new(std::io::stdin())),
        Box::new(std::io::stdout()),
    )?;
    Ok(ExitCode::SUCCESS)
}
