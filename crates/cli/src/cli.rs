//! The command line, as clap types. `--help` text lives here.

use std::path::PathBuf;
use std::str::FromStr;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use codecoder_app::{ApprovalMode, McpTransport, PermissionMode, SandboxMode};
use codecoder_protocol::UnknownValue;

/// codecoder: a terminal coding agent. An LLM decides; tools read, search, edit and run code;
/// a sandbox and an approval chain bound what they may do; an append-only session log is its
/// memory.
///
/// With no subcommand, `codecoder` opens the interactive terminal UI (`codecoder "PROMPT"` opens
/// it and sends PROMPT at once); `codecoder resume [ID | --last]` opens it on an earlier
/// session. In the UI: Enter sends, Ctrl+J or Shift+Enter starts a new line, Esc or Ctrl+C
/// cancels the running turn, Ctrl+C twice on empty input quits; approvals are answered with
/// y (allow once), a (allow for the session), n (deny) or f (deny with feedback); Shift+Tab
/// cycles the permission mode (default, accept edits, plan: the model only reads, then presents
/// a plan you approve with 1, send back with feedback, or edit with Ctrl+G); /help lists the
/// slash commands. The UI needs a terminal: for pipes and scripts use `codecoder exec`.
#[derive(Debug, Parser)]
#[command(
    name = "codecoder",
    version,
    about,
    propagate_version = true,
    after_help = codecoder_claude::args::HELP
)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: GlobalArgs,
    /// Options of the interactive UI (no subcommand).
    #[command(flatten)]
    pub(crate) tui: TuiArgs,
    /// Driving a session of a running `codecoder serve` (`--remote`).
    #[command(flatten)]
    pub(crate) remote: RemoteArgs,
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
}

/// The interactive UI's options.
#[derive(Debug, Clone, Args)]
pub(crate) struct TuiArgs {
    /// A first prompt to send as soon as the UI opens.
    #[arg(value_name = "PROMPT")]
    pub(crate) prompt: Option<String>,
    #[command(flatten)]
    pub(crate) options: TuiOptions,
}

/// Options the UI shares with `codecoder resume`.
#[derive(Debug, Clone, Args)]
pub(crate) struct TuiOptions {
    /// The model (overrides `model` in config.toml).
    #[arg(short = 'm', long, value_name = "MODEL")]
    pub(crate) model: Option<String>,
    /// The provider id (a preset or a `[model_providers.ID]` of config.toml).
    #[arg(long, value_name = "ID")]
    pub(crate) provider: Option<String>,
    /// Write frame statistics (frames, frame times, event batches) as JSON to FILE at exit.
    #[arg(long, value_name = "FILE", hide = true)]
    pub(crate) stats_file: Option<PathBuf>,
}

/// `--remote URL`: the interactive UI (no subcommand, or `resume`) on a session that a running
/// `codecoder serve` hosts.
#[derive(Debug, Clone, Args)]
pub(crate) struct RemoteArgs {
    /// Drive a session of the `codecoder serve` at URL (http://HOST:PORT) in the interactive UI,
    /// with no subcommand or with `resume`: new, resumed and forked sessions run in the server
    /// under its sandbox and approval policy, and stay there when the UI leaves. The token comes
    /// from $CODECODER_HOME/serve.json when it is that server's, else from the variable
    /// --remote-token-env names; never from the command line.
    // Its own id: a global argument's id is shared with every subcommand's, and `mcp add`
    // has a `url` of its own.
    #[arg(id = "remote", long = "remote", value_name = "URL", global = true)]
    pub(crate) url: Option<String>,
    /// The environment variable holding the server's token, for a server whose serve.json is
    /// not in this CODECODER_HOME.
    #[arg(
        id = "remote_token_env",
        long = "remote-token-env",
        value_name = "VAR",
        global = true,
        default_value = codecoder_protocol::env::CODECODER_SERVE_TOKEN
    )]
    pub(crate) token_env: String,
}

/// `codecoder resume`.
#[derive(Debug, Args)]
pub(crate) struct TuiResumeArgs {
    /// The session id (or a unique prefix, or a path to its log).
    #[arg(value_name = "ID", conflicts_with = "last")]
    pub(crate) session: Option<String>,
    /// Resume the newest session of this directory.
    #[arg(long)]
    pub(crate) last: bool,
    #[command(flatten)]
    pub(crate) options: TuiOptions,
}

/// Options every command understands.
#[derive(Debug, Clone, Args)]
pub(crate) struct GlobalArgs {
    /// Override a config value: a dotted TOML path and a TOML value (`-c model="gpt-5"`,
    /// `-c agent.max_steps_per_turn=50`, `-c model_reasoning_effort="high"`, or
    /// `-c model_providers.local.stream=false` for a server that cannot stream tool calls);
    /// repeatable, later ones win.
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE", global = true)]
    pub(crate) overrides: Vec<String>,
    /// Use the settings of `[profiles.NAME]` from config.toml.
    #[arg(short = 'p', long = "profile", value_name = "NAME", global = true)]
    pub(crate) profile: Option<String>,
    /// Work in DIR instead of the current directory.
    #[arg(short = 'C', long = "cd", value_name = "DIR", global = true)]
    pub(crate) cd: Option<PathBuf>,
    /// Run the project's hooks even where they were not reviewed (new, or changed since
    /// `codecoder hooks trust`); without it such hooks are skipped with a warning.
    #[arg(long, global = true)]
    pub(crate) trust_project_hooks: bool,
    #[command(flatten)]
    pub(crate) safety: SafetyArgs,
}

