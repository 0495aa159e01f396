//! Transcript cells: what the transcript shows (user messages, Markdown answers, reasoning,
//! tool cards with diffs and plans, notes), each turned into styled lines by a pure function.
//!
//! Invariants: rendering is a pure function of the cell, `now` and the spinner frame (snapshot
//! tests pass fixed values); no rendering path panics, whatever the tool arguments or output
//! hold; every line is bounded (long outputs show their tail, long diffs their head).

use std::time::{Duration, Instant};

use codecoder_protocol::{CommandExit, ContentItem, ToolCall, ToolResult, ToolResultStatus};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

/// Output lines a tool card shows (the tail).
const OUTPUT_TAIL: usize = 5;
/// Diff lines a card shows before "… N more lines".
const DIFF_HEAD: usize = 40;
/// Spinner frames.
pub(crate) const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// One entry of the transcript.
#[derive(Debug, Clone)]
// Cells are few (one per transcript item) and moved rarely: boxing the tool card buys nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Cell {
    /// What the person sent; `queued` for a steering message sent while a turn ran.
    User { text: String, queued: bool },
    /// A Markdown-rendered part of an answer.
    Assistant { lines: Vec<Line<'static>> },
    /// The model's reasoning: one summary line unless `expanded`.
    Reasoning { text: String, expanded: bool },
    /// A tool call.
    Tool(ToolCard),
    /// A notice.
    Note { text: String, kind: NoteKind },
    /// Pre-rendered lines (slash command output such as `/diff`).
    Lines { lines: Vec<Line<'static>> },
}

/// How a note is coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoteKind {
    /// Neutral information.
    Info,
    /// Something went wrong but the session goes on.
    Warning,
    /// A hook's message for the person (`systemMessage`, a stop reason).
    Hook,
    /// A failure.
    Error,
}

/// A tool call, running or done.
#[derive(Debug, Clone)]
pub(crate) struct ToolCard {
    /// The call.
    pub(crate) call: ToolCall,
    /// When it started.
    pub(crate) started: Instant,
    /// Live output (a bounded tail).
    pub(crate) output: String,
    /// The whole output, bounded, for the pager (taken when the card is done).
    pub(crate) preview: crate::pager::OutputPreview,
    /// Running or done.
    pub(crate) state: ToolState,
    /// Subagent activity under an `agent` call: (tool title, done, ok).
    pub(crate) children: Vec<ChildTool>,
}

/// A tool a subagent runs, shown nested under its `agent` card.
#[derive(Debug, Clone)]
pub(crate) struct ChildTool {
    /// The call id, to match its end.
    pub(crate) id: String,
    /// The one-line title.
    pub(crate) title: String,
    /// `None` while running, else whether it succeeded.
    pub(crate) ok: Option<bool>,
}

/// A tool card's state.
#[derive(Debug, Clone)]
pub(crate) enum ToolState {
    /// Still running.
    Running,
    /// Ended: the result text (or error), whether it succeeded, how long it took, and how
    /// its command ended (for tools that run one).
    Done { text: String, ok: bool, elapsed: Duration, exit: Option<CommandExit> },
}

impl ToolCard {
    /// A card for a call that just started.
    pub(crate) fn new(call: ToolCall, started: Instant) -> Self {
        Self {
            call,
            started,
            output: String::new(),
            preview: crate::pager::OutputPreview::default(),
            state: ToolState::Running,
            children: Vec::new(),
        }
    }

    /// Appends live output, keeping a bounded tail.
    pub(crate) fn push_output(&mut self, chunk: &str) {
        self.preview.push(chunk);
        self.output.push_str(chunk);
        const KEEP: usize = 8 * 1024;
        if self.output.len() > 2 * KEEP {
            let mut cut = self.output.len() - KEEP;
            while !self.output.is_char_boundary(cut) {
                cut += 1;
            }
            self.output.drain(..cut);
        }
    }

    /// The output the pager shows for this card: what streamed, else the result's text; the
    /// card keeps none of it. `None` when there is nothing to show.
    pub(crate) fn take_output(&mut self) -> Option<crate::pager::PagedOutput> {
        let mut preview = std::mem::take(&mut self.preview);
        if preview.is_empty()
            && let ToolState::Done { text, .. } = &self.state
        {
            preview = crate::pager::OutputPreview::of(split_trailer(text).0);
        }
        if preview.is_empty() {
            return None;
        }
        let (name, detail) = call_title(&self.call);
        let title = if detail.is_empty() { name } else { format!("{name} {detail}") };
        Some(crate::pager::PagedOutput { title, preview })
    }

