//! Skills, agent definitions and custom commands in a session: found at session start (project
//! from the working directory up to the repository root, then the user's), the skill catalogue
//! for the prompt, the `agent` tool's types, and `SkillHooks`, which expands `$name` and
//! `/command` in a prompt and pre-approves an active skill's `allowed-tools`.
//!
//! Invariants: a bad file is a warning and never stops the session; a skill's body reaches the
//! model only on activation (the `skill` tool, `$name`); in an untrusted project, the project's
//! skills do not pre-approve tools.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use codecoder_hooks::mapping::claude_tool_name;
use codecoder_kernel::{
    AgentType, ApprovalPolicy, ApprovalQuery, HookScope, HookVerdict, Hooks, PolicyAnswer,
    PreToolUse, PromptSubmit, StopHook, ToolRegistry,
};
use codecoder_policy::{ChainPolicy, PermissionMode};
use codecoder_protocol::{DecidedBy, ToolCall, Verdict};
use codecoder_skills::{
    ActiveSkills, AgentDef, Catalogue, Command, Roots, Scope, Skill, SkillStore, Warning,
};

use crate::Notice;

/// The catalogue's room in the prompt, in bytes (about 2,000 tokens).
pub(crate) const CATALOGUE_BUDGET: usize = 8_000;

/// The subagent type that always exists.
pub(crate) const GENERAL_PURPOSE: &str = "general-purpose";

/// What a session found.
pub(crate) struct Extensions {
    pub(crate) store: Arc<SkillStore>,
    pub(crate) skills: BTreeMap<String, Skill>,
    pub(crate) agents: Vec<AgentDef>,
    pub(crate) commands: Vec<Command>,
    pub(crate) warnings: Vec<Warning>,
}

/// The folders searched from `cwd`, with `codecoder_home` and the user's home (`$HOME`).
pub(crate) fn roots(cwd: &Path, codecoder_home: &Path) -> Roots {
    let home = std::env::var_os(codecoder_protocol::env::HOME).map(PathBuf::from);
    Roots::standard(cwd, Some(codecoder_home), home.as_deref())
}

/// Finds the skills, agents and commands of a session in `cwd`.
pub(crate) fn load(cwd: &Path, codecoder_home: &Path) -> Extensions {
    let mut roots = roots(cwd, codecoder_home);
    let mut plugin_warnings = Vec::new();
    let plugins = crate::plugins::enabled(codecoder_home, &mut plugin_warnings);
    roots.plugins = plugins.iter().map(|p| (p.name.clone(), p.dir.clone())).collect();
    let store = Arc::new(SkillStore::new(roots.clone()));
    let (skills, mut warnings) = store.scan();
    let (agents, agent_warnings) = codecoder_skills::load_agents(&roots);
    let (commands, command_warnings) = codecoder_skills::load_commands(&roots);
    warnings.extend(agent_warnings);
    warnings.extend(command_warnings);
    let mut extensions = Extensions { store, skills, agents, commands, warnings };
    for plugin in &plugins {
        extensions.add_plugin(plugin);
    }
    extensions.warnings.extend(plugin_warnings.into_iter().map(|message| Warning {
        path: codecoder_home.join("plugins.json"),
        line: None,
        message,
    }));
    extensions
}

impl Extensions {
    /// Adds the `commands/` and `agents/` of `plugin` (and the folders its manifest adds),
    /// named `plugin:name`; the session's own
    /// definitions win a clash. (Its skills come through the store's roots.)
    fn add_plugin(&mut self, plugin: &crate::plugins::Plugin) {
        let mut manifest_warnings = Vec::new();
        let mut dirs = |kind: &str| {
            let mut dirs = vec![(plugin.dir.join(kind), Scope::User)];
            for path in crate::plugins::component_paths(&plugin.dir, kind, &mut manifest_warnings) {
                dirs.push((path, Scope::User));
            }
            dirs
        };
        let (commands, command_warnings) = codecoder_skills::load_commands_in(dirs("commands"));
        let (agents, agent_warnings) = codecoder_skills::load_agents_in(dirs("agents"));
        let manifest = plugin.dir.join(".claude-plugin").join("plugin.json");
        self.warnings.extend(manifest_warnings.into_iter().map(|message| Warning {
            path: manifest.clone(),
            line: None,
            message,
        }));
        self.warnings.extend(command_warnings);
        self.warnings.extend(agent_warnings);
        for mut command in commands {
            command.name = format!("{}:{}", plugin.name, command.name);
            if !self.commands.iter().any(|known| known.name == command.name) {
                self.commands.push(command);
            }
        }
        for mut agent in agents {
            agent.name = format!("{}:{}", plugin.name, agent.name);
            if !self.agents.iter().any(|known| known.name == agent.name) {
                self.agents.push(agent);
            }
        }
    }

