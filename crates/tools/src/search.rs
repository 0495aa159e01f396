//! `list_dir`, `glob` and `grep`, on ripgrep's crates: `ignore` walks (gitignore-aware,
//! parallel), `grep-regex` matches, `grep-searcher` searches.
//!
//! Invariants:
//! - Results are deterministic: `grep` sorts by path, `glob` by modification time (newest first,
//!   then path), `list_dir` by name, whatever order the parallel walk visits files in.
//! - Memory is bounded: collection stops at a hard cap (a note says the results are partial), and
//!   each shown line is cut at `MAX_LINE_CHARS`.
//! - A cancel stops the walk between files.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use codecoder_kernel::{ToolKind, ToolOutput};
use codecoder_protocol::{CallKind, CallView, ToolError};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use ignore::{WalkBuilder, WalkState};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::env::CallEnv;
use crate::path::{display, resolve};
use crate::read::io_message;
use crate::{Builtin, Shared, failed, invalid, parse_args, path_view, str_arg};

/// A shown line longer than this is cut.
const MAX_LINE_CHARS: usize = 500;
/// The largest `head_limit` a call may ask for.
const MAX_HEAD_LIMIT: usize = 10_000;
/// `list_dir` entries shown at most.
const MAX_LIST_ENTRIES: usize = 1000;

pub(crate) struct ListDir(pub(crate) Arc<Shared>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    path: Option<String>,
    depth: Option<usize>,
}

impl Builtin for ListDir {
    fn name(&self) -> &'static str {
        "list_dir"
    }
    fn description(&self) -> &'static str {
        "Lists a directory as an indented tree (directories end in `/`, files show their size). \
         `depth` is how many levels to descend (default 1, at most 5). Entries ignored by \
         .gitignore and `.git` itself are left out; hidden files are shown."
    }
    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "The directory; the working directory when absent." },
                "depth": { "type": "integer", "minimum": 1, "maximum": 5, "description": "Levels to descend. Default 1." }
            },
            "additionalProperties": false
        })
    }
    fn permission_keys(&self, args: &Value) -> Vec<String> {
        read_key(args)
    }
    fn kind(&self) -> ToolKind {
        ToolKind::ReadOnly
    }
    fn summary(&self, args: &Value) -> String {
        format!("list {}", args.get("path").and_then(Value::as_str).unwrap_or("."))
    }
    fn view(&self, args: &Value) -> CallView {
        path_view(CallKind::Search, "List", str_arg(args, "path"))
    }
    fn run(&self, env: &dyn CallEnv, args: Value) -> Result<ToolOutput, ToolError> {
        let args: ListArgs = parse_args(args)?;
        let config = &self.0.config;
        let root = search_root(&config.cwd, args.path.as_deref())?;
        let shown_root = display(&config.cwd, &root);
        let meta = fs_err::metadata(&root).map_err(|err| failed(io_message(&shown_root, &err)))?;
        if !meta.is_dir() {
            return Err(failed(format!(
                "`{shown_root}` is a file, not a directory: use read_file"
            )));
        }
        let depth = args.depth.unwrap_or(1).clamp(1, 5);
        let walker = WalkBuilder::new(&root)
            .hidden(false)
            .max_depth(Some(depth))
            .filter_entry(|entry| entry.file_name() != ".git")
            .sort_by_file_name(|a, b| a.cmp(b))
            .build();
        let mut out = format!("{}/\n", shown_root.trim_end_matches('/'));
        let mut count = 0usize;
        let mut more = 0usize;
        for entry in walker {
            if env.cancel().is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            let Ok(entry) = entry else { continue };
            if entry.depth() == 0 {
                continue;
            }
            if count == MAX_LIST_ENTRIES {
                more += 1;
                continue;
            }
            count += 1;
            let indent = "  ".repeat(entry.depth());
            let name = entry.file_name().to_string_lossy();
            let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
            if is_dir {
                out.push_str(&format!("{indent}{name}/\n"));
            } else if entry.path_is_symlink() {
                let target = fs_err::read_link(entry.path())
                    .map(|target| target.display().to_string())
                    .unwrap_or_else(|_| "?".to_owned());
                out.push_str(&format!("{indent}{name} -> {target}\n"));
            } else {
                let size = entry.metadata().map(|meta| meta.len()).unwrap_or(0);
                out.push_str(&format!("{indent}{name} ({size} bytes)\n"));
            }
        }
        if count == 0 {
            out.push_str("  (empty)\n");
        }
        if more > 0 {
            out.push_str(&format!(
                "({more} more entries not shown: list a subdirectory or use glob)\n"
            ));
        }
        Ok(ToolOutput::text(out))
    }
}

