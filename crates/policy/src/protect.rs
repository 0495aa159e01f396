//! The one answer to "may this path be written without asking, and if not, why": the protected
//! paths inside the writable roots. The approval chain, the in-process writers (`write_file`,
//! `edit`, `apply_patch`), the shell sandbox (bwrap, Landlock, seatbelt, denial hints) and
//! `codecoder doctor` all ask a [`Guard`].
//!
//! Protected, below every writable root (at any depth, so a root that contains another root, say
//! `/tmp` and a workspace under it, protects the inner workspace's files too):
//! - the directories `.git`, `.codecoder` and `.agents` (and a `.git` *file*: the pointer itself);
//! - the files that make code run later: `.claude/settings*.json` and `.mcp.json`;
//! - for the git repository of each root (found the way git finds it, walking up): the git dir a
//!   `.git` file points to (`gitdir:`) and its common dir, and the directory `core.hooksPath`
//!   names in the repository's config (`.husky`, say);
//! - the directory `core.hooksPath` names in the user's global git config (`GIT_CONFIG_GLOBAL`,
//!   else `$XDG_CONFIG_HOME/git/config` and `~/.gitconfig`) or the system one
//!   (`GIT_CONFIG_SYSTEM`, else `/etc/gitconfig`, unless `GIT_CONFIG_NOSYSTEM`), resolved as git
//!   does: `~/` is the home, a relative path is relative to each repository's work tree top
//!   (where git runs hooks), so it protects nothing outside a repository;
//! - the extra paths the caller names (codecoder's home), wherever they are.
//!
//! Invariants:
//! - Names match whether or not the path exists yet: creating `.mcp.json` is a protected write.
//! - [`Guard::check`] takes a path already resolved with [`crate::resolve`] (`..` and symlinks
//!   of existing ancestors resolved), so neither `../` nor a symlink moves a write out of
//!   protection; the roots are resolved the same way.
//! - The only I/O is reading `.git` pointer files, `commondir` and git config files (a few
//!   small files per guard, read directly: no git process), listing
//!   `.claude` (for [`Guard::existing`]) and canonicalizing paths that exist; a file that cannot
//!   be read protects nothing extra (the names still do).

use std::ffi::OsStr;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use crate::paths::resolve;

/// The directories that stay read-only wherever they appear below a writable root.
pub const PROTECTED_DIRS: [&str; 3] = [".git", ".codecoder", ".agents"];

/// The files that stay read-only wherever they appear below a writable root (besides
/// `.claude/settings*.json`, a pattern).
pub const PROTECTED_FILES: [&str; 1] = [".mcp.json"];

/// Claude Code's settings files that exist under the usual names (the pattern
/// `.claude/settings*.json` covers any other too).
pub const CLAUDE_SETTINGS: [&str; 2] = [".claude/settings.json", ".claude/settings.local.json"];

/// Why a path is protected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// A `.git`, `.codecoder` or `.agents` directory (or a `.git` file) below a writable root.
    Dir {
        /// The name (`.git`).
        name: &'static str,
    },
    /// `.claude/settings*.json` below a writable root.
    ClaudeSettings,
    /// `.mcp.json` below a writable root.
    McpJson,
    /// The git dir (or common dir) a `.git` pointer file leads to.
    GitDir {
        /// The `.git` file.
        pointer: PathBuf,
    },
    /// The hooks directory `core.hooksPath` names.
    HooksPath {
        /// The git config file that sets it.
        config: PathBuf,
    },
    /// One of the extra paths the caller protects wherever they are: codecoder's home (the
    /// only one the product passes, hence the message).
    CodecoderHome,
}

/// A protected write: the path, what protects it, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protection {
    /// The (resolved) path that would be written.
    pub path: PathBuf,
    /// The protected file or tree it is in (`/tmp/ws/.git`).
    pub protected: PathBuf,
    /// The innermost writable root containing it, if any.
    pub root: Option<PathBuf>,
    /// Why.
    pub rule: Rule,
}

