//! A session's language servers and formatters: `[lsp]`, `[lsp.NAME]` and `[formatters.NAME]`
//! read into `codecoder_lsp::LspConfig` over the presets, the hook the edit tools run after a
//! change, and `doctor`'s list of the servers.
//!
//! Invariants: `[lsp] enabled = false` leaves no server (formatters still run when configured);
//! a `[lsp.NAME]` that is not a preset needs `command` and `extensions` (else a warning, and it
//! is left out); binaries are looked up in the command environment's `PATH`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use codecoder_config::ConfigToml;
use codecoder_lsp::{CodeIntel, FormatterConfig, LspConfig, ServerConfig, ServerState};
use codecoder_sandbox::{Confinement, Environment, SpawnConfig};

use crate::Notice;

/// The settings of `config`, for a session in `cwd` whose servers and formatters spawn with
/// `confinement` and `environment`.
pub(crate) fn lsp_config(
    config: &ConfigToml,
    cwd: &Path,
    confinement: Confinement,
    environment: Environment,
    notices: &mut Vec<Notice>,
) -> LspConfig {
    let mut lsp = LspConfig::standard(cwd);
    if let Environment::Exactly(vars) = &environment {
        lsp.path = vars.iter().find(|(key, _)| key == "PATH").map(|(_, value)| value.clone());
    }
    lsp.spawn = SpawnConfig { confinement, environment, ..SpawnConfig::standard() };
    if let Some(section) = &config.lsp {
        let millis =
            |value: Option<u64>, default: Duration| value.map_or(default, Duration::from_millis);
        lsp.diagnostics_wait = millis(section.diagnostics_wait_ms, lsp.diagnostics_wait);
        lsp.start_timeout = millis(section.startup_timeout_ms, lsp.start_timeout);
        lsp.request_timeout = millis(section.request_timeout_ms, lsp.request_timeout);
        for (name, table) in &section.servers {
            let position = lsp.servers.iter().position(|server| server.name == *name);
            if table.enabled == Some(false) {
                if let Some(position) = position {
                    lsp.servers.remove(position);
                }
                continue;
            }
            let mut server = match position {
                Some(position) => lsp.servers.remove(position),
                None => match (&table.command, &table.extensions) {
                    (Some(command), Some(_)) => ServerConfig {
                        name: name.clone(),
                        command: command.clone(),
                        args: Vec::new(),
                        extensions: Vec::new(),
                        root_markers: Vec::new(),
                        env: Vec::new(),
                        initialization_options: None,
                        configured: true,
                    },
                    _ => {
                        notices.push(Notice::Warning(format!(
                            "[lsp.{name}]: not a preset, so it needs `command` and `extensions`; left out"
                        )));
                        continue;
                    }
                },
            };
            server.configured = true;
            if let Some(command) = &table.command {
                server.command.clone_from(command);
            }
            if let Some(args) = &table.args {
                server.args.clone_from(args);
            }
            if let Some(extensions) = &table.extensions {
                server.extensions =
                    extensions.iter().map(|ext| ext.trim_start_matches('.').to_owned()).collect();
            }
            if let Some(markers) = &table.root_markers {
                server.root_markers.clone_from(markers);
            }
            server.env =
                table.env.iter().map(|(key, value)| (key.clone(), value.clone())).collect();
            if table.initialization_options.is_some() {
                server.initialization_options.clone_from(&table.initialization_options);
            }
            // A configured server is tried before the presets for its extensions.
            lsp.servers.insert(0, server);
        }
        if section.enabled == Some(false) {
            lsp.servers.clear();
        }
    }
    lsp.formatters = config
        .formatters
        .iter()
        .filter(|(_, table)| table.enabled != Some(false) && !table.command.is_empty())
        .map(|(name, table)| FormatterConfig {
            name: name.clone(),
            command: table.command.clone(),
            extensions: table
                .extensions
                .iter()
                .map(|ext| ext.trim_start_matches('.').to_owned())
                .collect(),
        })
        .collect();
    lsp
}

/// The edit tools' hook: formatters, then diagnostics; and the read and search tools' one,
/// starting the servers of the files they read or found.
#[derive(Debug)]
pub(crate) struct LspHook(pub(crate) Arc<CodeIntel>);

impl codecoder_tools::AfterEdit for LspHook {
    fn after_edit(&self, paths: &[PathBuf]) -> String {
        self.0.after_edit(paths)
    }

    fn touched(&self, paths: &[PathBuf], read: bool) {
        self.0.touch(paths, read);
    }
}

/// `codecoder doctor`'s section: each server, found or not, and the formatters.
pub(crate) fn doctor(
    config: &ConfigToml,
    cwd: &Path,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut notices = Vec::new();
    let environment =
        Environment::Exactly(std::env::vars_os().collect::<Vec<(OsString, OsString)>>().into());
    let lsp = lsp_config(config, cwd, Confinement::Unconfined, environment, &mut notices);
    writeln!(
        out,
        "language servers (started on the first file of their language a tool reads, searches or edits):"
    )?;
    for notice in &notices {
        writeln!(out, "  {notice}")?;
    }
    let intel = CodeIntel::new(lsp);
    if intel.config().servers.is_empty() {
        writeln!(out, "  (none: [lsp] enabled = false)")?;
    }
    for (server, state) in intel.states() {
        let extensions = server.extensions.join(", ");
        let state = match state {
            ServerState::Available(path) => format!("found: {}", path.display()),
            ServerState::Missing => format!("not found (`{}` is not on PATH)", server.command),
            ServerState::Starting => "starting".to_owned(),
            ServerState::Running => "running".to_owned(),
            ServerState::Failed(why) => format!("failed: {why}"),
        };
        writeln!(out, "  {} ({extensions}): {state}", server.name)?;
    }
    writeln!(out, "formatters after edits:")?;
    if intel.config().formatters.is_empty() {
        writeln!(out, "  (none)")?;
    }
    for formatter in &intel.config().formatters {
        writeln!(
            out,
            "  {} ({}): {}",
            formatter.name,
            formatter.extensions.join(", "),
            formatter.command.join(" ")
        )?;
    }
    Ok(())
}
