//! The two policy axes and their CLI spellings (codex's): `-s/--sandbox read-only |
//! workspace-write | danger-full-access` and `-a/--ask-for-approval untrusted | on-request |
//! never`.
//!
//! Invariant: `FromStr`, `Display` and serde use the same kebab-case spellings, so a value
//! printed by `config show` parses back, and a parse error lists every valid spelling.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// What the sandbox lets a command (and the edit tools) write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Nothing may be written.
    ReadOnly,
    /// The writable roots (cwd, /tmp, `$TMPDIR`, `--add-dir`) may be written, except their
    /// `.git`, `.codecoder` and `.agents`.
    WorkspaceWrite,
    /// No sandbox at all.
    DangerFullAccess,
}

impl SandboxMode {
    /// The valid spellings, in order.
    pub const VALUES: &'static [&'static str] =
        &["read-only", "workspace-write", "danger-full-access"];

    /// The CLI spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::DangerFullAccess => "danger-full-access",
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SandboxMode {
    type Err = Error;

    fn from_str(value: &str) -> Result<Self, Error> {
        match value {
            "read-only" => Ok(Self::ReadOnly),
            "workspace-write" => Ok(Self::WorkspaceWrite),
            "danger-full-access" => Ok(Self::DangerFullAccess),
            _ => Err(Error::UnknownMode {
                what: "sandbox mode",
                value: value.to_owned(),
                valid: Self::VALUES,
            }),
        }
    }
}

/// When the person is asked before a call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// Ask for everything but known-safe read-only commands, reads and questions.
    Untrusted,
    /// Run inside the sandbox without asking; ask for what leaves it or is dangerous.
    OnRequest,
    /// Never ask: what would need approval is denied (the model gets the reason).
    Never,
}

impl ApprovalMode {
    /// The valid spellings, in order.
    pub const VALUES: &'static [&'static str] = &["untrusted", "on-request", "never"];

    /// The CLI spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Untrusted => "untrusted",
            Self::OnRequest => "on-request",
            Self::Never => "never",
        }
    }
}

impl fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ApprovalMode {
    type Err = Error;

    fn from_str(value: &str) -> Result<Self, Error> {
        match value {
            "untrusted" => Ok(Self::Untrusted),
            "on-request" => Ok(Self::OnRequest),
            "never" => Ok(Self::Never),
            _ => Err(Error::UnknownMode {
                what: "approval mode",
                value: value.to_owned(),
                valid: Self::VALUES,
            }),
        }
    }
}

/// The modes a session runs under, as the CLI flags set them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Modes {
    /// `-s/--sandbox`.
    pub sandbox: SandboxMode,
    /// `-a/--ask-for-approval`.
    pub approval: ApprovalMode,
    /// `--dangerously-bypass-approvals-and-sandbox` (`--yolo`): nothing is asked and nothing
    /// is sandboxed; rule and hook denies (and hidden paths) still apply.
    pub bypass: bool,
}

impl Modes {
    /// `--full-auto`: workspace-write plus on-request.
    pub const FULL_AUTO: Self = Self {
        sandbox: SandboxMode::WorkspaceWrite,
        approval: ApprovalMode::OnRequest,
        bypass: false,
    };

    /// `--dangerously-bypass-approvals-and-sandbox` / `--yolo`: danger-full-access, never
    /// ask, bypass.
    pub const BYPASS: Self = Self {
        sandbox: SandboxMode::DangerFullAccess,
        approval: ApprovalMode::Never,
        bypass: true,
    };
}
