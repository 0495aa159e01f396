//! Integration tests of the policy crate: the command table, rule parsing and matching, and
//! the decision chain.

mod chain;
mod command;
mod rules;
mod support;
