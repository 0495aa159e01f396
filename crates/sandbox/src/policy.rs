//! What a confined command may touch: the `SandboxPolicy` the backends enforce, the protected
//! subpaths computed inside each writable root, and the default list of hidden credential stores.
//!
//! Invariants:
//! - Paths handed to a backend are absolute and canonical (symlinks resolved), so a backend never
//!   protects or hides a link instead of its target; paths that do not exist are left out (there
//!   is nothing to bind or grant), except where a backend says otherwise.
//! - A protected subpath is always inside a writable root, and the list has no duplicates.

use std::path::{Path, PathBuf};

/// How much of the file system a confined command may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsAccess {
    /// Read everything (except hidden paths), write nothing.
    ReadOnly,
    /// Read everything (except hidden paths), write only inside the writable roots, minus their
    /// protected subpaths (`.git`, `.codecoder`, `.agents`).
    WorkspaceWrite,
    /// Read and write everything (except hidden paths, which stay unreadable).
    FullAccess,
}

/// The rules a sandboxed command runs under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// What may be written.
    pub access: FsAccess,
    /// The complete list of writable roots (the caller passes the cwd, `/tmp`, `$TMPDIR` and the
    /// `--add-dir` paths); ignored unless `access` is `WorkspaceWrite`.
    pub writable_roots: Vec<PathBuf>,
    /// Whether the network may be used (outside of `AF_UNIX` sockets, which always may).
    pub network: bool,
    /// Paths that no command may read (credential stores); see [`default_hidden_paths`].
    pub hidden_paths: Vec<PathBuf>,
}

/// The names that stay read-only inside every writable root.
pub const PROTECTED_NAMES: [&str; 3] = [".git", ".codecoder", ".agents"];

impl SandboxPolicy {
    /// The writable roots that exist, canonical, without duplicates. Empty unless `access` is
    /// `WorkspaceWrite`.
    pub fn existing_writable_roots(&self) -> Vec<PathBuf> {
        match self.access {
            FsAccess::WorkspaceWrite => canonical_existing(&self.writable_roots),
            FsAccess::ReadOnly | FsAccess::FullAccess => Vec::new(),
        }
    }

    /// The read-only subpaths inside the writable roots that exist today: `.git` (and, when
    /// `.git` is a `gitdir:` pointer file, the directory it names and that directory's common
    /// dir), `.codecoder` and `.agents`, canonical. Only paths inside a writable root are listed:
    /// anything else is read-only already.
    pub fn protected_subpaths(&self) -> Vec<PathBuf> {
        let roots = self.existing_writable_roots();
        let mut protected = Vec::new();
        for root in &roots {
            for name in PROTECTED_NAMES {
                let path = root.join(name);
                let Ok(meta) = fs_err::symlink_metadata(&path) else { continue };
                if name == ".git" && meta.is_file() {
                    for gitdir in resolve_gitdir(root, &path) {
                        protected.push(gitdir);
                    }
                }
                if let Ok(canonical) = fs_err::canonicalize(&path) {
                    protected.push(canonical);
                }
            }
        }
        protected.retain(|path| roots.iter().any(|root| path.starts_with(root)));
        protected.sort();
        protected.dedup();
        protected
    }

    /// The hidden paths that exist, canonical, without duplicates.
    pub fn existing_hidden_paths(&self) -> Vec<PathBuf> {
        canonical_existing(&self.hidden_paths)
    }

    /// Whether `path` (absolute) may be written under this policy, ignoring hidden paths.
    pub fn allows_write(&self, path: &Path) -> bool {
        match self.access {
            FsAccess::FullAccess => true,
            FsAccess::ReadOnly => false,
            FsAccess::WorkspaceWrite => {
                let inside_root = self.writable_roots.iter().any(|root| path.starts_with(root))
                    || self.existing_writable_roots().iter().any(|root| path.starts_with(root));
                let protected = self.writable_roots.iter().any(|root| {
                    PROTECTED_NAMES.iter().any(|name| path.starts_with(root.join(name)))
                }) || self.protected_subpaths().iter().any(|p| path.starts_with(p));
                inside_root && !protected
            }
        }
    }
}

/// The credential stores hidden by default, under `home`: `~/.ssh`, `~/.aws`, `~/.gnupg`,
/// `~/.config/gcloud`, `~/.azure`, `~/.kube`, `~/.docker/config.json`, `~/.netrc`,
/// `~/.git-credentials`, plus `extra` (codecoder's own credentials file, whose location the
/// caller knows).
pub fn default_hidden_paths(home: &Path, extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = [
        ".ssh",
        ".aws",
        ".gnupg",
        ".config/gcloud",
        ".azure",
        ".kube",
        ".docker/config.json",
        ".netrc",
        ".git-credentials",
    ]
    .iter()
    .map(|name| home.join(name))
    .collect();
    paths.extend(extra.iter().cloned());
    paths
}

fn canonical_existing(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> =
        paths.iter().filter_map(|path| fs_err::canonicalize(path).ok()).collect();
    out.sort();
    out.dedup();
    out
}

/// The directories a `.git` pointer file leads to: the `gitdir:` it names and, when that
/// directory has a `commondir` file (a linked worktree), the common dir where hooks live.
fn resolve_gitdir(root: &Path, dot_git: &Path) -> Vec<PathBuf> {
    let Ok(text) = fs_err::read_to_string(dot_git) else { return Vec::new() };
    let Some(target) = text.lines().find_map(|line| line.strip_prefix("gitdir:")) else {
        return Vec::new();
    };
    let Ok(gitdir) = fs_err::canonicalize(root.join(target.trim())) else { return Vec::new() };
    let mut out = vec![gitdir.clone()];
    if let Ok(common) = fs_err::read_to_string(gitdir.join("commondir"))
        && let Ok(common) = fs_err::canonicalize(gitdir.join(common.trim()))
    {
        out.push(common);
    }
    out
}