impl GlobalArgs {
    /// The runtime's overrides these flags ask for (no model or provider: commands add theirs).
    pub(crate) fn overrides(&self) -> codecoder_app::Overrides {
        let safety = &self.safety;
        codecoder_app::Overrides {
            cwd: self.cd.clone(),
            profile: self.profile.clone(),
            config: self.overrides.clone(),
            model: None,
            provider: None,
            sandbox: safety.sandbox,
            approval: safety.approval,
            full_auto: safety.full_auto,
            bypass: safety.yolo,
            add_dirs: safety.add_dirs.clone(),
            permission_mode: safety.permission_mode,
            trust_project_hooks: self.trust_project_hooks,
            ..codecoder_app::Overrides::default()
        }
    }
}

/// The two safety axes, with codex's flag names.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct SafetyArgs {
    /// What commands may touch: `read-only`, `workspace-write` (the workspace, /tmp, $TMPDIR and
    /// --add-dir directories; .git and .codecoder stay read-only; no network) or
    /// `danger-full-access` (no sandbox). Default: `sandbox_mode` in config.toml, else
    /// workspace-write where a sandbox backend works (`codecoder doctor` says which).
    #[arg(
        short = 's',
        long = "sandbox",
        value_name = "MODE",
        global = true,
        value_parser = sandbox_mode_parser()
    )]
    pub(crate) sandbox: Option<SandboxMode>,
    /// When to ask before acting: `untrusted` (only known-safe read-only commands run without
    /// asking), `on-request` (ask for what is destructive, leaves the workspace or reaches the
    /// network) or `never` (never ask: commands run in the sandbox and failures go back to the
    /// model; what needs a person, a destructive command, a write outside the workspace or an
    /// MCP tool marked destructive, is refused).
    /// Default: `approval_policy` in config.toml, else on-request interactively and never in exec.
    #[arg(
        short = 'a',
        long = "ask-for-approval",
        value_name = "POLICY",
        global = true,
        value_parser = approval_mode_parser()
    )]
    pub(crate) approval: Option<ApprovalMode>,
    /// Low-friction sandboxed work: workspace-write and on-request (never in exec).
    #[arg(long, global = true, conflicts_with_all = ["sandbox", "approval"])]
    pub(crate) full_auto: bool,
    /// No sandbox and no approvals (deny rules and hooks still apply). Only for environments
    /// that are themselves sandboxed.
    #[arg(
        long = "dangerously-bypass-approvals-and-sandbox",
        visible_alias = "yolo",
        global = true,
        conflicts_with_all = ["sandbox", "approval", "full_auto"]
    )]
    pub(crate) yolo: bool,
    /// Another directory commands and edits may write (repeatable).
    #[arg(long = "add-dir", value_name = "DIR", global = true)]
    pub(crate) add_dirs: Vec<PathBuf>,
    /// Claude Code's permission mode, on top of the approval mode: `default`, `acceptEdits`
    /// (edits inside the writable roots run without asking) or `plan` (only read-only tools
    /// run; the model presents a plan for you to approve before it changes anything). Default:
    /// `permissions.defaultMode` in Claude Code's settings, else default. The TUI cycles them
    /// with Shift+Tab.
    #[arg(
        long = "permission-mode",
        value_name = "MODE",
        global = true,
        value_parser = permission_mode_parser()
    )]
    pub(crate) permission_mode: Option<PermissionMode>,
}

/// `--permission-mode`: the shared `PermissionMode`, each value with its `--help` line.
fn permission_mode_parser() -> impl TypedValueParser<Value = PermissionMode> {
    mode_parser([
        (PermissionMode::Default.as_str(), "The approval mode decides"),
        (PermissionMode::AcceptEdits.as_str(), "Edits inside the writable roots are not asked"),
        (PermissionMode::Plan.as_str(), "Only read-only tools run; the model presents a plan"),
    ])
}

/// `-s/--sandbox`: the shared `SandboxMode`, each value with its `--help` line.
fn sandbox_mode_parser() -> impl TypedValueParser<Value = SandboxMode> {
    mode_parser([
        (
            SandboxMode::ReadOnly.as_str(),
            "Read anywhere (but hidden credential stores), write nowhere",
        ),
        (
            SandboxMode::WorkspaceWrite.as_str(),
            "Write in the workspace, /tmp, $TMPDIR and --add-dir directories",
        ),
        (SandboxMode::DangerFullAccess.as_str(), "No sandbox"),
    ])
}

/// `-a/--ask-for-approval`: the shared `ApprovalMode`, each value with its `--help` line.
fn approval_mode_parser() -> impl TypedValueParser<Value = ApprovalMode> {
    mode_parser([
        (ApprovalMode::Untrusted.as_str(), "Only known-safe read-only commands run without asking"),
        (
            ApprovalMode::OnRequest.as_str(),
            "Ask for what is destructive, leaves the workspace or reaches the network",
        ),
        (ApprovalMode::Never.as_str(), "Never ask"),
    ])
}

/// `mcp add --transport`: the runtime's `McpTransport`, each value with its `--help` line.
fn transport_parser() -> impl TypedValueParser<Value = McpTransport> {
    mode_parser([
        (
            McpTransport::Stdio.label(),
            "A command codecoder starts, speaking on its stdin and stdout",
        ),
        (McpTransport::Http.label(), "Streamable HTTP at a URL"),
        (McpTransport::Sse.label(), "The older HTTP+SSE transport (2024-11-05) at a URL"),
    ])
}

