//! `codecoder models`: the runtime writes what a provider serves; the cli passes the flags.

use std::io::Write;
use std::process::ExitCode;

use crate::cli::{GlobalArgs, ModelsArgs};

pub(crate) fn run(
    args: &ModelsArgs,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let runtime = codecoder_app::Runtime::load(global.overrides())?;
    runtime.write_models(args.provider.as_deref(), args.json, out)?;
    Ok(ExitCode::SUCCESS)
}
