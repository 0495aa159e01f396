//! Checkpoints of a session's turns, and undoing them: the runtime's side of `/undo`,
//! `/rewind` and `codecoder sessions undo`.
//!
//! `SessionCheckpoints` implements the kernel's `Checkpoints`: a file tool's first write of a
//! path in a turn keeps the path's prior content in the session's blob store. When the working
//! directory is in a git repository, the work tree is also snapshotted before the turn's first
//! command and when the turn ends (`git add -A` into a temporary index, then `git write-tree`: the repository's real index
//! and refs are untouched; the snapshot's objects land in its object store as unreachable
//! objects, as `git stash create` leaves them, and `git gc` prunes them); every path that differs
//! between the two trees and no tool wrote is kept too, with its content from the first tree.
//! That catches what `run_command` (and background jobs started in the turn) changed, as far as
//! git sees: ignored files, files outside the repository, submodules' contents, and what other
//! tools (MCP servers) or earlier background jobs change are not seen (best effort). A turn that
//! runs no command costs no git process. Processes start only through
//! `sandbox`, in the command environment, bounded in time.
//!
//! Invariant: checkpointing never fails a turn or a write; what it cannot keep is written as a
//! note in the turn's `checkpoint` record.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use codecoder_protocol::{ChangedBy, CheckpointRecord, RecordBody, RewindRecord, TurnId, env};
use codecoder_sandbox::{CommandSpec, Environment, SpawnConfig, Wait};
use codecoder_session::checkpoint::{RewindPlan, RewindReport, TurnCapture, apply, plan_rewind};
use codecoder_session::{BlobStore, SessionStore, WriterConfig, load};

use crate::Runtime;
use crate::error::{Error, Result};

/// The most a git snapshot command may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest prior content kept from a git snapshot (bigger files get a note instead).
const GIT_BLOB_LIMIT: usize = 64 << 20;
/// Git's mode of a submodule entry.
const SUBMODULE_MODE: &str = "160000";
/// Git's mode of a missing entry.
const ABSENT_MODE: &str = "000000";

/// The session's checkpoints: one open turn at a time.
pub struct SessionCheckpoints {
    blobs: BlobStore,
    git: Option<GitRepo>,
    // A Mutex because tool workers (several at once) call `before_write` through `&self`; held
    // while one path is kept, never across a channel operation.
    turn: Mutex<Option<OpenTurn>>,
}

struct OpenTurn {
    capture: TurnCapture,
    /// The work tree before the turn's first command, once one ran.
    start_tree: Option<String>,
    /// Whether a command ran (and a snapshot was tried).
    commands_ran: bool,
}

impl SessionCheckpoints {
    /// Checkpoints into `blobs`; with git snapshots when `cwd` is in a repository (git runs in
    /// `environment`).
    pub fn new(blobs: BlobStore, cwd: &Path, environment: Environment) -> Self {
        let git = GitRepo::detect(cwd, environment, blobs.dir().join("git-index"));
        Self { blobs, git, turn: Mutex::new(None) }
    }
}

impl codecoder_kernel::Checkpoints for SessionCheckpoints {
    fn turn_started(&self, _turn: TurnId) {
        let capture = TurnCapture::new(self.blobs.clone());
        *self.turn.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(OpenTurn { capture, start_tree: None, commands_ran: false });
    }

    /// Snapshots the work tree before the turn's first command: until a command runs, only
    /// the file tools change files, and they are checkpointed path by path.
    fn before_command(&self) {
        let Some(git) = &self.git else { return };
        let mut turn = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(open) = turn.as_mut() else { return };
        if open.commands_ran {
            return;
        }
        open.commands_ran = true;
        match git.snapshot() {
            Ok(tree) => open.start_tree = Some(tree),
            Err(message) => open.capture.add_note(format!(
                "changes made by commands not checkpointed: no git snapshot before the first: {message}"
            )),
        }
    }

    fn before_write(&self, path: &Path) {
        let mut turn = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(open) = turn.as_mut() {
            open.capture.before_write(path);
        }
    }

    fn turn_ended(&self, turn: TurnId) -> Option<CheckpointRecord> {
        let open = self.turn.lock().unwrap_or_else(PoisonError::into_inner).take()?;
        let OpenTurn { mut capture, start_tree, .. } = open;
        if let (Some(git), Some(start)) = (&self.git, start_tree)
            && let Err(message) = git.add_changes(&start, &mut capture)
        {
            capture.add_note(format!("changes made by commands not checkpointed: {message}"));
        }
        capture.finish(turn)
    }
}

/// A git work tree the session runs in.
struct GitRepo {
    root: PathBuf,
    git_dir: PathBuf,
    environment: Environment,
    index_dir: PathBuf,
}