/// A parser of one of the shared words (protocol's modes, the runtime's MCP transports) from its
/// spellings (`(value, help)`), through its `FromStr`, so a flag accepts exactly what the
/// configuration accepts.
fn mode_parser<T, const N: usize>(
    values: [(&'static str, &'static str); N],
) -> impl TypedValueParser<Value = T>
where
    T: FromStr<Err = UnknownValue> + Clone + Send + Sync + 'static,
{
    PossibleValuesParser::new(values.map(|(value, help)| PossibleValue::new(value).help(help)))
        .try_map(|value| value.parse::<T>())
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Open the interactive UI on an earlier session, its transcript re-rendered from the log.
    ///
    /// Give a session id (a unique prefix, or a path to its log), or --last for the newest
    /// session of this directory; with neither, a picker lists the sessions to choose from.
    Resume(TuiResumeArgs),
    /// List, inspect, validate, fork and remove session logs.
    ///
    /// Logs live under $CODECODER_HOME/sessions (default ~/.codecoder/sessions), one JSONL file
    /// per session. A session is named by its id, a unique prefix of it, or a path to its file.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Apply a patch in codex's apply_patch format to the current directory.
    ///
    /// The patch is the one argument, or read from stdin when there is none. Prints
    /// `Success. Updated the following files:` with A/M/D lines and exits 0; exits 1 when the
    /// patch does not parse or apply (files changed before the failure stay changed, and are
    /// listed), 2 on usage errors.
    #[command(name = "apply-patch", visible_alias = "apply_patch")]
    ApplyPatch(ApplyPatchArgs),
    /// Run a task to completion without the interactive UI.
    ///
    /// The prompt is the argument, or stdin when absent or `-` (with both, stdin is appended as
    /// a <stdin> block). Progress goes to stderr, the final message to stdout. Exit codes: 0 done,
    /// 1 the turn failed, 2 usage or configuration error, 130 interrupted (the first Ctrl-C
    /// cancels the turn cleanly; a second exits at once).
    #[command(visible_alias = "e")]
    Exec(ExecArgs),
    /// Show the effective configuration, or its JSON Schema.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Trust a project, so its .codecoder/config.toml is read (default: the current project).
    Trust(TrustArgs),
    /// List the hooks a session here runs, and approve a project's new or changed hooks.
    ///
    /// A project's hooks (its .claude/settings*.json and .codecoder/hooks.json) run only once
    /// approved: each is known by a digest of its event, matcher and handler, so a hook that is
    /// added or edited waits for review again. User-level hooks (config.toml,
    /// ~/.claude/settings.json, plugins) always run. Approvals are kept in
    /// $CODECODER_HOME/trusted-hooks.json.
    #[command(subcommand)]
    Hooks(HooksCommand),
    /// Store an API key for a provider (read from stdin) in $CODECODER_HOME/credentials.toml.
    Login(LoginArgs),
    /// Run a command exactly as the agent would: in the OS sandbox of the chosen mode.
    ///
    /// `codecoder sandbox -- CMD ARGS…` (default mode workspace-write; `-s read-only`, `-s
    /// danger-full-access`, `--add-dir DIR` as for the agent). Credential stores (~/.ssh, ~/.aws,
    /// …) are hidden, `.git` and `.codecoder` stay read-only, and the network is off unless
    /// `--network`. Exits with the command's exit code (126 when it could not be confined).
    Sandbox(SandboxArgs),
    /// Report how codecoder is set up here: which sandbox backend is active and why, the modes a
    /// session would run under, writable roots, hidden paths, hooks and permission rules.
    Doctor(DoctorArgs),
    /// List the models a provider serves, with their context windows where known.
    ///
    /// A local or self-hosted provider (Ollama, LM Studio, llama.cpp's server, vLLM, any
    /// `[model_providers.ID]`) is asked: `GET {base_url}/models` (Ollama: `/api/tags`; LM
    /// Studio: `/api/v0/models`), with the provider's headers and key, within 2 s; the window
    /// comes from what the server says (llama.cpp's `/props` n_ctx, vLLM's max_model_len, LM
    /// Studio's loaded context, Ollama's num_ctx). Cloud presets (openai, openai-chat,
    /// anthropic, deepseek, openrouter) are listed from the built-in catalog without a request.
    /// The output says where the list came from; `*` marks the configured model. A session
    /// takes its window from `[models."M"] context_window` first, then the server's report, then
    /// the catalog. Exits 1 when the server does not answer, 2 for an unknown provider.
    Models(ModelsArgs),
    /// Inspect the permission rules.
    #[command(subcommand)]
    Permissions(PermissionsCommand),
    /// Manage the MCP servers in $CODECODER_HOME/config.toml (`[mcp_servers.NAME]`).
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Manage Claude Code plugins (directories with `.claude-plugin/plugin.json`), recorded in
    /// $CODECODER_HOME/plugins.json. An enabled plugin adds its commands, agents and hooks.
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// Serve codecoder as an MCP server on stdin/stdout, for Claude Code, codex or an editor.
    ///
    /// Two tools: `codecoder {prompt, cwd?, model?, profile?, sandbox?, approval-policy?,
    /// config?}` runs a new session until the agent is done and returns its final message, with
    /// the session id in structuredContent.threadId (and sessionId); `codecoder-reply {threadId,
    /// prompt}` continues that session. Approvals are asked through the client's elicitation
    /// (accept runs the call once, or for the session when "remember" is ticked; decline denies;
    /// cancel denies and stops the turn); a client without elicitation gets the approval policy's
    /// answer, by default `never`: what would ask is refused and the model is told why. A call's
    /// progressToken gets a notification per command, edit and message; cancelling a call
    /// cancels its turn and kills its commands. The global flags (-C, -p, -c, -s, -a, --add-dir)
    /// are the defaults every session starts from; a call's arguments go over them.
    ///
    /// Register it:
    ///   Claude Code:  claude mcp add codecoder -- codecoder mcp-server
    ///   codex:        [mcp_servers.codecoder] in ~/.codex/config.toml with
    ///                 command = "codecoder" and args = ["mcp-server"]
    ///   an editor:    an MCP stdio server with command `codecoder` and arguments `mcp-server`
    ///                 (for example in .vscode/mcp.json or .cursor/mcp.json)
    #[command(name = "mcp-server", verbatim_doc_comment)]
    McpServer(McpServerArgs),
    /// Serve codex's app-server protocol (JSON-RPC 2.0, one message per line) on stdin/stdout,
    /// for editors and other programs that drive the agent.
    ///
    /// Methods: initialize (first), thread/start, thread/resume, thread/fork, thread/list
    /// (cursor paging), thread/read, thread/turns/list, thread/loaded/list, thread/unsubscribe,
    /// thread/compact/start, turn/start, turn/steer, turn/interrupt, and what codex's TUI reads
    /// as it starts (account/read: an API key's account, no login; model/list: the catalog's
    /// models of the provider; config/read and empty hook, skill and plugin lists). The server
    /// sends item, delta, token-usage, compaction and error notifications, and asks the client
    /// to approve commands (item/commandExecution/requestApproval) and file changes
    /// (item/fileChange/requestApproval) with accept, acceptForSession, decline or cancel. The
    /// `-c`, `-p`, `-C`, `-s`, `-a` flags are the defaults of every thread; a thread's or a
    /// turn's own params win, except that no thread's sandbox is looser than the server's `-s`
    /// (workspace-write by default). The JSON Schema is
    /// crates/app-server/schema/app-server.schema.json. Ends when stdin closes, after every
    /// thread's agent has stopped. With --listen ws://IP:PORT or unix://, codex app-server
    /// clients (such as codex's own TUI: `codex --remote ws://IP:PORT`) connect over WebSocket,
    /// each one a client of its own; SIGTERM or Ctrl-C then cancels every running turn, stops
    /// the agents, removes the socket file and exits 0.
    #[command(name = "app-server")]
    AppServer(AppServerArgs),
    /// Serve the Agent Client Protocol (ACP v1) on stdin/stdout, for editors such as Zed.
    ///
    /// The editor starts this command and speaks newline-delimited JSON-RPC with it: sessions
    /// (new and loaded from the log, with their history replayed), prompts with streamed text,
    /// reasoning, tool calls, diffs, command output and plans, permission requests (allow or
    /// reject, once or for the session), cancel, and the approval mode as the session mode.
    /// When the editor offers fs/read_text_file and fs/write_text_file, the file tools read and
    /// write through it, so its unsaved buffers are what the model sees. Notices go to stderr.
    ///
    /// In Zed, add to settings.json:
    /// `"agent_servers": { "codecoder": { "command": "codecoder", "args": ["acp"] } }`
    /// (global flags such as `-s workspace-write` or `-c key=value` go before `acp`).
    Acp(AcpArgs),
    /// Serve sessions over HTTP on this machine, for a browser and for programs.
    ///
    /// Prints one line, the URL with a fresh token (`http://127.0.0.1:PORT/?token=…`), and
    /// writes {url, token, pid, listen} to $CODECODER_HOME/serve.json (mode 0600) until it
    /// exits (unless another live server owns that file: it is left alone, and this server's
    /// URL is only the printed line). Keep the URL private; it is valid until the server
    /// stops. Every request needs the token: a browser opening the URL trades it for an
    /// HttpOnly, SameSite=Strict cookie; programs send `Authorization: Bearer TOKEN`. Requests
    /// whose Host is not this server's (127.0.0.1:PORT, localhost:PORT, [::1]:PORT, or an
    /// --allow-host name) are refused, as are state-changing requests from another Origin or
    /// without a JSON body. Each request is logged to $CODECODER_HOME/logs/serve-access.log.
    /// Sessions start in the project a request names (default -C or the current directory),
    /// with the sandbox and approval policy of the flags and config, as in the TUI; a request
    /// may choose a session's model, reasoning effort and permission mode (default,
    /// acceptEdits, plan), never a weaker sandbox or approval policy. The API (sessions,
    /// prompts and slash commands, steer, cancel, undo, rewind, plan mode, approvals,
    /// questions, the event stream) is described by its JSON Schema at GET /api/schema. Each
    /// session keeps its newest 20,000 events in memory for readers that reconnect; one
    /// further behind is told of the gap and reloads the history.
    ///
    /// With --listen unix:PATH, a missing directory of the socket is created with mode 0700,
    /// and an existing one that other users may write to is refused. --open opens the URL in
    /// the browser ($BROWSER, else xdg-open or open) through a redirect page only you can
    /// read ($CODECODER_HOME/serve-open-PID.html, removed at exit), so the token is never in
    /// the browser's command line; it only warns when no browser can be started.
    /// Ctrl-C or SIGTERM cancels every hosted session's turn, kills its commands, closes its
    /// log, removes serve.json and exits 0; a second signal kills them at once (exit 128 +
    /// the signal).
    Serve(ServeArgs),
}

