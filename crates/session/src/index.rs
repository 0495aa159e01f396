//! `Index`: a SQLite cache of session summaries for `sessions list` and `resume --last`.
//!
//! The JSONL files are the truth. `refresh` compares each file's size and modification time with
//! what the index saw, re-reads only the files that changed, and forgets rows whose file is gone.
//! Invariant: every row describes a file as it was when its size and mtime were recorded (the
//! file is looked at before it is read, so a row can only be older than its size says, and the
//! next refresh reads it again).
//!
//! Invariant: the index file never makes a command fail. A corrupt, unreadable or unwritable
//! index is replaced by a new one rebuilt from the logs; when no file can be used (or another
//! process keeps it busy past the timeout) the index lives in memory for this process. Each
//! fallback leaves a warning for the caller to show (`warnings`). Only the logs' directory
//! failing is an error.
//!
//! Concurrency: several processes share the file. It is in WAL mode (readers and the one writer
//! do not block each other) with a busy timeout. A refresh reads the changed logs outside any
//! transaction, then writes in one `IMMEDIATE` transaction (it waits for the write lock instead
//! of failing to upgrade a read) after looking at the table again; it deletes only rows whose
//! file is gone. So every refresh leaves a row for every file it listed, whatever other
//! processes did meanwhile, and a rebuild never shows an empty table to anyone. A refresh that
//! finds every file as its row recorded it writes nothing and takes no lock.
//!
//! Quick refresh: the logs' directory changes (its mtime moves) whenever a log is created,
//! removed or renamed, and whenever a writer takes or lets go of a log's lock (the `<id>.lock`
//! sidecar is created and removed), and a log is only appended to while its sidecar exists. So a
//! full refresh records the directory's mtime and the sessions whose sidecar it saw; the next
//! refresh that finds the same mtime looks only at those sessions' logs (`stat` each), not at the
//! other thousands. The mtime is recorded only once it is a second old, so a change within the
//! same clock tick as the recorded one cannot go unseen. The index lives in a directory of its
//! own: SQLite creating and removing its WAL files must not move the logs' directory. A log
//! edited in place by hand, with no writer's lock, is seen at the next change to the directory
//! or at `sessions reindex`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use codecoder_protocol::{MessageItem, RecordBody};
use rusqlite::{Connection, ErrorCode, OptionalExtension, TransactionBehavior, params};

use crate::error::{Error, Result};
use crate::load::load;
use crate::store::SessionStore;

const SCHEMA_VERSION: i64 = 2;
const TITLE_CHARS: usize = 80;
/// How long a process waits for another one's write to the index before it gives up on the file.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// SQLite's companions of a WAL database, removed with it when it is replaced.
const COMPANION_SUFFIXES: [&str; 2] = ["-wal", "-shm"];
/// Where the index lived before it had a directory of its own (inside the logs' directory).
const LEGACY_INDEX: &str = "index.sqlite";
/// How old the logs' directory's mtime must be before a quick refresh may trust it: past any
/// clock tick a later change could share with it.
const SETTLED: Duration = Duration::from_secs(1);

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
    /// The index file.
    path: PathBuf,
    /// Whether `conn` is the in-memory stand-in.
    in_memory: bool,
    /// What went wrong with the file and how it was worked around, oldest first.
    warnings: Vec<String>,
}

impl Index {
    /// Opens (or creates) the index of `store`. An outdated index file is migrated; a corrupt or
    /// unusable one is replaced, or stood in for by an index in memory, with a warning (see
    /// `warnings`). Fails only when the sessions directory cannot be created.
    pub fn open(store: &SessionStore) -> Result<Self> {
        let path = store.index_path();
        store.create_sessions_dir()?;
        fs_err::create_dir_all(path.parent().unwrap_or(&store.sessions_dir()))?;
        remove_database(&store.sessions_dir().join(LEGACY_INDEX));
        match open_file(&path) {
            Ok(conn) => Ok(Self { conn, path, in_memory: false, warnings: Vec::new() }),
            Err(err) => {
                let (conn, in_memory, warning) = fallback(&path, &err)?;
                Ok(Self { conn, path, in_memory, warnings: vec![warning] })
            }
        }
    }

