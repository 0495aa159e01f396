//! Permission rules: `allow`, `ask` and `deny` lists of `Tool` or `Tool(pattern)` strings,
//! from the user's and the project's config.
//!
//! A rule names a subject with Claude Code's name of a tool, or with ours (`codecoder_protocol`'s
//! one table of Claude tool names translates ours: `run_command` is `Bash`):
//!
//! | subject | names | calls (their view's kind) | pattern |
//! |---|---|---|---|
//! | shell | `Bash` (`run_command`) | execute | `git status*` (`*` is any text, spaces included), `cargo test:*` (the command is `cargo test` or starts with `cargo test `) |
//! | edit | `edit`, `apply_patch`, `Edit`, `Write`, `MultiEdit` (`write_file`) | edit | a path glob |
//! | read | `read`, `Read`, `Grep`, `Glob`, `LS` (`read_file`, `grep`, `glob`, `list_dir`) | read, search | a path glob |
//! | fetch | `WebFetch` (`web_fetch`) | fetch | `domain:docs.rs` (that host), `domain:*.rs-lang.org` (its subdomains, not itself) |
//! | any other tool | its exact name (`mcp__server__tool`; `mcp__server` and `mcp__server__*` cover a server's tools) | that tool's | none |
//!
//! A pattern is matched against the permission keys of a call (`shell:`, `edit:`, `read:`,
//! `web_fetch:`), whatever tool made them. A bare name matches every key of its subject, and a
//! call that names no subject (a bare key) when the call is of the subject's kind, as its
//! `CallView` says; a bare rule that names one of our tools (`run_command`, `write_file`) covers
//! such a call of that tool only. So a new tool is covered by the rules of its kind with no
//! change here. Shell patterns are matched against every
//! part of a compound command (its text with leading assignments stripped and whitespace
//! collapsed, and the same with wrappers such as `timeout 5` looked through); a pattern ending
//! in ` *` also matches the command without arguments (`git status *` matches `git status`).
//!
//! Path patterns are gitignore-style globs (globset; `*` stays inside one path component, `**`
//! crosses them), and a pattern that matches a directory matches everything under it:
//! - `~/x` is under the home directory;
//! - `//x` is absolute;
//! - `/x` is relative to the project root in project rules, and absolute in user rules (Claude
//!   Code reads `/x` relative to the settings file; our rules live in `config.toml`, so the
//!   project root stands in for the file's directory, and a user's `/x` means what it says);
//! - a bare `x/**` is relative to the project root in project rules and to the cwd in user
//!   rules; a bare pattern without a `/` (`*.env`) matches at any depth, as in gitignore.
//!
//! Invariants: paths from calls are resolved (against the cwd, lexically normalized, then
//! canonicalized through their longest existing ancestor) before matching, and so are pattern
//! bases, so `../` and symlinks cannot dodge a rule. Within one rule set deny beats ask beats
//! allow. A call is allowed by a set only when every one of its subjects is (for a shell
//! command: every part is matched by an allow rule or is Safe, and at least one rule matched).

use std::fmt;
use std::path::{Path, PathBuf};

use codecoder_protocol::{CallKind, Verdict, claude_tool_name, our_tool_name};
use globset::{GlobBuilder, GlobMatcher};

use crate::command::{Classification, CommandContext, Part, classify, normalize_whitespace};
use crate::error::{Error, RuleError, RuleProblem};
use crate::paths::{expand_home, resolve};

/// Where a rule set came from; decides what `/x` and bare relative patterns mean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleOrigin {
    /// The user's config: `/x` is absolute, bare patterns are relative to the cwd.
    User,
    /// The project's config: `/x` and bare patterns are relative to `root`.
    Project {
        /// The project root.
        root: PathBuf,
    },
}

impl fmt::Display for RuleOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::User => f.write_str("user"),
            Self::Project { .. } => f.write_str("project"),
        }
    }
}

/// One parsed rule.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    matcher: Matcher,
    /// The tool a subject rule names explicitly, when it names one of ours (`run_command`):
    /// the rule then covers bare-key calls of that tool only, not of every tool of its kind.
    named: Option<String>,
}

