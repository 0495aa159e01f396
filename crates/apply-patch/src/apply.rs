//! Applying a parsed [`Patch`] to the filesystem, and the [`Report`] of what changed.
//!
//! Hunks are applied one after the other and the whole is NOT atomic: when a hunk fails, the
//! earlier ones stay applied and [`ApplyError::applied`] lists them. Paths resolve against the
//! working directory (absolute paths are used as they are; no sandboxing happens here).
//!
//! Invariants of an update: chunks are matched strictly forward (each search starts after the
//! previous match) and the new text is built in one pass, so the cost is linear in the file
//! size; the result always ends with a line ending; a file whose first line ends with CRLF is
//! written with CRLF throughout (the codex tool writes LF: keeping CRLF is our improvement),
//! other files keep any stray `\r` of untouched lines; context lines keep the file's text, not
//! the patch's (which matters after a fuzzy match; codex writes the patch's text); the file's
//! permissions are kept, also when it is moved.

#[cfg(test)]
mod tests;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{ApplyError, ApplyFailure, Operation};
use crate::parse::{Chunk, Hunk, Patch};
use crate::seek::Haystack;

/// What the patch changed, in patch order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    changes: Vec<Change>,
}

impl Report {
    /// One entry per hunk, in patch order.
    pub fn changes(&self) -> &[Change] {
        &self.changes
    }
}

/// Formats exactly `Success. Updated the following files:\n` followed by one `A path\n`,
/// `M path\n` or `D path\n` line per change.
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Success. Updated the following files:")?;
        for change in &self.changes {
            writeln!(f, "{change}")?;
        }
        Ok(())
    }
}

/// One file a hunk changed. The path is as written in the patch (for a move, the destination).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Added, modified or deleted.
    pub kind: ChangeKind,
    /// The path as written in the patch.
    pub path: PathBuf,
}

/// Formats `A path`, `M path` or `D path`.
impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let letter = match self.kind {
            ChangeKind::Added => 'A',
            ChangeKind::Modified => 'M',
            ChangeKind::Deleted => 'D',
        };
        write!(f, "{letter} {}", self.path.display())
    }
}

/// The kind of a [`Change`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// `*** Add File` (also when it overwrote a file).
    Added,
    /// `*** Update File`, moved or not.
    Modified,
    /// `*** Delete File`.
    Deleted,
}

/// Applies `patch` with relative paths resolved against `cwd`.
pub fn apply(patch: &Patch, cwd: &Path) -> Result<Report, ApplyError> {
    let mut changes = Vec::with_capacity(patch.hunks().len());
    for hunk in patch.hunks() {
        match apply_hunk(hunk, cwd) {
            Ok(change) => changes.push(change),
            Err(failure) => return Err(ApplyError { applied: changes, failure }),
        }
    }
    Ok(Report { changes })
}

fn apply_hunk(hunk: &Hunk, cwd: &Path) -> Result<Change, ApplyFailure> {
    match hunk {
        Hunk::Add { path, contents } => {
            let full_path = cwd.join(path);
            if full_path.is_dir() {
                return Err(ApplyFailure::IsDirectory {
                    path: path.clone(),
                    operation: Operation::Add,
                });
            }
            create_parents(&full_path, path)?;
            fs_err::write(&full_path, contents).map_err(|error| io_failure(path, error))?;
            Ok(Change { kind: ChangeKind::Added, path: path.clone() })
        }
        Hunk::Delete { path } => {
            let full_path = cwd.join(path);
            let metadata = match fs_err::symlink_metadata(&full_path) {
                Ok(metadata) => metadata,
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    return Err(ApplyFailure::DeleteMissing { path: path.clone() });
                }
                Err(error) => return Err(io_failure(path, error)),
            };
            if metadata.is_dir() {
                return Err(ApplyFailure::IsDirectory {
                    path: path.clone(),
                    operation: Operation::Delete,
                });
            }
            fs_err::remove_file(&full_path).map_err(|error| io_failure(path, error))?;
            Ok(Change { kind: ChangeKind::Deleted, path: path.clone() })
        }
        Hunk::Update { path, move_to, chunks } => {
            update_file(path, move_to.as_deref(), chunks, cwd)?;
            let path = move_to.as_ref().unwrap_or(path).clone();
            Ok(Change { kind: ChangeKind::Modified, path })
        }
    }
}

