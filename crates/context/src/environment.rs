//! The environment section: working directory, OS, shell, date, git branch and status.
//!
//! Invariants: nothing here reads the process environment or spawns a process. The shell and
//! the git status come from the caller (`Environment`); the date from an injected `Clock`; the
//! branch from reading `.git/HEAD` directly. The section is rendered once per `ContextBuilder`,
//! so it is frozen for the session (prompt-cache stability).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use codecoder_stdx::{Clock, format_utc_ms};

use crate::agents_md::find_project_root;

/// At most this many lines of `git status --porcelain` are listed.
const MAX_STATUS_LINES: usize = 10;

/// What the caller knows about where the agent runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    /// The working directory, absolute.
    pub cwd: PathBuf,
    /// The operating system, as shown to the model (`linux (x86_64)`).
    pub os: String,
    /// The user's shell (`$SHELL`), when known.
    pub shell: Option<String>,
    /// The output of `git status --porcelain` in `cwd`, run by the caller through the sandbox;
    /// `None` when not computed (not a repository, or git is missing).
    pub git_status_porcelain: Option<String>,
}

impl Environment {
    /// `cwd` and `shell` on the OS this was compiled for, without git status.
    pub fn new(cwd: impl Into<PathBuf>, shell: Option<String>) -> Self {
        Self {
            cwd: cwd.into(),
            os: format!("{} ({})", std::env::consts::OS, std::env::consts::ARCH),
            shell,
            git_status_porcelain: None,
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
            if let Some(porcelain) = &environment.git_status_porcelain {
                let _ = writeln!(
                    text,
                    "- Git status at session start: {}",
                    summarize_git_status(porcelain)
                );
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
    let dot_git = root.join(".git");
    // In a worktree or submodule, `.git` is a file pointing at the real git directory.
    let git_dir = if dot_git.is_file() {
        let pointer = fs_err::read_to_string(&dot_git).ok()?;
        let target = pointer.trim().strip_prefix("gitdir:")?.trim();
        root.join(target)
    } else {
        dot_git
    };
    let head = fs_err::read_to_string(git_dir.join("HEAD")).ok()?;
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
