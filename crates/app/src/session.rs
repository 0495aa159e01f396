//! Starting a session: configuration → provider client (or the replay model) → session writer
//! (new, resumed, forked or in memory) → tools, prompt builder and approval policy → a kernel
//! agent on its own threads. Every front-end starts its sessions here.

use std::path::PathBuf;
use std::sync::Arc;

use codecoder_config::{ConfigToml, WebSearchToml};
use codecoder_kernel::{
    AgentConfig, AgentDeps, AgentHandle, ModelClient, ToolRegistry, spawn_agent_on,
};
use codecoder_providers::HttpModelClient;
use codecoder_session::{FsyncPolicy, NewSession, SessionStore, SessionWriter, WriterConfig};

use crate::error::{Error, Result};
use crate::{Modes, Notice, Runtime};
use codecoder_policy::ChainPolicy;

pub(crate) const DEFAULT_MODEL: &str = "gpt-5";
pub(crate) const DEFAULT_PROVIDER: &str = "openai";
/// Bytes per token for sizing tool output caps from the window (the usual estimate for code and
/// English text).
const BYTES_PER_TOKEN: u64 = 4;

/// Which session to run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Start {
    /// A new session.
    #[default]
    New,
    /// An earlier session: its id, a unique prefix or the path of its log; `None` for the
    /// newest of the working directory.
    Resume(Option<String>),
    /// A copy of an earlier session (the original is untouched), continued.
    Fork(String),
}

/// What a front-end asks of a session.
#[derive(Debug, Clone, Default)]
pub struct SessionRequest {
    /// New, resumed or forked.
    pub start: Start,
    /// The model, over the runtime's overrides and config (the TUI's `/model`).
    pub model: Option<String>,
    /// The provider, over the runtime's overrides and config.
    pub provider: Option<String>,
    /// The reasoning effort (`none` … `xhigh`), over config's `model_reasoning_effort` (the
    /// TUI's `/model NAME EFFORT`).
    pub reasoning_effort: Option<String>,
    /// `--replay FILE`: answer with a recorded session's responses.
    pub replay: Option<PathBuf>,
    /// Keep no session log.
    pub ephemeral: bool,
    /// The id of a new session, chosen by the front-end (Claude Code's `--session-id`);
    /// `None`: a fresh one.
    pub session_id: Option<codecoder_protocol::SessionId>,
    /// A JSON Schema the final message must follow.
    pub output_schema: Option<serde_json::Value>,
    /// A person is at hand to answer approvals (the TUI, an editor): the default approval mode
    /// is then on-request instead of never.
    pub interactive: bool,
    /// The first prompt, when known at start (`exec`): the skill catalogue, when it must be
    /// cut, keeps the skills that match it best.
    pub first_prompt: Option<String>,
    /// Where the file tools read and write text instead of the disk (an ACP client's buffers).
    pub file_access: Option<Arc<dyn codecoder_tools::FileAccess>>,
    /// MCP servers the front-end brings (ACP's `session/new`), on top of the configured ones;
    /// one of the same name replaces the configured one.
    pub mcp_servers: Vec<codecoder_mcp::ServerConfig>,
    /// Only the front-end's MCP servers, none of the configured ones (`--strict-mcp-config`).
    pub strict_mcp_servers: bool,
    /// The built-in tools offered, by our name or Claude Code's (`--tools Bash,Read`); `None`:
    /// all of them.
    pub builtin_tools: Option<Vec<String>>,
    /// Built-in tools not offered, by our name or Claude Code's (`--disallowedTools Bash`).
    pub hidden_tools: Vec<String>,
    /// Instructions in place of codecoder's base instructions (Claude Code's `--system-prompt`).
    pub system_prompt: Option<String>,
    /// Instructions added after the rest of the prompt (`--append-system-prompt`).
    pub append_system_prompt: Option<String>,
    /// Model requests a turn may make at most, over `agent.max_steps_per_turn`
    /// (`--max-turns`).
    pub max_steps: Option<u32>,
    /// Dollars the session may spend on the model in this process (`--max-budget-usd`); past
    /// it the turn fails (`codecoder_kernel::BUDGET_REACHED`). Needs the model's prices.
    pub max_budget_usd: Option<f64>,
    /// Subagent types of the front-end (an SDK's `agents`), replacing any of the same name.
    pub agents: Vec<codecoder_kernel::AgentType>,
    /// Hooks of the front-end (an SDK's callbacks), asked after the configured ones.
    pub hooks: FrontendHooks,
}

/// A front-end's own hooks (an Agent SDK's callbacks), asked after the configured ones.
#[derive(Clone, Default)]
pub struct FrontendHooks(pub Vec<CallbackHook>);

