//! What ends a [`Child::wait`](crate::Child::wait) before the process exits by itself: a cancel
//! signal, a deadline and a kill request, given together so that the caller needs no thread of
//! its own to merge them into one trigger.
//!
//! Invariants:
//! - A signal is a crossbeam receiver that "fires" when it yields a message or disconnects:
//!   the kernel's `CancelToken::signal()` (a receiver that disconnects on cancel), a job's kill
//!   sender being dropped, a channel fed by a signal handler all fit as they are.
//! - Which one ended the wait is decided in a fixed order when several have fired: kill, then
//!   cancel, then the deadline. The outcome never depends on which ready receiver `select!`
//!   happened to pick.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Select};

use crate::Outcome;

/// What stops a wait early, besides the process exiting. Build one with [`Wait::new`] or
/// [`Wait::within`] and the `*_on` methods, or write the fields out.
#[derive(Debug)]
pub struct Wait<'a, C = Infallible, K = Infallible> {
    /// Fires when the caller's work is cancelled (a turn's cancel token): the outcome is
    /// [`Outcome::Cancelled`].
    pub cancel: Option<&'a Receiver<C>>,
    /// When the command has run too long: the outcome is [`Outcome::TimedOut`].
    pub deadline: Option<Instant>,
    /// Fires when someone asks for this one process to stop (`job_kill`): the outcome is
    /// [`Outcome::Killed`].
    pub kill: Option<&'a Receiver<K>>,
}

impl Wait<'static> {
    /// Waits until the process exits, whatever it takes.
    pub fn new() -> Self {
        Self { cancel: None, deadline: None, kill: None }
    }

    /// Waits at most `timeout` from now.
    pub fn within(timeout: Duration) -> Self {
        Self::new().timeout(Some(timeout))
    }
}

impl Default for Wait<'static> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a, C, K> Wait<'a, C, K> {
    /// Also stops when `cancel` yields a message or disconnects.
    pub fn cancel_on<T>(self, cancel: &'a Receiver<T>) -> Wait<'a, T, K> {
        Wait { cancel: Some(cancel), deadline: self.deadline, kill: self.kill }
    }

    /// Also stops when `kill` yields a message or disconnects.
    pub fn kill_on<T>(self, kill: &'a Receiver<T>) -> Wait<'a, C, T> {
        Wait { cancel: self.cancel, deadline: self.deadline, kill: Some(kill) }
    }

    /// Stops at `deadline` (none when `None`).
    #[must_use]
    pub fn deadline(self, deadline: Option<Instant>) -> Self {
        Self { deadline, ..self }
    }

    /// Stops `timeout` from now (no deadline when `None`, or when it is too far to represent).
    #[must_use]
    pub fn timeout(self, timeout: Option<Duration>) -> Self {
        self.deadline(timeout.and_then(|timeout| Instant::now().checked_add(timeout)))
    }

    /// Why the wait stops, once `first` (the signal `select!` picked) has fired: the
    /// highest-ranked of the signals that have fired by now.
    pub(crate) fn stopped_by(&self, first: Outcome) -> Outcome {
        if first == Outcome::Killed || self.kill.is_some_and(fired) {
            return Outcome::Killed;
        }
        if first == Outcome::Cancelled || self.cancel.is_some_and(fired) {
            return Outcome::Cancelled;
        }
        first
    }
}

/// Whether `receiver` has a message or is disconnected, without taking the message.
fn fired<T>(receiver: &Receiver<T>) -> bool {
    let mut select = Select::new();
    select.recv(receiver);
    select.try_ready().is_ok()
}
