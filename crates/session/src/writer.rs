//! `SessionWriter`: validates, externalizes large content, and appends one line per record.
//!
//! Invariant: a record reaches the file with one `write` call of one complete line, and only
//! after `SessionTrace::validate` accepted it; the trace and the projection advance only after
//! the write succeeded. A failed write is rolled back by truncating the file to its previous
//! length, so a later append never glues onto a partial line.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use codecoder_protocol::{ContentItem, Message, MessageItem, Record, RecordBody, SessionId};
use codecoder_stdx::{Clock, SystemClock};

use crate::blob::BlobStore;
use crate::error::Result;
use crate::projection::Projection;
use crate::store::NewSession;
use crate::trace::SessionTrace;

/// When the writer asks the OS to put the log on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// After every record: slowest, loses nothing.
    Always,
    /// After `session_meta`, `turn_end` and `session_end`: a crash loses at most the open turn,
    /// which repair closes anyway.
    Turn,
    /// Never; the OS writes when it likes.
    Never,
}

impl std::str::FromStr for FsyncPolicy {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s {
            "always" => Ok(Self::Always),
            "turn" => Ok(Self::Turn),
            "never" => Ok(Self::Never),
            other => {
                Err(format!("unknown fsync policy `{other}` (expected always, turn or never)"))
            }
        }
    }
}

/// How a writer behaves.
#[derive(Clone)]
pub struct WriterConfig {
    /// When to fsync.
    pub fsync: FsyncPolicy,
    /// Text or images larger than this many bytes in tool results and user messages go to the
    /// blob store; the log keeps a `BlobRef`.
    pub blob_threshold: usize,
    /// Where `ts` comes from.
    pub clock: Arc<dyn Clock>,
}

impl WriterConfig {
    /// fsync at turn end, 16 KiB blob threshold, the system clock.
    pub fn standard() -> Self {
        Self { fsync: FsyncPolicy::Turn, blob_threshold: 16 * 1024, clock: Arc::new(SystemClock) }
    }
}

impl std::fmt::Debug for WriterConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriterConfig")
            .field("fsync", &self.fsync)
            .field("blob_threshold", &self.blob_threshold)
            .finish_non_exhaustive()
    }
}

/// Appends records to one session log.
pub struct SessionWriter {
    session_id: SessionId,
    sink: Option<FileSink>,
    blobs: Option<BlobStore>,
    trace: SessionTrace,
    projection: Projection,
    config: WriterConfig,
    line: Vec<u8>,
}

struct FileSink {
    file: fs_err::File,
    path: PathBuf,
    len: u64,
    unsynced: bool,
}

impl std::fmt::Debug for SessionWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionWriter")
            .field("session_id", &self.session_id)
            .field("path", &self.path())
            .field("last_seq", &self.trace.last_seq())
            .finish_non_exhaustive()
    }
}

impl SessionWriter {
    /// A writer over an open file of `len` bytes whose records produced `trace` and
    /// `projection`. The caller guarantees the file ends with a complete line (or is empty).
    pub(crate) fn from_parts(
        session_id: SessionId,
        file: Option<(fs_err::File, u64)>,
        blobs: Option<BlobStore>,
        trace: SessionTrace,
        projection: Projection,
        config: WriterConfig,
    ) -> Self {
        let sink = file.map(|(file, len)| {
            let path = file.path().to_owned();
            FileSink { file, path, len, unsynced: false }
        });
        Self { session_id, sink, blobs, trace, projection, config, line: Vec::with_capacity(512) }
    }

    /// A writer that validates and projects but writes no file (for `--ephemeral` and tests).
    /// Large content stays inline.
    pub fn in_memory(new: NewSession, config: WriterConfig) -> Result<Self> {
        let meta = new.into_meta();
        let mut writer = Self::from_parts(
            meta.session_id,
            None,
            None,
            SessionTrace::new(),
            Projection::new(),
            config,
        );
        writer.append(RecordBody::SessionMeta(meta))?;
        Ok(writer)
    }

