//! `LogLock`: one writer per session log, across processes.
//!
//! The lock is an exclusive `flock` on the log file itself, taken without waiting. A second
//! taker (another process, or another open of the same file in this one) is refused with
//! `Error::Locked`, which names the holder's pid. The pid lives in a sidecar file beside the
//! log (`<id>.lock`): the holder writes it once it has the lock and removes it before it lets go.
//!
//! Invariants:
//! - The `flock`, not the sidecar, decides who writes. The kernel releases a `flock` when its
//!   holder dies (even by `kill -9`), so a sidecar left behind blocks nothing: the next holder
//!   overwrites it. Only the holder writes or removes the sidecar, and it removes it before it
//!   unlocks (field order of `LogLock`).
//! - A lock is only kept on the file the path names: it is taken on an open file and then
//!   checked to still be the file at the path, so nobody holds the lock of a log that `remove`
//!   unlinked meanwhile.
//! - The lock is held on a duplicate of the writer's descriptor (same open file description, so
//!   the same lock); dropping the `LogLock` unlocks explicitly, whatever other duplicates live.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use crate::error::{Error, Result};

/// Extension of the sidecar that names the holder's pid.
pub(crate) const SIDECAR_EXTENSION: &str = "lock";
/// How many times a refused taker looks again for a live holder's pid before it reports what it
/// has: the holder may be between taking the lock and writing its pid, or may just be letting go.
const PID_ATTEMPTS: u32 = 20;
const PID_RETRY: Duration = Duration::from_millis(10);

/// The exclusive lock on one session log; unlocked on drop.
#[derive(Debug)]
pub(crate) struct LogLock {
    sidecar: PathBuf,
    // Dropped after `Drop::drop` removed the sidecar: the pid file goes before the lock does.
    _flock: Flock<std::fs::File>,
}

impl LogLock {
    /// Locks the log `file`, open at `path`, for writing. Another holder: `Error::Locked` with
    /// its pid when it can be found; the path no longer naming `file`: `Error::NotFound`.
    pub(crate) fn acquire(file: &std::fs::File, path: &Path) -> Result<Self> {
        let sidecar = sidecar_path(path);
        let mut holder = None;
        for attempt in 0..PID_ATTEMPTS {
            if attempt > 0 {
                std::thread::sleep(PID_RETRY);
            }
            let dup = file.try_clone().map_err(|e| {
                std::io::Error::new(e.kind(), format!("locking {}: {e}", path.display()))
            })?;
            match Flock::lock(dup, FlockArg::LockExclusiveNonblock) {
                Ok(flock) => {
                    check_same_file(file, path)?;
                    // The pid is only for the message a refused taker shows: failing to write
                    // it does not make the lock any less held.
                    let _ = fs_err::write(&sidecar, format!("{}\n", std::process::id()));
                    return Ok(Self { sidecar, _flock: flock });
                }
                Err((_, Errno::EWOULDBLOCK)) => {
                    holder = read_pid(&sidecar);
                    if holder.is_some_and(is_alive) {
                        break;
                    }
                }
                Err((_, errno)) => {
                    let kind = std::io::Error::from(errno).kind();
                    return Err(std::io::Error::new(
                        kind,
                        format!("locking {}: {errno}", path.display()),
                    )
                    .into());
                }
            }
        }
        Err(Error::Locked { session: session_name(path), path: path.to_owned(), pid: holder })
    }
}

impl Drop for LogLock {
    fn drop(&mut self) {
        // Still holding the lock: no other holder's pid can be in the file.
        let _ = fs_err::remove_file(&self.sidecar);
    }
}

/// The sidecar of the log at `path`: `<id>.lock` beside `<id>.jsonl`.
pub(crate) fn sidecar_path(path: &Path) -> PathBuf {
    path.with_extension(SIDECAR_EXTENSION)
}

/// The session id as the file names it (the file stem), for messages.
fn session_name(path: &Path) -> String {
    path.file_stem()
        .map_or_else(|| path.display().to_string(), |stem| stem.to_string_lossy().into_owned())
}

fn read_pid(sidecar: &Path) -> Option<u32> {
    fs_err::read_to_string(sidecar).ok()?.trim().parse().ok()
}

/// Whether a process `pid` exists (signal 0 checks without sending anything).
fn is_alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else { return false };
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None) {
        Ok(()) => true,
        // It exists, under another user.
        Err(errno) => errno == Errno::EPERM,
    }
}

/// Fails unless `path` still names the open `file` (same device and inode).
fn check_same_file(file: &std::fs::File, path: &Path) -> Result<()> {
    let open = file.metadata()?;
    match fs_err::metadata(path) {
        Ok(named) if named.dev() == open.dev() && named.ino() == open.ino() => Ok(()),
        Ok(_) => Err(Error::NotFound { query: path.display().to_string() }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            Err(Error::NotFound { query: path.display().to_string() })
        }
        Err(err) => Err(err.into()),
    }
}
