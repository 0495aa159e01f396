//! The loop's pure helpers: NO_COLOR, /init, the viewport height, history flushing.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};

use super::{decolor, viewport_height};

#[test]
fn decolor_drops_colours_but_keeps_emphasis() {
    let mut buf = Buffer::empty(Rect::new(0, 0, 4, 1));
    buf.set_string(
        0,
        0,
        "ab",
        Style::default()
            .fg(Color::Red)
            .bg(Color::Blue)
            .add_modifier(Modifier::BOLD | Modifier::REVERSED),
    );
    decolor(&mut buf);
    let cell = &buf[(0, 0)];
    assert_eq!((cell.fg, cell.bg), (Color::Reset, Color::Reset));
    assert!(cell.modifier.contains(Modifier::BOLD | Modifier::REVERSED));
    assert_eq!(cell.symbol(), "a");
}

#[test]
fn viewport_height_fits_any_terminal() {
    assert_eq!(viewport_height(24), 12);
    assert_eq!(viewport_height(10), 8);
    assert_eq!(viewport_height(3), 3);
    assert_eq!(viewport_height(0), 0);
}
