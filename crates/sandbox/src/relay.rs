//! The relay of a proxied sandbox under bubblewrap: inside the sandbox's own network namespace
//! (loopback only), it listens on `127.0.0.1:`[`RELAY_PORT`] and bridges every accepted TCP
//! connection to the managed proxy's unix socket, byte for byte in both directions. The command's
//! `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY` point at it, so HTTP clients reach the proxy while
//! nothing else has a route out.
//!
//! Invariants:
//! - The relay is a process forked by the stage right before it execs the command, so the command
//!   is its parent: it asks to be killed with its parent (`PR_SET_PDEATHSIG`), and so ends when
//!   the command ends, is killed, or never starts (and with the pid namespace around both). It
//!   holds none of the command's descriptors (its stdio is `/dev/null`), so the spawner's pipes
//!   close when the command's last process does.
//! - The listener is bound before the fork: when the command starts, the port answers.
//! - The relay only connects to the one socket path it was given; what goes through is the
//!   proxy's business.

use std::io;
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;

use crate::policy::RELAY_PORT;

/// The relay's process name (`/proc/PID/comm`).
pub(crate) const RELAY_NAME: &std::ffi::CStr = c"codecoder-relay";

/// Binds the relay's port and forks the relay process; returns in the stage (the future
/// command) once the relay runs. Must be called while the process has a single thread.
#[allow(unsafe_code)]
pub(crate) fn start(socket: &Path) -> Result<(), String> {
    use nix::sys::signal::Signal;
    use nix::unistd::{ForkResult, fork, getpid, getppid};

    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, RELAY_PORT))
        .map_err(|err| format!("relay: listening on 127.0.0.1:{RELAY_PORT}: {err}"))?;
    let stage = getpid();
    // SAFETY: the stage runs before `main` does anything else, with no other thread, so the
    // forked child may run any code.
    match unsafe { fork() } {
        Err(err) => Err(format!("relay: fork: {err}")),
        Ok(ForkResult::Parent { .. }) => Ok(()),
        Ok(ForkResult::Child) => {
            // The stage may have ended between the fork and the request: then nobody would
            // kill the relay, so it ends itself.
            if nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).is_err() || getppid() != stage {
                std::process::exit(0);
            }
            // Named for `ps` and `top`: it keeps the stage's command line, as the stage's other
            // forks do.
            let _ = nix::sys::prctl::set_name(RELAY_NAME);
            detach_descriptors(&listener);
            serve(&listener, socket);
            std::process::exit(0)
        }
    }
}

/// Points stdin, stdout and stderr at `/dev/null` and closes every other descriptor but the
/// listener's, so the relay keeps none of the command's pipes or terminal open.
#[allow(unsafe_code)]
fn detach_descriptors(listener: &TcpListener) {
    use nix::libc;
    use std::os::fd::AsRawFd;

    if let Ok(null) = fs_err::OpenOptions::new().read(true).write(true).open("/dev/null") {
        for target in 0..3 {
            // SAFETY: `dup2` takes two descriptor numbers; `null` stays open across the calls.
            unsafe { libc::dup2(null.as_raw_fd(), target) };
        }
    }
    let keep = listener.as_raw_fd();
    let Ok(entries) = fs_err::read_dir("/proc/self/fd") else { return };
    let open: Vec<i32> = entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd > 2 && *fd != keep)
        .collect();
    for fd in open {
        // SAFETY: closing a descriptor number this process owns; nothing else uses them (the
        // relay is single-threaded here), and the directory's own descriptor is closed already
        // or fails harmlessly with EBADF.
        unsafe { libc::close(fd) };
    }
}

/// Accepts connections forever, each bridged to `socket` by a thread pair.
pub(crate) fn serve(listener: &TcpListener, socket: &Path) {
    for (index, stream) in listener.incoming().enumerate() {
        let Ok(stream) = stream else { continue };
        let socket = socket.to_path_buf();
        // Detached: each bridge ends when either side closes, and the relay process ends (with
        // SIGKILL) when the command does; there is nobody to join it.
        let spawned = std::thread::Builder::new()
            .name(format!("relay-{index}"))
            .spawn(move || bridge(stream, &socket));
        drop(spawned);
    }
}

/// Copies `tcp` to a fresh connection to `socket` and back until both directions end. A proxy
/// that cannot be reached closes the TCP connection at once.
fn bridge(tcp: TcpStream, socket: &Path) {
    let Ok(unix) = UnixStream::connect(socket) else { return };
    std::thread::scope(|scope| {
        let upstream =
            std::thread::Builder::new().name("relay-up".into()).spawn_scoped(scope, || {
                let _ = io::copy(&mut &tcp, &mut &unix);
                let _ = unix.shutdown(Shutdown::Write);
            });
        let _ = io::copy(&mut &unix, &mut &tcp);
        let _ = tcp.shutdown(Shutdown::Write);
        // The scope joins the upstream thread; a failed spawn leaves one direction only, and
        // the client sees the request go unanswered.
        drop(upstream);
    });
}

#[cfg(test)]
mod tests;
