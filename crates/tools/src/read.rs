//! `read_file {path, offset?, limit?}`: numbered lines (`cat -n` style), images as image content,
//! binary files described.
//!
//! Invariants:
//! - Memory stays flat whatever the file: lines before `offset` are skipped by counting newlines
//!   in a fixed buffer (memchr), a line longer than `MAX_LINE_BYTES` is cut and its rest skipped,
//!   and the output stops at `read_byte_limit`. Only an image (bounded by `image_limit`) is read
//!   whole.
//! - When the output stops before the end of the file, a note says which `offset` reads on.
//! - Checkpoints (`LineIndex`) are used only for the exact file version they were learnt from
//!   (device, inode, size, modification time).

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine as _;
use codecoder_kernel::{ToolKind, ToolOutput};
use codecoder_protocol::{CallKind, CallView, ContentItem, Image, ToolError};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::env::CallEnv;
use crate::path::{display, resolve};
use crate::{Builtin, Shared, failed, parse_args, path_view, str_arg};

/// Longer lines are cut (the rest is skipped, not loaded).
const MAX_LINE_BYTES: usize = 4096;
/// Bytes looked at to tell text from binary and images.
const SNIFF_BYTES: usize = 8192;
/// The read buffer.
const BUFFER_BYTES: usize = 256 * 1024;

pub(crate) struct ReadFile {
    pub(crate) shared: Arc<Shared>,
    pub(crate) index: LineIndex,
}

/// Lines between two checkpoints of a `LineIndex`.
pub(crate) const CHECKPOINT_LINES: u64 = 1 << 16;
/// Files whose checkpoints are kept.
const INDEXED_FILES: usize = 16;

/// Which version of which file: checkpoints are reused only while all of it is unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileKey {
    device: u64,
    inode: u64,
    size: u64,
    modified: Option<std::time::SystemTime>,
}

impl FileKey {
    fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt as _;
        Self {
            device: meta.dev(),
            inode: meta.ino(),
            size: meta.len(),
            modified: meta.modified().ok(),
        }
    }
}

/// A sparse line index of recently read files, so that paging through a huge file does not
/// rescan it from the top each time: for each file, the byte offset after every
/// `CHECKPOINT_LINES`-th newline, learnt as a by-product of skipping. Bounded: at most
/// `INDEXED_FILES` files (least recently used dropped), 8 bytes per 65,536 lines.
#[derive(Default)]
pub(crate) struct LineIndex {
    // A Mutex because read_file calls run in parallel on worker threads; it is held only to
    // take or put one entry, never while reading the file.
    files: Mutex<Vec<(FileKey, Vec<u64>)>>,
}

impl LineIndex {
    /// The checkpoints of this file version (empty when unknown), taken out of the cache.
    fn take(&self, key: &FileKey) -> Vec<u64> {
        let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        match files.iter().position(|(other, _)| other == key) {
            Some(at) => files.remove(at).1,
            None => Vec::new(),
        }
    }

