//! `codecoder acp`: the ACP agent (`codecoder_acp::serve`) on this process's stdin and stdout;
//! notices go to stderr, which editors keep as the agent's log.

use std::io::{self, BufReader};
use std::process::ExitCode;
use std::sync::Arc;

use crate::cli::{AcpArgs, GlobalArgs};

pub(crate) fn run(args: &AcpArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let mut overrides = global.overrides();
    overrides.model.clone_from(&args.model);
    overrides.provider.clone_from(&args.provider);
    // Fail now, not at the first session, when the config itself is broken.
    codecoder_app::Runtime::load(overrides.clone())?;
    let config = codecoder_acp::ServeConfig {
        overrides,
        notice: Arc::new(|text: &str| eprintln!("{text}")),
    };
    let input = Box::new(BufReader::new(io::stdin()));
    let output = Box::new(io::stdout());
    codecoder_acp::serve(config, input, output)?;
    Ok(ExitCode::SUCCESS)
}