impl Rule {
    /// The rule as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// True for an `edit(PATTERN)` rule: one that names the paths it covers (only such a user
    /// rule lifts the protection of `.git` and the like; a bare `edit` or a tool name does not).
    pub(crate) fn names_edit_paths(&self) -> bool {
        matches!(self.matcher, Matcher::Edit(Some(_)))
    }
}

#[derive(Debug, Clone)]
enum Matcher {
    Shell(Option<ShellPattern>),
    Edit(Option<PathPattern>),
    Read(Option<PathPattern>),
    Fetch(Option<DomainPattern>),
    /// An exact tool name, or (`mcp__server`, `mcp__server__*`) a name prefix.
    Tool {
        name: String,
        prefix: bool,
    },
}

#[derive(Debug, Clone)]
enum ShellPattern {
    /// `prefix:*`, or a pattern ending in ` *`: the prefix alone, or the prefix and a space.
    Prefix(String),
    /// Text with `*` wildcards; `pieces` are the literal runs between them.
    Wildcard { pieces: Vec<String>, bare: Option<String> },
}

#[derive(Debug, Clone)]
enum Base {
    Root,
    Home,
    Cwd,
    Dir(PathBuf),
}

#[derive(Debug, Clone)]
struct PathPattern {
    base: Base,
    /// `None` matches everything under the base.
    glob: Option<GlobMatcher>,
    /// The one path the pattern covers when it names a single file or tree (`~/secrets`,
    /// `~/secrets/**`), relative to the base; `None` for patterns with wildcards.
    literal: Option<PathBuf>,
}

#[derive(Debug, Clone)]
enum DomainPattern {
    Exact(String),
    Subdomains(String),
}

/// The subjects a rule can name, each the calls of some kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Group {
    Shell,
    Edit,
    Read,
    Fetch,
}

impl Group {
    /// The subject of a call of `kind`; `None` for kinds no subject rule covers.
    fn of(kind: &CallKind) -> Option<Self> {
        match kind {
            CallKind::Execute => Some(Self::Shell),
            CallKind::Edit => Some(Self::Edit),
            CallKind::Read | CallKind::Search => Some(Self::Read),
            CallKind::Fetch => Some(Self::Fetch),
            CallKind::Plan
            | CallKind::Ask
            | CallKind::Agent
            | CallKind::Mcp { .. }
            | CallKind::Other => None,
        }
    }
}

/// Claude Code's tool names, as the subjects they stand for in a rule.
const CLAUDE_SUBJECTS: &[(&str, Group)] = &[
    ("Bash", Group::Shell),
    ("Edit", Group::Edit),
    ("Write", Group::Edit),
    ("MultiEdit", Group::Edit),
    ("Read", Group::Read),
    ("Grep", Group::Read),
    ("Glob", Group::Read),
    ("LS", Group::Read),
    ("WebFetch", Group::Fetch),
];

/// The rule syntax's own words for a subject: any read, any edit, and codex's name for a
/// patch (whose rules are about the files it edits).
const SUBJECT_WORDS: &[(&str, Group)] =
    &[("read", Group::Read), ("edit", Group::Edit), ("apply_patch", Group::Edit)];

/// The subject a rule's tool name stands for, with the tool it names explicitly when that is
/// one of ours (translated to Claude's name through protocol's table: `run_command` → `Bash`).
fn subject_of(name: &str) -> Option<(Group, Option<&str>)> {
    let found = |name: &str| {
        SUBJECT_WORDS.iter().chain(CLAUDE_SUBJECTS).find(|(word, _)| *word == name).map(|(_, g)| *g)
    };
    if let Some(group) = found(name) {
        return Some((group, None));
    }
    let claude = claude_tool_name(name);
    if claude == name {
        return None;
    }
    found(claude).map(|group| (group, Some(name)))
}

