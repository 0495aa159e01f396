//! `codecoder exec`: one task, headless, to completion (seed L0; codex's `exec`).
//!
//! The agent comes from the runtime (`codecoder-app`, shared with the TUI); the events are rendered, as text (progress on stderr, the
//! final message on stdout) or as codex-compatible JSON lines. Ctrl-C: the first sends `Cancel`
//! (the turn closes cleanly and the log validates), a second kills every process group the
//! agent started and exits at once with 130.
//!
//! Exit codes: 0 done; 1 the turn failed; 2 usage or configuration error, or the session to
//! resume is in use by another process; 130 interrupted.

use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context;
use base64::Engine as _;
use codecoder_protocol::{
    AgentCommand, AgentEventKind, ApprovalDecision, AskUserAnswer, ContentItem, Image, TurnOutcome,
    UserInput,
};
use codecoder_stdx::spawn_named;

use crate::cli::{ExecArgs, ExecCommand, ExecOptions, GlobalArgs};
use crate::render::{HumanRenderer, JsonRenderer, Renderer};

/// The exit code of an interrupted run (128 + SIGINT).
const EXIT_INTERRUPTED: u8 = 130;
const EXIT_USAGE: u8 = 2;

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

pub(crate) fn usage(message: impl Into<String>) -> anyhow::Error {
    Exit { code: EXIT_USAGE, message: message.into() }.into()
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
    let prompt = read_prompt(prompt_arg.as_deref())?;
    let images =
        options.images.iter().map(|path| read_image(path)).collect::<anyhow::Result<Vec<_>>>()?;
    let output_schema =
        match &options.output_schema {
            Some(path) => {
                let text = fs_err::read_to_string(path).map_err(|err| usage(err.to_string()))?;
                Some(serde_json::from_str::<serde_json::Value>(&text).map_err(|err| {
                    usage(format!("{}: not a JSON Schema: {err}", path.display()))
                })?)
            }
            None => None,
        };

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
    for notice in &session.notices {
        eprintln!("{notice}");
    }
    let agent = session.agent;
    let session_path = agent.session_path().map(Path::to_owned);

    let mut renderer: Box<dyn Renderer> =
        if options.json { Box::new(JsonRenderer::new()) } else { Box::new(HumanRenderer::new()) };
    renderer.session_started(agent.session_id(), out)?;

    // Ctrl-C: the first cancels the turn, the second leaves at once.
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
                    codecoder_sandbox::kill_all();
                    std::process::exit(i32::from(EXIT_INTERRUPTED));
                }
            }
        })?
    };

    let mut content = vec![ContentItem::Text { text: prompt }];
    content.extend(images.into_iter().map(ContentItem::Image));
    agent.cmd.send(AgentCommand::Submit(UserInput { content })).context("the agent stopped")?;

    let mut outcome = None;
    let mut final_message = String::new();
    // The last plan the model presented for approval (`exit_plan_mode`).
    let mut plan: Option<String> = None;
    for event in agent.events.iter() {
        match &event.kind {
            AgentEventKind::ApprovalRequest(_) | AgentEventKind::AskUser(_) => {}
            AgentEventKind::TurnDone { .. } if event.source.subagent_path.is_empty() => {
                // The plan is the turn's answer: its last message, before the turn's end.
                if let Some(plan) = &plan {
                    renderer.plan(plan, out)?;
                }
                renderer.event(&event, out)?;
            }
            _ => renderer.event(&event, out)?,
        }
        match event.kind {
            // Headless: nobody can answer. Like codex exec, requests are declined.
            AgentEventKind::ApprovalRequest(request) => {
                renderer
                    .note(&format!("declined (no one to ask in exec): {}", request.summary), out)?;
                // The model hears why it would have been asked (a protected path, say).
                let why = request.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
                request.reply.send(ApprovalDecision::DenyWithFeedback {
                    feedback: format!(
                        "codecoder exec runs without a person to approve this{why}; do without it"
                    ),
                });
            }
            AgentEventKind::AskUser(request) => {
                if is_plan_review(&request.options) {
                    plan = Some(request.question.clone());
                    request.reply.send(AskUserAnswer::Declined);
                } else {
                    renderer
                        .note(&format!("question not asked (exec): {}", request.question), out)?;
                    request.reply.send(AskUserAnswer::Unavailable {
                        reason: "codecoder exec runs without a person to answer".to_owned(),
                    });
                }
            }
            AgentEventKind::TurnDone { outcome: turn_outcome, .. }
                if event.source.subagent_path.is_empty() =>
            {
                final_message = renderer.final_message();
                outcome = Some(turn_outcome);
                break;
            }
            _ => {}
        }
    }
    let _ = agent.cmd.send(AgentCommand::Shutdown);
    for event in agent.events.iter() {
        if matches!(event.kind, AgentEventKind::ShutdownComplete) {
            break;
        }
    }
    signals_handle.close();
    let _ = signal_thread.join();
    let _ = agent.join();

    let code = match outcome {
        Some(TurnOutcome::Completed) => {
            if let Some(schema) = &output_schema {
                let value: serde_json::Value =
                    serde_json::from_str(final_message.trim()).map_err(|err| {
                        anyhow::anyhow!(
                            "the final message is not JSON as --output-schema asks: {err}"
                        )
                    })?;
                codecoder_kernel::validate_schema(schema, &value).map_err(|err| {
                    anyhow::anyhow!("the final message does not follow --output-schema: {err}")
                })?;
            }
            // In plan mode the plan is the answer.
            let final_message = plan.unwrap_or(final_message);
            if let Some(path) = &options.output_last_message {
                if final_message.is_empty() {
                    eprintln!(
                        "warning: the turn ended without a final message; writing an empty file",
                    );
                }
                fs_err::write(path, &final_message)?;
            }
            renderer.finish(&final_message, out)?;
            ExitCode::SUCCESS
        }
        Some(TurnOutcome::Cancelled | TurnOutcome::Interrupted) => ExitCode::from(EXIT_INTERRUPTED),
        Some(TurnOutcome::Failed { message }) => {
            eprintln!("codecoder: the turn failed: {message}");
            ExitCode::FAILURE
        }
        None => {
            eprintln!("codecoder: the agent stopped before the turn ended");
            ExitCode::FAILURE
        }
    };
    if let Some(path) = session_path
        && !options.json
    {
        eprintln!("session log: {}", path.display());
    }
    Ok(code)
}

