//! `codecoder config show|schema`, `codecoder trust`, `codecoder login`: the runtime writes the
//! settings (`Runtime::write_settings`), records trust and stores keys; this file reads the key
//! from stdin and prints one-line confirmations.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::{ConfigCommand, GlobalArgs, LoginArgs, TrustArgs};

pub(crate) fn run_config(
    command: ConfigCommand,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    match command {
        ConfigCommand::Schema => write!(out, "{}", codecoder_app::config_schema())?,
        ConfigCommand::Show(args) => {
            codecoder_app::Runtime::load(global.overrides())?.write_settings(args.origin, out)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn run_trust(
    args: &TrustArgs,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let dir = match &args.dir {
        Some(dir) => fs_err::canonicalize(dir)?,
        None => codecoder_app::resolve_cwd(global.cd.as_deref())?,
    };
    let recorded = codecoder_app::trust_project(&codecoder_app::home()?, &dir)?;
    writeln!(out, "trusted {}", recorded.display())?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn run_login(args: &LoginArgs, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let mut key = String::new();
    std::io::stdin().lock().read_line(&mut key).context("reading the API key from stdin")?;
    let key = key.trim();
    anyhow::ensure!(
        !key.is_empty(),
        "no API key on stdin: pipe it in, e.g. `codecoder login --provider {} < key.txt`",
        args.provider
    );
    let file = codecoder_app::store_api_key(&codecoder_app::home()?, &args.provider, key)?;
    writeln!(out, "saved the API key for `{}` in {}", args.provider, file.display())?;
    Ok(ExitCode::SUCCESS)
}
