//! The hooks configuration: where it is read from, its shape, and matchers.
//!
//! Sources, all merged (every group from every source runs), read in this order:
//! 1. config.toml `[hooks]` (handed in by the config loader as a JSON value),
//! 2. `<project>/.codecoder/hooks.json` (`{"hooks": {...}}` like Claude's settings, or a bare
//!    `{Event: [...]}`),
//! 3. `<project>/.claude/settings.local.json`,
//! 4. `<project>/.claude/settings.json`,
//! 5. `~/.claude/settings.json` (3–5 only the `hooks` key, and only when
//!    `read_claude_settings`).
//!
//! Files 2–4 belong to the project and are read only when it is trusted: a cloned repository
//! must not be able to run commands just by being opened. Their hooks are marked as the
//! project's, and a session keeps only those a person approved ([`HookSet::retain_approved`]
//! with the digests of [`crate::trust`]): a hook added or changed later waits for a review.
//!
//! The order matters only where two sources configure the same command for an event: the
//! command runs once, with the timeout (and the source named in messages) of the first one.
//! A missing file is no source; the same file reached twice (the project is the home) is read
//! once.
//!
//! Matchers (tool events match the tool name, others a value; see [`Event`]):
//! - missing, `""` or `"*"`: everything;
//! - only `[A-Za-z0-9_|]`: an exact, case-sensitive name or a `|`-separated list of names;
//! - anything else: a regular expression searched *unanchored*, like JavaScript's
//!   `RegExp.test` that Claude Code uses (`Notebook.*` matches `NotebookEdit`, and so does
//!   `Edit$`). The syntax is the `regex` crate's, which lacks look-around and back-references;
//!   a matcher that does not compile is a warning and matches nothing, as in Claude Code.
//!
//! For tool events the matcher is tried on Claude's tool name when one maps (`Bash`) and on our
//! own (`run_command`).
//!
//! Invariant: a loaded `HookSet` holds handlers of the known types (`command` with a non-empty
//! command, `http`, `prompt`, `agent`, `mcp_tool`; see `handler`) with a positive timeout;
//! everything else was rejected (error) or skipped (warning) at load time.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::Regex;
use serde_json::Value;

use crate::event::{CLAUDE_ONLY_EVENTS, Event};
use crate::{Error, Result};

/// The default timeout of a hook command (Claude Code's original 60 s).
/// What a plugin's hook commands write for the plugin's directory.
const PLUGIN_ROOT_VAR: &str = "${CLAUDE_PLUGIN_ROOT}";

pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Where to look for hooks.
#[derive(Debug, Clone)]
pub struct HookSources {
    /// The project root: `.codecoder/` and `.claude/` are looked up here, and hooks run here.
    pub project_dir: PathBuf,
    /// The user's home directory, for `~/.claude/settings.json`; `None` skips it.
    pub home: Option<PathBuf>,
    /// The `[hooks]` table of config.toml as JSON, and the file it came from.
    pub config_hooks: Option<(Value, PathBuf)>,
    /// Whether to read the `hooks` key of Claude Code's settings files.
    pub read_claude_settings: bool,
    /// Whether the project is trusted (`codecoder trust`). Hooks run arbitrary commands, so
    /// the project's own files (`.codecoder/hooks.json`, `.claude/settings*.json`) are read
    /// only for a trusted project; otherwise each one holding hooks is a warning.
    pub project_trusted: bool,
}

/// Every configured hook, ready to run. Cheap to share behind an `Arc`.
#[derive(Debug, Clone)]
pub struct HookSet {
    project_dir: PathBuf,
    /// Indexed by `Event::slot`.
    groups: [Vec<Group>; Event::COUNT],
}

/// One `{matcher, hooks}` entry.
#[derive(Debug, Clone)]
struct Group {
    matcher: Matcher,
    handlers: Vec<Handler>,
    source: PathBuf,
    /// Read from the project's own files: runs only once approved (see [`crate::trust`]).
    project: bool,
    /// Each handler's digest (see [`HookEntry::digest`]), in `handlers`' order.
    digests: Vec<String>,
}

