//! The safety wiring (seed L3/L5): the two axes (sandbox mode, approval mode) from the
//! overrides, profile and config; hooks from every source; the permission rules of each layer;
//! the sandbox every command runs in. `session.rs` puts the results into the agent.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codecoder_config::{LoadedConfig, Origin};
use codecoder_hooks::{CommonInput, HookRunner, HookSet, HookSources};
use codecoder_policy::{
    ApprovalMode, ChainPolicy, Modes, PermissionMode, PermissionSwitch, RuleOrigin, RuleSet,
    SandboxMode,
};
use codecoder_sandbox::{
    BackendPreference, CommandEnvironment, Confinement, EnvPolicy, FsAccess, Inherit, Probe,
    Sandbox, SandboxPolicy,
};
use codecoder_tools::{Escalation, EscalationSetting};

use crate::claude_settings::ClaudePermissions;
use crate::error::{Error, Result};
use crate::{Notice, Overrides};

/// Everything the safety flags and settings resolve to for one session.
pub struct Safety {
    /// The two axes and the bypass.
    pub modes: Modes,
    /// The approval chain, as the kernel's policy.
    pub policy: Arc<ChainPolicy>,
    /// The permission mode (`default | acceptEdits | plan`), shared by the chain, the
    /// `exit_plan_mode` tool and the front-end.
    pub permission: PermissionSwitch,
    /// What `run_command` runs in.
    pub confinement: Confinement,
    /// What a sandbox denial does (shared with the tools, changed with the approval mode).
    pub escalation: EscalationSetting,
    /// The backend probe (for `doctor`).
    pub probe: Probe,
    /// The sandbox policy (also when unconfined: `doctor` and `sandbox` print it).
    pub sandbox_policy: SandboxPolicy,
    /// Warnings for the person (no backend, a mode downgraded).
    pub warnings: Vec<String>,
    /// The file tools' guard (`ToolsConfig::protected_paths`): codecoder's home, or `None`
    /// under bypass and danger-full-access.
    pub tools_protected_paths: Option<Vec<PathBuf>>,
    /// The environment commands run with (`[shell_environment_policy]` applied to ours), and
    /// the names it withholds.
    pub command_env: CommandEnvironment,
    /// How commands reach the network, and the managed network's host lists.
    pub network: crate::network::NetworkSettings,
}

/// What `run_command` does when the sandbox blocks a command: ask to retry outside it where
/// the person is asked at all, else tell the model.
pub(crate) fn escalation_for(modes: Modes) -> Escalation {
    match (modes.bypass, modes.approval) {
        (false, ApprovalMode::Untrusted | ApprovalMode::OnRequest) => Escalation::Ask,
        _ => Escalation::Never,
    }
}

/// Claude Code's name for the mode, as hooks see it in `permission_mode`.
pub fn claude_permission_mode(modes: Modes) -> &'static str {
    match (modes.bypass, modes.approval) {
        (true, _) => "bypassPermissions",
        (false, ApprovalMode::Never) => "dontAsk",
        (false, ApprovalMode::Untrusted | ApprovalMode::OnRequest) => "default",
    }
}

