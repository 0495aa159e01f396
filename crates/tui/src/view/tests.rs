//! Snapshot tests of the viewport and the transcript cells (ratatui `TestBackend` + insta),
//! one per widget state, and a no-panic sweep over tiny sizes.

use std::time::{Duration, Instant};

use codecoder_protocol::{
    AgentEventKind, CallView, StepId, ToolCallId, ToolResult, ToolResultStatus,
};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget, Wrap};
use serde_json::json;

use crate::app::App;
use crate::cells::{Cell, ChildTool, ToolCard};
use crate::testing::{app, approval, ask, call, event, text, turn, turn_started};

/// The viewport of `app` drawn at `width`×`height`, as text (with the cursor marked `▏`).
fn screen(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let now = Instant::now();
    let started = app.turn_started.unwrap_or(now);
    let at = started + Duration::from_secs(3);
    let mut cursor = None;
    terminal
        .draw(|f| {
            cursor = super::render(app, at, 0, f.area(), f.buffer_mut()).cursor;
        })
        .unwrap();
    let buffer = terminal.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..buffer.area.height {
        let mut row = String::new();
        for x in 0..buffer.area.width {
            let symbol = buffer[(x, y)].symbol();
            if cursor.is_some_and(|c| c.x == x && c.y == y) {
                row.push('▏');
            }
            row.push_str(symbol);
        }
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}

/// A cell's lines wrapped at `width`, as text.
fn cell_text(cell: &Cell, width: u16) -> String {
    let started = Instant::now();
    let lines: Vec<Line<'static>> = cell.lines(started + Duration::from_millis(3_400), 2);
    let paragraph = Paragraph::new(lines).wrap(Wrap { trim: false });
    let height = u16::try_from(paragraph.line_count(width)).unwrap();
    let area = Rect::new(0, 0, width, height);
    let mut buffer = ratatui::buffer::Buffer::empty(area);
    paragraph.render(area, &mut buffer);
    let mut out = String::new();
    for y in 0..height {
        let row: String = (0..width).map(|x| buffer[(x, y)].symbol().to_owned()).collect();
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}

fn running(app: &mut App, id: &str, name: &str, args: serde_json::Value) {
    app.on_agent_event(event(AgentEventKind::ToolStarted {
        turn: turn(),
        step: StepId::FIRST,
        call: call(id, name, args),
        view: CallView::default(),
    }));
}

#[test]
fn idle() {
    let (app, _rx) = app();
    insta::assert_snapshot!(screen(&app, 80, 12));
}

#[test]
fn typing_multiline() {
    let (mut app, _rx) = app();
    app.on_paste("first line\nsecond line that is long enough to wrap around the eighty column edge of the terminal");
    insta::assert_snapshot!(screen(&app, 80, 12));
}

#[test]
fn streaming_answer_and_running_command() {
    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    app.on_agent_event(text("Let me **check** the tests:\n"));
    running(&mut app, "c1", "run_command", json!({"command": "cargo test"}));
    app.on_agent_event(event(AgentEventKind::ToolOutputDelta {
        call_id: ToolCallId::new("c1"),
        stream: codecoder_protocol::OutputStream::Stdout,
        chunk: "running 3 tests\ntest a ... ok\ntest b ... ok\n".to_owned(),
    }));
    app.on_agent_event(event(AgentEventKind::Status(
        codecoder_protocol::AgentStatus::RunningTools,
    )));
    // Pin the card's start to the turn's, so the elapsed time shown is exactly 3 s.
    app.tools[0].started = app.turn_started.unwrap();
    insta::assert_snapshot!(screen(&app, 80, 14));
}

#[test]
fn approval_of_a_command_with_its_reason() {
    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    let (ev, _reply) = approval(
        call("c1", "run_command", json!({"command": "git push origin main"})),
        "run `git push origin main`",
        Some("ask — project rule ask `run_command(git push*)`"),
    );
    app.on_agent_event(ev);
    insta::assert_snapshot!(screen(&app, 80, 12));
}

#[test]
fn approval_of_a_patch_shows_the_diff() {
    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n@@ fn add\n-    a - b\n+    a + b\n*** End Patch\n";
    let (ev, _reply) =
        approval(call("c1", "apply_patch", json!({"input": patch})), "edit src/lib.rs", None);
    app.on_agent_event(ev);
    insta::assert_snapshot!(screen(&app, 80, 14));
}

#[test]
fn deny_with_feedback_mode() {
    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    let (ev, _reply) = approval(
        call("c1", "run_command", json!({"command": "rm -rf target"})),
        "run `rm -rf target`",
        None,
    );
    app.on_agent_event(ev);
    app.on_key(crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char('f')));
    app.on_paste("use cargo clean");
    insta::assert_snapshot!(screen(&app, 80, 12));
}

#[test]
fn question_with_options() {
    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    let (ev, _reply) = ask("Which database should the tests use?", &["postgres", "sqlite"]);
    app.on_agent_event(ev);
    insta::assert_snapshot!(screen(&app, 80, 10));
}

#[test]
fn command_completion_menu() {
    let (mut app, _rx) = app();
    app.on_paste("/");
    app.update_completion();
    insta::assert_snapshot!(screen(&app, 80, 12));
}

#[test]
fn resume_picker() {
    let (mut app, _rx) = app();
    app.picker = Some(crate::app::Picker {
        items: vec![
            crate::SessionSummary {
                id: "01a22c1c-aaaa".to_owned(),
                title: "fix the flaky test".to_owned(),
                updated: "2026-11-30 10:00:00".to_owned(),
            },
            crate::SessionSummary {
                id: "01a22c1c-bbbb".to_owned(),
                title: "add a --json flag".to_owned(),
                updated: "2026-11-29 09:00:00".to_owned(),
            },
        ],
        selected: 1,
    });
    insta::assert_snapshot!(screen(&app, 80, 10));
}

#[test]
fn quit_hint_in_the_status_line() {
    let (mut app, _rx) = app();
    app.on_key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Char('c'),
        crossterm::event::KeyModifiers::CONTROL,
    ));
    insta::assert_snapshot!(screen(&app, 80, 4));
}