pub(crate) struct Glob(pub(crate) Arc<Shared>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GlobArgs {
    pattern: String,
    path: Option<String>,
    head_limit: Option<usize>,
}

impl Builtin for Glob {
    fn name(&self) -> &'static str {
        "glob"
    }
    fn description(&self) -> &'static str {
        "Finds files by glob pattern (`**/*.rs`, `src/**/mod.rs`, `*.toml`), newest first. A \
         pattern without `/` matches file names at any depth; one with `/` matches paths \
         relative to `path` (default: the working directory). Files ignored by .gitignore and \
         hidden files are left out."
    }
    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": { "type": "string", "minLength": 1, "description": "The glob." },
                "path": { "type": "string", "description": "The directory to search; the working directory when absent." },
                "head_limit": { "type": "integer", "minimum": 1, "maximum": MAX_HEAD_LIMIT, "description": "At most this many paths. Default 200." }
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }
    fn permission_keys(&self, args: &Value) -> Vec<String> {
        read_key(args)
    }
    fn kind(&self) -> ToolKind {
        ToolKind::ReadOnly
    }
    fn summary(&self, args: &Value) -> String {
        format!("glob {}", str_arg(args, "pattern"))
    }
    fn view(&self, args: &Value) -> CallView {
        pattern_view("Find", args)
    }
    fn run(&self, env: &dyn CallEnv, args: Value) -> Result<ToolOutput, ToolError> {
        let args: GlobArgs = parse_args(args)?;
        let config = &self.0.config;
        let (root, pattern) = if args.pattern.starts_with('/') {
            split_absolute(&args.pattern)
        } else {
            let root = search_root(&config.cwd, args.path.as_deref())?;
            (root, args.pattern.trim_start_matches("./").to_owned())
        };
        let pattern = pattern.as_str();
        let shown_root = display(&config.cwd, &root);
        fs_err::metadata(&root).map_err(|err| failed(io_message(&shown_root, &err)))?;
        let by_name = !pattern.contains('/');
        let matcher = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|err| invalid(format!("`pattern` is not a valid glob: {err}")))?
            .compile_matcher();
        let limit = args.head_limit.unwrap_or(config.search_limit).clamp(1, MAX_HEAD_LIMIT);
        let hard_cap = limit.saturating_mul(50).max(100_000);
        // Workers append matches; each lock is held for one push.
        let found: Mutex<Vec<(SystemTime, PathBuf)>> = Mutex::new(Vec::new());
        let count = AtomicUsize::new(0);
        let capped = AtomicBool::new(false);
        let cancel = env.cancel().clone();
        WalkBuilder::new(&root).threads(0).build_parallel().run(|| {
            let cancel = cancel.clone();
            let (found, count, capped, matcher, root) = (&found, &count, &capped, &matcher, &root);
            Box::new(move |entry| {
                if cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else { return WalkState::Continue };
                if !entry.file_type().is_some_and(|kind| kind.is_file()) {
                    return WalkState::Continue;
                }
                let relative = entry.path().strip_prefix(root).unwrap_or(entry.path());
                let hit = if by_name {
                    matcher.is_match(entry.file_name())
                } else {
                    matcher.is_match(relative)
                };
                if !hit {
                    return WalkState::Continue;
                }
                if count.fetch_add(1, Ordering::Relaxed) >= hard_cap {
                    capped.store(true, Ordering::Relaxed);
                    return WalkState::Quit;
                }
                let modified = entry
                    .metadata()
                    .ok()
                    .and_then(|meta| meta.modified().ok())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                found
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((modified, entry.path().to_path_buf()));
                WalkState::Continue
            })
        });
        if env.cancel().is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let mut found = found.into_inner().unwrap_or_else(PoisonError::into_inner);
        found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        if found.is_empty() {
            return Ok(ToolOutput::text(format!(
                "No files match `{}` in `{shown_root}`.",
                args.pattern
            )));
        }
        let total = found.len();
        let mut out = String::new();
        for (_, path) in found.iter().take(limit) {
            out.push_str(&display(&config.cwd, path));
            out.push('\n');
        }
        if total > limit || capped.load(Ordering::Relaxed) {
            let at_least = if capped.load(Ordering::Relaxed) { "at least " } else { "" };
            out.push_str(&format!(
                "({at_least}{} more not shown: narrow the pattern or raise head_limit)\n",
                total.saturating_sub(limit)
            ));
        }
        Ok(ToolOutput::text(out))
    }
}