impl Protection {
    /// What is protected and why, without the path written (`` `.git` inside the writable root
    /// /tmp/ws (files there run code later) ``).
    pub fn rule_text(&self) -> String {
        let protected = self.protected.display();
        let within = |what: &str| match &self.root {
            Some(root) => {
                let relative = self.protected.strip_prefix(root).unwrap_or(&self.protected);
                format!(
                    "`{}` inside the writable root {} ({what})",
                    relative.display(),
                    root.display()
                )
            }
            None => format!("`{protected}` ({what})"),
        };
        match &self.rule {
            Rule::Dir { name: ".git" } => within("files there run code later"),
            Rule::Dir { name: ".codecoder" } => {
                within("codecoder's project config: hooks and rules there apply later")
            }
            Rule::Dir { .. } => within("instructions and skills the agent follows later"),
            Rule::ClaudeSettings => within("Claude Code settings: hooks there run code later"),
            Rule::McpJson => within("the MCP servers it names are started later"),
            Rule::GitDir { pointer } => format!(
                "`{protected}` is the git directory `{}` points to (files there run code later)",
                pointer.display()
            ),
            Rule::HooksPath { config } => format!(
                "`{protected}` is the hooks directory `core.hooksPath` names in {} (git runs the \
                 files there)",
                config.display()
            ),
            Rule::CodecoderHome => {
                format!("`{protected}` is codecoder's home (its config, hooks and credentials)")
            }
        }
    }
}

impl fmt::Display for Protection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is protected: {}", self.path.display(), self.rule_text())
    }
}

/// The protected paths of a set of writable roots, computed from the file system as it is now.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    roots: Vec<PathBuf>,
    /// Protected trees found by reading git files (git dirs, hooks paths) and the caller's extra
    /// paths, resolved, with their rule.
    trees: Vec<(PathBuf, Rule)>,
}

impl Guard {
    /// The guard of `roots` (relative ones against `cwd`) plus `extra` paths protected wherever
    /// they are (codecoder's home). Reads the repositories' `.git` files and configs, and the
    /// global and system git configs this process's environment names ([`GitEnv::from_process`]),
    /// now: make a new guard to see later changes.
    pub fn new(roots: &[PathBuf], cwd: &Path, extra: &[PathBuf]) -> Self {
        Self::with_git_env(roots, cwd, extra, &GitEnv::from_process())
    }

    /// As [`Guard::new`], with the global and system git configs found through `git_env`.
    pub fn with_git_env(
        roots: &[PathBuf],
        cwd: &Path,
        extra: &[PathBuf],
        git_env: &GitEnv,
    ) -> Self {
        let mut resolved: Vec<PathBuf> = roots.iter().map(|root| resolve(root, cwd)).collect();
        resolved.sort();
        resolved.dedup();
        let mut trees: Vec<(PathBuf, Rule)> =
            extra.iter().map(|path| (resolve(path, cwd), Rule::CodecoderHome)).collect();
        let home = git_env.home.as_deref();
        // The user's and the system's hooks paths: an absolute one (or `~/…`) wherever it is, a
        // relative one below each repository's top (below).
        let outer: Vec<(PathBuf, String)> = git_env
            .config_files()
            .into_iter()
            .filter_map(|config| hooks_path(&config).map(|value| (config, value)))
            .collect();
        for (config, value) in &outer {
            if let Some(hooks) = expand_hooks_path(value, None, home) {
                trees.push((resolve(&hooks, cwd), Rule::HooksPath { config: config.clone() }));
            }
        }
        for root in &resolved {
            let Some(top) = repository_top(root) else { continue };
            let dot_git = top.join(".git");
            let (gitdirs, configs) = git_dirs(&top, &dot_git);
            for gitdir in gitdirs {
                trees.push((gitdir, Rule::GitDir { pointer: dot_git.clone() }));
            }
            let local = configs
                .into_iter()
                .filter_map(|config| hooks_path(&config).map(|value| (config, value)));
            for (config, value) in local.chain(outer.iter().cloned()) {
                if let Some(hooks) = expand_hooks_path(&value, Some(&top), home) {
                    trees.push((resolve(&hooks, &top), Rule::HooksPath { config }));
                }
            }
        }
        trees.sort_by(|a, b| a.0.cmp(&b.0));
        trees.dedup_by(|a, b| a.0 == b.0);
        Self { roots: resolved, trees }
    }

