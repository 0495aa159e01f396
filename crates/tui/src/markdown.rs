//! Markdown → styled lines for the transcript (pulldown-cmark events walked once).
//!
//! Invariants: pure (no IO, no terminal); never panics on any input, however malformed; the
//! output lines carry no trailing newline characters. Wrapping is left to the caller (the
//! transcript wraps with `Paragraph` at the current width).

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::highlight;

/// How code blocks are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Code {
    /// Syntax-highlighted (committed transcript).
    Highlighted,
    /// Plain (the live, still-streaming tail: cheap to redraw every frame).
    Plain,
}

/// Renders `text` as Markdown.
pub(crate) fn render(text: &str, code: Code) -> Vec<Line<'static>> {
    let mut writer = Writer::default();
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(text, options) {
        writer.event(event, code);
    }
    writer.flush_line();
    while writer.lines.last().is_some_and(|line| line.spans.is_empty()) {
        writer.lines.pop();
    }
    writer.lines
}

#[derive(Default)]
struct Writer {
    lines: Vec<Line<'static>>,
    current: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// One entry per open list: the next number of an ordered list, `None` for bullets.
    lists: Vec<Option<u64>>,
    quote_depth: usize,
    code: Option<(String, String)>,
    link: Option<String>,
    /// A blank line is owed before the next block.
    gap: bool,
    /// The prefix of the first line of the current list item.
    item_prefix: Option<String>,
}

impl Writer {
    fn style(&self) -> Style {
        self.styles.iter().fold(Style::default(), |acc, s| acc.patch(*s))
    }

    fn indent(&self) -> String {
        let mut prefix = "> ".repeat(self.quote_depth);
        prefix.push_str(&"   ".repeat(self.lists.len().saturating_sub(1)));
        if !self.lists.is_empty() {
            prefix.push_str("   ");
        }
        prefix
    }

    fn start_block(&mut self) {
        self.flush_line();
        if self.gap && !self.lines.is_empty() {
            self.lines.push(Line::default());
        }
        self.gap = false;
    }

    fn push_text(&mut self, text: &str) {
        if self.current.is_empty() {
            let prefix = self.item_prefix.take().unwrap_or_else(|| self.indent());
            if !prefix.is_empty() {
                let style = if self.quote_depth > 0 {
                    Style::default().fg(Color::Green)
                } else {
                    Style::default()
                };
                self.current.push(Span::styled(prefix, style));
            }
        }
        let mut style = self.style();
        if self.quote_depth > 0 {
            style = style.fg(Color::Green);
        }
        self.current.push(Span::styled(text.to_owned(), style));
    }

    fn flush_line(&mut self) {
        if !self.current.is_empty() {
            self.lines.push(Line::from(std::mem::take(&mut self.current)));
        }
    }

