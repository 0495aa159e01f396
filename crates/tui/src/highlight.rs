//! Code-block syntax highlighting with syntect (pure-Rust regex engine).
//!
//! Invariants: the syntax and theme sets load once, lazily; `preload` starts that load on a
//! named background thread so the first frame never waits for it. Highlighting never panics:
//! an unknown language or a highlighter error yields `None` and the caller draws plain text.

use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

struct Sets {
    syntaxes: SyntaxSet,
    theme: Theme,
}

static SETS: OnceLock<Option<Sets>> = OnceLock::new();

fn sets() -> Option<&'static Sets> {
    SETS.get_or_init(|| {
        let syntaxes = SyntaxSet::load_defaults_newlines();
        let mut themes = ThemeSet::load_defaults();
        let theme = themes.themes.remove("base16-ocean.dark")?;
        Some(Sets { syntaxes, theme })
    })
    .as_ref()
}

/// Starts loading the syntax definitions in the background (detached: the load is bounded
/// and its result is cached in a static, so nothing needs to wait for it).
pub(crate) fn preload() {
    let _ = std::thread::Builder::new().name("tui-syntect-load".to_owned()).spawn(|| {
        let _ = sets();
    });
}

/// Highlights `code` written in `lang` (a fence token such as `rust` or `py`).
pub(crate) fn highlight(code: &str, lang: &str) -> Option<Vec<Line<'static>>> {
    if lang.is_empty() {
        return None;
    }
    let sets = sets()?;
    let syntax = sets
        .syntaxes
        .find_syntax_by_token(lang)
        .or_else(|| sets.syntaxes.find_syntax_by_extension(lang))?;
    let mut highlighter = HighlightLines::new(syntax, &sets.theme);
    let mut lines = Vec::new();
    for source_line in LinesWithEndings::from(code) {
        let ranges = highlighter.highlight_line(source_line, &sets.syntaxes).ok()?;
        let spans: Vec<Span<'static>> = ranges
            .into_iter()
            .map(|(style, text)| {
                let mut out = Style::default().fg(Color::Rgb(
                    style.foreground.r,
                    style.foreground.g,
                    style.foreground.b,
                ));
                if style.font_style.contains(FontStyle::BOLD) {
                    out = out.add_modifier(Modifier::BOLD);
                }
                if style.font_style.contains(FontStyle::ITALIC) {
                    out = out.add_modifier(Modifier::ITALIC);
                }
                Span::styled(text.trim_end_matches(['\n', '\r']).to_owned(), out)
            })
            .collect();
        lines.push(Line::from(spans));
    }
    Some(lines)
}