/// Resolves the modes (flags, then profile/config, then defaults), the sandbox and the rules.
/// `interactive` picks the default approval mode: on-request with a person at hand, never in
/// `exec`.
pub(crate) fn build(
    args: &Overrides,
    loaded: &LoadedConfig,
    cwd: &Path,
    codecoder_home: &Path,
    interactive: bool,
) -> Result<Safety> {
    let config = &loaded.config;
    let mut warnings = Vec::new();
    let preference =
        config.sandbox.as_ref().and_then(|s| s.backend).unwrap_or(BackendPreference::Auto);
    let probe = codecoder_sandbox::probe(preference);
    let home = std::env::var_os(codecoder_protocol::env::HOME).map(PathBuf::from);
    let claude = ClaudePermissions::load(
        home.as_deref(),
        &codecoder_config::project_root(cwd),
        loaded.project_trusted,
        args.claude_setting_sources.as_deref(),
        args.claude_settings.as_ref(),
    );
    warnings.extend(claude.warnings.iter().cloned());
    let modes = resolve_modes(
        args,
        loaded,
        interactive,
        probe.backend.is_some(),
        claude.approval,
        &mut warnings,
    );
    if probe.backend.is_none() && modes.sandbox != SandboxMode::DangerFullAccess {
        warnings.push(format!(
            "no sandbox backend works here ({}); commands that are not known to be read-only \
             will ask first (see `codecoder doctor`)",
            probe.notes.join("; ")
        ));
    }

    let workspace_write = config.sandbox_workspace_write.clone().unwrap_or_default();
    let mut writable_roots = vec![cwd.to_owned()];
    if !workspace_write.exclude_slash_tmp.unwrap_or(false) {
        writable_roots.push(PathBuf::from("/tmp"));
    }
    if !workspace_write.exclude_tmpdir_env_var.unwrap_or(false)
        && let Some(tmpdir) =
            std::env::var_os(codecoder_protocol::env::TMPDIR).filter(|t| !t.is_empty())
    {
        writable_roots.push(PathBuf::from(tmpdir));
    }
    for root in workspace_write
        .writable_roots
        .iter()
        .map(PathBuf::from)
        .chain(args.add_dirs.iter().cloned())
    {
        let root = expand_home(&root, home.as_deref());
        let root = if root.is_absolute() { root } else { cwd.join(root) };
        let root = fs_err::canonicalize(&root)
            .map_err(Error::io(format!("--add-dir / writable_roots: {}", root.display())))?;
        writable_roots.push(root);
    }
    // Claude Code's `additionalDirectories`: one that does not exist is a warning, not an error
    // (the settings file is shared with another tool).
    for dir in &claude.directories {
        match fs_err::canonicalize(dir) {
            Ok(root) => writable_roots.push(root),
            Err(err) => warnings.push(format!("additionalDirectories: {err}")),
        }
    }

    let network = crate::network::NetworkSettings::resolve(config, &claude, modes.sandbox);
    let (project_rules, user_rules) = rules(loaded, args, cwd, &claude, &network)?;
    let mut extra_hidden: Vec<PathBuf> =
        vec![codecoder_home.join(codecoder_config::CREDENTIALS_FILE)];
    for path in config.sandbox.iter().flat_map(|s| s.hidden_paths.iter()) {
        extra_hidden.push(expand_home(Path::new(path), home.as_deref()));
    }
    // A path a `read(…)` deny rule names is hidden from commands too.
    let rule_context = codecoder_policy::CommandContext {
        cwd: cwd.to_owned(),
        writable_roots: Vec::new(),
        home: home.clone(),
    };
    extra_hidden.extend(project_rules.denied_read_paths(&rule_context));
    extra_hidden.extend(user_rules.denied_read_paths(&rule_context));
    let hidden_paths = match &home {
        Some(home) => codecoder_sandbox::default_hidden_paths(home, &extra_hidden),
        None => extra_hidden,
    };
    let sandbox_policy = SandboxPolicy {
        access: match modes.sandbox {
            SandboxMode::ReadOnly => FsAccess::ReadOnly,
            SandboxMode::WorkspaceWrite => FsAccess::WorkspaceWrite,
            SandboxMode::DangerFullAccess => FsAccess::FullAccess,
        },
        writable_roots: writable_roots.clone(),
        network: workspace_write.network_access.unwrap_or(false)
            && modes.sandbox == SandboxMode::WorkspaceWrite,
        network_proxy: None,
        hidden_paths: hidden_paths.clone(),
        protected_paths: vec![codecoder_home.to_owned()],
    };
    let confinement = match (&probe.backend, modes.sandbox) {
        (_, SandboxMode::DangerFullAccess) => Confinement::Unconfined,
        (Some(backend), _) => {
            let exe =
                std::env::current_exe().map_err(Error::io("finding the codecoder executable"))?;
            Confinement::Sandboxed(Arc::new(Sandbox::new(
                sandbox_policy.clone(),
                backend.clone(),
                exe,
            )))
        }
        (None, _) => Confinement::Unconfined,
    };
    let policy = codecoder_policy::Policy {
        modes,
        sandbox_active: matches!(confinement, Confinement::Sandboxed(_)),
        cwd: cwd.to_owned(),
        writable_roots: match modes.sandbox {
            SandboxMode::WorkspaceWrite => writable_roots,
            SandboxMode::ReadOnly | SandboxMode::DangerFullAccess => vec![cwd.to_owned()],
        },
        hidden_paths,
        home,
        protected_paths: vec![codecoder_home.to_owned()],
        project_rules,
        user_rules,
    };
    let permission = PermissionSwitch::new(
        args.permission_mode.or(claude.permission).unwrap_or(PermissionMode::Default),
    );
    Ok(Safety {
        network,
        modes,
        policy: Arc::new(ChainPolicy::with_permission(policy, permission.clone())),
        permission,
        confinement,
        escalation: EscalationSetting::new(escalation_for(modes)),
        probe,
        sandbox_policy,
        warnings,
        tools_protected_paths: (!modes.bypass && modes.sandbox != SandboxMode::DangerFullAccess)
            .then(|| vec![codecoder_home.to_owned()]),
        command_env: codecoder_sandbox::command_environment(
            std::env::vars_os(),
            &env_policy(config.shell_environment_policy.as_ref()),
        ),
    })
}

