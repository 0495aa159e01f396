//! The multi-line input editor and its history.
//!
//! Invariants: `cursor` is always a char boundary of `text` (every edit keeps it so); history
//! navigation keeps the draft being written and gives it back when you come down past the
//! newest entry.

/// A multi-line text buffer with a cursor.
#[derive(Debug, Default, Clone)]
pub(crate) struct Editor {
    text: String,
    /// A byte offset into `text`, on a char boundary.
    cursor: usize,
    history: Vec<String>,
    /// `Some(i)` while browsing history entry `i`.
    browsing: Option<usize>,
    draft: String,
}

impl Editor {
    /// The text.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The cursor, a byte offset.
    pub(crate) fn cursor(&self) -> usize {
        self.cursor
    }

    /// Whether nothing is typed.
    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Inserts text at the cursor (typing or pasting; `\r\n` becomes `\n`).
    pub(crate) fn insert(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        self.text.insert_str(self.cursor, &text);
        self.cursor += text.len();
        self.browsing = None;
    }

    /// Deletes the char before the cursor.
    pub(crate) fn backspace(&mut self) {
        if let Some(c) = self.text.get(..self.cursor).and_then(|s| s.chars().next_back()) {
            self.cursor -= c.len_utf8();
            self.text.remove(self.cursor);
        }
    }

    /// Deletes the char at the cursor.
    pub(crate) fn delete(&mut self) {
        if self.cursor < self.text.len() {
            self.text.remove(self.cursor);
        }
    }

    /// Deletes the word before the cursor (Ctrl+W).
    pub(crate) fn delete_word(&mut self) {
        let before = self.text.get(..self.cursor).unwrap_or_default();
        let trimmed = before.trim_end();
        let start = trimmed.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Moves one char left.
    pub(crate) fn left(&mut self) {
        if let Some(c) = self.text.get(..self.cursor).and_then(|s| s.chars().next_back()) {
            self.cursor -= c.len_utf8();
        }
    }

    /// Moves one char right.
    pub(crate) fn right(&mut self) {
        if let Some(c) = self.text.get(self.cursor..).and_then(|s| s.chars().next()) {
            self.cursor += c.len_utf8();
        }
    }

    /// To the start of the line.
    pub(crate) fn home(&mut self) {
        self.cursor = self.line_start();
    }

    /// To the end of the line.
    pub(crate) fn end(&mut self) {
        self.cursor = self
            .text
            .get(self.cursor..)
            .and_then(|s| s.find('\n'))
            .map_or(self.text.len(), |i| self.cursor + i);
    }

    fn line_start(&self) -> usize {
        self.text.get(..self.cursor).and_then(|s| s.rfind('\n')).map_or(0, |i| i + 1)
    }

    /// Up: to the line above, or (on the first line) the previous history entry.
    pub(crate) fn up(&mut self) {
        let start = self.line_start();
        if start > 0 {
            let column = self.text.get(start..self.cursor).map_or(0, |s| s.chars().count());
            let prev_start =
                self.text.get(..start - 1).and_then(|s| s.rfind('\n')).map_or(0, |i| i + 1);
            self.cursor = advance_chars(&self.text, prev_start, column, start - 1);
            return;
        }
        let next = match self.browsing {
            None if self.history.is_empty() => return,
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => return,
            Some(i) => i - 1,
        };
        self.browsing = Some(next);
        if let Some(entry) = self.history.get(next) {
            self.text.clone_from(entry);
            self.cursor = self.text.find('\n').unwrap_or(self.text.len());
        }
    }

    /// Down: to the line below, or (on the last line) the next history entry or the draft.
    pub(crate) fn down(&mut self) {
        if let Some(rel) = self.text.get(self.cursor..).and_then(|s| s.find('\n')) {
            let column =
                self.text.get(self.line_start()..self.cursor).map_or(0, |s| s.chars().count());
            let next_start = self.cursor + rel + 1;
            let next_end = self
                .text
                .get(next_start..)
                .and_then(|s| s.find('\n'))
                .map_or(self.text.len(), |i| next_start + i);
            self.cursor = advance_chars(&self.text, next_start, column, next_end);
            return;
        }
        let Some(i) = self.browsing else { return };
        if i + 1 < self.history.len() {
            self.browsing = Some(i + 1);
            if let Some(entry) = self.history.get(i + 1) {
                self.text.clone_from(entry);
            }
        } else {
            self.browsing = None;
            self.text = std::mem::take(&mut self.draft);
        }
        self.cursor = self.text.len();
    }

    /// Takes the text (for sending) and records it in the history.
    pub(crate) fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.browsing = None;
        self.draft.clear();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        text
    }

    /// Clears the text without recording it.
    pub(crate) fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.browsing = None;
    }

    /// The word the cursor ends (after the last whitespace before it) and where it starts.
    pub(crate) fn current_word(&self) -> (usize, &str) {
        let before = self.text.get(..self.cursor).unwrap_or_default();
        let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        (start, before.get(start..).unwrap_or_default())
    }

    /// Replaces the word the cursor ends with `replacement`.
    pub(crate) fn replace_current_word(&mut self, replacement: &str) {
        let (start, _) = self.current_word();
        self.text.replace_range(start..self.cursor, replacement);
        self.cursor = start + replacement.len();
    }
}

/// The offset `column` chars after `start`, but not past `limit`.
fn advance_chars(text: &str, start: usize, column: usize, limit: usize) -> usize {
    let mut offset = start;
    for c in text.get(start..limit).unwrap_or_default().chars().take(column) {
        offset += c.len_utf8();
    }
    offset
}
