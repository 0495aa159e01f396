//! `write_file {path, content}` and `edit {path, old_string, new_string, replace_all?}`.
//!
//! Invariants:
//! - Only paths below a writable root are written (`path::resolve_writable`), through symlinks
//!   to their real target, resolved as the approval chain resolved the call's key; a symlink that
//!   leads into a protected path (`.git`, …) is refused.
//! - A file is replaced atomically (temporary file in the same directory, then rename) and keeps
//!   its permission bits.
//! - Before a path is written, `CallEnv::checkpoint` keeps what it held (for undo).
//! - Line endings are kept: when a file uses CRLF and the model's text uses bare LF, the text is
//!   converted to CRLF before it is matched or written.
//! - `edit` changes nothing unless `old_string` matches exactly once (or `replace_all`); when it
//!   does not, the error shows the nearest candidate lines with their numbers.

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use codecoder_kernel::{ToolKind, ToolOutput};
use codecoder_protocol::{CallKind, CallView, ChangeKind, FileChange, TextEdit, ToolError};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::env::CallEnv;
use crate::path::{display, resolve_writable};
use crate::read::io_message;
use crate::text::{bigrams, dice, line_of};
use crate::{Builtin, Shared, failed, invalid, marked_lines, parse_args, path_view, str_arg};

/// Occurrence line numbers listed for an ambiguous `old_string`.
const MAX_LISTED: usize = 20;
/// Candidate regions shown for a missing `old_string`.
const MAX_CANDIDATES: usize = 3;

pub(crate) struct WriteFile(pub(crate) Arc<Shared>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    path: String,
    content: String,
}

impl Builtin for WriteFile {
    fn name(&self) -> &'static str {
        "write_file"
    }
    fn description(&self) -> &'static str {
        "Writes a whole file, creating it (and its parent directories) or replacing it. Prefer \
         `edit` for changes to an existing file. A file with CRLF line endings keeps them; its \
         permissions are kept. Only paths inside the writable roots can be written."
    }
    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "The file, absolute or relative to the working directory." },
                "content": { "type": "string", "description": "The complete new content." }
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }
    fn permission_keys(&self, args: &Value) -> Vec<String> {
        vec![format!("edit:{}", str_arg(args, "path"))]
    }
    fn summary(&self, args: &Value) -> String {
        let bytes = str_arg(args, "content").len();
        format!("write {} ({bytes} bytes)", str_arg(args, "path"))
    }
    fn view(&self, args: &Value) -> CallView {
        let (path, content) = (str_arg(args, "path"), str_arg(args, "content"));
        let change = FileChange {
            path: path.to_owned(),
            kind: ChangeKind::Add,
            diff: marked_lines(content, '+'),
            header: String::new(),
            edits: vec![TextEdit { old: None, new: content.to_owned() }],
        };
        CallView { changes: vec![change], ..path_view(CallKind::Edit, "Write", path) }
    }
    fn run(&self, env: &dyn CallEnv, args: Value) -> Result<ToolOutput, ToolError> {
        let args: WriteArgs = parse_args(args)?;
        let config = &self.0.config;
        let path = resolve_writable(config, &args.path)?;
        let shown = display(&config.cwd, &path);
        if env.cancel().is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let existing = match fs_err::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => {
                return Err(failed(format!("`{shown}` is a directory")));
            }
            Ok(meta) if !meta.is_file() => {
                return Err(failed(format!("`{shown}` is not a regular file")));
            }
            Ok(meta) => Some(meta),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(err) => return Err(failed(err.to_string())),
        };
        let mut content = args.content;
        let mut converted = false;
        if existing.is_some()
            && uses_crlf(&path)
            && !content.contains("\r\n")
            && content.contains('\n')
        {
            content = content.replace('\n', "\r\n");
            converted = true;
        }
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent).map_err(|err| failed(err.to_string()))?;
        }
        env.checkpoint(&path);
        write_out(config, env, &path, content.as_bytes(), existing.as_ref())?;
        let lines = content.lines().count();
        let verb = if existing.is_some() { "Replaced" } else { "Created" };
        let mut text = format!("{verb} `{shown}`: {} bytes, {lines} line(s).", content.len());
        if converted {
            text.push_str(" Line endings were converted to CRLF, as the file had them.");
        }
        Ok(ToolOutput::text(text))
    }
}

