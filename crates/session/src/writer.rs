//! `SessionWriter`: validates, externalizes large content, and appends one line per record;
//! under `FsyncPolicy::Turn` a `session-sync` thread group-commits the turn-boundary syncs.
//!
//! Invariant: a record reaches the file with one `write` call of one complete line, and only
//! after `SessionTrace::validate` accepted it; the trace and the projection advance only after
//! the write succeeded. A failed write is rolled back by truncating the file to its previous
//! length, so a later append never glues onto a partial line.
//!
//! Invariant (durability): `sync()` and `Drop` return only once every line written so far is on
//! disk (or the sync failed). Under `Turn`, `append` only *asks* for a sync at a turn boundary:
//! the syncer thread calls `sync_data` on a clone of the file, and one sync covers every line
//! written before it started, so requests that arrive while a sync is pending are coalesced
//! (group commit). Progress is counted in generations: the writer's *written* generation (lines
//! written) and the syncer's *synced* generation (the written generation it read before its
//! last successful sync).
//!
//! Invariant (one writer): a file writer holds the log's `LogLock` from before it was created
//! or read until it is dropped; the lock is released last, after the final sync and the
//! syncer's join (field order of `FileSink`). An in-memory writer has no file and no lock.
//!
//! Invariant (threads): the syncer is owned by the writer: it is started only for a file writer
//! under `Turn` (never for `in_memory`), its request sender is dropped before its handle, and
//! the handle joins it on drop.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use codecoder_protocol::{ContentItem, Message, MessageItem, Record, RecordBody, SessionId};
use codecoder_stdx::{Clock, JoinOnDrop, SystemClock, spawn_named};
use crossbeam_channel::{Receiver, Sender, TrySendError};

use crate::blob::BlobStore;
use crate::error::Result;
use crate::lock::LogLock;
use crate::projection::Projection;
use crate::store::NewSession;
use crate::trace::SessionTrace;

// Under `FsyncPolicy::Turn`, `append` hands the sync to the writer's `session-sync` thread and
// does not wait for it; syncs asked for while one is pending are merged into one. `sync()` and
// dropping the writer wait until everything written is on disk. A failed background sync is
// sticky: that `append` already returned `Ok`, so the next `append` or `sync`, and every one
// after it, returns `Error::Io` and writes nothing. The records written before the failure stay
// in the file (nothing is rolled back) but are not known to be on disk; reopen the log with
// `SessionStore::resume` to go on.
pub use codecoder_protocol::FsyncPolicy;

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

/// An open log for a writer: the file (opened for appending), its length (ending with a
/// complete line), and the lock that makes this the log's only writer.
pub(crate) struct OpenLog {
    pub(crate) file: fs_err::File,
    pub(crate) len: u64,
    pub(crate) lock: LogLock,
}

struct FileSink {
    file: fs_err::File,
    path: PathBuf,
    len: u64,
    durability: Durability,
    // Declared last: the lock is released only after the syncer (in `durability`) was joined.
    _lock: LogLock,
}

/// Who calls `sync_data`, and when.
enum Durability {
    /// `Always` (`every_record`) and `Never`: the writer's own thread, after every record or on
    /// `sync()`. `unsynced` says whether a line was written since the last sync.
    Inline { every_record: bool, unsynced: bool },
    /// `Turn`: the syncer thread, asked at turn boundaries.
    Group(Syncer),
}

/// The writer's side of the `session-sync` thread.
struct Syncer {
    /// Lines written by this writer: the written generation. Only the writer thread changes it.
    written: u64,
    /// Set once a sync failed; from then on every `append` and `sync` return it.
    failure: Option<SyncFailure>,
    shared: Arc<SyncShared>,
    /// The syncer's first failure, sent without waiting (it sends at most one).
    failures: Receiver<SyncFailure>,
    // Field order: `requests` is declared (and so dropped) before `_thread`, so the syncer sees
    // the disconnect and leaves its loop before the handle joins it.
    requests: Sender<SyncRequest>,
    // Never read: it is here to be dropped, which joins the thread.
    _thread: JoinOnDrop<()>,
}

