//! The agent stack every front-end runs on (exec, the TUI): configuration → provider client (or
//! the replay model) → session writer (new, resumed or in memory) → tools, prompt builder and
//! approval policy → a kernel agent on its own threads.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context;
use codecoder_config::ConfigToml;
use codecoder_kernel::{
    AgentConfig, AgentDeps, AgentHandle, ModelClient, ModelError, ModelRequest, ResponseEvent,
    ResponseStream, ToolRegistry, spawn_agent_on,
};
use codecoder_protocol::{MessageItem, RecordBody, StopReason};
use codecoder_providers::{HttpModelClient, ProviderConfig, WireApi};
use codecoder_session::{FsyncPolicy, NewSession, SessionStore, SessionWriter, WriterConfig};

use crate::cli::GlobalArgs;
use crate::config_cmd::{cwd, home, load_config};
use crate::exec::usage;

const DEFAULT_MODEL: &str = "gpt-5";
const DEFAULT_PROVIDER: &str = "openai";

/// What a front-end asks for.
#[derive(Debug, Clone, Default)]
pub(crate) struct StackRequest {
    /// `--model`.
    pub(crate) model: Option<String>,
    /// `--provider`.
    pub(crate) provider: Option<String>,
    /// `--replay FILE`: answer with a recorded session's responses.
    pub(crate) replay: Option<PathBuf>,
    /// Keep no session log.
    pub(crate) ephemeral: bool,
    /// A JSON Schema the final message must follow.
    pub(crate) output_schema: Option<serde_json::Value>,
    /// `None`: a new session; `Some(None)`: the newest of this directory; `Some(Some(id))`.
    pub(crate) resume: Option<Option<String>>,
    /// A person is at hand to answer approvals (the TUI): the default approval mode is then
    /// on-request instead of never.
    pub(crate) interactive: bool,
}

/// A running agent and what the front-end shows about it.
pub(crate) struct Stack {
    /// The agent: commands in, events out.
    pub(crate) agent: AgentHandle,
    /// The merged configuration.
    pub(crate) config: ConfigToml,
    /// The model id.
    pub(crate) model: String,
    /// The provider id.
    pub(crate) provider_id: String,
    /// The model's context window, in tokens.
    pub(crate) context_window: u64,
    /// The working directory.
    pub(crate) cwd: PathBuf,
    /// `$CODECODER_HOME`.
    pub(crate) home: PathBuf,
    /// The sandbox and approval modes the session runs under.
    pub(crate) modes: codecoder_policy::Modes,
    /// The approval chain (its approval mode can be changed while the session runs).
    pub(crate) policy: Arc<crate::safety::ChainPolicy>,
    /// `run_command`'s escalation setting, which follows the approval mode.
    pub(crate) escalation: codecoder_tools::EscalationSetting,
}

