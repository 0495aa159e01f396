//! What a client remembers about a server beyond one session: today, that it cannot stream
//! requests that offer tools, learnt when such a request failed before any content arrived and
//! the same request sent without streaming worked.
//!
//! The providers crate keeps no file of its own: the runtime hands `HttpModelClient` a
//! `ProviderMemory` (codecoder's home holds it; tests hold it in memory). A server is keyed by
//! provider id, base URL and model (`ServerKey`): another base URL is another server, and a
//! proxy in front of several servers may route each model to a different one.
//!
//! Invariant: a memory that cannot be written never fails a request; the client remembers for
//! the session anyway and its warning says the memory failed.

use std::io;

/// A server and model, as a memory keys what it learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerKey<'a> {
    /// The provider id (`[model_providers.ID]`).
    pub provider: &'a str,
    /// The provider's base URL.
    pub base_url: &'a str,
    /// The model id sent.
    pub model: &'a str,
}

/// A store of what was learnt about servers, shared by the sessions of one home.
pub trait ProviderMemory: Send + Sync {
    /// Whether `server` was found unable to stream requests that offer tools.
    fn unstreamed_tools(&self, server: &ServerKey<'_>) -> bool;

    /// Records that `server` cannot stream requests that offer tools.
    ///
    /// # Errors
    /// When the record cannot be written.
    fn remember_unstreamed_tools(&self, server: &ServerKey<'_>) -> io::Result<()>;

    /// Where the records are kept, for a person who wants to undo one (a file's path).
    fn location(&self) -> &str;
}
