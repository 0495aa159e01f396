//! The network a session's commands get: none, the whole network, or the managed network (a
//! proxy in codecoder's process that lets listed hosts through, refuses denied ones and asks
//! about the rest). Resolved once per session from `[network]`, `[sandbox_workspace_write]
//! network_access` and Claude Code's `sandbox.network.allowedDomains` / `deniedDomains`.
//!
//! Invariants:
//! - `danger-full-access` and `network_access = true` (in workspace-write) mean the whole
//!   network; `[network] enabled = false` means none; anything else confined is managed.
//! - Every listed host keeps the file it came from, so `doctor` and errors can name it.

use std::path::PathBuf;

use codecoder_config::ConfigToml;
use codecoder_protocol::SandboxMode;

use crate::claude_settings::ClaudePermissions;

/// How sandboxed commands reach the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkMode {
    /// No network at all (`[network] enabled = false`, or read-only without a proxy).
    Off,
    /// Through codecoder's proxy, host by host.
    Managed,
    /// The whole network, unfiltered (`network_access = true`, or no sandbox).
    Full,
}

impl NetworkMode {
    /// The mode's name as `doctor` prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Managed => "managed",
            Self::Full => "full",
        }
    }
}

/// A host pattern and where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostEntry {
    /// `example.com`, `*.example.com`, `example.com:443`, an IP address, or a rule with a path.
    pub pattern: String,
    /// The file (or `config.toml`) that listed it.
    pub source: PathBuf,
}

/// The managed network's settings for a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkSettings {
    /// How commands reach the network.
    pub mode: NetworkMode,
    /// Hosts reached without asking.
    pub allowed: Vec<HostEntry>,
    /// Hosts never reached.
    pub denied: Vec<HostEntry>,
    /// Named presets allowed (`rust`, `python`, `node`, `go`, `github`).
    pub presets: Vec<String>,
}

impl NetworkSettings {
    /// Resolves the settings from the merged config and Claude Code's settings files.
    pub(crate) fn resolve(
        config: &ConfigToml,
        claude: &ClaudePermissions,
        sandbox: SandboxMode,
    ) -> Self {
        let network = config.network.clone().unwrap_or_default();
        let network_access =
            config.sandbox_workspace_write.as_ref().and_then(|w| w.network_access).unwrap_or(false);
        let mode = match sandbox {
            SandboxMode::DangerFullAccess => NetworkMode::Full,
            SandboxMode::WorkspaceWrite if network_access => NetworkMode::Full,
            _ if network.enabled == Some(false) => NetworkMode::Off,
            SandboxMode::WorkspaceWrite | SandboxMode::ReadOnly => NetworkMode::Managed,
        };
        let from_config = |patterns: &[String]| {
            patterns
                .iter()
                .map(|pattern| HostEntry {
                    pattern: pattern.clone(),
                    source: PathBuf::from("config.toml [network]"),
                })
                .collect::<Vec<_>>()
        };
        let from_claude = |patterns: &[(String, PathBuf)]| {
            patterns
                .iter()
                .map(|(pattern, source)| HostEntry {
                    pattern: pattern.clone(),
                    source: source.clone(),
                })
                .collect::<Vec<_>>()
        };
        let mut allowed = from_config(&network.allowed_domains);
        allowed.extend(from_claude(&claude.allowed_domains));
        let mut denied = from_config(&network.denied_domains);
        denied.extend(from_claude(&claude.denied_domains));
        Self { mode, allowed, denied, presets: network.allow_presets }
    }
}
