//! The two policy axes (codex's): `-s/--sandbox read-only | workspace-write |
//! danger-full-access` and `-a/--ask-for-approval untrusted | on-request | never`, and the
//! presets that set both.
//!
//! Claude Code's permission mode (`default | acceptEdits | plan`) sits on top of them, in a
//! `PermissionSwitch` the chain, the `exit_plan_mode` tool and the front-ends share.
//!
//! Invariants: the modes themselves are the shared words of `codecoder_protocol` (one spelling
//! for the CLI, config.toml, the UI and the log); this module only combines them. Leaving plan
//! mode returns to the mode that was on before it (never to plan itself).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

pub use codecoder_protocol::{ApprovalMode, PermissionMode, SandboxMode};

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

/// The session's permission mode, shared and changeable while it runs (Shift+Tab, plan
/// approval). It remembers the mode that was on when plan mode began, so leaving plan mode goes
/// back to it.
#[derive(Debug, Clone)]
pub struct PermissionSwitch(Arc<AtomicU8>);

impl PermissionSwitch {
    /// A switch holding `mode`.
    pub fn new(mode: PermissionMode) -> Self {
        Self(Arc::new(AtomicU8::new(pack(mode, PermissionMode::Default))))
    }

    /// The mode now.
    pub fn get(&self) -> PermissionMode {
        unpack(self.0.load(Ordering::SeqCst)).0
    }

    /// True in plan mode.
    pub fn planning(&self) -> bool {
        self.get() == PermissionMode::Plan
    }

    /// Switches to `mode` for every holder. Entering plan mode remembers the mode it leaves.
    pub fn set(&self, mode: PermissionMode) {
        let _ = self.0.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |bits| {
            let (now, before) = unpack(bits);
            let before = match (mode, now) {
                (PermissionMode::Plan, PermissionMode::Plan) => before,
                (PermissionMode::Plan, now) => now,
                _ => PermissionMode::Default,
            };
            Some(pack(mode, before))
        });
    }

    /// Leaves plan mode for the mode that was on before it; returns that mode. Outside plan
    /// mode nothing changes.
    pub fn leave_plan(&self) -> PermissionMode {
        let mut left = self.get();
        let _ = self.0.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |bits| {
            let (now, before) = unpack(bits);
            left = if now == PermissionMode::Plan { before } else { now };
            Some(pack(left, PermissionMode::Default))
        });
        left
    }

    /// The next mode of the cycle default → acceptEdits → plan → default (Shift+Tab), set and
    /// returned.
    pub fn cycle(&self) -> PermissionMode {
        let next = match self.get() {
            PermissionMode::Default => PermissionMode::AcceptEdits,
            PermissionMode::AcceptEdits => PermissionMode::Plan,
            PermissionMode::Plan => PermissionMode::Default,
        };
        self.set(next);
        next
    }
}

fn code(mode: PermissionMode) -> u8 {
    match mode {
        PermissionMode::Default => 0,
        PermissionMode::AcceptEdits => 1,
        PermissionMode::Plan => 2,
    }
}

fn decode(bits: u8) -> PermissionMode {
    match bits & 0b11 {
        1 => PermissionMode::AcceptEdits,
        2 => PermissionMode::Plan,
        _ => PermissionMode::Default,
    }
}

fn pack(now: PermissionMode, before: PermissionMode) -> u8 {
    code(now) | (code(before) << 2)
}

fn unpack(bits: u8) -> (PermissionMode, PermissionMode) {
    (decode(bits), decode(bits >> 2))
}