/// Loads the configuration and starts an agent. Notices from loading go to stderr.
pub(crate) fn build(global: &GlobalArgs, request: &StackRequest) -> anyhow::Result<Stack> {
    let home = home()?;
    let cwd = cwd(global)?;
    let loaded = load_config(global, &home, &cwd)?;
    for notice in &loaded.notices {
        eprintln!("note: {notice}");
    }
    let config = &loaded.config;
    let safety = crate::safety::build(&global.safety, &loaded, &cwd, &home, request.interactive)?;
    for warning in &safety.warnings {
        eprintln!("warning: {warning}");
    }
    let provider_id = request
        .provider
        .clone()
        .or_else(|| config.model_provider.clone())
        .unwrap_or_else(|| DEFAULT_PROVIDER.to_owned());
    let model = request
        .model
        .clone()
        .or_else(|| config.model.clone())
        .unwrap_or_else(|| DEFAULT_MODEL.to_owned());
    let model_client: Arc<dyn ModelClient> = match &request.replay {
        Some(path) => {
            let replay = ReplayModel::load(
                path,
                SessionStore::new(&home).blobs(),
                cwd.to_string_lossy().into_owned(),
            )?;
            if !replay.compares {
                eprintln!(
                    "note: --replay: {} was written before logs recorded the model-visible context; requests are not compared with the recorded ones",
                    path.display()
                );
            }
            Arc::new(replay)
        }
        None => {
            let provider = resolve_provider(&provider_id, config)?;
            let env_key = provider.env_key.clone();
            let lookup = |key: &str| {
                std::env::var(key).ok().filter(|v| !v.trim().is_empty()).or_else(|| {
                    (Some(key) == env_key.as_deref())
                        .then(|| codecoder_config::load_credential(&home, &provider_id))
                        .flatten()
                })
            };
            match HttpModelClient::new(provider, &lookup) {
                Ok(client) => Arc::new(client),
                Err(err @ codecoder_providers::Error::MissingApiKey { .. }) => {
                    return Err(usage(format!(
                        "{err} (or run `codecoder login --provider {provider_id}`)"
                    )));
                }
                Err(err) => return Err(err.into()),
            }
        }
    };
    let info = codecoder_providers::model_info(&model);
    if !info.known && !config.models.contains_key(&model) {
        eprintln!(
            "note: model `{model}` is not in the catalog; assuming a {}-token context (set [models.\"{model}\"] in config.toml)",
            info.context_window
        );
    }

    let store = SessionStore::new(&home);
    let writer_config = WriterConfig {
        fsync: match config.session.as_ref().and_then(|s| s.fsync) {
            Some(codecoder_config::FsyncToml::Always) => FsyncPolicy::Always,
            Some(codecoder_config::FsyncToml::Never) => FsyncPolicy::Never,
            Some(codecoder_config::FsyncToml::Turn) | None => FsyncPolicy::Turn,
        },
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
    let writer: SessionWriter = match request.resume.clone() {
        Some(query) => {
            let path = match query {
                Some(id) => store.find(&id)?,
                None => {
                    let index = crate::sessions::refreshed_index(&store)?;
                    let newest =
                        index.list(Some(&cwd_text))?.into_iter().find(|s| s.problem.is_none());
                    newest
                        .map(|s| s.path)
                        .with_context(|| format!("no session to resume in {cwd_text}"))?
                }
            };
            store.resume(&path, writer_config)?.1
        }
        None if request.ephemeral => SessionWriter::in_memory(new_session, writer_config)?,
        None => store.create(new_session, writer_config)?,
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
    let mut tools_config = codecoder_tools::ToolsConfig::standard(&cwd, vec![PathBuf::from("/")]);
    tools_config.confinement = safety.confinement.clone();
    tools_config.environment = safety.command_env.environment();
    tools_config.escalation = safety.escalation.clone();
    tools_config.protected_paths = safety.tools_protected_paths.clone();
    // Output over the cap is kept whole, as a blob beside the session logs.
    tools_config.spill_dir = Some(store.blobs().dir().join("spill"));
    tools_config.blobs = Some(store.blobs());
    let mut registry = ToolRegistry::new();
    for tool in codecoder_tools::builtin_tools(tools_config) {
        registry.register(tool)?;
    }
    let registry = Arc::new(registry);

    // The prompt: base instructions, environment, AGENTS.md; the model's window and reserve.
    let window =
        config.models.get(&model).and_then(|m| m.context_window).unwrap_or(info.context_window);
    let max_output = config
        .model_max_output_tokens
        .map(u64::from)
        .or_else(|| config.models.get(&model).and_then(|m| m.max_output_tokens))
        .unwrap_or(info.max_output_tokens)
        .min(window / 2);
    let mut context_config =
        codecoder_context::ContextConfig::standard(window, max_output, Some(home.clone()));
    if let Some(names) = &config.project_doc_fallback_filenames {
        context_config.agents_md.fallback_names.clone_from(names);
    }
    context_config.output_schema.clone_from(&request.output_schema);
    if let Some(budget) = config.project_doc_max_bytes {
        context_config.agents_md.budget_bytes = budget;
    }
    let mut environment = codecoder_context::Environment::new(&cwd, std::env::var("SHELL").ok());
    environment.git_status_porcelain = git_status(&cwd, safety.command_env.environment());
    let blobs = store.blobs();
    let builder = codecoder_context::ContextBuilder::new(
        &context_config,
        &environment,
        &codecoder_stdx::SystemClock,
        &codecoder_context::AgentsMdLoader::new(),
    )?
    .with_blob_resolver(move |blob| blobs.resolve(blob).ok());
    let builder = Arc::new(builder);
    let guard = codecoder_context::ContextWindowGuard::new(
        Arc::clone(&builder),
        model.clone(),
        registry.specs(),
    );
    let hook_set = crate::safety::load_hooks(&loaded, &cwd)?;
    let hooks: Arc<dyn codecoder_kernel::Hooks> = match crate::safety::kernel_hooks(
        &hook_set,
        writer.session_id().to_string(),
        writer.path(),
        &cwd,
        crate::safety::claude_permission_mode(safety.modes),
        store.sessions_dir(),
    ) {
        Some(hooks) => Arc::new(hooks),
        None => Arc::new(codecoder_kernel::NoHooks),
    };
    let deps = AgentDeps {
        model: model_client,
        prompt: builder,
        tools: registry,
        approval: safety.policy.clone(),
        hooks,
        sessions,
        interceptors: vec![Arc::new(guard)],
    };
    let agent = spawn_agent_on(agent_config, deps, writer)?;
    Ok(Stack {
        agent,
        config: loaded.config.clone(),
        model,
        provider_id,
        context_window: window,
        cwd,
        home,
        modes: safety.modes,
        policy: safety.policy,
        escalation: safety.escalation,
    })
}

/// `git status --porcelain` in `cwd`, for the prompt's environment section; `None` outside a
/// repository or when git is missing or slow (one second at most). It runs in the command
/// environment: its output reaches the model like a command's.
fn git_status(cwd: &Path, environment: codecoder_sandbox::Environment) -> Option<String> {
    codecoder_context::find_project_root(cwd)?;
    let mut spec = codecoder_sandbox::CommandSpec::new("git", ["status", "--porcelain"]);
    spec.cwd = Some(cwd.to_owned());
    let config = codecoder_sandbox::SpawnConfig {
        environment,
        ..codecoder_sandbox::SpawnConfig::standard()
    };
    let mut child = codecoder_sandbox::spawn(&spec, &config).ok()?;
    let mut stdout = Vec::new();
    let deadline = crossbeam_channel::after(std::time::Duration::from_secs(1));
    let outcome = child
        .wait(&deadline, &mut |chunk| {
            if chunk.stream == codecoder_sandbox::Stream::Stdout {
                stdout.extend_from_slice(&chunk.bytes);
            }
        })
        .ok()?;
    match outcome {
        codecoder_sandbox::Outcome::Exited(status) if status.success() => {
            Some(String::from_utf8_lossy(&stdout).into_owned())
        }
        _ => None,
    }
}

/// The effective configuration's hash, `sha256:<hex>` of its JSON form (maps are ordered, so
/// the same settings always hash the same).
fn config_hash(config: &ConfigToml) -> anyhow::Result<String> {
    use sha2::Digest;
    let json = serde_json::to_vec(config)?;
    let digest = sha2::Sha256::digest(&json);
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    Ok(format!("sha256:{hex}"))
}

/// The provider `id` as the configuration in effect here describes it (for encoding a logged
/// request the way it was sent).
pub(crate) fn provider_config(global: &GlobalArgs, id: &str) -> anyhow::Result<ProviderConfig> {
    let home = home()?;
    let cwd = cwd(global)?;
    let loaded = load_config(global, &home, &cwd)?;
    resolve_provider(id, &loaded.config)
}

/// A provider from its preset and/or `[model_providers.<id>]`.
fn resolve_provider(
    id: &str,
    config: &codecoder_config::ConfigToml,
) -> anyhow::Result<ProviderConfig> {
    let env = |key: &str| std::env::var(key).ok();
    let preset = ProviderConfig::preset(id, &env);
    let table = config.model_providers.get(id);
    let mut provider = match (preset, table) {
        (Some(preset), _) => preset,
        (None, Some(table)) => {
            let Some(base_url) = &table.base_url else {
                return Err(usage(format!("[model_providers.{id}] needs base_url")));
            };
            ProviderConfig::new(id, base_url.clone(), WireApi::Chat, None)
        }
        (None, None) => {
            let mut known: Vec<String> =
                codecoder_providers::PRESET_IDS.iter().map(|s| (*s).to_owned()).collect();
            known.extend(config.model_providers.keys().cloned());
            return Err(usage(format!("unknown provider `{id}` (known: {})", known.join(", "))));
        }
    };
    if let Some(table) = table {
        if let Some(name) = &table.name {
            provider.name.clone_from(name);
        }
        if let Some(base_url) = &table.base_url {
            provider.base_url.clone_from(base_url);
        }
        if let Some(wire_api) = table.wire_api {
            provider.wire_api = match wire_api {
                codecoder_config::WireApiToml::Responses => WireApi::Responses,
                codecoder_config::WireApiToml::Chat => WireApi::Chat,
                codecoder_config::WireApiToml::Anthropic => WireApi::Anthropic,
            };
        }
        if let Some(env_key) = &table.env_key {
            provider.env_key = Some(env_key.clone());
        }
        provider.http_headers.extend(table.http_headers.clone());
        provider.env_http_headers.extend(table.env_http_headers.clone());
        provider.query_params.extend(table.query_params.clone());
        if let Some(n) = table.request_max_retries {
            provider.request_max_retries = n;
        }
        if let Some(ms) = table.stream_idle_timeout_ms {
            provider.stream_idle_timeout_ms = ms;
        }
        if let Some(send) = table.send_reasoning_content {
            provider.send_reasoning_content = send;
        }
    }
    Ok(provider)
}

/// Answers each request with the next assistant message recorded in a session log, so a
/// recorded session re-runs offline and deterministically (the tools run for real).
///
/// Each request is first compared with the one the log recorded for the same step (rebuilt
/// from it): at the first difference the request fails with a message naming the request and
/// the first differing place, so a replay never answers a conversation the log did not have.
/// What a replay changes by nature is not compared: the session id, the environment section
/// (working directory, date, git status) and the working directory's path wherever it appears
/// (the recorded one and this run's both read as `<cwd>`). A log without `context` records (older codecoder) is
/// replayed without comparing.
struct ReplayModel {
    loaded: codecoder_session::LoadedSession,
    blobs: codecoder_session::BlobStore,
    responses: Vec<codecoder_protocol::Message>,
    next: AtomicUsize,
    /// Whether the log records the context of its first request.
    compares: bool,
    /// This run's working directory.
    cwd: String,
}

impl ReplayModel {
    fn load(path: &Path, blobs: codecoder_session::BlobStore, cwd: String) -> anyhow::Result<Self> {
        let loaded =
            codecoder_session::load(path).map_err(|err| usage(format!("--replay: {err}")))?;
        let responses: Vec<_> = loaded
            .records()
            .filter_map(|record| match &record.body {
                RecordBody::AssistantMessage { message } => Some(message.clone()),
                _ => None,
            })
            .collect();
        if responses.is_empty() {
            return Err(usage(format!("--replay: {} holds no model response", path.display())));
        }
        let compares = codecoder_context::rebuild_request(&loaded, 1, None).is_ok();
        Ok(Self { loaded, blobs, responses, next: AtomicUsize::new(0), compares, cwd })
    }

    /// `Err` with a message when `request` (request `number`) differs from the recorded one.
    fn compare(&self, number: usize, request: &ModelRequest) -> Result<(), String> {
        let resolve = |blob: &codecoder_protocol::BlobRef| self.blobs.resolve(blob).ok();
        let recorded =
            match codecoder_context::rebuild_request(&self.loaded, number, Some(&resolve)) {
                Ok(rebuilt) => rebuilt.request,
                // Nothing recorded to compare with.
                Err(_) => return Ok(()),
            };
        let recorded = comparable(&recorded, &self.loaded.meta.cwd);
        let replayed = comparable(request, &self.cwd);
        match first_difference(&recorded, &replayed, String::new()) {
            None => Ok(()),
            Some((path, was, now)) => Err(format!(
                "the replay diverged from the recorded session at model request {number}: \
                 `{path}` was {was} but is now {now}"
            )),
        }
    }
}

/// What a replay must reproduce of a request, as JSON: everything model-visible but the session
/// id, the environment section's text, message ids (fresh in every run) and the path of `cwd`
/// (written `<cwd>`).
fn comparable(request: &ModelRequest, cwd: &str) -> serde_json::Value {
    let sections: Vec<serde_json::Value> = request
        .sections
        .iter()
        .map(|section| {
            let text = if section.name == codecoder_context::ENVIRONMENT_SECTION {
                "(not compared)"
            } else {
                section.text.as_str()
            };
            serde_json::json!({"name": section.name, "text": text})
        })
        .collect();
    let history: Vec<serde_json::Value> = request
        .history
        .iter()
        .map(|message| {
            let mut value = serde_json::to_value(&**message).unwrap_or_default();
            if let Some(object) = value.as_object_mut() {
                object.remove("id");
            }
            value
        })
        .collect();
    let mut value = serde_json::json!({
        "model": request.model,
        "sections": sections,
        "tools": request.tools,
        "maxOutputTokens": request.max_output_tokens,
        "outputSchema": request.output_schema,
        "history": history,
    });
    // `/` would match every path: only a real directory is replaced.
    let cwd = cwd.trim_end_matches('/');
    if !cwd.is_empty() {
        replace_in_strings(&mut value, cwd, "<cwd>");
    }
    value
}

/// Replaces `from` with `to` in every string of `value`.
fn replace_in_strings(value: &mut serde_json::Value, from: &str, to: &str) {
    match value {
        serde_json::Value::String(text) if text.contains(from) => *text = text.replace(from, to),
        serde_json::Value::Array(items) => {
            items.iter_mut().for_each(|item| replace_in_strings(item, from, to));
        }
        serde_json::Value::Object(map) => {
            map.values_mut().for_each(|item| replace_in_strings(item, from, to));
        }
        _ => {}
    }
}

/// The first place (a JSON path) where `a` and `b` differ, with a short excerpt of each.
fn first_difference(
    a: &serde_json::Value,
    b: &serde_json::Value,
    path: String,
) -> Option<(String, String, String)> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (key, value) in x {
                let inner = format!("{path}.{key}");
                match y.get(key) {
                    Some(other) => {
                        if let Some(found) = first_difference(value, other, inner) {
                            return Some(found);
                        }
                    }
                    None => return Some((inner, excerpt(value), "absent".to_owned())),
                }
            }
            y.iter()
                .find(|(key, _)| !x.contains_key(*key))
                .map(|(key, value)| (format!("{path}.{key}"), "absent".to_owned(), excerpt(value)))
        }
        (Value::Array(x), Value::Array(y)) => {
            for (index, (value, other)) in x.iter().zip(y).enumerate() {
                if let Some(found) = first_difference(value, other, format!("{path}[{index}]")) {
                    return Some(found);
                }
            }
            (x.len() != y.len())
                .then(|| (format!("{path}.length"), x.len().to_string(), y.len().to_string()))
        }
        _ if a == b => None,
        _ => Some((path, excerpt(a), excerpt(b))),
    }
}