/// Which of the variables a login profile exports may go into the shell snapshot: those the
/// command environment policy would pass on had the agent had them (its excludes, default
/// excludes and `include_only`), so a key the profile exports is never written to disk.
/// Returns the filter and what identifies it (the policy it applies), which keys the shared
/// snapshot so that sessions whose filters differ never share one.
pub(crate) fn snapshot_name_filter(
    toml: Option<&codecoder_config::ShellEnvironmentPolicyToml>,
) -> (codecoder_tools::NameFilter, String) {
    let mut policy = env_policy(toml);
    policy.inherit = Inherit::All;
    policy.set.clear();
    let identity = format!("{policy:?}");
    let filter: codecoder_tools::NameFilter = Arc::new(move |name: &std::ffi::OsStr| {
        let one = [(name.to_owned(), std::ffi::OsString::new())];
        !codecoder_sandbox::command_environment(one, &policy).vars.is_empty()
    });
    (filter, identity)
}

/// `[shell_environment_policy]` as the sandbox crate's policy; codex's defaults where unset.
fn env_policy(toml: Option<&codecoder_config::ShellEnvironmentPolicyToml>) -> EnvPolicy {
    let mut policy = EnvPolicy::standard();
    let Some(toml) = toml else { return policy };
    if let Some(inherit) = toml.inherit {
        policy.inherit = inherit;
    }
    policy.ignore_default_excludes = toml.ignore_default_excludes.unwrap_or(false);
    policy.exclude.clone_from(&toml.exclude);
    policy.set.clone_from(&toml.set);
    policy.include_only.clone_from(&toml.include_only);
    policy
}

impl crate::Runtime {
    /// The sandbox and approval modes a session of this runtime starts under when its
    /// front-end asks for none of its own: what a protocol server allows its clients at most.
    pub fn modes(&self, interactive: bool) -> Modes {
        let config = &self.loaded.config;
        let preference =
            config.sandbox.as_ref().and_then(|s| s.backend).unwrap_or(BackendPreference::Auto);
        let backend = codecoder_sandbox::probe(preference).backend.is_some();
        resolve_modes(&self.overrides, &self.loaded, interactive, backend, None, &mut Vec::new())
    }
}

fn resolve_modes(
    args: &Overrides,
    loaded: &LoadedConfig,
    interactive: bool,
    backend: bool,
    claude_approval: Option<ApprovalMode>,
    warnings: &mut Vec<String>,
) -> Modes {
    if args.bypass {
        return Modes::BYPASS;
    }
    let default_approval = if interactive { ApprovalMode::OnRequest } else { ApprovalMode::Never };
    if args.full_auto {
        return Modes { approval: default_approval, ..Modes::FULL_AUTO };
    }
    let config = &loaded.config;
    let sandbox = match args.sandbox.or(config.sandbox_mode) {
        Some(mode) => mode,
        None if backend => SandboxMode::WorkspaceWrite,
        None => {
            warnings.push(
                "no sandbox backend works here, so the sandbox mode is read-only (pass \
                 `-s workspace-write` or `-s danger-full-access` to choose)"
                    .to_owned(),
            );
            SandboxMode::ReadOnly
        }
    };
    let approval =
        args.approval.or(config.approval_policy).or(claude_approval).unwrap_or(default_approval);
    Modes { sandbox, approval, bypass: false }
}