fn parse_rule(text: &str, origin: &RuleOrigin) -> Result<(Matcher, Option<String>), RuleProblem> {
    let text = text.trim();
    if text.is_empty() {
        return Err(RuleProblem::Empty);
    }
    let (name, pattern) = match text.find('(') {
        Some(open) => {
            let Some(inner) = text[open + 1..].strip_suffix(')') else {
                return Err(RuleProblem::Parentheses);
            };
            (text[..open].trim(), Some(inner.trim()))
        }
        None if text.contains(')') => return Err(RuleProblem::Parentheses),
        None => (text, None),
    };
    let (plain, star) = match name.strip_suffix("__*") {
        Some(server) => (server, true),
        None => (name, false),
    };
    if plain.is_empty() || !plain.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(RuleProblem::ToolName { name: name.to_owned() });
    }
    if pattern == Some("") {
        return Err(RuleProblem::EmptyPattern);
    }
    if let Some((group, named)) = subject_of(name) {
        let matcher = match group {
            Group::Shell => Matcher::Shell(pattern.map(shell_pattern)),
            Group::Edit => Matcher::Edit(pattern.map(|p| path_pattern(p, origin)).transpose()?),
            Group::Read => Matcher::Read(pattern.map(|p| path_pattern(p, origin)).transpose()?),
            Group::Fetch => Matcher::Fetch(pattern.map(domain_pattern).transpose()?),
        };
        return Ok((matcher, named.map(str::to_owned)));
    }
    if pattern.is_some() {
        return Err(RuleProblem::PatternNotSupported { tool: name.to_owned() });
    }
    // `mcp__server` (exactly one `__` after `mcp`) names a whole server.
    let server = plain.strip_prefix("mcp__").is_some_and(|rest| !rest.contains("__"));
    if star && !server {
        return Err(RuleProblem::ToolName { name: name.to_owned() });
    }
    Ok((Matcher::Tool { name: plain.to_owned(), prefix: server }, None))
}

fn shell_pattern(pattern: &str) -> ShellPattern {
    let pattern = normalize_whitespace(pattern);
    if let Some(prefix) = pattern.strip_suffix(":*") {
        return ShellPattern::Prefix(prefix.trim_end().to_owned());
    }
    if let Some(prefix) = pattern.strip_suffix(" *")
        && !prefix.contains('*')
    {
        return ShellPattern::Prefix(prefix.to_owned());
    }
    ShellPattern::Wildcard {
        pieces: pattern.split('*').map(str::to_owned).collect(),
        bare: pattern.strip_suffix(" *").map(str::to_owned),
    }
}

fn path_pattern(pattern: &str, origin: &RuleOrigin) -> Result<PathPattern, RuleProblem> {
    let project_root = match origin {
        RuleOrigin::Project { root } => Some(root.clone()),
        RuleOrigin::User => None,
    };
    let (base, rest, anchored) = if pattern == "~" {
        (Base::Home, "", true)
    } else if let Some(rest) = pattern.strip_prefix("~/") {
        (Base::Home, rest, true)
    } else if pattern.starts_with('~') {
        return Err(RuleProblem::OtherUsersHome);
    } else if let Some(rest) = pattern.strip_prefix("//") {
        (Base::Root, rest, true)
    } else if let Some(rest) = pattern.strip_prefix('/') {
        (project_root.clone().map_or(Base::Root, Base::Dir), rest, true)
    } else {
        let rest = pattern.strip_prefix("./").unwrap_or(pattern);
        let anchored = rest.trim_end_matches('/').contains('/');
        (project_root.map_or(Base::Cwd, Base::Dir), rest, anchored)
    };
    let rest = rest.trim_end_matches('/');
    if rest.is_empty() || rest == "**" {
        return Ok(PathPattern { base, glob: None, literal: Some(PathBuf::new()) });
    }
    let tree = rest.strip_suffix("/**").unwrap_or(rest);
    let literal = (anchored && !tree.contains(['*', '?', '[', ']', '{', '}', '\\']))
        .then(|| PathBuf::from(tree));
    let glob_text = if anchored { rest.to_owned() } else { format!("**/{rest}") };
    let glob = GlobBuilder::new(&glob_text)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|err| RuleProblem::Glob {
            pattern: pattern.to_owned(),
            message: err.kind().to_string(),
        })?;
    Ok(PathPattern { base, glob: Some(glob.compile_matcher()), literal })
}