/// One configured hook as a review lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookEntry {
    /// Its event.
    pub event: Event,
    /// Its matcher as written (`*` for none).
    pub matcher: String,
    /// Its command (or a callback's label).
    pub command: String,
    /// The file it was configured in.
    pub source: PathBuf,
    /// From the project's own files, so it runs only once approved.
    pub project: bool,
    /// A SHA-256 over the event, the matcher and the handler's JSON (keys sorted), in hex:
    /// what an approval names.
    pub digest: String,
}

impl HookEntry {
    /// The first 12 hex digits of the digest, enough to name a hook to a person.
    pub fn short_digest(&self) -> &str {
        self.digest.get(..12).unwrap_or(&self.digest)
    }
}

/// One `{type: "command"}` handler.
/// A hook answered in-process (an Agent SDK's callback) instead of by a command: it gets the
/// event's JSON input and returns the hook's JSON output, or why it failed.
pub trait HookCallback: Send + Sync {
    /// Answers one event; `timeout` is how long the hook may take.
    ///
    /// # Errors
    /// Why the hook gave no answer (it failed, or did not answer in time).
    fn call(&self, input: &Value, timeout: Duration) -> std::result::Result<Value, String>;
}

/// A callback handler: compared by identity.
#[derive(Clone)]
pub(crate) struct Callback(pub(crate) std::sync::Arc<dyn HookCallback>);

impl std::fmt::Debug for Callback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Callback")
    }
}

impl PartialEq for Callback {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Callback {}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Handler {
    /// The command, or for a callback its label.
    pub(crate) command: String,
    /// Set: the hook is this callback, not a command.
    pub(crate) callback: Option<Callback>,
    pub(crate) timeout: Duration,
    /// The `if` condition (permission-rule syntax, tool events only): the handler runs only for
    /// calls it matches.
    pub(crate) condition: Option<String>,
    /// The file it was configured in.
    pub(crate) source: PathBuf,
    /// The plugin it came from: `CLAUDE_PLUGIN_ROOT` in its environment.
    pub(crate) plugin_root: Option<PathBuf>,
    /// What it does: a command (shell or exec form), an HTTP post, a model call, …
    pub(crate) kind: crate::handler::Kind,
    /// Set for `once: true`: the handler runs the first time it matches, then never again in
    /// the session.
    pub(crate) once: Option<crate::handler::Once>,
    /// `async: true`: runs in the background; its answer joins a later event's.
    pub(crate) background: bool,
}

#[derive(Debug, Clone)]
enum Matcher {
    All,
    Names {
        text: String,
        names: Vec<String>,
    },
    Regex(Regex),
    /// A matcher that did not compile: matches nothing.
    Never(String),
}

impl Matcher {
    fn parse(text: Option<&str>) -> std::result::Result<Matcher, (String, regex::Error)> {
        let text = match text {
            None | Some("" | "*") => return Ok(Matcher::All),
            Some(text) => text,
        };
        if text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|') {
            let names = text.split('|').filter(|name| !name.is_empty()).map(str::to_owned);
            return Ok(Matcher::Names { text: text.to_owned(), names: names.collect() });
        }
        Regex::new(text).map(Matcher::Regex).map_err(|err| (text.to_owned(), err))
    }

    fn matches(&self, value: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Names { names, .. } => names.iter().any(|name| name == value),
            Matcher::Regex(regex) => regex.is_match(value),
            Matcher::Never(_) => false,
        }
    }

    fn text(&self) -> &str {
        match self {
            Matcher::All => "*",
            Matcher::Names { text, .. } | Matcher::Never(text) => text,
            Matcher::Regex(regex) => regex.as_str(),
        }
    }
}