fn update_file(
    path: &Path,
    move_to: Option<&Path>,
    chunks: &[Chunk],
    cwd: &Path,
) -> Result<(), ApplyFailure> {
    let full_path = cwd.join(path);
    let metadata = match fs_err::metadata(&full_path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Err(ApplyFailure::UpdateMissing { path: path.to_owned() });
        }
        Err(error) => return Err(io_failure(path, error)),
    };
    if metadata.is_dir() {
        return Err(ApplyFailure::IsDirectory {
            path: path.to_owned(),
            operation: Operation::Update,
        });
    }
    let bytes = fs_err::read(&full_path).map_err(|error| io_failure(path, error))?;
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(ApplyFailure::NotUtf8 { path: path.to_owned() });
    };
    let new_text = update_text(&text, chunks, path)?;
    let Some(move_to) = move_to else {
        // Writing in place truncates the same inode, so mode, owner and links are kept.
        return fs_err::write(&full_path, new_text).map_err(|error| io_failure(path, error));
    };
    let full_destination = cwd.join(move_to);
    if full_destination.is_dir() {
        return Err(ApplyFailure::IsDirectory {
            path: move_to.to_owned(),
            operation: Operation::Move,
        });
    }
    let same_file = full_destination.exists()
        && fs_err::canonicalize(&full_destination).ok() == fs_err::canonicalize(&full_path).ok();
    create_parents(&full_destination, move_to)?;
    fs_err::write(&full_destination, new_text).map_err(|error| io_failure(move_to, error))?;
    fs_err::set_permissions(&full_destination, metadata.permissions())
        .map_err(|error| io_failure(move_to, error))?;
    if !same_file {
        fs_err::remove_file(&full_path).map_err(|error| io_failure(path, error))?;
    }
    Ok(())
}

fn create_parents(full_path: &Path, path: &Path) -> Result<(), ApplyFailure> {
    match full_path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => {
            fs_err::create_dir_all(parent).map_err(|error| io_failure(path, error))
        }
        Some(_) | None => Ok(()),
    }
}

fn io_failure(path: &Path, error: io::Error) -> ApplyFailure {
    ApplyFailure::Io { path: path.to_owned(), error }
}

/// Applies the chunks of an update to `text` (the file at `path`, for error messages): what an
/// `*** Update File` hunk makes of a file's content, for callers that read and write the file
/// themselves.
///
/// # Errors
/// When a chunk's context or old lines are not found.
pub fn update_text(text: &str, chunks: &[Chunk], path: &Path) -> Result<String, ApplyFailure> {
    let crlf = text.find('\n').is_some_and(|idx| text[..idx].ends_with('\r'));
    let line_ending = if crlf { "\r\n" } else { "\n" };
    let mut lines: Vec<&str> = text.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    if crlf {
        for line in &mut lines {
            *line = line.strip_suffix('\r').unwrap_or(line);
        }
    }

    let haystack = Haystack::new(&lines);
    // (first replaced line, number of replaced lines, chunk, number of new lines), in match
    // order.
    let mut replacements: Vec<(usize, usize, &Chunk, usize)> = Vec::with_capacity(chunks.len());
    let mut line_idx = 0;
    for chunk in chunks {
        let mut context_idx = None;
        if let Some(context) = chunk.context() {
            let Some((idx, _)) = haystack.seek(&[context], line_idx, false) else {
                return Err(ApplyFailure::ContextNotFound {
                    path: path.to_owned(),
                    patch_line: chunk.patch_line(),
                    context: context.to_owned(),
                });
            };
            context_idx = Some(idx);
            line_idx = idx + 1;
        }
        let mut old_lines = chunk.old_lines();
        let mut new_lines = chunk.new_lines();
        if old_lines.is_empty() {
            // A pure addition goes after its `@@` context line, or else at the end of the file.
            let at = if context_idx.is_some() { line_idx } else { lines.len() };
            replacements.push((at, 0, chunk, new_lines.len()));
            continue;
        }
        let mut found = haystack.seek(old_lines, line_idx, chunk.end_of_file());
        if found.is_none()
            && let Some(idx) = context_idx
        {
            // The model often repeats the `@@` line as the chunk's first context line.
            found = haystack.seek(old_lines, idx, chunk.end_of_file());
        }
        // Blank lines that end a chunk are often just separators in the patch.
        while found.is_none()
            && old_lines.len() > 1
            && old_lines.last().is_some_and(String::is_empty)
            && new_lines.last().is_some_and(String::is_empty)
        {
            old_lines = &old_lines[..old_lines.len() - 1];
            new_lines = &new_lines[..new_lines.len() - 1];
            found = haystack.seek(old_lines, line_idx, chunk.end_of_file());
        }
        let Some((start, _)) = found else {
            return Err(ApplyFailure::LinesNotFound {
                path: path.to_owned(),
                patch_line: chunk.patch_line(),
                lines: chunk.old_lines().to_vec(),
                end_of_file: chunk.end_of_file(),
            });
        };
        replacements.push((start, old_lines.len(), chunk, new_lines.len()));
        line_idx = start + old_lines.len();
    }
    // Only end-of-file additions can be out of order; the sort is stable.
    replacements.sort_by_key(|&(start, ..)| start);

    let mut new_text = String::with_capacity(text.len() + text.len() / 8);
    let mut push_line = |line: &str| {
        new_text.push_str(line);
        new_text.push_str(line_ending);
    };
    let mut copied_to = 0;
    for (start, n_replaced, chunk, n_new) in replacements {
        lines[copied_to..start].iter().for_each(|line| push_line(line));
        for (new_line, source) in chunk.new_lines()[..n_new].iter().zip(chunk.sources()) {
            // A context line keeps the file's text, which a fuzzy match may differ from.
            match source.filter(|&source| source < n_replaced) {
                Some(source) => push_line(lines[start + source]),
                None => push_line(new_line),
            }
        }
        copied_to = start + n_replaced;
    }
    lines[copied_to..].iter().for_each(|line| push_line(line));
    Ok(new_text)
}
