//! A child on a pseudo-terminal (an interactive session: a REPL, a password prompt):
//! [`spawn_pty`].
//!
//! The child's stdin, stdout and stderr are the PTY's slave side; its output comes back through
//! the same [`Child`] as a piped command's (one reader thread on the master side, every chunk
//! tagged `Stdout`), and the caller writes its keystrokes to [`PtyInput`]. The command runs in a
//! session of its own whose controlling terminal is the PTY, so a written `\u{3}` (Ctrl-C) is the
//! terminal's interrupt for the command's foreground group, as in a person's terminal. Confined,
//! the re-exec stage takes the terminal right before the exec, inside the sandbox's namespaces
//! (bubblewrap's `--new-session` would otherwise leave the command without one, and the signal
//! would hit the wrappers); unconfined, the forked child takes it before the exec.
//!
//! Invariants:
//! - The termination guarantees are `Child`'s: the session's process group (its id is the
//!   leader's pid, as `setsid` makes it), the groups of its descendants and the tracked
//!   descendants are terminated on cancel, on kill, after the leader exits, and on drop.
//! - A `kill -9` of codecoder takes the session down, and with it the sandbox's pid namespace:
//!   the session's group and session are announced to the reaper (`reaper.rs`), which kills them
//!   when codecoder is gone. Where no reaper runs, the outermost process (the command, or the
//!   sandbox's wrapper around it) gets SIGKILL when the thread that spawned it ends
//!   (`PR_SET_PDEATHSIG`) instead.
//! - The master side is close-on-exec: no other child inherits it, so the slave side sees a
//!   hangup when the session's `Child` and `PtyInput` are gone.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Stdio;

use crate::{Child, CommandSpec, Confinement, Error, Result, SpawnConfig, Stream};

/// The size of the terminal a PTY session sees: 24 rows of 120 columns (wide enough that a
/// typical command's lines are not wrapped by the terminal).
const ROWS: u16 = 24;
const COLUMNS: u16 = 120;

/// The writing end of a PTY session: bytes written here are what the program reads from its
/// terminal (a line ending in `\n`, or control characters such as `\u{3}` for Ctrl-C or `\u{4}`
/// for end of input).
#[derive(Debug)]
pub struct PtyInput {
    master: File,
}

impl PtyInput {
    /// Writes all of `bytes` to the terminal.
    ///
    /// # Errors
    /// When the terminal is gone (the program and everything holding its terminal ended: EIO).
    pub fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.master.write_all(bytes)?;
        self.master.flush()
    }
}

