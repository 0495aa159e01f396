//! Host services front-ends offer beside a session: the git probes (`/diff`, the prompt's
//! `git status`), a starter AGENTS.md (`/init`), the sessions a picker offers. Processes are
//! started through `sandbox::output`, bounded in time.

use std::path::Path;
use std::time::Duration;

use codecoder_context::{GIT_STATUS_MAX_TRACKED_FILES, GitStatus};
use codecoder_sandbox::{CommandSpec, Outcome, SpawnConfig, Wait};

use crate::Runtime;
use crate::error::{Error, Result};

/// Bytes kept of each stream of a git probe: far more than a screen or a prompt shows, and a
/// bound on memory when a repository holds a giant diff.
const GIT_OUTPUT_LIMIT: usize = 64 << 20;

/// How long the prompt's `git status` may take before the session starts without it.
const GIT_STATUS_TIMEOUT: Duration = Duration::from_secs(1);

/// `git status --porcelain` in `cwd`, for the prompt's environment section; `None` outside a
/// repository or when git is missing or fails. Not run when the index lists more than
/// `GIT_STATUS_MAX_TRACKED_FILES` files (read from its header, without git), and stopped after
/// `GIT_STATUS_TIMEOUT`: the section then says so. It runs in the command environment (its
/// output reaches the model like a command's), without optional locks, so it never takes
/// `index.lock` from under the person's own git commands.
pub(crate) fn git_status(
    cwd: &Path,
    environment: codecoder_sandbox::Environment,
) -> Option<GitStatus> {
    let root = codecoder_context::find_project_root(cwd)?;
    if let Some(tracked_files) = codecoder_context::git_tracked_files(root)
        && tracked_files > GIT_STATUS_MAX_TRACKED_FILES
    {
        return Some(GitStatus::TooManyFiles {
            tracked_files,
            limit: GIT_STATUS_MAX_TRACKED_FILES,
        });
    }
    let mut spec = CommandSpec::new("git", ["--no-optional-locks", "status", "--porcelain"]);
    spec.cwd = Some(cwd.to_owned());
    let config = SpawnConfig { environment, ..SpawnConfig::standard() };
    let wait = Wait::within(GIT_STATUS_TIMEOUT);
    let collected = codecoder_sandbox::output(&spec, &config, &wait, GIT_OUTPUT_LIMIT).ok()?;
    match collected.outcome {
        Outcome::TimedOut => Some(GitStatus::TimedOut { timeout: GIT_STATUS_TIMEOUT }),
        Outcome::Exited(status) if status.success() => {
            Some(GitStatus::Porcelain(collected.stdout_text()))
        }
        Outcome::Exited(_) | Outcome::Cancelled | Outcome::Killed => None,
    }
}

/// `git diff` (tracked changes against the index) in `cwd`, bounded to 10 seconds.
///
/// # Errors
/// When git cannot start, fails (not a repository) or takes too long.
pub fn git_diff(cwd: &Path) -> Result<String> {
    let mut spec = CommandSpec::new("git", ["--no-pager", "diff", "--no-color"]);
    spec.cwd = Some(cwd.to_owned());
    let wait = Wait::within(Duration::from_secs(10));
    let collected =
        codecoder_sandbox::output(&spec, &SpawnConfig::standard(), &wait, GIT_OUTPUT_LIMIT)?;
    if collected.success() {
        return Ok(collected.stdout_text());
    }
    Err(Error::usage(format!("git diff failed: {}", collected.stderr_text().trim())))
}

/// Writes a starter AGENTS.md in `cwd` (never overwrites one) and says what it did.
///
/// # Errors
/// When the file cannot be written.
pub fn init_agents_md(cwd: &Path) -> Result<String> {
    let path = cwd.join("AGENTS.md");
    if path.exists() {
        return Ok(format!("{} already exists; edit it by hand (or ask me to)", path.display()));
    }
    let name = cwd
        .file_name()
        .map_or_else(|| "this project".to_owned(), |n| n.to_string_lossy().into_owned());
    let mut commands = Vec::new();
    if cwd.join("Cargo.toml").exists() {
        commands.extend([
            "- Build: `cargo build`",
            "- Test: `cargo test`",
            "- Lint: `cargo clippy --all-targets -- -D warnings`",
            "- Format: `cargo fmt`",
        ]);
    }
    if cwd.join("package.json").exists() {
        commands.extend(["- Install: `npm install`", "- Test: `npm test`"]);
    }
    if cwd.join("pyproject.toml").exists() || cwd.join("setup.py").exists() {
        commands.extend(["- Test: `pytest`"]);
    }
    if cwd.join("go.mod").exists() {
        commands.extend(["- Build: `go build ./...`", "- Test: `go test ./...`"]);
    }
    if cwd.join("Makefile").exists() {
        commands.extend(["- Build: `make`", "- Test: `make test`"]);
    }
    if commands.is_empty() {
        commands.push("- (How to build, test and lint this project.)");
    }
    let text = format!(
        "# Working on {name}\n\n## Commands\n{}\n\n## Conventions\n- (Code style, naming, error handling.)\n- (Where tests live and how they are written.)\n\n## Layout\n- (The main directories and what each holds.)\n",
        commands.join("\n")
    );
    fs_err::write(&path, text).map_err(Error::io("writing AGENTS.md"))?;
    Ok(format!("wrote {} — fill in the conventions and layout", path.display()))
}

/// A session a picker offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionListing {
    /// Its id.
    pub id: String,
    /// Its title (the first prompt).
    pub title: String,
    /// When it last changed, Unix ms.
    pub updated_ms: u64,
}

impl Runtime {
    /// The sessions of the working directory worth resuming, newest first: readable, and
    /// someone typed into them.
    ///
    /// # Errors
    /// When the session index cannot be opened or refreshed.
    pub fn resumable_sessions(&self) -> Result<Vec<SessionListing>> {
        let cwd = self.cwd.to_string_lossy();
        let listed = crate::list_sessions(&self.home, Some(&cwd), None, &mut Vec::new())?;
        Ok(listed
            .sessions
            .into_iter()
            .filter(|s| s.problem.is_none() && !s.title.is_empty())
            .map(|s| SessionListing {
                id: s.id.to_string(),
                title: s.title,
                updated_ms: s.updated_ms,
            })
            .collect())
    }
}
