//! The `codecoder` binary: parses arguments, wires the libraries together, maps errors to exit
//! codes. Behaviour lives in the libraries; this crate only parses, prints and exits.
//!
//! Exit codes: 0 success; 1 the command failed (for `sessions validate`: the log is invalid);
//! 2 usage error (clap's own), configuration error, or a session that another process is
//! writing (resume, rm). A closed stdout (`| head`) counts as success.
#![allow(clippy::print_stdout, clippy::print_stderr)] // L0: the one crate that prints.

mod claude_cmd;
mod cli;
mod config_cmd;
mod exec;
mod hooks_cmd;
mod mcp_cmd;
mod models_cmd;
mod plugin_cmd;
mod remote;
mod safety_cmd;
mod serve_cmd;
mod sessions;
mod tui_cmd;
mod web_cmd;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

fn main() -> ExitCode {
    // A sandboxed command's inner stage (the sandbox re-executes this binary): it confines
    // itself and execs the command, and never returns.
    codecoder_app::run_stage_if_requested();
    // The environment holds API keys: no command of the same user may read it from /proc.
    if let Err(err) = codecoder_app::protect_process() {
        eprintln!("warning: could not protect the process's environment: {err}");
    }
    // Claude Code's headless mode (`-p`, stream-json): its own command line, not clap's.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = <Cli as clap::CommandFactory>::command();
    let subcommands: Vec<&str> = command
        .get_subcommands()
        .flat_map(|sub| std::iter::once(sub.get_name()).chain(sub.get_all_aliases()))
        .chain(["help"])
        .collect();
    if codecoder_claude::is_headless(&args, &subcommands) {
        return claude_cmd::run(&args);
    }
    let cli = Cli::parse();
    // Not `stdout.lock()`: the TUI writes to stdout itself, and its panic hook may do so from
    // another thread; a lock held for the whole run would deadlock them.
    let mut out = io::BufWriter::new(io::stdout());
    let result = match cli.command {
        _ if cli.remote.url.is_some() => run_remote(&cli),
        None => tui_cmd::run(&cli.global, &cli.tui.options, cli.tui.prompt.clone(), None, false),
        Some(Command::Resume(args)) => match (&args.session, args.last) {
            (_, true) => tui_cmd::run(&cli.global, &args.options, None, Some(None), false),
            (Some(id), false) => {
                tui_cmd::run(&cli.global, &args.options, None, Some(Some(id.clone())), false)
            }
            // No id: a new session, with the picker open to choose one to resume.
            (None, false) => tui_cmd::run(&cli.global, &args.options, None, None, true),
        },
        Some(Command::Sessions(args)) => sessions::run(args, &cli.global, &mut out),
        Some(Command::ApplyPatch(args)) => apply_patch(&args.patch, &mut out),
        Some(Command::Exec(args)) => exec::run(args, &cli.global, &mut out),
        Some(Command::Config(command)) => config_cmd::run_config(command, &cli.global, &mut out),
        Some(Command::Trust(args)) => config_cmd::run_trust(&args, &cli.global, &mut out),
        Some(Command::Login(args)) => config_cmd::run_login(&args, &mut out),
        Some(Command::Hooks(command)) => hooks_cmd::run(command, &cli.global, &mut out),
        Some(Command::Sandbox(args)) => safety_cmd::run_sandbox(&args, &cli.global),
        Some(Command::Doctor(args)) => safety_cmd::run_doctor(&args, &cli.global, &mut out),
        Some(Command::Models(args)) => models_cmd::run(&args, &cli.global, &mut out),
        Some(Command::Mcp(command)) => mcp_cmd::run(command, &cli.global, &mut out),
        Some(Command::Plugin(command)) => plugin_cmd::run(command, &mut out),
        Some(Command::McpServer(args)) => serve_cmd::run_mcp_server(&args, &cli.global),
        Some(Command::AppServer(args)) => serve_cmd::run_app_server(&args, &cli.global),
        Some(Command::Acp(args)) => serve_cmd::run_acp(&args, &cli.global),
        Some(Command::Serve(args)) => web_cmd::run(&args, &cli.global),
        Some(Command::Permissions(cli::PermissionsCommand::Check(args))) => {
            safety_cmd::run_permissions_check(&args, &cli.global, &mut out)
        }
    };
    let flushed = out.flush();
    match result.and_then(|code| flushed.map(|()| code).map_err(Into::into)) {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("codecoder: {err:#}");
            let usage = |cause: &(dyn std::error::Error + 'static)| {
                cause.downcast_ref::<codecoder_app::Error>().is_some_and(|e| e.is_usage())
            };
            if err.chain().any(usage) {
                return ExitCode::from(2);
            }
            if let Some(exit) = err.downcast_ref::<exec::Exit>() {
                return ExitCode::from(exit.code);
            }
            ExitCode::FAILURE
        }
    }
}

/// `--remote URL`: the UI (no subcommand, or `resume`) on a session a `codecoder serve` hosts;
/// any other subcommand with it is a usage error.
fn run_remote(cli: &Cli) -> anyhow::Result<ExitCode> {
    let remote = &cli.remote;
    match &cli.command {
        None => {
            remote::run(remote, &cli.global, &cli.tui.options, cli.tui.prompt.clone(), None, false)
        }
        Some(Command::Resume(args)) => match (&args.session, args.last) {
            (_, true) => remote::run(remote, &cli.global, &args.options, None, Some(None), false),
            (Some(id), false) => {
                remote::run(remote, &cli.global, &args.options, None, Some(Some(id.clone())), false)
            }
            (None, false) => remote::run(remote, &cli.global, &args.options, None, None, true),
        },
        Some(_) => Err(exec::usage(
            "--remote drives the interactive UI (no subcommand, or `resume`); other commands run \
             here, or call the server's HTTP API",
        )),
    }
}

/// Loads the runtime for this command line (the model and provider flags of the command, if
/// it has them) and shows what loading the config had to say.
pub(crate) fn load_runtime(
    global: &cli::GlobalArgs,
    model: Option<String>,
    provider: Option<String>,
) -> anyhow::Result<codecoder_app::Runtime> {
    let mut overrides = global.overrides();
    overrides.model = model;
    overrides.provider = provider;
    let runtime = codecoder_app::Runtime::load(overrides)?;
    print_notices(&runtime.notices());
    Ok(runtime)
}

/// What the runtime had to say (config warnings, sandbox fallbacks): one line each on stderr.
pub(crate) fn print_notices(notices: &[impl std::fmt::Display]) {
    for notice in notices {
        eprintln!("{notice}");
    }
}

fn apply_patch(args: &[String], out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir()?;
    let mut err = io::stderr().lock();
    let code = codecoder_app::run_apply_patch(args, io::stdin().lock(), &cwd, out, &mut err);
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}