fn domain_pattern(pattern: &str) -> Result<DomainPattern, RuleProblem> {
    let bad = || RuleProblem::Domain { pattern: pattern.to_owned() };
    let host = pattern.strip_prefix("domain:").ok_or_else(bad)?.trim().to_ascii_lowercase();
    let (host, subdomains) = match host.strip_prefix("*.") {
        Some(rest) => (rest.to_owned(), true),
        None => (host, false),
    };
    let valid = !host.is_empty()
        && !host.starts_with('.')
        && !host.ends_with('.')
        && host.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
    if !valid {
        return Err(bad());
    }
    Ok(if subdomains { DomainPattern::Subdomains(host) } else { DomainPattern::Exact(host) })
}

/// The rules of one config layer.
#[derive(Debug, Clone)]
pub struct RuleSet {
    origin: RuleOrigin,
    allow: Vec<Rule>,
    ask: Vec<Rule>,
    deny: Vec<Rule>,
}

impl RuleSet {
    /// Parses the three lists. The error names the first bad rule and what is wrong with it.
    pub fn parse(
        allow: &[String],
        ask: &[String],
        deny: &[String],
        origin: RuleOrigin,
    ) -> Result<Self, RuleError> {
        let parse_list = |texts: &[String], list: Verdict| -> Result<Vec<Rule>, Error> {
            texts
                .iter()
                .map(|text| {
                    parse_rule(text, &origin)
                        .map(|(matcher, named)| Rule {
                            text: text.trim().to_owned(),
                            matcher,
                            named,
                        })
                        .map_err(|problem| Error::Rule {
                            rule: text.clone(),
                            list,
                            origin: origin.clone(),
                            problem,
                        })
                })
                .collect()
        };
        Ok(Self {
            allow: parse_list(allow, Verdict::Allow)?,
            ask: parse_list(ask, Verdict::Ask)?,
            deny: parse_list(deny, Verdict::Deny)?,
            origin,
        })
    }

    /// This set with more `allow` rules after its own.
    ///
    /// # Errors
    /// The first of `allow` that is not a rule.
    pub fn with_allowed(&self, allow: &[String]) -> Result<Self, RuleError> {
        let texts = |rules: &[Rule]| rules.iter().map(|rule| rule.text.clone()).collect::<Vec<_>>();
        let mut allowed = texts(&self.allow);
        allowed.extend(allow.iter().cloned());
        Self::parse(&allowed, &texts(&self.ask), &texts(&self.deny), self.origin.clone())
    }

    /// A set with no rules.
    pub fn empty(origin: RuleOrigin) -> Self {
        Self { origin, allow: Vec::new(), ask: Vec::new(), deny: Vec::new() }
    }

    /// Where the rules came from.
    pub fn origin(&self) -> &RuleOrigin {
        &self.origin
    }

    /// The rules of one list, in order.
    pub fn rules(&self, list: Verdict) -> &[Rule] {
        match list {
            Verdict::Allow => &self.allow,
            Verdict::Ask => &self.ask,
            Verdict::Deny => &self.deny,
        }
    }

    /// This set's opinion of a call: the deny rule that matches it, else the ask rule, else
    /// the allow rule that (with Safe parts) covers it; `None` when it has none.
    pub fn evaluate(&self, call: &Call, ctx: &CommandContext) -> Option<(Verdict, &Rule)> {
        if let Some(rule) = self.matching(Verdict::Deny, call, ctx) {
            return Some((Verdict::Deny, rule));
        }
        if let Some(rule) = self.matching(Verdict::Ask, call, ctx) {
            return Some((Verdict::Ask, rule));
        }
        self.allowing(call, ctx).map(|rule| (Verdict::Allow, rule))
    }

    /// The paths the `read` deny rules name as a single file or tree (`read(~/secrets/**)` →
    /// `~/secrets`), resolved: what a sandbox should hide from commands too. Patterns with
    /// wildcards inside (`read(**/*.pem)`) cannot be turned into paths and are left out.
    pub fn denied_read_paths(&self, ctx: &CommandContext) -> Vec<PathBuf> {
        self.deny
            .iter()
            .filter_map(|rule| match &rule.matcher {
                Matcher::Read(Some(pattern)) => {
                    let literal = pattern.literal.as_ref()?;
                    Some(base_path(&pattern.base, ctx)?.join(literal))
                }
                _ => None,
            })
            .collect()
    }