    /// The catalogue section's text, ranked against `query` when it must be cut.
    pub(crate) fn catalogue(&self, query: &str) -> String {
        let skills: Vec<&Skill> = self.skills.values().collect();
        Catalogue::select(&skills, query, CATALOGUE_BUDGET).text
    }

    /// The `agent` tool's types: the built-in general-purpose one, then the definitions, with
    /// their tool lists in `registry`'s names. Unknown tool names are notices.
    pub(crate) fn agent_types(
        &self,
        registry: &ToolRegistry,
        aliases: &BTreeMap<String, String>,
        notices: &mut Vec<Notice>,
    ) -> Vec<AgentType> {
        let mut types = Vec::new();
        if !self.agents.iter().any(|agent| agent.name == GENERAL_PURPOSE) {
            types.push(AgentType {
                name: GENERAL_PURPOSE.to_owned(),
                description: "For research, code search and multi-step tasks that would fill your own context; it has your tools.".to_owned(),
                instructions: String::new(),
                tools: None,
                model: None,
                max_steps: None,
            });
        }
        for agent in &self.agents {
            let mut resolve = |names: &[String]| -> Vec<String> {
                let mut ours = Vec::new();
                for name in names {
                    match our_tool_name(registry, name) {
                        Some(found) => ours.push(found),
                        None => notices.push(Notice::Warning(format!(
                            "{}: agent `{}` names tool `{name}`, which this session does not have",
                            agent.path.display(),
                            agent.name
                        ))),
                    }
                }
                ours
            };
            let mut tools = agent.tools.as_ref().map(|names| resolve(names));
            if !agent.disallowed_tools.is_empty() {
                let denied = resolve(&agent.disallowed_tools);
                let all: Vec<String> =
                    registry.tools().iter().map(|tool| tool.name().to_owned()).collect();
                tools = Some(
                    tools
                        .unwrap_or(all)
                        .into_iter()
                        .filter(|name| !denied.contains(name))
                        .collect(),
                );
            }
            // The tools of the MCP servers it names join as they start (they are late tools).
            if let Some(tools) = &mut tools {
                tools.extend(agent.mcp_servers.iter().map(|server| format!("mcp__{server}__*")));
            }
            let mut instructions = agent.instructions.clone();
            for name in &agent.skills {
                match self.skills.get(name) {
                    Some(skill) => {
                        instructions.push_str("\n\n");
                        instructions.push_str(&codecoder_skills::activation_text(skill, "", ""));
                    }
                    None => notices.push(Notice::Warning(format!(
                        "{}: agent `{}` preloads skill `{name}`, which is not installed",
                        agent.path.display(),
                        agent.name
                    ))),
                }
            }
            let model = agent.model.as_deref().and_then(|named| {
                let (model, unmapped) = resolve_model(named, aliases);
                if unmapped {
                    notices.push(Notice::Warning(format!(
                        "{}: agent `{}` asks for model `{named}`, which `[agent.model_aliases]` does not map for this provider: it uses the session's model",
                        agent.path.display(),
                        agent.name
                    )));
                }
                model
            });
            types.push(AgentType {
                name: agent.name.clone(),
                description: agent.description.clone(),
                instructions,
                tools,
                model,
                max_steps: agent.max_turns,
            });
        }
        types
    }
}

/// An agent definition's `permissionMode`, which its subagent's calls are decided in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AgentMode {
    /// `default`, `acceptEdits` or `plan`: the chain in that mode instead of the session's.
    Chain(PermissionMode),
    /// `bypassPermissions`: what would be asked runs (rule and hook denies still hold).
    Bypass,
    /// `dontAsk`: what would be asked is denied.
    DontAsk,
}

impl AgentMode {
    /// The mode Claude Code spells `name`.
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "default" => Self::Chain(PermissionMode::Default),
            "acceptEdits" => Self::Chain(PermissionMode::AcceptEdits),
            "plan" => Self::Chain(PermissionMode::Plan),
            "bypassPermissions" => Self::Bypass,
            "dontAsk" => Self::DontAsk,
            _ => return None,
        })
    }
}

/// The session's approval chain, with the calls of subagents whose definition names a
/// `permissionMode` decided in that mode. As in Claude Code, a session bypassing permissions
/// keeps bypassing in every subagent.
pub(crate) struct AgentModePolicy {
    pub(crate) chain: Arc<ChainPolicy>,
    /// Agent type name → its mode.
    pub(crate) modes: BTreeMap<String, AgentMode>,
}