/// `codecoder serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Where to listen: IP:PORT or localhost:PORT (port 0 picks a free one) or unix:PATH. An
    /// address that is not loopback needs `--auth token`, and is plain HTTP.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub(crate) listen: String,
    /// Confirm the authentication: `token` (the only kind; required for a non-loopback
    /// --listen, on loopback the token is required anyway).
    #[arg(long, value_name = "KIND", value_enum)]
    pub(crate) auth: Option<ServeAuth>,
    /// Another name the server answers to in the Host header (NAME or NAME:PORT; repeatable),
    /// such as the host name a tunnel or proxy uses.
    #[arg(long, value_name = "NAME")]
    pub(crate) allow_host: Vec<String>,
    /// The model of new sessions (overrides `model` in config.toml).
    #[arg(short = 'm', long, value_name = "MODEL")]
    pub(crate) model: Option<String>,
    /// The provider id of new sessions (a preset or a `[model_providers.ID]` of config.toml).
    #[arg(long, value_name = "ID")]
    pub(crate) provider: Option<String>,
    /// Open the URL in the browser once the server listens ($BROWSER, else xdg-open, or open
    /// on macOS), through a private redirect file so the token is not in the browser's
    /// command line; a browser that cannot be started is a warning, never an error.
    #[arg(long)]
    pub(crate) open: bool,
    /// Events kept in memory per hosted session (tests use a small number to see the gap).
    #[arg(long, value_name = "N", hide = true)]
    pub(crate) max_events: Option<usize>,
}