impl GitRepo {
    fn detect(cwd: &Path, environment: Environment, index_dir: PathBuf) -> Option<Self> {
        codecoder_context::find_project_root(cwd)?;
        let probe = Self { root: cwd.to_owned(), git_dir: PathBuf::new(), environment, index_dir };
        let out = probe.git(&["rev-parse", "--show-toplevel", "--absolute-git-dir"], None).ok()?;
        let text = String::from_utf8_lossy(&out).into_owned();
        let mut lines = text.lines();
        let root = PathBuf::from(lines.next()?);
        let git_dir = PathBuf::from(lines.next()?);
        Some(Self { root, git_dir, ..probe })
    }

    /// Runs git in the work tree's root; stdout on success.
    fn git(&self, args: &[&str], index: Option<&Path>) -> std::result::Result<Vec<u8>, String> {
        let mut spec = CommandSpec::new("git", args.iter().copied());
        spec.cwd = Some(self.root.clone());
        if let Some(index) = index {
            spec.env.push((env::GIT_INDEX_FILE.into(), index.as_os_str().to_owned()));
        }
        let config =
            SpawnConfig { environment: self.environment.clone(), ..SpawnConfig::standard() };
        let wait = Wait::within(GIT_TIMEOUT);
        let collected = codecoder_sandbox::output(&spec, &config, &wait, GIT_BLOB_LIMIT + 1)
            .map_err(|err| format!("git {}: {err}", args.join(" ")))?;
        if !collected.success() {
            return Err(format!(
                "git {} failed: {}",
                args.join(" "),
                collected.stderr_text().trim()
            ));
        }
        Ok(collected.stdout)
    }

    /// The work tree as a tree object (tracked and untracked, not ignored, files).
    fn snapshot(&self) -> std::result::Result<String, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        fs_err::create_dir_all(&self.index_dir).map_err(|err| err.to_string())?;
        let index = self.index_dir.join(format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        // Starting from the real index lets git skip rehashing files whose stat is unchanged.
        let real = self.git_dir.join("index");
        if real.exists() {
            fs_err::copy(&real, &index).map_err(|err| err.to_string())?;
        }
        let tree = self
            .git(&["add", "-A", "--", "."], Some(&index))
            .and_then(|_| self.git(&["write-tree"], Some(&index)));
        let _ = fs_err::remove_file(&index);
        Ok(String::from_utf8_lossy(&tree?).trim().to_owned())
    }

    /// Keeps, in `capture`, every path that differs between `start` and the work tree now and
    /// that no tool wrote, with its content in `start`.
    fn add_changes(
        &self,
        start: &str,
        capture: &mut TurnCapture,
    ) -> std::result::Result<(), String> {
        let end = self.snapshot()?;
        if end == start {
            return Ok(());
        }
        let raw = self.git(&["diff-tree", "-r", "-z", "--no-renames", start, &end], None)?;
        let mut fields = raw.split(|byte| *byte == 0).filter(|field| !field.is_empty());
        while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
            let meta = String::from_utf8_lossy(meta);
            let mut parts = meta.trim_start_matches(':').split(' ');
            let (Some(old_mode), Some(new_mode), Some(old_sha)) =
                (parts.next(), parts.next(), parts.next())
            else {
                return Err(format!("unexpected git diff-tree output `{meta}`"));
            };
            let path = self.root.join(String::from_utf8_lossy(path).as_ref());
            if capture.contains(&path) {
                continue;
            }
            if old_mode == SUBMODULE_MODE || new_mode == SUBMODULE_MODE {
                capture.add_note(format!("{}: a submodule; not checkpointed", path.display()));
                continue;
            }
            if old_mode == ABSENT_MODE {
                capture.add_prior(&path, None, ChangedBy::Shell);
                continue;
            }
            let bytes = self.git(&["cat-file", "blob", old_sha], None)?;
            if bytes.len() > GIT_BLOB_LIMIT {
                capture.add_note(format!("{}: too large to checkpoint", path.display()));
                continue;
            }
            capture.add_prior(&path, Some(&bytes), ChangedBy::Shell);
        }
        Ok(())
    }
}

/// A turn a rewind can go back to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindPoint {
    /// The turn.
    pub turn: TurnId,
    /// Its first user message's text.
    pub text: String,
    /// Whether the conversation can be rewound to before it (not when a compaction came since).
    pub conversation: bool,
    /// Whether files changed in it or later can be restored.
    pub files: bool,
}

/// The turns of the log at `path` a rewind can go back to, oldest first: those whose user
/// message is still in the history.
///
/// # Errors
/// When the log cannot be read.
pub fn rewind_points(path: &Path) -> Result<Vec<RewindPoint>> {
    let loaded = load(path)?;
    let projection = loaded.projection();
    let live = codecoder_session::checkpoint::live_checkpoints(loaded.records());
    let mut points: Vec<RewindPoint> = Vec::new();
    let mut turn = None;
    for record in loaded.records() {
        match &record.body {
            RecordBody::TurnStart { turn: started } => turn = Some(*started),
            RecordBody::UserMessage { message } => {
                let Some(current) = turn.take() else { continue };
                if !projection.can_rewind_to(current) {
                    continue;
                }
                points.push(RewindPoint {
                    turn: current,
                    text: message.text(),
                    conversation: true,
                    files: live.iter().any(|checkpoint| checkpoint.turn >= current),
                });
            }
            _ => {}
        }
    }
    Ok(points)
}

