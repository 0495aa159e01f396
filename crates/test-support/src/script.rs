//! The script a `FakeModelServer` plays: a queue of steps, one per model request, in order.
//!
//! A step is either a `Reply` (a 200 SSE stream, possibly with mid-stream faults; the whole JSON
//! answer when the request says `"stream": false`) or a `Fault`
//! (an HTTP error status, or a hang-up without any response). The same types are the Rust
//! builder and the JSON format (serde): `Script::from_json(&script.to_json())` gives back an
//! equal script.
//!
//! Invariants: a script is plain data; nothing here does IO except `Script::load`. Token counts
//! are neutral (input includes cached tokens, output includes reasoning tokens); each wire API
//! translates them into its own fields. Event indexes (`stall`, `inject`, `malformed`,
//! `drop_after`, `error_after`) count the SSE events of the stream from 0, not counting
//! comments or injected bytes; an index at or past the last event means "before the stream ends".

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Error;

/// A queue of steps: the n-th model request gets the n-th step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The steps, in the order requests arrive.
    #[serde(default)]
    pub steps: Vec<Step>,
    /// What every request after the last step gets. `None`: a 500 whose error message is
    /// `fake model: script exhausted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_exhausted: Option<Box<Step>>,
    /// What every request without tools gets (a compaction's summary request), without
    /// taking a step of the queue. `None`: such requests take steps like any other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_no_tools: Option<Box<Step>>,
    /// Answer every streamed request that offers tools with llama.cpp server's refusal (a 500
    /// "Cannot use tools with stream"), without taking a step; non-streamed requests
    /// (`"stream": false`) are served as usual.
    #[serde(default, skip_serializing_if = "is_false")]
    pub refuse_streamed_tools: bool,
    /// What every streamed request that offers tools gets (a server that cannot stream tool
    /// calls, failing its own way), without taking a step; non-streamed requests are served
    /// from the queue as usual.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_streamed_tools: Option<Box<Step>>,
    /// What every request that does not offer all these tools yet gets (tools that join a
    /// session late, an MCP server's), without taking a step of the queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_tools: Option<UntilTools>,
    /// What a server says about its models, by path (`/v1/models`, `/props`, `/api/show`,
    /// `/api/tags`, `/api/ps`, `/api/v0/models`): each is answered 200 with its JSON, on any
    /// method. These requests and those at a discovery path not given here (a 404) are
    /// recorded apart from the model requests (`FakeModelServer::discovery_requests`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub discovery: std::collections::BTreeMap<String, serde_json::Value>,
    /// What every request whose body holds a text gets (a client's side request, such as
    /// codex's task-title request), without taking a step of the queue: the first pair whose
    /// text the body holds answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub when_request_contains: Vec<(String, Step)>,
}

/// A step given while a request lacks some tools (`Script::until_tools`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UntilTools {
    /// The tool names every request must offer before the queue is played.
    pub names: Vec<String>,
    /// The step given meanwhile; its tool call ids get the request's number as a suffix, so
    /// each is new.
    pub step: Box<Step>,
}

impl Script {
    /// An empty script.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a step (a `Reply` or a `Fault`).
    #[must_use]
    pub fn reply(mut self, step: impl Into<Step>) -> Self {
        self.steps.push(step.into());
        self
    }

    /// Sets what every request after the last step gets (default: a 500 "script exhausted").
    #[must_use]
    pub fn when_exhausted(mut self, step: impl Into<Step>) -> Self {
        self.when_exhausted = Some(Box::new(step.into()));
        self
    }

    /// Sets what every request without tools gets (a compaction's summary request), leaving
    /// the queue to the other requests.
    #[must_use]
    pub fn when_no_tools(mut self, step: impl Into<Step>) -> Self {
        self.when_no_tools = Some(Box::new(step.into()));
        self
    }

    /// Sets what every request gets while it does not offer all of `names` (tools that join
    /// the session late), leaving the queue for the requests that do. Tool call ids of `step`
    /// get `-N` (the request's number) appended.
    #[must_use]
    pub fn until_tools<S: Into<String>>(
        mut self,
        names: impl IntoIterator<Item = S>,
        step: impl Into<Step>,
    ) -> Self {
        self.until_tools = Some(UntilTools {
            names: names.into_iter().map(Into::into).collect(),
            step: Box::new(step.into()),
        });
        self
    }