/// One callback hook of a front-end.
#[derive(Clone)]
pub struct CallbackHook {
    /// The event it answers.
    pub event: codecoder_hooks::Event,
    /// Its matcher, as in a settings file.
    pub matcher: Option<String>,
    /// How messages name it.
    pub label: String,
    /// How long it may take (default 60 s).
    pub timeout: Option<std::time::Duration>,
    /// The callback.
    pub callback: Arc<dyn codecoder_hooks::HookCallback>,
}

impl std::fmt::Debug for FrontendHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FrontendHooks({} sources)", self.0.len())
    }
}

impl SessionRequest {
    /// A new, headless session with the runtime's model and provider.
    pub fn new() -> Self {
        Self::default()
    }
}

/// Prices per million tokens, for a front-end's cost figure.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Pricing {
    /// Input tokens.
    pub input: Option<f64>,
    /// Cached input tokens.
    pub cached_input: Option<f64>,
    /// Output tokens.
    pub output: Option<f64>,
}

impl Pricing {
    /// The prices, when the input and output prices are known (cached input costs as input
    /// when its own price is not).
    pub fn prices(&self) -> Option<codecoder_kernel::Prices> {
        let (input, output) = (self.input?, self.output?);
        Some(codecoder_kernel::Prices {
            input,
            cached_input: self.cached_input.unwrap_or(input),
            output,
        })
    }

    /// Dollars for `usage`, when the prices are known.
    pub fn cost(&self, usage: &codecoder_protocol::Usage) -> Option<f64> {
        self.prices().map(|prices| prices.cost(usage))
    }
}

/// What can change in a running session from outside the agent: the approval mode and the
/// permission mode.
#[derive(Debug, Clone)]
pub struct SessionControls {
    policy: Arc<ChainPolicy>,
    escalation: codecoder_tools::EscalationSetting,
}

impl SessionControls {
    /// The permission mode now (`default`, `acceptEdits`, `plan`).
    pub fn permission_mode(&self) -> crate::PermissionMode {
        self.policy.permission().get()
    }

    /// Switches the permission mode for the calls decided and the prompts submitted from now
    /// on (plan mode: only read-only tools run, `exit_plan_mode` is offered).
    pub fn set_permission_mode(&self, mode: crate::PermissionMode) {
        self.policy.permission().set(mode);
    }

    /// Shift+Tab: default → acceptEdits → plan → default; returns the new mode.
    pub fn cycle_permission_mode(&self) -> crate::PermissionMode {
        self.policy.permission().cycle()
    }
}

impl SessionControls {
    /// The modes now.
    pub fn modes(&self) -> Modes {
        self.policy.modes()
    }

    /// Allows calls matching `rules` (Claude Code's rule syntax, `Bash(npm test:*)`) for the
    /// rest of the session.
    ///
    /// # Errors
    /// The first rule that does not parse; nothing is added then.
    pub fn allow_rules(&self, rules: &[String]) -> std::result::Result<(), String> {
        self.policy.allow_rules(rules)
    }

    /// Switches the approval mode; the chain and `run_command`'s escalation follow it.
    pub fn set_approval(&self, approval: crate::ApprovalMode) {
        self.policy.set_approval(approval);
        self.escalation.set(crate::safety::escalation_for(self.policy.modes()));
    }
}

/// A running agent and what a front-end shows about it.
pub struct RunningSession {
    /// The agent: commands in, events out.
    pub agent: AgentHandle,
    /// The merged configuration.
    pub config: ConfigToml,
    /// The model id.
    pub model: String,
    /// The provider id.
    pub provider_id: String,
    /// The model's context window, in tokens.
    pub context_window: u64,
    /// Tokens of a request past which the conversation is compacted automatically.
    pub auto_compact_token_limit: u64,
    /// The working directory.
    pub cwd: PathBuf,
    /// The sandbox and approval modes the session started under.
    pub modes: Modes,
    /// Prices of the model (config first, then the catalog).
    pub pricing: Pricing,
    /// The approval mode, changeable while the session runs.
    pub controls: SessionControls,
    /// What assembling the session had to say, for the person.
    pub notices: Vec<Notice>,
    /// The agent's tools (MCP servers' tools join late): front-ends read what a call's tool is
    /// (`Tool::mcp_origin`).
    pub tools: Arc<ToolRegistry>,
    /// The session's MCP servers, if any.
    mcp: Option<Arc<codecoder_mcp::McpManager>>,
    /// The subagent types, commands and skills the session has.
    pub catalog: Catalog,
}

/// What a session offers by name, for front-ends that list it (name, description each).
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Subagent types (the `agent` tool's).
    pub agents: Vec<(String, String)>,
    /// Slash commands (`.claude/commands`).
    pub commands: Vec<(String, String)>,
    /// Skills.
    pub skills: Vec<(String, String)>,
}

impl RunningSession {
    /// Waits until every MCP server of the session is ready, failed or past its startup
    /// timeout (what the first model request waits for anyway).
    pub fn wait_for_mcp(&self) {
        if let Some(manager) = &self.mcp {
            manager.wait_started();
        }
    }

