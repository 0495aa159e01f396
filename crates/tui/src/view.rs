//! The inline viewport, drawn from the `App` state: the live part of the transcript (reasoning
//! and answer tails, running tool cards), the pending approval / question / picker, the
//! completion menu, the input editor and the status line.
//!
//! Invariants: a pure function of (`App`, `now`, spinner frame, area); never panics at any
//! size, down to 0×0 (every height and width computation saturates); the status line and the
//! approval keys stay visible whenever the viewport has the rows for them.

use std::time::Instant;

use codecoder_protocol::{AgentStatus, AskUserRequest};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};
use unicode_width::UnicodeWidthChar;

use crate::app::{App, InputMode, is_plan_review};
use crate::cells::{SPINNER, change_lines, truncate};

/// Most editor rows shown.
const MAX_INPUT_ROWS: usize = 6;
/// Most completion rows shown.
const MAX_MENU_ROWS: usize = 6;

fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}

/// What drawing the viewport decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Drawn {
    /// Where the cursor goes.
    pub(crate) cursor: Option<Position>,
    /// Rows the live part (or the pager) had.
    pub(crate) live_rows: u16,
}

/// Draws the viewport.
pub(crate) fn render(app: &App, now: Instant, frame: usize, area: Rect, buf: &mut Buffer) -> Drawn {
    if area.width == 0 || area.height == 0 {
        return Drawn { cursor: None, live_rows: 0 };
    }
    // Status line: the last row.
    let status_area = Rect { y: area.bottom().saturating_sub(1), height: 1, ..area };
    Paragraph::new(status_line(app, now, frame)).render(status_area, buf);
    let mut bottom = status_area.y;

    // Input editor.
    let prefix = match (app.mode, app.asks.is_empty()) {
        (InputMode::Feedback, _) => "feedback› ",
        (InputMode::PlanEdit, _) => "plan› ",
        (InputMode::Normal, false) => "answer› ",
        (InputMode::Normal, true) => "› ",
    };
    let (rows, cursor) = wrap_input(app.editor.text(), app.editor.cursor(), prefix, area.width);
    let shown = rows.len().clamp(1, MAX_INPUT_ROWS);
    let first =
        cursor.1.saturating_sub(shown.saturating_sub(1)).min(rows.len().saturating_sub(shown));
    let input_height = u16::try_from(shown).unwrap_or(1).min(bottom.saturating_sub(area.y));
    let input_area = Rect { y: bottom.saturating_sub(input_height), height: input_height, ..area };
    let visible: Vec<Line<'static>> = rows.iter().skip(first).take(shown).cloned().collect();
    let mut placeholder = None;
    if app.editor.is_empty() && app.mode == InputMode::Normal {
        let hint = if !app.approvals.is_empty() {
            "y allow once · a allow for session · n deny · f deny with feedback"
        } else if app.asks.front().is_some_and(is_plan_review) {
            "1 approve · 2 keep planning · type feedback + Enter · Ctrl+G edit the plan · Esc declines"
        } else if let Some(ask) = app.asks.front() {
            if ask.options.is_empty() {
                "type an answer · Esc declines"
            } else {
                "press a number or type an answer · Esc declines"
            }
        } else if app.turn_running {
            "type to steer the running turn · Esc cancels"
        } else {
            "ask anything · / for commands · @ for files"
        };
        placeholder = Some(Line::from(vec![
            Span::styled(
                prefix.to_owned(),
                Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            ),
            Span::styled(hint, dim()),
        ]));
    }
    match placeholder {
        Some(line) => Paragraph::new(line).render(input_area, buf),
        None => Paragraph::new(visible).render(input_area, buf),
    }
    bottom = input_area.y;
    let cursor_position = (input_height > 0).then(|| Position {
        x: area
            .x
            .saturating_add(u16::try_from(cursor.0).unwrap_or(u16::MAX))
            .min(area.right().saturating_sub(1)),
        y: input_area.y.saturating_add(u16::try_from(cursor.1.saturating_sub(first)).unwrap_or(0)),
    });

    // Separator.
    if bottom > area.y {
        bottom -= 1;
        let rule = Line::styled("─".repeat(usize::from(area.width)), dim());
        Paragraph::new(rule).render(Rect { y: bottom, height: 1, ..area }, buf);
    }

    // Completion menu (not over the pager, which takes the keys).
    if let Some(menu) = app.completion.as_ref().filter(|_| app.pager.is_none()) {
        let rows = menu.items.len().min(MAX_MENU_ROWS);
        let height = u16::try_from(rows).unwrap_or(0).min(bottom.saturating_sub(area.y));
        let start = menu.selected.saturating_sub(rows.saturating_sub(1));
        let lines: Vec<Line<'static>> = menu
            .items
            .iter()
            .enumerate()
            .skip(start)
            .take(rows)
            .map(|(i, (text, help))| {
                let style = if i == menu.selected {
                    // Reversed as well as coloured, so the selection shows under NO_COLOR.
                    Style::default().fg(Color::Cyan).add_modifier(Modifier::REVERSED)
                } else {
                    Style::default()
                };
                Line::from(vec![
                    Span::styled(format!(" {text} "), style),
                    Span::styled(format!(" {help}"), dim()),
                ])
            })
            .collect();
        let menu_area = Rect { y: bottom.saturating_sub(height), height, ..area };
        Paragraph::new(lines).render(menu_area, buf);
        bottom = menu_area.y;
    }

    // The live transcript, bottom-aligned.
    let live_area = Rect { y: area.y, height: bottom.saturating_sub(area.y), ..area };
    let drawn = Drawn { cursor: cursor_position, live_rows: live_area.height };
    if live_area.height == 0 {
        return drawn;
    }
    // The pager draws only the rows it shows, whatever the output's length.
    if let Some(pager) = &app.pager {
        Paragraph::new(pager.lines(live_area.width, live_area.height)).render(live_area, buf);
        return drawn;
    }
    let lines = live_lines(app, now, frame, live_area.height);
    let paragraph = Paragraph::new(lines).wrap(Wrap { trim: false });
    let total = paragraph.line_count(live_area.width);
    let scroll = total.saturating_sub(usize::from(live_area.height));
    paragraph.scroll((u16::try_from(scroll).unwrap_or(u16::MAX), 0)).render(live_area, buf);
    drawn
}