/// True for the question `exit_plan_mode` asks: its suggested answers are exactly approve and
/// keep planning.
fn is_plan_review(options: &[String]) -> bool {
    matches!(options, [approve, keep]
        if approve == codecoder_app::PLAN_APPROVE && keep == codecoder_app::PLAN_KEEP_PLANNING)
}

/// The prompt: the argument, stdin (`-` or absent), or both (stdin appended as a block).
fn read_prompt(arg: Option<&str>) -> anyhow::Result<String> {
    let stdin = std::io::stdin();
    let from_stdin = |what: &str| -> anyhow::Result<String> {
        let mut text = String::new();
        stdin
            .lock()
            .read_to_string(&mut text)
            .with_context(|| format!("reading {what} from stdin"))?;
        Ok(text)
    };
    match arg {
        None | Some("-") => {
            if stdin.is_terminal() {
                return Err(usage("no prompt: give it as an argument or on stdin"));
            }
            let text = from_stdin("the prompt")?;
            if text.trim().is_empty() {
                return Err(usage("no prompt: stdin was empty"));
            }
            Ok(text)
        }
        Some(prompt) => {
            if stdin.is_terminal() {
                return Ok(prompt.to_owned());
            }
            let piped = from_stdin("piped input")?;
            if piped.trim().is_empty() {
                return Ok(prompt.to_owned());
            }
            Ok(format!("{prompt}\n\n<stdin>\n{}\n</stdin>", piped.trim_end()))
        }
    }
}

fn read_image(path: &Path) -> anyhow::Result<Image> {
    let bytes = fs_err::read(path).map_err(|err| usage(err.to_string()))?;
    let media_type = match bytes.get(..8) {
        Some([0x89, b'P', b'N', b'G', ..]) => "image/png",
        Some([0xff, 0xd8, 0xff, ..]) => "image/jpeg",
        Some([b'G', b'I', b'F', b'8', ..]) => "image/gif",
        Some([b'R', b'I', b'F', b'F', ..]) => "image/webp",
        _ => return Err(usage(format!("{}: not a PNG, JPEG, GIF or WebP image", path.display()))),
    };
    Ok(Image {
        media_type: media_type.to_owned(),
        data_base64: base64::engine::general_purpose::STANDARD.encode(&bytes),
    })
}