    /// Puts checkpoints back as the most recently used entry.
    fn put(&self, key: FileKey, checkpoints: Vec<u64>) {
        if checkpoints.is_empty() {
            return;
        }
        let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        files.retain(|(other, _)| other.device != key.device || other.inode != key.inode);
        if files.len() == INDEXED_FILES {
            files.remove(0);
        }
        files.push((key, checkpoints));
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    offset: Option<u64>,
    limit: Option<u64>,
}

impl Builtin for ReadFile {
    fn name(&self) -> &'static str {
        "read_file"
    }
    fn description(&self) -> &'static str {
        "Reads a file. Text comes back as numbered lines (`cat -n` style: line number, tab, line); \
         at most 2000 lines or 256 KiB per call by default, with a note telling the offset to \
         read on from. `offset` is the 1-based line to start at, `limit` the number of lines. \
         Images (PNG, JPEG, GIF, WebP) come back as images; other binary files are described, \
         not shown. Line numbers are not part of the file: leave them out of `edit` strings."
    }
    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "The file, absolute or relative to the working directory." },
                "offset": { "type": "integer", "minimum": 1, "description": "The first line to show, 1-based. Default 1." },
                "limit": { "type": "integer", "minimum": 1, "description": "How many lines to show. Default 2000." }
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }
    fn permission_keys(&self, args: &Value) -> Vec<String> {
        vec![format!("read:{}", str_arg(args, "path"))]
    }
    fn kind(&self) -> ToolKind {
        ToolKind::ReadOnly
    }
    fn summary(&self, args: &Value) -> String {
        format!("read {}", str_arg(args, "path"))
    }
    fn view(&self, args: &Value) -> CallView {
        let line = args.get("offset").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok());
        CallView { line, ..path_view(CallKind::Read, "Read", str_arg(args, "path")) }
    }
    fn run(&self, env: &dyn CallEnv, args: Value) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(args)?;
        let config = &self.shared.config;
        let path = resolve(&config.cwd, &args.path)?;
        let shown = display(&config.cwd, &path);
        let meta = fs_err::metadata(&path).map_err(|err| failed(io_message(&shown, &err)))?;
        if meta.is_dir() {
            return Err(failed(format!("`{shown}` is a directory: use list_dir to see it")));
        }
        if !meta.is_file() {
            // A FIFO would block the open; a device may never end.
            return Err(failed(format!(
                "`{shown}` is not a regular file (a device, FIFO or socket)"
            )));
        }
        let mut file = fs_err::File::open(&path).map_err(|err| failed(err.to_string()))?;
        let mut head = vec![0u8; SNIFF_BYTES];
        let sniffed = read_full(&mut file, &mut head).map_err(|err| failed(err.to_string()))?;
        head.truncate(sniffed);
        if let Some(media_type) = image_type(&head) {
            if meta.len() > config.image_limit {
                return Ok(ToolOutput::text(format!(
                    "`{shown}` is an image ({media_type}, {} bytes), larger than the {} bytes \
                     that can be shown.",
                    meta.len(),
                    config.image_limit
                )));
            }
            let bytes = fs_err::read(&path).map_err(|err| failed(err.to_string()))?;
            let data_base64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
            return Ok(ToolOutput {
                content: vec![
                    ContentItem::Text {
                        text: format!("Image `{shown}` ({media_type}, {} bytes):", bytes.len()),
                    },
                    ContentItem::Image(Image { media_type: media_type.to_owned(), data_base64 }),
                ],
                is_error: false,
                exit: None,
            });
        }
        if memchr::memchr(0, &head).is_some() {
            return Ok(ToolOutput::text(format!(
                "`{shown}` is a binary file ({}, {} bytes); it is not shown. Use run_command with \
                 a tool that understands it (`file`, `xxd | head`, `unzip -l`, …).",
                binary_kind(&head),
                meta.len()
            )));
        }
        let offset = args.offset.unwrap_or(1).max(1);
        let limit = args.limit.unwrap_or(config.read_line_limit as u64).max(1);
        // An editor's buffer wins over the disk (its unsaved changes are what the person sees).
        if let Some(text) = crate::files::read_through(config, &path, env.cancel())? {
            if text.is_empty() {
                return Ok(ToolOutput::text(format!("`{shown}` is empty (0 bytes).")));
            }
            let reader = std::io::Cursor::new(text.into_bytes());
            let range = (offset, limit);
            return read_lines(env, reader, &shown, range, config.read_byte_limit, &mut Vec::new());
        }
        if meta.len() == 0 {
            return Ok(ToolOutput::text(format!("`{shown}` is empty (0 bytes).")));
        }
        let reader = BufReader::with_capacity(BUFFER_BYTES, file);
        let key = FileKey::of(&meta);
        let mut checkpoints = self.index.take(&key);
        let result = read_lines(
            env,
            reader,
            &shown,
            (offset, limit),
            config.read_byte_limit,
            &mut checkpoints,
        );
        self.index.put(key, checkpoints);
        result
    }
}

