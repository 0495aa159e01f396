//! Running a command to its end in one call: [`output`] collects what it prints (the git probes,
//! `/diff`, hooks), [`run`] streams it to a callback (`codecoder sandbox -- CMD`). Both stop at
//! the [`Wait`]'s cancel, deadline or kill, so no caller writes a wait loop or a watcher of its
//! own.
//!
//! Invariants:
//! - The command never outlives the call: when the wait stops early its whole group is
//!   terminated (and dropping the `Child` guard covers every other return).
//! - The output read until the group was gone is kept, at most `limit` bytes of each stream for
//!   [`output`]; the rest is read and dropped, so a chatty command never blocks on a full pipe.

use crate::{CommandSpec, Outcome, OutputChunk, Result, SpawnConfig, Stream, Wait, spawn};

/// A finished command's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collected {
    /// How it ended: `Exited` with its status, or which of the wait's signals stopped it.
    pub outcome: Outcome,
    /// What it wrote to stdout (until it ended or was stopped), at most the limit.
    pub stdout: Vec<u8>,
    /// What it wrote to stderr (until it ended or was stopped), at most the limit.
    pub stderr: Vec<u8>,
}

impl Collected {
    /// True when the command exited by itself with status 0.
    pub fn success(&self) -> bool {
        matches!(self.outcome, Outcome::Exited(status) if status.success())
    }

    /// Stdout as text (invalid UTF-8 replaced).
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Stderr as text (invalid UTF-8 replaced).
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// Runs `spec` under `config` until it exits or `wait` stops it, and collects its output: the
/// first `limit` bytes of each stream.
///
/// # Errors
/// When the command cannot be started or its waiter is lost.
pub fn output<C, K>(
    spec: &CommandSpec,
    config: &SpawnConfig,
    wait: &Wait<'_, C, K>,
    limit: usize,
) -> Result<Collected> {
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let outcome = run(spec, config, wait, &mut |chunk| {
        let kept = match chunk.stream {
            Stream::Stdout => &mut stdout,
            Stream::Stderr => &mut stderr,
        };
        let room = limit.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk.bytes[..chunk.bytes.len().min(room)]);
    })?;
    Ok(Collected { outcome, stdout, stderr })
}

/// Runs `spec` under `config` until it exits or `wait` stops it, handing each output chunk to
/// `on_output` as it comes.
///
/// # Errors
/// When the command cannot be started or its waiter is lost.
pub fn run<C, K>(
    spec: &CommandSpec,
    config: &SpawnConfig,
    wait: &Wait<'_, C, K>,
    on_output: &mut dyn FnMut(&OutputChunk),
) -> Result<Outcome> {
    let mut child = spawn(spec, config)?;
    child.wait(wait, on_output)
}
