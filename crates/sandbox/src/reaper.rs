//! The last-resort reaper: what ends the processes codecoder started when codecoder itself is
//! killed without running a single drop guard (`kill -9`, the OOM killer, a crash).
//!
//! One small supervisor process per codecoder process, started at the first spawn: `/bin/sh`
//! running [`SCRIPT`], its stdin one end of a Unix socket pair whose other end only codecoder
//! holds. Every process this crate spawns announces its own process group on that socket from
//! between fork and exec (`+PGID START`, written by the child itself, after it made its group or
//! session and before the program runs; START is its start time from `/proc/self/stat`), and a
//! group this crate saw gone is withdrawn (`-PGID`, from `live_groups::remove`). When the socket
//! reads end of file, codecoder is gone: the supervisor waits until it was reparented (the end
//! of codecoder's exit), stops (SIGSTOP) every group still announced, so nothing in them can
//! fork or leave, reads `/proc` for the processes of those groups, of sessions with those ids (a
//! terminal session's job-control groups) and their descendants (one that called `setsid`
//! included), and kills them all (SIGKILL), then exits.
//!
//! The wait matters: the socket closes early in codecoder's exit, and the kernel checks for
//! newly orphaned process groups only at its end. A group stopped in between is orphaned with a
//! stopped member, so it gets SIGHUP and SIGCONT: its shell dies before the supervisor read its
//! children, and one of them in a session of its own would be orphaned out of reach.
//!
//! A group whose leader is still there with another start time is left alone: its pid was
//! reused (the announced child failed to exec, so it was never withdrawn, or codecoder died
//! between a group's end and its withdrawal). A group whose leader is gone is still ours: a
//! process group's id is not given to a new process while the group has members.
//!
//! Invariants:
//! - A child is announced before its program runs: if codecoder dies at any moment after the
//!   fork, the child's copy of the socket (closed only by its exec) keeps the supervisor from
//!   seeing end of file before the announcement is in. No window between fork and a
//!   parent-death signal (bubblewrap's or the stage's) is left open: the group is killed
//!   whoever in it had asked to die with its parent.
//! - Our end of the socket is close-on-exec and keeps one descriptor number for the process's
//!   life (a restarted supervisor's socket is `dup2`ed onto it), so a child forked at any time
//!   writes to the supervisor or nowhere, never to an unrelated descriptor.
//! - Writes use `MSG_NOSIGNAL`: a supervisor that died makes them fail (and it is restarted at
//!   the next spawn), it never raises SIGPIPE, in codecoder or in a child between fork and exec.
//! - The supervisor ignores the terminal's signals and runs in a process group of its own, so a
//!   Ctrl-C or a hangup that reaches codecoder's group does not take it first; it holds no
//!   descriptor of codecoder's but its end of the socket, and runs no other program (`read`,
//!   `kill` and `case` are the shell's builtins).
//! - A supervised child gets no parent-death signal (`PR_SET_PDEATHSIG`): killed at the same
//!   moment as codecoder, a group's leader would die before the supervisor stops its group, and
//!   a descendant that left the group would be orphaned out of the supervisor's reach. Where no
//!   supervisor runs, the spawners fall back to that signal.
//! - The cost per spawn is one `send` in the child and one at the group's end; the supervisor's
//!   start (one `sh`) is paid once.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::process::Stdio;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, PoisonError};

use nix::libc;