#[test]
fn no_panic_at_tiny_sizes() {
    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    app.on_agent_event(text("some text\nmore"));
    running(&mut app, "c1", "run_command", json!({"command": "sleep 5"}));
    let (ev, _reply) =
        approval(call("c2", "run_command", json!({"command": "ls"})), "run `ls`", Some("why not"));
    app.on_agent_event(ev);
    app.on_paste("typed ünïcödé 日本語 text\nand more");
    app.update_completion();
    for width in 0..12 {
        for height in 0..8 {
            let _ = screen(&app, width, height);
        }
    }
    let _ = screen(&app, 1, 30);
    let _ = screen(&app, 200, 1);
}

fn finished(name: &str, args: serde_json::Value, output: &str, ok: bool) -> Cell {
    let started = Instant::now();
    let mut card = ToolCard::new(call("c1", name, args), started);
    let status = if ok { ToolResultStatus::Success } else { ToolResultStatus::Error };
    let result = ToolResult::text(ToolCallId::new("c1"), status, output);
    card.finish(Ok(&result), started + Duration::from_millis(1_250));
    Cell::Tool(card)
}

#[test]
fn card_command_done() {
    let cell = finished(
        "run_command",
        json!({"command": "cargo test"}),
        "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\n[exit code 0; 1.25 s]",
        true,
    );
    insta::assert_snapshot!(cell_text(&cell, 60));
}

#[test]
fn card_command_failed() {
    let cell = finished(
        "run_command",
        json!({"command": "false"}),
        "(no output)\n[exit code 1; 0.00 s]",
        false,
    );
    insta::assert_snapshot!(cell_text(&cell, 60));
}

#[test]
fn card_edit_diff() {
    let cell = finished(
        "edit",
        json!({"path": "src/lib.rs", "old_string": "a - b\nx", "new_string": "a + b\nx"}),
        "edited",
        true,
    );
    insta::assert_snapshot!(cell_text(&cell, 60));
}

#[test]
fn card_plan_checklist() {
    let cell = finished(
        "update_plan",
        json!({"explanation": "tests first", "plan": [
            {"step": "write the failing test", "status": "completed"},
            {"step": "fix the parser", "status": "in_progress"},
            {"step": "update the docs", "status": "pending"}
        ]}),
        "plan updated",
        true,
    );
    insta::assert_snapshot!(cell_text(&cell, 60));
}

#[test]
fn card_subagent_running_with_children() {
    let started = Instant::now();
    let mut card = ToolCard::new(
        call("c1", "agent", json!({"task": "find where the config is parsed"})),
        started,
    );
    card.children.push(ChildTool {
        id: "s1".to_owned(),
        title: "grep parse_config".to_owned(),
        ok: Some(true),
    });
    card.children.push(ChildTool {
        id: "s2".to_owned(),
        title: "read_file src/config.rs".to_owned(),
        ok: None,
    });
    insta::assert_snapshot!(cell_text(&Cell::Tool(card), 60));
}

#[test]
fn card_tool_error() {
    let started = Instant::now();
    let mut card = ToolCard::new(call("c1", "read_file", json!({"path": "missing.rs"})), started);
    card.finish(
        Err("permission denied: outside the workspace".to_owned()),
        started + Duration::from_millis(10),
    );
    insta::assert_snapshot!(cell_text(&Cell::Tool(card), 60));
}

#[test]
fn user_reasoning_and_notes() {
    let cells = [
        Cell::User { text: "fix it\nplease".to_owned(), queued: false },
        Cell::User { text: "and add a test".to_owned(), queued: true },
        Cell::Reasoning { text: "first\nsecond\nthird".to_owned(), expanded: false },
        Cell::Reasoning { text: "shown in full".to_owned(), expanded: true },
        Cell::Note { text: "■ turn cancelled".to_owned(), kind: crate::cells::NoteKind::Warning },
    ];
    let all: String = cells.iter().map(|c| cell_text(c, 60)).collect();
    insta::assert_snapshot!(all);
}