    /// Answers every request whose body holds `text` with `step`, leaving the queue to the
    /// others.
    #[must_use]
    pub fn when_request_contains(mut self, text: impl Into<String>, step: impl Into<Step>) -> Self {
        self.when_request_contains.push((text.into(), step.into()));
        self
    }

    /// Answers `path` (a discovery endpoint such as `/v1/models` or `/props`) with `answer`.
    #[must_use]
    pub fn discovery(mut self, path: &str, answer: serde_json::Value) -> Self {
        self.discovery.insert(path.to_owned(), answer);
        self
    }

    /// Refuses streamed requests with tools, as servers that cannot stream tool calls do.
    #[must_use]
    pub fn refuse_streamed_tools(mut self) -> Self {
        self.refuse_streamed_tools = true;
        self
    }

    /// Sets what every streamed request that offers tools gets, leaving the queue to the
    /// others (`"stream": false`, or without tools).
    #[must_use]
    pub fn when_streamed_tools(mut self, step: impl Into<Step>) -> Self {
        self.when_streamed_tools = Some(Box::new(step.into()));
        self
    }

    /// Parses the JSON form.
    pub fn from_json(text: &str) -> Result<Self, Error> {
        serde_json::from_str(text).map_err(|source| Error::Script { source })
    }

    /// Reads and parses a JSON script file.
    pub fn load(path: &Path) -> Result<Self, Error> {
        let text = fs_err::read_to_string(path)?;
        Self::from_json(&text)
    }

    /// The JSON form, pretty-printed.
    pub fn to_json(&self) -> String {
        // Serializing plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// One scripted answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
// A script holds a handful of steps: boxing the large variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Step {
    /// A 200 `text/event-stream` response.
    Reply(Reply),
    /// An HTTP error, or a hang-up.
    Fault(Fault),
}

impl From<Reply> for Step {
    fn from(reply: Reply) -> Self {
        Step::Reply(reply)
    }
}

impl From<Fault> for Step {
    fn from(fault: Fault) -> Self {
        Step::Fault(fault)
    }
}

/// The assistant text of a reply: one string split into `chunks` deltas, or explicit deltas.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Text {
    /// Split into `Reply::chunks` deltas on character boundaries.
    Whole(String),
    /// Exactly these deltas (empty strings allowed).
    Chunks(Vec<String>),
}

/// Why the model stopped, in neutral terms; each API spells it its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Responses `completed`, Chat `stop`, Anthropic `end_turn`.
    EndTurn,
    /// Responses `completed`, Chat `tool_calls`, Anthropic `tool_use`.
    ToolUse,
    /// Responses `response.incomplete` (`max_output_tokens`), Chat `length`, Anthropic
    /// `max_tokens`.
    MaxTokens,
}

/// Where a Chat Completions stream reports usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChatUsage {
    /// A last chunk with `choices: []` when the request asked for it
    /// (`stream_options.include_usage: true`), else no usage, like OpenAI.
    #[default]
    Auto,
    /// Always a last chunk with `choices: []`.
    FinalChunk,
    /// On the chunk that carries `finish_reason` (some servers do this).
    FinishChunk,
    /// Never.
    None,
}

/// Which delta field carries Chat Completions reasoning text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChatReasoningField {
    /// `delta.reasoning_content` (DeepSeek, vLLM and others).
    #[default]
    ReasoningContent,
    /// `delta.reasoning` (OpenRouter).
    Reasoning,
}

/// Reasoning ("thinking") that precedes the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reasoning {
    /// The reasoning text (Responses summary or reasoning text, Chat reasoning deltas,
    /// Anthropic thinking).
    pub text: String,
    /// How many deltas the text is split into.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub chunks: usize,
    /// Anthropic `signature` and Responses `encrypted_content`; `None`: `sig_fake_<n>` where
    /// n is the request number.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "encrypted_content")]
    pub signature: Option<String>,
    /// Responses only: stream `response.reasoning_text.delta` (raw reasoning, the item's
    /// `content`) instead of the reasoning summary.
    #[serde(default, skip_serializing_if = "is_false")]
    pub raw: bool,
    /// Chat only: the delta field that carries the text.
    #[serde(default, skip_serializing_if = "is_default")]
    pub chat_field: ChatReasoningField,
    /// Anthropic only: a `redacted_thinking` block with this `data` after the thinking block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<String>,
}

