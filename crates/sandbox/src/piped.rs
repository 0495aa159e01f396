//! A long-lived child spoken to over its stdin and stdout (a language server): [`spawn_piped`].
//!
//! Unlike [`crate::spawn`], stdin stays open and stdout is handed to the caller whole, for a
//! protocol of its own; stderr goes to `/dev/null`. The child is confined as the config says
//! (the same wrapping as every sandboxed command), runs in a process group of its own, and dies
//! with the thread that started it (`PR_SET_PDEATHSIG` where there is one).
//!
//! Invariant: dropping a [`PipedChild`] closes its stdin, sends SIGTERM to its group, then
//! SIGKILL after the grace period if it is still there, and reaps it: no orphan, no zombie.

use std::process::{ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::{CommandSpec, Confinement, Error, Result, SpawnConfig};

/// A running child with open pipes. Dropping it ends its process group.
#[derive(Debug)]
pub struct PipedChild {
    child: std::process::Child,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    kill_grace: Duration,
}

/// Starts `spec` with piped stdin and stdout (the spec's `stdin` bytes are ignored), in a new
/// process group, confined and with the environment `config` gives.
///
/// # Errors
/// When the program cannot be started.
pub fn spawn_piped(spec: &CommandSpec, config: &SpawnConfig) -> Result<PipedChild> {
    let (program, args, sandbox_env, inherited) = match &config.confinement {
        Confinement::Unconfined => (spec.program.clone(), spec.args.clone(), Vec::new(), None),
        Confinement::Sandboxed(sandbox) => {
            let wrapped = sandbox.wrap(&spec.program, &spec.args, spec.cwd.as_deref());
            (wrapped.program, wrapped.args, wrapped.env, wrapped.keep)
        }
    };
    let mut command = crate::command_for(&program, &args, spec, config, &[], &sandbox_env);
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    // The reaper ends it with codecoder; without one, it dies with its thread.
    if !crate::reaper::watch(&mut command) {
        crate::die_with_parent(&mut command);
    }
    let spawned = command.spawn();
    drop(inherited);
    let mut child = spawned.map_err(|source| Error::Spawn {
        program: spec.program.to_string_lossy().into_owned(),
        source,
    })?;
    crate::live_groups::insert(child.id());
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    Ok(PipedChild { child, stdin, stdout, kill_grace: config.kill_grace })
}

impl PipedChild {
    /// The child's pid (its group's id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its stdin, once (the caller's writer owns it from then on).
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.stdin.take()
    }

    /// Its stdout, once (the caller's reader owns it from then on).
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.stdout.take()
    }

    /// Whether it has exited (and is reaped).
    pub fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)) | Err(_))
    }
}

impl Drop for PipedChild {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let pid = self.child.id();
        let group = i32::try_from(pid).map(Pid::from_raw);
        if !self.has_exited() {
            if let Ok(group) = group {
                let _ = killpg(group, Signal::SIGTERM);
            }
            let deadline = Instant::now() + self.kill_grace;
            while Instant::now() < deadline && !self.has_exited() {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        // The leader may be gone while members of its group are not.
        if let Ok(group) = group {
            let _ = killpg(group, Signal::SIGKILL);
        }
        let _ = self.child.wait();
        crate::live_groups::remove(pid);
    }
}
