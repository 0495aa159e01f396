//! The interactive terminal UI (seed L0): `codecoder` with no subcommand. A transcript of the
//! session (Markdown answers, reasoning, tool cards with live output, diffs and plans), inline
//! approvals and questions, a multi-line input editor with completion, slash commands and a
//! status line — drawn with ratatui in an inline viewport under the shell prompt, so the
//! transcript stays in the terminal's scrollback after exit.
//!
//! Architecture: the UI thread owns the terminal and the `App` state and `select!`s over the
//! agent's event receiver, a crossterm input thread (`tui-input`) and a frame tick. All pending
//! agent events are drained before a frame is drawn, and frames are coalesced (at most one per
//! 16 ms, only when something changed), so a fast token stream never backs up. State → lines is
//! pure (`cells`, `view`, `markdown`): snapshot tests need no terminal. Finished cells go to
//! the terminal's scrollback and are dropped, so a long session's transcript costs the UI no
//! memory; the last tool output is kept (bounded) for the Ctrl+O pager. `@` completion answers
//! from a file list a background thread (`tui-file-index`) walks at start and after each turn.
//!
//! Invariants:
//! - The terminal is restored on every exit path: normal return, `?` errors (a drop guard) and
//!   panics (a panic hook installed for the UI's lifetime).
//! - No async runtime: std threads and crossbeam channels only, like the kernel.
//! - Every approval request and question is answered once, or dropped (= cancelled) with its
//!   turn; the UI never leaves the agent blocked on it after the turn ends.
//! - Sessions start through the `Host` trait, which `RuntimeHost` implements over the
//!   runtime (`codecoder-app`); this crate never assembles an agent itself.
//! - Tool calls are drawn from their `CallView` (the tool's own description of the call), and a
//!   resumed session's past is the runtime's replay of its log fed through the path live events
//!   take: the UI knows no tool by name and reads no log records.

mod app;
#[doc(hidden)]
pub mod bench;
mod cells;
mod complete;
mod highlight;
mod host;
mod input;
mod markdown;
mod pager;
mod rewind;
mod run;
mod view;

#[cfg(test)]
mod testing;

use std::path::{Path, PathBuf};

use codecoder_app::AgentHandle;
use codecoder_app::history::Replayed;
use codecoder_protocol::SessionId;

pub use bench::simulate_stream;
pub use host::RuntimeHost;
pub use run::{FrameStats, run};

pub use codecoder_app::Pricing;

/// What the UI shows about a running session.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    /// The root session.
    pub session_id: SessionId,
    /// The model id.
    pub model: String,
    /// The provider id.
    pub provider: String,
    /// The model's context window, in tokens.
    pub context_window: u64,
    /// The working directory (for `@path` completion, `/diff`, `/init`).
    pub cwd: PathBuf,
    /// Prices, for the cost shown in the status line and `/status`.
    pub pricing: Pricing,
}

/// A started session: the agent, what to show about it, and its past.
#[derive(Debug)]
pub struct Session {
    /// The agent: commands in, events out. The UI owns it and shuts it down.
    pub agent: AgentHandle,
    /// What the status line shows.
    pub info: SessionInfo,
    /// The past, as the runtime replays the session's log (empty for a new session): the UI
    /// feeds it through the path live events take, so it shows as the live run did, and its
    /// token counts come from it.
    pub history: Vec<Replayed>,
    /// What starting it had to say (a sandbox downgrade, a server that did not start, a bad
    /// skill file): shown as warnings.
    pub notices: Vec<String>,
}

/// Which session `Host::start` should start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChoice {
    /// A new session.
    New,
    /// Resume this session (id, unique prefix or path).
    Resume(String),
    /// Branch this session into a new one and continue there.
    Fork(String),
}

/// A request to replace the running agent (`/new`, `/resume`, `/fork`, `/model`, `/provider`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartRequest {
    /// Which session.
    pub session: SessionChoice,
    /// Another model (`None`: as configured).
    pub model: Option<String>,
    /// Another provider (`None`: as configured).
    pub provider: Option<String>,
    /// Another reasoning effort (`none` … `xhigh`; `None`: as configured or as chosen before).
    pub reasoning_effort: Option<String>,
}

/// A session in the `/resume` picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    /// The session id.
    pub id: String,
    /// A one-line title (the first prompt).
    pub title: String,
    /// When it was last written, for display.
    pub updated: String,
}

