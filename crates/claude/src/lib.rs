//! Claude Code's headless mode, so that `claude -p` scripts and the Claude Agent SDKs
//! (TypeScript and Python) drive codecoder unchanged: `codecoder -p "task"` prints the answer
//! (text, one JSON result, or stream-json), and `--input-format stream-json` speaks the SDKs'
//! control protocol over stdin and stdout (`initialize`, `interrupt`, permission modes,
//! `can_use_tool`), on the runtime's sessions (`codecoder_app`).
//!
//! Layout: `args` parses Claude's command line; `wire` reads the input and writes frames
//! (and makes control requests of the SDK); `translate` turns runtime events into Claude's
//! messages; `engine` drives a session and writes one `result` per turn.
//!
//! Invariants: stdout carries only the protocol (frames, or print mode's answer); notices go to
//! stderr; the session id is codecoder's own; the agent is shut down before `run` returns.

pub mod args;
mod engine;
mod sdk;
mod translate;
mod wire;

use std::io::{BufRead, Write};
use std::sync::Arc;

pub use args::{HeadlessArgs, is_headless, parse};

use crate::args::{InputFormat, OutputFormat};

/// The Claude Code version whose headless protocol this crate speaks (what `init` and the
/// `initialize` response report as `claude_code_version`; codecoder's own version is beside it).
pub const CLAUDE_PROTOCOL_VERSION: &str = "2.1.333";

/// This crate's errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The command line or its files are wrong (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The runtime could not load or start the session.
    #[error(transparent)]
    Runtime(codecoder_app::Error),
    /// Writing the output failed.
    #[error("writing the output: {0}")]
    Output(std::io::Error),
    /// A thread could not start.
    #[error("starting a thread: {0}")]
    Thread(std::io::Error),
}

impl Error {
    /// A usage error (exit code 2).
    pub fn is_usage(&self) -> bool {
        match self {
            Error::Usage(_) => true,
            Error::Runtime(err) => err.is_usage(),
            Error::Output(_) | Error::Thread(_) => false,
        }
    }
}

/// This crate's result.
pub type Result<T> = std::result::Result<T, Error>;

/// The process's streams, for `run`.
pub struct Streams {
    /// stdin.
    pub input: Box<dyn BufRead + Send>,
    /// Whether stdin is a terminal (then it is never read for a prompt).
    pub input_is_terminal: bool,
    /// stdout.
    pub output: Box<dyn Write + Send>,
    /// Notices for the person (stderr).
    pub notice: Arc<dyn Fn(&str) + Send + Sync>,
    /// Signals that ask the run to stop (their numbers): the running turn is cancelled, its
    /// processes killed and its end logged before `run` returns `128 + signal`.
    pub stop: crossbeam_channel::Receiver<i32>,
}

