//! `SessionStore`: where logs live (`$CODECODER_HOME/sessions/<id>.jsonl`), and the operations
//! on whole sessions: create, find, resume (load + repair + append), fork, remove.
//!
//! Invariant: a parent's file is never opened for writing by `fork`; `resume` only truncates a
//! torn tail (bytes of no record) and appends.
//!
//! Invariant (one writer): `create`, `resume` and `fork` hand out writers that hold the log's
//! lock; `resume` takes it before it reads the log, so it never truncates or repairs a log that
//! another writer is appending to; `remove` takes it too, so a log in use is not deleted. `fork`
//! only reads its parent and needs no lock on it: it copies the complete lines it sees (a line
//! being written is a torn tail and is left out).

use std::fs::OpenOptions;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use codecoder_protocol::{
    FORMAT_VERSION, ForkOrigin, ParentLink, RecordBody, SessionId, SessionMeta,
};

use crate::blob::BlobStore;
use crate::error::{Error, Result};
use crate::load::{CloseReason, Entry, LoadedSession, ReadLog, closing_records, load, read};
use crate::lock::LogLock;
use crate::projection::Projection;
use crate::trace::SessionTrace;
use crate::writer::{OpenLog, SessionWriter, WriterConfig};

pub(crate) const LOG_EXTENSION: &str = "jsonl";

/// What a new session records about itself.
#[derive(Debug, Clone)]
pub struct NewSession {
    /// The working directory.
    pub cwd: String,
    /// The model id.
    pub model: String,
    /// The provider id.
    pub provider: String,
    /// Hash of the effective config.
    pub config_hash: Option<String>,
    /// For a subagent: the parent session and call.
    pub parent: Option<ParentLink>,
}

impl NewSession {
    /// The `session_meta` of a fresh session with a new id.
    pub fn into_meta(self) -> SessionMeta {
        SessionMeta {
            session_id: SessionId::new(),
            format_version: FORMAT_VERSION,
            cwd: self.cwd,
            model: self.model,
            provider: self.provider,
            config_hash: self.config_hash,
            cli_version: env!("CARGO_PKG_VERSION").to_owned(),
            forked_from: None,
            parent: self.parent,
        }
    }
}

/// The sessions under one codecoder home.
#[derive(Debug, Clone)]
pub struct SessionStore {
    home: PathBuf,
}

impl SessionStore {
    /// The store under `home` (`$CODECODER_HOME`).
    pub fn new(home: impl Into<PathBuf>) -> Self {
        Self { home: home.into() }
    }