/// The generations, shared as atomics: the writer publishes `written` before it asks for a sync,
/// and the syncer reads it just before `sync_data`, so a sync covers every line counted.
#[derive(Default)]
pub(crate) struct SyncShared {
    written: AtomicU64,
    /// Only the syncer thread stores it.
    synced: AtomicU64,
    /// Successful `sync_data` calls, to check that syncs coalesce.
    #[cfg(test)]
    syncs: AtomicU64,
    /// Held by a test to keep the syncer from syncing while requests pile up.
    #[cfg(test)]
    pub(crate) gate: std::sync::Mutex<()>,
}

enum SyncRequest {
    /// A turn boundary: make everything written so far durable.
    Sync,
    /// `sync()` or drop: the same, then answer with the outcome.
    Confirm(Sender<std::result::Result<(), SyncFailure>>),
}

/// A failed `sync_data`, kept to be reported again: `io::Error` cannot be cloned.
#[derive(Debug, Clone)]
struct SyncFailure {
    kind: io::ErrorKind,
    message: String,
}

/// The generations of a `Turn` writer, for tests.
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SyncCounts {
    /// Lines written.
    pub(crate) written: u64,
    /// The written generation the last successful sync covered.
    pub(crate) synced: u64,
    /// Successful `sync_data` calls.
    pub(crate) syncs: u64,
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
    /// A writer over an open, locked log whose records produced `trace` and `projection`.
    /// The caller guarantees the file ends with a complete line (or is empty).
    /// Under `FsyncPolicy::Turn` this starts the syncer thread (an `Err` if it cannot).
    pub(crate) fn from_parts(
        session_id: SessionId,
        file: Option<OpenLog>,
        blobs: Option<BlobStore>,
        trace: SessionTrace,
        projection: Projection,
        config: WriterConfig,
    ) -> Result<Self> {
        let sink = match file {
            Some(OpenLog { file, len, lock }) => {
                let durability = match config.fsync {
                    FsyncPolicy::Always => {
                        Durability::Inline { every_record: true, unsynced: false }
                    }
                    FsyncPolicy::Never => {
                        Durability::Inline { every_record: false, unsynced: false }
                    }
                    FsyncPolicy::Turn => Durability::Group(Syncer::spawn(&file)?),
                };
                let path = file.path().to_owned();
                Some(FileSink { file, path, len, durability, _lock: lock })
            }
            None => None,
        };
        Ok(Self {
            session_id,
            sink,
            blobs,
            trace,
            projection,
            config,
            line: Vec::with_capacity(512),
        })
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
        )?;
        writer.append(RecordBody::SessionMeta(meta))?;
        Ok(writer)
    }

    /// Validates `body`, moves large content to the blob store, writes it as the next record
    /// and returns its seq. An invalid record is refused (`Error::Trace`) and nothing is written;
    /// a failed write (`Error::Io`) leaves the file, trace and projection as they were. Under
    /// `FsyncPolicy::Always` a failed sync is a failed write (the line is taken back); under
    /// `Turn` the sync runs later on the syncer thread, and an earlier failed one is returned
    /// here as `Error::Io` before anything is written (see `FsyncPolicy::Turn`).
    pub fn append(&mut self, body: RecordBody) -> Result<u64> {
        if let Some(sink) = &mut self.sink {
            sink.check_failure()?;
        }
        let record =
            Record { seq: self.trace.last_seq() + 1, ts: self.config.clock.now_ms(), body };
        let transition = self.trace.validate(&record)?;
        // Only an accepted record may leave blobs behind. Externalizing keeps every id and role,
        // all the trace looked at, so the transition still fits the record.
        let record = Record { body: self.externalize(record.body)?, ..record };
        let boundary = matches!(
            record.body,
            RecordBody::SessionMeta(_) | RecordBody::TurnEnd { .. } | RecordBody::SessionEnd
        );
        self.write_line(&record, boundary)?;
        self.trace.commit(transition);
        let seq = record.seq;
        self.projection.apply_owned(record);
        Ok(seq)
    }

    /// Writes a record of a type this version does not know (`raw`, as another log holds it) as
    /// the next record: its `seq` and `ts` are this log's, every other field is kept. Like the
    /// loader, the trace checks only the seq; the projection does not see it. Returns its seq.
    pub(crate) fn append_unknown(&mut self, raw: &serde_json::Value) -> Result<u64> {
        if let Some(sink) = &mut self.sink {
            sink.check_failure()?;
        }
        let seq = self.trace.last_seq() + 1;
        let transition = self.trace.validate_unknown(seq)?;
        let mut record = raw.clone();
        if let serde_json::Value::Object(fields) = &mut record {
            fields.insert("seq".to_owned(), seq.into());
            fields.insert("ts".to_owned(), self.config.clock.now_ms().into());
        }
        self.write_line(&record, false)?;
        self.trace.commit(transition);
        Ok(seq)
    }

    /// Writes `record` as one line, then makes it durable as the policy says: at once under
    /// `Always` (a failed sync takes the line back, or the next append would repeat its seq),
    /// by the syncer thread under `Turn` when `boundary` (a session or turn boundary).
    fn write_line(&mut self, record: &impl serde::Serialize, boundary: bool) -> Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, record)?;
        self.line.push(b'\n');
        let Some(sink) = &mut self.sink else { return Ok(()) };
        let len_before = sink.len;
        sink.write_line(&self.line)?;
        match &mut sink.durability {
            Durability::Inline { every_record: true, .. } => {
                if let Err(err) = sink.sync() {
                    sink.truncate_to(len_before);
                    return Err(err);
                }
            }
            Durability::Inline { every_record: false, .. } => {}
            Durability::Group(syncer) => {
                if boundary {
                    syncer.request();
                }
            }
        }
        Ok(())
    }

    /// Forces what was written to disk: returns once every record appended so far is durable.
    /// Under `FsyncPolicy::Turn` this waits for the syncer thread (which syncs only if something
    /// is not yet covered), and returns a failure of an earlier background sync.
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

    /// The newest `context` record's content (see `Projection::context`).
    pub fn context(&self) -> Option<&codecoder_protocol::ContextRecord> {
        self.projection.context()
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

    /// The generations of a `Turn` writer's syncer; `None` without one.
    #[cfg(test)]
    pub(crate) fn sync_counts(&self) -> Option<SyncCounts> {
        match &self.sink.as_ref()?.durability {
            Durability::Group(syncer) => Some(SyncCounts {
                written: syncer.written,
                synced: syncer.shared.synced.load(Ordering::Acquire),
                syncs: syncer.shared.syncs.load(Ordering::Relaxed),
            }),
            Durability::Inline { .. } => None,
        }
    }

    /// What a `Turn` writer shares with its syncer; while its `gate` is held, the syncer does
    /// not sync.
    #[cfg(test)]
    pub(crate) fn sync_shared(&self) -> Option<Arc<SyncShared>> {
        match &self.sink.as_ref()?.durability {
            Durability::Group(syncer) => Some(Arc::clone(&syncer.shared)),
            Durability::Inline { .. } => None,
        }
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
        match &mut self.durability {
            Durability::Inline { unsynced, .. } => *unsynced = true,
            Durability::Group(syncer) => syncer.written += 1,
        }
        Ok(())
    }

    fn check_failure(&mut self) -> Result<()> {
        match &mut self.durability {
            Durability::Inline { .. } => Ok(()),
            Durability::Group(syncer) => syncer.check_failure(),
        }
    }

    fn truncate_to(&mut self, len: u64) {
        if self.file.file().set_len(len).is_ok() {
            self.len = len;
        }
    }

    fn sync(&mut self) -> Result<()> {
        match &mut self.durability {
            Durability::Inline { unsynced, .. } => {
                if *unsynced {
                    self.file.sync_data()?;
                    *unsynced = false;
                }
                Ok(())
            }
            Durability::Group(syncer) => syncer.confirm(),
        }
    }
}

