//! `codecoder plugin add|list|remove|enable|disable`: the Claude Code plugins recorded in
//! `$CODECODER_HOME/plugins.json`. Only recorded plugins load, since their hooks run code.

use std::io::Write;
use std::process::ExitCode;

use crate::cli::PluginCommand;

pub(crate) fn run(command: PluginCommand, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let home = codecoder_app::home()?;
    match command {
        PluginCommand::Add { dir } => {
            let plugin = codecoder_app::add_plugin(&home, &dir)?;
            writeln!(
                out,
                "added plugin `{}` from {} (enabled)",
                plugin.name,
                plugin.dir.display()
            )?;
        }
        PluginCommand::List => {
            let plugins = codecoder_app::list_plugins(&home)?;
            if plugins.is_empty() {
                writeln!(out, "no plugins (codecoder plugin add DIR)")?;
            }
            for plugin in plugins {
                let state = if plugin.enabled { "enabled" } else { "disabled" };
                let version = plugin.version.map(|v| format!(" {v}")).unwrap_or_default();
                writeln!(out, "{}{version}  {}  ({state})", plugin.name, plugin.dir.display())?;
                if let Some(description) = plugin.description {
                    writeln!(out, "  {description}")?;
                }
            }
        }
        PluginCommand::Remove { name } => {
            anyhow::ensure!(codecoder_app::remove_plugin(&home, &name)?, "no plugin `{name}`");
            writeln!(out, "removed plugin `{name}`")?;
        }
        PluginCommand::Enable { name } => {
            anyhow::ensure!(
                codecoder_app::set_plugin_enabled(&home, &name, true)?,
                "no plugin `{name}`"
            );
            writeln!(out, "enabled plugin `{name}`")?;
        }
        PluginCommand::Disable { name } => {
            anyhow::ensure!(
                codecoder_app::set_plugin_enabled(&home, &name, false)?,
                "no plugin `{name}`"
            );
            writeln!(out, "disabled plugin `{name}`")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
