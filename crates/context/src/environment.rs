//! The environment section: working directory, OS, shell, date, git branch and status.
//!
//! Invariants: nothing here reads the process environment or spawns a process. The shell and
//! the git status come from the caller (`Environment`); the date from an injected `Clock`; the
//! branch from reading `.git/HEAD` directly, the number of tracked files from the index file's
//! header. The section is rendered once per `ContextBuilder`, so it is frozen for the session
//! (prompt-cache stability). When the status was not listed, the section says why.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use codecoder_stdx::{Clock, format_utc_ms};

use crate::agents_md::find_project_root;

/// At most this many lines of `git status --porcelain` are listed.
const MAX_STATUS_LINES: usize = 10;

/// Above this many tracked files, `git status` is not run at session start: it stats every
/// tracked file and reads every directory, which takes hundreds of milliseconds in a repository
/// of 100,000 files and seconds on a cold cache, before the first request.
pub const GIT_STATUS_MAX_TRACKED_FILES: u32 = 20_000;

/// What the session knows of `git status` at its start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitStatus {
    /// The output of `git status --porcelain` (v1).
    Porcelain(String),
    /// Not run: the index lists `tracked_files` files, more than `limit`.
    TooManyFiles {
        /// Entries in git's index.
        tracked_files: u32,
        /// The most tracked files a status is run for (`GIT_STATUS_MAX_TRACKED_FILES`).
        limit: u32,
    },
    /// Git did not answer within `timeout`; it was stopped.
    TimedOut {
        /// How long the session waited.
        timeout: Duration,
    },
}

/// What the caller knows about where the agent runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    /// The working directory, absolute.
    pub cwd: PathBuf,
    /// The operating system, as shown to the model (`linux (x86_64)`).
    pub os: String,
    /// The user's shell (`$SHELL`), when known.
    pub shell: Option<String>,
    /// `git status` in `cwd`, run (or not run, and why) by the caller through the sandbox;
    /// `None` when not computed (not a repository, git is missing or failed).
    pub git_status: Option<GitStatus>,
}

impl Environment {
    /// `cwd` and `shell` on the OS this was compiled for, without git status.
    pub fn new(cwd: impl Into<PathBuf>, shell: Option<String>) -> Self {
        Self {
            cwd: cwd.into(),
            os: format!("{} ({})", std::env::consts::OS, std::env::consts::ARCH),
            shell,
            git_status: None,
        }
    }
}

/// The environment section's text, with the date read from `clock` now.
pub fn render_environment(environment: &Environment, clock: &dyn Clock) -> String {
    let now = format_utc_ms(clock.now_ms());
    let date = now.split(' ').next().unwrap_or(&now);
    let mut text = String::from("# Environment\n\n");
    let _ = writeln!(text, "- Working directory: {}", environment.cwd.display());
    let _ = writeln!(text, "- Operating system: {}", environment.os);
    if let Some(shell) = &environment.shell {
        let _ = writeln!(text, "- Shell: {shell}");
    }
    let _ = writeln!(text, "- Date at session start: {date} (UTC)");
    match find_project_root(&environment.cwd) {
        Some(root) => {
            let _ = writeln!(text, "- Git repository: {}", root.display());
            if let Some(head) = read_git_head(root) {
                let _ = writeln!(text, "- Git branch: {head}");
            }
            match &environment.git_status {
                Some(GitStatus::Porcelain(porcelain)) => {
                    let _ = writeln!(
                        text,
                        "- Git status at session start: {}",
                        summarize_git_status(porcelain)
                    );
                }
                Some(GitStatus::TooManyFiles { tracked_files, limit }) => {
                    let _ = writeln!(
                        text,
                        "- Git status at session start: not taken (the repository tracks \
                         {tracked_files} files, more than the {limit} a status is taken for); \
                         run `git status -- <path>` for the part you work on"
                    );
                }
                Some(GitStatus::TimedOut { timeout }) => {
                    let _ = writeln!(
                        text,
                        "- Git status at session start: not taken (git took longer than {} \
                         ms); run `git status -- <path>` for the part you work on",
                        timeout.as_millis()
                    );
                }
                None => {}
            }
        }
        None => text.push_str("- Not a git repository\n"),
    }
    text.truncate(text.trim_end().len());
    text
}

