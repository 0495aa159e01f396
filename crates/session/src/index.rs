//! `Index`: a SQLite cache of session summaries for `sessions list` and `resume --last`.
//!
//! The JSONL files are the truth. `refresh` compares each file's size and modification time with
//! what the index saw, re-reads only the files that changed, and forgets rows whose file is gone;
//! a missing or unreadable index file is simply rebuilt. Invariant: every row describes a file
//! as it was when its size and mtime were recorded.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use codecoder_protocol::{MessageItem, RecordBody};
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;
use crate::load::load;
use crate::store::SessionStore;

const SCHEMA_VERSION: i64 = 1;
const TITLE_CHARS: usize = 80;

/// One session as `sessions list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    /// The session id.
    pub id: String,
    /// The log file.
    pub path: PathBuf,
    /// Its working directory.
    pub cwd: String,
    /// The first line of the first user message.
    pub title: String,
    /// The model.
    pub model: String,
    /// The provider.
    pub provider: String,
    /// `ts` of the first record (Unix ms).
    pub created_ms: u64,
    /// `ts` of the last record (Unix ms).
    pub updated_ms: u64,
    /// The session it was forked from, or the parent of a subagent.
    pub parent: Option<String>,
    /// Complete records in the log.
    pub record_count: u64,
    /// Why the log could not be read, when it could not.
    pub problem: Option<String>,
}

/// What a refresh did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RefreshStats {
    /// Log files found.
    pub files: usize,
    /// Rows (re)written.
    pub updated: usize,
    /// Rows dropped because their file is gone.
    pub removed: usize,
}

/// The SQLite index of a store.
#[derive(Debug)]
pub struct Index {
    conn: Connection,
}

impl Index {
    /// Opens (or creates) the index of `store`. A corrupt or outdated index file is replaced.
    pub fn open(store: &SessionStore) -> Result<Self> {
        fs_err::create_dir_all(store.sessions_dir())?;
        let path = store.index_path();
        match Self::open_at(&path) {
            Ok(index) => Ok(index),
            Err(_) => {
                // The index is a cache: start over rather than fail.
                let _ = fs_err::remove_file(&path);
                Self::open_at(&path)
            }
        }
    }

