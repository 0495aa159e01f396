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

/// What the window error advises, after its figures.
const WINDOW_ADVICE: &str = "compact it (`/compact`, `codecoder sessions compact`) or start a new session, and if even a first request does not fit, give the model a larger window (a local server's context size, `model_context_window`) or a smaller `model_max_output_tokens`";
