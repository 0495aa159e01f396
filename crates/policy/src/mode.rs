//! The two policy axes (codex's): `-s/--sandbox read-only | workspace-write |
//! danger-full-access` and `-a/--ask-for-approval untrusted | on-request | never`, and the
//! presets that set both.
//!
//! Invariant: the modes themselves are the shared words of `codecoder_protocol` (one spelling
//! for the CLI, config.toml, the UI and the log); this module only combines them.

pub use codecoder_protocol::{ApprovalMode, SandboxMode};

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