/// The numbered lines `offset..offset + limit` of a text file, with notes.
fn read_lines(
    env: &dyn CallEnv,
    mut reader: impl BufRead + Seek,
    shown: &str,
    (offset, limit): (u64, u64),
    byte_limit: usize,
    checkpoints: &mut Vec<u64>,
) -> Result<ToolOutput, ToolError> {
    let io_err = |err: std::io::Error| failed(format!("reading `{shown}`: {err}"));
    // Start from the last checkpoint at or before the line we want.
    let known = usize::try_from((offset - 1) / CHECKPOINT_LINES).unwrap_or(usize::MAX);
    let start = known.min(checkpoints.len());
    let (done, position) = match start {
        0 => (0, 0),
        start => (start as u64 * CHECKPOINT_LINES, checkpoints[start - 1]),
    };
    reader.seek(SeekFrom::Start(position)).map_err(io_err)?;
    let skip = Skip { done, position, checkpoints };
    let (skipped, partial) = skip_lines(env, &mut reader, offset - 1, skip).map_err(io_err)?;
    if env.cancel().is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    if skipped < offset - 1 || reader.fill_buf().map_err(io_err)?.is_empty() {
        let lines = skipped + u64::from(partial);
        return Err(failed(format!(
            "offset {offset} is past the end of `{shown}`: it has {lines} line(s). Read from a \
             smaller offset."
        )));
    }
    let mut out = String::new();
    let mut line = Vec::new();
    let mut number = offset;
    let mut shown_lines = 0u64;
    let mut crlf = false;
    let mut lossy = false;
    let mut cut_lines = 0u64;
    let mut ended_without_newline = false;
    let mut stopped_by_bytes = false;
    while shown_lines < limit {
        let Some((length, had_newline)) =
            read_line_capped(&mut reader, &mut line).map_err(io_err)?
        else {
            break;
        };
        if line.ends_with(b"\r") && had_newline {
            line.pop();
            crlf = true;
        }
        let text = match std::str::from_utf8(&line) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => {
                lossy = true;
                String::from_utf8_lossy(&line)
            }
        };
        let mut entry = format!("{number:>6}\t{text}");
        if length > MAX_LINE_BYTES as u64 {
            cut_lines += 1;
            entry.push_str(&format!(" … [line cut: {length} bytes in all]"));
        }
        entry.push('\n');
        if out.len() + entry.len() > byte_limit && shown_lines > 0 {
            stopped_by_bytes = true;
            break;
        }
        out.push_str(&entry);
        shown_lines += 1;
        number += 1;
        if !had_newline {
            ended_without_newline = true;
            break;
        }
    }
    let more = stopped_by_bytes
        || (!ended_without_newline && !reader.fill_buf().map_err(io_err)?.is_empty());
    let last = offset + shown_lines - 1;
    let mut notes = Vec::new();
    if more {
        let why = if stopped_by_bytes {
            format!("the {byte_limit}-byte output cap")
        } else {
            "the line limit".to_owned()
        };
        notes.push(format!(
            "Showing lines {offset}-{last} of `{shown}` (stopped at {why}); the file goes on: \
             call read_file with offset={} to read more.",
            last + 1
        ));
    } else if ended_without_newline {
        notes.push("The file does not end with a newline.".to_owned());
    }
    if crlf {
        notes.push(
            "The file has CRLF line endings (not shown); edit and write_file keep them.".to_owned(),
        );
    }
    if lossy {
        notes.push("The file is not valid UTF-8: invalid bytes are shown as �.".to_owned());
    }
    if cut_lines > 0 {
        notes.push(format!(
            "{cut_lines} line(s) longer than {MAX_LINE_BYTES} bytes were cut; use grep or \
             run_command to see them whole."
        ));
    }
    for note in notes {
        out.push_str(&format!("\n({note})"));
    }
    Ok(ToolOutput::text(out))
}

/// Where a skip starts and what it learns on the way.
pub(crate) struct Skip<'a> {
    /// Lines already behind the reader.
    pub(crate) done: u64,
    /// The reader's byte position.
    pub(crate) position: u64,
    /// The file's checkpoints so far (see `LineIndex`); extended as the skip passes new ones.
    pub(crate) checkpoints: &'a mut Vec<u64>,
}

