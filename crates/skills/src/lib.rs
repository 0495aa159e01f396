//! Agent Skills, agent definitions and custom commands (design.md "Skills and subagents"):
//! discovery in the project's and the user's folders, their frontmatter, the catalogue that
//! goes in the system prompt, and the `skill` tool that activates one.
//!
//! Progressive disclosure: a session's prompt lists each skill's name and description (within
//! a budget; over it, the skills that rank best against the conversation); a skill's body
//! enters the conversation only when it is activated (the `skill` tool, or `$name` in a
//! prompt); its bundled files only when the model reads them.
//!
//! Invariants:
//! - A file that cannot be read or parsed is a `Warning` naming the file and line, never an
//!   error: the skill is skipped and the session goes on.
//! - Project definitions win over the user's on a name collision (the shadowing is a warning);
//!   within the project, the folder nearer the working directory wins.
//! - Files are parsed again only when their modification time or size changed.
//! - Nothing here spawns a process or prints.

mod agents;
mod catalogue;
mod commands;
mod discovery;
mod error;
pub mod frontmatter;
mod skill;
mod substitute;
mod tool;

pub use agents::{AgentDef, load_agents, load_agents_in, parse_agent};
pub use catalogue::{Catalogue, bm25_rank};
pub use commands::{Command, expand_command, load_commands, load_commands_in};
pub use discovery::{Roots, Scope, SkillStore};
pub use error::{Error, Warning};
pub use skill::{Skill, parse_skill};
pub use substitute::{activation_text, expand_mentions, substitute};
pub use tool::{ActiveSkills, SkillTool};

#[cfg(test)]
mod tests;
