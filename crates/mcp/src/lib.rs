//! MCP client: the tools of configured Model Context Protocol servers, as kernel tools.
//!
//! The crate owns its async runtime (tokio, current-thread) on one named thread; everything
//! else sees a synchronous facade, `McpManager`: start the servers, list their tools, call one
//! (blocking, with a timeout and a cancel signal). The kernel, the tools and the providers stay
//! free of any runtime.
//!
//! Invariants: a server that fails to start is reported and left out, never an error of the
//! session; nothing waits for the servers to start (their tools join the session's registry
//! as they become ready, `McpToolSource`), and no start takes longer than the server's startup
//! timeout; a stdio server gets a base
//! environment plus its own `env` table, never codecoder's whole environment, and dies with
//! the runtime thread (kill on drop, and the parent-death signal).

mod client;
mod config;
mod error;
mod interact;
mod manager;
mod names;
mod result;
mod sse;
mod tool;

pub use config::{
    Bridge, DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, McpBridge, ServerConfig, Transport,
    base_env, expand_vars, parse_mcp_json,
};
pub use error::{Error, Result};
pub use interact::{CallHost, NoHost, Sampler, elicit};
pub use manager::{CallOutcome, McpManager, McpToolInfo, Options, Report, ReportOutcome};
pub use names::qualified_names;
pub use result::to_tool_output;
pub use tool::{McpTool, McpToolSource, tools};

#[cfg(test)]
mod tests;