/// A value's JSON, cut to a readable length.
fn excerpt(value: &serde_json::Value) -> String {
    const MAX_CHARS: usize = 120;
    let text = value.to_string();
    if text.chars().count() <= MAX_CHARS {
        return text;
    }
    let cut: String = text.chars().take(MAX_CHARS).collect();
    format!("{cut}…")
}

impl ModelClient for ReplayModel {
    fn stream(&self, request: ModelRequest) -> Result<ResponseStream, ModelError> {
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        if self.compares {
            self.compare(index + 1, &request).map_err(ModelError::new)?;
        }
        let Some(message) = self.responses.get(index).cloned() else {
            return Err(ModelError::new(format!(
                "the replayed session has only {} model response(s)",
                self.responses.len()
            )));
        };
        // Unbounded: it holds one recorded message, which is already in memory.
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut calls = false;
        for item in message.items {
            let _ = match item {
                MessageItem::Text { text } => tx.send(ResponseEvent::TextDelta(text)),
                MessageItem::Reasoning(r) => {
                    let _ = tx.send(ResponseEvent::ReasoningDelta(r.text));
                    tx.send(ResponseEvent::ReasoningDone {
                        signature: r.signature,
                        encrypted_content: r.encrypted_content,
                    })
                }
                MessageItem::ToolCall(call) => {
                    calls = true;
                    let _ = tx.send(ResponseEvent::ToolCallStart {
                        id: call.id.clone(),
                        name: call.name,
                    });
                    let _ = tx.send(ResponseEvent::ToolCallArgsDelta {
                        id: call.id.clone(),
                        delta: call.args.to_string(),
                    });
                    tx.send(ResponseEvent::ToolCallDone { id: call.id })
                }
                MessageItem::ToolResult(_) | MessageItem::Image(_) | MessageItem::BlobRef(_) => {
                    Ok(())
                }
            };
        }
        let stop_reason = if calls { StopReason::ToolUse } else { StopReason::EndTurn };
        let _ = tx.send(ResponseEvent::Completed { stop_reason });
        Ok(ResponseStream::new(rx))
    }
}