/// A function/tool call the model makes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The call id (`call_…` for OpenAI, `toolu_…` for Anthropic; any string works).
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments, serialized compactly for the wire.
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// Sent instead of `arguments` when set: lets a test send arguments that are not JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_arguments: Option<String>,
}

impl ToolCall {
    /// The arguments as the wire carries them.
    pub(crate) fn arguments_text(&self) -> String {
        match &self.raw_arguments {
            Some(raw) => raw.clone(),
            None => self.arguments.to_string(),
        }
    }
}

/// Token usage in neutral terms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Prompt tokens, including cached ones.
    #[serde(default)]
    pub input_tokens: u64,
    /// The part of `input_tokens` read from the prompt cache.
    #[serde(default)]
    pub cached_tokens: u64,
    /// Generated tokens, including reasoning.
    #[serde(default)]
    pub output_tokens: u64,
    /// The part of `output_tokens` spent on reasoning (not reported by Anthropic).
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// Anthropic only: `cache_creation_input_tokens`.
    #[serde(default)]
    pub cache_creation_tokens: u64,
}

impl Usage {
    /// `input` prompt tokens and `output` generated tokens, nothing cached.
    pub fn tokens(input: u64, output: u64) -> Self {
        Self { input_tokens: input, output_tokens: output, ..Self::default() }
    }

    /// Sets the cached part of the input.
    #[must_use]
    pub fn cached(mut self, cached: u64) -> Self {
        self.cached_tokens = cached;
        self
    }

    /// Sets the reasoning part of the output.
    #[must_use]
    pub fn reasoning(mut self, reasoning: u64) -> Self {
        self.reasoning_tokens = reasoning;
        self
    }

    /// Sets Anthropic's `cache_creation_input_tokens`.
    #[must_use]
    pub fn cache_creation(mut self, tokens: u64) -> Self {
        self.cache_creation_tokens = tokens;
        self
    }
}

/// A pause before SSE event `before` (see the module doc for indexes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stall {
    /// The index of the event the pause precedes.
    pub before: usize,
    /// How long, in milliseconds; cut short when the server shuts down or the client leaves.
    pub ms: u64,
}

/// Bytes written verbatim (as their own network write) before SSE event `before`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inject {
    /// The index of the event the bytes precede.
    pub before: usize,
    /// The bytes, e.g. `": comment\n\n"` or a broken `data:` line.
    pub raw: String,
}

/// The API's error event, sent after `after` events; the stream then ends (cleanly framed, but
/// without the API's terminal event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamError {
    /// How many events precede the error event.
    pub after: usize,
    /// The error type/code; default `server_error` (OpenAI) or `overloaded_error` (Anthropic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// The message; a default names the fake server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A 200 SSE response, in the wire format of the API the request used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// The assistant text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<Text>,
    /// How many deltas a `Text::Whole` is split into.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub chunks: usize,
    /// Reasoning before the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// Tool calls after the text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// How many argument fragments each tool call's arguments are split into.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub arg_fragments: usize,
    /// Chat only: send tool-call fragments call after call instead of interleaved by index.
    #[serde(default, skip_serializing_if = "is_false")]
    pub sequential_tool_calls: bool,
    /// Token usage.
    #[serde(default, skip_serializing_if = "is_default")]
    pub usage: Usage,
    /// Why the model stopped; `None`: `tool_use` when there are tool calls, else `end_turn`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopReason>,
    /// Chat only: where usage goes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub chat_usage: ChatUsage,
    /// Milliseconds to wait before sending the response head.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// Milliseconds to wait between events (and between repeats of an endless delta).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pace_ms: u64,
    /// Write every event that holds a multi-byte character as two network writes, split inside
    /// its first multi-byte character, `split_pause_ms` apart.
    #[serde(default, skip_serializing_if = "is_false")]
    pub split_utf8: bool,
    /// The pause between the two halves of a split event.
    #[serde(default = "default_split_pause", skip_serializing_if = "is_default_split_pause")]
    pub split_pause_ms: u64,
    /// A `: keep-alive` comment before every event.
    #[serde(default, skip_serializing_if = "is_false")]
    pub keep_alive: bool,
    /// An empty delta before every text, reasoning and argument delta.
    #[serde(default, skip_serializing_if = "is_false")]
    pub empty_deltas: bool,
    /// Repeat the last text delta every `pace_ms` until the client goes away or the server shuts
    /// down.
    #[serde(default, skip_serializing_if = "is_false")]
    pub endless: bool,
    /// Gather events into chunks of up to 64 KiB instead of one network write per event (for
    /// throughput benchmarks); pauses still flush what came before them.
    #[serde(default, skip_serializing_if = "is_false")]
    pub coalesce: bool,
    /// Replace `SEND_STAMP` in each event, as it is written, with the wall clock's microseconds
    /// since the Unix epoch (latency benchmarks: the reader compares it with its own clock).
    #[serde(default, skip_serializing_if = "is_false")]
    pub stamp: bool,
    /// Pauses before some events.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stalls: Vec<Stall>,
    /// Raw bytes before some events.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inject: Vec<Inject>,
    /// A malformed event (a `data:` line with truncated JSON) before this event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub malformed_before: Option<usize>,
    /// Close the connection after this many events: no terminal event, no final chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop_after: Option<usize>,
    /// Send the API's error event after some events, then end the stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_after: Option<StreamError>,
    /// End the stream cleanly (the final chunk) after this many events: no terminal event,
    /// no finish reason, no `[DONE]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_after: Option<usize>,
}

