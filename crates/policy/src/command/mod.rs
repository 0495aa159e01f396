//! Shell command classification: how much a command line can change, and why.
//!
//! `classify` parses the line (see `lex`), splits it into every simple command that can run —
//! the parts of `&&`, `||`, `;`, `|`, `&` lists, subshells, groups, `$(…)`, backticks,
//! `<(…)`, the scripts of `bash -c`/`sh -c`/`eval`, `find -exec` commands — and judges each
//! part:
//!
//! - **Safe**: known read-only (`ls`, `cat`, `rg`, `git status`, `find` without `-exec`/
//!   `-delete`, `sed` without `-i` or `w`/`e` commands, …) with no write redirection.
//! - **Dangerous**: destructive or irreversible (`rm -rf` outside the writable roots or of a
//!   root itself, `git push --force`, `git reset --hard`, `dd`, `sudo`, `curl … | sh`, …).
//! - **Normal**: everything else.
//!
//! The worst part decides the line. Wrappers (`env`, `command`, `time`, `nice`, `timeout N`,
//! `nohup`, `stdbuf`, `xargs`, `exec`) are looked through; leading `VAR=value` assignments are
//! stripped (an assignment to anything but a locale or display variable makes the part at
//! least Normal, since `PATH=`, `LD_PRELOAD=`, `GIT_PAGER=` … change what runs).
//!
//! Invariants: a line the parser does not fully understand is never Safe (it is Dangerous,
//! with the parse problem as the reason); a command whose name is only known at run time is
//! Dangerous; every Dangerous reason names the part (`` `git push --force` rewrites remote
//! history ``). Classification never panics and does no I/O beyond canonicalizing paths that
//! exist.

mod lex;
mod programs;

use std::fmt;
use std::path::{Path, PathBuf};

use crate::paths::{Roots, resolve};
use lex::{MAX_DEPTH, RedirectKind, Word};

/// Where a command runs: needed to tell "`rm -rf build`" from "`rm -rf ~`".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandContext {
    /// The directory the command starts in.
    pub cwd: PathBuf,
    /// The directories the command may change (the workspace). Empty means "the cwd only".
    pub writable_roots: Vec<PathBuf>,
    /// The home directory (for `~` and `$HOME`).
    pub home: Option<PathBuf>,
}

/// How much a command can change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Severity {
    /// Known read-only: runs without asking except when the approval mode asks for everything.
    Safe,
    /// May change things inside the sandbox.
    Normal,
    /// Destructive or irreversible: always needs approval unless bypassed.
    Dangerous {
        /// Names the part and says why (`` `git reset --hard` discards uncommitted work ``).
        reason: String,
    },
}

impl Severity {
    fn rank(&self) -> u8 {
        match self {
            Self::Safe => 0,
            Self::Normal => 1,
            Self::Dangerous { .. } => 2,
        }
    }

    /// True for `Safe`.
    pub fn is_safe(&self) -> bool {
        matches!(self, Self::Safe)
    }

    /// True for `Dangerous`.
    pub fn is_dangerous(&self) -> bool {
        matches!(self, Self::Dangerous { .. })
    }

    /// The worse of the two (the first one on a tie).
    #[must_use]
    pub fn max(self, other: Self) -> Self {
        if other.rank() > self.rank() { other } else { self }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Safe => f.write_str("safe"),
            Self::Normal => f.write_str("normal"),
            Self::Dangerous { reason } => write!(f, "dangerous: {reason}"),
        }
    }
}

/// One simple command of a line, as judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The part as written, normalized: leading assignments and shell keywords (`do`, `then`,
    /// `{`, …) stripped, whitespace collapsed. Shell permission rules match against this.
    pub text: String,
    /// The command with wrappers (`env`, `timeout 5`, `nice`, …) looked through; rules match
    /// against this too.
    pub command: String,
    /// The part's own severity.
    pub severity: Severity,
}

/// The judgment of one command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    /// The worst severity of any part (Safe for an empty line).
    pub severity: Severity,
    /// Every part, in source order (an outer command before the ones substituted into it).
    pub parts: Vec<Part>,
}