/// The supervisor's program. It keeps the announced groups as a space-separated list (`+` adds
/// one, `-` takes one out), and at end of file ends them as the module's documentation says.
/// Only builtins run, so it forks nothing.
const SCRIPT: &str = r#"# codecoder's reaper (codecoder-sandbox reaper.rs)
trap '' HUP INT QUIT TERM PIPE TSTP TTIN TTOU
a=' '
while read -r l; do
  case $l in
    +*) t=${l#+}; a="$a${t% *}:${t#* } " ;;
    -*) x=${l#-}; case $a in *" $x:"*) r=${a#*" $x:"}; a="${a%%" $x:"*} ${r#* }" ;; esac ;;
  esac
done
i=0
while [ $i -lt 4000 ] && read -r s 2>/dev/null < "/proc/$$/stat"; do
  set -- ${s##*) }
  [ "$2" = "$PPID" ] || break
  i=$((i+1))
done
g=' '
for t in $a; do
  x=${t%%:*}
  if read -r s 2>/dev/null < "/proc/$x/stat"; then
    set -- ${s##*) }
    [ "${20}" = "${t#*:}" ] || continue
  fi
  g="$g$x "
done
[ "$g" = ' ' ] && exit 0
for x in $g; do kill -s STOP -- "-$x" 2>/dev/null; done
k=' '
for f in /proc/[0-9]*/stat; do
  read -r s 2>/dev/null < "$f" || continue
  p=${f#/proc/}; p=${p%/stat}
  set -- ${s##*) }
  case $g in
    *" $3 "*|*" $4 "*) k="$k$p " ;;
    *) case $k in *" $2 "*) k="$k$p " ;; esac ;;
  esac
done
for x in $g; do kill -s KILL -- "-$x" 2>/dev/null; done
for x in $k; do kill -s KILL "$x" 2>/dev/null; done
"#;

/// Our end of the socket: its descriptor number, -1 until the first supervisor started (or
/// when none could be). Read between fork and exec, so a plain atomic.
static SOCKET: AtomicI32 = AtomicI32::new(-1);

/// The running supervisor. A Mutex because any thread may spawn; held only to check on it or
/// start one, never across a wait.
static SUPERVISOR: Mutex<Option<std::process::Child>> = Mutex::new(None);

/// Makes sure a supervisor runs (starting one if none does, or if the last one died), then
/// arranges for the child `command` starts to announce its process group from between fork and
/// exec. Call it after every other `pre_exec` of the command: the group must exist when it is
/// announced. Returns whether a supervisor runs (where none can be started the command is
/// spawned as before, and the caller falls back to a parent-death signal).
pub(crate) fn watch(command: &mut std::process::Command) -> bool {
    let supervised = supervise();
    announce_on_exec(command);
    supervised
}

/// Makes sure a supervisor runs; whether one does.
pub(crate) fn supervise() -> bool {
    let mut supervisor = SUPERVISOR.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(child) = supervisor.as_mut() {
        // Otherwise it died (someone killed it): it is reaped now, and a new one takes its
        // place.
        if let Ok(None) = child.try_wait() {
            return true;
        }
    }
    *supervisor = start().ok();
    supervisor.is_some()
}

/// Arranges for the child `command` starts to announce itself (see `watch`).
pub(crate) fn announce_on_exec(command: &mut std::process::Command) {
    #[allow(unsafe_code)]
    // SAFETY: the closure runs in the forked child before exec and only makes async-signal-safe
    // system calls (getpid, send) on a stack buffer, allocating nothing.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(command, || {
            announce_self();
            Ok(())
        });
    }
}

/// Withdraws group `pgid`: it is gone, and its id may be reused by an unrelated process.
pub(crate) fn forget(pgid: u32) {
    let mut line = Line::new(b'-');
    line.push_number(pgid);
    send(&line);
}

/// Sends `+<own pid> <own start time>`: in a child between fork and exec, whose pid is its
/// group's id. The start time is `-` where `/proc` cannot be read (never compared then).
fn announce_self() {
    // SAFETY: getpid has no preconditions and cannot fail.
    #[allow(unsafe_code)]
    let pid = unsafe { libc::getpid() };
    let mut line = Line::new(b'+');
    line.push_number(pid.unsigned_abs());
    let mut stat = [0u8; 1024];
    let start = read_own_stat(&mut stat).and_then(start_time).unwrap_or(b"-");
    line.push_field(start);
    send(&line);
}

/// Reads `/proc/self/stat` into `buffer` with plain system calls (async-signal-safe).
#[allow(unsafe_code)]
fn read_own_stat(buffer: &mut [u8]) -> Option<&[u8]> {
    // SAFETY: a NUL-terminated path; the descriptor is closed before returning; `read` writes at
    // most `buffer.len()` bytes into the buffer.
    unsafe {
        let fd = libc::open(c"/proc/self/stat".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let read = libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len());
        libc::close(fd);
        let read = usize::try_from(read).ok()?;
        buffer.get(..read)
    }
}

