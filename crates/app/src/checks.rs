//! `codecoder doctor` and `codecoder permissions check`: the safety machinery, inspectable by
//! hand, exactly as a session would set it up.

use std::io::Write;

use crate::error::{Error, Result};
use crate::safety::Safety;
use crate::{Notice, Runtime};

/// The decision `permissions check` prints, and what it was made of.
#[derive(Debug)]
pub struct PermissionCheck {
    /// The chain's decision (its `Display` says what decided).
    pub decision: codecoder_policy::Decision,
    /// Our name of the tool.
    pub tool: String,
    /// The tool's kind.
    pub kind: codecoder_kernel::ToolKind,
    /// The permission keys the arguments give.
    pub keys: Vec<String>,
    /// The modes the decision was made under.
    pub modes: crate::Modes,
}

impl Runtime {
    /// How `codecoder sandbox -- CMD` confines a command and the environment it gets: exactly
    /// as a headless session would, with the network on or off as asked. Also returns the
    /// safety warnings.
    ///
    /// # Errors
    /// `NoSandbox` when the mode wants a sandbox and no backend works here.
    pub fn command_confinement(
        &self,
        network: bool,
    ) -> Result<(codecoder_sandbox::Confinement, codecoder_sandbox::Environment, Vec<Notice>)> {
        use codecoder_sandbox::{Confinement, Sandbox};
        let safety = self.safety(false)?;
        let notices = safety.warnings.iter().cloned().map(Notice::Warning).collect();
        let confinement = match &safety.confinement {
            Confinement::Sandboxed(sandbox) => {
                let mut policy = sandbox.policy().clone();
                policy.network = network;
                Confinement::Sandboxed(std::sync::Arc::new(Sandbox::new(
                    policy,
                    sandbox.backend().clone(),
                    sandbox.stage_exe().to_owned(),
                )))
            }
            _ if safety.modes.sandbox == crate::SandboxMode::DangerFullAccess => {
                Confinement::Unconfined
            }
            _ => return Err(Error::NoSandbox { reason: safety.probe.notes.join("; ") }),
        };
        Ok((confinement, safety.command_env.environment(), notices))
    }

    /// The safety setup a session would get (`interactive`: a person is at hand to answer).
    ///
    /// # Errors
    /// When a writable root does not exist or a permission rule is invalid.
    pub fn safety(&self, interactive: bool) -> Result<Safety> {
        crate::safety::build(&self.overrides, &self.loaded, &self.cwd, &self.home, interactive)
    }

    /// The provider (its wire API and whether it streams) and the reasoning settings `model`'s
    /// requests carry, for `doctor`.
    fn doctor_model(&self, model: &str, out: &mut dyn Write) -> Result<()> {
        let config = &self.loaded.config;
        let provider_id = self
            .overrides
            .provider
            .clone()
            .or_else(|| config.model_provider.clone())
            .unwrap_or_else(|| crate::session::DEFAULT_PROVIDER.to_owned());
        match crate::provider::resolve_provider(&provider_id, config) {
            Ok(provider) => {
                writeln!(
                    out,
                    "provider: {provider_id} ({} API, {})",
                    provider.wire_api,
                    if provider.stream {
                        "streaming; a streamed request with tools that fails before any answer is sent again as a whole one"
                    } else {
                        "stream = false: whole JSON answers"
                    }
                )?;
                // A person who set tool_call_format sees that it took, and what it does.
                if provider.tool_call_format != codecoder_protocol::ToolCallFormat::Off {
                    writeln!(
                        out,
                        "tool calls written as text: parsed as {} (tool_call_format; Chat Completions only)",
                        provider.tool_call_format
                    )?;
                }
            }
            Err(err) => writeln!(out, "provider: {provider_id} ({err})")?,
        }
        let remembered = crate::provider_cache::ProviderCache::describe(&self.home);
        if !remembered.is_empty() {
            let path = self.home.join(crate::provider_cache::PROVIDER_CACHE);
            writeln!(
                out,
                "provider cache: requests with tools go unstreamed to {} (delete an entry in {} to try streaming again)",
                remembered.join("; "),
                path.display()
            )?;
        }
        let (settings, warning) = crate::provider::reasoning_settings(config, model, None)?;
        let reasons = codecoder_providers::model_info(model).reasoning;
        let mut parts = Vec::new();
        if let Some(effort) = settings.effort {
            parts.push(format!("effort {effort}"));
        }
        if let Some(summary) = settings.summary {
            parts.push(format!("summary {}", summary.as_str()));
        }
        if let Some(budget) = settings.budget_tokens {
            parts.push(format!("thinking budget {budget} tokens"));
        }
        let described = match (parts.is_empty(), reasons) {
            (false, _) => parts.join(", "),
            (true, true) => "the model's defaults (set model_reasoning_effort)".to_owned(),
            (true, false) => "none (the catalog says the model does not reason)".to_owned(),
        };
        writeln!(out, "reasoning: {described}")?;
        if let Some(warning) = warning {
            writeln!(out, "  note: {warning}")?;
        }
        Ok(())
    }