/// Classifies a shell command line.
pub fn classify(command: &str, ctx: &CommandContext) -> Classification {
    let roots = if ctx.writable_roots.is_empty() {
        Roots::new(std::slice::from_ref(&ctx.cwd), &ctx.cwd, &[])
    } else {
        Roots::new(&ctx.writable_roots, &ctx.cwd, &[])
    };
    let mut judge = Judge {
        ctx,
        roots,
        cwd: Some(resolve(&ctx.cwd, &ctx.cwd)),
        parts: Vec::new(),
        downloader: None,
        stdin_interpreter: None,
        environment_changed: false,
    };
    judge.script(command, 0);
    if let (Some(download), Some(interpreter)) = (&judge.downloader, &judge.stdin_interpreter) {
        let reason = format!(
            "`{}` runs a script downloaded by `{}` without showing it",
            shorten(interpreter),
            shorten(download)
        );
        // First, so that this reason (more specific than the pipe's) is the line's.
        judge.parts.insert(
            0,
            Part {
                text: normalize_whitespace(command),
                command: normalize_whitespace(command),
                severity: Severity::Dangerous { reason },
            },
        );
    }
    if let Some(name) = fork_bomb(command) {
        judge.parts.push(Part {
            text: normalize_whitespace(command),
            command: normalize_whitespace(command),
            severity: Severity::Dangerous {
                reason: format!("`{name}` is a fork bomb (a function that spawns itself forever)"),
            },
        });
    }
    let severity =
        judge.parts.iter().fold(Severity::Safe, |worst, part| worst.max(part.severity.clone()));
    Classification { severity, parts: judge.parts }
}

/// Collapses runs of whitespace to one space and trims.
pub(crate) fn normalize_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A part's text for a reason: at most 80 characters.
fn shorten(text: &str) -> String {
    const LIMIT: usize = 80;
    if text.chars().count() <= LIMIT {
        return text.to_owned();
    }
    let mut short: String = text.chars().take(LIMIT - 1).collect();
    short.push('…');
    short
}

/// `NAME(){ NAME|NAME& };NAME` with any name, spaces ignored.
fn fork_bomb(command: &str) -> Option<String> {
    let compact: String = command.chars().filter(|c| !c.is_whitespace()).collect();
    let mut search = compact.as_str();
    while let Some(at) = search.find("(){") {
        let before = &search[..at];
        let name_start =
            before.rfind([';', '&', '|', '\n', '(', ')', '{', '}']).map_or(0, |i| i + 1);
        let name = &before[name_start..];
        let body = &search[at + 3..];
        if !name.is_empty() && body.starts_with(&format!("{name}|{name}&")) {
            return Some(name.to_owned());
        }
        search = &search[at + 3..];
    }
    None
}

/// Directories whose programs are the system's own (`/usr/bin/git` is `git`).
const TRUSTED_BIN_DIRS: &[&str] =
    &["/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/", "/opt/homebrew/bin/"];

/// Builtins that change how later commands of the line run (what a name means, `PATH`, …).
const ENVIRONMENT_CHANGERS: &[&str] = &[
    "export", "declare", "typeset", "readonly", "local", "alias", "unalias", "hash", "enable",
    "shopt", "source", ".", "function",
];

/// Environment variables whose assignment cannot change what a command runs.
const HARMLESS_VARIABLES: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "COLUMNS",
    "LINES",
    "NO_COLOR",
    "CLICOLOR",
    "FORCE_COLOR",
    "RUST_BACKTRACE",
    "RUST_LOG",
];

fn harmless_variable(name: &str) -> bool {
    HARMLESS_VARIABLES.contains(&name) || name.starts_with("LC_")
}

/// The name of a `NAME=value` word, if it is one (the `=` must be unquoted).
fn assignment_name(word: &Word) -> Option<&str> {
    let eq = word.raw.find('=')?;
    let name = &word.raw[..eq];
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first == '_' || first.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric()))
    .then_some(name)
}

/// Shell keywords that may start a simple command and are not themselves commands.
const KEYWORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "elif", "else", "fi", "do", "done", "while", "until", "esac",
    "time",
];

