//! The processes a command started, read from `/proc` (Linux; elsewhere every reader is empty).
//!
//! A process is named by its pid and its start time together ([`Tracked`]): a pid alone may be
//! reused by an unrelated process once the first one is gone and reaped, and a signal meant for
//! the command's process must never reach it.

use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// One line of `/proc/<pid>/stat`, the fields termination needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    pid: u32,
    ppid: u32,
    pgrp: u32,
    /// Clock ticks after boot.
    start: u64,
    /// Neither a zombie nor dead.
    live: bool,
    /// Stopped by a signal (or traced).
    stopped: bool,
}

/// A process of the command's tree: its pid and its start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tracked {
    pub(crate) pid: u32,
    pub(crate) ppid: u32,
    pub(crate) pgrp: u32,
    start: u64,
}

impl Tracked {
    /// Whether this very process is still there and not a zombie.
    pub(crate) fn alive(&self) -> bool {
        stat(self.pid).is_some_and(|now| now.start == self.start && now.live)
    }

    /// Whether the process is the init (pid 1) of a pid namespace below this one: such a process
    /// ignores every signal it has no handler for, SIGTERM included, when it comes from outside.
    pub(crate) fn namespace_init(&self) -> bool {
        let Ok(status) = fs_err::read_to_string(format!("/proc/{}/status", self.pid)) else {
            return false;
        };
        status.lines().find_map(|line| line.strip_prefix("NSpid:")).is_some_and(|pids| {
            let pids: Vec<&str> = pids.split_whitespace().collect();
            pids.len() > 1 && pids.last() == Some(&"1")
        })
    }

    /// Signals the process if it is still this one. ESRCH (gone meanwhile) is the expected race.
    pub(crate) fn signal(&self, signal: Signal) {
        if !self.alive() {
            return;
        }
        let Ok(pid) = i32::try_from(self.pid) else { return };
        let _: Result<(), Errno> = kill(Pid::from_raw(pid), signal);
    }
}

fn stat(pid: u32) -> Option<Stat> {
    let text = fs_err::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse(pid, &text)
}

/// `pid (comm) state ppid pgrp …`: comm may hold spaces and parentheses, so the fields are
/// split after the last `)`. The start time is field 22.
fn parse(pid: u32, text: &str) -> Option<Stat> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = *fields.first()?;
    Some(Stat {
        pid,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
        live: state != "Z" && state != "X",
        stopped: state == "T" || state == "t",
    })
}

/// Every process `/proc` lists; one that exits while it is read is left out.
fn all() -> Vec<Stat> {
    let Ok(entries) = fs_err::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_string_lossy().parse::<u32>().ok())
        .filter_map(stat)
        .collect()
}

/// The pids of live (not zombie) processes whose process group is `pgid`, read from `/proc`.
/// Empty where `/proc` does not exist.
pub fn live_group_members(pgid: u32) -> Vec<u32> {
    all().into_iter().filter(|p| p.live && p.pgrp == pgid).map(|p| p.pid).collect()
}

/// Waits until every live member of group `pgid` is stopped, at most `limit`. A stop signal
/// takes effect when the process next returns to user space: a process inside `fork` or
/// `clone` stops only once its child exists, so the tree read after this wait holds it.
pub(crate) fn wait_stopped(pgid: u32, limit: Duration) {
    let deadline = Instant::now() + limit;
    let mut pause = Duration::from_micros(50);
    loop {
        let running = all().iter().any(|p| p.live && p.pgrp == pgid && !p.stopped);
        let now = Instant::now();
        if !running || now >= deadline {
            return;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(2));
    }
}

/// The live members of group `pgid` and all their live descendants (children, their
/// children, …, whatever their group), in breadth-first order: the whole tree a command's
/// group holds. A descendant whose parent is gone has been reparented (to init or a subreaper)
/// and is no longer found from here, which is why the tree is read while it is frozen.
pub(crate) fn group_tree(pgid: u32) -> Vec<Tracked> {
    let processes = all();
    let roots = processes.iter().filter(|p| p.live && p.pgrp == pgid).map(|p| p.pid).collect();
    walk(&processes, roots)
}

/// The live descendants of `roots` and the roots themselves, if live.
pub(crate) fn tree_of(roots: &[u32]) -> Vec<Tracked> {
    walk(&all(), roots.to_vec())
}

fn walk(processes: &[Stat], mut tree: Vec<u32>) -> Vec<Tracked> {
    let mut i = 0;
    while let Some(&parent) = tree.get(i) {
        i += 1;
        for process in processes {
            if process.live && process.ppid == parent && !tree.contains(&process.pid) {
                tree.push(process.pid);
            }
        }
    }
    tree.iter()
        .filter_map(|pid| processes.iter().find(|p| p.pid == *pid && p.live))
        .map(|p| Tracked { pid: p.pid, ppid: p.ppid, pgrp: p.pgrp, start: p.start })
        .collect()
}

#[cfg(test)]
mod tests;
