//! The context crate's one error type.
//!
//! Invariant: variants carry structured fields; `Display` is lowercase without a trailing period.
//! `ContextWindowExceeded`'s message is shown to the person as is (it is the turn's failure
//! message), so it says what to do.

use std::io;
use std::path::PathBuf;

/// What can go wrong while assembling a prompt.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read. The message names the kind of failure (`permission denied`);
    /// `source` holds the full chain.
    #[error("could not read {}: {}", path.display(), source.kind())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// A prompt section is larger than the refusal threshold.
    #[error(
        "the prompt section `{section}` has ~{tokens} tokens, more than the limit of {limit}; \
         shorten it"
    )]
    SectionTooLarge {
        /// The section's name.
        section: String,
        /// Its size in tokens.
        tokens: u64,
        /// The refusal threshold.
        limit: u64,
    },
    /// The output reserve leaves no room for input.
    #[error(
        "the output reserve of {max_output_tokens} tokens leaves no room in a context window of \
         {context_window} tokens"
    )]
    InvalidWindow {
        /// The model's context window.
        context_window: u64,
        /// The tokens reserved for the answer.
        max_output_tokens: u64,
    },
    /// The next request does not fit the model's context window.
    #[error(
        "the conversation needs ~{needed} tokens but {model} fits {context_window} - \
         {max_output_tokens} = {available}; compact it (`/compact`, `codecoder sessions compact`) or \
         start a new session, and if even a first request does not fit, give the model a larger \
         window (a local server's context size, `model_context_window`) or a smaller \
         `model_max_output_tokens`"
    )]
    ContextWindowExceeded {
        /// The model.
        model: String,
        /// The estimated size of the request.
        needed: u64,
        /// The model's context window.
        context_window: u64,
        /// The tokens reserved for the answer.
        max_output_tokens: u64,
        /// `context_window - max_output_tokens`.
        available: u64,
    },
    /// A request number past the log's requests.
    #[error("the session has {count} model request(s); there is no request {number}")]
    NoSuchRequest {
        /// The number asked for (from 1).
        number: usize,
        /// How many requests the log holds.
        count: usize,
    },
    /// The log holds no `context` record for the request (it predates them).
    #[error(
        "request {number} cannot be rebuilt: the log has no context record before it (it was \
         written by an older codecoder)"
    )]
    NoContext {
        /// The request's number (from 1).
        number: usize,
    },
}

/// The context crate's result.
pub type Result<T> = std::result::Result<T, Error>;
