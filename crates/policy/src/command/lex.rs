//! A hand-written lexer and parser for the part of POSIX sh / bash that agents write: words
//! with `'…'`, `"…"`, `$'…'` and backslash quoting; `$VAR`, `${…}`, `$((…))`; command
//! substitutions `$(…)` and backticks; process substitutions `<(…)` / `>(…)`; subshells
//! `( … )`; the operators `&& || ; | & |&`, newlines and `;;`; redirections with optional fd
//! numbers; here-documents and here-strings; comments.
//!
//! It does not build a syntax tree: classification only needs every simple command that can
//! run, so the output is a flat list of `SimpleCommand`s in source order. A command found inside
//! a substitution records the index of the command whose word held it (`parent`).
//!
//! Invariants: parsing never panics and always terminates (every loop step consumes input;
//! nesting deeper than `MAX_DEPTH` is a problem, not a stack overflow). Anything the parser
//! does not understand is recorded in `Script::problem`, and callers must then never judge
//! the script safe.

/// How deep substitutions, subshells and `bash -c` scripts may nest before the parser gives up.
pub(crate) const MAX_DEPTH: usize = 32;

/// Keywords after which a `(` opens a subshell.
const OPENING_KEYWORDS: &[&str] =
    &["!", "{", "if", "then", "elif", "else", "do", "while", "until", "time"];

/// The parse of one script.
#[derive(Debug, Default)]
pub(crate) struct Script {
    /// Every simple command, in source order; parents come before their substitutions.
    pub(crate) commands: Vec<SimpleCommand>,
    /// The first thing the parser did not understand.
    pub(crate) problem: Option<String>,
}

/// One simple command: words and redirections.
#[derive(Debug, Default, Clone)]
pub(crate) struct SimpleCommand {
    /// The words, leading assignments included.
    pub(crate) words: Vec<Word>,
    /// The redirections, in order.
    pub(crate) redirects: Vec<Redirect>,
    /// True when the command's stdin is a pipe (it is not the first stage of a pipeline, or it
    /// sits in a subshell that is not).
    pub(crate) piped_stdin: bool,
    /// `name ()`: the start of a function definition.
    pub(crate) defines_function: bool,
}

/// One word after quote removal. Expansions are kept in `value` as they were written.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// The source text.
    pub(crate) raw: String,
    /// The text after quote removal.
    pub(crate) value: String,
    /// Contains a parameter or arithmetic expansion.
    pub(crate) expands: bool,
    /// Contains a command or process substitution.
    pub(crate) substitutes: bool,
    /// Contains an unquoted glob character.
    pub(crate) glob: bool,
    /// Starts with an unquoted `~`.
    pub(crate) tilde: bool,
    /// Contains quoting of any kind.
    pub(crate) quoted: bool,
}

impl Word {
    /// True when the value is exactly what the command will see (nothing expands).
    pub(crate) fn is_literal(&self) -> bool {
        !self.expands && !self.substitutes && !self.glob && !self.tilde
    }
}

/// What a redirection does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RedirectKind {
    /// `<`: reads a file.
    Read,
    /// `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `>&file`: writes a file.
    Write,
    /// `2>&1`, `<&0`, `>&-`: duplicates or closes a descriptor.
    Duplicate,
    /// `<<WORD` / `<<-WORD`.
    HereDoc,
    /// `<<<word`.
    HereString,
}

/// One redirection.
#[derive(Debug, Clone)]
pub(crate) struct Redirect {
    /// What it does.
    pub(crate) kind: RedirectKind,
    /// The target (the delimiter for a here-document).
    pub(crate) target: Word,
    /// The body of a here-document (filled in when its lines are read).
    pub(crate) body: Option<String>,
    /// The source text (`2>&1`, `> out.txt`).
    pub(crate) raw: String,
}

/// Parses a script. Never fails: problems are recorded in the result.
pub(crate) fn parse(source: &str) -> Script {
    let mut script = Script::default();
    let mut parser = Parser::new(source.chars().collect(), &mut script, 0, None);
    parser.parse_list(End::Eof, false);
    script
}

/// Where a list of commands ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Eof,
    Paren,
}

