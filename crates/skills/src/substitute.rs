//! Substitutions in an activated skill's or command's body, and `$name` mentions in a prompt.
//!
//! `$ARGUMENTS` is the whole argument text; `$0`, `$1`, … (and `$ARGUMENTS[N]`) its
//! whitespace-separated words (`$0` the first, as Claude Code counts; commands also accept `$1`
//! as the first, see `commands`); `${CLAUDE_SKILL_DIR}` the skill's folder;
//! `${CLAUDE_SESSION_ID}` the session. A body that never says `$ARGUMENTS` gets non-empty
//! arguments appended, so they are not lost.

use std::collections::BTreeMap;
use std::path::Path;

use crate::skill::Skill;

/// `body` with the substitutions made; `first_index` is the number of the first positional
/// argument (0 for skills, 1 for commands).
pub fn substitute(
    body: &str,
    arguments: &str,
    dir: Option<&Path>,
    session_id: &str,
    named: &[String],
    first_index: usize,
) -> String {
    let words: Vec<&str> = arguments.split_whitespace().collect();
    let mut out = body.to_owned();
    if let Some(dir) = dir {
        out = out.replace("${CLAUDE_SKILL_DIR}", &dir.to_string_lossy());
    }
    out = out.replace("${CLAUDE_SESSION_ID}", session_id);
    // Indexed forms first, highest index first, so `$10` is not read as `$1` then `0`.
    let before = out.clone();
    for index in (0..words.len()).rev() {
        let word = words[index];
        out = out.replace(&format!("$ARGUMENTS[{index}]"), word);
        out = out.replace(&format!("${}", index + first_index), word);
    }
    for (index, name) in named.iter().enumerate() {
        out = out.replace(&format!("${name}"), words.get(index).copied().unwrap_or_default());
    }
    if out.contains("$ARGUMENTS") {
        out = out.replace("$ARGUMENTS", arguments);
    } else if !arguments.trim().is_empty() && out == before {
        out = format!("{}\n\nARGUMENTS: {}", out.trim_end(), arguments.trim());
    }
    out
}

/// What the model is given when `skill` is activated with `arguments`.
pub fn activation_text(skill: &Skill, arguments: &str, session_id: &str) -> String {
    let body =
        substitute(&skill.body, arguments, Some(&skill.dir), session_id, &skill.arguments, 0);
    format!(
        "<skill name=\"{}\" dir=\"{}\">\nBase directory for this skill: {}\n(its files are relative to it)\n\n{}\n</skill>",
        skill.name,
        skill.dir.display(),
        skill.dir.display(),
        body.trim_end()
    )
}

/// The skills `$name` mentions in `prompt` activate (user-invocable ones, each once, in order
/// of mention), with the prompt less those mentions as their arguments.
pub fn expand_mentions<'a>(
    prompt: &str,
    skills: &'a BTreeMap<String, Skill>,
) -> (Vec<&'a Skill>, String) {
    let mut found: Vec<&Skill> = Vec::new();
    let mut rest = Vec::new();
    for word in prompt.split_whitespace() {
        let name = word
            .strip_prefix('$')
            .map(|name| name.trim_end_matches(['.', ',', ';', ':', '!', '?']));
        match name.and_then(|name| skills.get(name)) {
            Some(skill) if skill.user_invocable => {
                if !found.iter().any(|s| s.name == skill.name) {
                    found.push(skill);
                }
            }
            _ => rest.push(word),
        }
    }
    (found, rest.join(" "))
}
