//! The choices config.toml makes that a domain crate acts on: a provider's wire format
//! (`providers`), the sandbox backend and the command environment's starting point (`sandbox`),
//! and when the session log is synced (`session`). Each is spelled once, here, for the config
//! file (serde, and the config's JSON schema) and for the crate that acts on it (which
//! re-exports it under the same name).
//!
//! Invariant: the serde spellings are the config file's (lowercase), so a value config.toml
//! accepts is exactly one variant.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which wire format a provider speaks (`model_providers.<id>.wire_api`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WireApi {
    /// OpenAI Responses: `POST {base}/responses`.
    Responses,
    /// OpenAI-compatible Chat Completions: `POST {base}/chat/completions`.
    Chat,
    /// Anthropic Messages: `POST {base}/v1/messages`.
    Anthropic,
}

impl WireApi {
    /// The name used in config files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Responses => "responses",
            Self::Chat => "chat",
            Self::Anthropic => "anthropic",
        }
    }
}

impl fmt::Display for WireApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for WireApi {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "responses" => Ok(Self::Responses),
            "chat" => Ok(Self::Chat),
            "anthropic" => Ok(Self::Anthropic),
            other => Err(format!(
                "unknown wire_api `{other}` (expected \"responses\", \"chat\" or \"anthropic\")"
            )),
        }
    }
}

/// How a provider's model writes tool calls into its message text
/// (`model_providers.<id>.tool_call_format`), for servers that pass them on as text instead of
/// as tool calls. Chat Completions only; the other wire APIs ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolCallFormat {
    /// No parsing: the text is the text (the default).
    Off,
    /// The format the catalog names for the model's family; none for an unknown model.
    Auto,
    /// `<tool_call>{"name": …, "arguments": …}</tool_call>` (Hermes, Qwen).
    Hermes,
    /// The same form as `hermes`, as Qwen's templates write it.
    Qwen,
    /// `<|python_tag|>{"name": …, "parameters": …}`, or the whole message as that JSON.
    Llama3,
    /// `[TOOL_CALLS] [{"name": …, "arguments": …}]`, or `[TOOL_CALLS]name[ARGS]{…}`.
    Mistral,
}

impl ToolCallFormat {
    /// The name used in config files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Auto => "auto",
            Self::Hermes => "hermes",
            Self::Qwen => "qwen",
            Self::Llama3 => "llama3",
            Self::Mistral => "mistral",
        }
    }
}

impl fmt::Display for ToolCallFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which sandbox backend the user asked for (`sandbox.backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BackendPreference {
    /// Bubblewrap when it works here, else Landlock (Linux); Seatbelt on macOS.
    Auto,
    /// Bubblewrap or nothing.
    Bwrap,
    /// Landlock or nothing.
    Landlock,
}

/// Which of the agent's environment variables a command starts from
/// (`shell_environment_policy.inherit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Inherit {
    /// Every variable of the agent's environment.
    All,
    /// Only the essentials: HOME, LOGNAME, PATH, SHELL, USER, USERNAME, TMPDIR, TEMP, TMP, LANG,
    /// LANGUAGE, LC_*, TERM, TZ.
    Core,
    /// None.
    None,
}

/// When the session log writer asks the OS to put the log on disk (`session.fsync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FsyncPolicy {
    /// After every record: slowest, loses nothing.
    Always,
    /// After `session_meta`, `turn_end` and `session_end`, group-committed on a background
    /// thread: a crash loses at most the open turn (which repair closes anyway) plus the turns
    /// whose sync had not finished yet.
    Turn,
    /// Never; the OS writes when it likes.
    Never,
}

impl FromStr for FsyncPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "always" => Ok(Self::Always),
            "turn" => Ok(Self::Turn),
            "never" => Ok(Self::Never),
            other => {
                Err(format!("unknown fsync policy `{other}` (expected always, turn or never)"))
            }
        }
    }
}
