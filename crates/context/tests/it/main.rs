//! The context crate's integration tests: AGENTS.md discovery and caching, the section size
//! policy, the environment section, prefix stability over a 5-step conversation (by hand and
//! through a real AgentLoop), the context-window check and guard, and blob resolution. All run
//! in temp dirs with an injected clock; none reads `$HOME` or the process environment.
// Test helpers unwrap: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agents_md;
mod blobs;
mod environment;
mod kernel;
mod prefix;
mod sections;
mod support;
mod window;
