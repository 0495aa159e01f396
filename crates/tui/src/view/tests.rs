//! Snapshot tests of the viewport and the transcript cells (ratatui `TestBackend` + insta),
//! one per widget state, and a no-panic sweep over tiny sizes.

use std::time::{Duration, Instant};

use codecoder_protocol::{
    AgentEventKind, CallView, ToolCall, ToolCallId, ToolResult, ToolResultStatus,
};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget, Wrap};
use serde_json::json;

use crate::app::App;
use crate::cells::{Cell, ChildTool, ToolCard};
use crate::testing::{app, approval, ask, call, event, started, text, turn_started, view};

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
    app.on_agent_event(started(&call(id, name, args)));
}

/// A card for `call`, as a `ToolStarted` of it makes one.
fn card(call: &ToolCall, started: Instant) -> ToolCard {
    ToolCard::new(call.id.clone(), call.name.clone(), view(call), started)
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
    let mut card = card(&call("c1", name, args), started);
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
    let mut card =
        card(&call("c1", "agent", json!({"task": "find where the config is parsed"})), started);
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
    let mut card = card(&call("c1", "read_file", json!({"path": "missing.rs"})), started);
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

/// `CallProgress` of the `apply_patch` call `id` described as `view`.
fn progress(id: &str, view: &CallView) -> codecoder_protocol::AgentEvent {
    event(AgentEventKind::CallProgress {
        turn: crate::testing::turn(),
        step: codecoder_protocol::StepId::FIRST,
        call_id: ToolCallId::new(id),
        name: "apply_patch".to_owned(),
        view: view.clone(),
    })
}

/// The views of an `apply_patch` call while the model writes `patch`: the tool's own reader
/// given the arguments' JSON text up to each of `stops` (points in the patch text).
fn patch_progress(patch: &str, stops: &[&str]) -> Vec<CallView> {
    let json = serde_json::to_string(&json!({ "input": patch })).unwrap();
    let mut reader = crate::testing::tool("apply_patch").unwrap().input_reader().unwrap();
    let mut sent = 0;
    let mut views = Vec::new();
    for stop in stops {
        let end = patch.find(stop).unwrap() + stop.len();
        let encoded = serde_json::to_string(&patch[..end]).unwrap();
        // The JSON text up to the stop: `{"input":"` and the encoded patch so far, unclosed.
        let upto = "{\"input\":".len() + encoded.len() - 1;
        reader.push(&json[sent..upto]);
        sent = upto;
        views.push(reader.view().unwrap());
    }
    views
}

#[test]
fn a_patch_being_written_shows_its_files_until_its_card_starts() {
    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    app.on_agent_event(text("Fixing it.\n\n"));
    let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@ fn main\n-    old();\n+    new();\n+    more();\n*** Add File: src/b.rs\n+pub fn b() {}\n+pub fn c() {}\n*** End Patch\n";
    let views = patch_progress(patch, &["+    new();\n", "+pub fn b() {}\n"]);
    app.on_agent_event(progress("c1", &views[0]));
    let first = screen(&app, 80, 14);
    assert!(first.contains("Writing src/a.rs (+1 -1)…"), "{first}");
    app.on_agent_event(progress("c1", &views[1]));
    let second = screen(&app, 80, 14);
    insta::assert_snapshot!(second);
    assert!(second.contains("Writing src/a.rs (+2 -1)…"), "{second}");
    assert!(second.contains("Writing src/b.rs (+1 -0)…"), "{second}");

    // The whole call replaces the files being written with its card.
    running(&mut app, "c1", "apply_patch", json!({ "input": patch }));
    let started = screen(&app, 80, 16);
    assert!(!started.contains("Writing"), "{started}");
    assert!(started.contains("apply_patch src/a.rs, src/b.rs"), "{started}");
    assert!(started.contains("+pub fn c() {}"), "{started}");
}

#[test]
fn a_call_still_being_written_goes_when_its_step_is_retried_or_it_is_refused() {
    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    let patch = "*** Begin Patch\n*** Add File: notes.md\n+hello\n*** End Patch\n";
    let views = patch_progress(patch, &["+hello\n"]);
    app.on_agent_event(progress("c1", &views[0]));
    assert!(screen(&app, 80, 12).contains("Writing notes.md (+1 -0)…"));
    app.on_agent_event(event(AgentEventKind::StepRetried {
        turn: crate::testing::turn(),
        step: codecoder_protocol::StepId::FIRST,
        reason: "stream reset".to_owned(),
    }));
    assert!(app.writing.is_empty(), "a retried step's calls are void");

    app.on_agent_event(progress("c1", &views[0]));
    let refused = call("c1", "apply_patch", json!({ "input": patch }));
    app.on_agent_event(crate::testing::finished(
        &refused,
        Err(codecoder_protocol::ToolError::PermissionDenied { reason: "a rule".to_owned() }),
    ));
    assert!(app.writing.is_empty(), "a call refused before it started is written no more");
    assert!(!screen(&app, 80, 12).contains("Writing"));
}

/// A tool no part of the UI names (`relabel_files`, which exists only for tests) shows from its
/// view: its title line, the files it moves, in its approval and on its card.
#[test]
fn a_tool_the_ui_has_never_heard_of_shows_from_its_view() {
    use codecoder_app::testing::TEST_ONLY_TOOL;
    let moves = json!({"moves": [
        {"from": "src/old.rs", "to": "src/new.rs"},
        {"from": "notes.txt", "to": "docs/notes.txt"}
    ]});
    let relabel = call("c1", TEST_ONLY_TOOL, moves);

    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    let (ev, _reply) = approval(relabel.clone(), "relabel 2 files", None);
    app.on_agent_event(ev);
    let asked = screen(&app, 80, 14);
    assert!(asked.contains("Allow relabel_files?"), "{asked}");
    assert!(asked.contains("src/old.rs → src/new.rs"), "{asked}");
    assert!(asked.contains("notes.txt → docs/notes.txt"), "{asked}");

    let started = Instant::now();
    let mut card = card(&relabel, started);
    let result =
        ToolResult::text(ToolCallId::new("c1"), ToolResultStatus::Success, "relabelled 2 file(s)");
    card.finish(Ok(&result), started + Duration::from_millis(20));
    let shown = cell_text(&Cell::Tool(card), 60);
    assert_eq!(
        shown.lines().collect::<Vec<_>>(),
        [
            "✓ relabel_files src/old.rs → src/new.rs",
            "    src/old.rs → src/new.rs",
            "    notes.txt → docs/notes.txt",
            "  └ done in 0.0s",
            "",
        ],
        "{shown}"
    );
}

#[test]
fn a_job_call_names_its_job_and_shows_its_output() {
    let cell = finished("job_output", json!({"id": 3}), "status: running\nbuilding…", true);
    let shown = cell_text(&cell, 60);
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines[0], "✓ job_output 3", "{shown}");
    assert!(lines.contains(&"  │ building…"), "a command's output shows: {shown}");
}

