//! Path resolution shared by command classification, rule matching and the default table.
//!
//! Invariant: every path the policy compares is absolute, lexically normalized (no `.` or
//! `..`), and canonicalized through its longest existing ancestor, so that neither `../` nor a
//! symlink can move a path across a boundary the policy checks. The only I/O is
//! `canonicalize` on paths that exist.

use std::path::{Component, Path, PathBuf};

use crate::protect::{Guard, Protection};

/// Removes `.` and resolves `..` without touching the file system; `..` at the root stays at
/// the root.
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(prefix) => out.push(prefix.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                // `pop` refuses to go above the root, which is what `..` at `/` does.
                if !out.pop() && !out.has_root() {
                    out.push("..");
                }
            }
            Component::Normal(part) => out.push(part),
        }
    }
    out
}

/// Resolves `path` against `cwd`, normalizes it lexically, then canonicalizes its longest
/// existing ancestor (so symlinks are followed) and re-appends the rest.
pub fn resolve(path: &Path, cwd: &Path) -> PathBuf {
    let joined = if path.is_absolute() { path.to_path_buf() } else { cwd.join(path) };
    let normalized = normalize_lexically(&joined);
    let mut existing = normalized.as_path();
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(canonical) = fs_err::canonicalize(existing) {
            let mut out = canonical;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return normalized,
        }
    }
}

/// Expands a leading `~` or `~/` with `home`. `None` for `~user` or when there is no home.
pub(crate) fn expand_home(text: &str, home: Option<&Path>) -> Option<PathBuf> {
    if text == "~" {
        return home.map(Path::to_path_buf);
    }
    match text.strip_prefix("~/") {
        Some(rest) => home.map(|home| home.join(rest)),
        None if text.starts_with('~') => None,
        None => Some(PathBuf::from(text)),
    }
}

/// Where a path stands relative to the writable roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Inside a writable root and not protected.
    Writable,
    /// Protected ([`crate::protect::Guard::check`]), inside a root or not.
    Protected(Box<Protection>),
    /// Outside every writable root.
    Outside,
}

/// Resolved writable roots and their guard.
#[derive(Debug, Clone)]
pub(crate) struct Roots {
    guard: Guard,
}

impl Roots {
    /// Resolves `roots` (relative ones against `cwd`); `extra` are protected wherever they are.
    pub(crate) fn new(roots: &[PathBuf], cwd: &Path, extra: &[PathBuf]) -> Self {
        Self { guard: Guard::new(roots, cwd, extra) }
    }

    /// The resolved roots.
    pub(crate) fn roots(&self) -> &[PathBuf] {
        self.guard.roots()
    }

    /// Where an already resolved `path` stands: protected first (a root that contains another
    /// root does not make the inner root's protected paths writable), then inside a root.
    pub(crate) fn place(&self, path: &Path) -> Placement {
        if let Some(protection) = self.guard.check(path) {
            return Placement::Protected(Box::new(protection));
        }
        if self.roots().iter().any(|root| path.starts_with(root)) {
            Placement::Writable
        } else {
            Placement::Outside
        }
    }

    /// True when `path` is a root or an ancestor of one.
    pub(crate) fn is_root_or_ancestor(&self, path: &Path) -> bool {
        self.roots().iter().any(|root| root.starts_with(path))
    }
}

#[cfg(test)]
mod tests;
