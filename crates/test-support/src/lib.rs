//! Dev-only test support for codecoder: the fake model server.
//!
//! `FakeModelServer` listens on 127.0.0.1, speaks the three wire APIs (OpenAI Responses,
//! OpenAI-compatible Chat Completions, Anthropic Messages; chosen by the request path), plays a
//! `Script` of replies and faults — one step per request, in order — and records every request.
//!
//! ```
//! use codecoder_test_support::{FakeModelServer, Fault, Reply, Script, Usage};
//! use serde_json::json;
//!
//! let script = Script::new()
//!     .reply(Fault::rate_limited(1))
//!     .reply(Reply::text("Hello, wörld").chunks(3).usage(Usage::tokens(12, 3)))
//!     .reply(
//!         Reply::tool_call("call_1", "read_file", json!({"path": "a.rs"}))
//!             .and_tool_call("call_2", "read_file", json!({"path": "b.rs"}))
//!             .arg_fragments(3),
//!     );
//! let server = FakeModelServer::start(script)?;
//! let base_url = server.base_url(); // http://127.0.0.1:PORT; point a provider at it
//! # drop(base_url);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Faults, one per step:
//!
//! ```
//! use codecoder_test_support::{Fault, Reply, Script};
//!
//! let script = Script::new()
//!     .reply(Fault::rate_limited(1)) // 429, `Retry-After: 1`, the API's error JSON
//!     .reply(Fault::status(500)) // 500 `server_error` / `api_error`
//!     .reply(Fault::overloaded()) // 529 `overloaded_error`
//!     .reply(Fault::hang_up()) // the connection closes before any response
//!     .reply(Reply::text("partial").chunks(5).drop_after(3)) // closed after 3 SSE events
//!     .reply(Reply::text("x").error_after(2)) // the API's error event after 2 events
//!     .reply(Reply::text("slow").stall(0, 5_000)) // 5 s before the first event
//!     .reply(Reply::text("bad").malformed(1)) // an event with truncated JSON before event 1
//!     .reply(Reply::text("héllo").split_utf8()) // events cut inside `é` across two writes
//!     .reply(Reply::text("…").keep_alive().empty_deltas()) // comments and empty deltas
//!     .reply(Reply::endless_text()); // streams until the client goes away
//! # drop(script);
//! ```
//!
//! Invariants: the library never prints and never panics on what a client sends (bad requests
//! get a 400 with a message); every thread it starts is named and joined when the server is
//! dropped. The same `Script` is the Rust builder and the JSON format of `codecoder-fake-model
//! --script`.

mod http;
pub mod huge_repo;
mod script;
mod server;
mod wire;

pub use script::{
    ChatReasoningField, ChatUsage, Fault, Inject, Reasoning, Reply, Script, Stall, Step,
    StopReason, StreamError, Text, ToolCall, UntilTools, Usage,
};
pub use server::{
    FakeModelServer, RecordedRequest, SCRIPT_EXHAUSTED, SEND_STAMP, STREAM_TOOLS_REFUSAL,
};
pub use wire::Api;

use std::io;
use std::time::Duration;

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A wait ended before the count was reached.
    #[error("timed out after {timeout:?} waiting for {wanted} {what}, saw {seen}")]
    Timeout {
        /// What was counted (`requests`, `disconnects`).
        what: &'static str,
        /// The count waited for.
        wanted: usize,
        /// The count when the wait gave up.
        seen: usize,
        /// How long the wait lasted.
        timeout: Duration,
    },
    /// A JSON script did not parse.
    #[error("invalid script: {source}")]
    Script {
        /// The parse error, with line and column.
        source: serde_json::Error,
    },
    /// Reading a script file failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

#[cfg(test)]
mod tests;
