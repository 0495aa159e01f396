//! The runtime every front-end runs on (design.md's `app`, L0/L6): from plain overrides and the
//! config layers to a running session — provider, tools, policy, sandbox, hooks and log wired
//! together. This is the only place that knows how a session is assembled; `exec`, the TUI and
//! the servers ask it for a session and speak their own protocol over the agent's channels.
//!
//! ```no_run
//! # fn main() -> codecoder_app::Result<()> {
//! let runtime = codecoder_app::Runtime::load(codecoder_app::Overrides::default())?;
//! let session = runtime.start(&codecoder_app::SessionRequest::new())?;
//! // session.agent.cmd / session.agent.events: submit a prompt, read what happens.
//! # Ok(()) }
//! ```
//!
//! Invariants: the runtime never prints; everything a person should read (config notices,
//! safety warnings, a model missing from the catalog) comes back as `Notice`s for the
//! front-end to show. It spawns processes only through `sandbox`.

mod checkpoint;
mod checks;
mod claude_settings;
pub use claude_settings::persist_allow_rules;
mod confined;
mod error;
mod exec_output;
mod headless;
pub mod history;
mod hook_services;
mod host;
mod image;
mod jsonl;
mod lsp;
mod mcp;
mod mcp_spec;
mod network;
pub use network::{HostEntry, NetworkMode, NetworkSettings};
mod models;
mod plan;
mod plugins;
mod progress;
mod provider;
mod provider_cache;
mod replay;
mod reports;
mod safety;
mod session;
mod sessions;
mod settings;
mod skills;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod transcript;

use std::path::{Path, PathBuf};

use codecoder_config::{LoadOptions, LoadedConfig};

pub use checkpoint::{
    RewindOutcome, RewindPoint, RewindRequest, SessionCheckpoints, UndoOutcome, rewind,
    rewind_points,
};
pub use checks::PermissionCheck;
pub use codecoder_apply_patch::run as run_apply_patch;
pub use codecoder_hooks::{HookEntry, approve_hooks};
/// A running call's cancel token, for a front-end's `FileAccess` that waits on its client.
pub use codecoder_kernel::CancelToken;
pub use codecoder_kernel::{
    AgentHandle, AgentType, BUDGET_REACHED, STEP_LIMIT_REACHED, validate_schema,
};
pub use codecoder_policy::{
    ApprovalMode, ChainPolicy, Modes, PermissionMode, PermissionSwitch, SandboxMode,
};
pub use codecoder_sandbox::{kill_all, protect_process, run_stage_if_requested, spawn_detached};
/// What a rewind restored, inside `RewindOutcome::Done`: a front-end whose session runs elsewhere
/// (`--remote`) builds it from the server's answer.
pub use codecoder_session::checkpoint::RewindReport;
/// The file reads and writes of the built-in tools, for a front-end whose client holds the
/// files (an editor's buffers).
pub use codecoder_tools::FileAccess;
pub use codecoder_tools::{
    EXIT_PLAN_MODE, PLAN_APPROVE, PLAN_EDITED_PREFIX, PLAN_KEEP_PLANNING, plan_steps,
};
/// The interactive command sessions (`exec_command`) running in this process, for `/ps` and
/// `/stop N`.
pub use codecoder_tools::{SessionInfo as ExecSessionInfo, live_sessions, stop_session};
pub use confined::{ConfinedCommand, Stream};
pub use error::{Error, Result};
pub use exec_output::ExecOutput;
pub use headless::{
    HeadlessEnd, Shown, check_final_message, follow_headless_turn, headless_prompt,
    read_output_schema,
};
pub use host::{SessionListing, git_diff, init_agents_md};
pub use image::{image_type, read_image};
pub use jsonl::{ExecEventEncoder, result_text};
pub use mcp::{McpServerEntry, add_mcp_server, mcp_server_config, remove_mcp_server};
pub use mcp_spec::{
    MCP_SECRET_MASK, McpAddFlags, McpListing, McpTransport, describe_mcp_server,
    mcp_server_from_flags, mcp_server_from_json,
};
pub use models::{ModelChoice, ModelChoices};
pub use plugins::{
    Plugin, add_plugin, list_plugins, read_manifest, remove_plugin, set_plugin_enabled,
};
pub use progress::{Progress, ProgressEncoder};
pub use reports::{write_compaction, write_plugins, write_session_list};
pub use safety::{HookReview, Safety, claude_permission_mode, review_hooks};
pub use session::{
    CallbackHook, Catalog, ContextLimits, FrontendHooks, Pricing, RunningSession, SessionControls,
    SessionRequest, Start, context_limits,
};
pub use sessions::{
    Forked, SessionList, SessionLog, SessionSummary, ValidLog, Validation, fork_session,
    is_subagent_log, list_sessions, reindex_sessions, remove_session, sessions_dir,
    validate_session,
};
pub use settings::{Setting, config_schema, store_api_key, trust_project};
pub use transcript::write_transcript;

/// The MCP client's settings of one server, for front-ends that take servers from their own
/// protocol (ACP's `session/new`) into `SessionRequest::mcp_servers`.
pub mod mcp_client {
    pub use codecoder_mcp::{Bridge, McpBridge, ServerConfig, Transport, base_env};
}

/// The system-wide config file.
pub const SYSTEM_CONFIG: &str = "/etc/codecoder/config.toml";