    /// The resolved roots.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Why writing `path` (resolved with [`crate::resolve`]) is protected, or `None`.
    pub fn check(&self, path: &Path) -> Option<Protection> {
        let root = self.innermost_root(path);
        // The most specific tree (a linked worktree's git dir before the common dir above it).
        let tree = self
            .trees
            .iter()
            .filter(|(tree, _)| path.starts_with(tree))
            .max_by_key(|(tree, _)| tree.as_os_str().len());
        if let Some((tree, rule)) = tree {
            return Some(Protection {
                path: path.to_path_buf(),
                protected: tree.clone(),
                root: root.cloned(),
                rule: rule.clone(),
            });
        }
        // Below any root (the outermost one sees the most components); reported against the
        // innermost one.
        let outer = self
            .roots
            .iter()
            .filter(|r| path.starts_with(r))
            .min_by_key(|r| r.as_os_str().len())?;
        let rest = path.strip_prefix(outer).ok()?;
        let parts: Vec<&OsStr> = rest
            .components()
            .filter_map(|c| match c {
                Component::Normal(name) => Some(name),
                _ => None,
            })
            .collect();
        let protection = |depth: usize, rule: Rule| {
            let protected = parts[..=depth].iter().fold(outer.clone(), |acc, part| acc.join(part));
            let root = self.innermost_root(&protected).or(root).cloned();
            Some(Protection { path: path.to_path_buf(), protected, root, rule })
        };
        let last = parts.len().checked_sub(1)?;
        for (depth, part) in parts.iter().enumerate() {
            if let Some(name) = PROTECTED_DIRS.iter().find(|name| same_name(part, name)) {
                return protection(depth, Rule::Dir { name });
            }
            if depth == last && PROTECTED_FILES.iter().any(|name| same_name(part, name)) {
                return protection(depth, Rule::McpJson);
            }
            if depth + 1 == last && same_name(part, ".claude") && is_claude_settings(parts[last]) {
                return protection(last, Rule::ClaudeSettings);
            }
        }
        None
    }

    /// The protected paths that exist now, canonical, inside a writable root (anything else is
    /// read-only to a confined command already), without duplicates: what a sandbox re-binds
    /// read-only. Only the names directly inside each root are listed (plus the git dirs, hooks
    /// paths and extra paths): a nested `.git` deeper down is protected by [`Guard::check`] but
    /// not by the sandbox.
    pub fn existing(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self
            .literal()
            .iter()
            .filter(|path| fs_err::symlink_metadata(path).is_ok())
            .filter_map(|path| fs_err::canonicalize(path).ok())
            .collect();
        for root in &self.roots {
            let Ok(entries) = fs_err::read_dir(root.join(".claude")) else { continue };
            for entry in entries.flatten() {
                if is_claude_settings(&entry.file_name())
                    && let Ok(path) = fs_err::canonicalize(entry.path())
                {
                    out.push(path);
                }
            }
        }
        out.retain(|path| self.roots.iter().any(|root| path.starts_with(root) && path != root));
        out.sort();
        out.dedup();
        out
    }

    /// The protected paths directly inside each root whether or not they exist, plus the git
    /// dirs, hooks paths and extra paths: what a sandbox that can deny paths that do not exist
    /// yet (seatbelt) denies.
    pub fn literal(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for root in &self.roots {
            for name in PROTECTED_DIRS.iter().chain(&PROTECTED_FILES).chain(&CLAUDE_SETTINGS) {
                out.push(root.join(name));
            }
        }
        out.extend(self.trees.iter().map(|(tree, _)| tree.clone()));
        out.sort();
        out.dedup();
        out
    }

    fn innermost_root(&self, path: &Path) -> Option<&PathBuf> {
        self.roots.iter().filter(|root| path.starts_with(root)).max_by_key(|r| r.as_os_str().len())
    }
}

fn same_name(part: &OsStr, name: &str) -> bool {
    part.to_str().is_some_and(|part| part.eq_ignore_ascii_case(name))
}

fn is_claude_settings(name: &OsStr) -> bool {
    name.to_str().is_some_and(|name| {
        let lower = name.to_ascii_lowercase();
        lower.starts_with("settings") && lower.ends_with(".json")
    })
}

/// The work tree top of the repository `dir` is in: the nearest ancestor (or `dir`) with a
/// `.git` entry.
fn repository_top(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|dir| fs_err::symlink_metadata(dir.join(".git")).is_ok())
        .map(Path::to_path_buf)
}

