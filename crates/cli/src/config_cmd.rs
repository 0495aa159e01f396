//! `codecoder config show|schema`, `codecoder trust`, `codecoder login`.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use toml::Value;

use crate::cli::{ConfigCommand, GlobalArgs, LoginArgs, TrustArgs};

/// The codecoder home, from `$CODECODER_HOME` or `~/.codecoder`.
pub(crate) fn home() -> anyhow::Result<PathBuf> {
    Ok(codecoder_app::home()?)
}

pub(crate) fn run_config(
    command: ConfigCommand,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    match command {
        ConfigCommand::Schema => write!(out, "{}", codecoder_config::json_schema())?,
        ConfigCommand::Show(args) => {
            let runtime = codecoder_app::Runtime::load(global.overrides())?;
            let loaded = runtime.loaded();
            for notice in &loaded.notices {
                writeln!(out, "# note: {notice}")?;
            }
            if let Some(profile) = &loaded.profile {
                writeln!(out, "# profile: {profile}")?;
            }
            let mut leaves = Vec::new();
            collect_leaves(&Value::Table(loaded.table.clone()), "", &mut leaves);
            if leaves.is_empty() {
                writeln!(out, "# no settings: every value is the built-in default")?;
            }
            for (key, value) in leaves {
                let shown =
                    if is_secret(&key) { "\"********\"".to_owned() } else { value.to_string() };
                match (args.origin, loaded.origins.get(&key)) {
                    (true, Some(origin)) => writeln!(out, "{key} = {shown}  # {origin}")?,
                    _ => writeln!(out, "{key} = {shown}")?,
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn collect_leaves(value: &Value, path: &str, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Table(table) => {
            for (key, value) in table {
                let key = if key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                {
                    key.clone()
                } else {
                    format!("{key:?}")
                };
                let path = if path.is_empty() { key } else { format!("{path}.{key}") };
                collect_leaves(value, &path, out);
            }
        }
        other => out.push((path.to_owned(), other.clone())),
    }
}

/// Header values that look like credentials are masked.
fn is_secret(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    (lower.contains("http_headers.") && !lower.contains("env_http_headers."))
        && ["auth", "key", "token", "secret", "cookie"]
            .iter()
            .any(|word| lower.rsplit('.').next().is_some_and(|name| name.contains(word)))
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
    let root = codecoder_config::project_root(&dir);
    let recorded = codecoder_config::trust(&home()?, &root)?;
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
    let home = home()?;
    codecoder_config::store_credential(&home, &args.provider, key)?;
    writeln!(
        out,
        "saved the API key for `{}` in {}",
        args.provider,
        home.join(codecoder_config::CREDENTIALS_FILE).display()
    )?;
    Ok(ExitCode::SUCCESS)
}
