//! Custom slash commands: `<place>/.codecoder/commands/*.md` and `.claude/commands/*.md`. A
//! prompt `/name args` becomes the command's body with `$ARGUMENTS` and `$1…` substituted.

use std::path::{Path, PathBuf};

use crate::discovery::{Roots, Scope, markdown_files};
use crate::error::Warning;
use crate::frontmatter;
use crate::substitute::substitute;

/// A custom command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The name (the file's stem).
    pub name: String,
    /// `description`, else the body's first line.
    pub description: String,
    /// `argument-hint`.
    pub argument_hint: Option<String>,
    /// The prompt template.
    pub body: String,
    /// The file.
    pub path: PathBuf,
    /// Where it was found.
    pub scope: Scope,
}

fn parse_command(path: &Path, text: &str, scope: Scope) -> Result<Command, Warning> {
    let doc = frontmatter::parse(text).map_err(|err| Warning {
        path: path.to_owned(),
        line: Some(err.line),
        message: err.message,
    })?;
    let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let body = doc.body.trim().to_owned();
    let description = doc
        .str("description")
        .unwrap_or_else(|| body.lines().next().unwrap_or_default().trim().to_owned());
    Ok(Command {
        name,
        description,
        argument_hint: doc.str("argument-hint"),
        body,
        path: path.to_owned(),
        scope,
    })
}

/// The commands under `roots` (first of each name wins) and the warnings.
pub fn load_commands(roots: &Roots) -> (Vec<Command>, Vec<Warning>) {
    load_commands_in(roots.dirs("commands"))
}

/// The definitions in `dirs` (highest precedence first), as [`load_commands`] reads them.
pub fn load_commands_in(dirs: Vec<(PathBuf, Scope)>) -> (Vec<Command>, Vec<Warning>) {
    let mut commands: Vec<Command> = Vec::new();
    let mut warnings = Vec::new();
    for (dir, scope) in dirs {
        for path in markdown_files(&dir) {
            let parsed = fs_err::read_to_string(&path)
                .map_err(|err| Warning { path: path.clone(), line: None, message: err.to_string() })
                .and_then(|text| parse_command(&path, &text, scope));
            match parsed {
                Ok(command) if commands.iter().any(|c| c.name == command.name) => {
                    warnings.push(Warning {
                        path: command.path.clone(),
                        line: None,
                        message: format!("command `/{}` is shadowed", command.name),
                    });
                }
                Ok(command) => commands.push(command),
                Err(warning) => warnings.push(warning),
            }
        }
    }
    (commands, warnings)
}

/// The prompt `prompt` becomes when it starts with `/name` of one of `commands`; `None` when
/// it does not.
pub fn expand_command(prompt: &str, commands: &[Command], session_id: &str) -> Option<String> {
    let rest = prompt.trim_start().strip_prefix('/')?;
    let (name, arguments) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let command = commands.iter().find(|command| command.name == name)?;
    Some(substitute(&command.body, arguments.trim(), None, session_id, &[], 1))
}
