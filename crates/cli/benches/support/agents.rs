//! The peer agents the comparison benches run beside codecoder, and the offline namespace they
//! run in: finding codex's and Claude Code's native binaries, codex's `config.toml` for the
//! fake model server, each agent's way of calling its shell and read tools, and re-running the
//! bench inside `bwrap --unshare-net`.
//!
//! Invariant: a peer agent only ever runs inside that namespace (loopback only), with its
//! telemetry, analytics and update checks off; `rerun_offline` maps the hosts they call at
//! start to 127.0.0.1 so those calls fail at once instead of waiting on DNS.

use std::path::{Path, PathBuf};
use std::process::Command;

use codecoder_protocol::env::{
    ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, CODECODER_BENCH_CLAUDE, CODECODER_BENCH_CODEX,
    CODECODER_BENCH_NETNS, CODECODER_TEST_NPM,
};
use codecoder_test_support::Reply;
use serde_json::json;

/// The agents the benches compare.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Agent {
    Codecoder,
    Codex,
    Claude,
}

impl Agent {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Codecoder => "codecoder",
            Self::Codex => "codex",
            Self::Claude => "claude",
        }
    }

    /// A tool call running `command` in this agent's shell tool.
    pub(crate) fn command(self, id: &str, command: &str) -> Reply {
        match self {
            Self::Codecoder => Reply::tool_call(id, "run_command", json!({ "command": command })),
            Self::Codex => Reply::tool_call(id, "exec_command", json!({ "cmd": command })),
            Self::Claude => Reply::tool_call(
                id,
                "Bash",
                json!({ "command": command, "description": "run a command" }),
            ),
        }
    }

    /// A tool call reading `path` (relative to `cwd`): codecoder's `read_file`, Claude Code's
    /// `Read` (which wants an absolute path); codex has no read tool and cats.
    pub(crate) fn read(self, id: &str, cwd: &Path, path: &str) -> Reply {
        match self {
            Self::Codecoder => Reply::tool_call(id, "read_file", json!({ "path": path })),
            Self::Codex => self.command(id, &format!("cat {path}")),
            Self::Claude => Reply::tool_call(
                id,
                "Read",
                json!({ "file_path": cwd.join(path).to_string_lossy() }),
            ),
        }
    }

    /// Whether a request at the fake server is a model request of this agent's wire API (not a
    /// models list or other side call).
    pub(crate) fn is_model_request(self, path: &str) -> bool {
        match self {
            Self::Codecoder | Self::Codex => path.ends_with("/responses"),
            Self::Claude => path.ends_with("/messages"),
        }
    }
}

/// The peer binaries found on this machine.
pub(crate) struct Peers {
    pub(crate) codex: Option<PathBuf>,
    pub(crate) claude: Option<PathBuf>,
}

impl Peers {
    /// Finds the peers and prints what was found (with their versions).
    /// Outside the bench's network namespace none is looked for: a peer runs offline or not at
    /// all.
    pub(crate) fn find() -> Self {
        if !offline() {
            println!("codex, claude: left out (not in the offline namespace)");
            return Self { codex: None, claude: None };
        }
        let peers = Self { codex: find_codex(), claude: find_claude() };
        for (name, path, variable) in [
            ("codex", &peers.codex, CODECODER_BENCH_CODEX),
            ("claude", &peers.claude, CODECODER_BENCH_CLAUDE),
        ] {
            match path {
                Some(path) => {
                    let version = Command::new(path).arg("--version").output().unwrap();
                    println!(
                        "{name}: {} ({})",
                        path.display(),
                        String::from_utf8_lossy(&version.stdout).trim()
                    );
                }
                None => println!("{name}: not found (set {variable}); left out"),
            }
        }
        peers
    }

    /// The binary of `agent`, `None` for codecoder or a peer not found.
    pub(crate) fn binary(&self, agent: Agent) -> Option<&Path> {
        match agent {
            Agent::Codecoder => None,
            Agent::Codex => self.codex.as_deref(),
            Agent::Claude => self.claude.as_deref(),
        }
    }
}

