//! Markdown rendering snapshots and the streaming splitter's boundaries.

use ratatui::style::Color;

use super::{Code, StreamSplitter, render};

fn text(markdown: &str) -> String {
    render(markdown, Code::Plain).iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn blocks_and_inlines() {
    let markdown = "# Title\n\nSome *emphasis*, **strong**, `code` and [a link](https://x.y).\n\n## Steps\n\n1. first\n2. second\n   - nested\n\n> quoted\n\n---\n\n- [x] done\n- [ ] todo\n";
    insta::assert_snapshot!(text(markdown));
}

#[test]
fn code_blocks_are_highlighted_when_committed() {
    let markdown = "```rust\nfn main() {\n    let x = 1;\n}\n```\n";
    let plain = render(markdown, Code::Plain);
    let highlighted = render(markdown, Code::Highlighted);
    let texts = |lines: &[ratatui::text::Line<'_>]| {
        lines.iter().map(ToString::to_string).collect::<Vec<_>>()
    };
    assert_eq!(texts(&plain), texts(&highlighted), "the same text either way");
    assert_eq!(texts(&plain), ["  fn main() {", "      let x = 1;", "  }"]);
    let colors: std::collections::HashSet<_> =
        highlighted.iter().flat_map(|l| l.spans.iter().filter_map(|s| s.style.fg)).collect();
    assert!(colors.len() > 2, "several colours from the highlighter: {colors:?}");
    assert!(colors.iter().all(|c| matches!(c, Color::Rgb(..))), "{colors:?}");
}

#[test]
fn unknown_languages_and_garbage_do_not_panic() {
    for input in [
        "```nosuchlang\nx\n```",
        "```",
        "* \n*",
        "[",
        "<div>",
        "# ",
        "1.\n\n\n2.",
        "\u{0}\u{feff}",
        "> > > deep",
    ] {
        let _ = render(input, Code::Highlighted);
    }
}

#[test]
fn splitter_commits_after_blank_lines_outside_fences() {
    let mut splitter = StreamSplitter::default();
    let mut text = String::from("para one\n");
    assert_eq!(splitter.advance(&text), 0, "no boundary yet");
    text.push_str("\n```\ncode\n\nmore code\n");
    let after_para = "para one\n\n".len();
    assert_eq!(
        splitter.advance(&text),
        after_para,
        "the blank line inside the fence is not a boundary"
    );
    text.push_str("```\n");
    assert_eq!(splitter.advance(&text), text.len(), "a closed fence is a boundary");
    text.push_str("partial line without newline");
    assert_eq!(splitter.advance(&text), text.len() - "partial line without newline".len());
}