/// The git dirs a `.git` pointer file leads to (the `gitdir:` it names and that dir's
/// `commondir`, canonical), and the config files of the repository (for a `.git` directory:
/// its `config`).
fn git_dirs(top: &Path, dot_git: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let Ok(meta) = fs_err::symlink_metadata(dot_git) else { return (Vec::new(), Vec::new()) };
    if !meta.is_file() {
        let gitdir = fs_err::canonicalize(dot_git).unwrap_or_else(|_| dot_git.to_path_buf());
        return (Vec::new(), vec![gitdir.join("config")]);
    }
    let Ok(text) = fs_err::read_to_string(dot_git) else { return (Vec::new(), Vec::new()) };
    let Some(target) = text.lines().find_map(|line| line.strip_prefix("gitdir:")) else {
        return (Vec::new(), Vec::new());
    };
    let Ok(gitdir) = fs_err::canonicalize(top.join(target.trim())) else {
        return (Vec::new(), Vec::new());
    };
    let mut dirs = vec![gitdir.clone()];
    let mut configs = vec![gitdir.join("config"), gitdir.join("config.worktree")];
    if let Ok(common) = fs_err::read_to_string(gitdir.join("commondir"))
        && let Ok(common) = fs_err::canonicalize(gitdir.join(common.trim()))
    {
        configs.push(common.join("config"));
        dirs.push(common);
    }
    (dirs, configs)
}

/// Where git looks for its global and system config files, and the home `~/` stands for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitEnv {
    /// `HOME`: `~/.gitconfig`, and what `~/` in a `core.hooksPath` means.
    pub home: Option<PathBuf>,
    /// `XDG_CONFIG_HOME` (default `~/.config`): `$XDG_CONFIG_HOME/git/config`.
    pub xdg_config_home: Option<PathBuf>,
    /// `GIT_CONFIG_GLOBAL`: the one global config file instead of the two above.
    pub config_global: Option<PathBuf>,
    /// `GIT_CONFIG_SYSTEM`: the system config file instead of `/etc/gitconfig`.
    pub config_system: Option<PathBuf>,
    /// `GIT_CONFIG_NOSYSTEM` is true: no system config file.
    pub no_system: bool,
}

impl GitEnv {
    /// This process's environment (empty values count as unset, as git treats them).
    pub fn from_process() -> Self {
        use codecoder_protocol::env;
        let path = |name: &str| {
            std::env::var_os(name).filter(|value| !value.is_empty()).map(PathBuf::from)
        };
        let no_system = std::env::var(env::GIT_CONFIG_NOSYSTEM).is_ok_and(|value| {
            matches!(value.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on")
        });
        GitEnv {
            home: path(env::HOME),
            xdg_config_home: path(env::XDG_CONFIG_HOME),
            config_global: path(env::GIT_CONFIG_GLOBAL),
            config_system: path(env::GIT_CONFIG_SYSTEM),
            no_system,
        }
    }

    /// The global and system config files git would read (existing or not), system first.
    pub fn config_files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        if !self.no_system {
            files.push(self.config_system.clone().unwrap_or_else(|| "/etc/gitconfig".into()));
        }
        match &self.config_global {
            Some(global) => files.push(global.clone()),
            None => {
                let xdg = self
                    .xdg_config_home
                    .clone()
                    .or_else(|| self.home.as_ref().map(|home| home.join(".config")));
                files.extend(xdg.map(|xdg| xdg.join("git/config")));
                files.extend(self.home.as_ref().map(|home| home.join(".gitconfig")));
            }
        }
        files
    }
}

/// A `core.hooksPath` value as git resolves it: `~` and `~/…` against `home`, an absolute path
/// as is, a relative one against the work tree `top` (`None` outside a repository: nothing).
/// `~user/…` is not resolved.
fn expand_hooks_path(value: &str, top: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    if value == "~" {
        return home.map(Path::to_path_buf);
    }
    if let Some(rest) = value.strip_prefix("~/") {
        return home.map(|home| home.join(rest));
    }
    if value.starts_with('~') {
        return None;
    }
    let path = Path::new(value);
    if path.is_absolute() {
        return Some(path.to_path_buf());
    }
    top.map(|top| top.join(path))
}

/// The raw `core.hooksPath` value in the git config file `config`, if it sets one.
fn hooks_path(config: &Path) -> Option<String> {
    let text = fs_err::read_to_string(config).ok()?;
    let mut in_core = false;
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            let section = line.trim_start_matches('[').split([']', ' ', '"']).next().unwrap_or("");
            in_core = section.eq_ignore_ascii_case("core") && !line.contains('"');
            continue;
        }
        if !in_core {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        if key.trim().eq_ignore_ascii_case("hookspath") {
            let value = value.split([';', '#']).next().unwrap_or("").trim().trim_matches('"');
            if !value.is_empty() {
                found = Some(value.to_owned());
            }
        }
    }
    found
}

#[cfg(test)]
mod tests;
