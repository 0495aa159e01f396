//! `CallView`: what a tool call is, for the person and the policy, described once by its tool.
//!
//! A tool builds the view from its arguments (`Tool::view` in the kernel); the kernel carries it
//! on the events of the call, and every front-end renders from it instead of reading the tool's
//! name and raw arguments. Invariant: a view is a pure function of the tool and the arguments
//! (no filesystem access), so the same call always shows the same way, live or replayed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a tool call does, as front-ends and the approval policy see it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallView {
    /// The class of call.
    pub kind: CallKind,
    /// One line saying what the call does, as an editor shows it (`Read src/lib.rs`,
    /// ``Run `cargo test` ``).
    pub title: String,
    /// The call's key argument alone, for a compact line beside the tool's name (a path, a
    /// pattern, `$ command`); empty when there is none.
    pub detail: String,
    /// The files the call reads or changes, as the call names them (relative to the session's
    /// working directory, or absolute), move destinations included, in call order.
    pub paths: Vec<String>,
    /// For a read: the 1-based line it starts at, when the call gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// For an edit: each file it changes, with the change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<FileChange>,
    /// For a command: the command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// For a plan update: the plan as the call states it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanView>,
    /// The call changes nothing outside the conversation.
    pub read_only: bool,
    /// The call may destroy data (an MCP tool's `destructiveHint`).
    pub destructive: bool,
}

/// The class of a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CallKind {
    /// Reads files.
    Read,
    /// Changes files.
    Edit,
    /// Lists or searches files.
    Search,
    /// Runs a command (or looks after one running in the background).
    Execute,
    /// Reaches the network for content.
    Fetch,
    /// States or updates the plan.
    Plan,
    /// Asks the person a question.
    Ask,
    /// Hands a task to a subagent.
    Agent,
    /// A tool of an MCP server.
    Mcp {
        /// The server's name in the configuration.
        server: String,
        /// The tool's name on that server.
        tool: String,
    },
    /// Anything else.
    #[default]
    Other,
}

/// One file an edit changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    /// The file, as the call names it.
    pub path: String,
    /// What happens to it.
    pub kind: ChangeKind,
    /// The change as diff lines, each ending in `\n`: `+` added, `-` removed, ` ` context,
    /// `@@` chunk headers, as the model wrote them.
    pub diff: String,
    /// For a change written as a patch: the lines that named the file, as written
    /// (`*** Update File: a` and `*** Move to: b`), each ending in `\n`; empty otherwise.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub header: String,
    /// The change as replacements of old text by new, for clients that show a diff of two
    /// texts: `old` is `None` for a file written whole.
    pub edits: Vec<TextEdit>,
}

/// What an edit does to a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChangeKind {
    /// Creates it (or writes it whole).
    Add,
    /// Changes it in place, or moves it to `move_to` with the changes.
    Update {
        /// Where the file goes, when it moves.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        move_to: Option<String>,
    },
    /// Removes it.
    Delete,
}

/// One replacement of an edit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TextEdit {
    /// The text replaced; `None` when the whole file is written.
    pub old: Option<String>,
    /// The text that replaces it.
    pub new: String,
}

/// A plan as a call states it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanView {
    /// Why the plan is what it is, when the call says.
    pub explanation: String,
    /// The steps in order.
    pub steps: Vec<PlanStep>,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanStep {
    /// What the step does.
    pub text: String,
    /// `pending`, `in_progress` or `completed`, as the call gives it.
    pub status: String,
}

impl CallView {
    /// The view of a call known only by its tool's name: a tool that did not describe the call
    /// (or no tool of that name): `Other`, titled by the name, with the arguments compacted as
    /// the detail.
    pub fn generic(name: &str, args: &serde_json::Value) -> Self {
        Self { title: name.to_owned(), detail: compact_args(args), ..Self::default() }
    }

    /// Whether the call is of an MCP server's tool.
    pub fn is_mcp(&self) -> bool {
        matches!(self.kind, CallKind::Mcp { .. })
    }
}

/// Arguments on one line for a compact display: empty for none, else the JSON cut to 120
/// characters with an ellipsis.
pub fn compact_args(args: &serde_json::Value) -> String {
    match args {
        serde_json::Value::Object(map) if map.is_empty() => String::new(),
        serde_json::Value::Null => String::new(),
        other => truncate(&other.to_string(), 120),
    }
}

/// The first line of `text`, cut to `max` characters with an ellipsis.
pub fn first_line(text: &str, max: usize) -> String {
    truncate(text.lines().next().unwrap_or_default(), max)
}

/// `text` cut to `max` characters, the last one an ellipsis when it was cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}