    /// What went wrong with the index file since it was opened, and what was done instead
    /// ("… rebuilt it from the logs", "… using an index in memory for this run"). Empty when
    /// all is well.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Brings the index in line with the files: re-reads changed ones, drops vanished ones.
    pub fn refresh(&mut self, store: &SessionStore) -> Result<RefreshStats> {
        self.refresh_or_rebuild(store, false)
    }

    /// Reads every file again and rewrites its row, dropping rows whose file is gone (in one
    /// transaction: a concurrent reader never sees the index emptied, and a log another process
    /// adds meanwhile keeps its row).
    pub fn rebuild(&mut self, store: &SessionStore) -> Result<RefreshStats> {
        self.refresh_or_rebuild(store, true)
    }

    fn refresh_or_rebuild(&mut self, store: &SessionStore, rebuild: bool) -> Result<RefreshStats> {
        let attempt = |conn: &mut Connection| -> Result<RefreshStats> {
            if !rebuild && let Some(stats) = quick_refresh(conn, store)? {
                return Ok(stats);
            }
            let listing = Listing::read(store)?;
            let stats = refresh_rows(conn, &listing, rebuild)?;
            save_scan(conn, &listing)?;
            Ok(stats)
        };
        match attempt(&mut self.conn) {
            Ok(stats) => Ok(stats),
            Err(Error::Index(err)) => {
                self.recover(err)?;
                attempt(&mut self.conn)
            }
            Err(err) => Err(err),
        }
    }

    /// Sessions, newest first, optionally only those run in `cwd`.
    pub fn list(&self, cwd: Option<&str>) -> Result<Vec<SessionSummary>> {
        self.list_newest(cwd, None)
    }

    /// How many sessions there are, optionally only those run in `cwd`.
    pub fn count(&self, cwd: Option<&str>) -> Result<usize> {
        let count: i64 = self.conn.query_row(
            "SELECT count(*) FROM sessions WHERE ?1 IS NULL OR cwd = ?1",
            [cwd],
            |row| row.get(0),
        )?;
        Ok(usize::try_from(count).unwrap_or(0))
    }

    /// The newest `limit` sessions (all when `None`), newest first, optionally only those run
    /// in `cwd`.
    pub fn list_newest(
        &self,
        cwd: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<SessionSummary>> {
        let limit = limit.map_or(-1, |limit| i64::try_from(limit).unwrap_or(i64::MAX));
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, path, cwd, title, model, provider, created_ms, updated_ms, parent,
                    record_count, problem
             FROM sessions WHERE ?1 IS NULL OR cwd = ?1
             ORDER BY updated_ms DESC, id DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![cwd, limit], |row| {
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

    /// After `err` from the index, switches to what `fallback` offers. An error of the
    /// in-memory stand-in itself is returned: there is nothing left to fall back to.
    fn recover(&mut self, err: rusqlite::Error) -> Result<()> {
        if self.in_memory {
            return Err(err.into());
        }
        let (conn, in_memory, warning) = fallback(&self.path, &err)?;
        self.conn = conn;
        self.in_memory = in_memory;
        self.warnings.push(warning);
        Ok(())
    }
}

/// What replaces the index file at `path` after `err`: a new file, or, when the file is only busy
/// (another process kept it past the timeout) or cannot be replaced, an empty index in memory.
/// Returns the connection, whether it is in memory, and the warning that says so. The caller
/// fills the new index by refreshing.
fn fallback(path: &Path, err: &rusqlite::Error) -> Result<(Connection, bool, String)> {
    let shown = path.display();
    let busy = matches!(
        err.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    );
    let warning = if busy {
        // Another process is using the file: nothing is wrong with it, it is just not ours now.
        format!("session index {shown} is busy ({err}); using an index in memory for this run")
    } else {
        match replace_file(path) {
            Ok(conn) => {
                let warning =
                    format!("session index {shown} was unusable ({err}); rebuilt it from the logs");
                return Ok((conn, false, warning));
            }
            Err(replace_err) => format!(
                "session index {shown} is unusable ({err}) and could not be replaced \
                 ({replace_err}); using an index in memory for this run"
            ),
        }
    };
    let conn = Connection::open_in_memory()?;
    init_schema(&conn)?;
    Ok((conn, true, warning))
}

/// Opens the index file, switching it to WAL and creating or migrating its table.
fn open_file(path: &Path) -> rusqlite::Result<Connection> {
    // Switching a fresh file to WAL needs it to itself, and SQLite answers "busy" at once
    // rather than through the busy handler while another process is creating the same file:
    // try again within the busy timeout.
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match open_file_once(path) {
            Err(err) if is_busy(&err) && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(
                    5 + u64::from(std::process::id() % 20),
                ));
            }
            outcome => return outcome,
        }
    }
}