impl HookSet {
    /// A set with no hooks, running in `project_dir`.
    pub fn empty(project_dir: PathBuf) -> HookSet {
        HookSet { project_dir, groups: Default::default() }
    }

    /// Reads and merges every source (see the module doc). Returns the set and the warnings to
    /// show the user (unknown events, unsupported handler types, bad matchers, …). Errors are
    /// invalid JSON (naming file, line and column), a malformed entry (naming file and place)
    /// and unreadable files.
    pub fn load(sources: &HookSources) -> Result<(HookSet, Vec<String>)> {
        let mut set = HookSet::empty(sources.project_dir.clone());
        let mut warnings = Vec::new();
        if let Some((table, origin)) = &sources.config_hooks {
            set.add_table(table, origin, "hooks", &mut warnings)?;
        }
        // `(file, is a settings file, belongs to the project)`.
        let mut files =
            vec![(sources.project_dir.join(".codecoder").join("hooks.json"), false, true)];
        if sources.read_claude_settings {
            let claude = sources.project_dir.join(".claude");
            files.push((claude.join("settings.local.json"), true, true));
            files.push((claude.join("settings.json"), true, true));
            if let Some(home) = &sources.home {
                files.push((home.join(".claude").join("settings.json"), true, false));
            }
        }
        let mut seen: Vec<PathBuf> = Vec::new();
        for (path, settings_only, in_project) in files {
            let identity = fs_err::canonicalize(&path).unwrap_or_else(|_| path.clone());
            if seen.contains(&identity) {
                continue;
            }
            if in_project && !sources.project_trusted {
                // Only to say what is ignored: a broken untrusted file is not our business.
                let has_hooks = matches!(read_json(&path), Ok(Some(value))
                    if !settings_only || value.get("hooks").is_some());
                if has_hooks {
                    warnings.push(format!(
                        "ignoring the hooks in {} because {} is not trusted (run `codecoder trust` there to use them)",
                        path.display(),
                        sources.project_dir.display()
                    ));
                }
                continue;
            }
            let Some(value) = read_json(&path)? else { continue };
            seen.push(identity);
            let (table, at) = match value.get("hooks") {
                Some(Value::Null) => continue,
                Some(hooks) => (hooks, "hooks"),
                // A settings file without hooks has nothing for us; hooks.json may be bare.
                None if settings_only => continue,
                None => (&value, ""),
            };
            set.add_table(table, &path, at, &mut warnings)?;
            if in_project {
                set.mark_project(&path);
            }
        }
        Ok((set, warnings))
    }

    /// Marks the groups read from `path` as the project's.
    fn mark_project(&mut self, path: &Path) {
        for group in self.groups.iter_mut().flatten() {
            if group.source == path {
                group.project = true;
            }
        }
    }

    /// Every hook, in event and configuration order, with where it comes from and its digest.
    pub fn entries(&self) -> Vec<HookEntry> {
        let mut entries = Vec::new();
        for event in Event::ALL {
            for group in &self.groups[event.slot()] {
                for (handler, digest) in group.handlers.iter().zip(&group.digests) {
                    entries.push(HookEntry {
                        event,
                        matcher: group.matcher.text().to_owned(),
                        command: handler.command.clone(),
                        source: handler.source.clone(),
                        project: group.project,
                        digest: digest.clone(),
                    });
                }
            }
        }
        entries
    }

    /// Removes the project's hooks whose digest is not in `approved` and returns them, so a
    /// session runs only the hooks a person has seen. Other hooks stay.
    pub fn retain_approved(&mut self, approved: &BTreeSet<String>) -> Vec<HookEntry> {
        let mut removed = Vec::new();
        for event in Event::ALL {
            for group in &mut self.groups[event.slot()] {
                if !group.project {
                    continue;
                }
                let handlers = std::mem::take(&mut group.handlers);
                let digests = std::mem::take(&mut group.digests);
                for (handler, digest) in handlers.into_iter().zip(digests) {
                    if approved.contains(&digest) {
                        group.handlers.push(handler);
                        group.digests.push(digest);
                    } else {
                        removed.push(HookEntry {
                            event,
                            matcher: group.matcher.text().to_owned(),
                            command: handler.command,
                            source: handler.source,
                            project: true,
                            digest,
                        });
                    }
                }
            }
            self.groups[event.slot()].retain(|group| !group.handlers.is_empty());
        }
        removed
    }

