//! Agent definitions: `<place>/.codecoder/agents/*.md` and `.claude/agents/*.md`, Claude Code's
//! subagent files. The frontmatter names and describes the agent and limits its tools; the
//! body is its system prompt.

use std::path::{Path, PathBuf};

use crate::discovery::{Roots, Scope, markdown_files};
use crate::error::Warning;
use crate::frontmatter::{self, Value};

/// A subagent type defined in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDef {
    /// `name` (the file's stem when missing).
    pub name: String,
    /// `description`: when to delegate to it.
    pub description: String,
    /// `tools`: the allow-list (our names or Claude's); all tools when `None`.
    pub tools: Option<Vec<String>>,
    /// `disallowedTools`: removed from what it may use.
    pub disallowed_tools: Vec<String>,
    /// `model` (`inherit` is `None`).
    pub model: Option<String>,
    /// `permissionMode`.
    pub permission_mode: Option<String>,
    /// `maxTurns`.
    pub max_turns: Option<u32>,
    /// `skills`: skills whose instructions are preloaded into its prompt.
    pub skills: Vec<String>,
    /// `mcpServers` given as names of configured servers: their tools join its `tools`.
    pub mcp_servers: Vec<String>,
    /// The system prompt.
    pub instructions: String,
    /// The file.
    pub path: std::path::PathBuf,
    /// Where it was found.
    pub scope: Scope,
}

/// Parses the agent file at `path`.
///
/// # Errors
/// A warning naming the line when the frontmatter does not parse or the description is missing.
pub fn parse_agent(path: &Path, text: &str, scope: Scope) -> Result<AgentDef, Warning> {
    let warn =
        |line: Option<usize>, message: String| Warning { path: path.to_owned(), line, message };
    let doc = frontmatter::parse(text).map_err(|err| warn(Some(err.line), err.message))?;
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = doc.str("name").unwrap_or(stem);
    let Some(description) = doc.str("description") else {
        return Err(warn(doc.line("description").or(Some(1)), "no description: skipped".into()));
    };
    let max_turns = match doc.str("maxTurns") {
        Some(text) => Some(text.parse::<u32>().map_err(|_| {
            warn(doc.line("maxTurns"), format!("maxTurns `{text}` is not a whole number"))
        })?),
        None => None,
    };
    let list = |key: &str| doc.get(key).map(Value::as_list);
    Ok(AgentDef {
        name,
        description,
        tools: list("tools").filter(|tools| !tools.is_empty()),
        disallowed_tools: list("disallowedTools").unwrap_or_default(),
        model: doc.str("model").filter(|model| model != "inherit"),
        permission_mode: doc.str("permissionMode"),
        max_turns,
        skills: list("skills").unwrap_or_default(),
        mcp_servers: list("mcpServers").unwrap_or_default(),
        instructions: doc.body.trim().to_owned(),
        path: path.to_owned(),
        scope,
    })
}

/// The agent definitions under `roots` (first of each name wins) and the warnings.
pub fn load_agents(roots: &Roots) -> (Vec<AgentDef>, Vec<Warning>) {
    load_agents_in(roots.dirs("agents"))
}

/// The definitions in `dirs` (highest precedence first), as [`load_agents`] reads them.
pub fn load_agents_in(dirs: Vec<(PathBuf, Scope)>) -> (Vec<AgentDef>, Vec<Warning>) {
    let mut agents: Vec<AgentDef> = Vec::new();
    let mut warnings = Vec::new();
    for (dir, scope) in dirs {
        for path in markdown_files(&dir) {
            let parsed = fs_err::read_to_string(&path)
                .map_err(|err| Warning { path: path.clone(), line: None, message: err.to_string() })
                .and_then(|text| parse_agent(&path, &text, scope));
            match parsed {
                Ok(agent) => match agents.iter().find(|a| a.name == agent.name) {
                    Some(winner) => warnings.push(Warning {
                        path: agent.path.clone(),
                        line: None,
                        message: format!(
                            "agent `{}` is shadowed by {}",
                            agent.name,
                            winner.path.display()
                        ),
                    }),
                    None => agents.push(agent),
                },
                Err(warning) => warnings.push(warning),
            }
        }
    }
    (agents, warnings)
}
