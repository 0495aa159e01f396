//! Checkpoints and rewinds of the files a session's turns changed.
//!
//! `TurnCapture` collects one turn's changes: before the turn first writes a path its prior
//! content goes into the session's content-addressed `BlobStore` (or the path is noted as
//! absent), and `finish` hashes what the turn left, giving the `checkpoint` record.
//! `plan_rewind` reads a log's records and works out what taking the files back to before a turn
//! means: for every path the still-standing checkpoints of that turn and the later ones touched,
//! the content before the oldest of them and the content the newest of them left. `apply`
//! restores those paths and reports what it did.
//!
//! Prior contents are stored without waiting for the disk (one fsync per file made a turn that
//! edits 100 files half a second slower): a crash of codecoder loses nothing, a crash of the
//! machine may damage a blob, which `apply` detects by its hash and refuses to restore from.
//!
//! Invariants: a path whose current content is neither what codecoder left nor what it would
//! restore is a conflict, left alone unless forced (it changed outside codecoder). A path whose
//! content is already the one to restore is counted as restored and not written again, so an
//! undo cut short by a crash (no `rewind` record logged) can be run again. A rewind's files
//! take the checkpoints of its turn and later ones out of play for later rewinds.

use std::collections::{HashMap, HashSet};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use codecoder_protocol::{
    ChangedBy, CheckpointRecord, FileCheckpoint, Record, RecordBody, RewindRecord, TurnId,
};

use crate::blob::{BlobStore, sha256_hex};
use crate::error::{Error, Result};

/// One turn's changes so far.
#[derive(Debug)]
pub struct TurnCapture {
    blobs: BlobStore,
    files: Vec<(PathBuf, Option<String>, ChangedBy)>,
    seen: HashSet<PathBuf>,
    notes: Vec<String>,
}

impl TurnCapture {
    /// An empty capture storing prior contents in `blobs`.
    pub fn new(blobs: BlobStore) -> Self {
        Self { blobs, files: Vec::new(), seen: HashSet::new(), notes: Vec::new() }
    }

    /// Whether `path` is already captured this turn.
    pub fn contains(&self, path: &Path) -> bool {
        self.seen.contains(path)
    }

    /// Keeps `path`'s current content (or its absence) unless already kept this turn. Call it
    /// before a tool's first write of the path. A file that cannot be read is noted (it cannot
    /// be restored) and not kept.
    pub fn before_write(&mut self, path: &Path) {
        if self.seen.contains(path) {
            return;
        }
        let before = match fs_err::read(path) {
            Ok(bytes) => match self.blobs.put_unsynced(&bytes) {
                Ok(sha) => Some(sha),
                Err(err) => return self.note(path, &err.to_string()),
            },
            Err(err) if err.kind() == ErrorKind::NotFound => None,
            Err(err) => return self.note(path, &err.to_string()),
        };
        self.seen.insert(path.to_owned());
        self.files.push((path.to_owned(), before, ChangedBy::Tool));
    }

    /// Keeps `before` as `path`'s content before the turn (`None`: absent), as found by
    /// something other than a tool's write (a git snapshot). Ignored when already kept.
    pub fn add_prior(&mut self, path: &Path, before: Option<&[u8]>, by: ChangedBy) {
        if self.seen.contains(path) {
            return;
        }
        let before = match before.map(|bytes| self.blobs.put_unsynced(bytes)).transpose() {
            Ok(before) => before,
            Err(err) => return self.note(path, &err.to_string()),
        };
        self.seen.insert(path.to_owned());
        self.files.push((path.to_owned(), before, by));
    }

    /// Keeps `before`, a blob already in the store (`None`: absent), as `path`'s content before
    /// the turn, as found by something other than a tool's write (the change watcher kept it
    /// before the turn's first command). Ignored when already kept.
    pub fn add_prior_blob(&mut self, path: &Path, before: Option<String>, by: ChangedBy) {
        if self.seen.insert(path.to_owned()) {
            self.files.push((path.to_owned(), before, by));
        }
    }

    /// Adds a note for the person (something that could not be captured).
    pub fn add_note(&mut self, note: String) {
        self.notes.push(note);
    }

    fn note(&mut self, path: &Path, message: &str) {
        self.notes.push(format!("{}: not checkpointed: {message}", path.display()));
    }

    /// The turn's `checkpoint` record, with the hash of what the turn left of each path;
    /// `None` when it changed nothing and has nothing to say.
    pub fn finish(self, turn: TurnId) -> Option<CheckpointRecord> {
        if self.files.is_empty() && self.notes.is_empty() {
            return None;
        }
        let mut notes = self.notes;
        let files = self
            .files
            .into_iter()
            .map(|(path, before, by)| {
                let after = match content_hash(&path) {
                    Ok(after) => after,
                    Err(err) => {
                        notes.push(format!("{}: not hashed after the turn: {err}", path.display()));
                        None
                    }
                };
                FileCheckpoint { path: path.to_string_lossy().into_owned(), before, after, by }
            })
            .collect();
        Some(CheckpointRecord { turn, files, notes })
    }
}

/// The SHA-256 of the file at `path`, `None` when there is none (nothing there, a directory,
/// or a file where one of its directories should be).
pub fn content_hash(path: &Path) -> Result<Option<String>> {
    match fs_err::read(path) {
        Ok(bytes) => Ok(Some(sha256_hex(&bytes))),
        Err(err)
            if matches!(
                err.kind(),
                ErrorKind::NotFound | ErrorKind::NotADirectory | ErrorKind::IsADirectory
            ) =>
        {
            Ok(None)
        }
        Err(err) => Err(Error::Io(err)),
    }
}

