//! The hook events codecoder emits, named exactly as Claude Code names them.
//!
//! Invariant: `Event::ALL` lists every variant once, and `name`/`from_name` are inverses.

use std::fmt;

/// A point in a session where hooks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Event {
    /// Before a tool call, ahead of the approval chain. May block, ask, allow or rewrite.
    PreToolUse,
    /// When the user would be asked to approve a call. May allow or deny in the user's place.
    PermissionRequest,
    /// After a tool call succeeded. May give the model feedback.
    PostToolUse,
    /// After a tool call failed. May give the model feedback.
    PostToolUseFailure,
    /// When the user submits a prompt. May block it or add context.
    UserPromptSubmit,
    /// When the model ends its turn. May make it go on.
    Stop,
    /// When a subagent starts. May add context to it.
    SubagentStart,
    /// When a subagent ends its turn. May make it go on.
    SubagentStop,
    /// When a session starts, resumes, is cleared or compacted. May add context.
    SessionStart,
    /// When a session ends.
    SessionEnd,
    /// Before the context is compacted.
    PreCompact,
    /// After the context was compacted.
    PostCompact,
    /// When codecoder notifies the user (waiting for approval, idle, …).
    Notification,
    /// After the approval policy (a rule, the mode, a hook) refused a call, before the refusal
    /// goes to the model. May tell the model it may retry.
    PermissionDenied,
    /// After every call of a model response ran, before the next request. May stop the turn.
    PostToolBatch,
    /// When a turn ends on a model (API) error instead of Stop. Its output is ignored.
    StopFailure,
    /// When a plan update adds a step. May give the model feedback.
    TaskCreated,
    /// When a plan update marks a step completed. May give the model feedback.
    TaskCompleted,
    /// When an instruction file (AGENTS.md, CLAUDE.md) is loaded into the session's prompt.
    /// Its output is only shown.
    InstructionsLoaded,
}

/// Events Claude Code knows and codecoder does not emit (yet): configuring them is a warning,
/// not an error, and they never run.
pub(crate) const CLAUDE_ONLY_EVENTS: &[&str] = &[
    "Setup",
    "UserPromptExpansion",
    "MessageDisplay",
    "TeammateIdle",
    "ConfigChange",
    "CwdChanged",
    "FileChanged",
    "WorktreeCreate",
    "WorktreeRemove",
    "Elicitation",
    "ElicitationResult",
];

impl Event {
    /// Every event, in a fixed order.
    pub const ALL: [Event; Event::COUNT] = [
        Event::PreToolUse,
        Event::PermissionRequest,
        Event::PostToolUse,
        Event::PostToolUseFailure,
        Event::UserPromptSubmit,
        Event::Stop,
        Event::SubagentStart,
        Event::SubagentStop,
        Event::SessionStart,
        Event::SessionEnd,
        Event::PreCompact,
        Event::PostCompact,
        Event::Notification,
        Event::PermissionDenied,
        Event::PostToolBatch,
        Event::StopFailure,
        Event::TaskCreated,
        Event::TaskCompleted,
        Event::InstructionsLoaded,
    ];

    /// How many events there are.
    pub const COUNT: usize = 19;

    /// The name used in configuration and in `hook_event_name`.
    pub fn name(self) -> &'static str {
        match self {
            Event::PreToolUse => "PreToolUse",
            Event::PermissionRequest => "PermissionRequest",
            Event::PostToolUse => "PostToolUse",
            Event::PostToolUseFailure => "PostToolUseFailure",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::Stop => "Stop",
            Event::SubagentStart => "SubagentStart",
            Event::SubagentStop => "SubagentStop",
            Event::SessionStart => "SessionStart",
            Event::SessionEnd => "SessionEnd",
            Event::PreCompact => "PreCompact",
            Event::PostCompact => "PostCompact",
            Event::Notification => "Notification",
            Event::PermissionDenied => "PermissionDenied",
            Event::PostToolBatch => "PostToolBatch",
            Event::StopFailure => "StopFailure",
            Event::TaskCreated => "TaskCreated",
            Event::TaskCompleted => "TaskCompleted",
            Event::InstructionsLoaded => "InstructionsLoaded",
        }
    }

    /// The event with this exact (case-sensitive) name.
    pub fn from_name(name: &str) -> Option<Event> {
        Event::ALL.into_iter().find(|event| event.name() == name)
    }

    /// True for the events whose matcher is tested against a tool name.
    pub fn is_tool_event(self) -> bool {
        match self {
            Event::PreToolUse
            | Event::PermissionRequest
            | Event::PostToolUse
            | Event::PostToolUseFailure
            | Event::PermissionDenied => true,
            Event::UserPromptSubmit
            | Event::Stop
            | Event::SubagentStart
            | Event::SubagentStop
            | Event::SessionStart
            | Event::SessionEnd
            | Event::PreCompact
            | Event::PostCompact
            | Event::Notification
            | Event::PostToolBatch
            | Event::StopFailure
            | Event::TaskCreated
            | Event::TaskCompleted
            | Event::InstructionsLoaded => false,
        }
    }

    /// True for the events that run every hook whatever its matcher says.
    pub fn ignores_matcher(self) -> bool {
        matches!(
            self,
            Event::UserPromptSubmit
                | Event::Stop
                | Event::PostToolBatch
                | Event::TaskCreated
                | Event::TaskCompleted
        )
    }

    /// The position of the event in [`Event::ALL`] (the variants are declared in that order).
    pub(crate) fn slot(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