    /// As [`RunningSession::wait_for_mcp`], but gives up as soon as `stop` is ready (a signal):
    /// `Err` with what it gave (`None`: it disconnected).
    ///
    /// # Errors
    /// When `stop` fired before every server was ready, failed or past its startup timeout.
    pub fn wait_for_mcp_or<T>(
        &self,
        stop: &crossbeam_channel::Receiver<T>,
    ) -> std::result::Result<(), Option<T>> {
        match &self.mcp {
            Some(manager) => manager.wait_started_or(stop),
            None => Ok(()),
        }
    }

    /// Each MCP server of the session with its state as Claude Code names it: `connected`,
    /// `failed` (also past its startup timeout) or `pending` (still starting).
    pub fn mcp_statuses(&self) -> Vec<(String, &'static str)> {
        let Some(manager) = &self.mcp else { return Vec::new() };
        manager
            .statuses()
            .into_iter()
            .map(|(name, outcome)| {
                let status = match outcome {
                    Some(codecoder_mcp::ReportOutcome::Ready { .. }) => "connected",
                    Some(_) => "failed",
                    None => "pending",
                };
                (name, status)
            })
            .collect()
    }
}

impl Runtime {
    /// Starts a session and its agent.
    ///
    /// # Errors
    /// When the provider or the session cannot be found, a key is missing, or the agent cannot
    /// start.
    pub fn start(&self, request: &SessionRequest) -> Result<RunningSession> {
        let home = self.home.clone();
        let cwd = self.cwd.clone();
        let loaded = &self.loaded;
        let mut notices = Vec::new();
        let config = &loaded.config;
        let safety =
            crate::safety::build(&self.overrides, loaded, &cwd, &home, request.interactive)?;
        notices.extend(safety.warnings.iter().cloned().map(Notice::Warning));
        let provider_id = request
            .provider
            .clone()
            .or_else(|| self.overrides.provider.clone())
            .or_else(|| config.model_provider.clone())
            .unwrap_or_else(|| DEFAULT_PROVIDER.to_owned());
        let model = request
            .model
            .clone()
            .or_else(|| self.overrides.model.clone())
            .or_else(|| config.model.clone())
            .unwrap_or_else(|| DEFAULT_MODEL.to_owned());
        // What the provider's server says about the model's window, asked on a thread of its
        // own while the session is assembled (`None`: not asked).
        let mut discovery = None;
        // The provider's key, whatever holds it (a variable or the stored login): redacted from
        // tool output like the variables withheld from commands.
        let mut provider_key = None;
        let model_client: Arc<dyn ModelClient> = match &request.replay {
            Some(path) => {
                let replay = crate::replay::ReplayModel::load(
                    path,
                    SessionStore::new(&home).blobs(),
                    cwd.to_string_lossy().into_owned(),
                )?;
                if !replay.compares {
                    notices.push(Notice::Note(format!(
                        "--replay: {} was written before logs recorded the model-visible context; requests are not compared with the recorded ones",
                        path.display()
                    )));
                }
                Arc::new(replay)
            }
            None => {
                let provider = crate::provider::resolve_provider(&provider_id, config)?;
                let lookup =
                    crate::provider::key_lookup(&home, &provider_id, provider.env_key.clone());
                discovery = start_discovery(config, &provider, &model, &lookup);
                provider_key = provider.env_key.as_ref().and_then(|name| {
                    let value = lookup(name)?;
                    Some(codecoder_kernel::Secret { name: name.clone(), value })
                });
                match HttpModelClient::new(provider, &lookup) {
                    Ok(client) => {
                        // `stream = true` set by the person: streaming is tried first whatever
                        // the provider cache remembers.
                        let stream_set =
                            config.model_providers.get(&provider_id).and_then(|t| t.stream);
                        let (cache, warning) = crate::provider_cache::ProviderCache::open(
                            &home,
                            stream_set != Some(true),
                        );
                        notices.extend(warning.map(Notice::Warning));
                        Arc::new(client.with_memory(Arc::new(cache)))
                    }
                    Err(err @ codecoder_providers::Error::MissingApiKey { .. }) => {
                        return Err(Error::usage(format!(
                            "{err} (or run `codecoder login --provider {provider_id}`)"
                        )));
                    }
                    Err(err) => return Err(err.into()),
                }
            }
        };
        let info = codecoder_providers::model_info(&model);
        if let Some(mode @ (WebSearchToml::Cached | WebSearchToml::Live)) = config.web_search {
            notices.push(Notice::Warning(format!(
                "web_search = \"{}\" has no effect: codecoder has no web search tool (the model can fetch pages with web_fetch)",
                if mode == WebSearchToml::Live { "live" } else { "cached" }
            )));
        }

        let store = SessionStore::new(&home);
        let writer_config = WriterConfig {
            fsync: config.session.as_ref().and_then(|s| s.fsync).unwrap_or(FsyncPolicy::Turn),
            blob_threshold: config
                .session
                .as_ref()
                .and_then(|s| s.blob_threshold_bytes)
                .unwrap_or(16 * 1024),
            ..WriterConfig::standard()
        };
        let cwd_text = cwd.to_string_lossy().into_owned();
        let config_hash = config_hash(config)?;
        let new_session = NewSession {
            cwd: cwd_text.clone(),
            model: model.clone(),
            provider: provider_id.clone(),
            config_hash: Some(config_hash.clone()),
            parent: None,
        };
        let writer: SessionWriter = match &request.start {
            Start::Resume(query) => {
                let path = match query {
                    Some(id) => store.find(id)?,
                    None => {
                        let listed =
                            crate::list_sessions(&home, Some(&cwd_text), None, &mut notices)?;
                        let newest = listed.sessions.into_iter().find(|s| s.problem.is_none());
                        newest.map(|s| s.path).ok_or_else(|| {
                            Error::usage(format!("no session to resume in {cwd_text}"))
                        })?
                    }
                };
                store.resume_writer(&path, writer_config)?
            }
            Start::Fork(id) => store.fork(id, None, writer_config)?,
            Start::New if request.ephemeral => {
                SessionWriter::in_memory(new_session, writer_config)?
            }
            Start::New => match request.session_id {
                Some(id) if store.path_of(id).exists() => {
                    return Err(Error::usage(format!(
                        "session id {id} is already in use (resume it with --resume {id})"
                    )));
                }
                Some(id) => store.create_with_id(new_session, id, writer_config)?,
                None => store.create(new_session, writer_config)?,
            },
        };

        let mut agent_config = AgentConfig::standard(&model, &provider_id, &cwd_text);
        agent_config.config_hash = Some(config_hash);
        if let Some(agent) = &config.agent {
            if let Some(max) = agent.max_steps_per_turn {
                agent_config.max_steps = max;
            }
            if let Some(max) = agent.max_parallel_tools {
                agent_config.max_parallel_tools = max;
            }
            if let Some(depth) = agent.subagent_max_depth {
                agent_config.subagents.max_depth = depth;
            }
        }
        if let Some(max) = request.max_steps {
            agent_config.max_steps = max;
        }
        agent_config.redactor = Some(Arc::new(secret_redactor(
            &safety.command_env.withheld,
            config.shell_environment_policy.as_ref(),
            provider_key,
        )?));
        let session_store = store.clone();
        let ephemeral = request.ephemeral;
        // Subagents' logs follow the root's: in memory when it is.
        let sessions = Arc::new(move |new: NewSession| {
            if ephemeral {
                return SessionWriter::in_memory(new, WriterConfig::standard());
            }
            session_store.create(new, WriterConfig::standard())
        });
        // Tools: the built-ins. Where edits may go is the approval chain's call (it asks for an
        // edit outside the writable roots), so the tools themselves may write anywhere.
        let mut tools_config =
            codecoder_tools::ToolsConfig::standard(&cwd, vec![PathBuf::from("/")]);
        tools_config.confinement = safety.confinement.clone();
        tools_config.environment = safety.command_env.environment();
        tools_config.escalation = safety.escalation.clone();
        tools_config.protected_paths = safety.tools_protected_paths.clone();
        // Output over the cap is kept whole, as a blob beside the session logs.
        tools_config.spill_dir = Some(store.blobs().dir().join("spill"));
        tools_config.blobs = Some(store.blobs());
        // `[shell]`'s bounds on exec_command's sessions.
        let shell_toml = config.shell.as_ref();
        if let Some(max) = shell_toml.and_then(|shell| shell.max_sessions) {
            tools_config.max_sessions = max;
        }
        if let Some(secs) = shell_toml.and_then(|shell| shell.session_idle_timeout_secs) {
            tools_config.session_idle_timeout = std::time::Duration::from_secs(secs);
        }
        tools_config.file_access.clone_from(&request.file_access);
        // The managed network: its rules are checked now (a bad rule names its file), its proxy
        // starts with the first sandboxed command and goes with the tools.
        if safety.network.mode == crate::NetworkMode::Managed {
            let proxy_config = safety.network.proxy_config()?;
            if matches!(safety.confinement, codecoder_sandbox::Confinement::Sandboxed(_)) {
                tools_config.network = Some(codecoder_tools::ManagedNetwork::new(proxy_config));
            }
        }
        // Language servers (started on the first file of their language, stopped when the tools
        // holding them go) and formatters, run after each edit.
        let lsp_config = crate::lsp::lsp_config(
            config,
            &cwd,
            safety.confinement.clone(),
            safety.command_env.environment(),
            &mut notices,
        );
        let code_intel = (!lsp_config.servers.is_empty() || !lsp_config.formatters.is_empty())
            .then(|| Arc::new(codecoder_lsp::CodeIntel::new(lsp_config)));
        if let Some(code_intel) = &code_intel {
            tools_config.after_edit = Some(Arc::new(crate::lsp::LspHook(Arc::clone(code_intel))));
        }
        // No single output may take more than a quarter of the window: past that, the model
        // sees a head and a tail (commands) or the first part with how to read on (files), and
        // a command's whole output stays in a blob it can page through with read_file.
        let server_window = discovery.and_then(|thread| thread.join().ok().flatten());
        if !info.known
            && !config.models.contains_key(&model)
            && config.model_context_window.is_none()
            && server_window.is_none()
        {
            notices.push(Notice::Note(format!(
                "model `{model}` is not in the catalog; assuming a {}-token context (set [models.\"{model}\"] in config.toml)",
                info.context_window
            )));
        }
        let server_tokens = server_window.as_ref().map(|window| window.tokens);
        let limits = context_limits_with(config, &model, server_tokens);
        let quarter_window_bytes =
            usize::try_from(limits.window.saturating_mul(BYTES_PER_TOKEN) / 4)
                .unwrap_or(usize::MAX);
        tools_config.output_limit = tools_config.output_limit.min(quarter_window_bytes);
        tools_config.read_byte_limit = tools_config.read_byte_limit.min(quarter_window_bytes);
        // The login shell's set-up: the shared snapshot when one matches, else taken once in
        // the background; commands use `-lc` until it is ready.
        if config.shell.as_ref().and_then(|shell| shell.snapshot) != Some(false) {
            let (keep_name, keep_name_key) =
                crate::safety::snapshot_name_filter(config.shell_environment_policy.as_ref());
            tools_config.snapshot =
                Some(codecoder_tools::ShellSnapshot::start(codecoder_tools::SnapshotConfig {
                    dir: home.join(SNAPSHOT_DIR),
                    shell: tools_config.shell.clone(),
                    cwd: cwd.clone(),
                    environment: tools_config.environment.clone(),
                    confinement: tools_config.confinement.clone(),
                    keep_name,
                    keep_name_key,
                    timeout: codecoder_tools::SNAPSHOT_TIMEOUT,
                }));
        }
        let mut registry = ToolRegistry::new();
        let named = |names: &[String], name: &str| {
            names.iter().any(|n| codecoder_protocol::our_tool_name(n) == name)
        };
        let offered = |name: &str| {
            request.builtin_tools.as_ref().is_none_or(|names| named(names, name))
                && !named(&request.hidden_tools, name)
        };
        for tool in codecoder_tools::builtin_tools(tools_config) {
            if offered(tool.name()) {
                registry.register(tool)?;
            }
        }
        if let Some(code_intel) = code_intel.filter(|intel| intel.any_available())
            && offered("lsp")
        {
            registry.register(Arc::new(codecoder_lsp::LspTool::new(code_intel)))?;
        }
        registry.register(codecoder_tools::exit_plan_mode_tool(safety.permission.clone()))?;
        // Skills (the `skill` tool when any is installed) and subagents (the `agent` tool, its
        // types the built-in one and the agent definitions).
        let extensions = crate::skills::load(&cwd, &home);
        notices.extend(extensions.warnings.iter().map(|w| Notice::Warning(w.to_string())));
        let active_skills = codecoder_skills::ActiveSkills::new(loaded.project_trusted);
        let session_id = writer.session_id().to_string();
        if !extensions.skills.is_empty() {
            registry.register(Arc::new(codecoder_skills::SkillTool::new(
                Arc::clone(&extensions.store),
                session_id.clone(),
                active_skills.clone(),
            )))?;
        }
        let aliases = crate::skills::model_aliases(
            &provider_id,
            config.agent.as_ref().and_then(|agent| agent.model_aliases.as_ref()),
        );
        agent_config.subagents.types = extensions.agent_types(&registry, &aliases, &mut notices);
        let replaced: Vec<String> = request.agents.iter().map(|agent| agent.name.clone()).collect();
        let agent_modes = extensions.agent_modes(&replaced, &mut notices);
        for agent in &request.agents {
            agent_config.subagents.types.retain(|t| t.name != agent.name);
            agent_config.subagents.types.push(agent.clone());
        }
        let catalog = Catalog {
            agents: agent_config
                .subagents
                .types
                .iter()
                .map(|t| (t.name.clone(), t.description.clone()))
                .collect(),
            commands: extensions
                .commands
                .iter()
                .map(|c| (c.name.clone(), c.description.clone()))
                .collect(),
            skills: extensions
                .skills
                .values()
                .map(|s| (s.name.clone(), s.description.clone()))
                .collect(),
        };
        registry
            .register(Arc::new(codecoder_kernel::AgentTool::new(&agent_config.subagents.types)))?;
        // MCP servers' tools join as the servers become ready (the first request does not
        // wait for them); a server that does not start is a warning at the next step.
        let sampler = Arc::new(codecoder_mcp::Sampler {
            client: Arc::clone(&model_client),
            model: model.clone(),
            session_id: writer.session_id(),
        });
        let (late_tools, mcp_notices) = crate::mcp::start(
            loaded,
            &cwd,
            crate::mcp::McpSession {
                interactive: request.interactive,
                sampler: Some(sampler),
                log: writer.path().map(|path| path.with_extension("mcp.log")),
            },
            &request.mcp_servers,
            request.strict_mcp_servers,
        );
        notices.extend(mcp_notices);
        let mcp = late_tools.map(|(late_tools, manager)| {
            registry.attach_late(late_tools);
            manager
        });
        let registry = Arc::new(registry);
        // Undo needs a log to read the checkpoints back from: in-memory sessions keep none.
        let checkpoints: Option<Arc<dyn codecoder_kernel::Checkpoints>> = match writer.path() {
            Some(_) => Some(Arc::new(crate::checkpoint::SessionCheckpoints::new(
                store.blobs(),
                &cwd,
                safety.command_env.environment(),
            ))),
            None => None,
        };

        // The prompt: base instructions, environment, AGENTS.md; the model's window and reserve.
        let window = limits.window;
        let mut context_config = context_config(config, &model, server_tokens, &home);
        context_config.output_schema.clone_from(&request.output_schema);
        if let Some(prompt) = &request.system_prompt {
            context_config.base_instructions.clone_from(prompt);
        }
        let (reasoning, reasoning_warning) = crate::provider::reasoning_settings(
            config,
            &model,
            request.reasoning_effort.as_deref(),
        )?;
        context_config.reasoning = reasoning;
        notices.extend(reasoning_warning.map(Notice::Warning));
        let mut environment = codecoder_context::Environment::new(
            &cwd,
            std::env::var(codecoder_protocol::env::SHELL).ok(),
        );
        environment.git_status = crate::host::git_status(&cwd, safety.command_env.environment());
        let blobs = store.blobs();
        let builder = codecoder_context::ContextBuilder::new(
            &context_config,
            &environment,
            &codecoder_stdx::SystemClock,
            &self.agents_md,
        )?
        .with_blob_resolver(move |blob| blobs.resolve(blob).ok())
        .with_section(
            "skills",
            extensions.catalogue(request.first_prompt.as_deref().unwrap_or_default()),
        )?
        .with_section(
            "appended instructions",
            request.append_system_prompt.clone().unwrap_or_default(),
        )?;
        // Cut or unreadable AGENTS.md files and sections over the warning size: the person
        // should know what every request carries.
        notices.extend(builder.warnings().iter().map(|w| Notice::Warning(w.to_string())));
        let builder = Arc::new(builder);
        let guard = codecoder_context::ContextWindowGuard::new(
            Arc::clone(&builder),
            model.clone(),
            registry.specs(),
        );
        let viewer = Arc::clone(&registry);
        let compactor = codecoder_context::ContextCompactor::new(
            Arc::clone(&builder),
            model.clone(),
            registry.specs(),
            auto_compact_limit(config, &model),
            Arc::new(move |name: &str, args: &serde_json::Value| viewer.view(name, args)),
        );
        let auto_compact_token_limit = compactor.limit();
        let mut hook_set =
            crate::safety::load_hooks(loaded, &self.overrides, &cwd, &home, &mut notices)?;
        for hook in &request.hooks.0 {
            Arc::make_mut(&mut hook_set)
                .add_callback(
                    hook.event,
                    hook.matcher.as_deref(),
                    &hook.label,
                    hook.timeout,
                    Arc::clone(&hook.callback),
                )
                .map_err(Error::usage)?;
        }
        // The person's hook scripts first, then what the session adds (skills, plan mode): a
        // `HookStack` folds their answers into one.
        let mut hooks: Vec<Arc<dyn codecoder_kernel::Hooks>> = Vec::new();
        if let Some(runner) = crate::safety::kernel_hooks(
            &hook_set,
            writer.session_id().to_string(),
            writer.path(),
            &cwd,
            crate::safety::claude_permission_mode(safety.modes),
            safety.permission.clone(),
            store.sessions_dir(),
        ) {
            // Handlers' `if` conditions match a call as the policy does: its view's kind and
            // the permission keys its tool derives.
            let tools = Arc::clone(&registry);
            let subjects = codecoder_hooks::CallSubjects::new(move |name, args| {
                let keys = tools.find(name).map(|tool| tool.permission_keys(args));
                (tools.view(name, args).kind, keys.unwrap_or_default())
            });
            // `prompt` and `mcp_tool` hooks ask the session's model and MCP servers.
            let services = crate::hook_services::SessionHookServices {
                client: Arc::clone(&model_client),
                model: model.clone(),
                session_id: writer.session_id(),
                mcp: mcp.clone(),
                agent: Some(crate::hook_services::AgentHookKit::new(
                    &agent_config,
                    Arc::clone(&builder) as Arc<dyn codecoder_kernel::PromptBuilder>,
                    &registry,
                    safety.policy.clone(),
                )),
            };
            let runner = runner.with_call_subjects(subjects).with_services(Arc::new(services));
            // Hooks see the effort the session's requests carry as `effort: {level}`.
            let effort = context_config.reasoning.effort.map(|effort| effort.as_str().to_owned());
            let runner = runner.with_effort(effort);
            // The instruction files the prompt carries were loaded for this session: its
            // InstructionsLoaded hooks run now, before the first turn.
            for file in builder.agents_md_files() {
                let home = context_config.agents_md.home.as_deref();
                let memory_type = if home.is_some_and(|home| file.starts_with(home)) {
                    "User"
                } else {
                    "Project"
                };
                let report = runner.instructions_loaded(file, memory_type, "session_start");
                let said = report.messages.into_iter().map(Notice::Note);
                notices.extend(said.chain(report.errors.into_iter().map(Notice::Warning)));
            }
            hooks.push(Arc::new(runner));
        }
        if !extensions.skills.is_empty() || !extensions.commands.is_empty() {
            hooks.push(Arc::new(crate::skills::SkillLayer {
                store: Arc::clone(&extensions.store),
                commands: extensions.commands.clone(),
                active: active_skills,
                session_id,
            }));
        }
        hooks.push(Arc::new(crate::plan::PlanLayer { permission: safety.permission.clone() }));
        let hooks: Arc<dyn codecoder_kernel::Hooks> = Arc::new(codecoder_kernel::HookStack(hooks));
        let deps = AgentDeps {
            model: model_client,
            prompt: builder,
            tools: Arc::clone(&registry),
            approval: if agent_modes.is_empty() {
                safety.policy.clone()
            } else {
                Arc::new(crate::skills::AgentModePolicy {
                    chain: safety.policy.clone(),
                    modes: agent_modes,
                })
            },
            hooks,
            sessions,
            interceptors: vec![Arc::new(guard)],
            compactor: Some(Arc::new(compactor)),
            checkpoints,
        };
        let configured = config.models.get(&model);
        let pricing = Pricing {
            input: configured.and_then(|m| m.input_price).or(info.input_price),
            cached_input: configured.and_then(|m| m.cached_input_price).or(info.cached_input_price),
            output: configured.and_then(|m| m.output_price).or(info.output_price),
        };
        if let (Some(limit_usd), Some(prices)) = (request.max_budget_usd, pricing.prices()) {
            agent_config.budget = Some(codecoder_kernel::Budget { limit_usd, prices });
        }
        let agent = spawn_agent_on(agent_config, deps, writer)?;
        Ok(RunningSession {
            agent,
            config: loaded.config.clone(),
            model,
            provider_id,
            context_window: window,
            auto_compact_token_limit,
            cwd,
            modes: safety.modes,
            pricing,
            controls: SessionControls { policy: safety.policy, escalation: safety.escalation },
            notices,
            tools: registry,
            mcp,
            catalog,
        })
    }
}