/// `codecoder serve --auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ServeAuth {
    /// The per-run token printed in the URL.
    Token,
}

/// `codecoder app-server`.
#[derive(Debug, Args)]
pub(crate) struct AppServerArgs {
    /// The transport: `stdio://` (JSON lines on stdin and stdout), `ws://IP:PORT` (WebSocket,
    /// one message per text frame; port 0 picks a free port, printed on stderr) or
    /// `unix://[PATH]` (WebSocket over a unix socket, mode 0600; by default
    /// $CODECODER_HOME/app-server-control/app-server.sock). A WebSocket listener answers GET
    /// /readyz and /healthz, refuses any request with an Origin header (browsers) or, on TCP, a
    /// Host other than its address or localhost, and logs every connection to
    /// $CODECODER_HOME/logs/app-server-access.log. An address that is not loopback needs
    /// --ws-auth.
    #[arg(long, value_name = "URL", default_value = "stdio://")]
    pub(crate) listen: String,
    /// How WebSocket clients authenticate: `Authorization: Bearer …` in the handshake.
    #[arg(long, value_name = "MODE", value_enum)]
    pub(crate) ws_auth: Option<WsAuthMode>,
    /// capability-token: the file holding the token (at least 32 bytes).
    #[arg(long, value_name = "PATH", conflicts_with = "ws_token_sha256")]
    pub(crate) ws_token_file: Option<PathBuf>,
    /// capability-token: the token's SHA-256, in hex (the token itself is not kept).
    #[arg(long, value_name = "HEX")]
    pub(crate) ws_token_sha256: Option<String>,
    /// signed-bearer-token: the file holding the HMAC-SHA256 secret (at least 32 bytes) the
    /// clients' JWTs (HS256, with `exp`) are signed with.
    #[arg(long, value_name = "PATH")]
    pub(crate) ws_shared_secret_file: Option<PathBuf>,
    /// signed-bearer-token: the `iss` the JWTs must carry.
    #[arg(long, value_name = "ISSUER")]
    pub(crate) ws_issuer: Option<String>,
    /// signed-bearer-token: an `aud` the JWTs must carry.
    #[arg(long, value_name = "AUDIENCE")]
    pub(crate) ws_audience: Option<String>,
    /// signed-bearer-token: the clock skew allowed on `exp` and `nbf`.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub(crate) ws_max_clock_skew_seconds: u64,
}

/// `codecoder app-server --ws-auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum WsAuthMode {
    /// A fixed token (--ws-token-file or --ws-token-sha256).
    CapabilityToken,
    /// A JWT signed with a shared secret (--ws-shared-secret-file).
    SignedBearerToken,
}

/// `codecoder acp`.
#[derive(Debug, Args)]
pub(crate) struct AcpArgs {
    /// The model (overrides `model` in config.toml).
    #[arg(short, long)]
    pub(crate) model: Option<String>,
    /// The provider id: a preset or a `[model_providers.ID]` of config.toml.
    #[arg(long, value_name = "ID")]
    pub(crate) provider: Option<String>,
}

/// `codecoder doctor`.
#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// Report for this model (overrides `model` in config.toml).
    #[arg(short = 'm', long, value_name = "MODEL")]
    pub(crate) model: Option<String>,
    /// Report for this provider (a preset or a `[model_providers.ID]` of config.toml).
    #[arg(long, value_name = "ID")]
    pub(crate) provider: Option<String>,
}

