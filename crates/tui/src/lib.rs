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
use codecoder_protocol::{
    CallView, MessageItem, Record, RecordBody, SessionId, ToolCall, ToolResult, Usage,
};

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
    /// Tokens the session used before this process (a resumed session's earlier turns).
    pub usage_so_far: Usage,
    /// The last request's input + output tokens, before this process (context used).
    pub context_tokens: u64,
}

/// What a session log says about its token use: the turns' totals, and the last step's input +
/// output (how full the context was).
pub fn usage_from_records<'a>(records: impl IntoIterator<Item = &'a Record>) -> (Usage, u64) {
    let mut total = Usage::default();
    let mut context = 0;
    for record in records {
        match &record.body {
            RecordBody::TurnEnd { usage, .. } => total += *usage,
            RecordBody::StepEnd { usage, .. } if usage.input_tokens + usage.output_tokens > 0 => {
                context = usage.input_tokens + usage.output_tokens;
            }
            _ => {}
        }
    }
    (total, context)
}

/// One entry of a session's past, re-rendered when a session is resumed.
#[derive(Debug, Clone, PartialEq)]
// Items are made once per resume and moved once into the transcript: boxing buys nothing.
#[allow(clippy::large_enum_variant)]
pub enum TranscriptItem {
    /// A user message's text.
    User(String),
    /// An assistant message's text (Markdown).
    Assistant(String),
    /// Reasoning text.
    Reasoning(String),
    /// A tool call and its result (`None`: the log holds no result, e.g. interrupted).
    Tool {
        /// The call.
        call: ToolCall,
        /// What the call is, as its tool describes it.
        view: CallView,
        /// Its result.
        result: Option<ToolResult>,
    },
}

/// A started session: the agent, what to show about it, and its past.
#[derive(Debug)]
pub struct Session {
    /// The agent: commands in, events out. The UI owns it and shuts it down.
    pub agent: AgentHandle,
    /// What the status line shows.
    pub info: SessionInfo,
    /// The past (empty for a new session).
    pub transcript: Vec<TranscriptItem>,
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

/// The transcript of a session log's records: user and assistant text, reasoning, tool calls
/// (each described by `describe`, the session's tools' view of it) paired with their results.
/// A conversation rewind drops what the turn it went back to and the later ones showed, as the
/// model no longer sees it either.
pub fn transcript_from_records<'a>(
    records: impl IntoIterator<Item = &'a Record>,
    describe: impl Fn(&ToolCall) -> CallView,
) -> Vec<TranscriptItem> {
    let mut items = Vec::new();
    let mut open_calls: Vec<(usize, codecoder_protocol::ToolCallId)> = Vec::new();
    let mut turn_starts: Vec<(codecoder_protocol::TurnId, usize)> = Vec::new();
    for record in records {
        match &record.body {
            RecordBody::TurnStart { turn } => turn_starts.push((*turn, items.len())),
            RecordBody::Rewind(rewind) if rewind.conversation => {
                if let Some(at) = turn_starts.iter().position(|(turn, _)| *turn == rewind.turn) {
                    items.truncate(turn_starts[at].1);
                    turn_starts.truncate(at);
                    open_calls.clear();
                }
            }
            RecordBody::UserMessage { message } => {
                let text = message_text(&message.items);
                if !text.trim().is_empty() {
                    items.push(TranscriptItem::User(text));
                }
            }
            RecordBody::AssistantMessage { message } => {
                for item in &message.items {
                    match item {
                        MessageItem::Text { text } if !text.trim().is_empty() => {
                            items.push(TranscriptItem::Assistant(text.clone()));
                        }
                        MessageItem::Reasoning(reasoning) if !reasoning.text.trim().is_empty() => {
                            items.push(TranscriptItem::Reasoning(reasoning.text.clone()));
                        }
                        MessageItem::ToolCall(call) => {
                            open_calls.push((items.len(), call.id.clone()));
                            items.push(TranscriptItem::Tool {
                                call: call.clone(),
                                view: describe(call),
                                result: None,
                            });
                        }
                        _ => {}
                    }
                }
            }
            RecordBody::ToolResult { result, .. } => {
                if let Some(pos) = open_calls.iter().position(|(_, id)| *id == result.tool_call_id)
                {
                    let (index, _) = open_calls.remove(pos);
                    if let Some(TranscriptItem::Tool { result: slot, .. }) = items.get_mut(index) {
                        *slot = Some(result.clone());
                    }
                }
            }
            _ => {}
        }
    }
    items
}

fn message_text(items: &[MessageItem]) -> String {
    let mut text = String::new();
    for item in items {
        if let MessageItem::Text { text: part } = item {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(part);
        }
    }
    text
}

#[cfg(test)]
mod tests;