    /// Adds the hooks of the plugin in `root` (`hooks/hooks.json`, bare or under `hooks`), if it
    /// has any: `${CLAUDE_PLUGIN_ROOT}` in their commands becomes `root`, which is also
    /// `CLAUDE_PLUGIN_ROOT` in their environment. Errors as for [`HookSet::load`]; on an error
    /// nothing of the file is added.
    pub fn add_plugin(&mut self, root: &Path, warnings: &mut Vec<String>) -> Result<()> {
        self.add_plugin_file(root, &root.join("hooks").join("hooks.json"), warnings)
    }

    /// Adds the hooks in `path` (shaped as `hooks/hooks.json`) of the plugin in `root`, as
    /// [`HookSet::add_plugin`] does.
    pub fn add_plugin_file(
        &mut self,
        root: &Path,
        path: &Path,
        warnings: &mut Vec<String>,
    ) -> Result<()> {
        let Some(value) = read_json(path)? else { return Ok(()) };
        let (table, at) = match value.get("hooks") {
            Some(hooks) => (hooks, "hooks"),
            None => (&value, ""),
        };
        // Staged so that a malformed file adds nothing.
        let mut staged = HookSet::empty(self.project_dir.clone());
        staged.add_table(table, path, at, warnings)?;
        let root_text = root.to_string_lossy();
        for (slot, groups) in staged.groups.into_iter().enumerate() {
            for mut group in groups {
                for handler in &mut group.handlers {
                    handler.command = handler.command.replace(PLUGIN_ROOT_VAR, &root_text);
                    handler.plugin_root = Some(root.to_owned());
                }
                self.groups[slot].push(group);
            }
        }
        Ok(())
    }

    /// The directory hooks run in (and `CLAUDE_PROJECT_DIR`).
    /// Adds a callback hook for `event` (its `matcher` as in a settings file), labelled
    /// `label` in messages, asked after the hooks already added.
    ///
    /// # Errors
    /// A matcher that is not a valid regular expression.
    pub fn add_callback(
        &mut self,
        event: Event,
        matcher: Option<&str>,
        label: &str,
        timeout: Option<Duration>,
        callback: std::sync::Arc<dyn HookCallback>,
    ) -> std::result::Result<(), String> {
        let digests = vec![digest(event, matcher, &Value::String(label.to_owned()))];
        let matcher = Matcher::parse(matcher)
            .map_err(|(text, err)| format!("matcher `{text}` of {label}: {err}"))?;
        let handler = Handler {
            command: label.to_owned(),
            callback: Some(Callback(callback)),
            timeout: timeout.filter(|t| !t.is_zero()).unwrap_or(DEFAULT_TIMEOUT),
            condition: None,
            source: PathBuf::from("the Agent SDK"),
            plugin_root: None,
            kind: crate::handler::Kind::Command { args: None },
            once: None,
            background: false,
        };
        self.groups[event.slot()].push(Group {
            matcher,
            handlers: vec![handler],
            source: PathBuf::from("the Agent SDK"),
            project: false,
            digests,
        });
        Ok(())
    }

    /// Adds the `hooks` of a Claude Code settings file at `path` (nothing when it is missing
    /// or has none), for a caller that chooses the settings files itself.
    ///
    /// # Errors
    /// A file that cannot be read or parsed, or hooks that are malformed.
    pub fn add_settings_file(&mut self, path: &Path, warnings: &mut Vec<String>) -> Result<()> {
        let Some(value) = read_json(path)? else { return Ok(()) };
        self.add_settings(&value, path, warnings)
    }