/// What a front-end asks for on top of the config files: command-line flags and their
/// equivalents in other protocols. No clap types: every front-end fills it its own way.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// The working directory (`-C DIR`); the process's own when `None`.
    pub cwd: Option<PathBuf>,
    /// `[profiles.NAME]` to apply (`-p NAME`).
    pub profile: Option<String>,
    /// `-c key=value` overrides, later ones winning.
    pub config: Vec<String>,
    /// The model (`-m`), over `model` in config.toml.
    pub model: Option<String>,
    /// The provider id (`--provider`), over `model_provider` in config.toml.
    pub provider: Option<String>,
    /// The sandbox mode (`-s`), over `sandbox_mode`.
    pub sandbox: Option<SandboxMode>,
    /// The approval mode (`-a`), over `approval_policy`.
    pub approval: Option<ApprovalMode>,
    /// `--full-auto`: workspace-write with the interactive default approval mode.
    pub full_auto: bool,
    /// `--dangerously-bypass-approvals-and-sandbox`: no sandbox, no approvals.
    pub bypass: bool,
    /// `--add-dir`: more writable roots.
    pub add_dirs: Vec<PathBuf>,
    /// `--permission-mode` (`exec --plan`: plan), over Claude Code's `defaultMode`.
    pub permission_mode: Option<PermissionMode>,
    /// `--allowedTools`: permission rules in Claude Code's syntax (`Bash(git log:*)`), allowing,
    /// on top of the user's layer.
    pub allowed_tools: Vec<String>,
    /// `--disallowedTools`: rules in the same syntax, denying.
    pub disallowed_tools: Vec<String>,
    /// Claude Code's settings files read (`--setting-sources user,project,local`); `None`: all.
    pub claude_setting_sources: Option<Vec<String>>,
    /// Claude Code settings given on the command line (`--settings`): their permissions join the
    /// user's rules, their hooks the session's.
    pub claude_settings: Option<serde_json::Value>,
    /// `--trust-project-hooks`: run the project's hooks even where they were not reviewed (new
    /// or changed since `codecoder hooks trust`).
    pub trust_project_hooks: bool,
}

/// Something a person should read, from loading the config or assembling a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Information (`note: …`).
    Note(String),
    /// Something that weakens what the person asked for (`warning: …`).
    Warning(String),
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Note(text) => write!(f, "note: {text}"),
            Self::Warning(text) => write!(f, "warning: {text}"),
        }
    }
}

/// The loaded configuration of one process, from which sessions start.
#[derive(Debug)]
pub struct Runtime {
    overrides: Overrides,
    home: PathBuf,
    cwd: PathBuf,
    loaded: LoadedConfig,
    /// One AGENTS.md cache (by path and mtime) for every session of the process, so a new
    /// session re-reads only the files that changed.
    agents_md: codecoder_context::AgentsMdLoader,
}

impl Runtime {
    /// Finds `$CODECODER_HOME` and the working directory and loads the config layers.
    ///
    /// # Errors
    /// When there is no home, the working directory does not exist, or a config layer is
    /// invalid (`Error::Config`, which names file and line).
    pub fn load(overrides: Overrides) -> Result<Self> {
        let home = home()?;
        let cwd = resolve_cwd(overrides.cwd.as_deref())?;
        let loaded = codecoder_config::load(&LoadOptions {
            system_path: PathBuf::from(SYSTEM_CONFIG),
            home: Some(home.clone()),
            cwd: cwd.clone(),
            profile: overrides.profile.clone(),
            overrides: overrides.config.clone(),
        })?;
        Ok(Self {
            overrides,
            home,
            cwd,
            loaded,
            agents_md: codecoder_context::AgentsMdLoader::new(),
        })
    }

    /// `$CODECODER_HOME`.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The working directory, canonical.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The config layers and their merge.
    pub fn loaded(&self) -> &LoadedConfig {
        &self.loaded
    }

    /// Every MCP server a session here would start (config.toml's, the plugins', the user's
    /// `~/.claude.json` and a trusted project's `.mcp.json`), with where each is configured, and
    /// warnings about the ones left out.
    pub fn mcp_servers(&self) -> (Vec<McpServerEntry>, Vec<Notice>) {
        let lookup = |name: &str| std::env::var_os(name);
        mcp::entries(&self.loaded, self.cwd(), &lookup)
    }

    /// The overrides this runtime was loaded with.
    pub fn overrides(&self) -> &Overrides {
        &self.overrides
    }

    /// What loading the config had to say (a layer skipped, an untrusted project).
    pub fn notices(&self) -> Vec<Notice> {
        self.loaded.notices.iter().map(|notice| Notice::Note(notice.clone())).collect()
    }
}

/// The codecoder home: `$CODECODER_HOME`, else `~/.codecoder`.
///
/// # Errors
/// When neither `CODECODER_HOME` nor `HOME` is set.
pub fn home() -> Result<PathBuf> {
    codecoder_stdx::codecoder_home(|key| std::env::var_os(key)).ok_or_else(|| {
        Error::usage(format!(
            "cannot find the codecoder home: set {} or {}",
            codecoder_protocol::env::CODECODER_HOME,
            codecoder_protocol::env::HOME
        ))
    })
}

/// `dir` (or the current directory), canonical.
///
/// # Errors
/// When it does not exist.
pub fn resolve_cwd(dir: Option<&Path>) -> Result<PathBuf> {
    let cwd = match dir {
        Some(dir) => dir.to_owned(),
        None => std::env::current_dir().map_err(Error::io("reading the current directory"))?,
    };
    fs_err::canonicalize(&cwd).map_err(|err| match dir {
        // A directory the person named that is not there is a usage error (exit 2).
        Some(_) => {
            Error::usage(format!("-C {}: {}", cwd.display(), std::io::Error::from(err.kind())))
        }
        None => Error::Io { context: format!("-C {}", cwd.display()), source: err },
    })
}

#[cfg(test)]
mod tests;