/// Starts `spec` on a new PTY, in a session of its own whose controlling terminal it is,
/// confined as `config` says. The spec's `stdin` bytes, if any, are written to the terminal
/// first. The returned `Child` reads the terminal's output (as `Stream::Stdout`).
///
/// # Errors
/// When the PTY cannot be made, or the program cannot be started.
pub fn spawn_pty(spec: &CommandSpec, config: &SpawnConfig) -> Result<(Child, PtyInput)> {
    let program_name = spec.program.to_string_lossy().into_owned();
    let spawn_error = |source: io::Error| Error::Spawn { program: program_name.clone(), source };
    let (master, slave) = open_pty().map_err(&spawn_error)?;
    let sweep = Child::sweep_before(&config.confinement);
    let (program, args, sandbox_env, inherited, stage_takes_terminal) = match &config.confinement {
        Confinement::Unconfined => {
            (spec.program.clone(), spec.args.clone(), Vec::new(), None, false)
        }
        Confinement::Sandboxed(sandbox) => {
            let (wrapped, taken) = sandbox.wrap_tty(&spec.program, &spec.args, spec.cwd.as_deref());
            (wrapped.program, wrapped.args, wrapped.env, wrapped.keep, taken)
        }
    };
    // Programs size their output to the terminal; `TERM` says what it understands (a plain
    // terminal: no colors are asked for, though programs may still send escapes).
    let terminal = [
        ("TERM", "dumb".to_owned()),
        ("COLUMNS", COLUMNS.to_string()),
        ("LINES", ROWS.to_string()),
    ];
    let mut command = crate::command_for(&program, &args, spec, config, &terminal, &sandbox_env);
    let stdio = |fd: &OwnedFd| fd.try_clone().map(Stdio::from);
    command
        .stdin(stdio(&slave).map_err(&spawn_error)?)
        .stdout(stdio(&slave).map_err(&spawn_error)?)
        .stderr(stdio(&slave).map_err(&spawn_error)?);
    let take_terminal_here = !stage_takes_terminal;
    // The reaper ends the session with codecoder; only without one does the outermost process
    // die with its thread (a parent-death signal would race the reaper, see `reaper.rs`).
    let die_with_thread = !crate::reaper::supervise();
    #[allow(unsafe_code)]
    // SAFETY: the closure runs in the forked child before exec and only makes async-signal-safe
    // system calls (setsid, ioctl, prctl), allocating nothing.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, move || {
            nix::unistd::setsid().map_err(io::Error::from)?;
            if take_terminal_here {
                take_terminal()?;
            }
            #[cfg(target_os = "linux")]
            if die_with_thread {
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                    .map_err(io::Error::from)?;
            }
            Ok(())
        });
    }
    // After the closure above: the session (and so the group) exists when it is announced.
    crate::reaper::announce_on_exec(&mut command);
    let spawned = command.spawn();
    drop(inherited);
    // The child holds the slave side now; ours must go, or the master never sees the hangup.
    drop(command);
    drop(slave);
    let mut child = spawned.map_err(&spawn_error)?;
    let pid = child.id();
    crate::live_groups::insert(pid);
    let reader = File::from(master.try_clone().map_err(&spawn_error)?);
    let (mut handle, exit_tx, output_tx) = Child::started(pid, config);
    handle.sweep = sweep;
    let waiter = codecoder_stdx::spawn_named(format!("sandbox-wait-{pid}"), move || {
        if let Ok(status) = child.wait() {
            let _ = exit_tx.send(status);
        }
    });
    match waiter {
        Ok(waiter) => handle.waiter = Some(waiter),
        Err(err) => {
            handle.signal(nix::sys::signal::Signal::SIGKILL);
            return Err(Error::Thread(err));
        }
    }
    // Reading the master gives EIO once every holder of the slave side is gone: the reader's
    // end of output.
    handle.readers.push(crate::spawn_reader(pid, Stream::Stdout, reader, output_tx)?);
    let mut input = PtyInput { master: File::from(master) };
    if let Some(bytes) = &spec.stdin {
        input.write(bytes).map_err(&spawn_error)?;
    }
    Ok((handle, input))
}

/// Opens a PTY pair, both sides close-on-exec, the master's window set to `ROWS` × `COLUMNS`.
#[allow(unsafe_code)]
fn open_pty() -> io::Result<(OwnedFd, OwnedFd)> {
    use nix::libc;

    // SAFETY: plain system calls on descriptors this function owns; each result is checked,
    // and every descriptor opened is wrapped in an `OwnedFd` at once.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        if master < 0 {
            return Err(io::Error::last_os_error());
        }
        let master = OwnedFd::from_raw_fd(master);
        if libc::grantpt(master.as_raw_fd()) != 0 || libc::unlockpt(master.as_raw_fd()) != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut name = [0 as libc::c_char; 128];
        if libc::ptsname_r(master.as_raw_fd(), name.as_mut_ptr(), name.len()) != 0 {
            return Err(io::Error::last_os_error());
        }
        let slave = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        if slave < 0 {
            return Err(io::Error::last_os_error());
        }
        let slave = OwnedFd::from_raw_fd(slave);
        let size = libc::winsize { ws_row: ROWS, ws_col: COLUMNS, ws_xpixel: 0, ws_ypixel: 0 };
        if libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &raw const size) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((master, slave))
    }
}

/// Makes the terminal on stdin the calling process's controlling terminal, starting a session
/// first when the process does not lead one (a session leader's `setsid` fails, which is fine).
/// Runs in a child between fork and exec, or in the stage: async-signal-safe calls only.
#[allow(unsafe_code)]
pub(crate) fn take_terminal() -> io::Result<()> {
    let _ = nix::unistd::setsid();
    // SAFETY: TIOCSCTTY takes an integer argument (0: do not steal the terminal from another
    // session) and touches no memory of ours.
    let done = unsafe { nix::libc::ioctl(0, nix::libc::TIOCSCTTY, 0) };
    if done != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests;
