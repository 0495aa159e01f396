//! `codecoder` (no subcommand) and `codecoder resume`: the interactive UI over the runtime.
//!
//! It checks for a terminal (a pipe gets a usage error pointing at `exec`, exit 2), loads the
//! runtime, starts the first session through `codecoder_tui::RuntimeHost` (which also serves
//! `/new`, `/resume`, `/fork`, `/model`) and hands it to the UI.

use std::io::IsTerminal;
use std::process::ExitCode;

use codecoder_app::Start;
use codecoder_tui::{RuntimeHost, TuiConfig};

use crate::cli::{GlobalArgs, TuiOptions};
use crate::exec::usage;

/// Runs the UI on a new session or `resume`d one; `pick` opens the session picker at once
/// (`codecoder resume` without an id).
pub(crate) fn run(
    global: &GlobalArgs,
    options: &TuiOptions,
    prompt: Option<String>,
    resume: Option<Option<String>>,
    pick: bool,
) -> anyhow::Result<ExitCode> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(usage(
            "the interactive UI needs a terminal on stdin and stdout; for pipes and scripts use `codecoder exec \"PROMPT\"`",
        ));
    }
    let runtime = crate::load_runtime(global, options.model.clone(), options.provider.clone())?;
    let (skills, commands) = runtime.invocables();
    let mut host = RuntimeHost::new(runtime);
    let start = match resume {
        Some(query) => Start::Resume(query),
        None => Start::New,
    };
    let session = host.start_session(start, None, None)?;
    // Before the UI takes the terminal: the first session's notices go to stderr.
    crate::print_notices(&session.notices);
    let config = tui_config(host.mode_label(), options, prompt, (skills, commands), pick);
    codecoder_tui::run(config, session, &mut host)?;
    Ok(ExitCode::SUCCESS)
}

/// The UI's settings for a run, local or `--remote`: the modes' label, the first prompt, the
/// skills and commands `/` offers, and whether the session picker opens at once.
pub(crate) fn tui_config(
    approval_mode: String,
    options: &TuiOptions,
    initial_prompt: Option<String>,
    (skills, commands): (Vec<String>, Vec<String>),
    open_resume_picker: bool,
) -> TuiConfig {
    TuiConfig {
        approval_mode,
        no_color: std::env::var_os(codecoder_protocol::env::NO_COLOR)
            .is_some_and(|v| !v.is_empty()),
        initial_prompt,
        skills,
        commands,
        stats_path: options.stats_file.clone(),
        open_resume_picker,
    }
}
