//! The command environment policy (codex's `shell_environment_policy`): which of the agent's
//! environment variables the commands it runs for the model get.
//!
//! [`command_environment`] is a pure function of the agent's environment and an [`EnvPolicy`].
//! Its steps, in codex's order:
//! 1. `inherit`: every variable (`All`), only the [`CORE_VARIABLES`] (`Core`), or none (`None`);
//! 2. unless `ignore_default_excludes`, drop every name matching a [`DEFAULT_EXCLUDES`] pattern
//!    (`*KEY*`, `*SECRET*`, `*TOKEN*`, `*PASSWORD*`, `*CREDENTIAL*`, `*_PAT`);
//! 3. drop every name matching an `exclude` pattern;
//! 4. add or replace the `set` variables;
//! 5. when `include_only` is not empty, keep only the names matching one of its patterns.
//!
//! Patterns are globs on the whole name, compared case-insensitively: `*` is any run of
//! characters (also none), `?` exactly one; every other character stands for itself.
//!
//! Invariants: the result holds no variable the steps above did not keep or set; `withheld`
//! names every variable of the agent's environment that is not passed on as it is (dropped, or
//! replaced by `set`), and holds names only, never values.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::sync::Arc;

/// The variables `inherit = "core"` keeps: what a shell and the usual tools need to find
/// programs, the home and temporary directories, the user, the locale and the terminal. A name
/// ending in `*` is a prefix.
pub const CORE_VARIABLES: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP", "LANG",
    "LANGUAGE", "LC_*", "TERM", "TZ",
];

/// The patterns dropped unless `ignore_default_excludes` is set: the names API keys, tokens,
/// passwords and personal access tokens go by.
pub const DEFAULT_EXCLUDES: &[&str] =
    &["*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*", "*CREDENTIAL*", "*_PAT"];

pub use codecoder_protocol::Inherit;

/// How the command environment is computed from the agent's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvPolicy {
    /// Where to start.
    pub inherit: Inherit,
    /// Keep the names that match [`DEFAULT_EXCLUDES`].
    pub ignore_default_excludes: bool,
    /// Patterns of names to drop.
    pub exclude: Vec<String>,
    /// Variables to set (after the excludes, so a name listed here is set whatever its name).
    pub set: BTreeMap<String, String>,
    /// When not empty, only names matching one of these patterns are kept (the last step, so it
    /// applies to `set` too).
    pub include_only: Vec<String>,
}

impl EnvPolicy {
    /// codex's default: inherit everything but the default excludes.
    pub fn standard() -> Self {
        Self {
            inherit: Inherit::All,
            ignore_default_excludes: false,
            exclude: Vec::new(),
            set: BTreeMap::new(),
            include_only: Vec::new(),
        }
    }
}

/// What [`command_environment`] computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandEnvironment {
    /// The variables a command gets, sorted by name.
    pub vars: Vec<(OsString, OsString)>,
    /// The names of the agent's variables that commands do not get as they are, sorted.
    pub withheld: Vec<String>,
}

impl CommandEnvironment {
    /// The environment to spawn commands with.
    pub fn environment(&self) -> Environment {
        Environment::Exactly(Arc::from(self.vars.as_slice()))
    }
}

/// The environment a child starts from (the spec's own variables and the sandbox's go on top).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Environment {
    /// The spawner's whole environment.
    Inherited,
    /// Exactly these variables: nothing of the spawner's environment is passed on.
    Exactly(Arc<[(OsString, OsString)]>),
}

/// The command environment for `policy`, from `agent_env` (the agent's own environment:
/// `std::env::vars_os()`).
pub fn command_environment(
    agent_env: impl IntoIterator<Item = (OsString, OsString)>,
    policy: &EnvPolicy,
) -> CommandEnvironment {
    let agent_env: BTreeMap<OsString, OsString> = agent_env.into_iter().collect();
    let mut vars: BTreeMap<OsString, OsString> = agent_env
        .iter()
        .filter(|(name, _)| match policy.inherit {
            Inherit::All => true,
            Inherit::Core => is_core(name),
            Inherit::None => false,
        })
        .filter(|(name, _)| {
            policy.ignore_default_excludes || !matches_any(name, DEFAULT_EXCLUDES.iter().copied())
        })
        .filter(|(name, _)| !matches_any(name, policy.exclude.iter().map(String::as_str)))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    for (name, value) in &policy.set {
        vars.insert(OsString::from(name), OsString::from(value));
    }
    if !policy.include_only.is_empty() {
        vars.retain(|name, _| matches_any(name, policy.include_only.iter().map(String::as_str)));
    }
    let withheld = agent_env
        .iter()
        .filter(|(name, value)| vars.get(*name) != Some(*value))
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .collect();
    CommandEnvironment { vars: vars.into_iter().collect(), withheld }
}

fn is_core(name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    CORE_VARIABLES.iter().any(|core| match core.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == *core,
    })
}

fn matches_any<'a>(name: &OsStr, mut patterns: impl Iterator<Item = &'a str>) -> bool {
    let name: Vec<char> = name.to_string_lossy().to_lowercase().chars().collect();
    patterns.any(|pattern| {
        let pattern: Vec<char> = pattern.to_lowercase().chars().collect();
        glob_match(&pattern, &name)
    })
}

/// Whether `text` matches `pattern` as a whole (`*` any run, `?` one character). Greedy with
/// one backtrack point: linear in practice, quadratic at worst.
pub(crate) fn glob_match(pattern: &[char], text: &[char]) -> bool {
    let (mut p, mut t) = (0, 0);
    // The last `*` seen and the text position it was tried at.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((star_p, star_t)) => {
                    // Let the `*` take one more character and try again.
                    p = star_p + 1;
                    t = star_t + 1;
                    star = Some((star_p, star_t + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests;