/// Skips lines until `count` are behind the reader; returns how many are (fewer at the end of
/// the file) and whether the file ended in a line without a newline. Records a checkpoint
/// every `CHECKPOINT_LINES` lines past the last known one. Checks cancel between buffers.
pub(crate) fn skip_lines(
    env: &dyn CallEnv,
    reader: &mut impl BufRead,
    count: u64,
    skip: Skip<'_>,
) -> std::io::Result<(u64, bool)> {
    let Skip { mut done, mut position, checkpoints } = skip;
    let mut partial = false;
    while done < count {
        if env.cancel().is_cancelled() {
            return Ok((done, false));
        }
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            break;
        }
        let left = count - done;
        let newlines = memchr::memchr_iter(b'\n', buffer).count() as u64;
        // Checkpoints that fall in this buffer, up to the target.
        let usable = newlines.min(left);
        let mut next = (checkpoints.len() as u64 + 1) * CHECKPOINT_LINES;
        if done + usable >= next {
            let mut found = memchr::memchr_iter(b'\n', buffer);
            let mut seen = 0u64;
            while done + usable >= next {
                let index = usize::try_from(next - done - 1 - seen).unwrap_or(usize::MAX);
                let Some(at) = found.nth(index) else { break };
                seen = next - done;
                checkpoints.push(position + at as u64 + 1);
                next += CHECKPOINT_LINES;
            }
        }
        if newlines < left {
            done += newlines;
            partial = buffer.last() != Some(&b'\n');
            let length = buffer.len();
            reader.consume(length);
            position += length as u64;
            continue;
        }
        // The line we want starts in this buffer. `left >= 1` here, so `nth` is in range.
        let index = usize::try_from(left - 1).unwrap_or(usize::MAX);
        let at = memchr::memchr_iter(b'\n', buffer).nth(index).unwrap_or(buffer.len() - 1);
        reader.consume(at + 1);
        done = count;
    }
    Ok((done, done < count && partial))
}

/// Reads one line into `line` (without its `\n`), keeping at most `MAX_LINE_BYTES` bytes and
/// skipping the rest. Returns the line's full length and whether a newline ended it; `None` at
/// the end of the file.
fn read_line_capped(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
) -> std::io::Result<Option<(u64, bool)>> {
    line.clear();
    let mut length = 0u64;
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok((length > 0).then_some((length, false)));
        }
        let (chunk, found) = match memchr::memchr(b'\n', buffer) {
            Some(at) => (&buffer[..at], true),
            None => (buffer, false),
        };
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        length += chunk.len() as u64;
        let used = chunk.len() + usize::from(found);
        reader.consume(used);
        if found {
            return Ok(Some((length, true)));
        }
    }
}

/// Reads until `buffer` is full or the file ends; returns the bytes read.
fn read_full(reader: &mut impl Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(filled)
}

/// The MIME type of an image, from its magic bytes.
pub(crate) fn image_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(b"\xFF\xD8\xFF") {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// A name for a binary format, from its magic bytes.
fn binary_kind(head: &[u8]) -> &'static str {
    let kinds: [(&[u8], &str); 8] = [
        (b"\x7FELF", "ELF executable or library"),
        (b"%PDF", "PDF document"),
        (b"PK\x03\x04", "ZIP archive"),
        (b"\x1F\x8B", "gzip data"),
        (b"\xFD7zXZ", "xz data"),
        (b"(\xB5\x2F\xFD", "zstd data"),
        (b"SQLite format 3\0", "SQLite database"),
        (b"\0asm", "WebAssembly module"),
    ];
    kinds.iter().find(|(magic, _)| head.starts_with(magic)).map_or("binary data", |(_, kind)| kind)
}

/// A read error worded for the model.
pub(crate) fn io_message(shown: &str, err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::NotFound => {
            format!("`{shown}` does not exist: check the path (list_dir or glob can find it)")
        }
        std::io::ErrorKind::PermissionDenied => format!("`{shown}` is not readable: {err}"),
        _ => err.to_string(),
    }
}

#[cfg(test)]
mod tests;