    fn event(&mut self, event: Event<'_>, code: Code) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag, code),
            Event::Text(text) => match &mut self.code {
                Some((_, body)) => body.push_str(&text),
                None => {
                    let mut parts = text.split('\n').peekable();
                    while let Some(part) = parts.next() {
                        if !part.is_empty() {
                            self.push_text(part);
                        }
                        if parts.peek().is_some() {
                            self.flush_line();
                        }
                    }
                }
            },
            Event::Code(text) => {
                self.styles.push(Style::default().fg(Color::Cyan));
                self.push_text(&text);
                self.styles.pop();
            }
            Event::SoftBreak => self.push_text(" "),
            Event::HardBreak => self.flush_line(),
            Event::Rule => {
                self.start_block();
                self.lines.push(Line::styled("───", Style::default().fg(Color::DarkGray)));
                self.gap = true;
            }
            Event::TaskListMarker(done) => self.push_text(if done { "[x] " } else { "[ ] " }),
            Event::Html(html) | Event::InlineHtml(html) => self.push_text(html.trim_end()),
            Event::InlineMath(text) | Event::DisplayMath(text) => self.push_text(&text),
            Event::FootnoteReference(name) => self.push_text(&format!("[{name}]")),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {
                if self.item_prefix.is_none() {
                    self.start_block();
                }
            }
            Tag::Heading { level, .. } => {
                self.start_block();
                let style = match level {
                    HeadingLevel::H1 => Style::default()
                        .fg(Color::Magenta)
                        .add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
                    HeadingLevel::H2 => {
                        Style::default().fg(Color::Magenta).add_modifier(Modifier::BOLD)
                    }
                    _ => Style::default().add_modifier(Modifier::BOLD),
                };
                self.styles.push(style);
            }
            Tag::BlockQuote(_) => {
                self.start_block();
                self.quote_depth += 1;
            }
            Tag::CodeBlock(kind) => {
                self.start_block();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split([' ', ',', '{']).next().unwrap_or_default().to_owned()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.start_block();
                } else {
                    self.flush_line();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush_line();
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let marker = format!("{n}. ");
                        *n += 1;
                        marker
                    }
                    Some(None) | None => "- ".to_owned(),
                };
                let mut prefix = "> ".repeat(self.quote_depth);
                prefix.push_str(&"   ".repeat(depth));
                prefix.push_str(&marker);
                self.item_prefix = Some(prefix);
            }
            Tag::Emphasis => self.styles.push(Style::default().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(Style::default().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => {
                self.styles.push(Style::default().add_modifier(Modifier::CROSSED_OUT));
            }
            Tag::Link { dest_url, .. } => {
                self.styles
                    .push(Style::default().fg(Color::Blue).add_modifier(Modifier::UNDERLINED));
                self.link = Some(dest_url.into_string());
            }
            Tag::Image { dest_url, .. } => {
                self.push_text(&format!("[image: {dest_url}]"));
                self.styles.push(Style::default());
            }
            Tag::HtmlBlock
            | Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::Table(_)
            | Tag::TableHead
            | Tag::TableRow
            | Tag::TableCell
            | Tag::Superscript
            | Tag::Subscript
            | Tag::MetadataBlock(_) => self.styles.push(Style::default()),
        }
    }

    fn end(&mut self, tag: TagEnd, code: Code) {
        match tag {
            TagEnd::Paragraph => {
                self.flush_line();
                self.gap = true;
            }
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush_line();
                self.gap = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush_line();
                self.quote_depth = self.quote_depth.saturating_sub(1);
                self.gap = true;
            }
            TagEnd::CodeBlock => {
                if let Some((lang, body)) = self.code.take() {
                    let indent = self.indent();
                    let body = body.strip_suffix('\n').unwrap_or(&body);
                    let highlighted = match code {
                        Code::Highlighted => highlight::highlight(body, &lang),
                        Code::Plain => None,
                    };
                    let lines = highlighted.unwrap_or_else(|| {
                        body.split('\n')
                            .map(|l| Line::styled(l.to_owned(), Style::default().fg(Color::Yellow)))
                            .collect()
                    });
                    for line in lines {
                        let mut spans = vec![Span::raw(format!("{indent}  "))];
                        spans.extend(line.spans);
                        self.lines.push(Line::from(spans));
                    }
                }
                self.gap = true;
            }
            TagEnd::List(_) => {
                self.flush_line();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.gap = true;
                }
            }
            TagEnd::Item => {
                if let Some(prefix) = self.item_prefix.take() {
                    // An empty item still shows its marker.
                    self.current.push(Span::raw(prefix));
                }
                self.flush_line();
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link.take() {
                    self.styles.push(Style::default().fg(Color::DarkGray));
                    self.push_text(&format!(" ({url})"));
                    self.styles.pop();
                }
            }
            TagEnd::Image
            | TagEnd::HtmlBlock
            | TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::Table
            | TagEnd::TableHead
            | TagEnd::TableRow
            | TagEnd::TableCell
            | TagEnd::Superscript
            | TagEnd::Subscript
            | TagEnd::MetadataBlock(_) => {
                self.styles.pop();
                if matches!(tag, TagEnd::TableCell) {
                    self.push_text(" | ");
                }
                if matches!(tag, TagEnd::TableRow | TagEnd::TableHead | TagEnd::HtmlBlock) {
                    self.flush_line();
                }
            }
        }
    }
}

/// Where the committed prefix of a streaming Markdown text may end: after the last blank line
/// outside a fenced code block. Tracks fences incrementally so a 50,000-token stream is scanned
/// once.
#[derive(Debug, Default)]
pub(crate) struct StreamSplitter {
    /// Bytes of the text scanned so far (always at a line start).
    scanned: usize,
    in_fence: bool,
    /// The byte offset just after the last safe boundary found.
    boundary: usize,
}

impl StreamSplitter {
    /// Scans the complete lines of `text` not seen yet; returns the offset up to which the text
    /// can be committed (a block boundary), never inside a code fence.
    pub(crate) fn advance(&mut self, text: &str) -> usize {
        while let Some(rel) = text.get(self.scanned..).and_then(|rest| rest.find('\n')) {
            let line_end = self.scanned + rel + 1;
            let line = text.get(self.scanned..line_end).unwrap_or_default().trim();
            if line.starts_with("```") || line.starts_with("~~~") {
                self.in_fence = !self.in_fence;
                if !self.in_fence {
                    self.boundary = line_end;
                }
            } else if line.is_empty() && !self.in_fence {
                self.boundary = line_end;
            }
            self.scanned = line_end;
        }
        self.boundary
    }
}

#[cfg(test)]
mod tests;