    /// Writes `codecoder doctor`'s report: the home, the project and its trust, the config
    /// layers, the provider and reasoning settings, the sandbox backend and why, the modes, roots, hidden paths, hooks, skills,
    /// agents and commands (with their files and warnings), and rules.
    ///
    /// Returns what loading the hooks had to say, for stderr.
    ///
    /// # Errors
    /// When the safety setup cannot be built or `out` fails.
    pub fn doctor(&self, out: &mut dyn Write) -> Result<Vec<Notice>> {
        let (home, cwd, loaded) = (&self.home, &self.cwd, &self.loaded);
        writeln!(out, "codecoder {}", env!("CARGO_PKG_VERSION"))?;
        writeln!(out, "home: {}", home.display())?;
        let root = codecoder_config::project_root(cwd);
        let trust = if loaded.project_trusted { "trusted" } else { "not trusted" };
        writeln!(out, "project: {} ({trust})", root.display())?;
        writeln!(out, "config layers:")?;
        if loaded.layers.is_empty() {
            writeln!(out, "  (none: defaults only)")?;
        }
        for (origin, _) in &loaded.layers {
            writeln!(out, "  {origin}")?;
        }
        for notice in &loaded.notices {
            writeln!(out, "  note: {notice}")?;
        }

        let model = self
            .overrides
            .model
            .clone()
            .or_else(|| loaded.config.model.clone())
            .unwrap_or_else(|| crate::session::DEFAULT_MODEL.to_owned());
        writeln!(out, "context (window, output reserve, auto-compaction limit, in tokens):")?;
        let mut models = vec![model.clone()];
        models.extend(loaded.config.models.keys().filter(|name| **name != model).cloned());
        for name in models {
            let limits = crate::session::context_limits(&loaded.config, &name);
            let current = if name == model { " (the model)" } else { "" };
            writeln!(
                out,
                "  {name}{current}: window {}, reserve {}, compacts past {}",
                limits.window, limits.max_output, limits.auto_compact
            )?;
        }

        self.doctor_model(&model, out)?;
        // The prompt as a session of the model builds it: the instruction files it carries and
        // what the person should know about them (a cut, a file left out, a large section).
        writeln!(out, "prompt:")?;
        let context_config = crate::session::context_config(&loaded.config, &model, None, home);
        let environment = codecoder_context::Environment::new(
            cwd,
            std::env::var(codecoder_protocol::env::SHELL).ok(),
        );
        let built = codecoder_context::ContextBuilder::new(
            &context_config,
            &environment,
            &codecoder_stdx::SystemClock,
            &self.agents_md,
        )
        .and_then(|builder| {
            builder.with_section("skills", crate::skills::load(cwd, home).catalogue(""))
        });
        match built {
            Ok(builder) => {
                if builder.agents_md_files().is_empty() {
                    writeln!(out, "  instruction files: (none)")?;
                }
                for file in builder.agents_md_files() {
                    writeln!(out, "  instruction file: {}", file.display())?;
                }
                for warning in builder.warnings() {
                    writeln!(out, "  warning: {warning}")?;
                }
            }
            Err(err) => writeln!(out, "  error: {err}")?,
        }

        let interactive = self.safety(true)?;
        let headless = self.safety(false)?;
        writeln!(out, "sandbox:")?;
        match &interactive.probe.backend {
            Some(backend) => writeln!(out, "  backend: {} (active)", backend.name())?,
            None => writeln!(out, "  backend: none — commands cannot be sandboxed here")?,
        }
        for note in &interactive.probe.notes {
            writeln!(out, "  {note}")?;
        }
        let modes = |safety: &Safety| {
            format!(
                "sandbox {}, approvals {}{}, permission mode {}",
                safety.modes.sandbox.as_str(),
                safety.modes.approval.as_str(),
                if safety.modes.bypass { ", bypass (yolo)" } else { "" },
                safety.permission.get(),
            )
        };
        writeln!(out, "modes:")?;
        writeln!(out, "  interactive: {}", modes(&interactive))?;
        writeln!(out, "  exec: {}", modes(&headless))?;
        let policy = &interactive.sandbox_policy;
        let network = match interactive.network.mode {
            crate::NetworkMode::Managed => "managed (through codecoder's proxy, host by host)",
            crate::NetworkMode::Full => "on (the whole network)",
            crate::NetworkMode::Off => "off",
        };
        writeln!(out, "  network for commands: {network}")?;
        network_lines(&interactive.network, out)?;
        writeln!(out, "writable roots:")?;
        let roots = policy.existing_writable_roots();
        if roots.is_empty() {
            writeln!(out, "  (none: {})", interactive.modes.sandbox.as_str())?;
        }
        for root in roots {
            writeln!(out, "  {}", root.display())?;
        }
        // The same guard the approval chain, the file tools and the sandbox use.
        writeln!(out, "protected (edits asked, denied under never; read-only to commands):")?;
        for path in policy.protected_subpaths() {
            match policy.protection(&path) {
                Some(protection) => {
                    writeln!(out, "  {} — {}", path.display(), protection.rule_text())?;
                }
                None => writeln!(out, "  {}", path.display())?,
            }
        }
        writeln!(
            out,
            "  below every writable root, existing or not: {}, .claude/settings*.json",
            codecoder_policy::protect::PROTECTED_DIRS
                .iter()
                .chain(&codecoder_policy::protect::PROTECTED_FILES)
                .copied()
                .collect::<Vec<_>>()
                .join(", ")
        )?;
        writeln!(out, "  codecoder's home, wherever it is: {}", home.display())?;
        writeln!(out, "hidden from commands and read tools:")?;
        for path in &policy.hidden_paths {
            let state = if path.exists() { "" } else { " (absent)" };
            writeln!(out, "  {}{state}", path.display())?;
        }
        // Names only: a value may be a secret.
        let withheld = &interactive.command_env.withheld;
        if withheld.is_empty() {
            writeln!(out, "withheld from commands: (none)")?;
        } else {
            writeln!(out, "withheld from commands: {}", withheld.join(", "))?;
        }
        writeln!(out, "shell: {}", shell_snapshot_line(self, &interactive))?;
        writeln!(out, "plugins:")?;
        let plugins = crate::plugins::list_plugins(home).unwrap_or_else(|err| {
            let _ = writeln!(out, "  (unreadable: {err})");
            Vec::new()
        });
        if plugins.is_empty() {
            writeln!(out, "  (none)")?;
        }
        for plugin in &plugins {
            let state = if plugin.enabled { "enabled" } else { "disabled" };
            writeln!(out, "  {} {} ({state})", plugin.name, plugin.dir.display())?;
        }
        let mut notices = Vec::new();
        let hooks = crate::safety::load_hooks(
            loaded,
            &crate::Overrides::default(),
            cwd,
            home,
            &mut notices,
        )?;

        writeln!(out, "hooks:")?;
        if hooks.is_empty() {
            writeln!(out, "  (none)")?;
        } else {
            for line in hooks.summary().lines() {
                writeln!(out, "  {line}")?;
            }
        }
        crate::skills::write_report(&crate::skills::load(cwd, home), out)?;
        writeln!(out, "permission rules:")?;
        let mut any = false;
        for (origin, layer) in &loaded.layers {
            let Some(rules) = &layer.permissions else { continue };
            for (list, items) in
                [("allow", &rules.allow), ("ask", &rules.ask), ("deny", &rules.deny)]
            {
                for rule in items {
                    any = true;
                    writeln!(out, "  {list} {rule}  ({origin})")?;
                }
            }
        }
        let claude = crate::claude_settings::ClaudePermissions::load(
            std::env::var_os(codecoder_protocol::env::HOME)
                .map(std::path::PathBuf::from)
                .as_deref(),
            &root,
            loaded.project_trusted,
            None,
            None,
        );
        for layer in [&claude.project, &claude.user] {
            let files: Vec<String> = layer.files.iter().map(|f| f.display().to_string()).collect();
            for (list, items) in
                [("allow", &layer.allow), ("ask", &layer.ask), ("deny", &layer.deny)]
            {
                for rule in items {
                    any = true;
                    writeln!(out, "  {list} {rule}  ({}, Claude Code)", files.join(", "))?;
                }
            }
        }
        if !any {
            writeln!(out, "  (none: the defaults of the modes decide)")?;
        }
        crate::mcp::doctor(loaded, cwd, out)?;
        crate::lsp::doctor(&loaded.config, cwd, out)?;
        for warning in &interactive.warnings {
            writeln!(out, "warning: {warning}")?;
        }
        Ok(notices)
    }
}