    /// [`HookSet::add_settings_file`] for a file of the project's own: its hooks run only once
    /// approved (see [`HookSet::retain_approved`]).
    ///
    /// # Errors
    /// As [`HookSet::add_settings_file`].
    pub fn add_project_settings_file(
        &mut self,
        path: &Path,
        warnings: &mut Vec<String>,
    ) -> Result<()> {
        self.add_settings_file(path, warnings)?;
        self.mark_project(path);
        Ok(())
    }

    /// Adds the `hooks` of Claude Code settings given as JSON (`--settings`); `origin` names
    /// them in messages.
    ///
    /// # Errors
    /// Hooks that are malformed.
    pub fn add_settings(
        &mut self,
        settings: &Value,
        origin: &Path,
        warnings: &mut Vec<String>,
    ) -> Result<()> {
        match settings.get("hooks") {
            None | Some(Value::Null) => Ok(()),
            Some(hooks) => self.add_table(hooks, origin, "hooks", warnings),
        }
    }

    pub fn project_dir(&self) -> &Path {
        &self.project_dir
    }

    /// True when no hook is configured for any event.
    pub fn is_empty(&self) -> bool {
        self.groups.iter().all(Vec::is_empty)
    }

    /// True when `event` has at least one hook, whatever its matcher.
    pub fn has(&self, event: Event) -> bool {
        !self.groups[event.slot()].is_empty()
    }

    /// A human-readable list of every hook, one line each, for `doctor`:
    /// `PreToolUse [Bash] ./check.sh (60s) from /p/.claude/settings.json`.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for event in Event::ALL {
            for group in &self.groups[event.slot()] {
                for handler in &group.handlers {
                    let matcher = match &group.matcher {
                        Matcher::Never(text) => format!("{text} (invalid, matches nothing)"),
                        matcher => matcher.text().to_owned(),
                    };
                    let _ = writeln!(
                        out,
                        "{event} [{matcher}] {} ({}s) from {}",
                        handler.command,
                        handler.timeout.as_secs_f64(),
                        group.source.display()
                    );
                }
            }
        }
        if out.is_empty() {
            out.push_str("no hooks configured\n");
        }
        out
    }

    /// The commands that would run for `event` with matcher value `subject` (a tool name, in
    /// our or Claude's spelling, for tool events; the source, trigger, … for the others), in
    /// order, each once.
    pub fn commands_for(&self, event: Event, subject: &str) -> Vec<&str> {
        self.matching(event, subject).into_iter().map(|handler| handler.command.as_str()).collect()
    }

    /// The handlers to run, in configuration order, identical commands once (the first wins).
    pub(crate) fn matching(&self, event: Event, subject: &str) -> Vec<&Handler> {
        let alternative = if event.is_tool_event() {
            Some(crate::mapping::claude_tool_name(subject))
        } else {
            None
        };
        let mut handlers: Vec<&Handler> = Vec::new();
        for group in &self.groups[event.slot()] {
            let matched = event.ignores_matcher()
                || group.matcher.matches(subject)
                || alternative.is_some_and(|name| group.matcher.matches(name));
            if !matched {
                continue;
            }
            for handler in &group.handlers {
                if !handlers.iter().any(|seen| seen.command == handler.command) {
                    handlers.push(handler);
                }
            }
        }
        handlers
    }

    /// Adds the groups of one `{Event: [group…]}` table found at `at` in `source`.
    fn add_table(
        &mut self,
        table: &Value,
        source: &Path,
        at: &str,
        warnings: &mut Vec<String>,
    ) -> Result<()> {
        let place =
            |rest: &str| if at.is_empty() { rest.to_owned() } else { format!("{at}.{rest}") };
        let shape =
            |at: String, message: String| Error::Shape { path: source.to_owned(), at, message };
        let Value::Object(table) = table else {
            let at = if at.is_empty() { "(top level)".to_owned() } else { at.to_owned() };
            return Err(shape(at, "expected an object of event names".to_owned()));
        };
        for (name, groups) in table {
            let Some(event) = Event::from_name(name) else {
                let what = if CLAUDE_ONLY_EVENTS.contains(&name.as_str()) {
                    "a Claude Code event codecoder does not emit"
                } else {
                    "not a hook event"
                };
                warnings.push(format!(
                    "{}: `{}` is {what}; its hooks never run (known events: {})",
                    source.display(),
                    place(name),
                    Event::ALL.map(Event::name).join(", ")
                ));
                continue;
            };
            let Value::Array(groups) = groups else {
                return Err(shape(
                    place(name),
                    "expected a list of `{matcher, hooks}` groups".into(),
                ));
            };
            for (group_idx, group) in groups.iter().enumerate() {
                let at = place(&format!("{name}[{group_idx}]"));
                let parsed = parse_group(group, source, &at, event, warnings)?;
                self.groups[event.slot()].push(parsed);
            }
        }
        Ok(())
    }
}

