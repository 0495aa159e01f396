//! Integration tests of the network proxy: loopback HTTP and echo servers stand in for the
//! hosts, reached by made-up names through the proxy's name overrides; clients speak CONNECT,
//! plain HTTP and SOCKS5 over the unix and TCP endpoints, and curl drives the TCP endpoint.
// Test helpers unwrap: a failed unwrap is a failed test; curl is run directly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod asks;
mod curl;
mod inspect;
mod lifecycle;
mod protocols;
mod support;