impl ApprovalPolicy for AgentModePolicy {
    fn decide(&self, query: &ApprovalQuery<'_>) -> PolicyAnswer {
        let mode = query.agent_type.and_then(|name| self.modes.get(name));
        let Some(&mode) = mode.filter(|_| !self.chain.modes().bypass) else {
            return self.chain.decide(query);
        };
        let name = query.agent_type.unwrap_or_default();
        let session_mode = self.chain.permission().get();
        match mode {
            AgentMode::Chain(mode) => self.chain.decide_in(mode, query),
            AgentMode::Bypass => {
                let answer = self.chain.decide_in(session_mode, query);
                if answer.decision != Verdict::Ask {
                    return answer;
                }
                PolicyAnswer {
                    decision: Verdict::Allow,
                    decided_by: DecidedBy::Mode,
                    reason: Some(format!(
                        "agent `{name}` runs in bypassPermissions: nothing it does is asked"
                    )),
                }
            }
            AgentMode::DontAsk => {
                let answer = self.chain.decide_in(session_mode, query);
                if answer.decision != Verdict::Ask {
                    return answer;
                }
                PolicyAnswer {
                    decision: Verdict::Deny,
                    decided_by: DecidedBy::Mode,
                    reason: Some(format!(
                        "agent `{name}` runs in dontAsk: a call that would be asked about is denied"
                    )),
                }
            }
        }
    }
}

impl Extensions {
    /// The `permissionMode` of each definition that names one (unknown modes are notices),
    /// leaving out `replaced` (types a front-end defined over a definition of the same name).
    pub(crate) fn agent_modes(
        &self,
        replaced: &[String],
        notices: &mut Vec<Notice>,
    ) -> BTreeMap<String, AgentMode> {
        let mut modes = BTreeMap::new();
        for agent in &self.agents {
            let Some(name) = &agent.permission_mode else { continue };
            if replaced.contains(&agent.name) {
                continue;
            }
            match AgentMode::parse(name) {
                Some(mode) => {
                    modes.insert(agent.name.clone(), mode);
                }
                None => notices.push(Notice::Warning(format!(
                    "{}: agent `{}` has permissionMode `{name}`, which is not one of default, acceptEdits, plan, bypassPermissions, dontAsk: the session's mode applies",
                    agent.path.display(),
                    agent.name
                ))),
            }
        }
        modes
    }
}

/// Claude Code's model aliases in agent definitions.
const MODEL_ALIASES: [&str; 3] = ["sonnet", "opus", "haiku"];

/// The aliases of a session with provider `provider_id`: the provider's defaults (Anthropic's
/// current models on `anthropic`), then `configured` (`[agent.model_aliases]`) over them.
pub(crate) fn model_aliases(
    provider_id: &str,
    configured: Option<&BTreeMap<String, String>>,
) -> BTreeMap<String, String> {
    let mut aliases = BTreeMap::new();
    if provider_id == "anthropic" {
        for (alias, model) in [
            ("sonnet", "claude-sonnet-4-6"),
            ("opus", "claude-opus-4-7"),
            ("haiku", "claude-haiku-4-5"),
        ] {
            aliases.insert(alias.to_owned(), model.to_owned());
        }
    }
    if let Some(configured) = configured {
        aliases.extend(configured.iter().map(|(alias, model)| (alias.clone(), model.clone())));
    }
    aliases
}

/// The model an agent definition's `model` names through `aliases`: `inherit` is the parent's
/// (`None`); an alias maps through the table (any name the table holds, Claude Code's three
/// included); another name is a model id. The flag is true for one of Claude Code's aliases the
/// table does not map (the parent's model is used then, with a warning).
pub(crate) fn resolve_model(
    model: &str,
    aliases: &BTreeMap<String, String>,
) -> (Option<String>, bool) {
    if model == "inherit" {
        return (None, false);
    }
    match aliases.get(model) {
        Some(mapped) if mapped == "inherit" => (None, false),
        Some(mapped) => (Some(mapped.clone()), false),
        None if MODEL_ALIASES.contains(&model) => (None, true),
        None => (Some(model.to_owned()), false),
    }
}

/// Our name of the tool `name` (ours or Claude's; `Bash(git:*)` is `Bash`), if `registry` has it.
fn our_tool_name(registry: &ToolRegistry, name: &str) -> Option<String> {
    let base = name.split('(').next().unwrap_or(name).trim();
    if matches!(base, "Agent" | "Task") {
        return registry.get("agent").map(|tool| tool.name().to_owned());
    }
    registry
        .tools()
        .iter()
        .find(|tool| tool.name() == base || claude_tool_name(tool.name()) == base)
        .map(|tool| tool.name().to_owned())
}