struct PendingHereDoc {
    command: usize,
    redirect: usize,
    delimiter: String,
    quoted: bool,
    strip_tabs: bool,
}

struct Parser<'s> {
    chars: Vec<char>,
    pos: usize,
    script: &'s mut Script,
    depth: usize,
    /// The command whose words are being read (the parent of substitutions found now).
    current: Option<usize>,
    pending: Vec<PendingHereDoc>,
    /// Inside `case … esac`: `)` ends a pattern and `;;` ends a branch.
    case_depth: usize,
}

impl<'s> Parser<'s> {
    fn new(chars: Vec<char>, script: &'s mut Script, depth: usize, current: Option<usize>) -> Self {
        Self { chars, pos: 0, script, depth, current, pending: Vec::new(), case_depth: 0 }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn problem(&mut self, message: impl Into<String>) {
        if self.script.problem.is_none() {
            self.script.problem = Some(message.into());
        }
    }

    /// Gives up on the rest of the input.
    fn abandon(&mut self, message: impl Into<String>) {
        self.problem(message);
        self.pos = self.chars.len();
    }

    fn source(&self, start: usize) -> String {
        let end = self.pos.min(self.chars.len());
        self.chars[start.min(end)..end].iter().collect()
    }

    /// Skips blanks, line continuations and comments (not newlines).
    fn skip_blanks(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\r' => self.pos += 1,
                '\\' if self.peek_at(1) == Some('\n') => self.pos += 2,
                '#' => {
                    while let Some(c) = self.peek() {
                        if c == '\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn parse_list(&mut self, end: End, inherited_piped: bool) {
        if self.depth > MAX_DEPTH {
            self.abandon(format!("nested more than {MAX_DEPTH} levels deep"));
            return;
        }
        let mut piped = inherited_piped;
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else {
                if end == End::Paren {
                    self.problem("a `(` is never closed");
                }
                return;
            };
            match c {
                '\n' => {
                    self.pos += 1;
                    self.read_here_docs();
                    piped = inherited_piped;
                }
                ';' => {
                    self.pos += 1;
                    if matches!(self.peek(), Some(';' | '&')) {
                        self.pos += 1;
                    }
                    piped = inherited_piped;
                }
                '&' if self.peek_at(1) != Some('>') => {
                    self.pos += 1;
                    if self.peek() == Some('&') {
                        self.pos += 1;
                    }
                    piped = inherited_piped;
                }
                '|' => {
                    self.pos += 1;
                    if self.peek() == Some('|') {
                        self.pos += 1;
                        piped = inherited_piped;
                    } else {
                        if self.peek() == Some('&') {
                            self.pos += 1;
                        }
                        piped = true;
                    }
                }
                ')' => {
                    self.pos += 1;
                    if end == End::Paren {
                        return;
                    }
                    if self.case_depth == 0 {
                        self.problem("a `)` has no matching `(`");
                    }
                }
                '(' => {
                    self.pos += 1;
                    self.depth += 1;
                    self.parse_list(End::Paren, piped);
                    self.depth -= 1;
                }
                _ => self.read_simple_command(piped),
            }
        }
    }

    fn read_simple_command(&mut self, piped: bool) {
        let index = self.script.commands.len();
        self.script.commands.push(SimpleCommand { piped_stdin: piped, ..SimpleCommand::default() });
        let saved = self.current.replace(index);
        let mut words: Vec<Word> = Vec::new();
        let mut redirects: Vec<Redirect> = Vec::new();
        let mut defines_function = false;
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else { break };
            let start = self.pos;
            // Inside `[[ … ]]` until the closing `]]`.
            let in_test = words.first().is_some_and(|w| w.raw == "[[")
                && !(words.len() > 1 && words.last().is_some_and(|w| w.raw == "]]"));
            if in_test && c != '\n' {
                let word = self.read_word(true);
                if word.raw.is_empty() {
                    self.pos += 1;
                } else {
                    words.push(word);
                }
                continue;
            }
            match c {
                '\n' | ';' | '|' | ')' => break,
                '&' if self.peek_at(1) != Some('>') => break,
                '(' => {
                    if words.iter().all(|w| {
                        w.is_literal() && !w.quoted && OPENING_KEYWORDS.contains(&w.value.as_str())
                    }) {
                        // `do ( … )`, `then ( … )`, `! ( … )`: a subshell after keywords.
                        self.pos += 1;
                        self.depth += 1;
                        self.parse_list(End::Paren, piped);
                        self.depth -= 1;
                        continue;
                    }
                    if words.len() == 1 && self.next_nonblank_after_paren_is_close() {
                        defines_function = true;
                    } else if words.last().is_some_and(|w| w.raw.ends_with('=')) {
                        // `name=(a b c)`: an array assignment.
                        let array = self.read_array();
                        if let Some(last) = words.last_mut() {
                            last.raw.push_str(&array.raw);
                            last.value.push_str(&array.value);
                            last.expands |= array.expands;
                            last.substitutes |= array.substitutes;
                        }
                        continue;
                    } else {
                        self.problem("unexpected `(` inside a command");
                        self.pos += 1;
                    }
                    break;
                }
                _ => {}
            }
            if self.at_redirect() {
                if let Some(redirect) = self.read_redirect(redirects.len()) {
                    redirects.push(redirect);
                }
            } else {
                let word = self.read_word(false);
                if !word.raw.is_empty() {
                    if words.is_empty() && word.raw == "case" && word.is_literal() {
                        self.case_depth += 1;
                    }
                    if word.raw == "esac" && word.is_literal() {
                        self.case_depth = self.case_depth.saturating_sub(1);
                    }
                    words.push(word);
                }
            }
            if self.pos == start {
                self.problem(format!("unexpected `{c}`"));
                self.pos += 1;
            }
        }
        self.current = saved;
        let command = &mut self.script.commands[index];
        command.words = words;
        command.defines_function = defines_function;
        command.redirects = redirects;
        if defines_function {
            // Consume `( )`.
            self.pos += 1;
            self.skip_blanks();
            if self.peek() == Some(')') {
                self.pos += 1;
            }
        }
    }

    fn next_nonblank_after_paren_is_close(&self) -> bool {
        let mut at = self.pos + 1;
        while let Some(c) = self.chars.get(at) {
            match c {
                ' ' | '\t' => at += 1,
                ')' => return true,
                _ => return false,
            }
        }
        false
    }

    fn read_array(&mut self) -> Word {
        let start = self.pos;
        let mut array = Word::default();
        self.pos += 1;
        loop {
            self.skip_blanks();
            match self.peek() {
                None => {
                    self.problem("an array assignment `(` is never closed");
                    break;
                }
                Some(')') => {
                    self.pos += 1;
                    break;
                }
                Some('\n') => self.pos += 1,
                Some(_) => {
                    let before = self.pos;
                    let word = self.read_word(false);
                    array.expands |= word.expands;
                    array.substitutes |= word.substitutes;
                    if self.pos == before {
                        self.problem("unexpected character in an array assignment");
                        self.pos += 1;
                    }
                }
            }
        }
        array.raw = self.source(start);
        array.value.clone_from(&array.raw);
        array
    }

    /// True at `<`, `>`, `&>`, or digits followed by one of them (not at `<(` / `>(`).
    fn at_redirect(&self) -> bool {
        let mut at = self.pos;
        while self.chars.get(at).is_some_and(char::is_ascii_digit) {
            at += 1;
        }
        match (self.chars.get(at), self.chars.get(at + 1)) {
            (Some('<' | '>'), Some('(')) => false,
            (Some('<' | '>'), _) => true,
            (Some('&'), Some('>')) => at == self.pos,
            _ => false,
        }
    }

    /// `index` is the position the redirection will have in its command's list.
    fn read_redirect(&mut self, index: usize) -> Option<Redirect> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let rest: String = self.chars[self.pos..].iter().take(3).collect();
        let (operator, kind) = [
            ("<<<", RedirectKind::HereString),
            ("<<-", RedirectKind::HereDoc),
            ("<<", RedirectKind::HereDoc),
            ("<>", RedirectKind::Write),
            ("<&", RedirectKind::Duplicate),
            ("<", RedirectKind::Read),
            ("&>>", RedirectKind::Write),
            ("&>", RedirectKind::Write),
            (">>", RedirectKind::Write),
            (">|", RedirectKind::Write),
            (">&", RedirectKind::Duplicate),
            (">", RedirectKind::Write),
        ]
        .into_iter()
        .find(|(operator, _)| rest.starts_with(operator))?;
        self.pos += operator.chars().count();
        self.skip_blanks();
        let before = self.pos;
        let target = match self.peek() {
            Some(c) if !matches!(c, '\n' | ';' | '|' | '&' | '(' | ')' | '<' | '>') => {
                self.read_word(false)
            }
            // `< <(cmd)`: a process substitution as the target.
            Some('<' | '>') if self.peek_at(1) == Some('(') => self.read_word(false),
            _ => Word::default(),
        };
        if self.pos == before || target.raw.is_empty() {
            self.problem(format!("`{operator}` has no target"));
            return None;
        }
        let kind =
            match kind {
                RedirectKind::Duplicate
                    if !(target.value == "-"
                        || target.value.chars().all(|c| c.is_ascii_digit())) =>
                {
                    if operator == ">&" { RedirectKind::Write } else { RedirectKind::Read }
                }
                other => other,
            };
        if kind == RedirectKind::HereDoc
            && let Some(command) = self.current
        {
            self.pending.push(PendingHereDoc {
                command,
                redirect: index,
                delimiter: target.value.clone(),
                quoted: target.quoted,
                strip_tabs: operator == "<<-",
            });
        }
        Some(Redirect { kind, target, body: None, raw: self.source(start) })
    }