/// The native codex binary: `CODECODER_BENCH_CODEX`, else under the test npm prefix (the
/// `@openai/codex*` packages' `vendor/<target>/bin/codex`, run directly, not through the Node
/// launcher).
pub(crate) fn find_codex() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(CODECODER_BENCH_CODEX).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let npm = std::env::var_os(CODECODER_TEST_NPM).filter(|p| !p.is_empty())?;
    let scope = Path::new(&npm).join("node_modules/@openai");
    for package in std::fs::read_dir(&scope).ok()?.flatten() {
        if !package.file_name().to_string_lossy().starts_with("codex") {
            continue;
        }
        let Ok(targets) = std::fs::read_dir(package.path().join("vendor")) else { continue };
        for target in targets.flatten() {
            for candidate in ["bin/codex", "codex/codex"] {
                let path = target.path().join(candidate);
                if path.is_file() {
                    return Some(path);
                }
            }
        }
    }
    None
}

/// Claude Code's native binary: `CODECODER_BENCH_CLAUDE`, else
/// `node_modules/@anthropic-ai/claude-code/bin/claude.exe` under the test npm prefix (installed
/// by hand, it is not one of CI's test packages).
pub(crate) fn find_claude() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(CODECODER_BENCH_CLAUDE).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let npm = std::env::var_os(CODECODER_TEST_NPM).filter(|p| !p.is_empty())?;
    let path = Path::new(&npm).join("node_modules/@anthropic-ai/claude-code/bin/claude.exe");
    path.is_file().then_some(path)
}

/// Writes codex's `config.toml` into `codex_home`: the fake server as a Responses provider
/// (`base_url` without `/v1`), no retries, analytics, OpenTelemetry export and update check off.
pub(crate) fn write_codex_config(codex_home: &Path, base_url: &str) {
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model = \"gpt-5\"\nmodel_provider = \"fake\"\ncheck_for_update_on_startup = false\n\
             [model_providers.fake]\nname = \"fake\"\nbase_url = \"{base_url}/v1\"\n\
             wire_api = \"responses\"\nenv_key = \"FAKE_API_KEY\"\n\
             request_max_retries = 0\nstream_max_retries = 0\n\
             [analytics]\nenabled = false\n[otel]\nexporter = \"none\"\n"
        ),
    )
    .unwrap();
}

/// The environment that keeps Claude Code on the fake server and quiet: its base URL, a key,
/// and telemetry, error reporting, the auto-updater and other non-essential traffic off.
pub(crate) fn claude_env(command: &mut Command, base_url: &str, config_dir: &Path) {
    command
        .env(ANTHROPIC_BASE_URL, base_url)
        .env(ANTHROPIC_API_KEY, "sk-ant-bench")
        .env("CLAUDE_CONFIG_DIR", config_dir)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("DISABLE_AUTOUPDATER", "1");
}

/// The load average over the last minute, as `/proc/loadavg` says it.
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split(' ')
        .next()
        .unwrap_or("?")
        .to_owned()
}

/// Whether this process runs in the bench's own network namespace.
pub(crate) fn offline() -> bool {
    std::env::var_os(CODECODER_BENCH_NETNS).is_some()
}

/// Re-runs this bench inside a network namespace of its own (only loopback) unless it already
/// is in one, and exits with its status; without bwrap it prints so and returns, and the
/// caller runs on the host network (and `Peers::find` finds no peer).
pub(crate) fn enter_offline() {
    if offline() {
        return;
    }
    match rerun_offline() {
        Some(status) => std::process::exit(status.code().unwrap_or(1)),
        None => println!("bwrap is not available: running on the host network"),
    }
}

/// Runs this bench again inside a network namespace of its own; `None` when bwrap is missing.
pub(crate) fn rerun_offline() -> Option<std::process::ExitStatus> {
    let bwrap = Command::new("bwrap").arg("--version").output().ok()?;
    if !bwrap.status.success() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    std::fs::write(
        &hosts,
        "127.0.0.1 localhost chatgpt.com ab.chatgpt.com api.openai.com api.github.com github.com \
         api.anthropic.com statsig.anthropic.com console.anthropic.com claude.ai sentry.io\n\
         ::1 localhost\n",
    )
    .unwrap();
    let status = Command::new("bwrap")
        .args(["--unshare-net", "--dev-bind", "/", "/", "--proc", "/proc", "--ro-bind"])
        .arg(&hosts)
        .arg("/etc/hosts")
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .args(std::env::args_os().skip(1))
        .env(CODECODER_BENCH_NETNS, "1")
        .status()
        .unwrap();
    Some(status)
}
