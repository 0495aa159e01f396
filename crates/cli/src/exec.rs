//! `codecoder exec`: one task, headless, to completion (seed L0; codex's `exec`).
//!
//! The agent comes from the runtime (`codecoder-app`, shared with the TUI), which also follows
//! the turn headless (`follow_headless_turn`: requests declined, a plan as the answer) and
//! shows its events (`ExecOutput`), as progress for a person (stderr, the final message on
//! stdout) or as codex-compatible JSON lines; this file hands it stdout and stderr.
//! Ctrl-C: the first sends `Cancel` (the turn closes cleanly and the log validates), a second
//! kills every process group the agent started and exits at once with 130.
//!
//! Exit codes: 0 done; 1 the turn failed; 2 usage or configuration error, or the session to
//! resume is in use by another process; 130 interrupted.

use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context;
use codecoder_protocol::{AgentCommand, ContentItem, TurnOutcome, UserInput};
use codecoder_stdx::spawn_named;

use crate::cli::{ExecArgs, ExecCommand, ExecOptions, GlobalArgs};

/// The exit code of an interrupted run (128 + SIGINT).
const EXIT_INTERRUPTED: u8 = 130;

/// A failure that ends `exec` with a specific exit code and a message.
#[derive(Debug)]
pub(crate) struct Exit {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

/// A usage error: exit code 2, as for the runtime's own.
pub(crate) fn usage(message: impl Into<String>) -> anyhow::Error {
    codecoder_app::Error::usage(message).into()
}

pub(crate) fn run(
    args: ExecArgs,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let options: &ExecOptions = &args.options;
    let (resume, prompt_arg) = match &args.command {
        Some(ExecCommand::Resume(resume)) => {
            // With --last the first positional is the prompt.
            if resume.last {
                (Some(None), resume.session.clone().or_else(|| resume.prompt.clone()))
            } else {
                let Some(id) = resume.session.clone() else {
                    return Err(usage("exec resume needs a session id, or --last"));
                };
                (Some(Some(id)), resume.prompt.clone())
            }
        }
        None => (None, args.prompt.clone()),
    };
    let stdin = io::stdin();
    let prompt = codecoder_app::headless_prompt(
        prompt_arg.as_deref(),
        &mut stdin.lock(),
        stdin.is_terminal(),
    )?;
    let images = options
        .images
        .iter()
        .map(|path| codecoder_app::read_image(path))
        .collect::<Result<Vec<_>, _>>()?;
    let output_schema =
        options.output_schema.as_deref().map(codecoder_app::read_output_schema).transpose()?;

    // `--plan` is `--permission-mode plan`.
    let mut global = global.clone();
    if options.plan {
        global.safety.permission_mode = Some(codecoder_app::PermissionMode::Plan);
    }
    let runtime = crate::load_runtime(&global, options.model.clone(), options.provider.clone())?;
    let session = runtime.start(&codecoder_app::SessionRequest {
        start: match resume {
            Some(query) => codecoder_app::Start::Resume(query),
            None => codecoder_app::Start::New,
        },
        replay: options.replay.clone(),
        ephemeral: options.ephemeral,
        output_schema: output_schema.clone(),
        first_prompt: Some(prompt.clone()),
        ..codecoder_app::SessionRequest::new()
    })?;
    crate::print_notices(&session.notices);
    let agent = session.agent;
    let session_path = agent.session_path().map(Path::to_owned);

    // Ctrl-C: the first cancels the turn, the second leaves at once. Installed, and the prompt
    // submitted, before the session is announced, so a signal sent once it is seen always
    // cancels the turn.
    let interrupts = Arc::new(AtomicUsize::new(0));
    let signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGINT])
        .context("installing the Ctrl-C handler")?;
    let signals_handle = signals.handle();
    let signal_thread = {
        let cmd = agent.cmd.clone();
        let interrupts = Arc::clone(&interrupts);
        let mut signals = signals;
        spawn_named("exec-signals", move || {
            for _ in signals.forever() {
                if interrupts.fetch_add(1, Ordering::SeqCst) == 0 {
                    let _ = cmd.send(AgentCommand::Cancel);
                } else {
                    codecoder_app::kill_all();
                    std::process::exit(i32::from(EXIT_INTERRUPTED));
                }
            }
        })?
    };
    let mut content = vec![ContentItem::Text { text: prompt }];
    content.extend(images.into_iter().map(ContentItem::Image));
    let submitted = agent.cmd.send(AgentCommand::Submit(UserInput { content }));
    let mut err = io::stderr();
    let mut output = codecoder_app::ExecOutput::new(options.json);
    let started = submitted
        .context("the agent stopped")
        .and_then(|()| Ok(output.session_started(agent.session_id(), out, &mut err)?));
    if started.is_err() {
        // The signal thread ends only when its handle is closed.
        signals_handle.close();
    }
    started?;
    let end =
        codecoder_app::follow_headless_turn(agent, &mut |shown| output.show(shown, out, &mut err))?;
    signals_handle.close();
    let _ = signal_thread.join();

    let code = match &end.outcome {
        Some(TurnOutcome::Completed) => {
            if let Some(schema) = &output_schema {
                codecoder_app::check_final_message(schema, &end.final_message)
                    .map_err(anyhow::Error::msg)?;
            }
            output.answer(end, options.output_last_message.as_deref(), out, &mut err)?;
            ExitCode::SUCCESS
        }
        outcome => turn_code(outcome.as_ref(), "turn"),
    };
    if let Some(path) = session_path
        && !options.json
    {
        eprintln!("session log: {}", path.display());
    }
    Ok(code)
}

/// The exit code of a headless turn (`what`: a turn, a compaction) by how it ended; why it did
/// not complete goes to stderr.
pub(crate) fn turn_code(outcome: Option<&TurnOutcome>, what: &str) -> ExitCode {
    match outcome {
        Some(TurnOutcome::Completed) => ExitCode::SUCCESS,
        Some(TurnOutcome::Cancelled | TurnOutcome::Interrupted) => ExitCode::from(EXIT_INTERRUPTED),
        Some(TurnOutcome::Failed { message }) => {
            eprintln!("codecoder: the {what} failed: {message}");
            ExitCode::FAILURE
        }
        None => {
            eprintln!("codecoder: the agent stopped before the {what} ended");
            ExitCode::FAILURE
        }
    }
}