    /// The first rule of `list` that matches any subject of the call (any part of a shell
    /// command). For `Allow` this is "matches something", not "allows the call": use
    /// `evaluate` for that.
    pub fn matching(&self, list: Verdict, call: &Call, ctx: &CommandContext) -> Option<&Rule> {
        self.rules(list).iter().find(|rule| {
            call.subjects.iter().any(|subject| match subject {
                Subject::Shell { classification, .. }
                    if matches!(rule.matcher, Matcher::Shell(Some(_))) =>
                {
                    classification.parts.iter().any(|part| rule_matches_part(rule, part))
                }
                _ => rule_matches_subject(rule, subject, call, ctx),
            })
        })
    }

    /// The first allow rule, when allow rules (and Safe parts) cover every subject.
    pub(crate) fn allowing(&self, call: &Call, ctx: &CommandContext) -> Option<&Rule> {
        let mut first: Option<&Rule> = None;
        for subject in &call.subjects {
            match subject {
                Subject::Shell { classification, .. } => {
                    if let Some(rule) = self
                        .allow
                        .iter()
                        .find(|rule| rule_matches_subject(rule, subject, call, ctx))
                    {
                        first.get_or_insert(rule);
                        continue;
                    }
                    for part in &classification.parts {
                        match self.allow.iter().find(|rule| rule_matches_part(rule, part)) {
                            Some(rule) => {
                                first.get_or_insert(rule);
                            }
                            None if part.severity.is_safe() => {}
                            None => return None,
                        }
                    }
                }
                _ => {
                    let rule = self
                        .allow
                        .iter()
                        .find(|rule| rule_matches_subject(rule, subject, call, ctx))?;
                    first.get_or_insert(rule);
                }
            }
        }
        first
    }
}

fn rule_matches_part(rule: &Rule, part: &Part) -> bool {
    let Matcher::Shell(Some(pattern)) = &rule.matcher else { return false };
    [part.text.as_str(), part.command.as_str()].iter().any(|text| shell_matches(pattern, text))
}

fn shell_matches(pattern: &ShellPattern, text: &str) -> bool {
    match pattern {
        ShellPattern::Prefix(prefix) => {
            text == prefix
                || text.strip_prefix(prefix.as_str()).is_some_and(|rest| rest.starts_with(' '))
        }
        ShellPattern::Wildcard { pieces, bare } => {
            bare.as_deref() == Some(text) || wildcard_matches(pieces, text)
        }
    }
}

