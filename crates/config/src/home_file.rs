//! Edits of the files codecoder keeps in its home and rewrites (config.toml's MCP tables, the
//! trusted projects, the stored keys, the plugin list), safe against a second codecoder process
//! and against a crash.
//!
//! Invariants: an edit reads and writes under an exclusive lock on a `.NAME.lock` file beside
//! the file (held from `HomeFile::lock` to drop), so two processes editing the same file at once
//! both keep their change; the new text goes to a temporary file of this process, is synced and
//! renamed over the file, so a reader, or a kill at any moment, sees the old file or the new one,
//! never a part of one.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A file of codecoder's home, locked for an edit until dropped.
#[derive(Debug)]
pub struct HomeFile {
    path: PathBuf,
    _lock: File,
}

impl HomeFile {
    /// Locks `path` for an edit, creating its directory when missing. Another process (or
    /// thread) editing the same file waits here until this edit is done.
    ///
    /// # Errors
    /// When the directory or the lock file cannot be made or locked.
    pub fn lock(path: &Path) -> io::Result<Self> {
        let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."));
        fs_err::create_dir_all(dir)?;
        let name = path.file_name().map(|name| name.to_string_lossy()).unwrap_or_default();
        let lock_path = dir.join(format!(".{name}.lock"));
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let lock = options.open(&lock_path).map_err(|err| with_path(err, "opening", &lock_path))?;
        lock.lock().map_err(|err| with_path(err, "locking", &lock_path))?;
        Ok(Self { path: path.to_owned(), _lock: lock })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's text; empty when it does not exist.
    ///
    /// # Errors
    /// When it exists and cannot be read.
    pub fn read(&self) -> io::Result<String> {
        match fs_err::read_to_string(&self.path) {
            Ok(text) => Ok(text),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(String::new()),
            Err(err) => Err(err),
        }
    }

    /// Replaces the file with `text`, readable by others as files are by default.
    ///
    /// # Errors
    /// When the temporary file cannot be written or renamed.
    pub fn write(&self, text: &str) -> io::Result<()> {
        self.replace(text, None)
    }

    /// Replaces the file with `text`, readable and writable by its owner only (mode `0600`).
    ///
    /// # Errors
    /// When the temporary file cannot be written or renamed.
    pub fn write_private(&self, text: &str) -> io::Result<()> {
        self.replace(text, Some(0o600))
    }

    fn replace(&self, text: &str, mode: Option<u32>) -> io::Result<()> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = self.path.file_name().map(|name| name.to_string_lossy()).unwrap_or_default();
        let tmp = self.path.with_file_name(format!(
            ".{name}.{}-{}.tmp",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        if let Some(mode) = mode {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(mode);
        }
        #[cfg(not(unix))]
        let _ = mode;
        let written = options
            .open(&tmp)
            .map_err(|err| with_path(err, "creating", &tmp))
            .and_then(|file| {
                let mut file = fs_err::File::from_parts(file, &tmp);
                file.write_all(text.as_bytes())?;
                file.sync_all()
            })
            .and_then(|()| fs_err::rename(&tmp, &self.path));
        if written.is_err() {
            let _ = fs_err::remove_file(&tmp);
        }
        written
    }
}

fn with_path(err: io::Error, doing: &str, path: &Path) -> io::Error {
    io::Error::new(err.kind(), format!("{doing} {}: {err}", path.display()))
}
