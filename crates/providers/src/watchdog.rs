//! The idle watchdog: one long-lived thread per client that closes the connection of a request
//! whose stream has made no progress for the client's idle timeout.
//!
//! A request registers a `Watch` (a push under a short lock, no message to the thread), and its
//! reader stamps the watch after every read (one atomic store). The thread sleeps until the
//! earliest deadline among the watches it saw, or one timeout when it saw none. Every watch of a
//! client has the same timeout, so a watch registered later never has a deadline before the
//! thread's next wake-up, and progress only moves deadlines later: registering needs no
//! wake-up, and a request costs the thread nothing unless it stalls.
//!
//! Invariants:
//! - A watch whose deadline passed while it was still active gets `timed_out` set and its agent
//!   shut down (which wakes the blocked read), exactly once.
//! - Dropping the `Watchdog` disconnects the thread's channel; the thread exits and is joined.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use codecoder_stdx::{JoinOnDrop, spawn_named};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

/// One request's stream under watch.
#[derive(Debug)]
pub(crate) struct Watch {
    /// Milliseconds since the watchdog's epoch at the last progress.
    last_progress_ms: AtomicU64,
    done: AtomicBool,
    timed_out: AtomicBool,
    agent: ureq::Agent,
    epoch: Instant,
}

impl Watch {
    /// Records progress: the stream delivered bytes now.
    pub(crate) fn progress(&self) {
        self.last_progress_ms.store(millis_since(self.epoch), Ordering::Relaxed);
    }

    /// Whether the watchdog closed the connection for want of progress.
    pub(crate) fn timed_out(&self) -> bool {
        self.timed_out.load(Ordering::SeqCst)
    }
}

/// Ends a watch when the read is over (finished, failed or aborted).
#[derive(Debug)]
pub(crate) struct WatchGuard(Arc<Watch>);

impl WatchGuard {
    pub(crate) fn watch(&self) -> &Watch {
        &self.0
    }
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.0.done.store(true, Ordering::SeqCst);
    }
}

#[derive(Debug)]
struct Shared {
    epoch: Instant,
    timeout: Duration,
    // Locked only to push or take watches, never across I/O or a channel operation.
    watches: Mutex<Vec<Arc<Watch>>>,
}

/// The watchdog of one client. Its thread starts with the first watch.
#[derive(Debug)]
pub(crate) struct Watchdog {
    name: String,
    shared: Arc<Shared>,
    // The sender is dropped before the thread is joined (see `Drop`).
    thread: OnceLock<Option<(Sender<()>, JoinOnDrop<()>)>>,
}

impl Watchdog {
    /// A watchdog whose thread will be named `name`, closing streams idle for `timeout`.
    pub(crate) fn new(name: String, timeout: Duration) -> Self {
        let shared = Arc::new(Shared {
            epoch: Instant::now(),
            timeout: timeout.max(Duration::from_millis(1)),
            watches: Mutex::new(Vec::new()),
        });
        Self { name, shared, thread: OnceLock::new() }
    }

    /// Starts watching a stream read through `agent`. `None` when the watchdog's thread could
    /// not be started.
    pub(crate) fn watch(&self, agent: ureq::Agent) -> Option<WatchGuard> {
        let started = self.thread.get_or_init(|| {
            let (stop_tx, stop_rx) = crossbeam_channel::bounded::<()>(0);
            let shared = Arc::clone(&self.shared);
            let handle = spawn_named(self.name.clone(), move || run(&shared, &stop_rx)).ok()?;
            Some((stop_tx, handle))
        });
        started.as_ref()?;
        let epoch = self.shared.epoch;
        let watch = Arc::new(Watch {
            last_progress_ms: AtomicU64::new(millis_since(epoch)),
            done: AtomicBool::new(false),
            timed_out: AtomicBool::new(false),
            agent,
            epoch,
        });
        if let Ok(mut watches) = self.shared.watches.lock() {
            watches.retain(|w| !w.done.load(Ordering::SeqCst));
            watches.push(Arc::clone(&watch));
        }
        Some(WatchGuard(watch))
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(Some((stop_tx, handle))) = self.thread.take() {
            drop(stop_tx);
            drop(handle);
        }
    }
}

fn millis_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The thread: sleep until the next deadline, close what stalled, repeat until stopped.
fn run(shared: &Shared, stop: &Receiver<()>) {
    let timeout_ms = u64::try_from(shared.timeout.as_millis()).unwrap_or(u64::MAX);
    loop {
        let now = millis_since(shared.epoch);
        let mut next = now.saturating_add(timeout_ms);
        if let Ok(mut watches) = shared.watches.lock() {
            watches.retain(|watch| {
                if watch.done.load(Ordering::SeqCst) {
                    return false;
                }
                let deadline =
                    watch.last_progress_ms.load(Ordering::Relaxed).saturating_add(timeout_ms);
                if deadline <= now {
                    watch.timed_out.store(true, Ordering::SeqCst);
                    watch.agent.clone().shutdown();
                    return false;
                }
                next = next.min(deadline);
                true
            });
        }
        match stop.recv_timeout(Duration::from_millis(next.saturating_sub(now).max(1))) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}