fn wildcard_matches(pieces: &[String], text: &str) -> bool {
    let [first, middle @ .., last] = pieces else {
        return pieces.first().is_some_and(|only| only == text);
    };
    let Some(mut rest) = text.strip_prefix(first.as_str()) else { return false };
    for piece in middle {
        match rest.find(piece.as_str()) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.ends_with(last.as_str())
}

fn rule_matches_subject(rule: &Rule, subject: &Subject, call: &Call, ctx: &CommandContext) -> bool {
    let tool = our_tool_name(&call.tool);
    // A bare rule covers a call that names no subject when the call is of the rule's subject
    // (or, for a rule naming one of our tools, is a call of that tool).
    let bare = |group: Group| match &rule.named {
        Some(name) => name == tool,
        None => call.group == Some(group),
    };
    match (&rule.matcher, subject) {
        (Matcher::Tool { name, prefix }, _) => {
            tool == name
                || (*prefix
                    && tool.strip_prefix(name.as_str()).is_some_and(|r| r.starts_with("__")))
        }
        (Matcher::Shell(None), Subject::Shell { .. }) => true,
        (Matcher::Shell(None), Subject::Tool(_)) => bare(Group::Shell),
        (Matcher::Edit(None), Subject::Edit(_)) | (Matcher::Read(None), Subject::Read(_)) => true,
        (Matcher::Edit(None), Subject::Tool(_)) => bare(Group::Edit),
        (Matcher::Read(None), Subject::Tool(_)) => bare(Group::Read),
        (Matcher::Fetch(None), Subject::Fetch(_)) => true,
        (Matcher::Fetch(None), Subject::Tool(_)) => bare(Group::Fetch),
        (Matcher::Edit(Some(pattern)), Subject::Edit(path))
        | (Matcher::Read(Some(pattern)), Subject::Read(path)) => path_matches(pattern, path, ctx),
        (Matcher::Fetch(Some(pattern)), Subject::Fetch(host)) => match pattern {
            DomainPattern::Exact(expected) => host == expected,
            DomainPattern::Subdomains(parent) => host
                .strip_suffix(parent.as_str())
                .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
        },
        _ => false,
    }
}

/// The directory a pattern's base stands for, resolved; `None` for `~` without a home.
fn base_path(base: &Base, ctx: &CommandContext) -> Option<PathBuf> {
    Some(match base {
        Base::Root => PathBuf::from("/"),
        Base::Home => resolve(ctx.home.as_ref()?, &ctx.cwd),
        Base::Cwd => resolve(&ctx.cwd, &ctx.cwd),
        Base::Dir(dir) => resolve(dir, &ctx.cwd),
    })
}

fn path_matches(pattern: &PathPattern, path: &Path, ctx: &CommandContext) -> bool {
    let Some(base) = base_path(&pattern.base, ctx) else { return false };
    let Ok(relative) = path.strip_prefix(&base) else { return false };
    let Some(glob) = &pattern.glob else { return true };
    // The path or any directory above it (below the base) matching covers the path.
    let mut candidate = relative;
    loop {
        if !candidate.as_os_str().is_empty() && glob.is_match(candidate) {
            return true;
        }
        match candidate.parent() {
            Some(parent) => candidate = parent,
            None => return false,
        }
    }
}

/// What one permission key of a call is about.
#[derive(Debug, Clone)]
pub enum Subject {
    /// `shell:<command>`, with its classification.
    Shell {
        /// The command line.
        command: String,
        /// How it was judged.
        classification: Classification,
    },
    /// `edit:<path>`, resolved.
    Edit(PathBuf),
    /// `read:<path>`, resolved.
    Read(PathBuf),
    /// `web_fetch:<host>`, lowercased.
    Fetch(String),
    /// A bare key (the tool's name, or anything unrecognized).
    Tool(String),
}

/// A call prepared for rule matching: its tool name, the subject its kind belongs to, and its
/// keys parsed into subjects.
#[derive(Debug, Clone)]
pub struct Call {
    tool: String,
    group: Option<Group>,
    subjects: Vec<Subject>,
}

impl Call {
    /// Parses the permission keys a tool emitted (`shell:<command>`, `edit:<path>`,
    /// `read:<path>`, `web_fetch:<host>`, or a bare name) for a call of `tool` whose view is of
    /// `kind`. Paths are resolved against `ctx.cwd` (`~/` against `ctx.home`); commands are
    /// classified under `ctx`. No keys is the same as one bare key naming the tool.
    pub fn new(tool: &str, kind: &CallKind, keys: &[String], ctx: &CommandContext) -> Self {
        let mut subjects: Vec<Subject> = keys.iter().map(|key| subject(key, ctx)).collect();
        if subjects.is_empty() {
            subjects.push(Subject::Tool(tool.to_owned()));
        }
        Self { tool: tool.to_owned(), group: Group::of(kind), subjects }
    }

    /// The same call with one subject (to ask about a single key).
    pub(crate) fn single(&self, subject: Subject) -> Self {
        Self { tool: self.tool.clone(), group: self.group, subjects: vec![subject] }
    }

    /// The tool's name.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The parsed subjects, one per key.
    pub fn subjects(&self) -> &[Subject] {
        &self.subjects
    }
}

fn subject(key: &str, ctx: &CommandContext) -> Subject {
    let path = |text: &str| {
        let expanded =
            expand_home(text, ctx.home.as_deref()).unwrap_or_else(|| PathBuf::from(text));
        resolve(&expanded, &ctx.cwd)
    };
    if let Some(command) = key.strip_prefix("shell:") {
        return Subject::Shell {
            command: command.to_owned(),
            classification: classify(command, ctx),
        };
    }
    if let Some(text) = key.strip_prefix("edit:") {
        return Subject::Edit(path(text));
    }
    if let Some(text) = key.strip_prefix("read:") {
        return Subject::Read(path(text));
    }
    if let Some(host) = key.strip_prefix("web_fetch:") {
        return Subject::Fetch(host.trim().trim_end_matches('.').to_ascii_lowercase());
    }
    Subject::Tool(key.to_owned())
}