fn parse_group(
    group: &Value,
    source: &Path,
    at: &str,
    event: Event,
    warnings: &mut Vec<String>,
) -> Result<Group> {
    let shape = |at: String, message: &str| Error::Shape {
        path: source.to_owned(),
        at,
        message: message.to_owned(),
    };
    let Value::Object(group) = group else {
        return Err(shape(at.to_owned(), "expected an object `{matcher, hooks}`"));
    };
    let matcher_text = match group.get("matcher") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.as_str()),
        Some(_) => return Err(shape(format!("{at}.matcher"), "expected a string")),
    };
    let matcher = match Matcher::parse(matcher_text) {
        Ok(matcher) => matcher,
        Err((text, err)) => {
            let err = err.to_string().replace('\n', " ");
            warnings.push(format!(
                "{}: `{at}.matcher` `{text}` is not a regular expression codecoder understands \
                 (no look-around or back-references); its hooks never run: {err}",
                source.display()
            ));
            Matcher::Never(text)
        }
    };
    if event.ignores_matcher() && !matches!(matcher, Matcher::All) {
        warnings.push(format!(
            "{}: `{at}.matcher` is ignored: {event} hooks always run",
            source.display()
        ));
    }
    let Some(Value::Array(handlers)) = group.get("hooks") else {
        return Err(shape(format!("{at}.hooks"), "expected a list of handlers"));
    };
    let mut parsed = Vec::new();
    let mut digests = Vec::new();
    for (handler_idx, raw) in handlers.iter().enumerate() {
        let at = format!("{at}.hooks[{handler_idx}]");
        if let Some(handler) = parse_handler(raw, source, &at, warnings)? {
            parsed.push(handler);
            digests.push(digest(event, matcher_text, raw));
        }
    }
    Ok(Group { matcher, handlers: parsed, source: source.to_owned(), project: false, digests })
}