/// The project's rules (its config layer and its Claude Code settings) and the user's (every
/// other layer and `~/.claude/settings.json`), parsed.
fn rules(
    loaded: &LoadedConfig,
    overrides: &Overrides,
    cwd: &Path,
    claude: &ClaudePermissions,
    network: &crate::network::NetworkSettings,
) -> Result<(RuleSet, RuleSet)> {
    let root = codecoder_config::project_root(cwd);
    let mut project = (Vec::new(), Vec::new(), Vec::new());
    let mut user = (Vec::new(), Vec::new(), Vec::new());
    for (origin, layer) in &loaded.layers {
        let Some(rules) = &layer.permissions else { continue };
        let target = if matches!(origin, Origin::Project(_)) { &mut project } else { &mut user };
        target.0.extend(rules.allow.iter().cloned());
        target.1.extend(rules.ask.iter().cloned());
        target.2.extend(rules.deny.iter().cloned());
        // Each layer is checked on its own so an error names its file.
        let origin_rules = if matches!(origin, Origin::Project(_)) {
            RuleOrigin::Project { root: root.clone() }
        } else {
            RuleOrigin::User
        };
        RuleSet::parse(&rules.allow, &rules.ask, &rules.deny, origin_rules).map_err(|source| {
            Error::Rules { origin: origin.to_string(), source: Box::new(source) }
        })?;
    }
    for (layer, target, origin_rules) in [
        (&claude.project, &mut project, RuleOrigin::Project { root: root.clone() }),
        (&claude.user, &mut user, RuleOrigin::User),
    ] {
        let files: Vec<String> = layer.files.iter().map(|f| f.display().to_string()).collect();
        RuleSet::parse(&layer.allow, &layer.ask, &layer.deny, origin_rules).map_err(|source| {
            Error::Rules { origin: files.join(", "), source: Box::new(source) }
        })?;
        target.0.extend(layer.allow.iter().cloned());
        target.1.extend(layer.ask.iter().cloned());
        target.2.extend(layer.deny.iter().cloned());
    }
    // Rules given on the command line (`--allowedTools`, `--disallowedTools`) join the user's.
    RuleSet::parse(&overrides.allowed_tools, &[], &overrides.disallowed_tools, RuleOrigin::User)
        .map_err(|source| Error::Rules {
            origin: "--allowedTools/--disallowedTools".to_owned(),
            source: Box::new(source),
        })?;
    user.0.extend(overrides.allowed_tools.iter().cloned());
    user.2.extend(overrides.disallowed_tools.iter().cloned());
    // The managed network's hosts decide `web_fetch` as they decide commands: an allowed host
    // is fetched without asking, a denied one never.
    let (allow, deny) = network.web_fetch_rules();
    user.0.extend(allow);
    user.2.extend(deny);
    let merged = |origin: &str| {
        let origin = origin.to_owned();
        move |source| Error::Rules { origin, source: Box::new(source) }
    };
    let project = RuleSet::parse(&project.0, &project.1, &project.2, RuleOrigin::Project { root })
        .map_err(merged("the project's layers"))?;
    let user = RuleSet::parse(&user.0, &user.1, &user.2, RuleOrigin::User)
        .map_err(merged("the user's layers"))?;
    Ok((project, user))
}

fn expand_home(path: &Path, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~"), home) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => path.to_owned(),
    }
}

