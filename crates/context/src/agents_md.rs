//! AGENTS.md discovery: the global file in `$CODECODER_HOME`, then one file per directory from
//! the project root (the nearest ancestor of the cwd holding `.git`) down to the cwd. In each
//! directory the first that exists of `AGENTS.override.md`, `AGENTS.md` and the configured
//! fallback names (such as `CLAUDE.md`) is used, so an empty `AGENTS.override.md` silences its
//! directory. The files are joined, outermost first, each under a header naming it, and cut to a
//! byte budget with a note saying so. The cwd must be absolute.
//!
//! Invariants:
//! - A file is read again only when its modification time changed since it was last read
//!   through the same `AgentsMdLoader` (the cache is keyed by path and mtime).
//! - Nothing is silently dropped: a cut adds a note to the text and a `Warning`; an unreadable
//!   file adds a `Warning`.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use crate::error::{Error, Result};
use crate::section::Warning;

/// The name that, in a directory, wins over `AGENTS.md`.
pub const AGENTS_OVERRIDE_MD: &str = "AGENTS.override.md";
/// The standard instruction file name.
pub const AGENTS_MD: &str = "AGENTS.md";

/// Where instruction files are read from (the file system, or a counting fake in tests).
pub trait DocSource: Send + Sync {
    /// The file's modification time; `None` when there is no such file.
    fn modified(&self, path: &Path) -> Result<Option<SystemTime>>;
    /// The file's text (invalid UTF-8 replaced).
    fn read(&self, path: &Path) -> Result<String>;
}

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct FileSystem;

impl DocSource for FileSystem {
    fn modified(&self, path: &Path) -> Result<Option<SystemTime>> {
        let io_error = |source| Error::Io { path: path.to_owned(), source };
        match fs_err::metadata(path) {
            Ok(metadata) if metadata.is_file() => metadata.modified().map(Some).map_err(io_error),
            Ok(_) => Ok(None),
            Err(err)
                if matches!(err.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) =>
            {
                Ok(None)
            }
            Err(err) => Err(io_error(err)),
        }
    }

    fn read(&self, path: &Path) -> Result<String> {
        let bytes =
            fs_err::read(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// Which files to look for and how much of them to keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentsMdConfig {
    /// `$CODECODER_HOME`, whose instruction file applies to every project; `None`: no global file.
    pub home: Option<PathBuf>,
    /// Names tried in each directory after `AGENTS.override.md` and `AGENTS.md`, in order.
    pub fallback_names: Vec<String>,
    /// The most bytes of joined files kept. Standard: 32 KiB.
    pub budget_bytes: usize,
}

impl AgentsMdConfig {
    /// The global file from `home`, no fallback names, a 32 KiB budget.
    pub fn standard(home: Option<PathBuf>) -> Self {
        Self { home, fallback_names: Vec::new(), budget_bytes: 32 * 1024 }
    }
}

/// The joined instruction files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentsMd {
    /// The files used, in the order they appear in `text`.
    pub files: Vec<PathBuf>,
    /// The files joined with headers, cut to the budget (with a note when cut); empty when there
    /// is no file.
    pub text: String,
    /// Unreadable files and truncation.
    pub warnings: Vec<Warning>,
}

/// A file's text as last read, with the modification time it had then.
#[derive(Debug, Clone)]
struct CachedDoc {
    modified: SystemTime,
    text: Arc<str>,
}

/// Loads AGENTS.md files through a cache keyed by path and mtime. Share one per process: every
/// new session's prompt loads through it and re-reads only what changed.
pub struct AgentsMdLoader {
    source: Box<dyn DocSource>,
    // Shared by the sessions of a process, which may load from several threads; the lock is
    // never held while a file is read.
    cache: Mutex<HashMap<PathBuf, CachedDoc>>,
}

impl std::fmt::Debug for AgentsMdLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentsMdLoader").finish_non_exhaustive()
    }
}

impl AgentsMdLoader {
    /// A loader reading the real file system.
    pub fn new() -> Self {
        Self::with_source(Box::new(FileSystem))
    }

