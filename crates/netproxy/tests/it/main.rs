//! Integration tests of the network proxy: loopback servers stand in for the hosts.
// Test helpers unwrap: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]
