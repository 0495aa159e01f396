//! `codecoder config show|schema`, `codecoder trust`, `codecoder login`.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use codecoder_config::{LoadOptions, LoadedConfig};
use toml::Value;

use crate::cli::{ConfigCommand, GlobalArgs, LoginArgs, TrustArgs};

/// The system-wide config file.
const SYSTEM_CONFIG: &str = "/etc/codecoder/config.toml";

/// The codecoder home, from `$CODECODER_HOME` or `~/.codecoder`.
pub(crate) fn home() -> anyhow::Result<PathBuf> {
    codecoder_stdx::codecoder_home(|key| std::env::var_os(key)).with_context(|| {
        format!(
            "cannot find the codecoder home: set {} or {}",
            codecoder_protocol::env::CODECODER_HOME,
            codecoder_protocol::env::HOME
        )
    })
}

/// The working directory: `-C DIR` or the current one.
pub(crate) fn cwd(global: &GlobalArgs) -> anyhow::Result<PathBuf> {
    let cwd = match &global.cd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    fs_err::canonicalize(&cwd).with_context(|| format!("-C {}", cwd.display()))
}

/// Loads the configuration the way every command does.
pub(crate) fn load_config(
    global: &GlobalArgs,
    home: &Path,
    cwd: &Path,
) -> anyhow::Result<LoadedConfig> {
    Ok(codecoder_config::load(&LoadOptions {
        system_path: PathBuf::from(SYSTEM_CONFIG),
        home: Some(home.to_owned()),
        cwd: cwd.to_owned(),
        profile: global.profile.clone(),
        overrides: global.overrides.clone(),
    })?)
}

pub(crate) fn run_config(
    command: ConfigCommand,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    match command {
        ConfigCommand::Schema => write!(out, "{}", codecoder_config::json_schema())?,
        ConfigCommand::Show(args) => {
            let home = home()?;
            let loaded = load_config(global, &home, &cwd(global)?)?;
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
        None => cwd(global)?,
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