impl Runtime {
    /// What the approval chain decides for `tool` (ours or Claude Code's name) called with
    /// `args` (JSON), without hooks or session grants.
    ///
    /// # Errors
    /// `Usage` when the arguments are not JSON, the tool is unknown or the arguments do not fit
    /// its schema.
    pub fn check_permission(
        &self,
        tool: &str,
        args: &str,
        interactive: bool,
    ) -> Result<PermissionCheck> {
        let value: serde_json::Value = serde_json::from_str(args)
            .map_err(|err| Error::usage(format!("ARGS-JSON is not JSON: {err}")))?;
        let safety = self.safety(interactive)?;
        let cwd = &self.cwd;
        let name = codecoder_protocol::our_tool_name(tool);
        let tools = codecoder_tools::builtin_tools(codecoder_tools::ToolsConfig::standard(
            cwd,
            vec![std::path::PathBuf::from("/")],
        ));
        let Some(tool) = tools.iter().find(|tool| tool.name() == name) else {
            if let Some((server, tool_name)) = self.mcp_tool_name(name) {
                return Ok(self.check_mcp_permission(name, server, tool_name, &value, &safety));
            }
            let known: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
            return Err(Error::usage(format!(
                "unknown tool `{tool}` (known: {}, and MCP tools as mcp__SERVER__TOOL)",
                known.join(", ")
            )));
        };
        if let Err(err) = codecoder_kernel::validate_schema(&tool.schema(), &value) {
            return Err(Error::usage(format!("the arguments do not fit `{name}`: {err}")));
        }
        let keys = tool.permission_keys(&value);
        let view = tool.view(&value);
        let decision = safety.policy.decide_call(name, tool.kind(), &view, &keys, None, false);
        Ok(PermissionCheck {
            decision,
            tool: name.to_owned(),
            kind: tool.kind(),
            keys,
            modes: safety.modes,
        })
    }

