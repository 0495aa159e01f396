//! `codecoder sandbox -- CMD`: one command run by hand exactly as a headless session would run
//! it, in the OS sandbox of the configured mode (`Runtime::command_confinement`), its output
//! streamed to the caller as it comes.
//!
//! Invariant: the command's whole process group ends with the run (finished, or cancelled by
//! the caller's channel); the exit code follows the shell's conventions.

use std::ffi::OsString;
use std::io::Write;

use codecoder_sandbox::{CommandSpec, Outcome, SpawnConfig, Wait};

use crate::error::Result;
use crate::{Notice, Runtime};

pub use codecoder_sandbox::Stream;

/// A command ready to run confined.
#[derive(Debug)]
pub struct ConfinedCommand {
    spec: CommandSpec,
    config: SpawnConfig,
}

impl Runtime {
    /// `program` with `args`, in the working directory, confined as a headless session's
    /// commands are (the network on only when `network`); and the safety warnings.
    ///
    /// # Errors
    /// `NoSandbox` when the mode wants a sandbox and no backend works here.
    pub fn confined_command(
        &self,
        program: &OsString,
        args: &[OsString],
        network: bool,
    ) -> Result<(ConfinedCommand, Vec<Notice>)> {
        let (confinement, environment, notices) = self.command_confinement(network)?;
        let mut spec = CommandSpec::new(program.clone(), args.iter().cloned());
        spec.cwd = Some(self.cwd().to_owned());
        let config = SpawnConfig { confinement, environment, ..SpawnConfig::standard() };
        Ok((ConfinedCommand { spec, config }, notices))
    }

    /// As [`Runtime::confined_command`] with the network off, except that the command may reach
    /// the network through the proxy listening on `socket` (and on the loopback address `tcp`,
    /// which the Landlock backend needs): `codecoder sandbox --network-proxy`, to try a proxied
    /// network by hand against a proxy of one's own. Unconfined (danger-full-access), the
    /// command keeps the whole network.
    ///
    /// # Errors
    /// `NoSandbox` when the mode wants a sandbox and no backend works here.
    pub fn confined_command_through_proxy(
        &self,
        program: &OsString,
        args: &[OsString],
        socket: std::path::PathBuf,
        tcp: Option<std::net::SocketAddr>,
    ) -> Result<(ConfinedCommand, Vec<Notice>)> {
        use codecoder_sandbox::{Confinement, NetworkProxy, Sandbox};
        let (mut command, notices) = self.confined_command(program, args, false)?;
        if let Confinement::Sandboxed(sandbox) = &command.config.confinement {
            let mut policy = sandbox.policy().clone();
            policy.network_proxy = Some(NetworkProxy { socket, tcp });
            let proxied =
                Sandbox::new(policy, sandbox.backend().clone(), sandbox.stage_exe().to_owned());
            command.config.confinement = Confinement::Sandboxed(std::sync::Arc::new(proxied));
        }
        Ok((command, notices))
    }
}

impl ConfinedCommand {
    /// Runs the command as [`ConfinedCommand::run`] does, its stdout into `out` and its
    /// stderr into `err`. A failing writer is the reader's business: the command goes on.
    ///
    /// # Errors
    /// When the command cannot be started or confined.
    pub fn run_to(
        &self,
        cancel: &crossbeam_channel::Receiver<()>,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> Result<u8> {
        self.run(cancel, &mut |stream, bytes| {
            let _ = match stream {
                Stream::Stdout => out.write_all(bytes),
                Stream::Stderr => err.write_all(bytes),
            };
        })
    }

    /// Runs the command to its end, or until `cancel` disconnects (its group is then killed);
    /// each chunk of output goes to `output` as it is read. Returns the exit code: the
    /// command's own, 128 + the signal that ended it, 130 when cancelled.
    ///
    /// # Errors
    /// When the command cannot be started or confined.
    pub fn run(
        &self,
        cancel: &crossbeam_channel::Receiver<()>,
        output: &mut dyn FnMut(Stream, &[u8]),
    ) -> Result<u8> {
        let wait = Wait::new().cancel_on(cancel);
        let outcome = codecoder_sandbox::run(&self.spec, &self.config, &wait, &mut |chunk| {
            output(chunk.stream, &chunk.bytes);
        })?;
        Ok(match outcome {
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
        })
    }
}