    /// Reads the bodies of the here-documents started on the line just ended.
    fn read_here_docs(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        for here_doc in pending {
            let mut body = String::new();
            let mut closed = false;
            while self.pos < self.chars.len() {
                let start = self.pos;
                while self.peek().is_some_and(|c| c != '\n') {
                    self.pos += 1;
                }
                let line = self.source(start);
                if self.peek() == Some('\n') {
                    self.pos += 1;
                }
                let compared =
                    if here_doc.strip_tabs { line.trim_start_matches('\t') } else { &line };
                if compared == here_doc.delimiter {
                    closed = true;
                    break;
                }
                body.push_str(compared);
                body.push('\n');
            }
            if !closed {
                self.problem(format!("here-document `{}` is never closed", here_doc.delimiter));
            }
            if !here_doc.quoted && self.depth < MAX_DEPTH {
                // Unquoted bodies expand: judge the substitutions in them.
                let mut inner = Parser::new(
                    body.chars().collect(),
                    self.script,
                    self.depth + 1,
                    Some(here_doc.command),
                );
                inner.scan_expansions();
            }
            self.attach_here_doc_body(here_doc.command, here_doc.redirect, body);
        }
    }

    fn attach_here_doc_body(&mut self, command: usize, redirect: usize, body: String) {
        // A newline always ends the command first, so its redirects are stored by now.
        if let Some(target) =
            self.script.commands.get_mut(command).and_then(|c| c.redirects.get_mut(redirect))
        {
            target.body = Some(body);
        }
    }