/// What the UI needs from the front-end that wires agents together.
pub trait Host {
    /// Starts an agent. The UI has already shut the previous one down.
    ///
    /// # Errors
    /// When the session cannot be found or the agent cannot start; the UI shows the message.
    fn start(&mut self, request: &StartRequest) -> anyhow::Result<Session>;

    /// The sessions `/resume` offers, newest first.
    ///
    /// # Errors
    /// When the session index cannot be read; the UI shows the message.
    fn sessions(&mut self) -> anyhow::Result<Vec<SessionSummary>>;

    /// Switches the running session's approval mode (`untrusted`, `on-request`, `never`) and
    /// returns the label the status line shows.
    ///
    /// # Errors
    /// When the mode is unknown or cannot be changed here; the UI shows the message.
    fn set_approval_mode(&mut self, mode: &str) -> anyhow::Result<String> {
        anyhow::bail!("the approval mode cannot be changed here (asked for `{mode}`)")
    }

    /// Shift+Tab: switches the running session to the next permission mode (default →
    /// acceptEdits → plan) and returns its name.
    ///
    /// # Errors
    /// When the mode cannot be changed here; the UI shows the message.
    fn cycle_permission_mode(&mut self) -> anyhow::Result<String> {
        anyhow::bail!("the permission mode cannot be changed here")
    }

    /// The running session's permission mode (`default`, `acceptEdits`, `plan`), if known; it
    /// changes on its own when a plan is approved.
    fn permission_mode(&self) -> Option<String> {
        None
    }

    /// `/diff`: the working tree's changes in `cwd`, as a unified diff.
    ///
    /// # Errors
    /// When `cwd` is not a repository or git fails; the UI shows the message.
    fn diff(&mut self, cwd: &Path) -> anyhow::Result<String>;

    /// `/hooks`: every hook with its source and state; with `approve`, first records the
    /// project's pending hooks as reviewed (they run from the next session: a session's hooks
    /// are fixed when it starts).
    ///
    /// # Errors
    /// A hooks file that cannot be read, or the store of approvals cannot be written.
    fn hooks(&mut self, approve: bool) -> anyhow::Result<String> {
        let _ = approve;
        anyhow::bail!("hooks are not listed here")
    }

    /// `/init`: writes a starter AGENTS.md in `cwd` (never over one) and says what it did.
    ///
    /// # Errors
    /// When the file cannot be written; the UI shows the message.
    fn init_agents_md(&mut self, cwd: &Path) -> anyhow::Result<String>;

    /// `/rewind`: the turns of the session logged at `log` whose prompt can be gone back to.
    ///
    /// # Errors
    /// When the log cannot be read; the UI shows the message.
    fn rewind_points(&mut self, log: &Path) -> anyhow::Result<Vec<codecoder_app::RewindPoint>> {
        anyhow::bail!("rewinding is not available here ({})", log.display())
    }

    /// `/undo`, `/rewind N`: restores files as the request says (or reports the files changed
    /// outside codecoder since, restoring nothing) and returns the `rewind` record the UI then
    /// sends to the agent.
    ///
    /// # Errors
    /// When nothing can be rewound or a file cannot be restored; the UI shows the message.
    fn rewind(
        &mut self,
        log: &Path,
        request: &codecoder_app::RewindRequest,
    ) -> anyhow::Result<codecoder_app::RewindOutcome> {
        let _ = request;
        anyhow::bail!("rewinding is not available here ({})", log.display())
    }
}

/// Settings of one UI run.
#[derive(Debug, Clone)]
pub struct TuiConfig {
    /// The approval mode shown in the status line and `/approvals` (`on-request` by default).
    pub approval_mode: String,
    /// Draw without colours (`NO_COLOR` set).
    pub no_color: bool,
    /// A prompt to send at once (`codecoder "PROMPT"`).
    pub initial_prompt: Option<String>,
    /// Skill names `$` completes.
    pub skills: Vec<String>,
    /// Custom commands (`/name`, without the slash): sent to the agent as prompts, which it
    /// expands.
    pub commands: Vec<String>,
    /// Where to write frame statistics as JSON at exit (benchmarks), if anywhere.
    pub stats_path: Option<PathBuf>,
    /// Open the session picker at once (`codecoder resume` without an id).
    pub open_resume_picker: bool,
}