/// The live lines: reasoning tail, answer tail, running tools, then the pending request.
pub(crate) fn live_lines(app: &App, now: Instant, frame: usize, height: u16) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let reasoning = app.live_reasoning();
    if !reasoning.is_empty() {
        let style = dim().add_modifier(Modifier::ITALIC);
        let all: Vec<&str> = reasoning.lines().collect();
        for line in all.iter().skip(all.len().saturating_sub(3)) {
            lines.push(Line::styled(format!("  {}", truncate(line, 400)), style));
        }
    }
    lines.extend(app.live_answer());
    for card in &app.tools {
        lines.extend(card.lines(now, frame));
    }
    for writing in &app.writing {
        lines.extend(writing.lines(frame));
    }
    if let Some(picker) = &app.picker {
        lines.push(Line::styled(
            "Resume which session? (Up/Down, Enter, Esc)",
            Style::default().add_modifier(Modifier::BOLD),
        ));
        if picker.items.is_empty() {
            lines.push(Line::styled("  (no sessions in this directory)", dim()));
        }
        let rows = usize::from(height.saturating_sub(1)).max(1);
        let start = picker.selected.saturating_sub(rows.saturating_sub(1));
        for (i, item) in picker.items.iter().enumerate().skip(start).take(rows) {
            let style = if i == picker.selected {
                Style::default().fg(Color::Cyan).add_modifier(Modifier::REVERSED)
            } else {
                Style::default()
            };
            lines.push(Line::from(vec![
                Span::styled(format!(" {} ", truncate(&item.id, 13)), style),
                Span::styled(format!(" {} ", item.updated), dim()),
                Span::raw(truncate(&item.title, 80)),
            ]));
        }
    } else if let Some(request) = app.approvals.front() {
        let border = Style::default().fg(Color::Yellow);
        lines.push(Line::from(vec![
            Span::styled("▌ ", border),
            Span::styled(
                format!("Allow {}?", request.call.name),
                border.add_modifier(Modifier::BOLD),
            ),
            Span::styled(
                if app.approvals.len() > 1 {
                    format!("  (1 of {})", app.approvals.len())
                } else {
                    String::new()
                },
                dim(),
            ),
        ]));
        match &request.view.command {
            Some(command) => {
                for line in command.lines() {
                    lines.push(Line::from(vec![
                        Span::styled("▌ ", border),
                        Span::styled(
                            format!("$ {line}"),
                            Style::default().add_modifier(Modifier::BOLD),
                        ),
                    ]));
                }
            }
            None => lines.push(Line::from(vec![
                Span::styled("▌ ", border),
                Span::raw(request.summary.clone()),
            ])),
        }
        let mut diff = change_lines(&request.view.changes);
        let room = usize::from(height).saturating_sub(7);
        if diff.len() > room {
            let cut = diff.len() - room;
            diff.truncate(room);
            diff.push(Line::styled(format!("    … {cut} more lines"), dim()));
        }
        for line in diff {
            let mut spans = vec![Span::styled("▌", border)];
            spans.extend(line.spans);
            lines.push(Line::from(spans));
        }
        if let Some(reason) = &request.reason {
            lines.push(Line::from(vec![
                Span::styled("▌ ", border),
                Span::styled(format!("why: {reason}"), Style::default().fg(Color::Yellow)),
            ]));
        }
        if !request.permission_keys.is_empty() {
            lines.push(Line::from(vec![
                Span::styled("▌ ", border),
                Span::styled(format!("a covers: {}", request.permission_keys.join(", ")), dim()),
            ]));
        }
        let key = |k: &str, label: &str| {
            vec![
                Span::styled(
                    format!("[{k}]"),
                    Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD),
                ),
                Span::raw(format!(" {label}  ")),
            ]
        };
        let mut keys = vec![Span::styled("▌ ", border)];
        if app.mode == InputMode::Feedback {
            keys.push(Span::raw(
                "type feedback for the model · Enter denies with it · Esc goes back",
            ));
        } else {
            keys.extend(key("y", "allow once"));
            keys.extend(key("a", "allow for session"));
            keys.extend(key("n", "deny"));
            keys.extend(key("f", "deny with feedback"));
        }
        lines.push(Line::from(keys));
    } else if let Some(ask) = app.asks.front().filter(|ask| is_plan_review(ask)) {
        lines.extend(plan_review_lines(ask, app.mode == InputMode::PlanEdit, height));
    } else if let Some(ask) = app.asks.front() {
        let border = Style::default().fg(Color::Magenta);
        lines.push(Line::from(vec![
            Span::styled("▌ ", border),
            Span::styled(ask.question.clone(), Style::default().add_modifier(Modifier::BOLD)),
        ]));
        for (i, option) in ask.options.iter().enumerate() {
            lines.push(Line::from(vec![
                Span::styled("▌ ", border),
                Span::styled(format!("{}. ", i + 1), Style::default().fg(Color::Cyan)),
                Span::raw(option.clone()),
            ]));
        }
    }
    lines
}

