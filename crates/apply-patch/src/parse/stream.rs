//! [`PatchStream`]: a patch read while it is being written, line by line, for showing the files
//! a model is changing before its patch is complete.
//!
//! Each complete line is read once, when it arrives; the text after the last `\n` waits for the
//! rest of its line. The reading is as lenient as [`crate::parse`] and never fails: a line that
//! `parse` would refuse is passed over, since the whole patch is parsed (and any error reported)
//! once it is complete. Invariant: for a patch that `parse` accepts, pushing its text in any
//! pieces (then a final `\n` if it lacks one) yields the same hunks as `parse`, each with the
//! same lines as written.

#[cfg(test)]
mod tests;

use std::path::PathBuf;

use crate::parse::{
    ADD_FILE, BEGIN_PATCH, Chunk, DELETE_FILE, END_OF_FILE, END_PATCH, Hunk, MOVE_TO, UPDATE_FILE,
    new_chunk,
};

/// Where the reading is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before `*** Begin Patch` (blank lines and a heredoc opener may come first).
    Before,
    /// Between `*** Begin Patch` and `*** End Patch`.
    Inside,
    /// After `*** End Patch`, or after a first line that is not `*** Begin Patch`: nothing
    /// more is read.
    Done,
}

/// A patch being written; see the module documentation.
#[derive(Debug, Clone)]
pub struct PatchStream {
    /// The text after the last complete line.
    partial: String,
    phase: Phase,
    /// Complete lines read so far (the patch line number of the last one).
    lines: usize,
    hunks: Vec<Hunk>,
    /// Parallel to `hunks`: header lines and body lines as written, each ending in `\n`.
    written: Vec<(String, String)>,
    /// Blank lines (as written) read inside an added file and not yet known to be part of it
    /// (they are when another `+` line follows).
    blanks: String,
    /// The chunk an update is building (pushed to its hunk when the next one starts).
    chunk: Option<Chunk>,
}

impl Default for PatchStream {
    fn default() -> Self {
        Self::new()
    }
}

impl PatchStream {
    /// A stream that has read nothing.
    pub fn new() -> Self {
        Self {
            partial: String::new(),
            phase: Phase::Before,
            lines: 0,
            hunks: Vec::new(),
            written: Vec::new(),
            blanks: String::new(),
            chunk: None,
        }
    }

    /// Reads the next piece of the patch text: every line it completes.
    pub fn push(&mut self, text: &str) {
        let mut rest = text;
        while let Some(end) = rest.find('\n') {
            let (head, tail) = rest.split_at(end);
            // A line ends at `\n` or `\r\n`, as `str::lines` reads it.
            if self.partial.is_empty() {
                self.line(head.strip_suffix('\r').unwrap_or(head));
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.push_str(head);
                self.line(line.strip_suffix('\r').unwrap_or(&line));
            }
            rest = &tail[1..];
        }
        self.partial.push_str(rest);
    }

    /// How many complete lines have been read: it grows exactly when what the stream shows may
    /// have changed.
    pub fn lines_read(&self) -> usize {
        self.lines
    }

    /// Whether `*** End Patch` has been read.
    pub fn is_complete(&self) -> bool {
        self.phase == Phase::Done && !self.hunks.is_empty()
    }

    /// The hunks so far (the last one possibly incomplete), each with its header lines and body
    /// lines as written, in the shape of [`crate::Patch::hunks_as_written`].
    pub fn hunks_as_written(&self) -> impl Iterator<Item = (Hunk, &str, &str)> {
        let last = self.hunks.len().saturating_sub(1);
        self.hunks.iter().zip(&self.written).enumerate().map(move |(idx, (hunk, (head, body)))| {
            let mut hunk = hunk.clone();
            // The update being written shows its open chunk too.
            if idx == last
                && let (Hunk::Update { chunks, .. }, Some(open)) = (&mut hunk, &self.chunk)
                && open.n_change_lines > 0
            {
                chunks.push(open.clone());
            }
            (hunk, head.as_str(), body.as_str())
        })
    }

    fn line(&mut self, text: &str) {
        self.lines += 1;
        let trimmed = text.trim();
        match self.phase {
            Phase::Done => {}
            Phase::Before => {
                if trimmed == BEGIN_PATCH {
                    self.phase = Phase::Inside;
                } else if !trimmed.is_empty()
                    && !matches!(trimmed, "<<EOF" | "<<'EOF'" | "<<\"EOF\"")
                {
                    self.phase = Phase::Done;
                }
            }
            Phase::Inside => self.inside(text, trimmed),
        }
    }