fn parse_handler(
    handler: &Value,
    source: &Path,
    at: &str,
    warnings: &mut Vec<String>,
) -> Result<Option<Handler>> {
    let shape = |at: String, message: &str| Error::Shape {
        path: source.to_owned(),
        at,
        message: message.to_owned(),
    };
    let Value::Object(handler) = handler else {
        return Err(shape(at.to_owned(), "expected an object `{type, command, timeout?}`"));
    };
    let (command, kind, default_timeout) = match handler.get("type") {
        Some(Value::String(kind)) if kind == "command" => {
            let command = match handler.get("command") {
                Some(Value::String(command)) if !command.trim().is_empty() => command.clone(),
                _ => return Err(shape(format!("{at}.command"), "expected a non-empty string")),
            };
            let args = crate::handler::parse_args(handler, source, at)?;
            (command, crate::handler::Kind::Command { args }, DEFAULT_TIMEOUT)
        }
        Some(Value::String(kind)) => {
            match crate::handler::parse(kind, handler, source, at, warnings)? {
                Some(parsed) => parsed,
                None => return Ok(None),
            }
        }
        _ => return Err(shape(format!("{at}.type"), "expected a string such as \"command\"")),
    };
    let flag = |key: &str| match handler.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(on)) => Ok(*on),
        Some(_) => Err(shape(format!("{at}.{key}"), "expected true or false")),
    };
    let once = flag("once")?.then(crate::handler::Once::default);
    let background = flag("async")?;
    if background && !matches!(kind, crate::handler::Kind::Command { .. }) {
        warnings.push(format!(
            "{}: `{at}.async` applies to command hooks only; this hook runs in the foreground",
            source.display()
        ));
    }
    let background = background && matches!(kind, crate::handler::Kind::Command { .. });
    let timeout = match handler.get("timeout") {
        None | Some(Value::Null) => default_timeout,
        Some(Value::Number(seconds)) => {
            match seconds.as_f64().and_then(|s| Duration::try_from_secs_f64(s).ok()) {
                Some(timeout) if !timeout.is_zero() => timeout,
                _ => {
                    return Err(shape(
                        format!("{at}.timeout"),
                        "expected a positive number of seconds",
                    ));
                }
            }
        }
        Some(_) => return Err(shape(format!("{at}.timeout"), "expected a number of seconds")),
    };
    let condition = match handler.get("if") {
        None => None,
        Some(Value::String(condition)) => {
            if let Err(err) = crate::condition::check(condition) {
                warnings.push(format!(
                    "{}: `{at}.if` {condition:?} is not a permission rule ({err}); the hook runs \
                     for every matching call",
                    source.display()
                ));
            }
            Some(condition.clone())
        }
        Some(_) => return Err(shape(format!("{at}.if"), "expected a rule like \"Bash(git *)\"")),
    };
    // Keys of the other types were checked by `handler::parse`.
    let keys = handler.keys().filter(|_| matches!(kind, crate::handler::Kind::Command { .. }));
    for key in keys {
        match key.as_str() {
            "type" | "command" | "args" | "timeout" | "if" | "async" | "once" => {}
            "statusMessage" => warnings.push(format!(
                "{}: `{at}.{key}` is not shown by codecoder; the hook runs without it",
                source.display()
            )),
            _ => warnings
                .push(format!("{}: `{at}.{key}` is not a hook setting; ignored", source.display())),
        }
    }
    Ok(Some(Handler {
        command,
        callback: None,
        timeout,
        condition,
        source: source.to_owned(),
        plugin_root: None,
        kind,
        once,
        background,
    }))
}

/// A hook's digest: SHA-256 over its event, its matcher and its handler's JSON with every
/// object's keys sorted (so reformatting the file keeps it), in lower-case hex.
fn digest(event: Event, matcher: Option<&str>, handler: &Value) -> String {
    use sha2::Digest as _;
    let mut text = String::new();
    canonical_json(&Value::String(event.name().to_owned()), &mut text);
    text.push('\n');
    canonical_json(&matcher.map_or(Value::Null, |m| Value::String(m.to_owned())), &mut text);
    text.push('\n');
    canonical_json(handler, &mut text);
    let hash = sha2::Sha256::digest(text.as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in hash.iter() {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// `value` as compact JSON with object keys in sorted order, whatever the map type keeps.
fn canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(item) = map.get(key) {
                    canonical_json(item, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The file's JSON, `None` when it does not exist.
fn read_json(path: &Path) -> Result<Option<Value>> {
    let text = match fs_err::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(Error::Io(err)),
    };
    serde_json::from_str(&text).map(Some).map_err(|err| {
        // serde_json ends its message with the position, which the error shows up front.
        let message = err.to_string();
        let message = match message.rfind(" at line ") {
            Some(cut) => message[..cut].to_owned(),
            None => message,
        };
        Error::Json { path: path.to_owned(), line: err.line(), column: err.column(), message }
    })
}