fn status_line(app: &App, now: Instant, frame: usize) -> Line<'static> {
    let spinner = SPINNER.get(frame % SPINNER.len()).copied().unwrap_or("*");
    let elapsed = app.turn_started.map(|t| now.saturating_duration_since(t).as_secs());
    let activity = if app.quit_armed {
        Span::styled("press Ctrl+C again to quit", Style::default().fg(Color::Yellow))
    } else if !app.approvals.is_empty() || !app.asks.is_empty() {
        Span::styled("● waiting for you", Style::default().fg(Color::Yellow))
    } else if app.turn_running {
        let what = match app.status {
            AgentStatus::RunningTools => "running tools",
            AgentStatus::WaitingForUser => "waiting for you",
            AgentStatus::Thinking | AgentStatus::Idle => "thinking",
        };
        let secs = elapsed.map(|s| format!(" {s}s")).unwrap_or_default();
        Span::styled(
            format!("{spinner} {what}{secs} · Esc to cancel"),
            Style::default().fg(Color::Cyan),
        )
    } else {
        Span::styled("ready", dim())
    };
    let usage = app.total_usage();
    let tokens = usage.input_tokens + usage.output_tokens;
    let cost = app.cost().map(|c| format!(" · ${c:.2}")).unwrap_or_default();
    let permission = crate::app::mode_badge(&app.permission_mode)
        .map(|badge| format!(" · {badge} (shift+tab)"))
        .unwrap_or_default();
    let info = format!(
        "  {} · {}{permission} · ctx {}% · {} tok{cost}",
        app.info.model,
        app.approval_mode,
        app.context_percent(),
        human(tokens),
    );
    Line::from(vec![activity, Span::styled(info, dim())])
}

