//! Protected names that did not exist when a confined command started: what the command created
//! there is removed once it has ended, and reported.
//!
//! Bubblewrap and Landlock protect what exists (a read-only bind mount over `.git`), but neither
//! can refuse the creation of one name inside a writable directory: a mount needs an existing
//! mount point, and bubblewrap asked for one inside a bind-mounted writable root makes it on the
//! host (an empty `.git` would appear in the user's repository, and stay after a `kill -9`);
//! Landlock grants rights per directory, so refusing `.git` in the workspace would refuse every
//! new file there. So a command may create `.git`, `.codecoder`, `.agents`, `.mcp.json` or
//! `.claude/settings*.json` directly inside a writable root while it runs; when its process tree
//! is gone, [`Sweep::after`] removes each such entry that was absent at the start (a directory
//! with its contents, a symlink as the link itself) and says so in the command's output.
//!
//! Guarantee: nothing unconfined (git run by the person, codecoder's next start, Claude Code)
//! finds such an entry once the command has ended, provided codecoder itself ends it (a command
//! or session killed with codecoder by `kill -9` is not swept). While it runs, the command and its
//! own children see what they created; anything they run that way is still confined.
//!
//! Invariants:
//! - Only the names directly inside the writable roots that exist at the start are looked at
//!   (never a path read from a file the command could write, such as a `gitdir:` target).
//! - An entry that existed at the start is never touched, whatever happened to it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use codecoder_policy::protect::{PROTECTED_DIRS, PROTECTED_FILES};

use crate::policy::{FsAccess, SandboxPolicy};

/// What was absent at a confined command's start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sweep {
    /// Protected names inside the roots that did not exist.
    absent: Vec<PathBuf>,
    /// Each root's `.claude` directory and the settings files in it that existed (none when the
    /// directory did not).
    claude: Vec<(PathBuf, Vec<OsString>)>,
}

/// One entry removed (or that could not be removed), with the reason it is protected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Swept {
    /// The entry.
    pub(crate) path: PathBuf,
    /// Why it is protected (`Protection::rule_text`).
    pub(crate) rule: String,
    /// Why it could not be removed, when it could not.
    pub(crate) failed: Option<String>,
}

impl Sweep {
    /// The protected names absent now in the writable roots of `policy`; `None` unless the
    /// policy is workspace-write (nothing else may create them).
    pub(crate) fn before(policy: &SandboxPolicy) -> Option<Self> {
        if policy.access != FsAccess::WorkspaceWrite {
            return None;
        }
        let mut absent = Vec::new();
        let mut claude = Vec::new();
        for root in policy.existing_writable_roots() {
            for name in PROTECTED_DIRS.iter().chain(&PROTECTED_FILES) {
                let path = root.join(name);
                if fs_err::symlink_metadata(&path).is_err() {
                    absent.push(path);
                }
            }
            let dir = root.join(".claude");
            claude.push((dir.clone(), settings_files(&dir)));
        }
        Some(Sweep { absent, claude })
    }

    /// Removes what appeared at the absent names since [`Sweep::before`], and returns what it
    /// found, each with why it is protected under `policy`.
    pub(crate) fn after(&self, policy: &SandboxPolicy) -> Vec<Swept> {
        let mut created: Vec<PathBuf> = self
            .absent
            .iter()
            .filter(|path| fs_err::symlink_metadata(path).is_ok())
            .cloned()
            .collect();
        for (dir, existed) in &self.claude {
            for name in settings_files(dir) {
                if !existed.contains(&name) {
                    created.push(dir.join(name));
                }
            }
        }
        created
            .into_iter()
            .map(|path| {
                let rule = policy
                    .protection(&path)
                    .map_or_else(|| "a protected name".to_owned(), |found| found.rule_text());
                let failed = remove_entry(&path).err().map(|err| err.to_string());
                Swept { path, rule, failed }
            })
            .collect()
    }
}

/// The command's output line about `swept` (stderr), ending in a newline.
pub(crate) fn report(swept: &[Swept]) -> String {
    let mut text = String::new();
    for entry in swept {
        let line = match &entry.failed {
            None => format!(
                "codecoder sandbox: removed `{}`, which the command created: {}; creating it \
                 needs the command run outside the sandbox (with approval)\n",
                entry.path.display(),
                entry.rule
            ),
            Some(err) => format!(
                "codecoder sandbox: the command created `{}` ({}) and it could not be removed: \
                 {err}; remove it before running git or codecoder there\n",
                entry.path.display(),
                entry.rule
            ),
        };
        text.push_str(&line);
    }
    text
}

/// The names of the `settings*.json` entries in `dir` (none when it cannot be listed).
fn settings_files(dir: &Path) -> Vec<OsString> {
    let Ok(entries) = fs_err::read_dir(dir) else { return Vec::new() };
    entries
        .flatten()
        .map(|entry| entry.file_name())
        .filter(|name| {
            name.to_str().is_some_and(|name| {
                let lower = name.to_ascii_lowercase();
                lower.starts_with("settings") && lower.ends_with(".json")
            })
        })
        .collect()
}

/// Removes `path`: a directory with its contents, anything else (a symlink included) as itself.
fn remove_entry(path: &Path) -> std::io::Result<()> {
    let meta = fs_err::symlink_metadata(path)?;
    if meta.is_dir() { fs_err::remove_dir_all(path) } else { fs_err::remove_file(path) }
}

#[cfg(test)]
mod tests;
