//! The tool workers of one agent: named threads (`tool-exec-N`) that wait for jobs and run them,
//! so a call costs a channel wake-up instead of a thread spawn (a new thread can wait a whole
//! scheduler slice for a CPU on a busy machine; a woken one rarely does).
//!
//! Invariants:
//! - A job never waits behind a busy worker: `run` reserves an idle worker or starts a new one.
//!   A tool that ignores cancel therefore only ever occupies its own worker.
//! - Only the owning AgentLoop submits, so the idle count it reserves from never overstates: a
//!   worker counts itself idle only after its job returned (the job's result may arrive a moment
//!   before that, which at worst starts one worker more than needed).
//! - Shutdown by disconnect: dropping the pool drops the job sender, idle workers end, and every
//!   worker is joined (after its current job).

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use codecoder_stdx::{JoinOnDrop, spawn_named};
use crossbeam_channel::{Receiver, Sender};

type Job = Box<dyn FnOnce() + Send>;

pub(crate) struct WorkerPool {
    // Declared before `workers`: dropped first, so idle workers see the disconnect and end
    // before they are joined.
    jobs: Sender<Job>,
    queue: Receiver<Job>,
    idle: Arc<AtomicUsize>,
    workers: Vec<JoinOnDrop<()>>,
}

impl WorkerPool {
    pub(crate) fn new() -> Self {
        // Unbounded, and still bounded in fact: a job is queued only for a reserved idle worker
        // or a worker started for it, so the queue never holds more jobs than there are workers.
        let (jobs, queue) = crossbeam_channel::unbounded();
        Self { jobs, queue, idle: Arc::new(AtomicUsize::new(0)), workers: Vec::new() }
    }

    /// Runs `job` on an idle worker, or on a new one when none is idle. The job must not panic
    /// (tool jobs run under `catch_unwind`).
    pub(crate) fn run(&mut self, job: Job) -> io::Result<()> {
        let reserved = self
            .idle
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if !reserved {
            let queue = self.queue.clone();
            let idle = Arc::clone(&self.idle);
            let name = format!("tool-exec-{}", self.workers.len());
            let worker = spawn_named(name, move || {
                for job in queue {
                    job();
                    idle.fetch_add(1, Ordering::SeqCst);
                }
            })?;
            self.workers.push(worker);
        }
        // The pool holds `queue`, so the channel is connected; a failed send cannot happen.
        let _ = self.jobs.send(job);
        Ok(())
    }

    /// Workers started so far (busy or idle).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.workers.len()
    }

    /// Workers waiting for a job.
    #[cfg(test)]
    pub(crate) fn idle(&self) -> usize {
        self.idle.load(Ordering::SeqCst)
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        // Disconnect: replace both channel ends so workers blocked in `recv` wake and end; the
        // `workers` field then joins them.
        let (jobs, queue) = crossbeam_channel::bounded(0);
        self.jobs = jobs;
        self.queue = queue;
    }
}
