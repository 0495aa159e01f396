//! The output pager: bounded previews, scrolling, drawing only the visible rows.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{HEAD_LINES, MAX_LINE_CHARS, OutputPreview, PagedOutput, Pager, PagerKey, TAIL_LINES};

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

fn pager(lines: usize) -> Pager {
    let output = PagedOutput {
        title: "run_command $ seq".to_owned(),
        preview: OutputPreview::of(&numbered(lines)),
    };
    let mut pager = Pager::new(output);
    pager.page = 10;
    pager
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn text(lines: &[ratatui::text::Line<'_>]) -> Vec<String> {
    lines.iter().map(ToString::to_string).collect()
}

#[test]
fn a_preview_streamed_in_pieces_keeps_every_line_of_a_5000_line_output() {
    let all = numbered(5_000);
    let mut preview = OutputPreview::default();
    for piece in all.as_bytes().chunks(7) {
        preview.push(std::str::from_utf8(piece).unwrap());
    }
    assert_eq!(preview.len(), 5_000);
    assert_eq!(preview.line(0), "line 1");
    assert_eq!(preview.line(4_999), "line 5000");
}

#[test]
fn a_huge_output_keeps_its_head_and_tail_and_counts_the_rest() {
    let n = HEAD_LINES + TAIL_LINES + 12_345;
    let mut preview = OutputPreview::default();
    preview.push(&numbered(n));
    preview.push("no newline at the end");
    assert_eq!(preview.total_lines(), n + 1);
    assert_eq!(preview.len(), HEAD_LINES + 1 + TAIL_LINES + 1);
    assert_eq!(preview.line(HEAD_LINES - 1), format!("line {HEAD_LINES}"));
    assert_eq!(preview.line(HEAD_LINES), "… 12345 lines not kept …");
    assert_eq!(preview.line(HEAD_LINES + 1), format!("line {}", HEAD_LINES + 12_346));
    assert_eq!(preview.line(preview.len() - 2), format!("line {n}"));
    assert_eq!(preview.line(preview.len() - 1), "no newline at the end");

    // Long lines are cut: the bound holds in bytes too, however long a line is.
    let mut long = OutputPreview::default();
    long.push(&"x".repeat(1_000_000));
    long.push(&"y".repeat(1_000_000));
    assert!(long.heap_bytes() < 4 * MAX_LINE_CHARS, "{} bytes", long.heap_bytes());
    long.push("\n");
    assert_eq!(long.line(0).chars().count(), MAX_LINE_CHARS + 1);
    assert!(long.heap_bytes() < 4 * MAX_LINE_CHARS, "{} bytes", long.heap_bytes());
}

#[test]
fn keys_scroll_within_the_output_and_esc_closes() {
    let mut pager = pager(5_000);
    assert_eq!(pager.on_key(key(KeyCode::Down)), PagerKey::Stay);
    assert_eq!(pager.top, 1);
    pager.on_key(key(KeyCode::PageDown));
    assert_eq!(pager.top, 11);
    pager.on_key(key(KeyCode::End));
    assert_eq!(pager.top, 4_990);
    pager.on_key(key(KeyCode::Down));
    assert_eq!(pager.top, 4_990);
    pager.on_key(key(KeyCode::PageUp));
    assert_eq!(pager.top, 4_980);
    pager.on_key(key(KeyCode::Home));
    assert_eq!(pager.top, 0);
    pager.on_key(key(KeyCode::Up));
    assert_eq!(pager.top, 0);
    assert_eq!(pager.on_key(key(KeyCode::Esc)), PagerKey::Close);
    let ctrl_o = KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL);
    assert_eq!(pager.on_key(ctrl_o), PagerKey::Close);
}

#[test]
fn drawing_shows_the_visible_rows_cut_to_the_width() {
    let mut pager = pager(5_000);
    pager.page = 3;
    pager.on_key(key(KeyCode::End));
    let lines = pager.lines(16, 5);
    assert_eq!(
        text(&lines),
        [
            "▌ run_command $…",
            "line 4998",
            "line 4999",
            "line 5000",
            "  lines 4998–5000 of 5000 · ↑↓ PgUp PgDn Home End · Esc closes",
        ]
    );
    // A short output in a tall pager.
    assert_eq!(
        text(&self::pager(1).lines(40, 6))[1..],
        ["line 1", "  lines 1–1 of 1 · ↑↓ PgUp PgDn Home End · Esc closes"]
    );
}