    /// The server and tool an MCP tool's model-visible name (`mcp__SERVER__TOOL`) stands for:
    /// the longest configured server name that fits (a server's name may hold `__`), else the
    /// part up to the first `__`. `None` for a name that is not of that shape.
    fn mcp_tool_name<'a>(&self, name: &'a str) -> Option<(&'a str, &'a str)> {
        let rest = name.strip_prefix("mcp__")?;
        let configured = crate::mcp::configured_server_names(&self.loaded, &self.cwd);
        let server_len = configured
            .iter()
            .filter(|server| {
                rest.strip_prefix(server.as_str())
                    .and_then(|tail| tail.strip_prefix("__"))
                    .is_some_and(|tool| !tool.is_empty())
            })
            .map(String::len)
            .max()
            .or_else(|| rest.find("__"))?;
        let (server, tool) = (&rest[..server_len], rest[server_len..].strip_prefix("__")?);
        (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
    }

    /// The chain's decision for a call of an MCP server's tool, as a session decides it: its
    /// name is its one permission key (rules naming `mcp__server__tool`, `mcp__server` or
    /// `mcp__server__*` apply), and its kind is that of a tool without annotations (its server
    /// is not started here, so a `readOnlyHint` it may declare is not known).
    fn check_mcp_permission(
        &self,
        name: &str,
        server: &str,
        tool: &str,
        args: &serde_json::Value,
        safety: &Safety,
    ) -> PermissionCheck {
        let info = codecoder_mcp::McpToolInfo {
            server: server.to_owned(),
            name: tool.to_owned(),
            description: String::new(),
            input_schema: serde_json::Value::Null,
            read_only: false,
            destructive: None,
            timeout: std::time::Duration::ZERO,
        };
        let kind = codecoder_mcp::McpTool::kind_of(&info);
        let view = codecoder_protocol::CallView {
            kind: codecoder_protocol::CallKind::Mcp {
                server: server.to_owned(),
                tool: tool.to_owned(),
            },
            ..codecoder_protocol::CallView::generic(name, args)
        };
        let keys = vec![name.to_owned()];
        let decision = safety.policy.decide_call(name, kind, &view, &keys, None, false);
        PermissionCheck { decision, tool: name.to_owned(), kind, keys, modes: safety.modes }
    }
}

