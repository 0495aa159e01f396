//! `codecoder sandbox -- CMD`, `codecoder doctor` and `codecoder permissions check`: the
//! runtime's safety setup, used by hand; this file only streams, prints and picks exit codes.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use codecoder_protocol::Verdict;
use codecoder_sandbox::{CommandSpec, Outcome, SpawnConfig, Stream, Wait};

use crate::cli::{GlobalArgs, PermissionsCheckArgs, SandboxArgs};
use crate::exec::Exit;

/// The exit code of a command that could not be confined (as for a command that cannot run).
const EXIT_UNCONFINED: u8 = 126;

pub(crate) fn run_sandbox(args: &SandboxArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let runtime = crate::load_runtime(global, None, None)?;
    let (confinement, environment) = match runtime.command_confinement(args.network) {
        Ok((confinement, environment, notices)) => {
            for notice in notices {
                eprintln!("{notice}");
            }
            (confinement, environment)
        }
        Err(err @ codecoder_app::Error::NoSandbox { .. }) => {
            return Err(Exit { code: EXIT_UNCONFINED, message: err.to_string() }.into());
        }
        Err(err) => return Err(err.into()),
    };
    let cwd = runtime.cwd().to_owned();
    let (program, rest) = args.command.split_first().context("no command given")?;
    let mut spec = CommandSpec::new(program.clone(), rest.iter().cloned());
    spec.cwd = Some(cwd);
    let config = SpawnConfig { confinement, environment, ..SpawnConfig::standard() };

    // Ctrl-C or a TERM ends the command's whole group, sandbox and all: the signal thread drops
    // the sender, which is the wait's cancel.
    let (cancel_tx, cancel) = crossbeam_channel::bounded::<()>(1);
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])
    .context("installing the signal handler")?;
    let handle = signals.handle();
    let watcher = codecoder_stdx::spawn_named("sandbox-signals", move || {
        if signals.forever().next().is_some() {
            drop(cancel_tx);
        }
    })?;
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let outcome =
        codecoder_sandbox::run(&spec, &config, &Wait::new().cancel_on(&cancel), &mut |chunk| {
            // A closed stdout or stderr is the reader's business; the command goes on.
            let _ = match chunk.stream {
                Stream::Stdout => stdout.lock().write_all(&chunk.bytes),
                Stream::Stderr => stderr.lock().write_all(&chunk.bytes),
            };
        });
    handle.close();
    let _ = watcher.join();
    let code = match outcome? {
        Outcome::Exited(status) => {
            use std::os::unix::process::ExitStatusExt as _;
            match (status.code(), status.signal()) {
                (Some(code), _) => u8::try_from(code).unwrap_or(1),
                (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(1),
                (None, None) => 1,
            }
        }
        Outcome::Cancelled => 130,
        // Neither is asked for here; the codes are timeout(1)'s.
        Outcome::TimedOut => 124,
        Outcome::Killed => 137,
    };
    Ok(ExitCode::from(code))
}

pub(crate) fn run_doctor(
    args: &crate::cli::DoctorArgs,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let mut overrides = global.overrides();
    if args.model.is_some() {
        overrides.model.clone_from(&args.model);
    }
    if args.provider.is_some() {
        overrides.provider.clone_from(&args.provider);
    }
    let runtime = codecoder_app::Runtime::load(overrides)?;
    for notice in runtime.doctor(out)? {
        eprintln!("{notice}");
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn run_permissions_check(
    args: &PermissionsCheckArgs,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let runtime = crate::load_runtime(global, None, None)?;
    let check = runtime.check_permission(&args.tool, &args.args, !args.exec)?;
    let decision = &check.decision;
    writeln!(out, "{decision}")?;
    writeln!(out, "  tool: {} ({:?})", check.tool, check.kind)?;
    writeln!(out, "  keys: {}", check.keys.join(", "))?;
    writeln!(
        out,
        "  modes: sandbox {}, approvals {}{}",
        check.modes.sandbox.as_str(),
        check.modes.approval.as_str(),
        if check.modes.bypass { ", bypass" } else { "" }
    )?;
    writeln!(out, "  (PreToolUse hooks and session grants come first in a session; not run here)")?;
    Ok(ExitCode::from(match decision.verdict {
        Verdict::Allow => 0,
        Verdict::Deny => 1,
        Verdict::Ask => 3,
    }))
}