pub(crate) struct Edit(pub(crate) Arc<Shared>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

impl Builtin for Edit {
    fn name(&self) -> &'static str {
        "edit"
    }
    fn description(&self) -> &'static str {
        "Replaces `old_string` with `new_string` in a file. `old_string` must match the file \
         exactly (whitespace included, without read_file's line-number prefixes) and exactly \
         once, unless `replace_all` is true; add surrounding lines to make it unique. When it \
         does not match, the error shows the nearest lines. CRLF files keep CRLF; permissions \
         are kept. Only paths inside the writable roots can be edited."
    }
    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "The file, absolute or relative to the working directory." },
                "old_string": { "type": "string", "minLength": 1, "description": "The exact text to replace." },
                "new_string": { "type": "string", "description": "The replacement." },
                "replace_all": { "type": "boolean", "description": "Replace every occurrence. Default false." }
            },
            "required": ["path", "old_string", "new_string"],
            "additionalProperties": false
        })
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }
    fn permission_keys(&self, args: &Value) -> Vec<String> {
        vec![format!("edit:{}", str_arg(args, "path"))]
    }
    fn summary(&self, args: &Value) -> String {
        format!("edit {}", str_arg(args, "path"))
    }
    fn view(&self, args: &Value) -> CallView {
        let path = str_arg(args, "path");
        let (old, new) = (str_arg(args, "old_string"), str_arg(args, "new_string"));
        let change = FileChange {
            path: path.to_owned(),
            kind: ChangeKind::Update { move_to: None },
            diff: marked_lines(old, '-') + &marked_lines(new, '+'),
            header: String::new(),
            edits: vec![TextEdit { old: Some(old.to_owned()), new: new.to_owned() }],
        };
        CallView { changes: vec![change], ..path_view(CallKind::Edit, "Edit", path) }
    }
    fn run(&self, env: &dyn CallEnv, args: Value) -> Result<ToolOutput, ToolError> {
        let args: EditArgs = parse_args(args)?;
        if args.old_string.is_empty() {
            return Err(invalid(
                "`old_string` is empty: give the exact text to replace (use write_file to create \
                 a file)",
            ));
        }
        if args.old_string == args.new_string {
            return Err(invalid("`old_string` and `new_string` are the same: nothing to change"));
        }
        let config = &self.0.config;
        let path = resolve_writable(config, &args.path)?;
        let shown = display(&config.cwd, &path);
        let meta = fs_err::metadata(&path).map_err(|err| failed(io_message(&shown, &err)))?;
        if meta.is_dir() {
            return Err(failed(format!("`{shown}` is a directory")));
        }
        if !meta.is_file() {
            return Err(failed(format!("`{shown}` is not a regular file")));
        }
        let bytes = match crate::files::read_through(config, &path, env.cancel())? {
            Some(text) => text.into_bytes(),
            None => fs_err::read(&path).map_err(|err| failed(err.to_string()))?,
        };
        if env.cancel().is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        // A CRLF file gets CRLF text: the model writes `\n`. The text as given is tried too,
        // for files that mix line endings.
        let (mut old, mut new) = (args.old_string, args.new_string);
        let mut matches = Vec::new();
        if first_line_is_crlf(&bytes) && (old.contains('\n') || new.contains('\n')) {
            let crlf_old = to_crlf(&old);
            matches = find_all(&bytes, crlf_old.as_bytes());
            if !matches.is_empty() {
                old = crlf_old;
                new = to_crlf(&new);
            }
        }
        if matches.is_empty() {
            matches = find_all(&bytes, old.as_bytes());
        }
        if matches.is_empty() {
            if let Some(advice) = redacted_placeholder_advice(&old) {
                return Err(failed(format!("`old_string` was not found in `{shown}`: {advice}")));
            }
            return Err(failed(not_found_message(&shown, &bytes, &old)));
        }
        if matches.len() > 1 && !args.replace_all {
            let lines: Vec<String> = matches
                .iter()
                .take(MAX_LISTED)
                .map(|&at| line_of(&bytes, at).to_string())
                .collect();
            let more = if matches.len() > MAX_LISTED { ", …" } else { "" };
            return Err(failed(format!(
                "`old_string` occurs {} times in `{shown}` (at lines {}{more}). Include more \
                 surrounding lines to pick one, or set replace_all to true to replace them all.",
                matches.len(),
                lines.join(", ")
            )));
        }
        let mut out = Vec::with_capacity(bytes.len() + matches.len() * new.len());
        let mut last = 0;
        for &at in &matches {
            out.extend_from_slice(&bytes[last..at]);
            out.extend_from_slice(new.as_bytes());
            last = at + old.len();
        }
        out.extend_from_slice(&bytes[last..]);
        env.checkpoint(&path);
        write_out(config, env, &path, &out, Some(&meta))?;
        let first_line = line_of(&bytes, matches[0]);
        let new_lines = new.matches('\n').count();
        let text = if matches.len() == 1 {
            format!(
                "Edited `{shown}`: replaced 1 occurrence at line {first_line}; the new text spans \
                 lines {first_line}-{}.",
                first_line + new_lines
            )
        } else {
            format!(
                "Edited `{shown}`: replaced {} occurrences (the first at line {first_line}).",
                matches.len()
            )
        };
        Ok(ToolOutput::text(text))
    }
}