pub(crate) struct Grep(pub(crate) Arc<Shared>);

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum OutputMode {
    Content,
    Files,
    Count,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrepArgs {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(rename = "type")]
    file_type: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
    context: Option<usize>,
    output: Option<OutputMode>,
    head_limit: Option<usize>,
}

impl Builtin for Grep {
    fn name(&self) -> &'static str {
        "grep"
    }
    fn description(&self) -> &'static str {
        "Searches file contents with a regular expression (Rust regex syntax, like ripgrep), \
         respecting .gitignore and skipping hidden and binary files. `output`: `content` (the \
         default: `path:line:text`, context lines as `path-line-text`), `files` (paths with a \
         match) or `count` (`path:count`). Filter files with `glob` (`*.rs`, `!*test*`) or \
         `type` (ripgrep type names: rust, py, js, ts, go, …). Results are sorted by path and \
         cut at `head_limit` entries (default 200)."
    }
    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": { "type": "string", "minLength": 1, "description": "The regular expression." },
                "path": { "type": "string", "description": "A directory or file to search; the working directory when absent." },
                "glob": { "type": "string", "description": "Only files matching this glob (a leading `!` excludes)." },
                "type": { "type": "string", "description": "Only files of this ripgrep type (rust, py, js, …)." },
                "case_insensitive": { "type": "boolean", "description": "Ignore case. Default false." },
                "context": { "type": "integer", "minimum": 0, "maximum": 20, "description": "Lines of context around each match (content output)." },
                "output": { "type": "string", "enum": ["content", "files", "count"], "description": "What to return. Default content." },
                "head_limit": { "type": "integer", "minimum": 1, "maximum": MAX_HEAD_LIMIT, "description": "At most this many lines (content) or files (files, count). Default 200." }
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }
    fn permission_keys(&self, args: &Value) -> Vec<String> {
        read_key(args)
    }
    fn kind(&self) -> ToolKind {
        ToolKind::ReadOnly
    }
    fn summary(&self, args: &Value) -> String {
        let path = args.get("path").and_then(Value::as_str).unwrap_or(".");
        format!("grep {} in {path}", str_arg(args, "pattern"))
    }
    fn view(&self, args: &Value) -> CallView {
        pattern_view("Search", args)
    }
    fn run(&self, env: &dyn CallEnv, args: Value) -> Result<ToolOutput, ToolError> {
        let args: GrepArgs = parse_args(args)?;
        let config = &self.0.config;
        let root = search_root(&config.cwd, args.path.as_deref())?;
        let shown_root = display(&config.cwd, &root);
        fs_err::metadata(&root).map_err(|err| failed(io_message(&shown_root, &err)))?;
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(args.case_insensitive)
            .line_terminator(Some(b'\n'))
            .build(&args.pattern)
            .map_err(|err| invalid(format!("`pattern` is not a valid regex: {err}")))?;
        let mode = args.output.unwrap_or(OutputMode::Content);
        let context =
            if mode == OutputMode::Content { args.context.unwrap_or(0).min(20) } else { 0 };
        let limit = args.head_limit.unwrap_or(config.search_limit).clamp(1, MAX_HEAD_LIMIT);
        let mut builder = WalkBuilder::new(&root);
        builder.threads(0);
        if let Some(name) = &args.file_type {
            let mut types = TypesBuilder::new();
            types.add_defaults();
            types.select(name);
            let types = types.build().map_err(|err| invalid(format!("`type`: {err}")))?;
            builder.types(types);
        }
        if let Some(glob) = &args.glob {
            let mut overrides = OverrideBuilder::new(&root);
            overrides
                .add(glob)
                .map_err(|err| invalid(format!("`glob` is not a valid glob: {err}")))?;
            let overrides = overrides.build().map_err(|err| invalid(format!("`glob`: {err}")))?;
            builder.overrides(overrides);
        }
        // Entries collected before the walk stops (beyond what is shown, so the sort by path is
        // right for the shown part in all but huge result sets).
        let hard_cap = limit.saturating_mul(20).max(20_000);
        let collected = AtomicUsize::new(0);
        let capped = AtomicBool::new(false);
        // Workers append one file's result at a time; each lock is held for one push.
        let results: Mutex<Vec<FileResult>> = Mutex::new(Vec::new());
        let cancel = env.cancel().clone();
        builder.build_parallel().run(|| {
            let mut searcher = SearcherBuilder::new()
                .binary_detection(BinaryDetection::quit(0))
                .line_number(true)
                .before_context(context)
                .after_context(context)
                .build();
            let matcher = matcher.clone();
            let results = &results;
            let collected = &collected;
            let capped = &capped;
            let cancel = cancel.clone();
            Box::new(move |entry| {
                if cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else { return WalkState::Continue };
                if !entry.file_type().is_some_and(|kind| kind.is_file()) {
                    return WalkState::Continue;
                }
                let mut sink =
                    FileSink { mode, text: String::new(), entries: 0, matches: 0, cap: hard_cap };
                if searcher.search_path(&matcher, entry.path(), &mut sink).is_err()
                    || sink.matches == 0
                {
                    return WalkState::Continue;
                }
                let entries = sink.entries;
                let result = FileResult {
                    path: entry.path().to_path_buf(),
                    text: sink.text,
                    matches: sink.matches,
                };
                results.lock().unwrap_or_else(PoisonError::into_inner).push(result);
                if collected.fetch_add(entries, Ordering::Relaxed) + entries >= hard_cap {
                    capped.store(true, Ordering::Relaxed);
                    return WalkState::Quit;
                }
                WalkState::Continue
            })
        });
        if env.cancel().is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let mut results = results.into_inner().unwrap_or_else(PoisonError::into_inner);
        results.sort_by(|a, b| a.path.cmp(&b.path));
        if results.is_empty() {
            return Ok(ToolOutput::text(format!(
                "No matches for `{}` in `{shown_root}`.",
                args.pattern
            )));
        }
        let cwd = &config.cwd;
        let mut out = String::new();
        let mut shown = 0usize;
        let mut hidden = 0usize;
        let total_matches: u64 = results.iter().map(|result| result.matches).sum();
        let files = results.len();
        for result in &results {
            let name = display(cwd, &result.path);
            match mode {
                OutputMode::Files | OutputMode::Count => {
                    if shown == limit {
                        hidden += 1;
                        continue;
                    }
                    shown += 1;
                    if mode == OutputMode::Files {
                        out.push_str(&format!("{name}\n"));
                    } else {
                        out.push_str(&format!("{name}:{}\n", result.matches));
                    }
                }
                OutputMode::Content => {
                    if !out.is_empty() && context > 0 && shown < limit {
                        out.push_str("--\n");
                    }
                    for line in result.text.lines() {
                        if shown == limit {
                            hidden += usize::from(line != "\u{0}--");
                            continue;
                        }
                        if line == "\u{0}--" {
                            out.push_str("--\n");
                            continue;
                        }
                        shown += 1;
                        out.push_str(&name);
                        out.push_str(line);
                        out.push('\n');
                    }
                }
            }
        }
        let partial = capped.load(Ordering::Relaxed);
        let at_least = if partial { "at least " } else { "" };
        let unit = if mode == OutputMode::Content { "lines" } else { "files" };
        let lines_word = if total_matches == 1 { "line" } else { "lines" };
        let files_word = if files == 1 { "file" } else { "files" };
        if mode == OutputMode::Files {
            out.push_str(&format!("({at_least}{files} {files_word} with matches)\n"));
        } else {
            out.push_str(&format!(
                "({at_least}{total_matches} matching {lines_word} in {files} {files_word})\n"
            ));
        }
        if hidden > 0 || partial {
            out.push_str(&format!(
                "({at_least}{hidden} more {unit} not shown: narrow the search (path, glob, type) \
                 or raise head_limit)\n"
            ));
        }
        Ok(ToolOutput::text(out))
    }
}

