//! The managed network for sandboxed commands: a domain policy ([`NetworkPolicy`]) and a proxy
//! server ([`start`]) that enforces it.
//!
//! The proxy listens on one unix socket per sandboxed command ([`ProxyHandle::endpoint`]), on
//! loopback TCP listeners for callers that cannot reach a unix socket, and speaks HTTP CONNECT,
//! plain HTTP in absolute form and SOCKS5 on each, told apart by the first byte a client sends.
//! A host the policy does not cover is asked about through the caller's [`Decide`]; every
//! decision is reported to the caller's [`Observe`]. A tunnel to a host whose rules name paths
//! or methods is terminated with TLS by a per-session CA ([`ProxyHandle::ca_certificate_pem`])
//! so each request inside is checked; the CA's key never leaves the process.
//!
//! Invariants: no async runtime (a named thread per listener and per connection, joined on
//! drop); dropping the [`ProxyHandle`] stops every thread, closes every socket and removes the
//! socket files; the policy is pure data and never touches the network.

mod conn;
mod decide;
mod inspect;
mod policy;
mod server;
mod sweep;

pub use decide::{Ask, Decide, Decision, DecisionSource, NetworkEvent, Observe, Outcome};
pub use policy::{
    DenyReason, Host, HostPattern, HttpRequest, NetworkPolicy, PRESETS, Preset, RequestKind, Rule,
    Target, Verdict,
};
pub use server::{CaFiles, Endpoint, ProxyConfig, ProxyHandle, start, system_ca_bundle};

use std::path::PathBuf;

/// The errors of the network proxy crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A rule in `allowed_domains` or `denied_domains` does not parse.
    #[error("invalid network rule {rule:?}: {reason}")]
    InvalidRule { rule: String, reason: &'static str },
    /// A preset name that is not one of [`PRESETS`].
    #[error("unknown network preset {name:?} (known: {known})")]
    UnknownPreset { name: String, known: String },
    /// A listener could not be bound.
    #[error("cannot listen on {address}")]
    Listen {
        address: String,
        #[source]
        source: std::io::Error,
    },
    /// The private directory for the unix sockets could not be made.
    #[error("cannot create the proxy's socket directory in {}", parent.display())]
    SocketDir {
        parent: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The session's CA for TLS inspection could not be made.
    #[error("cannot make the network proxy's certificate authority: {reason}")]
    Authority { reason: String },
    /// A listener thread could not be started.
    #[error("cannot start the proxy thread {name}")]
    Thread {
        name: String,
        #[source]
        source: std::io::Error,
    },
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests;