/// What `/undo` or `/rewind` asks of a running session's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RewindRequest {
    /// Back to before this turn; `None`: the newest turn that changed files and was not undone
    /// (`/undo`).
    pub turn: Option<TurnId>,
    /// Rewind the conversation too (needs `turn`).
    pub conversation: bool,
    /// Restore the files.
    pub files: bool,
    /// Restore files changed outside codecoder since too.
    pub force: bool,
}

/// What `rewind` found or did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RewindOutcome {
    /// Nothing was done: these files changed outside codecoder since; ask the person, then
    /// call again with `force` to restore them too.
    Conflicts(Vec<PathBuf>),
    /// Done. The front-end sends `record` to the agent (`AgentCommand::Rewind`), which logs it
    /// and rebuilds the next request's history from it.
    Done {
        /// The `rewind` record to log.
        record: RewindRecord,
        /// What was restored (`None` when no file was asked for or none changed).
        report: Option<RewindReport>,
    },
}

/// Carries out a rewind of the running session whose log is `log` (read, not written: the
/// session's own agent logs the record). Files are restored from the blob store under `home`;
/// when any to restore changed outside codecoder since and `force` is not set, nothing is done
/// and those paths come back for the front-end to ask about.
///
/// # Errors
/// When the log cannot be read, the turn cannot be rewound to (never began, or the
/// conversation is compacted past it), nothing is left to do, or a file cannot be restored.
pub fn rewind(home: &Path, log: &Path, request: &RewindRequest) -> Result<RewindOutcome> {
    let loaded = load(log)?;
    if request.conversation {
        let Some(turn) = request.turn else {
            return Err(Error::usage("a conversation rewind names the turn to go back to"));
        };
        if !loaded.projection().can_rewind_to(turn) {
            return Err(Error::usage(format!(
                "the conversation cannot go back to before turn {turn}: it never began, or a \
                 compaction since replaced it"
            )));
        }
    }
    let plan = if request.files {
        match plan_rewind(loaded.records(), request.turn) {
            Ok(plan) => Some(plan),
            // Nothing on disk to restore: a conversation rewind goes on without files.
            Err(codecoder_session::Error::NothingToUndo { .. }) if request.conversation => None,
            Err(err) => return Err(err.into()),
        }
    } else {
        None
    };
    let turn = match (&plan, request.turn) {
        (Some(plan), _) => plan.turn,
        (None, Some(turn)) => turn,
        (None, None) => return Err(Error::usage("nothing to rewind")),
    };
    let report = match &plan {
        Some(plan) => {
            let conflicts: Vec<PathBuf> = plan
                .files
                .iter()
                .filter(|file| file.conflicts())
                .map(|file| file.path.clone())
                .collect();
            if !conflicts.is_empty() && !request.force {
                return Ok(RewindOutcome::Conflicts(conflicts));
            }
            Some(apply(plan, &SessionStore::new(home).blobs(), request.force)?)
        }
        None => None,
    };
    let record = match &report {
        Some(report) => report.record(turn, request.conversation),
        None => RewindRecord {
            turn,
            conversation: request.conversation,
            files: false,
            restored: Vec::new(),
            skipped: Vec::new(),
        },
    };
    Ok(RewindOutcome::Done { record, report })
}

/// What `Runtime::undo_session` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoOutcome {
    /// What it planned.
    pub plan: RewindPlan,
    /// What it restored and left alone.
    pub report: RewindReport,
    /// Whether the `rewind` record was logged (not when a path was left alone: running it
    /// again with `force` finishes the job).
    pub logged: bool,
}

impl Runtime {
    /// Takes the files of session `query` back to before `turn` (default: the newest turn that
    /// changed files and was not undone), locking its log; logs a `rewind` record when every
    /// path was restored.
    ///
    /// # Errors
    /// When the session is in use or cannot be read, nothing is left to undo, or a file cannot
    /// be restored.
    pub fn undo_session(
        &self,
        query: &str,
        turn: Option<TurnId>,
        force: bool,
    ) -> Result<UndoOutcome> {
        let store = SessionStore::new(&self.home);
        let path = store.find(query)?;
        let (loaded, mut writer) = store.resume(&path, WriterConfig::standard())?;
        let plan = plan_rewind(loaded.records(), turn)?;
        let report = apply(&plan, &store.blobs(), force)?;
        let logged = report.skipped.is_empty();
        if logged {
            writer.append(RecordBody::Rewind(report.record(plan.turn, false)))?;
            writer.sync()?;
        }
        Ok(UndoOutcome { plan, report, logged })
    }
}