fn open_file_once(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Stored in the file: set once, a no-op afterwards. It also reads the header, so a file that
    // is not a database fails here.
    let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
    init_schema(&conn)?;
    Ok(conn)
}

fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Removes the index file (and its WAL companions) and opens a new one.
fn replace_file(path: &Path) -> Result<Connection> {
    match fs_err::remove_file(path) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(err.into()),
    }
    remove_database(path);
    Ok(open_file(path)?)
}

/// Removes a database file and its WAL companions, as far as they exist and can be removed.
fn remove_database(path: &Path) {
    let _ = fs_err::remove_file(path);
    for suffix in COMPANION_SUFFIXES {
        let mut companion = path.as_os_str().to_owned();
        companion.push(suffix);
        let _ = fs_err::remove_file(PathBuf::from(companion));
    }
}

/// Creates the table unless the schema is current. The check is repeated inside a write
/// transaction, so two processes creating a fresh index do not drop each other's table.
fn init_schema(conn: &Connection) -> rusqlite::Result<()> {
    let version = |conn: &Connection| -> rusqlite::Result<i64> {
        conn.query_row("PRAGMA user_version", [], |row| row.get(0))
    };
    if version(conn)? == SCHEMA_VERSION {
        return Ok(());
    }
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let outcome = (|| {
        if version(conn)? != SCHEMA_VERSION {
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
                 CREATE INDEX sessions_updated ON sessions (updated_ms, id);
                 DROP TABLE IF EXISTS scan;
                 CREATE TABLE scan (
                     only INTEGER PRIMARY KEY CHECK (only = 0),
                     dir_mtime_ns INTEGER NOT NULL,
                     locked TEXT NOT NULL
                 );
                 PRAGMA user_version = {SCHEMA_VERSION};"
            ))?;
        }
        conn.execute_batch("COMMIT")
    })();
    if outcome.is_err() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    outcome
}

/// A file's size and modification time (ns), as the index records them.
type Stamp = (i64, i64);

/// A summary to write, with the stamp of the file it was read from.
struct Row {
    summary: SessionSummary,
    stamp: Stamp,
}

/// The logs' directory as a full refresh lists it.
struct Listing {
    /// The directory's mtime (ns), read before its entries; `None` when there is no directory.
    dir_mtime: Option<i64>,
    /// When the directory was looked at.
    listed_at: std::time::SystemTime,
    /// Every log, in id order, with its stamp as the directory entry gave it.
    files: Vec<(String, PathBuf, Stamp)>,
    /// The sessions whose lock sidecar exists: their logs may grow without the directory
    /// changing.
    locked: Vec<String>,
}

impl Listing {
    fn read(store: &SessionStore) -> Result<Self> {
        let dir = store.sessions_dir();
        let listed_at = std::time::SystemTime::now();
        let mut listing =
            Self { dir_mtime: None, listed_at, files: Vec::new(), locked: Vec::new() };
        // The mtime first: a change after it moves it, whatever the listing below saw.
        let Some(dir_stamp) = stamp(&dir)? else { return Ok(listing) };
        listing.dir_mtime = Some(dir_stamp.1);
        let entries = match fs_err::read_dir(&dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(listing),
            Err(err) => return Err(err.into()),
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            let Some((stem, extension)) = name.to_str().and_then(|name| name.rsplit_once('.'))
            else {
                continue;
            };
            let Ok(id) = stem.parse::<codecoder_protocol::SessionId>() else { continue };
            if extension == crate::lock::SIDECAR_EXTENSION {
                listing.locked.push(id.to_string());
                continue;
            }
            if extension != crate::store::LOG_EXTENSION {
                continue;
            }
            // Relative to the directory just read: no walk of the whole path per log. A link
            // is followed, as opening the log would.
            let metadata = match entry.metadata() {
                Ok(metadata) if !metadata.file_type().is_symlink() => Some(metadata),
                Ok(_) => None,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
                Err(err) => return Err(err.into()),
            };
            let path = entry.path();
            let stamp = match metadata {
                Some(metadata) => stamp_of(&metadata),
                None => match stamp(&path)? {
                    Some(stamp) => stamp,
                    None => continue,
                },
            };
            listing.files.push((id.to_string(), path, stamp));
        }
        listing.files.sort();
        listing.locked.sort();
        Ok(listing)
    }