/// Whether an `allowed-tools` entry covers `call`: the tool's name (ours or Claude's), with an
/// optional `(prefix*)` or `(prefix:*)` the call's `command` must start with.
pub(crate) fn covers(entry: &str, call: &ToolCall) -> bool {
    let (base, pattern) = match entry.split_once('(') {
        Some((base, rest)) => (base.trim(), Some(rest.trim_end_matches(')'))),
        None => (entry.trim(), None),
    };
    if base != call.name && base != claude_tool_name(&call.name) {
        return false;
    }
    match pattern {
        None => true,
        Some(pattern) => {
            let prefix = pattern.trim_end_matches('*').trim_end_matches(':');
            let command = call.args["command"].as_str().unwrap_or_default().trim_start();
            pattern == "*" || command == prefix || command.starts_with(&format!("{prefix} "))
        }
    }
}

/// Skills, hooks the session stacks after the person's (`HookStack`): `$name` and `/command` in
/// a prompt add the skill's or the command's text to it; an active skill's `allowed-tools` skip
/// the prompt for those calls until the turn ends (an allow that a hook's ask or deny before it
/// outweighs). Its work is quick and never blocks.
pub(crate) struct SkillLayer {
    pub(crate) store: Arc<SkillStore>,
    pub(crate) commands: Vec<Command>,
    pub(crate) active: ActiveSkills,
    pub(crate) session_id: String,
}

impl Hooks for SkillLayer {
    fn runs_inline(&self) -> bool {
        true
    }

    fn pre_tool_use(&self, _scope: HookScope<'_>, call: &ToolCall) -> PreToolUse {
        if !self.active.allowed_tools().iter().any(|entry| covers(entry, call)) {
            return PreToolUse::default();
        }
        PreToolUse {
            verdict: Some(HookVerdict {
                decision: codecoder_protocol::Verdict::Allow,
                reason: Some("pre-approved by an active skill's allowed-tools".to_owned()),
            }),
            ..PreToolUse::default()
        }
    }

    fn user_prompt_submit(&self, scope: HookScope<'_>, prompt: &str) -> PromptSubmit {
        let mut answer = PromptSubmit::default();
        if scope.depth > 0 {
            return answer;
        }
        if let Some(text) =
            codecoder_skills::expand_command(prompt, &self.commands, &self.session_id)
        {
            answer.context.push(text);
        }
        if !prompt.contains('$') {
            return answer;
        }
        // Found again: a file may have changed since the session started (unchanged files
        // are not read again).
        let (skills, _) = self.store.scan();
        let (mentioned, arguments) = codecoder_skills::expand_mentions(prompt, &skills);
        for skill in mentioned {
            answer.context.push(codecoder_skills::activation_text(
                skill,
                &arguments,
                &self.session_id,
            ));
            self.active.activate(skill.clone());
        }
        answer
    }

    fn stop(&self, scope: HookScope<'_>, _stop_hook_active: bool, _last: &str) -> StopHook {
        if scope.depth == 0 {
            self.active.clear();
        }
        StopHook::default()
    }
}

/// `codecoder doctor`'s lines on skills, agents and commands: each with its file, then the
/// warnings.
pub(crate) fn write_report(
    found: &Extensions,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let scope = |scope: Scope| match scope {
        Scope::Project => "project",
        Scope::User => "user",
    };
    writeln!(out, "skills:")?;
    if found.skills.is_empty() {
        writeln!(out, "  (none)")?;
    }
    for skill in found.skills.values() {
        let only_person = if skill.disable_model_invocation { ", the person only" } else { "" };
        writeln!(
            out,
            "  {} ({}{only_person}): {}",
            skill.name,
            scope(skill.scope),
            skill.path.display()
        )?;
    }
    writeln!(out, "agents:")?;
    writeln!(out, "  {GENERAL_PURPOSE} (built in)")?;
    for agent in &found.agents {
        writeln!(out, "  {} ({}): {}", agent.name, scope(agent.scope), agent.path.display())?;
    }
    writeln!(out, "commands:")?;
    if found.commands.is_empty() {
        writeln!(out, "  (none)")?;
    }
    for command in &found.commands {
        writeln!(
            out,
            "  /{} ({}): {}",
            command.name,
            scope(command.scope),
            command.path.display()
        )?;
    }
    for warning in &found.warnings {
        writeln!(out, "  warning: {warning}")?;
    }
    Ok(())
}

impl crate::Runtime {
    /// What a person may type to activate something: the user-invocable skills' names (for
    /// `$name`) and the custom commands' names (for `/name`), each sorted.
    pub fn invocables(&self) -> (Vec<String>, Vec<String>) {
        let found = load(&self.cwd, &self.home);
        let skills = found
            .skills
            .values()
            .filter(|skill| skill.user_invocable)
            .map(|skill| skill.name.clone())
            .collect();
        let mut commands: Vec<String> = found.commands.into_iter().map(|c| c.name).collect();
        commands.sort();
        (skills, commands)
    }
}
