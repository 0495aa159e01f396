//! Running a short command to its end and collecting its output: what the git probes, `/diff`,
//! `/init` and similar one-shot helpers need, in one place instead of a wait loop each.
//!
//! Invariant: the command never outlives the call: at the deadline its whole group is
//! terminated (the `Child` guard), and the output collected so far is kept.

use std::time::Duration;

use crate::{Child, CommandSpec, Outcome, Result, SpawnConfig, Stream, spawn};

/// A finished command's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collected {
    /// How it ended: `Exited` with its status, or `Cancelled` when the deadline passed first.
    pub outcome: Outcome,
    /// Everything it wrote to stdout (up to the deadline).
    pub stdout: Vec<u8>,
    /// Everything it wrote to stderr (up to the deadline).
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

/// Runs `spec` under `config` and collects its output, terminating its group when `timeout`
/// passes first (the outcome is then `Cancelled`).
///
/// # Errors
/// When the command cannot be started or its waiter is lost.
pub fn output(spec: &CommandSpec, config: &SpawnConfig, timeout: Duration) -> Result<Collected> {
    let mut child: Child = spawn(spec, config)?;
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let deadline = crossbeam_channel::after(timeout);
    let outcome = child.wait(&deadline, &mut |chunk| match chunk.stream {
        Stream::Stdout => stdout.extend_from_slice(&chunk.bytes),
        Stream::Stderr => stderr.extend_from_slice(&chunk.bytes),
    })?;
    Ok(Collected { outcome, stdout, stderr })
}