/// The start offsets of the non-overlapping occurrences of `needle`.
fn find_all(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = memchr::memmem::find(&haystack[from..], needle) {
        out.push(from + at);
        from += at + needle.len().max(1);
        if from > haystack.len() {
            break;
        }
    }
    out
}

/// Whether the file's first line ends in CRLF (reads at most 64 KiB).
fn uses_crlf(path: &Path) -> bool {
    let Ok(file) = fs_err::File::open(path) else { return false };
    let mut head = Vec::with_capacity(64 * 1024);
    if std::io::Read::read_to_end(&mut std::io::Read::take(file, 64 * 1024), &mut head).is_err() {
        return false;
    }
    first_line_is_crlf(&head)
}

fn first_line_is_crlf(bytes: &[u8]) -> bool {
    match memchr::memchr(b'\n', bytes) {
        Some(at) => at > 0 && bytes[at - 1] == b'\r',
        None => false,
    }
}

/// `text` with every line ending as CRLF.
fn to_crlf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\n', "\r\n")
}

/// Writes `bytes` as the file's content: through the file access when one writes (text only),
/// else by replacing the file on disk.
fn write_out(
    config: &crate::ToolsConfig,
    env: &dyn CallEnv,
    path: &Path,
    bytes: &[u8],
    existing: Option<&std::fs::Metadata>,
) -> Result<(), ToolError> {
    if let Ok(text) = std::str::from_utf8(bytes)
        && crate::files::write_through(config, path, text, env.cancel())?
    {
        return Ok(());
    }
    replace_file(path, bytes, existing)
}

/// Replaces `path` with `bytes` atomically, keeping the permissions of `existing`.
fn replace_file(
    path: &Path,
    bytes: &[u8],
    existing: Option<&std::fs::Metadata>,
) -> Result<(), ToolError> {
    let shown = path.display();
    let dir = path.parent().unwrap_or_else(|| Path::new("/"));
    let mut temp = tempfile::Builder::new()
        .prefix(".codecoder-write-")
        .tempfile_in(dir)
        .map_err(|err| failed(format!("could not write `{shown}`: {err}")))?;
    temp.write_all(bytes).map_err(|err| failed(format!("could not write `{shown}`: {err}")))?;
    if let Some(meta) = existing {
        fs_err::set_permissions(temp.path(), meta.permissions())
            .map_err(|err| failed(err.to_string()))?;
    } else {
        // A new file gets the usual mode (0644 under the common umask), not tempfile's 0600.
        use std::os::unix::fs::PermissionsExt as _;
        fs_err::set_permissions(temp.path(), std::fs::Permissions::from_mode(0o644))
            .map_err(|err| failed(err.to_string()))?;
    }
    temp.persist(path)
        .map_err(|err| failed(format!("could not write `{shown}`: {}", err.error)))?;
    Ok(())
}