    /// Validates `body`, moves large content to the blob store, writes it as the next record
    /// and returns its seq. An invalid record is refused (`Error::Trace`) and nothing is written;
    /// a failed write (`Error::Io`) leaves the file, trace and projection as they were.
    pub fn append(&mut self, body: RecordBody) -> Result<u64> {
        let record =
            Record { seq: self.trace.last_seq() + 1, ts: self.config.clock.now_ms(), body };
        let transition = self.trace.validate(&record)?;
        // Only an accepted record may leave blobs behind. Externalizing keeps every id and role,
        // all the trace looked at, so the transition still fits the record.
        let record = Record { body: self.externalize(record.body)?, ..record };
        self.line.clear();
        serde_json::to_writer(&mut self.line, &record)?;
        self.line.push(b'\n');
        if let Some(sink) = &mut self.sink {
            let len_before = sink.len;
            sink.write_line(&self.line)?;
            let sync_now = match self.config.fsync {
                FsyncPolicy::Always => true,
                FsyncPolicy::Turn => matches!(
                    record.body,
                    RecordBody::SessionMeta(_)
                        | RecordBody::TurnEnd { .. }
                        | RecordBody::SessionEnd
                ),
                FsyncPolicy::Never => false,
            };
            if sync_now && let Err(err) = sink.sync() {
                // The record is not durable, so it is not in the log: take the line back, or the
                // next append would repeat its seq.
                sink.truncate_to(len_before);
                return Err(err);
            }
        }
        self.trace.commit(transition);
        self.projection.apply(&record);
        Ok(record.seq)
    }

    /// Forces what was written to disk.
    pub fn sync(&mut self) -> Result<()> {
        match &mut self.sink {
            Some(sink) => sink.sync(),
            None => Ok(()),
        }
    }

    /// The state of the log: what is open and pending.
    pub fn trace(&self) -> &SessionTrace {
        &self.trace
    }

    /// The history the model sees, as of the last record.
    pub fn history(&self) -> &[Message] {
        self.projection.history()
    }

    /// This session's id.
    pub fn session_id(&self) -> SessionId {
        self.session_id
    }

    /// The log file; `None` for an in-memory writer.
    pub fn path(&self) -> Option<&Path> {
        self.sink.as_ref().map(|sink| sink.path.as_path())
    }

    /// The blob store large content goes to; `None` for an in-memory writer.
    pub fn blobs(&self) -> Option<&BlobStore> {
        self.blobs.as_ref()
    }

    fn externalize(&self, body: RecordBody) -> Result<RecordBody> {
        let Some(blobs) = &self.blobs else { return Ok(body) };
        let threshold = self.config.blob_threshold;
        Ok(match body {
            RecordBody::ToolResult { mut result, synthetic } => {
                for item in &mut result.content {
                    blobs.externalize(item, threshold)?;
                }
                RecordBody::ToolResult { result, synthetic }
            }
            RecordBody::UserMessage { mut message } => {
                for item in &mut message.items {
                    if let MessageItem::Image(image) = item
                        && image.data_base64.len() > threshold
                    {
                        let mut content = ContentItem::Image(image.clone());
                        blobs.externalize(&mut content, threshold)?;
                        if let ContentItem::BlobRef(blob) = content {
                            *item = MessageItem::BlobRef(blob);
                        }
                    }
                }
                RecordBody::UserMessage { message }
            }
            other => other,
        })
    }
}

impl FileSink {
    fn write_line(&mut self, line: &[u8]) -> Result<()> {
        if let Err(err) = self.file.write_all(line) {
            // Roll back a partial line so the next append starts on a line boundary.
            let len = self.len;
            self.truncate_to(len);
            return Err(err.into());
        }
        self.len += line.len() as u64;
        self.unsynced = true;
        Ok(())
    }

    fn truncate_to(&mut self, len: u64) {
        if self.file.file().set_len(len).is_ok() {
            self.len = len;
        }
    }

    fn sync(&mut self) -> Result<()> {
        if self.unsynced {
            self.file.sync_data()?;
            self.unsynced = false;
        }
        Ok(())
    }
}

impl Drop for SessionWriter {
    fn drop(&mut self) {
        let _ = self.sync();
    }
}