    /// The codecoder home.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Creates the sessions directory, private to its user (0700, and so are the parents it
    /// creates, the home among them): it holds every transcript, tool output and the index. One
    /// that exists is left as it is.
    pub(crate) fn create_sessions_dir(&self) -> Result<()> {
        let dir = self.sessions_dir();
        if dir.is_dir() {
            return Ok(());
        }
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir).map_err(|e| {
            std::io::Error::new(e.kind(), format!("creating {}: {e}", dir.display())).into()
        })
    }

    /// The directory of the logs.
    pub fn sessions_dir(&self) -> PathBuf {
        self.home.join("sessions")
    }

    /// The blob store beside the logs.
    pub fn blobs(&self) -> BlobStore {
        BlobStore::new(self.sessions_dir().join("blobs"))
    }

    /// The SQLite index file, in a directory of its own (see `Index`).
    pub fn index_path(&self) -> PathBuf {
        self.sessions_dir().join("index").join("sessions.sqlite")
    }

    /// Where the log of `id` lives.
    pub fn path_of(&self, id: SessionId) -> PathBuf {
        self.sessions_dir().join(format!("{id}.{LOG_EXTENSION}"))
    }

    /// Starts a new session: creates its log and writes `session_meta`.
    pub fn create(&self, new: NewSession, config: WriterConfig) -> Result<SessionWriter> {
        self.create_with_meta(new.into_meta(), config)
    }

    /// Starts a new session with the id `id` chosen by the caller (Claude Code's
    /// `--session-id`); fails when a log of that id exists.
    pub fn create_with_id(
        &self,
        new: NewSession,
        id: SessionId,
        config: WriterConfig,
    ) -> Result<SessionWriter> {
        let mut meta = new.into_meta();
        meta.session_id = id;
        self.create_with_meta(meta, config)
    }

    fn create_with_meta(&self, meta: SessionMeta, config: WriterConfig) -> Result<SessionWriter> {
        self.create_sessions_dir()?;
        let path = self.path_of(meta.session_id);
        // A transcript is its user's alone (commands, file contents, answers).
        let file = OpenOptions::new().append(true).create_new(true).mode(0o600).open(&path);
        let file = file.map_err(|e| {
            std::io::Error::new(e.kind(), format!("creating {}: {e}", path.display()))
        })?;
        let lock = LogLock::acquire(&file, &path)?;
        let file = fs_err::File::from_parts(file, &path);
        let mut writer = SessionWriter::from_parts(
            meta.session_id,
            Some(OpenLog { file, len: 0, lock }),
            Some(self.blobs()),
            SessionTrace::new(),
            Projection::new(),
            config,
        )?;
        writer.append(RecordBody::SessionMeta(meta))?;
        Ok(writer)
    }

    /// Every log file in the store, with its session id, in id (creation) order.
    pub fn session_files(&self) -> Result<Vec<(SessionId, PathBuf)>> {
        let dir = self.sessions_dir();
        let entries = match fs_err::read_dir(&dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(err.into()),
        };
        let mut out = Vec::new();
        for entry in entries {
            let path = entry?.path();
            if path.extension().and_then(|e| e.to_str()) != Some(LOG_EXTENSION) {
                continue;
            }
            let Some(id) = path.file_stem().and_then(|s| s.to_str()).and_then(|s| s.parse().ok())
            else {
                continue;
            };
            out.push((id, path));
        }
        out.sort();
        Ok(out)
    }

    /// The log a user means: a path to a file, a full session id, or a unique id prefix.
    pub fn find(&self, query: &str) -> Result<PathBuf> {
        let as_path = Path::new(query);
        if query.ends_with(&format!(".{LOG_EXTENSION}")) || query.contains('/') {
            if as_path.is_file() {
                return Ok(as_path.to_owned());
            }
            return Err(Error::NotFound { query: query.to_owned() });
        }
        let query_lower = query.to_ascii_lowercase();
        let matches: Vec<PathBuf> = self
            .session_files()?
            .into_iter()
            .filter(|(id, _)| id.to_string().starts_with(&query_lower))
            .map(|(_, path)| path)
            .collect();
        match matches.len() {
            0 => Err(Error::NotFound { query: query.to_owned() }),
            1 => Ok(matches.into_iter().next().unwrap_or_default()),
            count => Err(Error::Ambiguous { query: query.to_owned(), count }),
        }
    }

    /// Opens the log at `path` to continue it: locks it (`Error::Locked` when another writer
    /// holds it), loads it, drops a torn tail, appends the records that close what a crash left
    /// open, and returns the loaded log (as it was) and a writer.
    pub fn resume(
        &self,
        path: &Path,
        config: WriterConfig,
    ) -> Result<(LoadedSession, SessionWriter)> {
        let mut entries = Vec::new();
        let (read, writer) = self.continue_log(path, config, |entry, projection| {
            if let Entry::Record(record) = &entry {
                projection.apply(record);
            }
            entries.push(entry);
        })?;
        Ok((read.into_loaded(path, entries), writer))
    }

    /// `resume` for a caller that only writes on: the records are folded into the writer's
    /// history as they are read, none is kept.
    pub fn resume_writer(&self, path: &Path, config: WriterConfig) -> Result<SessionWriter> {
        let (_, writer) = self.continue_log(path, config, |entry, projection| {
            if let Entry::Record(record) = entry {
                projection.apply_owned(record);
            }
        })?;
        Ok(writer)
    }

    /// Locks, reads (each entry to `each`, with the projection to fold it into), truncates a
    /// torn tail and repairs: what `resume` and `resume_writer` share.
    fn continue_log(
        &self,
        path: &Path,
        config: WriterConfig,
        mut each: impl FnMut(Entry, &mut Projection),
    ) -> Result<(ReadLog, SessionWriter)> {
        let file = OpenOptions::new().append(true).open(path).map_err(|e| {
            std::io::Error::new(e.kind(), format!("opening {}: {e}", path.display()))
        })?;
        // Before reading: what is read, and the tail truncated, must be this writer's alone.
        let lock = LogLock::acquire(&file, path)?;
        let mut projection = Projection::new();
        let read = read(path, |entry| each(entry, &mut projection))?;
        let file_len = file.metadata()?.len();
        let valid_len = read.torn_tail.map_or(file_len, |torn| torn.offset);
        if valid_len < file_len {
            file.set_len(valid_len)?;
        }
        let file = fs_err::File::from_parts(file, path);
        let mut writer = SessionWriter::from_parts(
            read.meta.session_id,
            Some(OpenLog { file, len: valid_len, lock }),
            Some(self.blobs()),
            read.trace.clone(),
            projection,
            config,
        )?;
        for body in closing_records(&read.trace, CloseReason::Crash) {
            writer.append(body)?;
        }
        Ok((read, writer))
    }

    /// Branches the session `query` into a new one holding its records up to and including
    /// `at` (default: all), with whatever that leaves open closed. The parent is not modified,
    /// and may be in use by another writer. Records of types this version does not know are
    /// copied as written, renumbered like the others.
    pub fn fork(
        &self,
        query: &str,
        at: Option<u64>,
        config: WriterConfig,
    ) -> Result<SessionWriter> {
        let parent = load(&self.find(query)?)?;
        let last = parent.trace.last_seq();
        let at = at.unwrap_or(last);
        let entry_seq = |entry: &Entry| match entry {
            Entry::Record(record) => record.seq,
            Entry::Unknown(unknown) => unknown.seq,
        };
        let exists = parent.entries.iter().any(|entry| entry_seq(entry) == at);
        if !exists {
            return Err(Error::NoSuchSeq { session: parent.meta.session_id.to_string(), seq: at });
        }
        let meta = SessionMeta {
            session_id: SessionId::new(),
            forked_from: Some(ForkOrigin { session_id: parent.meta.session_id, seq: at }),
            cli_version: env!("CARGO_PKG_VERSION").to_owned(),
            ..parent.meta.clone()
        };
        let mut writer = self.create_with_meta(meta, config)?;
        for entry in parent.entries.iter().take_while(|entry| entry_seq(entry) <= at) {
            match entry {
                Entry::Record(record) => match &record.body {
                    RecordBody::SessionMeta(_) | RecordBody::SessionEnd => {}
                    body => {
                        writer.append(body.clone())?;
                    }
                },
                Entry::Unknown(unknown) => {
                    writer.append_unknown(&unknown.raw)?;
                }
            }
        }
        for body in closing_records(writer.trace(), CloseReason::Crash) {
            writer.append(body)?;
        }
        writer.sync()?;
        Ok(writer)
    }

    /// Deletes a session's log, unless another writer holds it (`Error::Locked`). Blobs stay:
    /// other sessions may share them.
    pub fn remove(&self, query: &str) -> Result<PathBuf> {
        let path = self.find(query)?;
        let file = OpenOptions::new().read(true).open(&path).map_err(|e| {
            std::io::Error::new(e.kind(), format!("opening {}: {e}", path.display()))
        })?;
        // Held while the file goes: a writer that opened it before cannot lock it afterwards
        // (the lock checks that the path still names its file).
        let _lock = LogLock::acquire(&file, &path)?;
        fs_err::remove_file(&path)?;
        Ok(path)
    }
}
