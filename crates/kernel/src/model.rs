//! The model seam: `ModelClient` starts a streaming request and returns a `ResponseStream` of
//! provider-neutral `ResponseEvent`s (design.md "Models").
//!
//! The stream is produced on the provider's own thread into a channel, so the AgentLoop can
//! `select!` over it next to `cmd`. Invariants of a `ResponseStream`:
//! - Dropping it stops the request at once: its abort hook runs (an HTTP adapter closes its
//!   socket there), the receiver is dropped (a producer blocked on a full channel wakes with an
//!   error), and then its worker thread is joined. A producer must return promptly after the
//!   abort hook ran or a send failed.
//! - A well-behaved stream ends with exactly one `Completed` or `Error`. Retries, backoff and
//!   idle timeouts live in the adapter; the kernel never sees a retry.

use std::fmt;
use std::sync::Arc;

pub use codecoder_protocol::ToolSpec;
use codecoder_protocol::{Message, PromptSection, SessionId, StopReason, ToolCallId, Usage};
use codecoder_stdx::{JoinOnDrop, spawn_named};
use crossbeam_channel::{Receiver, Sender, never};

use crate::error::Result;

/// One request to a model: everything it will see.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The session, for provider-side prompt-cache keys.
    pub session_id: SessionId,
    /// The model id, as sent to the provider.
    pub model: String,
    /// The system prompt: the prompt sections, assembled.
    pub instructions: String,
    /// The sections `instructions` is made of, by name: their texts joined by a blank line give
    /// `instructions` (see `codecoder_protocol::join_sections`). Empty when the builder names no
    /// sections; the log then keeps `instructions` as one section.
    pub sections: Vec<PromptSection>,
    /// The conversation so far: the session log's projection, oldest first. Shared, not
    /// copied: each message is cloned once per session, so a request costs O(1) per message.
    pub history: Vec<Arc<Message>>,
    /// The tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// A cap on generated tokens, when set.
    pub max_output_tokens: Option<u32>,
    /// A JSON Schema the answer's text must follow (`exec --output-schema`), for providers that
    /// support structured output.
    pub output_schema: Option<serde_json::Value>,
    /// Reasoning effort, summary and thinking budget (empty: none sent).
    pub reasoning: codecoder_protocol::ReasoningSettings,
}

/// A failure to get an answer, after the adapter's own retries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError {
    /// What went wrong, for the person.
    pub message: String,
    /// The stream broke after it had produced events, in a way that sending the same request
    /// again may fix (a dropped connection, an overloaded server). The kernel then discards the
    /// partial response (nothing of it was logged) and runs the step again.
    pub retryable: bool,
    /// The server refused the request as larger than the model's context window. The kernel
    /// then compacts the history and runs the step again, once per turn.
    pub context_overflow: bool,
}

impl ModelError {
    /// An error with this message; the step is not run again.
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), retryable: false, context_overflow: false }
    }

    /// A broken stream the kernel may run again.
    pub fn retryable(message: impl Into<String>) -> Self {
        Self { message: message.into(), retryable: true, context_overflow: false }
    }

    /// A request the server refused as larger than the model's context window.
    pub fn context_overflow(message: impl Into<String>) -> Self {
        Self { message: message.into(), retryable: false, context_overflow: true }
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ModelError {}

/// One event of a streamed response, provider-neutral.
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseEvent {
    /// Visible text.
    TextDelta(String),
    /// Reasoning text.
    ReasoningDelta(String),
    /// The current reasoning item is complete; what the provider needs to have it sent back.
    ReasoningDone {
        /// Anthropic's thinking signature.
        signature: Option<String>,
        /// OpenAI's encrypted reasoning, or Anthropic's redacted thinking.
        encrypted_content: Option<String>,
    },
    /// A tool call begins.
    ToolCallStart {
        /// The provider's id for the call.
        id: ToolCallId,
        /// The tool's name.
        name: String,
    },
    /// More of a call's JSON arguments.
    ToolCallArgsDelta {
        /// The call.
        id: ToolCallId,
        /// The next piece of the arguments' JSON text.
        delta: String,
    },
    /// A call's arguments are complete.
    ToolCallDone {
        /// The call.
        id: ToolCallId,
    },
    /// Token usage of this request so far, as the provider reported it; a later `Usage`
    /// replaces an earlier one. Its input tokens are the truth the context window is counted
    /// from at the next step.
    Usage(Usage),
    /// Token usage the adapter estimated because the provider reported none. It counts like
    /// `Usage` for the turn's totals, but the window keeps its own estimate.
    UsageEstimate(Usage),
    /// The response is complete.
    Completed {
        /// Why the model stopped.
        stop_reason: StopReason,
    },
    /// The request failed; nothing follows.
    Error(ModelError),
    /// Something the person should know that does not stop the response (e.g. the adapter fell
    /// back to a non-streaming request).
    Warning(String),
}

/// A streaming response. Read `events()`; drop it to abort (see the module doc).
pub struct ResponseStream {
    // Dropped (replaced) in `Drop` before `worker` is joined, so a producer blocked on a full
    // channel wakes up.
    events: Receiver<ResponseEvent>,
    abort: Option<Box<dyn FnOnce() + Send>>,
    worker: Option<JoinOnDrop<()>>,
}

impl ResponseStream {
    /// A stream over `events`, produced elsewhere.
    pub fn new(events: Receiver<ResponseEvent>) -> Self {
        Self { events, abort: None, worker: None }
    }

    /// A stream produced by `produce` on a new thread named `name`, into a channel of
    /// `capacity` events. `produce` must return soon after a send fails.
    pub fn spawn(
        name: impl Into<String>,
        capacity: usize,
        produce: impl FnOnce(Sender<ResponseEvent>) + Send + 'static,
    ) -> Result<Self> {
        let (tx, rx) = crossbeam_channel::bounded(capacity.max(1));
        let worker = spawn_named(name, move || produce(tx))?;
        Ok(Self { events: rx, abort: None, worker: Some(worker) })
    }

    /// Adds a hook run when the stream is dropped (finished or not), before the worker is
    /// joined: an HTTP adapter shuts its socket down here so a blocked read returns.
    #[must_use]
    pub fn with_abort(mut self, abort: impl FnOnce() + Send + 'static) -> Self {
        self.abort = Some(Box::new(abort));
        self
    }

    /// Adds a worker thread that is joined when the stream is dropped.
    #[must_use]
    pub fn with_worker(mut self, worker: JoinOnDrop<()>) -> Self {
        self.worker = Some(worker);
        self
    }

    /// The events, in order.
    pub fn events(&self) -> &Receiver<ResponseEvent> {
        &self.events
    }
}

impl fmt::Debug for ResponseStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseStream").field("queued", &self.events.len()).finish()
    }
}

impl ResponseStream {
    /// Stops the request now without waiting for its thread: runs the abort hook and drops the
    /// receiver. The thread is joined when the stream is dropped.
    pub fn abort(&mut self) {
        if let Some(abort) = self.abort.take() {
            abort();
        }
        self.events = never();
    }
}

impl Drop for ResponseStream {
    fn drop(&mut self) {
        self.abort();
        // `worker` joins when the field drops, after this.
    }
}

/// A model provider. Implementations are cheap to share across threads.
pub trait ModelClient: Send + Sync {
    /// Starts `request`. An `Err` is a failure before any event (for example no credentials);
    /// failures after that arrive as `ResponseEvent::Error`.
    fn stream(&self, request: ModelRequest) -> std::result::Result<ResponseStream, ModelError>;
}