impl Syncer {
    /// Starts the `session-sync` thread over a clone of `file` (the same open file, so its
    /// `sync_data` covers what the writer wrote through the original).
    fn spawn(file: &fs_err::File) -> Result<Self> {
        let file = file.try_clone()?;
        let shared = Arc::new(SyncShared::default());
        // One slot: a queued request covers every line written before the syncer takes it, so
        // a second one would add nothing (the writer drops it: coalescing).
        let (requests, request_rx) = crossbeam_channel::bounded(1);
        let (failure_tx, failures) = crossbeam_channel::bounded(1);
        let thread = {
            let shared = Arc::clone(&shared);
            spawn_named("session-sync", move || {
                run_syncer(&file, &shared, &request_rx, &failure_tx)
            })?
        };
        Ok(Self { written: 0, failure: None, shared, failures, requests, _thread: thread })
    }

    /// Asks for a sync of everything written so far, without waiting. If a request is already
    /// queued, it will cover this one too.
    fn request(&mut self) {
        self.shared.written.store(self.written, Ordering::Release);
        match self.requests.try_send(SyncRequest::Sync) {
            Ok(()) | Err(TrySendError::Full(_)) => {}
            // The thread is gone (it panicked): nothing will sync from now on.
            Err(TrySendError::Disconnected(_)) => self.failure = Some(SyncFailure::stopped()),
        }
    }