/// The checked-out branch of the repository at `root`, read from its `HEAD` file: the branch
/// name, or `detached at <short sha>`. `None` when `HEAD` cannot be read or parsed.
pub fn read_git_head(root: &Path) -> Option<String> {
    let head = fs_err::read_to_string(git_dir(root)?.join("HEAD")).ok()?;
    let head = head.trim();
    if let Some(reference) = head.strip_prefix("ref:") {
        let reference = reference.trim();
        return Some(reference.strip_prefix("refs/heads/").unwrap_or(reference).to_owned());
    }
    if head.len() >= 7 && head.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return Some(format!("detached at {}", &head[..7]));
    }
    None
}

/// How many files the repository at `root` tracks: the entry count in the 12-byte header of its
/// index file (`DIRC`, version, count), read without git. `None` when there is no index (a
/// fresh repository) or it cannot be read or parsed. A sparse index counts a collapsed
/// directory as one entry.
pub fn git_tracked_files(root: &Path) -> Option<u32> {
    let mut index = fs_err::File::open(git_dir(root)?.join("index")).ok()?;
    let mut header = [0_u8; 12];
    index.read_exact(&mut header).ok()?;
    if &header[..4] != b"DIRC" {
        return None;
    }
    let version = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
    if !(2..=4).contains(&version) {
        return None;
    }
    Some(u32::from_be_bytes([header[8], header[9], header[10], header[11]]))
}

/// The git directory of the repository whose work tree is `root`: `root/.git`, or where a
/// `.git` file points (a worktree, a submodule).
fn git_dir(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    if !dot_git.is_file() {
        return Some(dot_git);
    }
    let pointer = fs_err::read_to_string(&dot_git).ok()?;
    let target = pointer.trim().strip_prefix("gitdir:")?.trim();
    Some(root.join(target))
}

/// A short summary of `git status --porcelain` (v1) output: counts by kind, then the first
/// few lines as git printed them; `clean` when there is nothing.
pub fn summarize_git_status(porcelain: &str) -> String {
    let lines: Vec<&str> = porcelain.lines().filter(|line| line.len() > 3).collect();
    if lines.is_empty() {
        return "clean".to_owned();
    }
    let kinds = [
        ("modified", ['M', 'T']),
        ("added", ['A', 'A']),
        ("deleted", ['D', 'D']),
        ("renamed", ['R', 'C']),
        ("conflicted", ['U', 'U']),
        ("untracked", ['?', '?']),
    ];
    let mut counts = [0_usize; 6];
    for line in &lines {
        let mut codes = line.chars().take(2);
        let (x, y) = (codes.next().unwrap_or(' '), codes.next().unwrap_or(' '));
        let kind = if x == 'U' || y == 'U' || (x == y && matches!(x, 'A' | 'D')) {
            4
        } else {
            let code = if x == ' ' { y } else { x };
            kinds.iter().position(|(_, chars)| chars.contains(&code)).unwrap_or(0)
        };
        counts[kind] += 1;
    }
    let summary: Vec<String> = kinds
        .iter()
        .zip(counts)
        .filter(|(_, count)| *count > 0)
        .map(|((name, _), count)| format!("{count} {name}"))
        .collect();
    let mut text = summary.join(", ");
    for line in lines.iter().take(MAX_STATUS_LINES) {
        let _ = write!(text, "\n    {line}");
    }
    if lines.len() > MAX_STATUS_LINES {
        let _ = write!(text, "\n    … and {} more", lines.len() - MAX_STATUS_LINES);
    }
    text
}
