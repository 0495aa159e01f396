//! Prompt assembly (design.md "Context"): the system prompt's sections, AGENTS.md discovery,
//! token counting, and the context-window check.
//!
//! `ContextBuilder` implements the kernel's `PromptBuilder`. The system prompt is, in order:
//! base instructions, environment (cwd, OS, shell, date, git branch and status), the joined
//! AGENTS.md files, and the agent's own instructions when present. Tool schemas travel in
//! `ModelRequest.tools`; each provider adapter puts them where its API wants them.
//!
//! Invariants:
//! - Prefix stability: a session's instructions are computed once and never change, and its
//!   history is only ever extended, so consecutive requests share their prefix byte for byte.
//! - Size policy: a section over the refusal threshold (10,000 tokens) is an error when the
//!   builder is made; one over the warning threshold (1,000) is a `Warning`.
//! - No silent truncation of the conversation: a request that does not fit the window is an
//!   error (`ContextBuilder::check_fits`, `ContextWindowGuard`) unless `ContextCompactor`
//!   compacted it first, which the log records (a `compaction` record, the summary request a
//!   step of its own). Only AGENTS.md is cut to its byte budget, and the cut is stated in the
//!   prompt and in a `Warning`.
//! - Rebuildable: `rebuild_request` makes the request of any step of a session log again,
//!   from the log's `context` records and projection alone.
//! - No process is spawned and the process environment is not read: the caller passes in the
//!   shell, the git status and the clock.

mod agents_md;
mod base;
mod builder;
mod compact;
mod environment;
mod error;
mod rebuild;
mod section;
mod tokens;
mod window;

pub use agents_md::{
    AGENTS_MD, AGENTS_OVERRIDE_MD, AgentsMd, AgentsMdConfig, AgentsMdLoader, DocSource, FileSystem,
    find_project_root,
};
pub use base::BASE_INSTRUCTIONS;
pub use builder::{BlobResolver, ContextBuilder, ContextConfig, ENVIRONMENT_SECTION};
pub use compact::{
    CARRYOVER_PREFIX, CallViewer, ContextCompactor, SUMMARY_PREFIX, SUMMARY_PROMPT, default_limit,
};
pub use environment::{
    Environment, GIT_STATUS_MAX_TRACKED_FILES, GitStatus, git_tracked_files, read_git_head,
    render_environment, summarize_git_status,
};
pub use error::{Error, Result};
pub use rebuild::{RebuiltRequest, ResolveBlob, rebuild_request, request_count};
pub use section::{Section, SectionPolicy, Warning};
pub use tokens::{ESTIMATE_ERROR, count_tokens, estimate_tokens, tokens_over};
pub use window::ContextWindowGuard;

#[cfg(test)]
mod tests;