    /// The sticky failure, if the syncer reported one.
    fn check_failure(&mut self) -> Result<()> {
        if self.failure.is_none()
            && let Ok(failure) = self.failures.try_recv()
        {
            self.failure = Some(failure);
        }
        match &self.failure {
            Some(failure) => Err(failure.to_error()),
            None => Ok(()),
        }
    }

    /// Waits until everything written so far is durable.
    fn confirm(&mut self) -> Result<()> {
        self.check_failure()?;
        if self.shared.synced.load(Ordering::Acquire) == self.written {
            return Ok(());
        }
        self.shared.written.store(self.written, Ordering::Release);
        // A one-shot reply channel: the syncer answers after its sync (a blocking send only
        // waits for a queued `Sync` to be taken).
        let (reply_tx, reply_rx) = crossbeam_channel::bounded(1);
        let outcome = match self.requests.send(SyncRequest::Confirm(reply_tx)) {
            Ok(()) => reply_rx.recv().unwrap_or_else(|_| Err(SyncFailure::stopped())),
            Err(_) => Err(SyncFailure::stopped()),
        };
        match outcome {
            Ok(()) => Ok(()),
            Err(failure) => {
                let err = failure.to_error();
                self.failure = Some(failure);
                Err(err)
            }
        }
    }
}

/// The syncer thread: for each request, syncs unless the last sync already covers the written
/// generation. After a failure it syncs no more (what that sync should have made durable may
/// be lost whatever a later sync says) and answers every `Confirm` with the failure. It ends
/// when the writer drops its sender. A panic here ends the thread; the writer sees the
/// disconnect and reports it as a failure.
fn run_syncer(
    file: &fs_err::File,
    shared: &SyncShared,
    requests: &Receiver<SyncRequest>,
    failures: &Sender<SyncFailure>,
) {
    let mut failure: Option<SyncFailure> = None;
    for request in requests {
        if failure.is_none() {
            let target = shared.written.load(Ordering::Acquire);
            if shared.synced.load(Ordering::Relaxed) < target {
                #[cfg(test)]
                let _gate = shared.gate.lock();
                match file.sync_data() {
                    Ok(()) => {
                        shared.synced.store(target, Ordering::Release);
                        #[cfg(test)]
                        shared.syncs.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(err) => {
                        let failed = SyncFailure { kind: err.kind(), message: err.to_string() };
                        // The slot is empty: this is the only failure ever sent.
                        let _ = failures.try_send(failed.clone());
                        failure = Some(failed);
                    }
                }
            }
        }
        match request {
            SyncRequest::Sync => {}
            SyncRequest::Confirm(reply) => {
                let outcome = match &failure {
                    Some(failed) => Err(failed.clone()),
                    None => Ok(()),
                };
                // The writer waits for this reply; it is gone only if it panicked meanwhile.
                let _ = reply.send(outcome);
            }
        }
    }
}

impl SyncFailure {
    fn stopped() -> Self {
        Self { kind: io::ErrorKind::Other, message: "the session-sync thread stopped".to_owned() }
    }

    fn to_error(&self) -> crate::Error {
        let message = &self.message;
        io::Error::new(
            self.kind,
            format!(
                "{message} (a turn-boundary sync failed: records written before it may not be on \
                 disk, and this writer takes no more)"
            ),
        )
        .into()
    }
}

impl Drop for SessionWriter {
    fn drop(&mut self) {
        let _ = self.sync();
    }
}