    fn inside(&mut self, text: &str, trimmed: &str) {
        if trimmed == END_PATCH {
            self.close_chunk();
            self.phase = Phase::Done;
            return;
        }
        if let Some(rest) = trimmed.strip_prefix(ADD_FILE) {
            return self.open(rest, text, |path| Hunk::Add { path, contents: String::new() });
        }
        if let Some(rest) = trimmed.strip_prefix(DELETE_FILE) {
            return self.open(rest, text, |path| Hunk::Delete { path });
        }
        if let Some(rest) = trimmed.strip_prefix(UPDATE_FILE) {
            return self.open(rest, text, |path| Hunk::Update {
                path,
                move_to: None,
                chunks: Vec::new(),
            });
        }
        let lines = self.lines;
        let Some(hunk) = self.hunks.last_mut() else { return };
        let Some((head, body)) = self.written.last_mut() else { return };
        match hunk {
            Hunk::Add { contents, .. } => {
                if let Some(content) = text.strip_prefix('+') {
                    for _ in self.blanks.matches('\n') {
                        contents.push('\n');
                    }
                    body.push_str(&std::mem::take(&mut self.blanks));
                    contents.push_str(content);
                    contents.push('\n');
                    push_line(body, text);
                } else if trimmed.is_empty() {
                    push_line(&mut self.blanks, text);
                }
            }
            Hunk::Delete { .. } => {}
            Hunk::Update { move_to, chunks, .. } => {
                if let Some(rest) = trimmed.strip_prefix(MOVE_TO) {
                    // Only right after the file line, as `parse` takes it.
                    if move_to.is_none() && chunks.is_empty() && self.chunk.is_none() {
                        let to = rest.trim();
                        if !to.is_empty() {
                            *move_to = Some(PathBuf::from(to));
                            push_line(head, text);
                        }
                    }
                    return;
                }
                if trimmed == END_OF_FILE {
                    if let Some(mut chunk) = self.chunk.take() {
                        chunk.end_of_file = true;
                        if chunk.n_change_lines > 0 {
                            chunks.push(chunk);
                        }
                        push_line(body, text);
                    }
                    return;
                }
                if text.trim_end() == "@@" || text.starts_with("@@ ") {
                    if let Some(chunk) = self.chunk.take()
                        && chunk.n_change_lines > 0
                    {
                        chunks.push(chunk);
                    }
                    let context =
                        text.strip_prefix("@@ ").filter(|context| !context.trim().is_empty());
                    self.chunk = Some(new_chunk(lines, context.map(str::to_owned)));
                    push_line(body, text);
                    return;
                }
                let (old, new) = match text.chars().next() {
                    Some(' ') => (Some(&text[1..]), Some(&text[1..])),
                    Some('-') => (Some(&text[1..]), None),
                    Some('+') => (None, Some(&text[1..])),
                    _ if trimmed.is_empty() && self.chunk.is_some() => (Some(""), Some("")),
                    // A blank line between chunks (part of the update as written).
                    _ if trimmed.is_empty() => return push_line(body, text),
                    // A line `parse` would refuse.
                    _ => return,
                };
                let chunk = self.chunk.get_or_insert_with(|| new_chunk(lines, None));
                if new.is_some() {
                    chunk.sources.push(old.is_some().then_some(chunk.old_lines.len()));
                }
                chunk.old_lines.extend(old.map(str::to_owned));
                chunk.new_lines.extend(new.map(str::to_owned));
                chunk.n_change_lines += 1;
                push_line(body, text);
            }
        }
    }

    /// Starts a hunk for the file line `text` whose path is `rest` (a file line without a path
    /// is passed over, as `parse` refuses it).
    fn open(&mut self, rest: &str, text: &str, hunk: impl FnOnce(PathBuf) -> Hunk) {
        let path = rest.trim();
        if path.is_empty() {
            return;
        }
        self.close_chunk();
        self.blanks.clear();
        self.hunks.push(hunk(PathBuf::from(path)));
        let mut head = String::new();
        push_line(&mut head, text);
        self.written.push((head, String::new()));
    }

    /// Ends the open chunk of the last update, keeping it when it has a change line.
    fn close_chunk(&mut self) {
        let Some(chunk) = self.chunk.take() else { return };
        if chunk.n_change_lines > 0
            && let Some(Hunk::Update { chunks, .. }) = self.hunks.last_mut()
        {
            chunks.push(chunk);
        }
    }
}

fn push_line(into: &mut String, line: &str) {
    into.push_str(line);
    into.push('\n');
}
