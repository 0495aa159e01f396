//! The output pager (Ctrl+O): the last finished tool's whole output, scrolled in the live area
//! of the viewport, and the bounded preview of an output it pages.
//!
//! Invariants:
//! - A preview holds at most `HEAD_LINES` + `TAIL_LINES` lines of at most `MAX_LINE_CHARS`
//!   characters each (about 5 MB at the very worst, a few hundred KB for a typical 5,000-line
//!   build log), whatever the tool printed: the first lines, the last ones, and a count of
//!   those in between.
//! - Drawing the pager costs the rows it shows, not the output's length: lines are stored split
//!   and are cut to the width, never wrapped.

use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// Lines kept from an output's start.
const HEAD_LINES: usize = 5_000;
/// Lines kept from its end, once the head is full.
const TAIL_LINES: usize = 5_000;
/// Characters kept of one line.
const MAX_LINE_CHARS: usize = 500;

/// A tool output as the pager keeps it: its first and last lines, and how many in between
/// were let go.
#[derive(Debug, Clone, Default)]
pub(crate) struct OutputPreview {
    head: Vec<Box<str>>,
    tail: VecDeque<Box<str>>,
    omitted: usize,
    /// The last line, not ended yet.
    partial: String,
}

impl OutputPreview {
    /// A preview of a whole text.
    pub(crate) fn of(text: &str) -> Self {
        let mut preview = Self::default();
        preview.push(text);
        preview
    }

    /// Appends output as it streams.
    pub(crate) fn push(&mut self, chunk: &str) {
        let mut rest = chunk;
        while let Some(at) = rest.find('\n') {
            let (line, after) = rest.split_at(at);
            self.extend_partial(line);
            let line = std::mem::take(&mut self.partial);
            self.push_line(line.strip_suffix('\r').unwrap_or(&line));
            rest = after.get(1..).unwrap_or_default();
        }
        self.extend_partial(rest);
    }

    /// Adds to the unended line up to one character past the cut (so the cut shows).
    fn extend_partial(&mut self, piece: &str) {
        let room = (MAX_LINE_CHARS + 1).saturating_sub(self.partial.chars().count());
        let end = piece.char_indices().nth(room).map_or(piece.len(), |(at, _)| at);
        self.partial.push_str(piece.get(..end).unwrap_or_default());
    }

    fn push_line(&mut self, line: &str) {
        let line: Box<str> = match line.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => format!("{}…", line.get(..cut).unwrap_or_default()).into(),
            None => line.into(),
        };
        if self.head.len() < HEAD_LINES {
            self.head.push(line);
            return;
        }
        if self.tail.len() == TAIL_LINES {
            self.tail.pop_front();
            self.omitted += 1;
        }
        self.tail.push_back(line);
    }

    /// Whether nothing was printed.
    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_empty() && self.partial.is_empty()
    }

    /// Lines shown: the head, a marker when lines were let go, the tail, the unended line.
    pub(crate) fn len(&self) -> usize {
        self.head.len()
            + usize::from(self.omitted > 0)
            + self.tail.len()
            + usize::from(!self.partial.is_empty())
    }

    /// The `index`-th shown line (see `len`).
    pub(crate) fn line(&self, index: usize) -> std::borrow::Cow<'_, str> {
        if let Some(line) = self.head.get(index) {
            return std::borrow::Cow::Borrowed(line);
        }
        let mut index = index - self.head.len();
        if self.omitted > 0 {
            if index == 0 {
                return std::borrow::Cow::Owned(format!("… {} lines not kept …", self.omitted));
            }
            index -= 1;
        }
        match self.tail.get(index) {
            Some(line) => std::borrow::Cow::Borrowed(line),
            None => std::borrow::Cow::Borrowed(self.partial.as_str()),
        }
    }

    /// Lines the output had (kept or not).
    pub(crate) fn total_lines(&self) -> usize {
        self.head.len() + self.omitted + self.tail.len() + usize::from(!self.partial.is_empty())
    }

    /// Bytes held (for memory figures).
    pub(crate) fn heap_bytes(&self) -> usize {
        let lines = self.head.iter().chain(self.tail.iter()).map(|line| line.len()).sum::<usize>();
        lines
            + (self.head.capacity() + self.tail.capacity()) * std::mem::size_of::<Box<str>>()
            + self.partial.capacity()
    }
}