    fn open_at(path: &Path) -> Result<Self> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
        if version != SCHEMA_VERSION {
            conn.execute_batch(&format!(
                "DROP TABLE IF EXISTS sessions;
                 CREATE TABLE sessions (
                     id TEXT PRIMARY KEY,
                     path TEXT NOT NULL,
                     cwd TEXT NOT NULL,
                     title TEXT NOT NULL,
                     model TEXT NOT NULL,
                     provider TEXT NOT NULL,
                     created_ms INTEGER NOT NULL,
                     updated_ms INTEGER NOT NULL,
                     parent TEXT,
                     record_count INTEGER NOT NULL,
                     problem TEXT,
                     file_size INTEGER NOT NULL,
                     file_mtime_ns INTEGER NOT NULL
                 );
                 CREATE INDEX sessions_cwd ON sessions (cwd, updated_ms);
                 PRAGMA user_version = {SCHEMA_VERSION};"
            ))?;
        }
        Ok(Self { conn })
    }

    /// Brings the index in line with the files: re-reads changed ones, drops vanished ones.
    pub fn refresh(&mut self, store: &SessionStore) -> Result<RefreshStats> {
        let files = store.session_files()?;
        let mut stats = RefreshStats { files: files.len(), ..RefreshStats::default() };
        let tx = self.conn.transaction()?;
        let mut seen = std::collections::HashSet::new();
        for (id, path) in &files {
            let id = id.to_string();
            let metadata = fs_err::metadata(path)?;
            let size = i64::try_from(metadata.len()).unwrap_or(i64::MAX);
            let mtime = metadata
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
            seen.insert(id.clone());
            let known: Option<(i64, i64)> = tx
                .query_row(
                    "SELECT file_size, file_mtime_ns FROM sessions WHERE id = ?1",
                    [&id],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .optional()?;
            if known == Some((size, mtime)) {
                continue;
            }
            let summary = summarize(&id, path);
            tx.execute(
                "INSERT OR REPLACE INTO sessions (id, path, cwd, title, model, provider,
                     created_ms, updated_ms, parent, record_count, problem, file_size,
                     file_mtime_ns)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                params![
                    summary.id,
                    summary.path.to_string_lossy(),
                    summary.cwd,
                    summary.title,
                    summary.model,
                    summary.provider,
                    to_sql(summary.created_ms),
                    to_sql(summary.updated_ms),
                    summary.parent,
                    to_sql(summary.record_count),
                    summary.problem,
                    size,
                    mtime,
                ],
            )?;
            stats.updated += 1;
        }
        let indexed: Vec<String> = {
            let mut stmt = tx.prepare("SELECT id FROM sessions")?;
            let rows = stmt.query_map([], |row| row.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        for id in indexed.iter().filter(|id| !seen.contains(*id)) {
            tx.execute("DELETE FROM sessions WHERE id = ?1", [id])?;
            stats.removed += 1;
        }
        tx.commit()?;
        Ok(stats)
    }

    /// Forgets everything and reads every file again.
    pub fn rebuild(&mut self, store: &SessionStore) -> Result<RefreshStats> {
        self.conn.execute("DELETE FROM sessions", [])?;
        self.refresh(store)
    }

    /// Sessions, newest first, optionally only those run in `cwd`.
    pub fn list(&self, cwd: Option<&str>) -> Result<Vec<SessionSummary>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, path, cwd, title, model, provider, created_ms, updated_ms, parent,
                    record_count, problem
             FROM sessions WHERE ?1 IS NULL OR cwd = ?1
             ORDER BY updated_ms DESC, id DESC",
        )?;
        let rows = stmt.query_map([cwd], |row| {
            Ok(SessionSummary {
                id: row.get(0)?,
                path: PathBuf::from(row.get::<_, String>(1)?),
                cwd: row.get(2)?,
                title: row.get(3)?,
                model: row.get(4)?,
                provider: row.get(5)?,
                created_ms: from_sql(row.get(6)?),
                updated_ms: from_sql(row.get(7)?),
                parent: row.get(8)?,
                record_count: from_sql(row.get(9)?),
                problem: row.get(10)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

fn to_sql(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn from_sql(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// Reads a log into a summary; an unreadable log still gets a row that says what is wrong.
fn summarize(id: &str, path: &Path) -> SessionSummary {
    let mut summary = SessionSummary {
        id: id.to_owned(),
        path: path.to_owned(),
        cwd: String::new(),
        title: String::new(),
        model: String::new(),
        provider: String::new(),
        created_ms: 0,
        updated_ms: 0,
        parent: None,
        record_count: 0,
        problem: None,
    };
    let loaded = match load(path) {
        Ok(loaded) => loaded,
        Err(err) => {
            summary.problem = Some(err.to_string());
            return summary;
        }
    };
    summary.cwd.clone_from(&loaded.meta.cwd);
    summary.model.clone_from(&loaded.meta.model);
    summary.provider.clone_from(&loaded.meta.provider);
    summary.parent = loaded
        .meta
        .forked_from
        .as_ref()
        .map(|fork| fork.session_id.to_string())
        .or_else(|| loaded.meta.parent.as_ref().map(|parent| parent.session_id.to_string()));
    summary.record_count = loaded.entries.len() as u64;
    let mut records = loaded.records();
    if let Some(first) = records.next() {
        summary.created_ms = first.ts;
        summary.updated_ms = first.ts;
    }
    for record in loaded.records() {
        summary.updated_ms = summary.updated_ms.max(record.ts);
        if summary.title.is_empty()
            && let RecordBody::UserMessage { message } = &record.body
        {
            let text = message.items.iter().find_map(|item| match item {
                MessageItem::Text { text } => Some(text.as_str()),
                _ => None,
            });
            let first_line =
                text.unwrap_or("").lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            summary.title = first_line.trim().chars().take(TITLE_CHARS).collect();
        }
    }
    summary
}
