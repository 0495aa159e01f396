//! Claude Code compatible hooks: user commands that run at fixed points of a session (before a
//! tool, after it, when the model wants to stop, …) and may block, rewrite or add context.
//!
//! The wire protocol is Claude Code's (see `shared/reference/hooks.md`), so that existing hook
//! scripts work unchanged: the same configuration shape (`hooks.<Event>` = groups of
//! `{matcher, hooks: [{type: "command", command, timeout}]}`), the same JSON on stdin (with
//! Claude's tool and argument names), the same exit codes and JSON output.
//!
//! - [`HookSet::load`] reads and merges every configuration source.
//! - [`HookRunner`] runs the matching hooks of one event and folds their answers into one typed
//!   outcome per event, the kernel's own (`codecoder_kernel::PreToolUse`, …); it implements the
//!   kernel's `Hooks` seam directly.
//! - [`mapping`] translates tool names and arguments between ours and Claude's.
//!
//! Invariants:
//! - Processes are started only through `codecoder_sandbox::output`: each hook runs as
//!   `sh -c COMMAND` in a process group of its own, which is killed at its timeout, or at once
//!   when the runner's cancel token fires ([`HookRunner::cancellable`]).
//! - An event with no matching hook costs nothing: no thread, no process, no JSON encoding.
//! - Nothing a hook prints or does makes this crate panic or return `Err`: a broken hook is a
//!   non-blocking error in the outcome, and every such message names the hook.

mod condition;
mod config;
mod event;
mod handler;
pub mod mapping;
mod outcome;
mod runner;
mod trust;

pub use condition::CallSubjects;
pub use config::{HookCallback, HookEntry, HookSet, HookSources};
pub use event::Event;
pub use handler::{HookPrompt, HookServices};
pub use runner::{CommonInput, HookRunner};
pub use trust::{TRUSTED_HOOKS_FILE, approve_hooks, approved_hooks};

use std::path::PathBuf;

pub use codecoder_protocol::env::{CLAUDE_PLUGIN_ROOT, CLAUDE_PROJECT_DIR, CODECODER_PROJECT_DIR};

/// A hooks configuration problem. Running hooks never fails: their problems are data in the
/// outcomes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file is not valid JSON.
    #[error("{}:{line}:{column}: invalid JSON: {message}; fix the file or remove it", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// A hooks entry has the wrong shape (for example a group without `hooks`).
    #[error("{}: `{at}`: {message}; see the hooks section of the docs for the expected shape", path.display())]
    Shape {
        /// The file.
        path: PathBuf,
        /// Where in the file, as a dotted path (`hooks.PreToolUse[0].hooks[1].command`).
        at: String,
        /// What is wrong.
        message: String,
    },
    /// A file exists but could not be read.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// This crate's result.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests;
