//! Asking the caller about hosts the policy does not cover, and reporting every decision.
//!
//! Invariants: one ask per host at a time (concurrent requests for a host wait for the one
//! answer); an answer for the session (or always) is remembered for the proxy's life; the lock
//! over that memory is held for map operations only, never across the caller's `Decide` or a
//! channel operation; a panicking `Decide` counts as a denial.

use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crossbeam_channel::{Receiver, Sender};

use crate::policy::{DenyReason, Host, HttpRequest, RequestKind};

/// A question for the caller: may this command reach this host?
#[derive(Debug)]
pub struct Ask<'a> {
    /// The host as the client named it.
    pub host: &'a Host,
    /// The port of the request that asked first.
    pub port: u16,
    /// How the client reached the proxy.
    pub kind: RequestKind,
    /// The label of the endpoint the request came through (which command asked).
    pub endpoint: &'a str,
    pub(crate) stopped: &'a Receiver<()>,
}

impl Ask<'_> {
    /// Disconnects (never receives a message) once the endpoint or the proxy stops. A `Decide`
    /// waiting for a user selects on it and answers `Deny` then: the proxy's drop waits for every
    /// `Decide` call to return.
    pub fn stopped(&self) -> &Receiver<()> {
        self.stopped
    }
}

/// The answer to an [`Ask`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// This request (and those waiting on the same ask).
    AllowOnce,
    /// Every request to the host while the proxy lives.
    AllowSession,
    /// Like `AllowSession`; the caller also writes the host into its configuration.
    AllowAlways,
    /// Refuse.
    Deny,
}

impl Decision {
    fn allows(self) -> bool {
        match self {
            Decision::AllowOnce | Decision::AllowSession | Decision::AllowAlways => true,
            Decision::Deny => false,
        }
    }
}

/// Answers asks. Called on the connection's thread; may block until a user answers.
pub trait Decide: Send + Sync {
    /// The decision for `ask`; must return once `ask.stopped()` disconnects.
    fn decide(&self, ask: &Ask<'_>) -> Decision;
}

/// Receives every decision the proxy takes (approval records, an access log).
pub trait Observe: Send + Sync {
    /// Called on the connection's thread once per request, after its decision (and, when the
    /// request was allowed but the host could not be reached, once more with `Failed`).
    fn observe(&self, event: &NetworkEvent);
}

/// One decision (or failed connection) of the proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkEvent {
    /// The label of the endpoint the request came through.
    pub endpoint: String,
    /// The host as the client named it.
    pub host: Host,
    /// The port.
    pub port: u16,
    /// How the client reached the proxy.
    pub kind: RequestKind,
    /// The request, for plain HTTP.
    pub request: Option<HttpRequest>,
    /// What happened.
    pub outcome: Outcome,
}

/// The outcome of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Let through.
    Allowed { source: DecisionSource },
    /// Refused; `reason` is what the client was told.
    Denied { source: DecisionSource, reason: DenyReason },
    /// Allowed, but the host could not be reached.
    Failed { error: String },
}

/// Who decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionSource {
    /// The rules (`allowed_domains`, `denied_domains`, presets).
    Policy,
    /// An earlier answer for the session.
    Session,
    /// The caller's `Decide`, asked for this request.
    User(Decision),
    /// The caller's `Decide`, asked for a concurrent request to the same host.
    Joined(Decision),
    /// The endpoint or the proxy stopped while the request waited for an answer.
    Stopped,
}

/// The session's remembered answers and the asks in flight.
pub(crate) struct Asks {
    decide: Arc<dyn Decide>,
    // Shared by every connection thread: a short critical section per ask (map lookups and
    // inserts), never held across `decide` or a channel operation.
    state: Mutex<AskState>,
    waiting: AtomicUsize,
}

#[derive(Default)]
struct AskState {
    allowed_for_session: HashSet<Host>,
    in_flight: HashMap<Host, Vec<Sender<Decision>>>,
}

impl Asks {
    pub(crate) fn new(decide: Arc<dyn Decide>) -> Asks {
        Asks { decide, state: Mutex::new(AskState::default()), waiting: AtomicUsize::new(0) }
    }

    /// Requests waiting for an answer (asking or joined to an ask).
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }

    /// Resolves an ask: by the session's memory, by joining an ask in flight, or by asking.
    /// Returns whether the request may go on, and who decided.
    pub(crate) fn resolve(&self, ask: &Ask<'_>) -> (bool, DecisionSource) {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let resolved = self.resolve_counted(ask);
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        resolved
    }

    fn resolve_counted(&self, ask: &Ask<'_>) -> (bool, DecisionSource) {
        let waiting = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.allowed_for_session.contains(ask.host) {
                return (true, DecisionSource::Session);
            }
            match state.in_flight.get_mut(ask.host) {
                Some(waiters) => {
                    let (answer_tx, answer_rx) = crossbeam_channel::bounded(1);
                    waiters.push(answer_tx);
                    Some(answer_rx)
                }
                None => {
                    state.in_flight.insert(ask.host.clone(), Vec::new());
                    None
                }
            }
        };
        if let Some(answer) = waiting {
            return crossbeam_channel::select! {
                recv(answer) -> answer => match answer {
                    Ok(decision) => (decision.allows(), DecisionSource::Joined(decision)),
                    Err(_) => (false, DecisionSource::Stopped),
                },
                recv(ask.stopped) -> _ => (false, DecisionSource::Stopped),
            };
        }
        let decision =
            catch_unwind(AssertUnwindSafe(|| self.decide.decide(ask))).unwrap_or(Decision::Deny);
        let waiters = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            match decision {
                Decision::AllowSession | Decision::AllowAlways => {
                    state.allowed_for_session.insert(ask.host.clone());
                }
                Decision::AllowOnce | Decision::Deny => {}
            }
            state.in_flight.remove(ask.host).unwrap_or_default()
        };
        for waiter in waiters {
            // Each waiter's channel has room for its one answer.
            let _ = waiter.try_send(decision);
        }
        (decision.allows(), DecisionSource::User(decision))
    }
}
