//! The variables this crate sets in confined children (named in `protocol::env`).

pub use codecoder_protocol::env::{CODECODER_SANDBOX, CODECODER_SANDBOX_NETWORK_DISABLED};
