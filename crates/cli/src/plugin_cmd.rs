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
            codecoder_app::write_plugins(&codecoder_app::list_plugins(&home)?, out)?
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