/// Every hook configured for this project: `[hooks]` of each config layer (the project's only
/// when trusted), `.codecoder/hooks.json`, `.claude/settings.json`, `.claude/settings.local.json`
/// `~/.claude/settings.json` and the enabled plugins' `hooks/hooks.json` (see
/// [`crate::plugins`]). Warnings go to `notices`. `overrides` may limit Claude Code's files
/// (`--setting-sources`) and add settings of their own (`--settings`).
pub(crate) fn load_hooks(
    loaded: &LoadedConfig,
    overrides: &Overrides,
    cwd: &Path,
    codecoder_home: &Path,
    notices: &mut Vec<Notice>,
) -> Result<Arc<HookSet>> {
    let mut table = serde_json::Map::new();
    let mut origin = None;
    for (layer_origin, layer) in &loaded.layers {
        for (event, groups) in &layer.hooks {
            let entry =
                table.entry(event.clone()).or_insert_with(|| serde_json::Value::Array(Vec::new()));
            if let serde_json::Value::Array(list) = entry {
                list.extend(groups.iter().filter_map(|g| serde_json::to_value(g).ok()));
            }
            origin.get_or_insert_with(|| PathBuf::from(layer_origin.to_string()));
        }
    }
    let config_hooks = origin.map(|origin| (serde_json::Value::Object(table), origin));
    let project_dir = codecoder_config::project_root(cwd);
    let home = std::env::var_os(codecoder_protocol::env::HOME).map(PathBuf::from);
    let chosen = overrides.claude_setting_sources.as_deref();
    let sources = HookSources {
        project_dir: project_dir.clone(),
        home: home.clone(),
        config_hooks,
        read_claude_settings: chosen.is_none(),
        project_trusted: loaded.project_trusted,
    };
    let (mut set, mut warnings) = HookSet::load(&sources)?;
    if let Some(chosen) = chosen {
        // Claude Code's order: local, project, user; the project's only when trusted.
        let claude = project_dir.join(".claude");
        let files = [
            ("local", Some(claude.join("settings.local.json")), true),
            ("project", Some(claude.join("settings.json")), true),
            ("user", home.map(|home| home.join(".claude").join("settings.json")), false),
        ];
        for (source, path, in_project) in files {
            let Some(path) = path else { continue };
            if chosen.iter().any(|c| c == source) && (!in_project || loaded.project_trusted) {
                if in_project {
                    set.add_project_settings_file(&path, &mut warnings)?;
                } else {
                    set.add_settings_file(&path, &mut warnings)?;
                }
            }
        }
    }
    if let Some(settings) = &overrides.claude_settings {
        set.add_settings(settings, Path::new("--settings"), &mut warnings)?;
    }
    if !overrides.trust_project_hooks {
        let approved = codecoder_hooks::approved_hooks(codecoder_home, &project_dir);
        let skipped = set.retain_approved(&approved);
        if !skipped.is_empty() {
            warnings.push(unreviewed_hooks_warning(&skipped));
        }
    }
    for plugin in crate::plugins::enabled(codecoder_home, &mut warnings) {
        // A broken plugin is the plugin's problem, not the session's.
        let mut files = vec![plugin.dir.join("hooks").join("hooks.json")];
        files.extend(crate::plugins::component_paths(&plugin.dir, "hooks", &mut warnings));
        let added =
            files.iter().try_for_each(|file| set.add_plugin_file(&plugin.dir, file, &mut warnings));
        if let Err(err) = added {
            warnings.push(format!("plugin `{}`: its hooks are skipped: {}", plugin.name, err));
        }
    }
    notices.extend(warnings.into_iter().map(Notice::Warning));
    Ok(Arc::new(set))
}

/// What a session says of the project hooks it skips: each one, and how to review them.
fn unreviewed_hooks_warning(skipped: &[codecoder_hooks::HookEntry]) -> String {
    use std::fmt::Write as _;
    let mut text = format!(
        "skipping {} project hook{} not reviewed yet (new, or changed since approved); \
         `codecoder hooks list` shows them, `codecoder hooks trust` approves them, \
         --trust-project-hooks runs them once:",
        skipped.len(),
        if skipped.len() == 1 { "" } else { "s" }
    );
    for hook in skipped {
        let _ = write!(
            text,
            "\n  {} {} [{}] {} from {}",
            hook.short_digest(),
            hook.event,
            hook.matcher,
            hook.command,
            hook.source.display()
        );
    }
    text
}