    /// A loader reading through `source`.
    pub fn with_source(source: Box<dyn DocSource>) -> Self {
        Self { source, cache: Mutex::new(HashMap::new()) }
    }

    /// The instruction files for `cwd` (an absolute path), joined and cut to the budget.
    pub fn load(&self, config: &AgentsMdConfig, cwd: &Path) -> AgentsMd {
        let mut warnings = Vec::new();
        let mut dirs: Vec<&Path> = Vec::new();
        if let Some(home) = &config.home {
            dirs.push(home);
        }
        let project_dirs: Vec<&Path> = match find_project_root(cwd) {
            Some(root) => {
                let mut below_root: Vec<&Path> =
                    cwd.ancestors().take_while(|dir| *dir != root).collect();
                below_root.push(root);
                below_root.reverse();
                below_root
            }
            None => vec![cwd],
        };
        for dir in project_dirs {
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }

        let mut files = Vec::new();
        let mut body = String::new();
        for dir in dirs {
            let Some((path, text)) = self.load_dir(config, dir, &mut warnings) else {
                continue;
            };
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            if !body.is_empty() {
                body.push_str("\n\n");
            }
            body.push_str(&format!("## {}\n\n{text}", path.display()));
            files.push(path);
        }
        let text = truncate_to_budget(body, config.budget_bytes, &mut warnings);
        AgentsMd { files, text, warnings }
    }

    /// The instruction file of `dir`, if any, with its text.
    fn load_dir(
        &self,
        config: &AgentsMdConfig,
        dir: &Path,
        warnings: &mut Vec<Warning>,
    ) -> Option<(PathBuf, Arc<str>)> {
        let names = [AGENTS_OVERRIDE_MD, AGENTS_MD]
            .into_iter()
            .chain(config.fallback_names.iter().map(String::as_str));
        for name in names {
            let path = dir.join(name);
            let modified = match self.source.modified(&path) {
                Ok(Some(modified)) => modified,
                Ok(None) => continue,
                Err(err) => {
                    warnings.push(Warning::Unreadable { path, message: err.to_string() });
                    continue;
                }
            };
            return match self.read_cached(&path, modified) {
                Ok(text) => Some((path, text)),
                Err(err) => {
                    warnings.push(Warning::Unreadable { path, message: err.to_string() });
                    None
                }
            };
        }
        None
    }

    /// The text of `path`, from the cache when it was read at this mtime.
    fn read_cached(&self, path: &Path, modified: SystemTime) -> Result<Arc<str>> {
        let cached = self.cache.lock().unwrap_or_else(PoisonError::into_inner).get(path).cloned();
        if let Some(cached) = cached
            && cached.modified == modified
        {
            return Ok(cached.text);
        }
        let text: Arc<str> = self.source.read(path)?.into();
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(path.to_owned(), CachedDoc { modified, text: Arc::clone(&text) });
        Ok(text)
    }
}

impl Default for AgentsMdLoader {
    fn default() -> Self {
        Self::new()
    }
}

/// The nearest ancestor of `cwd` (itself included) that holds `.git` (a directory, or a file as
/// in worktrees and submodules).
pub fn find_project_root(cwd: &Path) -> Option<&Path> {
    cwd.ancestors().find(|dir| dir.join(".git").exists())
}

/// `body` cut to `budget_bytes` at a line end (a character boundary when one line is longer than
/// the budget), with a note saying what was cut.
pub(crate) fn truncate_to_budget(
    body: String,
    budget_bytes: usize,
    warnings: &mut Vec<Warning>,
) -> String {
    let total_bytes = body.len();
    if total_bytes <= budget_bytes {
        return body;
    }
    let mut end = budget_bytes;
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    if let Some(line_end) = body[..end].rfind('\n') {
        end = line_end;
    }
    let mut text = body[..end].trim_end().to_owned();
    let shown_bytes = text.len();
    text.push_str(&format!(
        "\n\n[AGENTS.md truncated: {shown_bytes} of {total_bytes} bytes shown (budget \
         {budget_bytes} bytes); the rest was left out]"
    ));
    warnings.push(Warning::AgentsMdTruncated { shown_bytes, total_bytes, budget_bytes });
    text
}