    /// Ends the card with a result.
    pub(crate) fn finish(&mut self, result: Result<&ToolResult, String>, now: Instant) {
        let elapsed = now.saturating_duration_since(self.started);
        self.state = match result {
            Ok(result) => ToolState::Done {
                text: result_text(result),
                ok: result.status == ToolResultStatus::Success,
                elapsed,
                exit: result.exit,
            },
            Err(message) => ToolState::Done { text: message, ok: false, elapsed, exit: None },
        };
    }
}

/// The text items of a result, joined.
pub(crate) fn result_text(result: &ToolResult) -> String {
    let mut text = String::new();
    for item in &result.content {
        match item {
            ContentItem::Text { text: part } => text.push_str(part),
            ContentItem::Image(_) => text.push_str("[image]"),
            ContentItem::BlobRef(_) => text.push_str("[stored output]"),
        }
    }
    text
}

fn str_arg<'a>(args: &'a Value, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    truncate(line, max)
}

/// Cuts `text` to `max` characters, with an ellipsis.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The one-line title of a call: its name and key argument.
pub(crate) fn call_title(call: &ToolCall) -> (String, String) {
    let args = &call.args;
    let detail = match call.name.as_str() {
        "run_command" => format!("$ {}", first_line(str_arg(args, "command"), 200)),
        "read_file" | "list_dir" | "write_file" | "edit" => str_arg(args, "path").to_owned(),
        "grep" | "glob" => str_arg(args, "pattern").to_owned(),
        "web_fetch" => str_arg(args, "url").to_owned(),
        "apply_patch" => patch_paths(str_arg(args, "input")).join(", "),
        "agent" => first_line(str_arg(args, "task"), 120),
        "ask_user" => first_line(str_arg(args, "question"), 120),
        "update_plan" => String::new(),
        "job_output" | "job_kill" => args.get("job").map(ToString::to_string).unwrap_or_default(),
        _ => match args {
            Value::Object(map) if map.is_empty() => String::new(),
            Value::Null => String::new(),
            other => truncate(&other.to_string(), 120),
        },
    };
    (call.name.clone(), detail)
}

fn patch_paths(patch: &str) -> Vec<String> {
    patch
        .lines()
        .filter_map(|line| {
            ["*** Update File: ", "*** Add File: ", "*** Delete File: "]
                .iter()
                .find_map(|prefix| line.strip_prefix(prefix))
        })
        .map(str::to_owned)
        .collect()
}

fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}

/// The lines of a unified-ish diff, coloured, with at most `DIFF_HEAD` lines.
/// How a line of a diff or patch is coloured: headers bold, additions green, removals red,
/// hunk headers cyan.
fn diff_style(line: &str) -> Style {
    if ["diff ", "+++", "---", "***"].iter().any(|header| line.starts_with(header)) {
        Style::default().add_modifier(Modifier::BOLD)
    } else if line.starts_with('+') {
        Style::default().fg(Color::Green)
    } else if line.starts_with('-') {
        Style::default().fg(Color::Red)
    } else if line.starts_with("@@") {
        Style::default().fg(Color::Cyan)
    } else {
        Style::default()
    }
}

pub(crate) fn diff_lines<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let mut more = 0usize;
    for line in lines {
        if out.len() >= DIFF_HEAD {
            more += 1;
            continue;
        }
        let style = diff_style(line);
        out.push(Line::from(vec![
            Span::styled("    ", dim()),
            Span::styled(line.to_owned(), style),
        ]));
    }
    if more > 0 {
        out.push(Line::styled(format!("    … {more} more lines"), dim()));
    }
    out
}

/// The change a call makes, as diff lines (edit, write_file, apply_patch); empty otherwise.
pub(crate) fn call_diff(call: &ToolCall) -> Vec<Line<'static>> {
    let args = &call.args;
    match call.name.as_str() {
        "apply_patch" => diff_lines(
            str_arg(args, "input")
                .lines()
                .filter(|l| !matches!(*l, "*** Begin Patch" | "*** End Patch")),
        ),
        "edit" => {
            let old = str_arg(args, "old_string").lines().map(|l| format!("-{l}"));
            let new = str_arg(args, "new_string").lines().map(|l| format!("+{l}"));
            let all: Vec<String> = old.chain(new).collect();
            diff_lines(all.iter().map(String::as_str))
        }
        "write_file" => {
            let all: Vec<String> =
                str_arg(args, "content").lines().map(|l| format!("+{l}")).collect();
            diff_lines(all.iter().map(String::as_str))
        }
        _ => Vec::new(),
    }
}