/// A presented plan under review: the plan as Markdown (its first lines when it is taller than
/// the room), then the choices.
fn plan_review_lines(ask: &AskUserRequest, editing: bool, height: u16) -> Vec<Line<'static>> {
    let border = Style::default().fg(Color::Magenta);
    let mut lines = vec![Line::from(vec![
        Span::styled("▌ ", border),
        Span::styled(
            "Plan — ready to carry it out?",
            Style::default().add_modifier(Modifier::BOLD),
        ),
    ])];
    let mut plan = crate::markdown::render(&ask.question, crate::markdown::Code::Highlighted);
    let room = usize::from(height).saturating_sub(6).max(3);
    if plan.len() > room {
        let cut = plan.len() - room;
        plan.truncate(room);
        plan.push(Line::styled(format!("… {cut} more lines (Ctrl+G shows them all)"), dim()));
    }
    for line in plan {
        let mut spans = vec![Span::styled("▌ ", border)];
        spans.extend(line.spans);
        lines.push(Line::from(spans));
    }
    let key = |k: &str, label: &str| {
        vec![
            Span::styled(
                format!("[{k}]"),
                Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            ),
            Span::raw(format!(" {label}  ")),
        ]
    };
    let mut keys = vec![Span::styled("▌ ", border)];
    if editing {
        keys.push(Span::raw("edit the plan below · Enter approves it as edited · Esc goes back"));
    } else {
        keys.extend(key("1", "approve"));
        keys.extend(key("2", "keep planning"));
        keys.extend(key("Ctrl+G", "edit"));
        keys.push(Span::styled("or type feedback and Enter", dim()));
    }
    lines.push(Line::from(keys));
    lines
}

/// `1234` → `1.2k`.
fn human(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{}.{}k", n / 1_000, (n % 1_000) / 100),
        _ => format!("{}.{}M", n / 1_000_000, (n % 1_000_000) / 100_000),
    }
}

/// Wraps the editor text at `width` columns (the first row after `prefix`); returns the rows
/// and the cursor's (column, row).
fn wrap_input(
    text: &str,
    cursor: usize,
    prefix: &str,
    width: u16,
) -> (Vec<Line<'static>>, (usize, usize)) {
    let width = usize::from(width).max(1);
    let prefix_width: usize = prefix.chars().filter_map(UnicodeWidthChar::width).sum();
    let mut rows: Vec<Line<'static>> = Vec::new();
    let mut row = String::new();
    let mut column = prefix_width.min(width.saturating_sub(1));
    let mut cursor_at = None;
    let mut first = true;
    let push_row = |rows: &mut Vec<Line<'static>>, row: &mut String, first: &mut bool| {
        let text = std::mem::take(row);
        if *first {
            rows.push(Line::from(vec![
                Span::styled(
                    prefix.to_owned(),
                    Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD),
                ),
                Span::raw(text),
            ]));
            *first = false;
        } else {
            rows.push(Line::from(text));
        }
    };
    for (offset, c) in text.char_indices() {
        if offset == cursor {
            cursor_at = Some((column, rows.len()));
        }
        if c == '\n' {
            push_row(&mut rows, &mut row, &mut first);
            column = 0;
            continue;
        }
        let w = c.width().unwrap_or(0);
        if column + w > width {
            push_row(&mut rows, &mut row, &mut first);
            column = 0;
            if offset == cursor {
                cursor_at = Some((0, rows.len()));
            }
        }
        row.push(c);
        column += w;
    }
    if column >= width {
        push_row(&mut rows, &mut row, &mut first);
        column = 0;
    }
    push_row(&mut rows, &mut row, &mut first);
    let cursor_at = cursor_at.unwrap_or((column, rows.len().saturating_sub(1)));
    (rows, cursor_at)
}

#[cfg(test)]
mod tests;
