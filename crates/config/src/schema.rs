//! The shape of `config.toml`: every key optional, unknown keys refused.
//!
//! The same types describe every layer (a file, a profile, a `-c` override). Defaults are not
//! here but in the code that reads the merged result, so `config show` prints only what some
//! layer set. `json_schema()` is what `codecoder config schema` prints; the checked-in copy
//! (`schema/config.schema.json`) is kept in step by a test.

use std::collections::BTreeMap;

use codecoder_protocol::{
    ApprovalMode, BackendPreference, FsyncPolicy, Inherit, ReasoningEffort, ReasoningSummary,
    SandboxMode, ToolCallFormat, WireApi,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `config.toml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigToml {
    /// The model id sent to the provider (default `gpt-5`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider id: a preset (`openai`, `openai-chat`, `anthropic`, `deepseek`, `openrouter`,
    /// `ollama`, `lmstudio`) or a key of `model_providers` (default `openai`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_provider: Option<String>,
    /// Reasoning effort for models that reason (`none`, `minimal`, `low`, `medium`, `high`,
    /// `xhigh`): Responses `reasoning.effort`, Chat `reasoning_effort`, Anthropic thinking.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_reasoning_effort: Option<ReasoningEffort>,
    /// The API root of the built-in `openai` and `openai-chat` providers (as codex spells it;
    /// over `OPENAI_BASE_URL`, under `[model_providers.openai] base_url`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub openai_base_url: Option<String>,
    /// The reasoning summary the Responses API returns (`auto` by default, `concise`,
    /// `detailed`, `none`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_reasoning_summary: Option<ReasoningSummary>,
    /// Anthropic: the thinking budget in tokens (at least 1024); without it the effort picks
    /// one (models with adaptive thinking get the effort instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_reasoning_budget_tokens: Option<u32>,
    /// A cap on generated tokens per request (default: the model's limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_max_output_tokens: Option<u32>,
    /// The model's context window in tokens, as codex spells it (default: what the provider's
    /// server reports, else the catalog's; `[models.X] context_window` overrides it per
    /// model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_context_window: Option<u64>,
    /// Compact the conversation automatically when the next request would pass this many
    /// tokens (default: 90 % of the model's window less its output reserve; `[models.X]
    /// auto_compact_token_limit` overrides it per model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_auto_compact_token_limit: Option<u64>,
    /// The profile used when `-p` is not given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Model providers, by id; an entry with a preset's id overrides the preset's fields.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub model_providers: BTreeMap<String, ProviderToml>,
    /// Catalog overrides, by model id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<String, ModelToml>,
    /// Named sets of settings selected with `-p NAME`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub profiles: BTreeMap<String, ProfileToml>,
    /// The session log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionToml>,
    /// The agent loop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentToml>,
    /// How commands' shells start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shell: Option<ShellToml>,
    /// The budget for AGENTS.md files in the prompt, in bytes (default 32768).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_doc_max_bytes: Option<usize>,
    /// File names read where a directory has no AGENTS.md (e.g. `["CLAUDE.md"]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_doc_fallback_filenames: Option<Vec<String>>,
    /// What commands may touch: `read-only`, `workspace-write` (the default where a sandbox
    /// backend works) or `danger-full-access`. `-s/--sandbox` overrides it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox_mode: Option<SandboxMode>,
    /// When to ask: `untrusted`, `on-request` (the default interactively) or `never` (the
    /// default in `exec`). `-a/--ask-for-approval` overrides it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<ApprovalMode>,
    /// The workspace-write sandbox, as codex spells it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox_workspace_write: Option<SandboxWorkspaceWriteToml>,
    /// The OS sandbox.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxToml>,
    /// Permission rules: `allow`, `ask` and `deny` lists of `Tool(pattern)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permissions: Option<PermissionsToml>,
    /// Which environment variables the commands the model runs get (codex's name and keys).
    /// Default: all but names matching `*KEY*`, `*SECRET*`, `*TOKEN*`, `*PASSWORD*`,
    /// `*CREDENTIAL*` or `*_PAT`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shell_environment_policy: Option<ShellEnvironmentPolicyToml>,
    /// Hooks, as in Claude Code's settings: event name → list of `{ matcher, hooks = [{ type =
    /// "command", command, timeout }] }`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hooks: BTreeMap<String, Vec<HookGroupToml>>,
    /// codex's web search tool: `disabled`, `cached` or `live`. codecoder has no web search
    /// tool (it has `web_fetch`); `cached` and `live` are accepted with a warning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web_search: Option<WebSearchToml>,
    /// MCP servers whose tools the agent may call (`mcp__<server>__<tool>`), by name, as in
    /// codex: a `command` (stdio) or a `url` (streamable HTTP).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp_servers: BTreeMap<String, McpServerToml>,
    /// Language servers (`[lsp.NAME]`, over the presets `rust-analyzer`, `pyright`,
    /// `basedpyright`, `pylsp`, `typescript-language-server`, `gopls`, `clangd`) and their
    /// settings (`[lsp] enabled = false` turns them all off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lsp: Option<LspToml>,
    /// Formatters run on a file after each edit (`[formatters.NAME] command = ["ruff",
    /// "format", "$FILE"], extensions = ["py"]`); none by default.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub formatters: BTreeMap<String, FormatterToml>,
    /// The managed network of sandboxed commands: which hosts they reach through codecoder's
    /// proxy without asking, which never, and the named presets of package registries and
    /// forges. `[sandbox_workspace_write] network_access = true` gives commands the whole
    /// network instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkToml>,
}