/// An `update_plan` call's steps as a checklist.
pub(crate) fn plan_lines(call: &ToolCall) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let explanation = str_arg(&call.args, "explanation");
    if !explanation.is_empty() {
        out.push(Line::styled(format!("    {}", first_line(explanation, 200)), dim()));
    }
    let steps = call.args.get("plan").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    for step in steps {
        let text = str_arg(step, "step").to_owned();
        let (mark, style) = match str_arg(step, "status") {
            "completed" => {
                ("[x]", Style::default().fg(Color::Green).add_modifier(Modifier::CROSSED_OUT))
            }
            "in_progress" => {
                ("[~]", Style::default().fg(Color::Yellow).add_modifier(Modifier::BOLD))
            }
            _ => ("[ ]", Style::default()),
        };
        out.push(Line::from(vec![
            Span::raw("    "),
            Span::styled(format!("{mark} "), style),
            Span::styled(text, style),
        ]));
    }
    out
}

fn tail_lines(text: &str, n: usize) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    lines.get(start..).map(<[&str]>::to_vec).unwrap_or_default()
}

fn format_elapsed(elapsed: Duration) -> String {
    let secs = elapsed.as_secs();
    if secs >= 60 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else {
        format!("{}.{}s", secs, elapsed.subsec_millis() / 100)
    }
}

impl Cell {
    /// The cell's lines. `now` and `frame` drive elapsed times and spinners.
    pub(crate) fn lines(&self, now: Instant, frame: usize) -> Vec<Line<'static>> {
        match self {
            Cell::User { text, queued } => {
                let marker_style = Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD);
                let mut out = Vec::new();
                for (i, line) in text.lines().enumerate() {
                    let marker = match (i, queued) {
                        (0, false) => "› ",
                        (0, true) => "↳ ",
                        _ => "  ",
                    };
                    out.push(Line::from(vec![
                        Span::styled(marker, marker_style),
                        Span::styled(
                            line.to_owned(),
                            Style::default().add_modifier(Modifier::BOLD),
                        ),
                    ]));
                }
                if *queued {
                    out.push(Line::styled("  (queued: sent to the model at its next step)", dim()));
                }
                out.push(Line::default());
                out
            }
            Cell::Assistant { lines } => {
                let mut out = lines.clone();
                out.push(Line::default());
                out
            }
            Cell::Reasoning { text, expanded } => {
                let style = dim().add_modifier(Modifier::ITALIC);
                if *expanded {
                    let mut out: Vec<Line<'static>> =
                        text.lines().map(|l| Line::styled(format!("  {l}"), style)).collect();
                    out.push(Line::default());
                    return out;
                }
                let n = text.lines().count();
                vec![
                    Line::styled(
                        format!("▸ thought ({n} lines; Ctrl+T shows reasoning in full)"),
                        style,
                    ),
                    Line::default(),
                ]
            }
            Cell::Note { text, kind } => {
                let style = match kind {
                    NoteKind::Info => dim(),
                    NoteKind::Warning => Style::default().fg(Color::Yellow),
                    NoteKind::Hook => Style::default().fg(Color::Cyan),
                    NoteKind::Error => Style::default().fg(Color::Red),
                };
                let mut out: Vec<Line<'static>> =
                    text.lines().map(|l| Line::styled(l.to_owned(), style)).collect();
                out.push(Line::default());
                out
            }
            Cell::Lines { lines } => {
                let mut out = lines.clone();
                out.push(Line::default());
                out
            }
            Cell::Tool(card) => card.lines(now, frame),
        }
    }
}

