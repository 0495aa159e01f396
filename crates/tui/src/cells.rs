//! Transcript cells: what the transcript shows (user messages, Markdown answers, reasoning,
//! tool cards with diffs and plans, notes), each turned into styled lines by a pure function.
//!
//! A tool card is drawn from the call's `CallView` alone (its tool's own description of the
//! call): the tool's name beside the view's detail, the view's file changes as a diff, its plan
//! as a checklist. Nothing here knows a tool by name or reads a call's arguments, so a tool the
//! UI has never heard of shows as well as a built-in.
//!
//! Invariants: rendering is a pure function of the cell, `now` and the spinner frame (snapshot
//! tests pass fixed values); no rendering path panics, whatever the view or output hold; every
//! line is bounded (long outputs show their tail, long diffs their head).

use std::time::{Duration, Instant};

use codecoder_protocol::{
    CallKind, CallView, ChangeKind, CommandExit, FileChange, PlanView, ToolCallId, ToolResult,
    ToolResultStatus,
};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

pub(crate) use codecoder_protocol::truncate;

/// Output lines a tool card shows (the tail).
const OUTPUT_TAIL: usize = 5;
/// Lines of an edit's after-edit notes (diagnostics, formatters) shown on its card.
const AFTER_EDIT_LINES: usize = 8;
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
    /// The call's id, to match its output and its end.
    pub(crate) id: ToolCallId,
    /// The tool's name, shown as the card's label.
    pub(crate) name: String,
    /// What the call is, as its tool describes it.
    pub(crate) view: CallView,
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

/// A call the model is still writing, as its tool describes it so far: shown live until the
/// call's card replaces it.
#[derive(Debug, Clone)]
pub(crate) struct WritingCall {
    /// The call's id, to find its next description and its card.
    pub(crate) id: ToolCallId,
    /// The tool's name.
    pub(crate) name: String,
    /// The call so far.
    pub(crate) view: CallView,
}

impl WritingCall {
    /// The call's lines: its name and detail so far, then each file it is writing with the
    /// lines added and removed so far (`Writing src/a.rs (+12 -3)…`).
    pub(crate) fn lines(&self, frame: usize) -> Vec<Line<'static>> {
        let spinner = SPINNER.get(frame % SPINNER.len()).copied().unwrap_or("*");
        let mut out =
            vec![title_line(spinner, Style::default().fg(Color::Cyan), &self.name, &self.view)];
        for change in &self.view.changes {
            let count = |mark: char| change.diff.lines().filter(|l| l.starts_with(mark)).count();
            let text = match &change.kind {
                ChangeKind::Delete => format!("Deleting {}…", change.path),
                ChangeKind::Update { move_to: Some(to) } => {
                    format!("Writing {} → {to} (+{} -{})…", change.path, count('+'), count('-'))
                }
                ChangeKind::Add | ChangeKind::Update { move_to: None } => {
                    format!("Writing {} (+{} -{})…", change.path, count('+'), count('-'))
                }
            };
            out.push(Line::styled(format!("  │ {}", truncate(&text, 500)), dim()));
        }
        out.push(Line::styled("  └ being written", dim()));
        out.push(Line::default());
        out
    }
}

impl ToolCard {
    /// A card for a call that just started: `name` is its tool's, `view` the tool's
    /// description of it.
    pub(crate) fn new(id: ToolCallId, name: String, view: CallView, started: Instant) -> Self {
        Self {
            id,
            name,
            view,
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
        Some(crate::pager::PagedOutput { title: call_label(&self.name, &self.view), preview })
    }

    /// Ends the card with a result.
    pub(crate) fn finish(&mut self, result: Result<&ToolResult, String>, now: Instant) {
        let elapsed = now.saturating_duration_since(self.started);
        self.state = match result {
            Ok(result) => ToolState::Done {
                text: codecoder_app::result_text(result),
                ok: result.status == ToolResultStatus::Success,
                elapsed,
                exit: result.exit,
            },
            Err(message) => ToolState::Done { text: message, ok: false, elapsed, exit: None },
        };
    }
}

/// A call in one line: the tool's name and the view's detail.
pub(crate) fn call_label(name: &str, view: &CallView) -> String {
    if view.detail.is_empty() { name.to_owned() } else { format!("{name} {}", view.detail) }
}

/// A card's first line: its state's icon, the tool's name in bold, the view's detail.
fn title_line(icon: &str, icon_style: Style, name: &str, view: &CallView) -> Line<'static> {
    let detail = if view.detail.is_empty() { String::new() } else { format!(" {}", view.detail) };
    Line::from(vec![
        Span::styled(format!("{icon} "), icon_style),
        Span::styled(name.to_owned(), Style::default().add_modifier(Modifier::BOLD)),
        Span::raw(detail),
    ])
}

fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}

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

/// Diff lines indented under a card, at most `DIFF_HEAD` of them, then how many more there are.
#[derive(Default)]
struct DiffHead {
    lines: Vec<Line<'static>>,
    more: usize,
}

impl DiffHead {
    fn push(&mut self, line: &str, style: Style) {
        if self.lines.len() >= DIFF_HEAD {
            self.more += 1;
            return;
        }
        self.lines.push(Line::from(vec![
            Span::styled("    ", dim()),
            Span::styled(line.to_owned(), style),
        ]));
    }

    fn finish(mut self) -> Vec<Line<'static>> {
        if self.more > 0 {
            self.lines.push(Line::styled(format!("    … {} more lines", self.more), dim()));
        }
        self.lines
    }
}

/// The file changes of a call as diff lines, bounded: each change's header as the patch wrote
/// it, else a line for a move or a deletion (an added or edited file is named by the card's
/// title already), then its diff. Empty for a call that changes no file.
pub(crate) fn change_lines(changes: &[FileChange]) -> Vec<Line<'static>> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut head = DiffHead::default();
    for change in changes {
        if change.header.is_empty() {
            match &change.kind {
                ChangeKind::Update { move_to: Some(to) } => {
                    head.push(&format!("{} → {to}", change.path), bold);
                }
                ChangeKind::Delete => head.push(&format!("delete {}", change.path), bold),
                ChangeKind::Add | ChangeKind::Update { move_to: None } => {}
            }
        }
        for line in change.header.lines().chain(change.diff.lines()) {
            head.push(line, diff_style(line));
        }
    }
    head.finish()
}

/// A plan update's steps as a checklist, under its explanation.
pub(crate) fn plan_lines(plan: &PlanView) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    if !plan.explanation.is_empty() {
        let explanation = codecoder_protocol::first_line(&plan.explanation, 200);
        out.push(Line::styled(format!("    {explanation}"), dim()));
    }
    for step in &plan.steps {
        let (mark, style) = match step.status.as_str() {
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
            Span::styled(step.text.clone(), style),
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
        let (icon, icon_style) = match &self.state {
            ToolState::Running => (
                SPINNER.get(frame % SPINNER.len()).copied().unwrap_or("*"),
                Style::default().fg(Color::Cyan),
            ),
            ToolState::Done { ok: true, .. } => ("✓", Style::default().fg(Color::Green)),
            ToolState::Done { ok: false, .. } => ("✗", Style::default().fg(Color::Red)),
        };
        let mut out = vec![title_line(icon, icon_style, &self.name, &self.view)];
        if let (CallKind::Plan, Some(plan)) = (&self.view.kind, &self.view.plan) {
            out.extend(plan_lines(plan));
        }
        out.extend(change_lines(&self.view.changes));
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
                // A command's output is what the call is for; other tools' results are for
                // the model (the pager shows them), unless they failed.
                let shown_output = self.view.kind == CallKind::Execute;
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
                // An edit's result goes on, after a blank line, with what followed the change
                // (a formatter's note, the language server's diagnostics): shown under the diff,
                // errors in red.
                if *ok
                    && self.view.kind == CallKind::Edit
                    && let Some((_, after)) = body.split_once("\n\n")
                {
                    let notes = after.lines().filter(|line| !line.trim().is_empty());
                    for line in notes.take(AFTER_EDIT_LINES) {
                        let style = if line.contains(": error: ") {
                            Style::default().fg(Color::Red)
                        } else {
                            dim()
                        };
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

/// Splits a command's `[exit code 0; 0.01 s]` trailer (the model's copy of how the command
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