#[test]
fn a_call_asked_about_is_no_longer_shown_as_being_written() {
    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    let patch = "*** Begin Patch\n*** Add File: /etc/notes.md\n+hello\n*** End Patch\n";
    let views = patch_progress(patch, &["+hello\n"]);
    app.on_agent_event(progress("c1", &views[0]));
    assert!(screen(&app, 80, 12).contains("Writing /etc/notes.md (+1 -0)…"));
    let (ev, _reply) =
        approval(call("c1", "apply_patch", json!({ "input": patch })), "edit /etc/notes.md", None);
    app.on_agent_event(ev);
    let asked = screen(&app, 80, 16);
    assert!(!asked.contains("Writing"), "{asked}");
    assert!(asked.contains("+hello"), "{asked}");
}

#[test]
fn card_edit_with_diagnostics() {
    let cell = finished(
        "edit",
        json!({"path": "calc.py", "old_string": "return a + b", "new_string": "return str(a + b)"}),
        "Edited `calc.py`: replaced 1 occurrence at line 2.\n\nDiagnostics for calc.py (pyright): 1 error(s), 0 other(s)\n  calc.py:2:12: error: Type \"str\" is not assignable to return type \"int\" [reportReturnType]",
        true,
    );
    let text = cell_text(&cell, 100);
    assert!(text.contains("│ Diagnostics for calc.py (pyright): 1 error(s), 0 other(s)"), "{text}");
    assert!(text.contains("│   calc.py:2:12: error: Type \"str\""), "{text}");
    assert!(!text.contains("Edited `calc.py`"), "{text}");
    insta::assert_snapshot!(text);
}
