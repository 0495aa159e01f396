//! Parsing the codex patch format into a typed [`Patch`].
//!
//! Leniency (always on): blank lines around the patch are ignored; a heredoc wrapper (`<<EOF`,
//! `<<'EOF'` or `<<"EOF"` … `EOF`) is stripped; `***` marker lines are recognised after trimming
//! surrounding whitespace (so a context line whose text is exactly a marker cannot be written),
//! while `@@` must start its line (an indented `@@` is an ordinary line); the first chunk of an update may omit `@@`; a blank line inside an update chunk is an empty
//! context line; blank lines between hunks are skipped; a blank line inside an added file that
//! is followed by more `+` lines is an empty line of the file.
//!
//! Invariant: a [`Patch`] from [`parse`] has at least one hunk, every path is non-empty, every
//! update has at least one chunk and every chunk has at least one change line.

mod stream;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use crate::error::ParseError;

pub use stream::PatchStream;

const BEGIN_PATCH: &str = "*** Begin Patch";
const END_PATCH: &str = "*** End Patch";
const ADD_FILE: &str = "*** Add File:";
const DELETE_FILE: &str = "*** Delete File:";
const UPDATE_FILE: &str = "*** Update File:";
const MOVE_TO: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// A parsed patch: one or more hunks, applied in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    hunks: Vec<Hunk>,
    /// Parallel to `hunks`: each hunk's header lines (its file line and `*** Move to`) and the
    /// lines after them, as written.
    bodies: Vec<(String, String)>,
}

impl Patch {
    /// The hunks in patch order (never empty).
    pub fn hunks(&self) -> &[Hunk] {
        &self.hunks
    }

    /// Each hunk with its header lines (its file line, and `*** Move to`) and the lines after
    /// them, as the patch wrote them, each ending in `\n`: an update's chunks (`@@`, ` `, `-`,
    /// `+` lines), an added file's `+` lines, nothing for a deletion. For showing a change as the
    /// model wrote it.
    pub fn hunks_as_written(&self) -> impl Iterator<Item = (&Hunk, &str, &str)> {
        self.hunks.iter().zip(&self.bodies).map(|(hunk, (header, body))| (hunk, &**header, &**body))
    }
}

/// The files a patch names, in patch order, move destinations included: the parsed patch's
/// when it parses, else every path its `***` file lines name (so a patch that does not parse
/// still shows, and is approved by, the files it meant to write).
pub fn declared_paths(input: &str) -> Vec<String> {
    if let Ok(patch) = parse(input) {
        let mut paths = Vec::new();
        for hunk in patch.hunks() {
            paths.push(hunk.path().to_string_lossy().into_owned());
            if let Hunk::Update { move_to: Some(to), .. } = hunk {
                paths.push(to.to_string_lossy().into_owned());
            }
        }
        return paths;
    }
    input
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            [ADD_FILE, DELETE_FILE, UPDATE_FILE, MOVE_TO]
                .iter()
                .find_map(|marker| line.strip_prefix(marker))
                .map(|path| path.trim().to_owned())
        })
        .filter(|path| !path.is_empty())
        .collect()
}

/// One file operation of a patch. Paths are as written (relative to the working directory, or
/// absolute).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hunk {
    /// `*** Add File`: create or overwrite `path` with `contents`.
    Add {
        /// The file to write.
        path: PathBuf,
        /// Every `+` line followed by `\n`.
        contents: String,
    },
    /// `*** Delete File`: remove the file `path`.
    Delete {
        /// The file to remove.
        path: PathBuf,
    },
    /// `*** Update File`: edit `path` chunk by chunk, then optionally move it.
    Update {
        /// The file to edit.
        path: PathBuf,
        /// `*** Move to`: where the edited file is written instead.
        move_to: Option<PathBuf>,
        /// The edits, in file order (never empty).
        chunks: Vec<Chunk>,
    },
}

impl Hunk {
    /// The path the hunk reads or writes first.
    pub fn path(&self) -> &Path {
        match self {
            Hunk::Add { path, .. } | Hunk::Delete { path } | Hunk::Update { path, .. } => path,
        }
    }
}

/// One edit of an update: replace `old_lines` with `new_lines`, after the optional `@@` context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    patch_line: usize,
    context: Option<String>,
    old_lines: Vec<String>,
    new_lines: Vec<String>,
    end_of_file: bool,
    n_change_lines: usize,
    /// For each new line, the index of the old line it is the context copy of (if it is one).
    sources: Vec<Option<usize>>,
}