/// A model's context window, output reserve and auto-compaction limit, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextLimits {
    /// The window (`[models.X] context_window`, `model_context_window`, else what the
    /// provider's server reports, else the catalog's, else `UNKNOWN_MODEL`'s).
    pub window: u64,
    /// The output reserve (`model_max_output_tokens`, `[models.X] max_output_tokens`, the
    /// catalog's; at most half the window).
    pub max_output: u64,
    /// Past this many tokens a request is compacted first (`[models.X]
    /// auto_compact_token_limit`, `model_auto_compact_token_limit`, else 90 % of the window less
    /// the reserve; never more than that).
    pub auto_compact: u64,
}

/// The context limits of `model` under `config`, without asking its server.
pub fn context_limits(config: &ConfigToml, model: &str) -> ContextLimits {
    context_limits_with(config, model, None)
}

/// The context limits of `model` under `config` when its server reports a window of
/// `server_window` tokens: the configured window (`[models.X] context_window`, then
/// `model_context_window`) wins over the server's, which wins over the catalog's.
pub(crate) fn context_limits_with(
    config: &ConfigToml,
    model: &str,
    server_window: Option<u64>,
) -> ContextLimits {
    let info = codecoder_providers::model_info(model);
    let window = config
        .models
        .get(model)
        .and_then(|m| m.context_window)
        .or(config.model_context_window)
        .or(server_window)
        .unwrap_or(info.context_window);
    let max_output = config
        .model_max_output_tokens
        .map(u64::from)
        .or_else(|| config.models.get(model).and_then(|m| m.max_output_tokens))
        .unwrap_or(info.max_output_tokens)
        .min(window / 2);
    let available = window - max_output;
    let auto_compact = auto_compact_limit(config, model)
        .unwrap_or_else(|| codecoder_context::default_limit(available))
        .min(available);
    ContextLimits { window, max_output, auto_compact }
}

