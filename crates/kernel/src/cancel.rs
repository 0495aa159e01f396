//! `CancelToken`: a flag that can also be waited on in a `select!`.
//!
//! Invariant: once cancelled, a token stays cancelled; `signal()` is a receiver that becomes
//! ready (disconnected) at the moment of cancel, so blocked code wakes without polling.

use std::convert::Infallible;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crossbeam_channel::{Receiver, Sender};

/// A shared cancellation flag. Clones share the flag.
#[derive(Clone)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

struct Inner {
    flag: AtomicBool,
    // A Mutex because cancel may come from any clone on any thread and must drop the sender
    // exactly once; it is never held across a channel operation.
    trigger: Mutex<Option<Sender<Infallible>>>,
    signal: Receiver<Infallible>,
}

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        // Nothing is ever sent: the channel only exists to be disconnected.
        let (trigger, signal) = crossbeam_channel::bounded(0);
        Self {
            inner: Arc::new(Inner {
                flag: AtomicBool::new(false),
                trigger: Mutex::new(Some(trigger)),
                signal,
            }),
        }
    }

    /// Cancels: every clone sees it, and every `signal()` receiver becomes ready.
    pub fn cancel(&self) {
        self.inner.flag.store(true, Ordering::SeqCst);
        let trigger = self.inner.trigger.lock().unwrap_or_else(PoisonError::into_inner).take();
        drop(trigger);
    }

    /// Whether `cancel` was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.flag.load(Ordering::SeqCst)
    }

    /// A receiver that yields `Err(RecvError)` once the token is cancelled and blocks until then:
    /// put it in a `select!` next to what you wait for.
    pub fn signal(&self) -> &Receiver<Infallible> {
        &self.inner.signal
    }
}

impl Default for CancelToken {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelToken").field("cancelled", &self.is_cancelled()).finish()
    }
}