impl ToolCard {
    /// The card's lines.
    pub(crate) fn lines(&self, now: Instant, frame: usize) -> Vec<Line<'static>> {
        let (name, detail) = call_title(&self.call);
        let (icon, icon_style) = match &self.state {
            ToolState::Running => (
                SPINNER.get(frame % SPINNER.len()).copied().unwrap_or("*"),
                Style::default().fg(Color::Cyan),
            ),
            ToolState::Done { ok: true, .. } => ("✓", Style::default().fg(Color::Green)),
            ToolState::Done { ok: false, .. } => ("✗", Style::default().fg(Color::Red)),
        };
        let mut out = vec![Line::from(vec![
            Span::styled(format!("{icon} "), icon_style),
            Span::styled(name, Style::default().add_modifier(Modifier::BOLD)),
            Span::raw(if detail.is_empty() { String::new() } else { format!(" {detail}") }),
        ])];
        match self.call.name.as_str() {
            "update_plan" => out.extend(plan_lines(&self.call)),
            "edit" | "write_file" | "apply_patch" => out.extend(call_diff(&self.call)),
            _ => {}
        }
        for child in &self.children {
            let (mark, style) = match child.ok {
                None => (
                    SPINNER.get(frame % SPINNER.len()).copied().unwrap_or("*"),
                    Style::default().fg(Color::Cyan),
                ),
                Some(true) => ("✓", Style::default().fg(Color::Green)),
                Some(false) => ("✗", Style::default().fg(Color::Red)),
            };
            out.push(Line::from(vec![
                Span::styled("  ├ ", dim()),
                Span::styled(format!("{mark} "), style),
                Span::raw(child.title.clone()),
            ]));
        }
        match &self.state {
            ToolState::Running => {
                for line in tail_lines(&self.output, OUTPUT_TAIL) {
                    out.push(Line::styled(format!("  │ {}", truncate(line, 500)), dim()));
                }
                let elapsed = now.saturating_duration_since(self.started);
                out.push(Line::styled(format!("  └ running {}", format_elapsed(elapsed)), dim()));
            }
            ToolState::Done { text, ok, elapsed, exit } => {
                let shown_output = matches!(self.call.name.as_str(), "run_command" | "job_output");
                let (body, trailer) = split_trailer(text);
                // A command's end comes as data; its words in the text are the model's copy.
                let trailer = match exit {
                    Some(CommandExit { code: Some(code), duration_ms, .. }) => {
                        Some(format!("exit code {code}; {:.2} s", seconds(*duration_ms)))
                    }
                    Some(CommandExit { signal: Some(signal), duration_ms, .. }) => {
                        Some(format!("killed by signal {signal}; {:.2} s", seconds(*duration_ms)))
                    }
                    _ => trailer.map(str::to_owned),
                };
                if shown_output || !ok {
                    let style = if *ok { dim() } else { Style::default().fg(Color::Red) };
                    for line in tail_lines(body, OUTPUT_TAIL) {
                        out.push(Line::styled(format!("  │ {}", truncate(line, 500)), style));
                    }
                }
                let summary = match trailer {
                    Some(trailer) => format!("  └ {trailer}"),
                    None if *ok => format!("  └ done in {}", format_elapsed(*elapsed)),
                    None => format!("  └ failed after {}", format_elapsed(*elapsed)),
                };
                out.push(Line::styled(summary, dim()));
            }
        }
        out.push(Line::default());
        out
    }
}

#[allow(clippy::cast_precision_loss)] // Milliseconds of a command's run fit an f64 exactly.
fn seconds(duration_ms: u64) -> f64 {
    duration_ms as f64 / 1000.0
}

/// Splits run_command's `[exit code 0; 0.01 s]` trailer (the model's copy of how the command
/// ended) off its output.
fn split_trailer(text: &str) -> (&str, Option<&str>) {
    let trimmed = text.trim_end();
    match trimmed.rsplit_once('\n') {
        Some((body, last)) if last.starts_with('[') && last.ends_with(']') => {
            (body, last.get(1..last.len().saturating_sub(1)))
        }
        None if trimmed.starts_with('[') && trimmed.ends_with(']') => {
            ("", trimmed.get(1..trimmed.len().saturating_sub(1)))
        }
        _ => (text, None),
    }
}

/// All lines of a diff (`/diff`), coloured, up to a generous bound.
pub(crate) fn diff_lines_unbounded(text: &str) -> Vec<Line<'static>> {
    const MAX: usize = 5_000;
    let mut lines: Vec<Line<'static>> = text
        .lines()
        .take(MAX)
        .map(|line| {
            let style = diff_style(line);
            Line::styled(line.to_owned(), style)
        })
        .collect();
    let total = text.lines().count();
    if total > MAX {
        lines.push(Line::styled(format!("… {} more lines", total - MAX), dim()));
    }
    lines
}
