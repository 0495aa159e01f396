//! Long-lived provider threads: a request's read runs on an idle worker instead of a thread
//! spawned for it; a worker is spawned only when none is idle (parallel requests of subagents).
//!
//! Invariants:
//! - At most `max_idle` workers wait for work; a worker that finds the idle list full, or the
//!   pool gone, exits after its task.
//! - A worker's job channel has exactly one sender, which travels with the task it runs and
//!   goes back to the idle list after it: dropping the pool (the idle list) disconnects every
//!   idle worker, and the pool joins its threads after that (field order).

use std::sync::{Arc, Mutex, Weak};

use codecoder_stdx::{JoinOnDrop, spawn_named};
use crossbeam_channel::Sender;

/// Work for a worker thread.
pub(crate) type Task = Box<dyn FnOnce() + Send>;

/// A task and the sender of the channel it came on (the worker's way back to the idle list).
struct Work {
    task: Task,
    home: Sender<Work>,
}

type IdleList = Mutex<Vec<Sender<Work>>>;

/// A pool of named worker threads.
#[derive(Debug)]
pub(crate) struct Workers {
    name: String,
    max_idle: usize,
    // Dropped before `threads`: idle workers see their channel disconnect and exit. Locked only
    // to push or pop a sender.
    idle: Arc<IdleList>,
    threads: Mutex<Vec<JoinOnDrop<()>>>,
}

impl std::fmt::Debug for Work {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Work")
    }
}

impl Workers {
    /// A pool whose threads are named `name` and of which at most `max_idle` wait idle.
    pub(crate) fn new(name: String, max_idle: usize) -> Self {
        Self {
            name,
            max_idle,
            idle: Arc::new(Mutex::new(Vec::new())),
            threads: Mutex::new(Vec::new()),
        }
    }

    /// Runs `task` on an idle worker, or on a new one when none is idle.
    pub(crate) fn run(&self, task: Task) -> std::io::Result<()> {
        let mut task = task;
        loop {
            let idle = self.idle.lock().ok().and_then(|mut idle| idle.pop());
            let Some(sender) = idle else { break };
            match sender.send(Work { task, home: sender.clone() }) {
                Ok(()) => return Ok(()),
                // That worker is gone (it panicked): try the next one.
                Err(crossbeam_channel::SendError(work)) => task = work.task,
            }
        }
        let (tx, rx) = crossbeam_channel::bounded::<Work>(1);
        let idle: Weak<IdleList> = Arc::downgrade(&self.idle);
        let max_idle = self.max_idle;
        let handle = spawn_named(self.name.clone(), move || {
            while let Ok(Work { task, home }) = rx.recv() {
                task();
                let Some(idle) = idle.upgrade() else { return };
                let Ok(mut idle) = idle.lock() else { return };
                if idle.len() >= max_idle {
                    return;
                }
                idle.push(home);
            }
        })?;
        if tx.send(Work { task, home: tx.clone() }).is_err() {
            return Err(std::io::Error::other("the new provider worker exited at once"));
        }
        drop(tx);
        if let Ok(mut threads) = self.threads.lock() {
            // Joins (at once) the handles of workers that already exited.
            threads.retain(|thread| !thread.is_finished());
            threads.push(handle);
        }
        Ok(())
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.clear();
        }
        // `threads` joins when the field drops, after this.
    }
}