struct FileResult {
    path: PathBuf,
    /// Lines without the path: `:line:text` or `-line-text`, `--` between groups.
    text: String,
    matches: u64,
}

struct FileSink {
    /// Lines kept at most: a single huge file stops being searched there (memory stays
    /// bounded); the walk then quits on the shared cap.
    cap: usize,
    mode: OutputMode,
    text: String,
    entries: usize,
    matches: u64,
}

impl FileSink {
    fn push_line(&mut self, separator: char, number: Option<u64>, bytes: &[u8]) {
        let line = String::from_utf8_lossy(bytes);
        let line = line.trim_end_matches(['\n', '\r']);
        let number = number.unwrap_or(0);
        match line.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => self.text.push_str(&format!(
                "{separator}{number}{separator}{} … [line cut at {MAX_LINE_CHARS} characters]\n",
                &line[..cut]
            )),
            None => self.text.push_str(&format!("{separator}{number}{separator}{line}\n")),
        }
        self.entries += 1;
    }
}

impl Sink for FileSink {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.matches += 1;
        match self.mode {
            OutputMode::Files => {
                self.entries = 1;
                // One match is enough to list the file.
                Ok(false)
            }
            OutputMode::Count => {
                self.entries = 1;
                Ok(true)
            }
            OutputMode::Content => {
                self.push_line(':', found.line_number(), found.bytes());
                Ok(self.entries < self.cap)
            }
        }
    }

    fn context(
        &mut self,
        _searcher: &Searcher,
        context: &SinkContext<'_>,
    ) -> Result<bool, io::Error> {
        if self.mode == OutputMode::Content {
            self.push_line('-', context.line_number(), context.bytes());
        }
        Ok(self.entries < self.cap)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, io::Error> {
        if self.mode == OutputMode::Content {
            // Rendered as a separator line: the path is prepended to every line, so mark it.
            self.text.push_str("\u{0}--\n");
        }
        Ok(true)
    }
}