    /// Scans text that only expands (a here-document body) for substitutions.
    fn scan_expansions(&mut self) {
        let mut sink = Word::default();
        while let Some(c) = self.peek() {
            match c {
                '\\' => self.pos += 2,
                '$' => self.read_dollar(&mut sink, true),
                '`' => self.read_backtick(&mut sink),
                _ => self.pos += 1,
            }
        }
        self.pos = self.pos.min(self.chars.len());
    }

    /// Reads one word. In a `[[ … ]]` test (`in_test`), only blanks end it: `(`, `|`, `&`,
    /// `<` and `>` are part of the expression.
    fn read_word(&mut self, in_test: bool) -> Word {
        let start = self.pos;
        let mut word = Word { tilde: self.peek() == Some('~'), ..Word::default() };
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\r' | '\n' => break,
                ';' | '&' | '|' | '(' | ')' | '<' | '>' if in_test => {
                    word.value.push(c);
                    self.pos += 1;
                }
                ';' | '&' | '|' | '(' | ')' => break,
                '<' | '>' => {
                    if self.peek_at(1) != Some('(') {
                        break;
                    }
                    self.pos += 2;
                    word.value.push(c);
                    word.value.push('(');
                    self.read_substitution(&mut word);
                }
                '\'' => {
                    word.quoted = true;
                    self.pos += 1;
                    let Some(close) = self.chars[self.pos..].iter().position(|&c| c == '\'') else {
                        self.abandon("a `'` is never closed");
                        break;
                    };
                    word.value.extend(&self.chars[self.pos..self.pos + close]);
                    self.pos += close + 1;
                }
                '"' => {
                    word.quoted = true;
                    self.pos += 1;
                    self.read_double_quoted(&mut word);
                }
                '\\' => {
                    match self.peek_at(1) {
                        Some('\n') => {}
                        Some(next) => {
                            word.quoted = true;
                            word.value.push(next);
                        }
                        None => word.value.push('\\'),
                    }
                    self.pos += 2;
                }
                '$' => self.read_dollar(&mut word, false),
                '`' => self.read_backtick(&mut word),
                '*' | '?' | '[' => {
                    word.glob = true;
                    word.value.push(c);
                    self.pos += 1;
                }
                _ => {
                    word.value.push(c);
                    self.pos += 1;
                }
            }
        }
        self.pos = self.pos.min(self.chars.len());
        word.raw = self.source(start);
        if matches!(word.raw.as_str(), "[" | "[[") {
            // The test commands, not a glob.
            word.glob = false;
        }
        word
    }

    /// After the opening `"`; consumes the closing one.
    fn read_double_quoted(&mut self, word: &mut Word) {
        loop {
            let Some(c) = self.peek() else {
                self.abandon("a `\"` is never closed");
                return;
            };
            match c {
                '"' => {
                    self.pos += 1;
                    return;
                }
                '\\' => {
                    match self.peek_at(1) {
                        Some('\n') => {}
                        Some(next @ ('$' | '`' | '"' | '\\')) => word.value.push(next),
                        Some(next) => {
                            word.value.push('\\');
                            word.value.push(next);
                        }
                        None => word.value.push('\\'),
                    }
                    self.pos += 2;
                }
                '$' => self.read_dollar(word, true),
                '`' => self.read_backtick(word),
                _ => {
                    word.value.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// At a `$`. Counts towards the nesting limit (`${…${…}}`, `$((…$((…))))` nest too).
    fn read_dollar(&mut self, word: &mut Word, in_double_quotes: bool) {
        if self.depth > MAX_DEPTH {
            self.abandon(format!("nested more than {MAX_DEPTH} levels deep"));
            return;
        }
        self.depth += 1;
        self.read_dollar_unguarded(word, in_double_quotes);
        self.depth -= 1;
    }

    fn read_dollar_unguarded(&mut self, word: &mut Word, in_double_quotes: bool) {
        let start = self.pos;
        match self.peek_at(1) {
            Some('(') if self.peek_at(2) == Some('(') => {
                // Arithmetic expansion: balanced parentheses; substitutions inside still run.
                word.expands = true;
                self.pos += 3;
                let mut depth = 2usize;
                while depth > 0 {
                    let Some(c) = self.peek() else {
                        self.abandon("a `$((` is never closed");
                        break;
                    };
                    match c {
                        '(' => {
                            depth += 1;
                            self.pos += 1;
                        }
                        ')' => {
                            depth -= 1;
                            self.pos += 1;
                        }
                        '$' => {
                            let mut inner = Word::default();
                            self.read_dollar(&mut inner, true);
                            word.substitutes |= inner.substitutes;
                        }
                        '`' => {
                            let mut inner = Word::default();
                            self.read_backtick(&mut inner);
                            word.substitutes |= inner.substitutes;
                        }
                        _ => self.pos += 1,
                    }
                }
                word.value.push_str(&self.source(start));
            }
            Some('(') => {
                self.pos += 2;
                word.value.push_str("$(");
                self.read_substitution(word);
            }
            Some('{') => {
                word.expands = true;
                self.pos += 2;
                loop {
                    let Some(c) = self.peek() else {
                        self.abandon("a `${` is never closed");
                        break;
                    };
                    match c {
                        '}' => {
                            self.pos += 1;
                            break;
                        }
                        '\\' => self.pos += 2,
                        '$' => {
                            let mut inner = Word::default();
                            self.read_dollar(&mut inner, true);
                            word.substitutes |= inner.substitutes;
                        }
                        '`' => {
                            let mut inner = Word::default();
                            self.read_backtick(&mut inner);
                            word.substitutes |= inner.substitutes;
                        }
                        '"' => {
                            self.pos += 1;
                            let mut inner = Word::default();
                            self.read_double_quoted(&mut inner);
                            word.substitutes |= inner.substitutes;
                        }
                        '\'' if !in_double_quotes => {
                            self.pos += 1;
                            match self.chars[self.pos..].iter().position(|&c| c == '\'') {
                                Some(close) => self.pos += close + 1,
                                None => self.abandon("a `'` is never closed"),
                            }
                        }
                        _ => self.pos += 1,
                    }
                }
                self.pos = self.pos.min(self.chars.len());
                word.value.push_str(&self.source(start));
            }
            Some('\'') if !in_double_quotes => {
                // ANSI-C quoting: `\'` and `\\` are the escapes that matter for finding the end.
                word.quoted = true;
                self.pos += 2;
                loop {
                    let Some(c) = self.peek() else {
                        self.abandon("a `$'` is never closed");
                        break;
                    };
                    match c {
                        '\'' => {
                            self.pos += 1;
                            break;
                        }
                        '\\' => {
                            if let Some(next) = self.peek_at(1) {
                                match next {
                                    'n' => word.value.push('\n'),
                                    't' => word.value.push('\t'),
                                    '\'' | '\\' | '"' => word.value.push(next),
                                    _ => {
                                        // Octal, hex and unicode escapes can spell any
                                        // character: the value is not what it looks like.
                                        word.expands = true;
                                        word.value.push('\\');
                                        word.value.push(next);
                                    }
                                }
                            }
                            self.pos += 2;
                        }
                        _ => {
                            word.value.push(c);
                            self.pos += 1;
                        }
                    }
                }
                self.pos = self.pos.min(self.chars.len());
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                word.expands = true;
                self.pos += 1;
                while self.peek().is_some_and(|c| c == '_' || c.is_ascii_alphanumeric()) {
                    self.pos += 1;
                }
                word.value.push_str(&self.source(start));
            }
            Some(c) if "@*#?$!-0123456789".contains(c) => {
                word.expands = true;
                self.pos += 2;
                word.value.push_str(&self.source(start));
            }
            _ => {
                word.value.push('$');
                self.pos += 1;
            }
        }
    }

    /// After `$(`, `<(` or `>(`: parses the commands up to the matching `)`.
    fn read_substitution(&mut self, word: &mut Word) {
        let inner_start = self.pos;
        word.substitutes = true;
        self.depth += 1;
        let case_depth = std::mem::take(&mut self.case_depth);
        self.parse_list(End::Paren, false);
        self.case_depth = case_depth;
        self.depth -= 1;
        let inner = self.source(inner_start);
        word.value.push_str(&inner);
    }

    /// At a backtick: the text up to the next unescaped backtick is a script of its own.
    fn read_backtick(&mut self, word: &mut Word) {
        word.substitutes = true;
        self.pos += 1;
        let mut inner = String::new();
        loop {
            let Some(c) = self.peek() else {
                self.abandon("a backtick is never closed");
                return;
            };
            match c {
                '`' => {
                    self.pos += 1;
                    break;
                }
                '\\' => {
                    match self.peek_at(1) {
                        Some(next @ ('`' | '\\' | '$')) => inner.push(next),
                        Some(next) => {
                            inner.push('\\');
                            inner.push(next);
                        }
                        None => inner.push('\\'),
                    }
                    self.pos += 2;
                }
                _ => {
                    inner.push(c);
                    self.pos += 1;
                }
            }
        }
        word.value.push('`');
        word.value.push_str(&inner);
        word.value.push('`');
        if self.depth >= MAX_DEPTH {
            self.abandon(format!("nested more than {MAX_DEPTH} levels deep"));
            return;
        }
        let mut parser =
            Parser::new(inner.chars().collect(), self.script, self.depth + 1, self.current);
        parser.parse_list(End::Eof, false);
    }
}

#[cfg(test)]
mod tests;