impl Default for Reply {
    fn default() -> Self {
        Self {
            text: None,
            chunks: 1,
            reasoning: None,
            tool_calls: Vec::new(),
            arg_fragments: 1,
            sequential_tool_calls: false,
            usage: Usage::default(),
            stop: None,
            chat_usage: ChatUsage::default(),
            delay_ms: 0,
            pace_ms: 0,
            split_utf8: false,
            split_pause_ms: DEFAULT_SPLIT_PAUSE_MS,
            keep_alive: false,
            empty_deltas: false,
            endless: false,
            coalesce: false,
            stamp: false,
            stalls: Vec::new(),
            inject: Vec::new(),
            malformed_before: None,
            drop_after: None,
            error_after: None,
            end_after: None,
        }
    }
}

impl Reply {
    /// A reply with nothing in it (no text, no calls): the stream's frame only.
    pub fn empty() -> Self {
        Self::default()
    }

    /// A text answer, sent as one delta (see `chunks`).
    pub fn text(text: impl Into<String>) -> Self {
        Self { text: Some(Text::Whole(text.into())), ..Self::default() }
    }

    /// A text answer sent as exactly these deltas.
    pub fn text_chunks<S: Into<String>>(chunks: impl IntoIterator<Item = S>) -> Self {
        let chunks = chunks.into_iter().map(Into::into).collect();
        Self { text: Some(Text::Chunks(chunks)), ..Self::default() }
    }

    /// A reply that streams `tick ` text deltas every 10 ms until the client closes the
    /// connection or the server shuts down (for cancel tests).
    pub fn endless_text() -> Self {
        Self {
            text: Some(Text::Whole("tick ".to_owned())),
            endless: true,
            pace_ms: 10,
            ..Self::default()
        }
    }

