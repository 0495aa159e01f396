//! One skill: `SKILL.md`'s frontmatter (the Agent Skills fields and Claude Code's extensions)
//! and its body.
//!
//! Lenient like the integrator guide asks: a missing or empty description, or frontmatter that
//! does not parse, skips the skill; a name that differs from its folder, or is not
//! `[a-z0-9-]{1,64}`, is only a warning (the folder's name is used).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::discovery::Scope;
use crate::error::Warning;
use crate::frontmatter::{self, Value};

/// Descriptions longer than this are cut in the catalogue (Claude Code's listing limit).
pub(crate) const MAX_LISTING_CHARS: usize = 1_536;

/// A discovered skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name (the folder's).
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// Claude Code's `when_to_use`: more on when it applies.
    pub when_to_use: Option<String>,
    /// `license`.
    pub license: Option<String>,
    /// `compatibility`.
    pub compatibility: Option<String>,
    /// `metadata`.
    pub metadata: BTreeMap<String, String>,
    /// `allowed-tools`: tools pre-approved while the skill is active (Claude names accepted).
    pub allowed_tools: Vec<String>,
    /// `disable-model-invocation`: only the person activates it; it is not in the catalogue.
    pub disable_model_invocation: bool,
    /// `user-invocable` (default true): the person may activate it with `$name`.
    pub user_invocable: bool,
    /// `argument-hint`.
    pub argument_hint: Option<String>,
    /// `arguments`: named positional arguments (`$name` in the body).
    pub arguments: Vec<String>,
    /// `model`.
    pub model: Option<String>,
    /// The SKILL.md file.
    pub path: PathBuf,
    /// The skill's folder (its bundled files are relative to it).
    pub dir: PathBuf,
    /// Where it was found.
    pub scope: Scope,
    /// The instructions, loaded on activation.
    pub body: String,
}

impl Skill {
    /// What the catalogue says of it: the description, then `when_to_use`, cut at the listing
    /// limit.
    pub fn listing(&self) -> String {
        let mut text = self.description.clone();
        if let Some(when) = &self.when_to_use {
            text.push_str(" When to use: ");
            text.push_str(when);
        }
        let text = text.replace('\n', " ");
        if text.chars().count() > MAX_LISTING_CHARS {
            let mut cut: String = text.chars().take(MAX_LISTING_CHARS - 1).collect();
            cut.push('…');
            cut
        } else {
            text
        }
    }
}

/// Whether `name` follows the Agent Skills rule.
pub(crate) fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// Parses SKILL.md at `path` (text `text`) in folder `dir`: the skill and the warnings that do
/// not skip it, or the warning that does.
pub fn parse_skill(
    path: &Path,
    text: &str,
    scope: Scope,
) -> Result<(Skill, Vec<Warning>), Warning> {
    let warn =
        |line: Option<usize>, message: String| Warning { path: path.to_owned(), line, message };
    let doc = frontmatter::parse(text).map_err(|err| warn(Some(err.line), err.message))?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let folder = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut warnings = Vec::new();
    let name = match doc.str("name") {
        Some(name) if name == folder => name,
        Some(name) => {
            warnings.push(warn(
                doc.line("name"),
                format!("the name `{name}` differs from its folder `{folder}`; using `{folder}`"),
            ));
            folder.clone()
        }
        None => folder.clone(),
    };
    if !valid_name(&name) {
        warnings.push(warn(
            doc.line("name"),
            format!(
                "`{name}` is not 1-64 characters of lowercase letters, digits and single hyphens"
            ),
        ));
    }
    let Some(description) = doc.str("description") else {
        return Err(warn(doc.line("description").or(Some(1)), "no description: skipped".into()));
    };
    let metadata = match doc.get("metadata") {
        Some(Value::Map(map)) => map.clone(),
        _ => BTreeMap::new(),
    };
    let flag = |key: &str, default: bool| doc.get(key).and_then(Value::as_bool).unwrap_or(default);
    let skill = Skill {
        name,
        description,
        when_to_use: doc.str("when_to_use").or_else(|| doc.str("when-to-use")),
        license: doc.str("license"),
        compatibility: doc.str("compatibility"),
        metadata,
        allowed_tools: doc.get("allowed-tools").map(Value::as_list).unwrap_or_default(),
        disable_model_invocation: flag("disable-model-invocation", false),
        user_invocable: flag("user-invocable", true),
        argument_hint: doc.str("argument-hint"),
        arguments: doc.get("arguments").map(Value::as_list).unwrap_or_default(),
        model: doc.str("model").filter(|m| m != "inherit"),
        path: path.to_owned(),
        dir,
        scope,
        body: doc.body.trim_start_matches(['\n', '\r']).to_owned(),
    };
    Ok((skill, warnings))
}