/// The start time field of a `/proc/<pid>/stat` line (the 20th after the command's closing
/// parenthesis, which the command's own name may contain), as its digits.
fn start_time(stat: &[u8]) -> Option<&[u8]> {
    let close = stat.iter().rposition(|&byte| byte == b')')?;
    let rest = stat.get(close + 1..)?;
    let field = rest.split(|&byte| byte == b' ').filter(|field| !field.is_empty()).nth(19)?;
    (!field.is_empty() && field.len() <= 20 && field.iter().all(u8::is_ascii_digit))
        .then_some(field)
}

/// One message: a sign, a number, an optional field and a newline, on the stack (nothing is
/// allocated between fork and exec).
struct Line {
    bytes: [u8; 48],
    len: usize,
}

impl Line {
    fn new(sign: u8) -> Self {
        let mut bytes = [0; 48];
        bytes[0] = sign;
        Self { bytes, len: 1 }
    }

    /// Replaces the line's ending newline with ` field\n`.
    fn push_field(&mut self, field: &[u8]) {
        let start = self.len - 1;
        let Some(room) = self.bytes.get_mut(start..start + field.len() + 2) else { return };
        room[0] = b' ';
        room[1..=field.len()].copy_from_slice(field);
        room[field.len() + 1] = b'\n';
        self.len = start + field.len() + 2;
    }

    fn push_number(&mut self, number: u32) {
        let mut digits = [0u8; 10];
        let mut n = number;
        let mut count = 0;
        loop {
            digits[count] = b'0' + (n % 10) as u8;
            count += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        for &digit in digits[..count].iter().rev() {
            self.bytes[self.len] = digit;
            self.len += 1;
        }
        self.bytes[self.len] = b'\n';
        self.len += 1;
    }
}

/// Writes `line` to the supervisor, if there is one; a failure (it died) is ignored. One
/// `send` of a few bytes on a stream socket is never split, so lines from concurrent writers
/// do not interleave.
fn send(line: &Line) {
    let fd = SOCKET.load(Ordering::Relaxed);
    if fd < 0 {
        return;
    }
    #[allow(unsafe_code)]
    // SAFETY: `fd` is our socket's number, open for the process's life; the buffer is valid for
    // `len` bytes.
    let _ = unsafe {
        libc::send(
            fd,
            line.bytes.as_ptr().cast(),
            line.len,
            libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
        )
    };
}

/// Starts the supervisor on a new socket pair, whose our end takes `SOCKET`'s number (or gives
/// it one, the first time).
fn start() -> io::Result<std::process::Child> {
    let (ours, theirs) = socket_pair()?;
    #[allow(clippy::disallowed_methods)] // This crate is the one place allowed to spawn processes.
    let mut command = std::process::Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(SCRIPT)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .current_dir("/")
        .stdin(Stdio::from(theirs))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let child = command.spawn()?;
    // The child holds its end as its stdin now; `command` held our copy of it.
    drop(command);
    let current = SOCKET.load(Ordering::Relaxed);
    if current < 0 {
        // Kept open for the process's life: its number must never be reused.
        SOCKET.store(ours.into_raw_fd(), Ordering::Relaxed);
    } else {
        #[allow(unsafe_code)]
        // SAFETY: dup3 onto our own socket's number atomically replaces the old socket, which
        // nothing else owns; the flag keeps it close-on-exec.
        let done = unsafe { libc::dup3(ours.as_raw_fd(), current, libc::O_CLOEXEC) };
        if done < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(child)
}

/// A Unix stream socket pair, both ends close-on-exec.
fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds: [RawFd; 2] = [-1; 2];
    #[allow(unsafe_code)]
    // SAFETY: socketpair writes two descriptors into the array on success, which are wrapped in
    // `OwnedFd`s at once.
    unsafe {
        if libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

#[cfg(test)]
mod tests;
