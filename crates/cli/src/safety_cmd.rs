//! `codecoder sandbox -- CMD`, `codecoder doctor` and `codecoder permissions check`: the
//! runtime's safety setup, used by hand. The runtime writes the reports and the command's
//! output into the writers this file passes; this file handles signals and picks exit codes.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::{GlobalArgs, PermissionsCheckArgs, SandboxArgs};
use crate::exec::Exit;

/// The exit code of a command that could not be confined (as for a command that cannot run).
const EXIT_UNCONFINED: u8 = 126;

pub(crate) fn run_sandbox(args: &SandboxArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let runtime = crate::load_runtime(global, None, None)?;
    let (program, rest) = args.command.split_first().context("no command given")?;
    let confined = match &args.network_proxy {
        Some(socket) => runtime.confined_command_through_proxy(
            program,
            rest,
            socket.clone(),
            args.network_proxy_tcp,
        ),
        None => runtime.confined_command(program, rest, args.network),
    };
    let command = match confined {
        Ok((command, notices)) => {
            crate::print_notices(&notices);
            command
        }
        Err(err @ codecoder_app::Error::NoSandbox { .. }) => {
            return Err(Exit { code: EXIT_UNCONFINED, message: err.to_string() }.into());
        }
        Err(err) => return Err(err.into()),
    };

    // Ctrl-C or a TERM ends the command's whole group, sandbox and all: the signal thread drops
    // the sender, which is the run's cancel.
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
    let code = command.run_to(&cancel, &mut std::io::stdout(), &mut std::io::stderr());
    handle.close();
    let _ = watcher.join();
    Ok(ExitCode::from(code?))
}

pub(crate) fn run_doctor(
    args: &crate::cli::DoctorArgs,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    // The command's own model and provider: `global.overrides()` leaves both unset.
    let mut overrides = global.overrides();
    overrides.model.clone_from(&args.model);
    overrides.provider.clone_from(&args.provider);
    crate::print_notices(&codecoder_app::Runtime::load(overrides)?.doctor(out)?);
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn run_permissions_check(
    args: &PermissionsCheckArgs,
    global: &GlobalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let runtime = crate::load_runtime(global, None, None)?;
    let check = runtime.check_permission(&args.tool, &args.args, !args.exec)?;
    Ok(ExitCode::from(check.write_report(out)?))
}