/// `[network]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetworkToml {
    /// Route sandboxed commands' network through codecoder's proxy (default true). `false`
    /// leaves them without a network, as codex's sandbox does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Hosts reached without asking: `example.com`, `*.example.com` (its subdomains only),
    /// `example.com:8443` (that port only), or an IP address (bare addresses are reached only
    /// when listed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_domains: Vec<String>,
    /// Hosts never reached, in the same forms; a deny wins over every allow.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub denied_domains: Vec<String>,
    /// Named sets of hosts to allow: `rust`, `python`, `node`, `go`, `github`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_presets: Vec<String>,
}

/// `[lsp]`: settings, and the servers by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LspToml {
    /// False: no language server is started and the `lsp` tool is not offered (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// The most an edit waits for the servers' diagnostics, in milliseconds (default 1000),
    /// start-up included: a server still starting then is noted and goes on starting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics_wait_ms: Option<u64>,
    /// How long a server may take to answer `initialize`, in milliseconds (default 10000):
    /// past it, it is taken for hung, killed and noted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup_timeout_ms: Option<u64>,
    /// How long the `lsp` tool waits for an answer, in milliseconds (default 10000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_timeout_ms: Option<u64>,
    /// The servers (`[lsp.NAME]`); a preset's name changes that preset's fields.
    #[serde(flatten)]
    pub servers: BTreeMap<String, LspServerToml>,
}

/// One language server (`[lsp.NAME]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LspServerToml {
    /// The program, looked up in `PATH` (never downloaded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// File extensions it serves, without the dot (`["py"]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<String>>,
    /// Files whose nearest directory is the server's root (`["pyproject.toml", ".git"]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_markers: Option<Vec<String>>,
    /// Variables set for it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Sent as the `initialize` request's `initializationOptions`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initialization_options: Option<serde_json::Value>,
    /// False: not started (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// One formatter (`[formatters.NAME]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FormatterToml {
    /// The program and its arguments; `$FILE` is replaced by the edited file's path.
    pub command: Vec<String>,
    /// File extensions it formats, without the dot.
    pub extensions: Vec<String>,
    /// False: not run (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// One MCP server (`[mcp_servers.NAME]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerToml {
    /// The program of a stdio server (it runs outside the command sandbox).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables set for it, over the base set (HOME, PATH, USER, LANG, TMPDIR, …); it does not
    /// get the rest of codecoder's environment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Where it runs (default: the session's working directory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The endpoint of a streamable HTTP server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// How the `url` server is spoken to: `http` (streamable HTTP, the default) or `sse` (the
    /// older HTTP+SSE transport of the 2024-11-05 revision).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<McpTransportToml>,
    /// The variable holding a bearer token for the HTTP server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bearer_token_env_var: Option<String>,
    /// Headers sent on every HTTP request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub http_headers: BTreeMap<String, String>,
    /// Seconds its start may take (default 10); the session goes on without it after that.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup_timeout_sec: Option<f64>,
    /// Seconds a call may take (default 60).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_timeout_sec: Option<f64>,
    /// False: not started (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// When set, only these of its tools are offered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled_tools: Option<Vec<String>>,
    /// These of its tools are never offered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disabled_tools: Vec<String>,
    /// Let the server ask the session's model (MCP sampling, `sampling/createMessage`) while
    /// one of its tools runs; off by default (its requests are declined).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<bool>,
}

