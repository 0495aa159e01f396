//! The network a session's commands get: none, the whole network, or the managed network (a
//! proxy in codecoder's process that lets listed hosts through, refuses denied ones and asks
//! about the rest). Resolved once per session from `[network]`, `[sandbox_workspace_write]
//! network_access` and Claude Code's `sandbox.network.allowedDomains` / `deniedDomains`.
//!
//! Invariants:
//! - `danger-full-access` and `network_access = true` (in workspace-write) mean the whole
//!   network; `[network] enabled = false` means none; anything else confined is managed.
//! - Every listed host keeps the file it came from, so `doctor` and errors can name it.

use std::net::SocketAddr;
use std::path::PathBuf;

use codecoder_config::ConfigToml;
use codecoder_protocol::{SandboxMode, env};

use crate::claude_settings::ClaudePermissions;
use crate::error::{Error, Result};

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

impl NetworkSettings {
    /// The proxy's policy: the allowed and denied hosts, presets expanded. A rule that does not
    /// parse, or an unknown preset, is an error naming the file that listed it.
    pub fn policy(&self) -> Result<codecoder_netproxy::NetworkPolicy> {
        for entry in self.allowed.iter().chain(&self.denied) {
            if let Err(err) = codecoder_netproxy::Rule::parse(&entry.pattern) {
                return Err(Error::Usage {
                    message: format!("{err} (in {})", entry.source.display()),
                });
            }
        }
        let patterns = |entries: &[HostEntry]| {
            entries.iter().map(|entry| entry.pattern.clone()).collect::<Vec<_>>()
        };
        codecoder_netproxy::NetworkPolicy::new(
            &patterns(&self.allowed),
            &patterns(&self.denied),
            &self.presets,
        )
        .map_err(|err| Error::Usage {
            message: format!("{err} (in allow_presets of config.toml [network])"),
        })
    }

    /// The `web_fetch(domain:…)` allow and deny rules that make `web_fetch` meet the managed
    /// network's host lists and presets without asking (the proxy enforces them either way):
    /// only whole-host entries (`host`, `*.host`) become rules; one with a port, a path or a
    /// method stays the proxy's alone. None unless the network is managed.
    pub(crate) fn web_fetch_rules(&self) -> (Vec<String>, Vec<String>) {
        if self.mode != NetworkMode::Managed {
            return (Vec::new(), Vec::new());
        }
        let rule = |pattern: &str| {
            let host = pattern.trim().to_ascii_lowercase();
            let name = host.strip_prefix("*.").unwrap_or(&host);
            let plain = !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
            plain.then(|| format!("web_fetch(domain:{host})"))
        };
        let mut allow: Vec<String> =
            self.allowed.iter().filter_map(|entry| rule(&entry.pattern)).collect();
        for preset in codecoder_netproxy::PRESETS {
            if self.presets.iter().any(|name| name == preset.name) {
                allow.extend(preset.hosts.iter().filter_map(|host| rule(host)));
            }
        }
        let deny = self.denied.iter().filter_map(|entry| rule(&entry.pattern)).collect();
        (allow, deny)
    }

    /// The session proxy's configuration: [`NetworkSettings::policy`], plus the test-only name
    /// overrides of `CODECODER_TEST_NET_RESOLVE` (`name=ADDRESS:PORT,…`) and the extra upstream
    /// roots of `CODECODER_TEST_NET_ROOTS` (a PEM file) when those are set.
    pub(crate) fn proxy_config(&self) -> Result<codecoder_netproxy::ProxyConfig> {
        let mut config = codecoder_netproxy::ProxyConfig::standard(self.policy()?);
        // Under the one directory every bubblewrap sandbox gets empty (but for its own socket).
        config.socket_parent = codecoder_sandbox::ensure_proxy_socket_root().map_err(|err| {
            Error::Usage { message: format!("the network proxy's socket directory: {err}") }
        })?;
        if let Some(roots) = std::env::var_os(env::CODECODER_TEST_NET_ROOTS) {
            let pem = fs_err::read_to_string(&roots).map_err(|err| Error::Usage {
                message: format!("{}: {err}", env::CODECODER_TEST_NET_ROOTS),
            })?;
            config.extra_roots_pem.push(pem);
        }
        let Some(overrides) = std::env::var_os(env::CODECODER_TEST_NET_RESOLVE) else {
            return Ok(config);
        };
        let overrides = overrides.to_string_lossy().into_owned();
        for item in overrides.split(',').map(str::trim).filter(|item| !item.is_empty()) {
            let parsed = item
                .split_once('=')
                .and_then(|(name, address)| Some((name, address.parse::<SocketAddr>().ok()?)));
            let Some((name, address)) = parsed else {
                return Err(Error::Usage {
                    message: format!(
                        "{}: {item:?} is not NAME=ADDRESS:PORT",
                        env::CODECODER_TEST_NET_RESOLVE
                    ),
                });
            };
            config.name_overrides.insert(name.to_ascii_lowercase(), address);
        }
        Ok(config)
    }
}