    /// A reply whose only content is one tool call.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self::default().and_tool_call(id, name, arguments)
    }

    /// Adds a tool call.
    #[must_use]
    pub fn and_tool_call(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> Self {
        self.tool_calls.push(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            raw_arguments: None,
        });
        self
    }

    /// Adds a tool call whose arguments are sent verbatim (they need not be JSON).
    #[must_use]
    pub fn and_raw_tool_call(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        raw_arguments: impl Into<String>,
    ) -> Self {
        self.tool_calls.push(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: empty_object(),
            raw_arguments: Some(raw_arguments.into()),
        });
        self
    }

    /// Sets (or replaces) the text, keeping everything else.
    #[must_use]
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(Text::Whole(text.into()));
        self
    }

    /// Splits the text into `n` deltas (on character boundaries; at most one per character).
    #[must_use]
    pub fn chunks(mut self, n: usize) -> Self {
        self.chunks = n;
        self
    }

    /// Adds reasoning before the answer, as one delta, with the default signature.
    #[must_use]
    pub fn reasoning(mut self, text: impl Into<String>) -> Self {
        self.reasoning = Some(Reasoning {
            text: text.into(),
            chunks: 1,
            signature: None,
            raw: false,
            chat_field: ChatReasoningField::default(),
            redacted: None,
        });
        self
    }

    /// Sets the reasoning's signature / encrypted content (adds empty reasoning if none).
    #[must_use]
    pub fn signature(mut self, signature: impl Into<String>) -> Self {
        self.reasoning_mut().signature = Some(signature.into());
        self
    }

    /// Anthropic: adds a `redacted_thinking` block with `data` after the thinking block.
    #[must_use]
    pub fn redacted_thinking(mut self, data: impl Into<String>) -> Self {
        self.reasoning_mut().redacted = Some(data.into());
        self
    }

    /// Splits the reasoning text into `n` deltas.
    #[must_use]
    pub fn reasoning_chunks(mut self, n: usize) -> Self {
        self.reasoning_mut().chunks = n;
        self
    }

    /// Responses: stream raw reasoning text instead of a reasoning summary.
    #[must_use]
    pub fn raw_reasoning(mut self) -> Self {
        self.reasoning_mut().raw = true;
        self
    }

    /// Chat: the delta field that carries reasoning.
    #[must_use]
    pub fn chat_reasoning_field(mut self, field: ChatReasoningField) -> Self {
        self.reasoning_mut().chat_field = field;
        self
    }

    /// Splits each tool call's arguments into `n` fragments.
    #[must_use]
    pub fn arg_fragments(mut self, n: usize) -> Self {
        self.arg_fragments = n;
        self
    }

    /// Chat: fragments of several calls come call after call, not interleaved.
    #[must_use]
    pub fn sequential_tool_calls(mut self) -> Self {
        self.sequential_tool_calls = true;
        self
    }

    /// Sets the usage.
    #[must_use]
    pub fn usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// Sets the stop reason.
    #[must_use]
    pub fn stop(mut self, stop: StopReason) -> Self {
        self.stop = Some(stop);
        self
    }

    /// Chat: where usage goes.
    #[must_use]
    pub fn chat_usage(mut self, chat_usage: ChatUsage) -> Self {
        self.chat_usage = chat_usage;
        self
    }

    /// Waits `ms` before sending the response head.
    #[must_use]
    pub fn delay_ms(mut self, ms: u64) -> Self {
        self.delay_ms = ms;
        self
    }

    /// Waits `ms` between events.
    #[must_use]
    pub fn pace_ms(mut self, ms: u64) -> Self {
        self.pace_ms = ms;
        self
    }

    /// Splits events inside multi-byte characters across two network writes.
    #[must_use]
    pub fn split_utf8(mut self) -> Self {
        self.split_utf8 = true;
        self
    }

    /// The pause between the halves of a split event (default 10 ms).
    #[must_use]
    pub fn split_pause_ms(mut self, ms: u64) -> Self {
        self.split_pause_ms = ms;
        self
    }

    /// A `: keep-alive` comment before every event.
    #[must_use]
    pub fn keep_alive(mut self) -> Self {
        self.keep_alive = true;
        self
    }

    /// An empty delta before every delta.
    #[must_use]
    pub fn empty_deltas(mut self) -> Self {
        self.empty_deltas = true;
        self
    }

    /// Gathers events into 64 KiB network writes (for throughput benchmarks).
    #[must_use]
    pub fn coalesce(mut self) -> Self {
        self.coalesce = true;
        self
    }

    /// Writes the send time into each event in place of `SEND_STAMP` (see `stamp`).
    #[must_use]
    pub fn stamped(mut self) -> Self {
        self.stamp = true;
        self
    }

    /// Pauses `ms` before event `before`.
    #[must_use]
    pub fn stall(mut self, before: usize, ms: u64) -> Self {
        self.stalls.push(Stall { before, ms });
        self
    }

    /// Writes `raw` verbatim before event `before`.
    #[must_use]
    pub fn inject(mut self, before: usize, raw: impl Into<String>) -> Self {
        self.inject.push(Inject { before, raw: raw.into() });
        self
    }

    /// A malformed event before event `before`.
    #[must_use]
    pub fn malformed(mut self, before: usize) -> Self {
        self.malformed_before = Some(before);
        self
    }

    /// Closes the connection after `events` events.
    #[must_use]
    pub fn drop_after(mut self, events: usize) -> Self {
        self.drop_after = Some(events);
        self
    }

    /// Ends the stream cleanly after `events` events, before its terminal event.
    #[must_use]
    pub fn end_after(mut self, events: usize) -> Self {
        self.end_after = Some(events);
        self
    }

    /// Sends the API's error event (default type and message) after `events` events.
    #[must_use]
    pub fn error_after(mut self, events: usize) -> Self {
        self.error_after = Some(StreamError { after: events, error_type: None, message: None });
        self
    }

    /// Sends the API's error event with this type and message after `events` events.
    #[must_use]
    pub fn error_after_with(
        mut self,
        events: usize,
        error_type: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        self.error_after = Some(StreamError {
            after: events,
            error_type: Some(error_type.into()),
            message: Some(message.into()),
        });
        self
    }

    /// The stop reason this reply reports.
    pub(crate) fn stop_reason(&self) -> StopReason {
        match self.stop {
            Some(stop) => stop,
            None if self.tool_calls.is_empty() => StopReason::EndTurn,
            None => StopReason::ToolUse,
        }
    }

    /// The text deltas, or `None` when the reply has no text.
    pub(crate) fn text_deltas(&self) -> Option<Vec<String>> {
        match &self.text {
            None => None,
            Some(Text::Whole(text)) => Some(split_chars(text, self.chunks)),
            Some(Text::Chunks(chunks)) => Some(chunks.clone()),
        }
    }

    /// The whole text.
    pub(crate) fn full_text(&self) -> Option<String> {
        match &self.text {
            None => None,
            Some(Text::Whole(text)) => Some(text.clone()),
            Some(Text::Chunks(chunks)) => Some(chunks.concat()),
        }
    }

    fn reasoning_mut(&mut self) -> &mut Reasoning {
        self.reasoning.get_or_insert_with(|| Reasoning {
            text: String::new(),
            chunks: 1,
            signature: None,
            raw: false,
            chat_field: ChatReasoningField::default(),
            redacted: None,
        })
    }
}