/// `mcp_servers.NAME.transport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum McpTransportToml {
    /// Streamable HTTP.
    Http,
    /// The older HTTP+SSE transport: an event stream at `url`, messages POSTed to the endpoint
    /// it names.
    Sse,
}

/// `[sandbox_workspace_write]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxWorkspaceWriteToml {
    /// More directories commands may write (besides the workspace, /tmp and $TMPDIR).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writable_roots: Vec<String>,
    /// Let commands reach the network (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_access: Option<bool>,
    /// Leave $TMPDIR out of the writable roots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exclude_tmpdir_env_var: Option<bool>,
    /// Leave /tmp out of the writable roots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exclude_slash_tmp: Option<bool>,
}

/// `[sandbox]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxToml {
    /// `auto` (default: bubblewrap when it works, else Landlock), `bwrap` or `landlock`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<BackendPreference>,
    /// Paths hidden from every sandboxed command and refused to the read tools (`~/` allowed).
    /// Default: the usual credential stores (~/.ssh, ~/.aws, ~/.gnupg, …) and codecoder's own
    /// credentials file. Listed paths are added to the default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden_paths: Vec<String>,
}

/// `[permissions]`: rules like `run_command(git status*)`, `edit(src/**)`, `read(~/.ssh/**)`,
/// `web_fetch(domain:docs.rs)` (Claude Code's `Bash(…)`, `Edit(…)`, `Read(…)`, `WebFetch(…)`
/// work too). A deny anywhere wins; the project's rules are consulted before the user's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PermissionsToml {
    /// Run without asking.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Always ask.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ask: Vec<String>,
    /// Never run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

/// `[shell_environment_policy]`: the command environment, computed in this order: `inherit`,
/// the default excludes (unless `ignore_default_excludes`), `exclude`, `set`, `include_only`.
/// Patterns are case-insensitive globs on the variable's name (`*` any run, `?` one character).
/// Hooks are not affected: they get the whole environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellEnvironmentPolicyToml {
    /// Where to start: `all` (default), `core` (HOME, LOGNAME, PATH, SHELL, USER, USERNAME,
    /// TMPDIR, TEMP, TMP, LANG, LANGUAGE, LC_*, TERM, TZ) or `none`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inherit: Option<Inherit>,
    /// Keep the names matching `*KEY*`, `*SECRET*`, `*TOKEN*`, `*PASSWORD*`, `*CREDENTIAL*` and
    /// `*_PAT` (default false: they are dropped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignore_default_excludes: Option<bool>,
    /// More name patterns to drop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// Variables to set (after the excludes).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub set: BTreeMap<String, String>,
    /// When not empty, only names matching one of these patterns are kept (the last step).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include_only: Vec<String>,
}

/// One group of hooks for an event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookGroupToml {
    /// Which tool names (or sources, types) the group applies to: `*` or empty for all, a
    /// `|`-list of names, or a regular expression.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// The handlers.
    pub hooks: Vec<HookHandlerToml>,
}

/// One hook handler.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookHandlerToml {
    /// `command` (others are skipped with a warning).
    #[serde(rename = "type")]
    pub kind: String,
    /// The shell command (`sh -c`), given the event's JSON on stdin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Seconds before it is killed (default 60).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
}

/// `web_search`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WebSearchToml {
    /// No web search.
    Disabled,
    /// Search results from a cache (codex).
    Cached,
    /// Live search (codex).
    Live,
}

