//! The kernel's integration tests: event order, cancellation, tool orchestration, approvals,
//! steering, loop hygiene, subagents, thread leaks. Each runs a real AgentLoop against a
//! scripted model and a session store in a temp dir, and validates the log afterwards.
// Test helpers unwrap: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cancel;
mod compact;
mod escalate;
mod hooks;
mod hygiene;
mod late;
mod leak;
mod order;
mod progress;
mod reasoning;
mod redact;
mod subagent;
mod support;