/// An absolute glob split into the directory before its first wildcard and the rest
/// (`/src/**/*.rs` → `/src`, `**/*.rs`); a literal path searches its parent for its name.
fn split_absolute(pattern: &str) -> (PathBuf, String) {
    let mut base = PathBuf::from("/");
    let mut rest: Vec<&str> = Vec::new();
    for part in pattern.split('/').filter(|part| !part.is_empty()) {
        if rest.is_empty() && !part.contains(['*', '?', '[', '{']) {
            base.push(part);
        } else {
            rest.push(part);
        }
    }
    if rest.is_empty() {
        let name = base.file_name().map(|name| name.to_string_lossy().into_owned());
        base.pop();
        return (base, name.unwrap_or_else(|| "*".to_owned()));
    }
    (base, rest.join("/"))
}

/// The directory (or file) a search starts at.
fn search_root(cwd: &Path, raw: Option<&str>) -> Result<PathBuf, ToolError> {
    match raw {
        None => Ok(cwd.to_path_buf()),
        Some(raw) if raw.is_empty() || raw == "." => Ok(cwd.to_path_buf()),
        Some(raw) => resolve(cwd, raw),
    }
}

/// The permission key of a search: the directory it reads (`read:.` when none is given).
fn read_key(args: &Value) -> Vec<String> {
    let path = args.get("path").and_then(Value::as_str).unwrap_or(".");
    vec![format!("read:{path}")]
}

/// The view of a search by pattern: titled ``{verb} `{pattern}` ``, the pattern its detail.
fn pattern_view(verb: &str, args: &Value) -> CallView {
    let pattern = str_arg(args, "pattern");
    CallView {
        kind: CallKind::Search,
        title: format!("{verb} `{pattern}`"),
        detail: pattern.to_owned(),
        ..CallView::default()
    }
}