/// The prompt's configuration for `model` under `config`: the window and output reserve, the
/// AGENTS.md fallback names and budget (`project_doc_fallback_filenames`,
/// `project_doc_max_bytes`).
pub(crate) fn context_config(
    config: &ConfigToml,
    model: &str,
    server_window: Option<u64>,
    home: &std::path::Path,
) -> codecoder_context::ContextConfig {
    let ContextLimits { window, max_output, .. } =
        context_limits_with(config, model, server_window);
    let mut context_config =
        codecoder_context::ContextConfig::standard(window, max_output, Some(home.to_owned()));
    if let Some(names) = &config.project_doc_fallback_filenames {
        context_config.agents_md.fallback_names.clone_from(names);
    }
    if let Some(budget) = config.project_doc_max_bytes {
        context_config.agents_md.budget_bytes = budget;
    }
    context_config
}

/// Asks the server of `provider` for `model`'s context window on a thread of its own, when
/// it may say one: not a cloud preset, and no window configured for the model. The thread reads
/// the provider's key and header variables through `lookup` first, and takes at most
/// `DISCOVERY_TIMEOUT` per request; a server that does not answer gives `None`.
fn start_discovery(
    config: &ConfigToml,
    provider: &codecoder_providers::ProviderConfig,
    model: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Option<codecoder_stdx::JoinOnDrop<Option<codecoder_providers::ServerWindow>>> {
    let configured = config.models.get(model).and_then(|m| m.context_window).is_some()
        || config.model_context_window.is_some();
    if configured || codecoder_providers::is_cloud(provider) {
        return None;
    }
    let variables: std::collections::BTreeMap<String, String> = provider
        .env_key
        .iter()
        .chain(provider.env_http_headers.values())
        .filter_map(|name| Some((name.clone(), lookup(name)?)))
        .collect();
    let provider = provider.clone();
    let model = model.to_owned();
    codecoder_stdx::spawn_named("provider-discovery", move || {
        let env = |name: &str| variables.get(name).cloned();
        codecoder_providers::context_window(
            &provider,
            &env,
            &model,
            codecoder_providers::DISCOVERY_TIMEOUT,
        )
    })
    .ok()
}

/// The configured auto-compaction limit of `model` (`[models.X] auto_compact_token_limit`
/// first, then `model_auto_compact_token_limit`); `None`: the compactor's default.
pub(crate) fn auto_compact_limit(config: &ConfigToml, model: &str) -> Option<u64> {
    config
        .models
        .get(model)
        .and_then(|m| m.auto_compact_token_limit)
        .or(config.model_auto_compact_token_limit)
}

/// The directory of the shared shell snapshots, under codecoder's home.
pub(crate) const SNAPSHOT_DIR: &str = "shell_snapshots";

/// The effective configuration's hash, `sha256:<hex>` of its JSON form (maps are ordered, so
/// the same settings always hash the same).
fn config_hash(config: &ConfigToml) -> Result<String> {
    use sha2::Digest;
    let json = serde_json::to_vec(config)
        .map_err(|err| Error::usage(format!("the configuration cannot be hashed: {err}")))?;
    let digest = sha2::Sha256::digest(&json);
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    Ok(format!("sha256:{hex}"))
}

/// The redactor of a session's tool output: the secret shapes, the values of the variables
/// withheld from commands as secrets (those whose names the default excludes or the
/// configured `exclude` patterns drop, not those left out by `inherit` or `include_only`,
/// which are ordinary values such as paths), and the provider's key.
fn secret_redactor(
    withheld: &[String],
    policy: Option<&codecoder_config::ShellEnvironmentPolicyToml>,
    provider_key: Option<codecoder_kernel::Secret>,
) -> Result<codecoder_kernel::Redactor> {
    let mut excludes = codecoder_sandbox::EnvPolicy::standard();
    if let Some(policy) = policy {
        excludes.exclude.clone_from(&policy.exclude);
    }
    let secrets = withheld
        .iter()
        .filter(|name| {
            let one = [(std::ffi::OsString::from(name), std::ffi::OsString::new())];
            codecoder_sandbox::command_environment(one, &excludes).vars.is_empty()
        })
        .filter_map(|name| {
            let value = std::env::var(name).ok()?;
            Some(codecoder_kernel::Secret { name: name.clone(), value })
        })
        .chain(provider_key);
    Ok(codecoder_kernel::Redactor::new(secrets)?)
}
