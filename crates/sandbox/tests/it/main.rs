//! The sandbox crate's integration tests: one binary, a module per subject.

mod absent;
mod escape;
mod network;
mod socks;