/// Runs a headless invocation to its end; returns the exit code (0, or 1 after an error
/// result).
///
/// # Errors
/// A usage error (exit 2), a session that cannot start, or a closed output.
pub fn run(args: HeadlessArgs, streams: Streams) -> Result<u8> {
    if args.input == InputFormat::StreamJson && args.output != OutputFormat::StreamJson {
        return Err(Error::Usage(
            "--input-format stream-json needs --output-format stream-json".to_owned(),
        ));
    }
    if args.print && args.output == OutputFormat::StreamJson && !args.verbose {
        return Err(Error::Usage(
            "-p with --output-format stream-json needs --verbose (as Claude Code's)".to_owned(),
        ));
    }
    if let Some(tool) = args.permission_prompt_tool.as_deref().filter(|tool| *tool != "stdio") {
        return Err(Error::Usage(format!(
            "--permission-prompt-tool {tool}: codecoder asks only the SDK over stdio (--permission-prompt-tool stdio)"
        )));
    }
    for flag in &args.ignored {
        if std::env::var_os(codecoder_protocol::env::CODECODER_DEBUG).is_some() {
            (streams.notice)(&format!("debug: {flag} has no effect in codecoder; ignored"));
        }
    }
    let runtime = codecoder_app::Runtime::load(overrides(&args)?).map_err(Error::Runtime)?;
    for notice in runtime.notices() {
        (streams.notice)(&notice.to_string());
    }
    let output_format = args.output;
    let peer = wire::Peer::new(streams.output, output_format == OutputFormat::StreamJson);
    let engine = engine::Engine::new(
        args.clone(),
        runtime,
        Arc::clone(&peer),
        Arc::clone(&streams.notice),
        streams.stop.clone(),
    )?;
    let (code, answer) = match args.input {
        InputFormat::StreamJson => {
            let input =
                wire::read_input(streams.input, Arc::clone(&peer)).map_err(Error::Thread)?;
            engine.run_stream(&input)?
        }
        InputFormat::Text => {
            let mut input = streams.input;
            let prompt = codecoder_app::headless_prompt(
                args.prompt.as_deref(),
                &mut input,
                streams.input_is_terminal,
            )
            .map_err(Error::Runtime)?;
            if prompt.trim().is_empty() {
                return Err(Error::Usage(
                    "no prompt: give it as an argument or on stdin (-p \"task\")".to_owned(),
                ));
            }
            engine.run_prompt(codecoder_protocol::UserInput {
                content: vec![codecoder_protocol::ContentItem::Text { text: prompt }],
            })?
        }
    };
    match (output_format, answer) {
        (OutputFormat::Json, Some(result)) => peer.line(&result).map_err(Error::Output)?,
        (OutputFormat::Text, Some(result)) => {
            if result["is_error"] == serde_json::json!(true) {
                let why = result["result"].as_str().map(str::to_owned).unwrap_or_else(|| {
                    let errors: Vec<&str> = result["errors"]
                        .as_array()
                        .map(|e| e.iter().filter_map(serde_json::Value::as_str).collect())
                        .unwrap_or_default();
                    errors.join("; ")
                });
                let subtype = result["subtype"].as_str().unwrap_or("error");
                (streams.notice)(&format!("codecoder: {subtype}: {why}"));
            } else {
                let text = result["result"].as_str().unwrap_or_default();
                peer.text(&format!("{}\n", text.trim_end())).map_err(Error::Output)?;
            }
        }
        _ => {}
    }
    Ok(code)
}

/// The runtime's overrides for Claude's flags.
///
/// # Errors
/// `--settings` that is neither JSON nor a readable JSON file.
pub(crate) fn overrides(args: &HeadlessArgs) -> Result<codecoder_app::Overrides> {
    use args::ClaudeMode;
    let mode = if args.skip_permissions {
        Some(ClaudeMode::BypassPermissions)
    } else {
        args.permission_mode
    };
    let claude_settings = args
        .settings
        .as_deref()
        .map(|settings| engine::json_or_file("--settings", settings))
        .transpose()?;
    Ok(codecoder_app::Overrides {
        cwd: args.cd.clone(),
        profile: args.profile.clone(),
        config: args.config.clone(),
        model: args.model.clone(),
        provider: args.provider.clone(),
        add_dirs: args.add_dirs.clone(),
        bypass: mode == Some(ClaudeMode::BypassPermissions),
        // Claude Code asks its permission tool about every call that is not read-only or
        // allowed by a rule: so does codecoder when an SDK answers (`untrusted`). Without one,
        // `never`: the sandbox bounds what runs and what needs a person is refused.
        approval: Some(match mode {
            // Only what is read-only or allowed by a rule runs; the rest is refused unasked.
            Some(ClaudeMode::DontAsk) => codecoder_app::ApprovalMode::Untrusted,
            _ if args.permission_prompt_tool.as_deref() == Some("stdio") => {
                codecoder_app::ApprovalMode::Untrusted
            }
            _ => codecoder_app::ApprovalMode::Never,
        })
        .filter(|_| mode != Some(ClaudeMode::BypassPermissions)),
        permission_mode: match mode {
            Some(ClaudeMode::AcceptEdits) => Some(codecoder_app::PermissionMode::AcceptEdits),
            Some(ClaudeMode::Plan) => Some(codecoder_app::PermissionMode::Plan),
            _ => None,
        },
        allowed_tools: args.allowed_tools.clone(),
        disallowed_tools: args.disallowed_tools.clone(),
        claude_setting_sources: args.setting_sources.clone(),
        claude_settings,
        ..codecoder_app::Overrides::default()
    })
}

#[cfg(test)]
mod tests;
