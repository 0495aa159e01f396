//! Integration tests of the policy crate: the command table, rule parsing and matching, and
//! the decision chain.
// Test helpers unwrap: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod chain;
mod command;
mod permission;
mod rules;
mod support;