/// A finished tool's output, kept for the pager.
#[derive(Debug, Clone)]
pub(crate) struct PagedOutput {
    /// The card's title: the tool's name and the call's detail.
    pub(crate) title: String,
    pub(crate) preview: OutputPreview,
}

/// The open pager.
#[derive(Debug, Clone)]
pub(crate) struct Pager {
    pub(crate) output: PagedOutput,
    /// The first line shown.
    pub(crate) top: usize,
    /// Lines shown at once (set from the viewport's size before each frame).
    pub(crate) page: usize,
}

/// What a key did to the pager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PagerKey {
    /// Scrolled, or ignored.
    Stay,
    /// Closes it.
    Close,
}

impl Pager {
    /// The pager at the start of `output`.
    pub(crate) fn new(output: PagedOutput) -> Self {
        Self { output, top: 0, page: 10 }
    }

    fn last_top(&self) -> usize {
        self.output.preview.len().saturating_sub(self.page.max(1))
    }

    /// Applies one key.
    pub(crate) fn on_key(&mut self, key: KeyEvent) -> PagerKey {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let page = self.page.max(1);
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return PagerKey::Close,
            KeyCode::Char('o' | 'c') if ctrl => return PagerKey::Close,
            KeyCode::Up | KeyCode::Char('k') => self.top = self.top.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') | KeyCode::Enter => self.top += 1,
            KeyCode::PageUp | KeyCode::Char('b') => self.top = self.top.saturating_sub(page),
            KeyCode::Char('u') if ctrl => self.top = self.top.saturating_sub(page),
            KeyCode::PageDown | KeyCode::Char(' ') => self.top += page,
            KeyCode::Char('d') if ctrl => self.top += page,
            KeyCode::Home | KeyCode::Char('g') => self.top = 0,
            KeyCode::End | KeyCode::Char('G') => self.top = usize::MAX,
            _ => {}
        }
        self.top = self.top.min(self.last_top());
        PagerKey::Stay
    }

    /// The rows to draw in `height` rows of `width` columns: a title, the visible lines (cut to
    /// the width), and where in the output they are.
    pub(crate) fn lines(&self, width: u16, height: u16) -> Vec<Line<'static>> {
        let dim = Style::default().fg(Color::DarkGray);
        let rows = usize::from(height.saturating_sub(2));
        let width = usize::from(width).max(1);
        let preview = &self.output.preview;
        let top = self.top.min(preview.len().saturating_sub(rows.max(1)));
        let mut out = Vec::with_capacity(rows + 2);
        out.push(Line::from(vec![
            Span::styled("▌ ", Style::default().fg(Color::Cyan)),
            Span::styled(
                crate::cells::truncate(&self.output.title, width.saturating_sub(2)),
                Style::default().add_modifier(Modifier::BOLD),
            ),
        ]));
        let end = (top + rows).min(preview.len());
        for index in top..end {
            out.push(Line::raw(crate::cells::truncate(&preview.line(index), width)));
        }
        let shown = if end > top { format!("{}–{end}", top + 1) } else { "0".to_owned() };
        let of = match preview.total_lines() {
            total if total == preview.len() => total.to_string(),
            total => format!("{} kept of {total}", preview.len()),
        };
        out.push(Line::styled(
            format!("  lines {shown} of {of} · ↑↓ PgUp PgDn Home End · Esc closes"),
            dim,
        ));
        out
    }
}

#[cfg(test)]
mod tests;