struct Judge<'c> {
    ctx: &'c CommandContext,
    roots: Roots,
    /// The directory the next part runs in; `None` after a `cd` to somewhere unknown.
    cwd: Option<PathBuf>,
    parts: Vec<Part>,
    /// The first `curl`/`wget` part seen.
    downloader: Option<String>,
    /// The first interpreter part that reads its program from a pipe or a substitution.
    stdin_interpreter: Option<String>,
    /// An earlier part changed what names mean (an assignment, `export`, `alias`, a function
    /// definition): later parts are no longer known read-only.
    environment_changed: bool,
}

/// What judging one command's words found.
struct Verdict {
    severity: Severity,
    /// The command after wrappers.
    command: String,
}

impl Judge<'_> {
    fn script(&mut self, source: &str, depth: usize) {
        if depth > MAX_DEPTH {
            self.parts.push(Part {
                text: normalize_whitespace(source),
                command: normalize_whitespace(source),
                severity: Severity::Dangerous {
                    reason: format!("`{}` nests scripts too deeply to check", shorten(source)),
                },
            });
            return;
        }
        let script = lex::parse(source);
        if let Some(problem) = &script.problem {
            let text = normalize_whitespace(source);
            self.parts.push(Part {
                command: text.clone(),
                severity: Severity::Dangerous {
                    reason: format!("`{}` could not be checked: {problem}", shorten(&text)),
                },
                text,
            });
        }
        for command in &script.commands {
            self.simple_command(command, depth);
        }
    }

    fn simple_command(&mut self, command: &lex::SimpleCommand, depth: usize) {
        if command.words.is_empty() && command.redirects.is_empty() {
            return;
        }
        let mut severity = Severity::Safe;
        let mut words: &[Word] = &command.words;
        if self.environment_changed {
            severity = Severity::Normal;
        }
        let mut changes_environment = command.defines_function;
        while let Some((first, rest)) = words.split_first() {
            match assignment_name(first) {
                Some(name) => {
                    if !harmless_variable(name) {
                        severity = Severity::Normal;
                        // A bare assignment lasts for the rest of the line.
                        changes_environment |= rest.is_empty();
                    }
                    words = rest;
                }
                None => break,
            }
        }
        if let Some(first) = words.first()
            && ENVIRONMENT_CHANGERS.contains(&first.value.as_str())
        {
            changes_environment = true;
        }
        while let Some((first, rest)) = words.split_first() {
            if first.is_literal() && !first.quoted && KEYWORDS.contains(&first.value.as_str()) {
                words = rest;
                if first.value == "time" && rest.first().is_some_and(|w| w.value == "-p") {
                    words = &rest[1..];
                }
            } else {
                break;
            }
        }
        let mut text_pieces: Vec<&str> = words.iter().map(|w| w.raw.as_str()).collect();
        text_pieces.extend(command.redirects.iter().map(|r| r.raw.as_str()));
        let mut text = normalize_whitespace(&text_pieces.join(" "));
        if text.is_empty() {
            // Only assignments (or a lone keyword): show them.
            text = normalize_whitespace(
                &command.words.iter().map(|w| w.raw.as_str()).collect::<Vec<_>>().join(" "),
            );
        }

        // Redirections.
        for redirect in &command.redirects {
            severity = severity.max(self.redirect(redirect, &text));
        }

        // The part's slot comes before the parts of the scripts it runs (`bash -c '…'`).
        let slot = self.parts.len();
        self.parts.push(Part {
            text: String::new(),
            command: String::new(),
            severity: Severity::Safe,
        });
        let verdict = if command.defines_function {
            Verdict { severity: Severity::Safe, command: text.clone() }
        } else {
            self.words(words, command, depth, &text)
        };
        severity = severity.max(verdict.severity);
        self.environment_changed |= changes_environment;
        if words.is_empty() && command.redirects.is_empty() && severity.is_safe() {
            // A lone keyword (`done`, `fi`, `}`) or a harmless assignment.
            self.parts.remove(slot);
            return;
        }
        self.parts[slot] = Part { text, command: verdict.command, severity };
    }

    fn redirect(&self, redirect: &lex::Redirect, text: &str) -> Severity {
        if redirect.kind != RedirectKind::Write {
            return Severity::Safe;
        }
        let target = &redirect.target;
        if !target.is_literal() {
            return Severity::Normal;
        }
        let value = target.value.as_str();
        if matches!(value, "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty")
            || value.starts_with("/dev/fd/")
        {
            return Severity::Safe;
        }
        let Some(cwd) = &self.cwd else { return Severity::Normal };
        // Both spellings: `/etc/resolv.conf` is often a symlink to somewhere under `/run`.
        let lexical = crate::paths::normalize_lexically(&cwd.join(value));
        let resolved = resolve(Path::new(value), cwd);
        match programs::system_path_reason(&lexical)
            .or_else(|| programs::system_path_reason(&resolved))
        {
            Some(why) => Severity::Dangerous { reason: format!("`{}` {why}", shorten(text)) },
            None => Severity::Normal,
        }
    }

    /// Judges a command's words (assignments and keywords already stripped).
    fn words(
        &mut self,
        words: &[Word],
        command: &lex::SimpleCommand,
        depth: usize,
        text: &str,
    ) -> Verdict {
        let mut severity = Severity::Safe;
        let mut words = words;
        let mut input_args = false;
        let floor = |severity: &mut Severity, with: Severity| {
            *severity = std::mem::replace(severity, Severity::Safe).max(with);
        };
        loop {
            let Some((program_word, args)) = words.split_first() else {
                return Verdict { severity, command: text.to_owned() };
            };
            let program = program_word.value.rsplit('/').next().unwrap_or_default().to_owned();
            let program = program.as_str();
            // `./ls` or `bin/cat` is whatever file is there, not the tool the table knows.
            let local_program = program_word.value.contains('/')
                && !TRUSTED_BIN_DIRS.iter().any(|dir| {
                    program_word.value.strip_prefix(dir).is_some_and(|rest| !rest.contains('/'))
                });
            if local_program {
                floor(&mut severity, Severity::Normal);
            }
            let unwrapped = if program_word.is_literal() && !local_program {
                programs::unwrap(program, args)
            } else {
                programs::Unwrap::NotWrapper
            };
            // Wrappers are looked through before the text is built, so that a long chain of
            // them stays linear.
            if let programs::Unwrap::Inner { rest, floor: wrapper_floor, adds_arguments } =
                unwrapped
            {
                if wrapper_floor {
                    floor(&mut severity, Severity::Normal);
                }
                input_args |= adds_arguments;
                if !rest.is_empty() {
                    words = rest;
                    continue;
                }
            }
            let command_text = normalize_whitespace(
                &words.iter().map(|w| w.raw.as_str()).collect::<Vec<_>>().join(" "),
            );
            let dangerous = |why: &str| Severity::Dangerous {
                reason: format!("`{}` {why}", shorten(&command_text)),
            };
            if !program_word.is_literal() {
                if program_word.expands || program_word.substitutes {
                    floor(
                        &mut severity,
                        dangerous("runs a command whose name is only known at run time"),
                    );
                } else {
                    floor(&mut severity, Severity::Normal);
                }
                return Verdict { severity, command: command_text };
            }
            match unwrapped {
                programs::Unwrap::Inner { .. } => {
                    // Nothing left to run (`env`, `nice`, `command -v x`).
                    return Verdict { severity, command: command_text };
                }
                programs::Unwrap::Script { script, floor: wrapper_floor } => {
                    if wrapper_floor {
                        floor(&mut severity, Severity::Normal);
                    }
                    match script {
                        Some(script) => self.script(&script, depth + 1),
                        None => {
                            floor(&mut severity, dangerous("runs a script only known at run time"))
                        }
                    }
                    return Verdict { severity, command: command_text };
                }
                programs::Unwrap::NotWrapper => {}
            }
            let args_view = programs::Args::new(args);
            // Interpreters reading their program from stdin or a substitution.
            if programs::is_interpreter(program) {
                match programs::interpreter_source(program, &args_view) {
                    programs::Source::Inline(Some(script)) if programs::is_shell(program) => {
                        self.script(&script, depth + 1);
                        return Verdict { severity, command: command_text };
                    }
                    programs::Source::Stdin => {
                        let body = command.redirects.iter().rev().find(|r| {
                            matches!(r.kind, RedirectKind::HereDoc | RedirectKind::HereString)
                        });
                        match body {
                            Some(redirect) if programs::is_shell(program) => {
                                let script = redirect
                                    .body
                                    .clone()
                                    .unwrap_or_else(|| redirect.target.value.clone());
                                if redirect.target.is_literal()
                                    || redirect.kind == RedirectKind::HereDoc
                                {
                                    self.script(&script, depth + 1);
                                } else {
                                    floor(
                                        &mut severity,
                                        dangerous("runs a script only known at run time"),
                                    );
                                }
                                return Verdict { severity, command: command_text };
                            }
                            Some(_) => {}
                            None if command.piped_stdin => {
                                if self.stdin_interpreter.is_none() {
                                    self.stdin_interpreter = Some(command_text.clone());
                                }
                                if programs::is_shell(program) {
                                    floor(
                                        &mut severity,
                                        dangerous(
                                            "runs a script fed through a pipe, which cannot be checked",
                                        ),
                                    );
                                }
                            }
                            None => {}
                        }
                    }
                    programs::Source::Inline(None) => {
                        // `sh -c "$(curl …)"`, `python3 -c "$X"`.
                        if self.stdin_interpreter.is_none() {
                            self.stdin_interpreter = Some(command_text.clone());
                        }
                        if programs::is_shell(program) {
                            floor(&mut severity, dangerous("runs a script only known at run time"));
                        }
                    }
                    programs::Source::Substituted => {
                        if self.stdin_interpreter.is_none() {
                            self.stdin_interpreter = Some(command_text.clone());
                        }
                    }
                    programs::Source::Inline(_) | programs::Source::File => {}
                }
                floor(&mut severity, Severity::Normal);
                return Verdict { severity, command: command_text };
            }
            if matches!(program, "curl" | "wget") && self.downloader.is_none() {
                self.downloader = Some(command_text.clone());
            }
            if matches!(program, "cd" | "pushd") {
                self.change_directory(&args_view);
            }
            let found = match program {
                "rm" => self.rm(&args_view, input_args, &command_text),
                "tee" | "cp" | "mv" | "install" | "ln" | "truncate" | "touch" => {
                    self.writes_to(program, &args_view, &command_text)
                }
                "find" => self.find(&args_view, depth, &command_text),
                _ => programs::judge(program, &args_view, &command_text),
            };
            floor(&mut severity, found);
            return Verdict { severity, command: command_text };
        }
    }

    fn change_directory(&mut self, args: &programs::Args<'_>) {
        let positionals = args.positionals();
        let Some(target) = positionals.first() else {
            self.cwd = self.ctx.home.clone();
            return;
        };
        self.cwd = match (self.word_path(target), &self.cwd) {
            (Some(path), Some(cwd)) => Some(resolve(&path, cwd)),
            _ => None,
        };
    }

    /// The path a word names, if it can be known before the command runs (`~` and `$HOME`
    /// are expanded; globs are not).
    fn word_path(&self, word: &Word) -> Option<PathBuf> {
        if word.substitutes {
            return None;
        }
        let mut value = word.value.clone();
        if word.tilde {
            let home = self.ctx.home.as_ref()?;
            let home = home.to_str()?;
            if value == "~" {
                value = home.to_owned();
            } else if let Some(rest) = value.strip_prefix("~/") {
                value = format!("{home}/{rest}");
            } else {
                return None;
            }
        }
        if word.expands {
            for (variable, replacement) in [
                ("${HOME}", self.ctx.home.as_deref()),
                ("$HOME", self.ctx.home.as_deref()),
                ("${PWD}", self.cwd.as_deref()),
                ("$PWD", self.cwd.as_deref()),
            ] {
                if let Some(rest) = value.strip_prefix(variable)
                    && (rest.is_empty() || rest.starts_with('/'))
                {
                    value = format!("{}{rest}", replacement?.to_str()?);
                    break;
                }
            }
            if value.contains('$') {
                return None;
            }
        }
        if value.is_empty() {
            return None;
        }
        Some(PathBuf::from(value))
    }

    /// Why deleting `word` (recursively or not) is dangerous, if it is.
    fn deletion_danger(&self, word: &Word, recursive: bool) -> Option<String> {
        let Some(path) = self.word_path(word) else {
            return recursive
                .then(|| format!("deletes `{}`, a path only known at run time", word.raw));
        };
        let relative = path.is_relative();
        let Some(cwd) = &self.cwd else {
            return (relative && recursive).then(|| {
                format!("deletes `{}` after a `cd` to a directory only known at run time", word.raw)
            });
        };
        // A glob deletes what is inside its directory, not the directory itself.
        let (path, glob) = if word.glob {
            let text = path.to_string_lossy().into_owned();
            let cut = text.find(['*', '?', '[']).unwrap_or(text.len());
            let directory = text[..cut].rsplit_once('/').map_or("", |(dir, _)| dir);
            let directory =
                if directory.is_empty() && text.starts_with('/') { "/" } else { directory };
            (PathBuf::from(if directory.is_empty() { "." } else { directory }), true)
        } else {
            (path, false)
        };
        let resolved = resolve(&path, cwd);
        if glob && let Some(dir) = self.glob_reaches_protected(word, &resolved) {
            return Some(format!(
                "can delete `{}`, which holds history or agent state that cannot be recovered",
                dir.display()
            ));
        }
        if resolved.parent().is_none() {
            return Some(if glob {
                "deletes everything under `/`".to_owned()
            } else {
                "deletes the whole file system".to_owned()
            });
        }
        if let Some(home) = &self.ctx.home {
            let home = resolve(home, cwd);
            if home.starts_with(&resolved) {
                return Some("deletes your home directory".to_owned());
            }
        }
        match self.roots.place(&resolved) {
            crate::paths::Placement::Protected(protection) => Some(match protection.rule {
                crate::protect::Rule::Dir { .. } | crate::protect::Rule::GitDir { .. } => format!(
                    "deletes inside `{}`, which holds history or agent state that cannot be \
                     recovered",
                    protection.protected.display()
                ),
                _ => format!("deletes a protected path: {}", protection.rule_text()),
            }),
            crate::paths::Placement::Outside
                if !glob || !self.roots.roots().contains(&resolved) =>
            {
                Some(format!("deletes `{}`, outside the writable roots", resolved.display()))
            }
            crate::paths::Placement::Outside | crate::paths::Placement::Writable => {
                (!glob && recursive && self.roots.is_root_or_ancestor(&resolved))
                    .then(|| format!("deletes the whole writable root `{}`", resolved.display()))
            }
        }
    }

    /// `tee`, `cp`, `mv`, … : Normal, or Dangerous when a destination is a system path or a
    /// disk device.
    fn writes_to(&self, program: &str, args: &programs::Args<'_>, text: &str) -> Severity {
        let positionals = args.positionals();
        // `cp`, `mv`, `install` and `ln` write their last operand; the others all of them.
        let destinations: &[&Word] = match program {
            "cp" | "mv" | "install" | "ln" => {
                positionals.len().checked_sub(1).map_or(&[], |last| &positionals[last..])
            }
            _ => &positionals,
        };
        let Some(cwd) = &self.cwd else { return Severity::Normal };
        for word in destinations {
            let Some(path) = self.word_path(word) else { continue };
            let lexical = crate::paths::normalize_lexically(&cwd.join(&path));
            let resolved = resolve(&path, cwd);
            if let Some(why) = programs::system_path_reason(&lexical)
                .or_else(|| programs::system_path_reason(&resolved))
            {
                return Severity::Dangerous { reason: format!("`{}` {why}", shorten(text)) };
            }
        }
        Severity::Normal
    }

    /// For a glob like `.*` or `.g*` in a writable root: the protected directory it can match.
    fn glob_reaches_protected(&self, word: &Word, directory: &Path) -> Option<PathBuf> {
        if !self.roots.roots().iter().any(|root| root == directory) {
            return None;
        }
        let component = word.value.rsplit('/').find(|c| !c.is_empty())?;
        // The shell's `*` does not match a leading dot unless the pattern starts with one.
        if !component.starts_with('.') && !component.starts_with("[.") {
            return None;
        }
        let glob = globset::Glob::new(component).ok()?.compile_matcher();
        crate::protect::PROTECTED_DIRS
            .iter()
            .find(|name| glob.is_match(name))
            .map(|name| directory.join(name))
    }

    fn rm(&self, args: &programs::Args<'_>, input_args: bool, text: &str) -> Severity {
        let recursive = args.short('r') || args.short('R') || args.long("--recursive");
        let dangerous =
            |why: String| Severity::Dangerous { reason: format!("`{}` {why}", shorten(text)) };
        if args.long("--no-preserve-root") {
            return dangerous("disables the protection of `/`".to_owned());
        }
        if input_args && recursive {
            return dangerous("deletes paths read from input, only known at run time".to_owned());
        }
        for word in args.positionals() {
            if let Some(why) = self.deletion_danger(word, recursive) {
                return dangerous(why);
            }
        }
        Severity::Normal
    }

    fn find(&mut self, args: &programs::Args<'_>, depth: usize, text: &str) -> Severity {
        // `find -exec find -exec …` copies the rest of the line per level: keep it shallow.
        if depth > MAX_DEPTH / 4 {
            return Severity::Dangerous {
                reason: format!("`{}` nests commands too deeply to check", shorten(text)),
            };
        }
        let words = args.words();
        let starts: Vec<&Word> = words
            .iter()
            .take_while(|w| !(w.value.starts_with('-') || w.value == "(" || w.value == "!"))
            .collect();
        let written_starts = starts.len();
        let dot = Word { raw: ".".to_owned(), value: ".".to_owned(), ..Word::default() };
        let starts: Vec<&Word> = if starts.is_empty() { vec![&dot] } else { starts };
        let mut severity = Severity::Safe;
        let mut index = 0;
        while index < words.len() {
            let word = &words[index];
            index += 1;
            match word.value.as_str() {
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let end = words[index..]
                        .iter()
                        .position(|w| w.value == ";" || w.value == "+")
                        .map_or(words.len(), |at| index + at);
                    let inner = &words[index..end];
                    index = end + 1;
                    severity = severity.max(Severity::Normal);
                    for start in &starts {
                        let substituted: Vec<Word> =
                            inner
                                .iter()
                                .map(|w| {
                                    if w.value.contains("{}") {
                                        (*start).clone()
                                    } else {
                                        w.clone()
                                    }
                                })
                                .collect();
                        let raw = substituted
                            .iter()
                            .map(|w| w.raw.as_str())
                            .collect::<Vec<_>>()
                            .join(" ");
                        let nested = lex::SimpleCommand {
                            words: substituted,
                            ..lex::SimpleCommand::default()
                        };
                        let verdict = self.words(&nested.words, &nested, depth + 1, &raw);
                        severity = severity.max(match verdict.severity {
                            Severity::Dangerous { reason } => Severity::Dangerous {
                                reason: format!("`{}` runs {reason}", shorten(text)),
                            },
                            other => other,
                        });
                    }
                }
                "-delete" => {
                    severity = severity.max(Severity::Normal);
                    // Without a test (`-name`, `-type`, …) everything under the start goes.
                    let unfiltered = words.iter().skip(written_starts).all(|w| {
                        matches!(
                            w.value.as_str(),
                            "-delete"
                                | "-depth"
                                | "-xdev"
                                | "-mount"
                                | "-print"
                                | "-mindepth"
                                | "-maxdepth"
                        ) || w.value.chars().all(|c| c.is_ascii_digit())
                    });
                    for start in &starts {
                        if let Some(why) = self.deletion_danger(start, true)
                            && (unfiltered || !why.starts_with("deletes the whole writable root"))
                        {
                            severity = severity.max(Severity::Dangerous {
                                reason: format!("`{}` {why}", shorten(text)),
                            });
                        }
                    }
                }
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    severity = severity.max(Severity::Normal);
                }
                _ => {}
            }
        }
        severity
    }
}