/// When `old` holds a redaction placeholder (`[REDACTED:<kind>]`, the way a secret in the file
/// was shown to the model), why it can never match and what works instead: the file holds the
/// secret itself, which the model cannot see or type. None when `old` holds no placeholder.
pub(crate) fn redacted_placeholder_advice(old: &str) -> Option<String> {
    let start = old.find("[REDACTED:")?;
    let placeholder = match old[start..].find(']') {
        Some(end) => &old[start..=start + end],
        None => &old[start..],
    };
    Some(format!(
        "it holds `{placeholder}`, which stands for a secret redacted from what you were shown; \
         the file holds the secret itself, which you cannot see or type, so text containing the \
         placeholder never matches. Edit around the secret instead: match a shorter text that \
         stops before it or starts after it, or change the line with a command (such as sed \
         with a pattern that matches the rest of the line)."
    ))
}

/// Why `old` was not found, with the nearest candidate regions of the file.
fn not_found_message(shown: &str, bytes: &[u8], old: &str) -> String {
    let text = String::from_utf8_lossy(bytes);
    let file_lines: Vec<&str> = text.lines().collect();
    let old_lines: Vec<&str> = old.lines().take(50).collect();
    let mut message = format!("`old_string` was not found in `{shown}`.");
    if old_lines.is_empty() || file_lines.is_empty() {
        return message;
    }
    let window = old_lines.len();
    // Same lines up to indentation and trailing spaces?
    let trimmed: Vec<&str> = old_lines.iter().map(|line| line.trim()).collect();
    if let Some(start) = (0..=file_lines.len().saturating_sub(window)).find(|&start| {
        file_lines[start..(start + window).min(file_lines.len())]
            .iter()
            .map(|line| line.trim())
            .eq(trimmed.iter().copied())
    }) {
        message.push_str(&format!(
            " It matches lines {}-{} if whitespace at the line ends is ignored; copy them exactly:\n{}",
            start + 1,
            start + window,
            numbered(&file_lines, start, window)
        ));
        return message;
    }
    let old_grams: Vec<Vec<(char, char)>> =
        old_lines.iter().map(|line| bigrams(line.trim())).collect();
    let file_grams: Vec<Vec<(char, char)>> =
        file_lines.iter().take(200_000).map(|line| bigrams(line.trim())).collect();
    let mut scored: Vec<(f64, usize)> = (0..file_grams.len())
        .map(|start| {
            let total: f64 = old_grams
                .iter()
                .enumerate()
                .map(|(offset, grams)| {
                    file_grams.get(start + offset).map_or(0.0, |line| dice(grams, line))
                })
                .sum();
            (total / window as f64, start)
        })
        .filter(|(score, _)| *score > 0.3)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut chosen: Vec<(f64, usize)> = Vec::new();
    for (score, start) in scored {
        if chosen.iter().any(|(_, other)| start.abs_diff(*other) < window) {
            continue;
        }
        chosen.push((score, start));
        if chosen.len() == MAX_CANDIDATES {
            break;
        }
    }
    if chosen.is_empty() {
        message
            .push_str(" No similar lines either: read the file again and copy the text exactly.");
        return message;
    }
    message.push_str(
        " The most similar parts of the file (copy the text exactly, without the line numbers):",
    );
    for (score, start) in chosen {
        let end = (start + window).min(file_lines.len());
        let range = if end == start + 1 {
            format!("line {end}")
        } else {
            format!("lines {}-{end}", start + 1)
        };
        message.push_str(&format!(
            "\n\n{range} ({:.0}% similar):\n{}",
            score * 100.0,
            numbered(&file_lines, start, window)
        ));
    }
    message
}

/// `count` lines from `start` (0-based), numbered like read_file.
fn numbered(lines: &[&str], start: usize, count: usize) -> String {
    let mut out = String::new();
    for (index, line) in lines.iter().enumerate().skip(start).take(count) {
        out.push_str(&format!("{:>6}\t{line}\n", index + 1));
    }
    out
}