    /// The directory's mtime, when it is old enough for a quick refresh to trust (`SETTLED`).
    fn settled_mtime(&self) -> Option<i64> {
        let mtime = self.dir_mtime?;
        let listed_ns = self.listed_at.duration_since(UNIX_EPOCH).ok()?.as_nanos();
        let settled =
            i128::try_from(listed_ns).ok()? - i128::from(mtime) >= SETTLED.as_nanos() as i128;
        settled.then_some(mtime)
    }
}

/// A refresh that trusts the last full one: when the logs' directory has not changed since, only
/// the logs of sessions that held their lock then are looked at. `None` when it cannot answer
/// (the directory changed, or no full refresh recorded it): a full refresh is needed.
fn quick_refresh(conn: &mut Connection, store: &SessionStore) -> Result<Option<RefreshStats>> {
    let dir = store.sessions_dir();
    let saved = saved_scan(conn)?;
    let Some((saved_mtime, locked)) = saved else { return Ok(None) };
    if stamp(&dir)?.map(|(_, mtime)| mtime) != Some(saved_mtime) {
        return Ok(None);
    }
    let mut changed = Vec::new();
    for id in locked.split('\n').filter(|id| !id.is_empty()) {
        let path = dir.join(format!("{id}.{}", crate::store::LOG_EXTENSION));
        // Gone without the directory changing: something is off; look at everything.
        let Some(stamp) = stamp(&path)? else { return Ok(None) };
        let known = row_stamp(conn, id)?;
        if known != Some(stamp) {
            changed.push((id.to_owned(), path));
        }
    }
    let count: i64 = conn.query_row("SELECT count(*) FROM sessions", [], |row| row.get(0))?;
    let mut stats =
        RefreshStats { files: usize::try_from(count).unwrap_or(0), ..RefreshStats::default() };
    if changed.is_empty() {
        return Ok(Some(stats));
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    for (id, path) in changed {
        if write_if_changed(&tx, &id, &path, None, false)? {
            stats.updated += 1;
        }
    }
    tx.commit()?;
    Ok(Some(stats))
}

/// Records what a full refresh saw of the directory, for the next quick refresh; forgets the
/// record when the directory is too fresh to be trusted. Writes only when that changes it.
fn save_scan(conn: &mut Connection, listing: &Listing) -> Result<()> {
    let wanted = listing.settled_mtime().map(|mtime| (mtime, listing.locked.join("\n")));
    let saved = saved_scan(conn)?;
    if saved == wanted {
        return Ok(());
    }
    match wanted {
        Some((mtime, locked)) => conn.execute(
            "INSERT OR REPLACE INTO scan (only, dir_mtime_ns, locked) VALUES (0, ?1, ?2)",
            params![mtime, locked],
        )?,
        None => conn.execute("DELETE FROM scan", [])?,
    };
    Ok(())
}

/// One refresh against `conn` (`rebuild`: forgetting every row first).
///
/// Changed logs are read with no transaction open; the rows are then written in one `IMMEDIATE`
/// transaction that looks at the table again, as other processes may have changed it meanwhile:
/// a row that already matches its file is left alone, a log that changed again (or whose row
/// another process's rebuild dropped) is read again there, and only rows whose file no longer
/// exists are deleted (a row for a file listed after this refresh listed the directory stays).
fn refresh_rows(conn: &mut Connection, listing: &Listing, rebuild: bool) -> Result<RefreshStats> {
    let known = if rebuild { HashMap::new() } else { stamps(conn)? };
    let mut prepared: HashMap<&str, Row> = HashMap::new();
    let mut unchanged = 0;
    for (id, path, stamp) in &listing.files {
        if known.get(id) == Some(stamp) {
            unchanged += 1;
        } else {
            let summary = summarize(id, path);
            prepared.insert(id, Row { summary, stamp: *stamp });
        }
    }
    let mut stats = RefreshStats { files: listing.files.len(), ..RefreshStats::default() };
    // Every file matches its row and every row has its file (ids are unique, so as many
    // matches as rows means no other row): nothing to write, and no write lock to wait for.
    if !rebuild && prepared.is_empty() && unchanged == known.len() {
        return Ok(stats);
    }

    // A rebuild rewrites every row it lists, and like a refresh drops only rows whose file is
    // gone: a log another process created after this listing keeps the row that process wrote.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut seen = HashSet::new();
    for (id, path, _) in &listing.files {
        seen.insert(id.as_str());
        if write_if_changed(&tx, id, path, prepared.remove(id.as_str()), rebuild)? {
            stats.updated += 1;
        }
    }
    let unseen: Vec<(String, String)> = {
        let mut stmt = tx.prepare("SELECT id, path FROM sessions")?;
        let rows = stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        rows.collect::<rusqlite::Result<Vec<(String, String)>>>()?
            .into_iter()
            .filter(|(id, _)| !seen.contains(id.as_str()))
            .collect()
    };
    for (id, path) in unseen {
        if !Path::new(&path).exists() {
            stats.removed += tx.execute("DELETE FROM sessions WHERE id = ?1", [id])?;
        }
    }
    tx.commit()?;
    Ok(stats)
}

/// Inside a write transaction: writes the row of the log `id` at `path` unless the row already
/// matches the file as it is now. `prepared` is a summary read earlier, used when the file has
/// not changed since; `force` writes it even when the row matches. Returns whether a row was
/// written; a file gone meanwhile is skipped.
fn write_if_changed(
    tx: &rusqlite::Transaction<'_>,
    id: &str,
    path: &Path,
    prepared: Option<Row>,
    force: bool,
) -> Result<bool> {
    let Some(stamp) = stamp(path)? else { return Ok(false) };
    let current = row_stamp(tx, id)?;
    if current == Some(stamp) && !force {
        return Ok(false);
    }
    let row = match prepared {
        Some(row) if row.stamp == stamp => row,
        _ => Row { summary: summarize(id, path), stamp },
    };
    write_row(tx, &row)?;
    Ok(true)
}

/// What the last full refresh recorded of the directory: its mtime and the locked sessions.
fn saved_scan(conn: &Connection) -> rusqlite::Result<Option<(i64, String)>> {
    conn.query_row("SELECT dir_mtime_ns, locked FROM scan WHERE only = 0", [], |row| {
        Ok((row.get(0)?, row.get(1)?))
    })
    .optional()
}

/// The stamp of one row.
fn row_stamp(conn: &Connection, id: &str) -> rusqlite::Result<Option<Stamp>> {
    conn.query_row("SELECT file_size, file_mtime_ns FROM sessions WHERE id = ?1", [id], |row| {
        Ok((row.get(0)?, row.get(1)?))
    })
    .optional()
}

/// The stamp of every row.
fn stamps(conn: &Connection) -> rusqlite::Result<HashMap<String, Stamp>> {
    let mut stmt = conn.prepare("SELECT id, file_size, file_mtime_ns FROM sessions")?;
    let rows = stmt.query_map([], |row| Ok((row.get(0)?, (row.get(1)?, row.get(2)?))))?;
    rows.collect()
}

/// The stamp of the file at `path`; `None` when it does not exist (any more).
fn stamp(path: &Path) -> Result<Option<Stamp>> {
    match fs_err::metadata(path) {
        Ok(metadata) => Ok(Some(stamp_of(&metadata))),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err.into()),
    }
}

fn stamp_of(metadata: &std::fs::Metadata) -> Stamp {
    let size = i64::try_from(metadata.len()).unwrap_or(i64::MAX);
    let mtime = metadata
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    (size, mtime)
}

fn write_row(conn: &Connection, Row { summary, stamp: (size, mtime) }: &Row) -> Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO sessions (id, path, cwd, title, model, provider, created_ms,
             updated_ms, parent, record_count, problem, file_size, file_mtime_ns)
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
    Ok(())
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