impl Chunk {
    /// The 1-based patch line where the chunk starts (its `@@` line, or its first line).
    pub fn patch_line(&self) -> usize {
        self.patch_line
    }

    /// The text after `@@ `, sought before the old lines.
    pub fn context(&self) -> Option<&str> {
        self.context.as_deref()
    }

    /// Context and `-` lines, without their prefix.
    pub fn old_lines(&self) -> &[String] {
        &self.old_lines
    }

    /// Context and `+` lines, without their prefix.
    pub fn new_lines(&self) -> &[String] {
        &self.new_lines
    }

    /// Whether the chunk ends with `*** End of File` (its old lines must end the file).
    pub fn end_of_file(&self) -> bool {
        self.end_of_file
    }

    /// Parallel to [`Chunk::new_lines`]: the index into [`Chunk::old_lines`] of each context
    /// line, `None` for an added line.
    pub(crate) fn sources(&self) -> &[Option<usize>] {
        &self.sources
    }
}

/// Parses a patch. See the module documentation for the accepted leniencies.
pub fn parse(patch: &str) -> Result<Patch, ParseError> {
    let numbered: Vec<(usize, &str)> =
        patch.lines().enumerate().map(|(idx, line)| (idx + 1, line)).collect();
    let mut lines = trim_blank(&numbered);
    if let [(_, first), .., (_, last)] = lines
        && matches!(first.trim(), "<<EOF" | "<<'EOF'" | "<<\"EOF\"")
        && last.trim() == "EOF"
    {
        lines = trim_blank(&lines[1..lines.len() - 1]);
    }
    let Some(&(first_line, first)) = lines.first() else {
        return Err(ParseError::Empty);
    };
    if first.trim() != BEGIN_PATCH {
        return Err(ParseError::MissingBegin { line: first_line, found: first.trim().to_owned() });
    }
    let (last_line, last) = lines[lines.len() - 1];
    if lines.len() < 2 || last.trim() != END_PATCH {
        return Err(ParseError::MissingEnd { line: last_line, found: last.trim().to_owned() });
    }

    let mut cursor = Cursor { lines: &lines[1..lines.len() - 1], pos: 0 };
    let mut hunks = Vec::new();
    let mut bodies = Vec::new();
    while let Some((line, text)) = cursor.peek() {
        if text.trim().is_empty() {
            cursor.pos += 1;
            continue;
        }
        let header = cursor.pos;
        let hunk = parse_hunk(&mut cursor, line, text.trim())?;
        let headers = match &hunk {
            Hunk::Update { move_to: Some(_), .. } => 2,
            _ => 1,
        };
        let split = (header + headers).min(cursor.pos);
        let written = |lines: &[(usize, &str)]| -> String {
            lines.iter().flat_map(|(_, text)| [*text, "\n"]).collect()
        };
        bodies.push((
            written(&cursor.lines[header..split]),
            written(&cursor.lines[split..cursor.pos]),
        ));
        hunks.push(hunk);
    }
    if hunks.is_empty() {
        return Err(ParseError::NoHunks { line: last_line });
    }
    Ok(Patch { hunks, bodies })
}

/// The lines between `*** Begin Patch` and `*** End Patch`, with a read position.
struct Cursor<'a> {
    lines: &'a [(usize, &'a str)],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<(usize, &'a str)> {
        self.lines.get(self.pos).copied()
    }
}

