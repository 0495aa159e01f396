//! The permission vocabulary every crate shares: the verdict on a call (`allow | ask | deny`),
//! who reached it, the kind of a tool, the two policy axes (sandbox mode and approval mode), and
//! the one table between Claude Code's tool names and ours.
//!
//! Invariants: each word is defined here once. `Display`, `FromStr` and serde use the same
//! spellings (kebab-case: `read-only`, `on-request`, `session-grant`, …), so a value printed by
//! `config show` or logged parses back, and a parse error lists every valid spelling. The tool
//! name table maps both ways: `our_tool_name(claude_tool_name(x)) == x` for each of our tools,
//! and Claude's aliases (`MultiEdit`) map to ours in one direction only.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A value that is not one of a word's spellings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownValue {
    /// Which word (`sandbox mode`, `approval mode`, …).
    pub what: &'static str,
    /// The value as given.
    pub value: String,
    /// The valid spellings.
    pub valid: &'static [&'static str],
}

impl fmt::Display for UnknownValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown {} `{}`: expected one of {}",
            self.what,
            self.value,
            self.valid.join(", ")
        )
    }
}

impl std::error::Error for UnknownValue {}

/// Defines `VALUES`, `as_str`, `Display` and `FromStr` from one list of spellings.
macro_rules! spelled {
    ($ty:ident, $what:literal, { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $ty {
            /// The valid spellings, in order.
            pub const VALUES: &'static [&'static str] = &[$($text),+];

            /// The spelling (as on the command line, in config.toml and in the log).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $ty {
            type Err = UnknownValue;

            fn from_str(value: &str) -> Result<Self, UnknownValue> {
                match value {
                    $($text => Ok(Self::$variant),)+
                    _ => Err(UnknownValue {
                        what: $what,
                        value: value.to_owned(),
                        valid: Self::VALUES,
                    }),
                }
            }
        }
    };
}

/// The verdict on a tool call, from a hook, a rule or the policy. Ordered by strength:
/// `Allow < Ask < Deny` (deny wins when several are folded).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Run it (a hook's allow skips the prompt; ask and deny rules still apply).
    Allow,
    /// Ask the person.
    Ask,
    /// Do not run it; the reason goes to the model.
    Deny,
}

spelled!(Verdict, "verdict", { Allow => "allow", Ask => "ask", Deny => "deny" });

/// Who decided whether a call runs, as the approval record logs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DecidedBy {
    /// The person, asked.
    User,
    /// A permission rule, or the hidden and protected paths the rules stand for.
    Rule,
    /// The default of the tool's kind under the sandbox and approval modes.
    Mode,
    /// A PreToolUse or PermissionRequest hook.
    Hook,
    /// An approval policy that names no finer source.
    Policy,
    /// A "for this session" answer covering the call.
    SessionGrant,
    /// The turn was cancelled while the person was being asked.
    Cancel,
    /// An escalation of a call the person approved in this turn.
    CallApproval,
}

spelled!(DecidedBy, "decider", {
    User => "user",
    Rule => "rule",
    Mode => "mode",
    Hook => "hook",
    Policy => "policy",
    SessionGrant => "session-grant",
    Cancel => "cancel",
    CallApproval => "call-approval",
});

/// How much a tool can change; the approval policy decides by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ToolKind {
    /// Reads only (files, search). Runs in parallel with other read-only calls.
    ReadOnly,
    /// Edits files.
    Edit,
    /// Runs commands.
    Exec,
    /// Reaches the network.
    Network,
    /// Talks to the person.
    Interactive,
    /// Anything else (MCP tools, say).
    Other,
}

spelled!(ToolKind, "tool kind", {
    ReadOnly => "read-only",
    Edit => "edit",
    Exec => "exec",
    Network => "network",
    Interactive => "interactive",
    Other => "other",
});

/// What the sandbox lets a command (and the edit tools) write: `-s/--sandbox`, `sandbox_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Commands may read, not write.
    ReadOnly,
    /// Commands may write in the workspace, /tmp and the added directories.
    WorkspaceWrite,
    /// No sandbox.
    DangerFullAccess,
}

spelled!(SandboxMode, "sandbox mode", {
    ReadOnly => "read-only",
    WorkspaceWrite => "workspace-write",
    DangerFullAccess => "danger-full-access",
});

/// When the person is asked before a call runs: `-a/--ask-for-approval`, `approval_policy`,
/// `/approvals`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// Only known-safe read-only commands run without asking.
    Untrusted,
    /// Ask for what leaves the sandbox or is destructive.
    OnRequest,
    /// Never ask: commands run in the sandbox and failures go back to the model; what needs a
    /// person (a destructive command, a write outside the roots, an MCP tool its server marks
    /// destructive) is refused, and the model is told why.
    Never,
}

spelled!(ApprovalMode, "approval mode", {
    Untrusted => "untrusted",
    OnRequest => "on-request",
    Never => "never",
});

/// Claude Code's permission modes, on top of the two axes: in `acceptEdits` an edit inside the
/// writable roots that the mode's default would ask about runs without asking; in `plan` only
/// read-only tools run and the model ends by presenting a plan for the person to approve.
/// `--permission-mode`, `defaultMode` in Claude's settings, Shift+Tab in the TUI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum PermissionMode {
    /// The approval mode decides alone.
    #[serde(rename = "default")]
    Default,
    /// Edits inside the writable roots are not asked.
    #[serde(rename = "acceptEdits")]
    AcceptEdits,
    /// Only read-only tools run; the model plans.
    #[serde(rename = "plan")]
    Plan,
}

spelled!(PermissionMode, "permission mode", {
    Default => "default",
    AcceptEdits => "acceptEdits",
    Plan => "plan",
});

/// Our tools with a Claude Code counterpart: `(ours, Claude's)`. Hooks see Claude's name, and
/// permission rules and `permissions check` accept either.
pub const CLAUDE_TOOL_NAMES: &[(&str, &str)] = &[
    ("run_command", "Bash"),
    ("read_file", "Read"),
    ("write_file", "Write"),
    ("edit", "Edit"),
    ("glob", "Glob"),
    ("grep", "Grep"),
    ("list_dir", "LS"),
    ("web_fetch", "WebFetch"),
    ("agent", "Task"),
    ("exit_plan_mode", "ExitPlanMode"),
];

/// Claude Code tool names that map to one of ours without being its name: `(Claude's, ours)`.
/// One direction only (our `edit` is Claude's `Edit`).
pub const CLAUDE_TOOL_ALIASES: &[(&str, &str)] = &[("MultiEdit", "edit")];

/// Claude Code's name for our tool `tool` (`run_command` → `Bash`), or `tool` itself.
pub fn claude_tool_name(tool: &str) -> &str {
    CLAUDE_TOOL_NAMES.iter().find(|(ours, _)| *ours == tool).map_or(tool, |(_, claude)| claude)
}

/// Our name for Claude Code's tool `tool` (`Bash` → `run_command`, `MultiEdit` → `edit`), or
/// `tool` itself (our own names pass unchanged).
pub fn our_tool_name(tool: &str) -> &str {
    CLAUDE_TOOL_NAMES
        .iter()
        .map(|(ours, claude)| (claude, ours))
        .chain(CLAUDE_TOOL_ALIASES.iter().map(|(claude, ours)| (claude, ours)))
        .find(|(claude, _)| **claude == tool)
        .map_or(tool, |(_, ours)| ours)
}
