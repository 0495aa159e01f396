//! Removing the socket directories of proxies whose process is gone: a codecoder killed with
//! SIGKILL never runs the handle's drop, so its `codecoder-net-*` directory and dead sockets
//! stay in the temporary directory. Each proxy's start sweeps its siblings.
//!
//! Invariants: only directories named `codecoder-net-*`, owned by the same user as the
//! starting proxy's own directory, are looked at; one is removed only when nothing shows it in
//! use: its owner's process (the `pid` file the proxy writes) is not running, and no socket in
//! it accepts a connection. A directory without a `pid` file (written by a codecoder from
//! before the file) is removed only when it holds a socket and none accepts, or when it has
//! been empty for an hour. Every error leaves
//! the directory where it is: the sweep is best effort and never fails a start.

use std::io;
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// The prefix of a proxy's socket directory.
pub(crate) const DIR_PREFIX: &str = "codecoder-net-";

/// The file in a proxy's directory naming the process that owns it.
pub(crate) const PID_FILE: &str = "pid";

/// Writes this process's id into `own` (the starting proxy's directory), then removes the stale
/// sibling directories of `own` in `parent` (see the module doc). Returns how many were removed.
pub(crate) fn mark_and_sweep(parent: &Path, own: &Path) -> usize {
    let _ = fs_err::write(own.join(PID_FILE), std::process::id().to_string());
    let Ok(uid) = fs_err::metadata(own).map(|metadata| metadata.uid()) else { return 0 };
    let Ok(entries) = fs_err::read_dir(parent) else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let named = entry.file_name().to_str().is_some_and(|name| name.starts_with(DIR_PREFIX));
        if !named || path == own {
            continue;
        }
        // Not followed: a symbolic link named like a directory is left alone.
        let Ok(metadata) = fs_err::symlink_metadata(&path) else { continue };
        if !metadata.is_dir() || metadata.uid() != uid {
            continue;
        }
        if is_stale(&path) && fs_err::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// True when nothing shows `dir` in use: its owner is not running and no socket accepts.
fn is_stale(dir: &Path) -> bool {
    let has_pid_file = match fs_err::read_to_string(dir.join(PID_FILE)) {
        Ok(text) => match text.trim().parse::<i32>() {
            Ok(pid) if pid > 0 => {
                if is_running(pid) {
                    return false;
                }
                true
            }
            // A file being written, or not ours to judge.
            _ => return false,
        },
        Err(error) if error.kind() == io::ErrorKind::NotFound => false,
        Err(_) => return false,
    };
    let Ok(entries) = fs_err::read_dir(dir) else { return false };
    let mut sockets = 0;
    let mut entries_seen = 0;
    for entry in entries.flatten() {
        entries_seen += 1;
        let Ok(file_type) = entry.file_type() else { return false };
        if !file_type.is_socket() {
            continue;
        }
        sockets += 1;
        match UnixStream::connect(entry.path()) {
            Ok(_) => return false,
            Err(error) if refused(&error) => {}
            Err(_) => return false,
        }
    }
    has_pid_file || sockets > 0 || (entries_seen == 0 && untouched_for(dir, EMPTY_GRACE))
}

/// How long an empty directory without a `pid` file is left alone: a proxy from before the
/// file, whose endpoints all stopped, left such a directory (and one being set up is empty for
/// an instant).
const EMPTY_GRACE: Duration = Duration::from_secs(60 * 60);

/// True when `dir` was last modified at least `grace` ago.
fn untouched_for(dir: &Path, grace: Duration) -> bool {
    fs_err::metadata(dir)
        .and_then(|metadata| metadata.modified())
        .is_ok_and(|modified| modified.elapsed().is_ok_and(|age| age >= grace))
}

/// True when `error` says no one listens on the socket (or it vanished meanwhile).
fn refused(error: &io::Error) -> bool {
    matches!(error.kind(), io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound)
}

/// True when a process `pid` exists (one of another user's counts: it may still be ours in
/// another guise, so the directory is kept).
fn is_running(pid: i32) -> bool {
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(errno) => errno != nix::errno::Errno::ESRCH,
    }
}