fn trim_blank<'a>(mut lines: &'a [(usize, &'a str)]) -> &'a [(usize, &'a str)] {
    while let [(_, first), rest @ ..] = lines
        && first.trim().is_empty()
    {
        lines = rest;
    }
    while let [rest @ .., (_, last)] = lines
        && last.trim().is_empty()
    {
        lines = rest;
    }
    lines
}

/// Parses the hunk whose trimmed header `header` is at the cursor (patch line `line`).
fn parse_hunk(cursor: &mut Cursor<'_>, line: usize, header: &str) -> Result<Hunk, ParseError> {
    if let Some(rest) = header.strip_prefix(ADD_FILE) {
        let path = header_path(rest, line, ADD_FILE)?;
        cursor.pos += 1;
        let mut contents = String::new();
        while let Some((_, text)) = cursor.peek() {
            if let Some(content) = text.strip_prefix('+') {
                contents.push_str(content);
                contents.push('\n');
            } else if text.trim().is_empty() && next_non_blank_is_addition(cursor) {
                contents.push('\n');
            } else {
                break;
            }
            cursor.pos += 1;
        }
        return Ok(Hunk::Add { path, contents });
    }
    if let Some(rest) = header.strip_prefix(DELETE_FILE) {
        let path = header_path(rest, line, DELETE_FILE)?;
        cursor.pos += 1;
        return Ok(Hunk::Delete { path });
    }
    if let Some(rest) = header.strip_prefix(UPDATE_FILE) {
        let path = header_path(rest, line, UPDATE_FILE)?;
        cursor.pos += 1;
        let mut move_to = None;
        if let Some((move_line, text)) = cursor.peek()
            && let Some(rest) = text.trim().strip_prefix(MOVE_TO)
        {
            move_to = Some(header_path(rest, move_line, MOVE_TO)?);
            cursor.pos += 1;
        }
        let chunks = parse_chunks(cursor, &path)?;
        if chunks.is_empty() {
            return Err(ParseError::EmptyUpdate { line, path });
        }
        return Ok(Hunk::Update { path, move_to, chunks });
    }
    Err(ParseError::UnknownHeader { line, found: header.to_owned() })
}

fn header_path(rest: &str, line: usize, marker: &'static str) -> Result<PathBuf, ParseError> {
    let path = rest.trim();
    if path.is_empty() {
        return Err(ParseError::MissingPath { line, marker });
    }
    Ok(PathBuf::from(path))
}

fn next_non_blank_is_addition(cursor: &Cursor<'_>) -> bool {
    cursor.lines[cursor.pos..]
        .iter()
        .find(|(_, text)| !text.trim().is_empty())
        .is_some_and(|(_, text)| text.starts_with('+'))
}

/// Whether a trimmed line is a marker that ends an update hunk.
fn ends_update(trimmed: &str) -> bool {
    [ADD_FILE, DELETE_FILE, UPDATE_FILE, MOVE_TO, END_PATCH, BEGIN_PATCH]
        .iter()
        .any(|marker| trimmed.starts_with(marker))
}

/// Parses the chunks of an update up to the next hunk header (or the end of the patch).
fn parse_chunks(cursor: &mut Cursor<'_>, path: &Path) -> Result<Vec<Chunk>, ParseError> {
    let mut chunks = Vec::new();
    let mut current: Option<Chunk> = None;
    while let Some((line, text)) = cursor.peek() {
        let trimmed = text.trim();
        if ends_update(trimmed) {
            break;
        }
        cursor.pos += 1;
        if trimmed == END_OF_FILE {
            let Some(mut chunk) = current.take() else {
                return Err(ParseError::InvalidLine {
                    line,
                    path: path.to_owned(),
                    found: text.to_owned(),
                });
            };
            chunk.end_of_file = true;
            chunks.push(finish_chunk(chunk, path)?);
            continue;
        }
        if text.trim_end() == "@@" || text.starts_with("@@ ") {
            if let Some(chunk) = current.take() {
                chunks.push(finish_chunk(chunk, path)?);
            }
            let context = text.strip_prefix("@@ ").filter(|context| !context.trim().is_empty());
            current = Some(new_chunk(line, context.map(str::to_owned)));
            continue;
        }
        let (old, new) = match text.chars().next() {
            Some(' ') => (Some(&text[1..]), Some(&text[1..])),
            Some('-') => (Some(&text[1..]), None),
            Some('+') => (None, Some(&text[1..])),
            _ if trimmed.is_empty() => {
                if current.is_none() {
                    // A blank line between chunks, or right after the header.
                    continue;
                }
                (Some(""), Some(""))
            }
            _ => {
                return Err(ParseError::InvalidLine {
                    line,
                    path: path.to_owned(),
                    found: text.to_owned(),
                });
            }
        };
        let chunk = current.get_or_insert_with(|| new_chunk(line, None));
        if new.is_some() {
            chunk.sources.push(old.is_some().then_some(chunk.old_lines.len()));
        }
        chunk.old_lines.extend(old.map(str::to_owned));
        chunk.new_lines.extend(new.map(str::to_owned));
        chunk.n_change_lines += 1;
    }
    if let Some(chunk) = current {
        chunks.push(finish_chunk(chunk, path)?);
    }
    Ok(chunks)
}

fn new_chunk(patch_line: usize, context: Option<String>) -> Chunk {
    Chunk {
        patch_line,
        context,
        old_lines: Vec::new(),
        new_lines: Vec::new(),
        end_of_file: false,
        n_change_lines: 0,
        sources: Vec::new(),
    }
}

fn finish_chunk(chunk: Chunk, path: &Path) -> Result<Chunk, ParseError> {
    if chunk.n_change_lines == 0 {
        return Err(ParseError::EmptyChunk { line: chunk.patch_line, path: path.to_owned() });
    }
    Ok(chunk)
}