/// `codecoder models`.
#[derive(Debug, Args)]
pub(crate) struct ModelsArgs {
    /// The provider to list (a preset or a `[model_providers.ID]` of config.toml; default: the
    /// configured one).
    #[arg(long, value_name = "ID")]
    pub(crate) provider: Option<String>,
    /// One JSON object: {provider, source ("catalog" or the URL asked), model, models: [{id,
    /// context_window, default}]}.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `codecoder mcp-server`.
#[derive(Debug, Args)]
pub(crate) struct McpServerArgs {
    /// The model of sessions whose call names none (overrides `model` in config.toml).
    #[arg(short = 'm', long, value_name = "MODEL")]
    pub(crate) model: Option<String>,
    /// The provider id (a preset or a `[model_providers.ID]` of config.toml).
    #[arg(long, value_name = "ID")]
    pub(crate) provider: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum PluginCommand {
    /// Record (and enable) the plugin in DIR; its hooks will run, so add only plugins you trust.
    Add {
        /// The plugin's directory.
        dir: std::path::PathBuf,
    },
    /// List the recorded plugins.
    List,
    /// Forget a plugin (its directory is left alone).
    Remove {
        /// The plugin's name.
        name: String,
    },
    /// Enable a recorded plugin.
    Enable {
        /// The plugin's name.
        name: String,
    },
    /// Disable a recorded plugin.
    Disable {
        /// The plugin's name.
        name: String,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// Add (or replace) a server: stdio (`add NAME -- CMD ARGS…`) or HTTP (`add NAME URL`).
    Add(McpAddArgs),
    /// Add (or replace) a server from Claude Code's JSON form of it.
    #[command(name = "add-json", after_help = MCP_ADD_JSON_EXAMPLES)]
    AddJson(McpAddJsonArgs),
    /// List the configured servers.
    List(McpListArgs),
    /// Show one server's settings.
    Get(McpGetArgs),
    /// Remove a server.
    Remove(McpRemoveArgs),
}

const MCP_ADD_EXAMPLES: &str = "\
Both Claude Code's and codex's forms work; either way the server is written to
[mcp_servers.NAME] in $CODECODER_HOME/config.toml (the rest of the file is kept).

Stdio (codecoder starts the command, outside the command sandbox):
  codecoder mcp add fs -- npx -y @modelcontextprotocol/server-filesystem ~/notes
  codecoder mcp add github -e GITHUB_TOKEN=ghp_… -- github-mcp-server stdio

Streamable HTTP (Claude Code's form, then codex's):
  codecoder mcp add --transport http api https://example.com/mcp -H \"X-Api-Key: …\"
  codecoder mcp add api --url https://example.com/mcp --bearer-token-env-var API_TOKEN

The older HTTP+SSE transport (written as transport = \"sse\"):
  codecoder mcp add --transport sse old https://example.com/sse \\
      --header \"Authorization: Bearer …\"

A header value `Bearer ${VAR}` of Authorization (single-quoted, so that the shell leaves it)
is written as bearer_token_env_var = \"VAR\": the token is read from $VAR when a session starts.
`codecoder mcp list` and `codecoder mcp get NAME` show env and header names, never their values.";

const MCP_ADD_JSON_EXAMPLES: &str = r#"Examples:
  codecoder mcp add-json fs '{"type":"stdio","command":"npx","args":["-y","mcp-fs","/tmp"]}'
  codecoder mcp add-json db '{"command":"db-mcp","env":{"DB_URL":"postgres://…"}}'
  codecoder mcp add-json api '{"type":"http","url":"https://example.com/mcp"}'
  codecoder mcp add-json old '{"type":"sse","url":"https://example.com/sse",
                               "headers":{"X-Api-Key":"…"}}'

config.toml does not expand ${VAR}: a header "Authorization": "Bearer ${VAR}" becomes
bearer_token_env_var = "VAR" (the token is read from $VAR when a session starts), and any
other ${VAR} is refused."#;

#[derive(Debug, Args)]
#[command(after_help = MCP_ADD_EXAMPLES)]
pub(crate) struct McpAddArgs {
    /// The server's name (letters, digits, `_`, `-`); its tools are `mcp__NAME__<tool>`.
    pub(crate) name: String,
    /// The URL of an HTTP server (Claude Code's form; same as --url).
    #[arg(value_name = "URL")]
    pub(crate) positional_url: Option<String>,
    /// How the server is reached [default: stdio with a command, http with a URL].
    #[arg(short = 't', long, value_name = "TRANSPORT", value_parser = transport_parser())]
    pub(crate) transport: Option<McpTransport>,
    /// A variable for a stdio server, `KEY=VALUE` (repeatable).
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    pub(crate) env: Vec<String>,
    /// The URL of an HTTP server (codex's form; instead of a command).
    #[arg(long)]
    pub(crate) url: Option<String>,
    /// A header sent on every request to an HTTP server, `"Name: value"` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub(crate) headers: Vec<String>,
    /// The variable holding a bearer token for the HTTP server.
    #[arg(long, value_name = "VAR")]
    pub(crate) bearer_token_env_var: Option<String>,
    /// Let the server ask the session's model while its tools run (MCP sampling, billed like
    /// the session's own requests); without it such requests are declined.
    #[arg(long)]
    pub(crate) sampling: bool,
    /// The command and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD ARGS")]
    pub(crate) command: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct McpAddJsonArgs {
    /// The server's name (letters, digits, `_`, `-`); its tools are `mcp__NAME__<tool>`.
    pub(crate) name: String,
    /// The server as Claude Code writes it in `.mcp.json`: `{"type":"stdio","command":…,
    /// "args":[…],"env":{…}}` or `{"type":"http"|"sse","url":…,"headers":{…}}`.
    #[arg(value_name = "JSON")]
    pub(crate) json: String,
    /// Let the server ask the session's model while its tools run (MCP sampling).
    #[arg(long)]
    pub(crate) sampling: bool,
}

#[derive(Debug, Args)]
pub(crate) struct McpListArgs {
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct McpGetArgs {
    /// The server's name.
    pub(crate) name: String,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct McpRemoveArgs {
    /// The server's name.
    pub(crate) name: String,
}

#[derive(Debug, Args)]
pub(crate) struct SandboxArgs {
    /// Let the command reach the network.
    #[arg(long)]
    pub(crate) network: bool,
    /// Let the command reach the network only through the proxy listening on this unix socket
    /// (HTTP CONNECT, plain HTTP and SOCKS5): it gets `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`
    /// and `NO_PROXY`, and no other way out.
    #[arg(long, value_name = "SOCKET", conflicts_with = "network")]
    pub(crate) network_proxy: Option<std::path::PathBuf>,
    /// With `--network-proxy`: the same proxy's loopback TCP address, which the Landlock backend
    /// (no network namespace of its own) sends the command to.
    #[arg(long, value_name = "ADDRESS", requires = "network_proxy")]
    pub(crate) network_proxy_tcp: Option<std::net::SocketAddr>,
    /// The command and its arguments.
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true, value_name = "CMD")]
    pub(crate) command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum HooksCommand {
    /// Every hook with its state (`user`, `approved`, `pending`), digest, event, matcher,
    /// command and the file it comes from.
    List,
    /// Approve the project's pending hooks (all, or those whose digest starts with one of
    /// DIGEST), printing each one approved.
    Trust(HooksTrustArgs),
}

#[derive(Debug, Args)]
pub(crate) struct HooksTrustArgs {
    /// Digests (or their first characters, as `hooks list` prints them) to approve; none: every
    /// pending hook.
    #[arg(value_name = "DIGEST")]
    pub(crate) digests: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum PermissionsCommand {
    /// Print the approval chain's decision for a call, and the rule or default that made it.
    ///
    /// `codecoder permissions check run_command '{"command":"git push --force"}'` prints
    /// e.g. `ask — default: ... (on-request)`. Hooks are not run. Exit code 0 for allow, 1 for
    /// deny, 3 for ask.
    Check(PermissionsCheckArgs),
}

#[derive(Debug, Args)]
pub(crate) struct PermissionsCheckArgs {
    /// The tool (`run_command`, `edit`, `write_file`, `read_file`, `web_fetch`, …; Claude's
    /// names `Bash`, `Edit`, `Write`, `Read`, `WebFetch` work too).
    pub(crate) tool: String,
    /// The call's arguments as JSON (`'{"command":"git status"}'`).
    #[arg(value_name = "ARGS-JSON")]
    pub(crate) args: String,
    /// Decide as in `exec` (approval default never) instead of as in the interactive UI.
    #[arg(long)]
    pub(crate) exec: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Print the effective configuration (every layer merged).
    Show(ConfigShowArgs),
    /// Print the JSON Schema of config.toml.
    Schema,
}

#[derive(Debug, Args)]
pub(crate) struct ConfigShowArgs {
    /// Say which layer (file, profile or -c) each value came from.
    #[arg(long)]
    pub(crate) origin: bool,
}

#[derive(Debug, Args)]
pub(crate) struct TrustArgs {
    /// A directory inside the project (default: the current directory).
    pub(crate) dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct LoginArgs {
    /// The provider the key is for (`openai`, `anthropic`, or a `model_providers` id).
    #[arg(long, value_name = "ID")]
    pub(crate) provider: String,
}

#[derive(Debug, Args)]
pub(crate) struct ApplyPatchArgs {
    /// The patch (`*** Begin Patch` … `*** End Patch`); omit to read it from stdin.
    #[arg(allow_hyphen_values = true, num_args = 0.., value_name = "PATCH")]
    pub(crate) patch: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SessionsCommand {
    /// List sessions, newest first: the newest 50 unless `-n N` or `--all` says otherwise.
    List(ListArgs),
    /// Print a session as a readable transcript.
    Show(ShowArgs),
    /// Check a session log against the log grammar.
    ///
    /// Exits 1 at the first violation, naming its line; exits 0 with a summary when valid. A log
    /// cut short by a crash (torn last line, open turn, pending tool calls) is valid: validate
    /// says what repair will close.
    Validate(ValidateArgs),
    /// Branch a session into a new one; the original is not modified.
    Fork(ForkArgs),
    /// Compact a session now: the model summarizes the conversation, and the summary (with the
    /// recent user messages, the plan and the files touched) replaces it in what the model sees
    /// next. The log keeps everything before it.
    Compact(CompactArgs),
    /// Undo a session's file changes: restore every file its last turn changed (or, with
    /// `--turn N`, turn N and every later one, newest first) to what it held before.
    ///
    /// Codecoder keeps a file's prior content before a turn first writes it with its file tools;
    /// in a git repository it also snapshots the work tree before a turn's first command and
    /// when the turn ends, so a file a command changed is restored too (best effort: ignored files, files outside the
    /// repository and submodules are not seen). A file changed since outside codecoder is left
    /// alone and named (exit 1) unless `--force`. The conversation is not changed (use `/rewind`
    /// in the TUI). The session must not be in use.
    Undo(UndoArgs),
    /// Delete a session's log.
    #[command(visible_alias = "remove")]
    Rm(RmArgs),
    /// Rebuild the session index from the log files.
    Reindex,
}

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Only sessions that ran in this directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) cwd: Option<PathBuf>,
    /// Print JSON instead of a table (the same sessions: `-n` and `--all` apply).
    #[arg(long)]
    pub(crate) json: bool,
    /// Show the newest N sessions. When more exist, a note on stderr says how many.
    #[arg(
        short = 'n',
        long = "limit",
        value_name = "N",
        default_value_t = LIST_LIMIT,
        value_parser = clap::value_parser!(u32).range(1..).map(|n| n as usize)
    )]
    pub(crate) limit: usize,
    /// Show every session, however many.
    #[arg(long, conflicts_with = "limit")]
    pub(crate) all: bool,
}

/// How many sessions `sessions list` shows unless told otherwise: a screenful or two, the
/// newest being the ones people resume.
pub(crate) const LIST_LIMIT: usize = 50;

#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// A session id, a unique prefix of one, or a path to a log file.
    pub(crate) session: String,
    /// Print the records as JSON instead of a transcript.
    #[arg(long, conflicts_with = "request")]
    pub(crate) json: bool,
    /// Print the exact body of model request N, rebuilt from the log and encoded for the
    /// session's provider. Requests are numbered from 1 over the whole session (one per step,
    /// across turns); a number past the last request is an error (exit 2).
    #[arg(long, value_name = "N")]
    pub(crate) request: Option<usize>,
}

#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    /// A path to a log file, a session id, or a unique prefix of one.
    pub(crate) session: String,
}

#[derive(Debug, Args)]
pub(crate) struct ForkArgs {
    /// The session to branch from (id, unique prefix, or path).
    pub(crate) session: String,
    /// Keep the parent's records up to and including this seq (default: all of them).
    #[arg(long, value_name = "SEQ")]
    pub(crate) at: Option<u64>,
}

#[derive(Debug, Args)]
pub(crate) struct CompactArgs {
    /// The session to compact (id, unique prefix, or path).
    pub(crate) session: String,
    /// What the summary should focus on.
    #[arg(long, value_name = "TEXT")]
    pub(crate) focus: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct UndoArgs {
    /// The session (id, unique prefix, or path).
    pub(crate) session: String,
    /// Restore the files as they were before this turn (default: the newest turn with file
    /// changes not undone yet).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) turn: Option<u32>,
    /// Also restore files changed outside codecoder since the turn (their changes are lost).
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Debug, Args)]
pub(crate) struct RmArgs {
    /// The session to delete (id, unique prefix, or path).
    pub(crate) session: String,
}

#[derive(Debug, Args)]
pub(crate) struct ExecArgs {
    /// The task; `-` or absent reads it from stdin.
    #[arg(value_name = "PROMPT")]
    pub(crate) prompt: Option<String>,
    #[command(flatten)]
    pub(crate) options: ExecOptions,
    #[command(subcommand)]
    pub(crate) command: Option<ExecCommand>,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct ExecOptions {
    /// Print events as JSON lines on stdout (the event names of `codex exec --json`;
    /// `--experimental-json`, the spelling codex's SDK uses, is the same flag).
    #[arg(long, global = true, alias = "experimental-json")]
    pub(crate) json: bool,
    /// Accepted for codex compatibility, and changes nothing: codex refuses to run outside a
    /// git repository without it; codecoder runs anywhere (its checkpoints do not need git).
    #[arg(long, global = true)]
    pub(crate) skip_git_repo_check: bool,
    /// Accepted for codex compatibility (its SDK's thread source label); not recorded.
    #[arg(long, global = true, value_name = "SOURCE", hide = true)]
    pub(crate) thread_source: Option<String>,
    /// The model (overrides `model` in config.toml).
    #[arg(short = 'm', long, value_name = "MODEL", global = true)]
    pub(crate) model: Option<String>,
    /// The provider id: a preset (openai, openai-chat, anthropic, deepseek, openrouter, ollama,
    /// lmstudio) or a `[model_providers.ID]` of config.toml.
    #[arg(long, value_name = "ID", global = true)]
    pub(crate) provider: Option<String>,
    /// Also write the final message to FILE.
    #[arg(short = 'o', long = "output-last-message", value_name = "FILE", global = true)]
    pub(crate) output_last_message: Option<PathBuf>,
    /// Keep no session log.
    #[arg(long, global = true)]
    pub(crate) ephemeral: bool,
    /// Attach an image to the prompt (repeatable).
    #[arg(short = 'i', long = "image", value_name = "FILE", global = true)]
    pub(crate) images: Vec<PathBuf>,
    /// A JSON Schema the final message must follow.
    #[arg(long, value_name = "FILE", global = true)]
    pub(crate) output_schema: Option<PathBuf>,
    /// Answer with the model responses recorded in a session log instead of calling a provider
    /// (tools still run for real).
    #[arg(long, value_name = "FILE", global = true)]
    pub(crate) replay: Option<PathBuf>,
    /// Plan only (`--permission-mode plan`): only read-only tools run, and the plan the model
    /// presents (`exit_plan_mode`) is printed on stdout instead of a final message; nothing is
    /// changed. The turn ends, and codecoder exits 0, once the model has presented it.
    #[arg(long, global = true, conflicts_with = "permission_mode")]
    pub(crate) plan: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ExecCommand {
    /// Continue a session with its whole history.
    Resume(ResumeArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ResumeArgs {
    /// The session id (or a unique prefix); with --last, this is the prompt.
    #[arg(value_name = "ID")]
    pub(crate) session: Option<String>,
    /// The follow-up prompt; `-` or absent reads stdin.
    #[arg(value_name = "PROMPT")]
    pub(crate) prompt: Option<String>,
    /// Resume the newest session of this directory.
    #[arg(long)]
    pub(crate) last: bool,
}