/// What rewinding the files to before a turn would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindPlan {
    /// The turn rewound to (its state before it began).
    pub turn: TurnId,
    /// The checkpointed turns undone, newest first.
    pub turns: Vec<TurnId>,
    /// Each path to restore, in the order first changed.
    pub files: Vec<PlannedFile>,
}

/// One path of a `RewindPlan`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFile {
    /// The absolute path.
    pub path: PathBuf,
    /// The blob to restore; `None`: the path is removed.
    pub before: Option<String>,
    /// What codecoder left there (the newest checkpoint's hash after its turn).
    pub left: Option<String>,
    /// What is there now.
    pub current: Option<String>,
}

impl PlannedFile {
    /// Changed since outside codecoder: now neither what codecoder left nor what a restore
    /// would write.
    pub fn conflicts(&self) -> bool {
        self.current != self.left && self.current != self.before
    }
}

/// The checkpoints still in play in `records`: those no later `rewind` of files took back.
pub fn live_checkpoints<'a>(
    records: impl Iterator<Item = &'a Record>,
) -> Vec<&'a CheckpointRecord> {
    let mut live: Vec<&CheckpointRecord> = Vec::new();
    for record in records {
        match &record.body {
            RecordBody::Checkpoint(checkpoint) => live.push(checkpoint),
            RecordBody::Rewind(rewind) if rewind.files => {
                live.retain(|checkpoint| checkpoint.turn < rewind.turn);
            }
            _ => {}
        }
    }
    live
}

/// Plans taking the files back to before `turn` (default: the newest checkpointed turn still in
/// play, which is what `/undo` means). Reads each path's current content.
///
/// # Errors
/// `NothingToUndo` when no checkpoint is in play at or after the turn; `Io` when a path cannot
/// be read.
pub fn plan_rewind<'a>(
    records: impl Iterator<Item = &'a Record>,
    turn: Option<TurnId>,
) -> Result<RewindPlan> {
    let live = live_checkpoints(records);
    let turn = match turn.or_else(|| live.last().map(|checkpoint| checkpoint.turn)) {
        Some(turn) => turn,
        None => return Err(Error::NothingToUndo { turn: None }),
    };
    let undone: Vec<&CheckpointRecord> =
        live.into_iter().filter(|checkpoint| checkpoint.turn >= turn).collect();
    if undone.is_empty() {
        return Err(Error::NothingToUndo { turn: Some(turn) });
    }
    let mut files: Vec<PlannedFile> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for checkpoint in &undone {
        for file in &checkpoint.files {
            match index.get(file.path.as_str()) {
                // A later turn: it left the content now expected.
                Some(&at) => files[at].left.clone_from(&file.after),
                None => {
                    index.insert(&file.path, files.len());
                    files.push(PlannedFile {
                        path: PathBuf::from(&file.path),
                        before: file.before.clone(),
                        left: file.after.clone(),
                        current: None,
                    });
                }
            }
        }
    }
    for file in &mut files {
        file.current = content_hash(&file.path)?;
    }
    let turns = undone.iter().rev().map(|checkpoint| checkpoint.turn).collect();
    Ok(RewindPlan { turn, turns, files })
}

/// What `apply` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RewindReport {
    /// Paths now as they were before the turn.
    pub restored: Vec<PathBuf>,
    /// Paths left alone: changed outside codecoder since, and not forced.
    pub skipped: Vec<PathBuf>,
}

impl RewindReport {
    /// The `rewind` record of this report (files rewound; `conversation` as given).
    pub fn record(&self, turn: TurnId, conversation: bool) -> RewindRecord {
        let text = |paths: &[PathBuf]| {
            paths.iter().map(|path| path.to_string_lossy().into_owned()).collect()
        };
        RewindRecord {
            turn,
            conversation,
            files: true,
            restored: text(&self.restored),
            skipped: text(&self.skipped),
        }
    }
}

/// Restores the plan's paths from `blobs`: the conflicting ones only when `force` holds.
///
/// # Errors
/// `Io` when a blob is missing or a path cannot be written; paths before it stay restored.
///
/// Removals go first, so a file the turn put where a directory was (or the other way round) is
/// out of the way when the old content comes back. A path is written as a file of its own: a
/// symlink there now is replaced, never written through, and an empty directory there is
/// removed first.
pub fn apply(plan: &RewindPlan, blobs: &BlobStore, force: bool) -> Result<RewindReport> {
    let mut report = RewindReport::default();
    let (removals, writes): (Vec<&PlannedFile>, Vec<&PlannedFile>) =
        plan.files.iter().partition(|file| file.before.is_none());
    for file in removals.into_iter().chain(writes) {
        if file.conflicts() && !force {
            report.skipped.push(file.path.clone());
            continue;
        }
        if file.current != file.before {
            match &file.before {
                Some(sha) => {
                    let bytes = blobs.get_verified(sha)?;
                    if let Some(parent) = file.path.parent() {
                        fs_err::create_dir_all(parent)?;
                    }
                    match fs_err::symlink_metadata(&file.path) {
                        Ok(meta) if meta.file_type().is_symlink() => {
                            fs_err::remove_file(&file.path)?;
                        }
                        Ok(meta) if meta.is_dir() => fs_err::remove_dir(&file.path)?,
                        _ => {}
                    }
                    fs_err::write(&file.path, bytes)?;
                }
                None => match fs_err::remove_file(&file.path) {
                    Ok(()) => {}
                    Err(err) if err.kind() == ErrorKind::NotFound => {}
                    Err(err) => return Err(Error::Io(err)),
                },
            }
        }
        report.restored.push(file.path.clone());
    }
    Ok(report)
}

#[cfg(test)]
mod tests;
