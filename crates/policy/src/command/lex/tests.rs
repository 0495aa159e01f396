//! Unit tests for the lexer: what it splits, what it keeps, what it reports.

use pretty_assertions::assert_eq;

use super::{RedirectKind, parse};

fn words(source: &str) -> Vec<Vec<String>> {
    let script = parse(source);
    assert_eq!(script.problem, None, "{source}");
    script.commands.iter().map(|c| c.words.iter().map(|w| w.value.clone()).collect()).collect()
}

#[test]
fn splits_operators_and_removes_quotes() {
    assert_eq!(
        words("ls -la && echo 'a b' \"c $HOME\" d\\ e | wc -l; true & false || x\ny"),
        vec![
            vec!["ls", "-la"],
            vec!["echo", "a b", "c $HOME", "d e"],
            vec!["wc", "-l"],
            vec!["true"],
            vec!["false"],
            vec!["x"],
            vec!["y"],
        ]
    );
}

#[test]
fn substitutions_become_commands_after_their_parent() {
    assert_eq!(
        words("echo $(rm -rf /) `whoami` <(ls)"),
        vec![
            vec!["echo", "$(rm -rf /)", "`whoami`", "<(ls)"],
            vec!["rm", "-rf", "/"],
            vec!["whoami"],
            vec!["ls"]
        ]
    );
}

#[test]
fn redirections_are_not_words() {
    let script = parse("cmd 2>&1 >out.txt <in <<<here");
    let command = &script.commands[0];
    assert_eq!(command.words.len(), 1);
    let kinds: Vec<RedirectKind> = command.redirects.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        vec![
            RedirectKind::Duplicate,
            RedirectKind::Write,
            RedirectKind::Read,
            RedirectKind::HereString
        ]
    );
    assert_eq!(command.redirects[1].target.value, "out.txt");
}

#[test]
fn here_document_bodies_are_read_and_unquoted_ones_expand() {
    let script = parse("cat <<EOF\nhello $(id)\nEOF\necho done");
    assert_eq!(script.problem, None);
    let names: Vec<&str> = script.commands.iter().map(|c| c.words[0].value.as_str()).collect();
    assert_eq!(names, vec!["cat", "id", "echo"]);
    assert_eq!(script.commands[0].redirects[0].body.as_deref(), Some("hello $(id)\n"));

    let quoted = parse("cat <<'EOF'\n$(id)\nEOF");
    assert_eq!(quoted.commands.len(), 1);
}

#[test]
fn problems_are_reported() {
    for (source, expected) in [
        ("echo 'open", "a `'` is never closed"),
        ("echo \"open", "a `\"` is never closed"),
        ("echo $(ls", "a `(` is never closed"),
        ("ls )", "a `)` has no matching `(`"),
        ("echo `ls", "a backtick is never closed"),
        ("cat >", "`>` has no target"),
    ] {
        assert_eq!(parse(source).problem.as_deref(), Some(expected), "{source}");
    }
}

#[test]
fn deep_nesting_is_a_problem_not_a_crash() {
    let source = format!("{}x{}", "$(".repeat(500), ")".repeat(500));
    assert!(parse(&source).problem.is_some());
    for source in [
        format!("echo {}", "(".repeat(10_000)),
        format!("echo {}", "${".repeat(20_000)),
        format!("echo {}", "$((".repeat(20_000)),
        format!("echo {}", "\"$(".repeat(20_000)),
        format!("echo {}", "${x:-\"".repeat(20_000)),
        format!("echo {}", "`".repeat(20_001)),
        format!("echo {}", "<(".repeat(20_000)),
    ] {
        assert!(parse(&source).problem.is_some(), "{}", &source[..20]);
    }
}

#[test]
fn pipes_mark_stdin() {
    let script = parse("curl x | (sh) ; ls");
    let piped: Vec<bool> = script.commands.iter().map(|c| c.piped_stdin).collect();
    assert_eq!(piped, vec![false, true, false]);
}

#[test]
fn double_bracket_tests_keep_their_operators() {
    assert_eq!(
        words("[[ $x =~ ^(a|b)$ && -n $y ]] && echo yes"),
        vec![vec!["[[", "$x", "=~", "^(a|b)$", "&&", "-n", "$y", "]]"], vec!["echo", "yes"]]
    );
}