/// Finds or takes the shell snapshot the way a session would (it stays, shared) and says how it
/// went: commands run with `bash -lc` whenever it fails.
fn shell_snapshot_line(runtime: &crate::Runtime, safety: &Safety) -> String {
    if runtime.loaded.config.shell.as_ref().and_then(|shell| shell.snapshot) == Some(false) {
        return "bash -lc per command (shell.snapshot = false)".to_owned();
    }
    let started = std::time::Instant::now();
    let (keep_name, keep_name_key) = crate::safety::snapshot_name_filter(
        runtime.loaded.config.shell_environment_policy.as_ref(),
    );
    let snapshot = codecoder_tools::ShellSnapshot::take_now(codecoder_tools::SnapshotConfig {
        dir: runtime.home.join(crate::session::SNAPSHOT_DIR),
        shell: std::path::PathBuf::from("bash"),
        cwd: runtime.cwd.clone(),
        environment: safety.command_env.environment(),
        confinement: safety.confinement.clone(),
        keep_name,
        keep_name_key,
        timeout: codecoder_tools::SNAPSHOT_TIMEOUT,
    });
    let elapsed = started.elapsed().as_millis();
    match snapshot.status() {
        codecoder_tools::SnapshotStatus::Ready(path) if snapshot.reused() => format!(
            "bash -c with a snapshot of the login shell's set-up (shared, reused: {})",
            path.display()
        ),
        codecoder_tools::SnapshotStatus::Ready(path) => format!(
            "bash -c with a snapshot of the login shell's set-up (taken in {elapsed} ms, \
             shared from now on: {})",
            path.display()
        ),
        codecoder_tools::SnapshotStatus::Failed(reason) if snapshot.login_shell_hangs() => {
            format!(
                "bash -c per command, without the profile: the shell snapshot failed ({reason})"
            )
        }
        codecoder_tools::SnapshotStatus::Failed(reason) => {
            format!("bash -lc per command: the shell snapshot failed ({reason})")
        }
        codecoder_tools::SnapshotStatus::Pending => "bash -lc per command".to_owned(),
    }
}

/// The managed network's effective policy, for `doctor`.
fn network_lines(network: &crate::NetworkSettings, out: &mut dyn Write) -> Result<()> {
    writeln!(out, "network policy: {}", network.mode.as_str())?;
    if network.mode != crate::NetworkMode::Managed {
        return Ok(());
    }
    let presets =
        if network.presets.is_empty() { "(none)".to_owned() } else { network.presets.join(", ") };
    writeln!(out, "  presets allowed: {presets}")?;
    for (title, entries) in [("allowed", &network.allowed), ("denied", &network.denied)] {
        if entries.is_empty() {
            writeln!(out, "  {title}: (none)")?;
        }
        for entry in entries.iter() {
            writeln!(out, "  {title}: {} — {}", entry.pattern, entry.source.display())?;
        }
    }
    writeln!(out, "  other hosts: asked (denied where approvals are never asked)")?;
    if let Err(err) = network.policy() {
        writeln!(out, "  error: {err}")?;
    }
    // Rules naming paths or methods are checked inside TLS, which the proxy terminates with a
    // per-session CA that the commands' TLS clients are pointed at.
    let inspected: Vec<&str> = network
        .allowed
        .iter()
        .chain(&network.denied)
        .filter(|entry| {
            codecoder_netproxy::Rule::parse(&entry.pattern).is_ok_and(|rule| !rule.is_host_wide())
        })
        .map(|entry| entry.pattern.as_str())
        .collect();
    if inspected.is_empty() {
        writeln!(out, "  TLS inspection: off (no rule names a path or method; tunnels only)")?;
        return Ok(());
    }
    writeln!(
        out,
        "  TLS inspection: on for {} (on port 443 or the port a rule names)",
        inspected.join(", ")
    )?;
    let directory = codecoder_sandbox::proxy_socket_root().join("codecoder-net-*");
    writeln!(
        out,
        "  session CA: made per session, its key kept in memory; commands get \
         NODE_EXTRA_CA_CERTS={}, and SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CARGO_HTTP_CAINFO, \
         GIT_SSL_CAINFO={}",
        directory.join("ca.pem").display(),
        directory.join("ca-bundle.pem").display()
    )?;
    match codecoder_netproxy::system_ca_bundle() {
        Some(bundle) => {
            writeln!(
                out,
                "  CA bundle: the system's {} followed by the session CA",
                bundle.display()
            )?;
        }
        None => writeln!(
            out,
            "  CA bundle: no system bundle found: commands trusting it reach only inspected hosts"
        )?,
    }
    Ok(())
}