/// `[model_providers.<id>]`, in the shape codex users know.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderToml {
    /// A display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The API root (`https://api.openai.com/v1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// `responses`, `chat` or `anthropic`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wire_api: Option<WireApi>,
    /// The environment variable holding the API key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env_key: Option<String>,
    /// Extra headers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub http_headers: BTreeMap<String, String>,
    /// Extra headers whose values come from environment variables (header = variable).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env_http_headers: BTreeMap<String, String>,
    /// Extra query parameters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub query_params: BTreeMap<String, String>,
    /// Retries on 408/409/429/5xx/529 and connection failures (default 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_max_retries: Option<u32>,
    /// Milliseconds a stream may stay silent (default 300000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_idle_timeout_ms: Option<u64>,
    /// Chat Completions: send earlier reasoning back as `reasoning_content`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_reasoning_content: Option<bool>,
    /// Stream responses (default true). `false` sends each request with `"stream": false`
    /// and reads one JSON answer, for servers that cannot stream tool calls. Unset, a streamed
    /// request with tools that fails before any answer is sent again unstreamed and, if that
    /// works, the model is remembered in the home's cache/providers.json; `true` tries
    /// streaming first whatever that cache says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Chat Completions: the form in which the model writes tool calls into its text, parsed
    /// into real calls (`hermes`, `qwen`, `llama3`, `mistral`; `auto` takes the model family's
    /// form from the catalog; default `off`). For servers that pass a model's tool calls on as
    /// text. The Responses and Anthropic APIs ignore it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_format: Option<ToolCallFormat>,
}

/// `[models.<id>]`: what the catalog says about a model, overridden.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelToml {
    /// Total tokens the model attends to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Most tokens per response.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// Tokens of a request past which the conversation is compacted automatically.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_compact_token_limit: Option<u64>,
    /// Whether it reasons.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<bool>,
    /// USD per million input tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_price: Option<f64>,
    /// USD per million cached input tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_input_price: Option<f64>,
    /// USD per million output tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_price: Option<f64>,
}

/// `[profiles.<name>]`: the settings a profile may change.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileToml {
    /// The model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_provider: Option<String>,
    /// Reasoning effort.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_reasoning_effort: Option<ReasoningEffort>,
    /// Reasoning summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_reasoning_summary: Option<ReasoningSummary>,
    /// Anthropic thinking budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_reasoning_budget_tokens: Option<u32>,
    /// Output cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_max_output_tokens: Option<u32>,
    /// The model's context window in tokens (a local server's `--n_ctx`, say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_context_window: Option<u64>,
    /// The token count past which the conversation is compacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_auto_compact_token_limit: Option<u64>,
    /// The agent loop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentToml>,
    /// The sandbox mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox_mode: Option<SandboxMode>,
    /// The approval policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<ApprovalMode>,
    /// The command environment policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shell_environment_policy: Option<ShellEnvironmentPolicyToml>,
}

/// `[session]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionToml {
    /// `always`, `turn` (default) or `never`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fsync: Option<FsyncPolicy>,
    /// Tool outputs and attachments larger than this go to the blob store (default 16384).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob_threshold_bytes: Option<usize>,
}

/// `[shell]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellToml {
    /// Capture the login shell's set-up (exports, aliases, functions) once per session and run
    /// commands with a non-login shell that sources it, instead of a login shell per command
    /// (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<bool>,
    /// `exec_command` sessions (interactive commands, on a terminal or not) and background jobs
    /// (`run_command {background: true}`) running at once, both kinds counted together
    /// (default 8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_sessions: Option<usize>,
    /// Seconds an `exec_command` session may go without a call on it before it is ended
    /// (default 1800).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_idle_timeout_secs: Option<u64>,
}

/// `[agent]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentToml {
    /// Steps per turn before the turn fails (default 100).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_steps_per_turn: Option<u32>,
    /// Read-only tool calls run at once (default 8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_parallel_tools: Option<usize>,
    /// How deep subagents may nest (default 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent_max_depth: Option<u32>,
    /// What an agent definition's `model: sonnet|opus|haiku` (or another alias named here)
    /// means: alias → model id of the session's provider, or `inherit` for the session's model.
    /// Anthropic's current models are the defaults on the `anthropic` provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_aliases: Option<BTreeMap<String, String>>,
}

/// The JSON Schema of `config.toml`, pretty-printed.
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(ConfigToml);
    serde_json::to_string_pretty(&codecoder_protocol::sorted_json(schema.to_value()))
        .unwrap_or_default()
        + "\n"
}