/// Every hook a session in `cwd` would find, the project's unreviewed ones included, and the
/// digests approved for the project: what `codecoder hooks list|trust` and `/hooks` show.
///
/// # Errors
/// A hooks file that cannot be read or parsed.
pub fn review_hooks(runtime: &crate::Runtime) -> Result<HookReview> {
    let overrides = Overrides { trust_project_hooks: true, ..runtime.overrides().clone() };
    let mut notices = Vec::new();
    let set =
        load_hooks(runtime.loaded(), &overrides, runtime.cwd(), runtime.home(), &mut notices)?;
    let root = codecoder_config::project_root(runtime.cwd());
    let approved = codecoder_hooks::approved_hooks(runtime.home(), &root);
    Ok(HookReview {
        root,
        hooks: set.entries(),
        approved,
        project_trusted: runtime.loaded().project_trusted,
    })
}

/// The hooks of a project and their states; see [`review_hooks`].
#[derive(Debug, Clone)]
pub struct HookReview {
    /// The project's root, which approvals are recorded for.
    pub root: PathBuf,
    /// Every hook, in event and configuration order.
    pub hooks: Vec<codecoder_hooks::HookEntry>,
    /// The digests approved for the project.
    pub approved: std::collections::BTreeSet<String>,
    /// Whether the project is trusted (untrusted, its files are not read at all).
    pub project_trusted: bool,
}

impl HookReview {
    /// The project's hooks that would not run: not approved yet.
    pub fn pending(&self) -> Vec<&codecoder_hooks::HookEntry> {
        self.hooks
            .iter()
            .filter(|hook| hook.project && !self.approved.contains(&hook.digest))
            .collect()
    }

    /// Every hook, one line each (`STATE DIGEST EVENT [MATCHER] COMMAND from FILE`, STATE
    /// `user`, `approved` or `pending`), and a last line saying how many wait for review.
    pub fn describe(&self) -> String {
        use std::fmt::Write as _;
        let mut text = String::new();
        if !self.project_trusted {
            let _ = writeln!(
                text,
                "{} is not trusted, so its hook files are not read (`codecoder trust`)",
                self.root.display()
            );
        }
        if self.hooks.is_empty() {
            text.push_str("no hooks configured\n");
        }
        for hook in &self.hooks {
            let state = match (hook.project, self.approved.contains(&hook.digest)) {
                (false, _) => "user",
                (true, true) => "approved",
                (true, false) => "pending",
            };
            let _ = writeln!(
                text,
                "{state:<8} {} {} [{}] {} from {}",
                hook.short_digest(),
                hook.event,
                hook.matcher,
                hook.command,
                hook.source.display()
            );
        }
        let pending = self.pending().len();
        if pending > 0 {
            let _ = writeln!(text, "{pending} project hook(s) wait for review");
        }
        text
    }

    /// Records every pending hook as approved; returns those it approved.
    ///
    /// # Errors
    /// The store of approved hooks cannot be read or written.
    pub fn approve_pending(&self, home: &Path) -> Result<Vec<codecoder_hooks::HookEntry>> {
        let pending: Vec<codecoder_hooks::HookEntry> =
            self.pending().into_iter().cloned().collect();
        let digests: Vec<String> = pending.iter().map(|hook| hook.digest.clone()).collect();
        if !digests.is_empty() {
            codecoder_hooks::approve_hooks(home, &self.root, &digests)?;
        }
        Ok(pending)
    }
}

/// The runner of a session's hook scripts, which serves the kernel's `Hooks` seam: `None` when
/// no hook is configured (nothing to run).
pub(crate) fn kernel_hooks(
    set: &Arc<HookSet>,
    session_id: String,
    transcript_path: Option<&Path>,
    cwd: &Path,
    permission_mode: &str,
    permission: PermissionSwitch,
    sessions_dir: PathBuf,
) -> Option<HookRunner> {
    if set.is_empty() {
        return None;
    }
    let common = CommonInput {
        session_id,
        transcript_path: transcript_path.map(Path::to_owned).unwrap_or_default(),
        cwd: cwd.to_owned(),
        permission_mode: permission_mode.to_owned(),
    };
    Some(
        HookRunner::new(Arc::clone(set), common)
            .with_permission(permission)
            .with_sessions_dir(sessions_dir),
    )
}