/// A response that is not a stream: an HTTP error status with the API's error JSON, or a
/// hang-up (the connection closes without a response).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// The HTTP status.
    #[serde(default = "default_status")]
    pub status: u16,
    /// The `Retry-After` header, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// The error type in the body; a default fits the status and the API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// The error message in the body; a default names the fake server and the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The whole body, replacing the API's error JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// Extra response headers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Milliseconds to wait before answering (or hanging up).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// Close the connection without any response (`status` is ignored).
    #[serde(default, skip_serializing_if = "is_false")]
    pub hang_up: bool,
}

impl Fault {
    /// An error response with this status and the API's error JSON.
    pub fn status(status: u16) -> Self {
        Self {
            status,
            retry_after: None,
            error_type: None,
            message: None,
            body: None,
            headers: BTreeMap::new(),
            delay_ms: 0,
            hang_up: false,
        }
    }

    /// 429 with `Retry-After: seconds`.
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self::status(429).retry_after(retry_after_secs)
    }

    /// 529, Anthropic's `overloaded_error`.
    pub fn overloaded() -> Self {
        Self::status(529)
    }

    /// The connection closes without a response.
    pub fn hang_up() -> Self {
        Self { hang_up: true, ..Self::status(500) }
    }

    /// Sets `Retry-After` (seconds).
    #[must_use]
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }

    /// Sets the error type in the body.
    #[must_use]
    pub fn error_type(mut self, error_type: impl Into<String>) -> Self {
        self.error_type = Some(error_type.into());
        self
    }

    /// Sets the error message in the body.
    #[must_use]
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// Replaces the whole body.
    #[must_use]
    pub fn body(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }

    /// Adds a response header.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Waits `ms` before answering.
    #[must_use]
    pub fn delay_ms(mut self, ms: u64) -> Self {
        self.delay_ms = ms;
        self
    }
}

/// Splits `text` into `n` pieces of about equal length in characters (at least one piece, at
/// most one per character).
pub(crate) fn split_chars(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let n = n.clamp(1, chars.len().max(1));
    let base = chars.len() / n;
    let extra = chars.len() % n;
    let mut pieces = Vec::with_capacity(n);
    let mut start = 0;
    for piece_idx in 0..n {
        let len = base + usize::from(piece_idx < extra);
        pieces.push(chars[start..start + len].iter().collect());
        start += len;
    }
    pieces
}

const DEFAULT_SPLIT_PAUSE_MS: u64 = 10;

fn one() -> usize {
    1
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference.
fn is_one(n: &usize) -> bool {
    *n == 1
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference.
fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference.
fn is_false(b: &bool) -> bool {
    !*b
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

fn default_split_pause() -> u64 {
    DEFAULT_SPLIT_PAUSE_MS
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference.
fn is_default_split_pause(ms: &u64) -> bool {
    *ms == DEFAULT_SPLIT_PAUSE_MS
}

fn default_status() -> u16 {
    500
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}
