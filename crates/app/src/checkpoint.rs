//! Checkpoints of a session's turns, and undoing them: the runtime's side of `/undo`,
//! `/rewind` and `codecoder sessions undo`.
//!
//! `SessionCheckpoints` implements the kernel's `Checkpoints`: a file tool's first write of a
//! path in a turn keeps the path's prior content in the session's blob store. When the working
//! directory is in a git repository, what the turn's commands change is kept too, with its
//! content from before the turn's first command. The change watcher (`watch.rs`) follows the
//! work tree from the session's first turn on (git's index and inotify, no walk of the tree per
//! turn); where it cannot (no inotify, the watch limit, an overflow, an index it cannot read), the
//! turn falls back to git snapshots of the whole tree before the first command and at the end
//! (`git.rs`: `git add -A` into a temporary index, then `git write-tree`; the repository's real
//! index and refs are untouched). Either way it is as far as git sees: ignored files, files
//! outside the repository, nested repositories and submodules' contents, and what other tools
//! (MCP servers) or earlier background jobs change are not seen (best effort). A turn that runs
//! no command costs no git process. Processes start only through `sandbox`, in the command
//! environment, bounded in time.
//!
//! Invariant: checkpointing never fails a turn or a write; what it cannot keep is written as a
//! note in the turn's `checkpoint` record.

mod git;
mod git_index;
mod watch;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

use codecoder_protocol::{ChangedBy, CheckpointRecord, RecordBody, RewindRecord, TurnId};
use codecoder_sandbox::Environment;
use codecoder_session::checkpoint::{RewindPlan, RewindReport, TurnCapture, apply, plan_rewind};
use codecoder_session::{BlobStore, SessionStore, WriterConfig, load};

use crate::Runtime;
use crate::error::{Error, Result};
use git::GitRepo;
use watch::{Prior, TreeWatch, Unwatched};

/// The session's checkpoints: one open turn at a time.
pub struct SessionCheckpoints {
    blobs: BlobStore,
    cwd: PathBuf,
    environment: Environment,
    /// Started at the first turn, so the scan overlaps the model's first answer, not start-up.
    watch: OnceLock<TreeWatch>,
    /// Whether a checkpoint said already why the watcher is not used.
    fallback_noted: std::sync::atomic::AtomicBool,
    // A Mutex because tool workers (several at once) call `before_write` through `&self`; held
    // while one path is kept, never across a channel operation.
    turn: Mutex<Option<OpenTurn>>,
}

struct OpenTurn {
    capture: TurnCapture,
    /// How the turn's commands are followed, once one ran.
    commands: Commands,
}

enum Commands {
    /// No command ran yet.
    None,
    /// The watcher marked the tree before the first.
    Watched,
    /// A whole-tree snapshot was taken before the first.
    Snapshot { repo: std::sync::Arc<GitRepo>, tree: String },
    /// Nothing follows them (no repository, or no snapshot could be taken).
    Unfollowed,
}

impl SessionCheckpoints {
    /// Checkpoints into `blobs`; with what commands change too when `cwd` is in a git
    /// repository (git runs in `environment`).
    pub fn new(blobs: BlobStore, cwd: &Path, environment: Environment) -> Self {
        Self {
            blobs,
            cwd: cwd.to_owned(),
            environment,
            watch: OnceLock::new(),
            fallback_noted: std::sync::atomic::AtomicBool::new(false),
            turn: Mutex::new(None),
        }
    }

    fn watch(&self) -> &TreeWatch {
        self.watch.get_or_init(|| {
            TreeWatch::start(
                self.cwd.clone(),
                self.environment.clone(),
                self.blobs.dir().join("git-index"),
            )
        })
    }
}

impl codecoder_kernel::Checkpoints for SessionCheckpoints {
    fn turn_started(&self, _turn: TurnId) {
        self.watch();
        let capture = TurnCapture::new(self.blobs.clone());
        *self.turn.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(OpenTurn { capture, commands: Commands::None });
    }

    /// Marks the work tree before the turn's first command: until a command runs, only the
    /// file tools change files, and they are checkpointed path by path.
    fn before_command(&self) {
        let mut turn = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(open) = turn.as_mut() else { return };
        if !matches!(open.commands, Commands::None) {
            return;
        }
        let mut notes = Vec::new();
        open.commands = match self.watch().mark(&self.blobs, &mut notes) {
            Ok(()) => Commands::Watched,
            Err(Unwatched::NotRepo | Unwatched::Fallback { repo: None, .. }) => {
                Commands::Unfollowed
            }
            Err(Unwatched::Fallback { repo: Some(repo), reason }) => {
                if !self.fallback_noted.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    notes.push(format!(
                        "commands' changes followed by whole-tree git snapshots: {reason}"
                    ));
                }
                match repo.snapshot() {
                    Ok(tree) => Commands::Snapshot { repo, tree },
                    Err(message) => {
                        notes.push(format!(
                            "changes made by commands not checkpointed: no git snapshot before the \
                         first: {message}"
                        ));
                        Commands::Unfollowed
                    }
                }
            }
        };
        for note in notes {
            open.capture.add_note(note);
        }
    }

    /// Keeps `path`'s content before the turn: what is there now, unless a command of the turn
    /// changed it already, then what the watcher kept from before that command.
    fn before_write(&self, path: &Path) {
        let mut turn = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(open) = turn.as_mut() else { return };
        if matches!(open.commands, Commands::Watched)
            && !open.capture.contains(path)
            && let Some(prior) = self.watch().prior_at_mark(path)
        {
            match prior {
                Ok(Prior::Blob(blob)) => open.capture.add_prior_blob(path, blob, ChangedBy::Shell),
                Ok(Prior::Bytes(bytes)) => {
                    open.capture.add_prior(path, Some(&bytes), ChangedBy::Shell);
                }
                Err(message) => open
                    .capture
                    .add_note(format!("{}: not checkpointed: {message}", path.display())),
            }
            return;
        }
        open.capture.before_write(path);
    }

    fn turn_ended(&self, turn: TurnId) -> Option<CheckpointRecord> {
        let open = self.turn.lock().unwrap_or_else(PoisonError::into_inner).take()?;
        let OpenTurn { mut capture, commands } = open;
        let followed = match commands {
            Commands::Watched => self.watch().finish(&mut capture),
            Commands::Snapshot { repo, tree } => repo.add_changes(&tree, &mut capture),
            Commands::None | Commands::Unfollowed => Ok(()),
        };
        if let Err(message) = followed {
            capture.add_note(format!("changes made by commands not checkpointed: {message}"));
        }
        capture.finish(turn)
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
