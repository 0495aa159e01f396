//! The three wire APIs: which path speaks which, and how a `Reply` becomes that API's SSE
//! events, error bodies and error events.
//!
//! Invariants: rendering is pure (no IO, no clock): the same reply, request number and request
//! body give the same bytes, so transcripts are stable. Ids are `<prefix>_fake_<n>[_<i>]` with
//! n the request number (1-based) and i the output index. Every event is a complete SSE event
//! ending in a blank line; the server decides how the bytes are cut into network writes.

mod anthropic;
mod chat;
mod responses;
mod whole;

pub(crate) use whole::answer as whole_answer;

use serde_json::{Value, json};

use crate::script::{Reply, StreamError};

/// A wire API, chosen by the request path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Api {
    /// OpenAI Responses: `POST /v1/responses` or `/responses`.
    Responses,
    /// OpenAI-compatible Chat Completions: `POST /v1/chat/completions` or `/chat/completions`.
    Chat,
    /// Anthropic Messages: `POST /v1/messages` or `/messages` (any query, e.g. `?beta=true`).
    Anthropic,
}

impl Api {
    /// The API served at `path` (without the query), if any.
    pub fn from_path(path: &str) -> Option<Api> {
        match path.trim_end_matches('/') {
            "/v1/responses" | "/responses" => Some(Api::Responses),
            "/v1/chat/completions" | "/chat/completions" => Some(Api::Chat),
            "/v1/messages" | "/messages" => Some(Api::Anthropic),
            _ => None,
        }
    }
}

/// What rendering needs to know about the request.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    /// The request number, 1-based.
    pub(crate) n: usize,
    /// The request's `model`, or `fake-model`.
    pub(crate) model: String,
    /// Chat: the request asked for `stream_options.include_usage`.
    pub(crate) include_usage: bool,
}

impl Ctx {
    pub(crate) fn from_body(n: usize, body: &Value) -> Self {
        Self {
            n,
            model: body.get("model").and_then(Value::as_str).unwrap_or("fake-model").to_owned(),
            include_usage: body
                .pointer("/stream_options/include_usage")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }
    }

    /// The default reasoning signature / encrypted content.
    pub(crate) fn default_signature(&self) -> String {
        format!("sig_fake_{}", self.n)
    }
}

/// One SSE event, ready to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) bytes: Vec<u8>,
    /// The endless delta: repeated until the client leaves.
    pub(crate) repeat: bool,
}

/// The SSE events of `reply` in `api`'s format, terminal event included.
pub(crate) fn render(api: Api, reply: &Reply, ctx: &Ctx) -> Vec<Event> {
    match api {
        Api::Responses => responses::render(reply, ctx),
        Api::Chat => chat::render(reply, ctx),
        Api::Anthropic => anthropic::render(reply, ctx),
    }
}

/// The API's mid-stream error event.
pub(crate) fn stream_error_event(api: Api, error: &StreamError, ctx: &Ctx) -> Vec<u8> {
    match api {
        Api::Responses => responses::error_event(error, ctx),
        Api::Chat => chat::error_event(error),
        Api::Anthropic => anthropic::error_event(error),
    }
}

/// An event whose `data:` JSON is cut short, under the name the API uses for deltas.
pub(crate) fn malformed_event(api: Api) -> Vec<u8> {
    let text = match api {
        Api::Responses => {
            "event: response.output_text.delta\n\
             data: {\"type\":\"response.output_text.delta\",\"delta\":\"trunc\n\n"
        }
        Api::Chat => {
            "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"trunc\n\n"
        }
        Api::Anthropic => {
            "event: content_block_delta\n\
             data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"trunc\n\n"
        }
    };
    text.as_bytes().to_vec()
}

/// An SSE comment line, as keep-alives are sent.
pub(crate) const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// The error JSON body an API returns with an error status; `api` is `None` for paths that
/// speak no API.
pub(crate) fn error_body(
    api: Option<Api>,
    status: u16,
    error_type: Option<&str>,
    message: &str,
    n: usize,
) -> Value {
    match api {
        Some(Api::Anthropic) => {
            let error_type = error_type.unwrap_or(match status {
                400 => "invalid_request_error",
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                413 => "request_too_large",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                _ => "api_error",
            });
            json!({
                "type": "error",
                "error": {"type": error_type, "message": message},
                "request_id": request_id(n),
            })
        }
        Some(Api::Responses | Api::Chat) | None => {
            let (default_type, code) = match status {
                401 => ("invalid_request_error", json!("invalid_api_key")),
                429 => ("requests", json!("rate_limit_exceeded")),
                500..=599 => ("server_error", Value::Null),
                _ => ("invalid_request_error", Value::Null),
            };
            json!({
                "error": {
                    "message": message,
                    "type": error_type.unwrap_or(default_type),
                    "param": null,
                    "code": code,
                }
            })
        }
    }
}

/// The request id header value for request `n`.
pub(crate) fn request_id(n: usize) -> String {
    format!("req_fake_{n}")
}

/// An SSE event with an `event:` line; the data's top-level `type` and `sequence_number` come
/// first, as the providers write them (the other fields follow in serde_json's order).
fn named_event(name: &str, data: &Value) -> Vec<u8> {
    let data = match data {
        Value::Object(fields) => {
            let leading = ["type", "sequence_number"];
            let first = leading.iter().filter_map(|key| fields.get_key_value(*key));
            let rest = fields.iter().filter(|(key, _)| !leading.contains(&key.as_str()));
            let parts: Vec<String> = first
                .chain(rest)
                .map(|(key, value)| format!("{}:{value}", Value::from(key.as_str())))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        other => other.to_string(),
    };
    format!("event: {name}\ndata: {data}\n\n").into_bytes()
}

/// An SSE event with only a `data:` line.
fn data_event(data: &Value) -> Vec<u8> {
    format!("data: {data}\n\n").into_bytes()
}

/// The deltas of `pieces`, each preceded by an empty one when `empty_deltas` is set.
fn with_empty_deltas(pieces: Vec<String>, empty_deltas: bool) -> Vec<String> {
    if !empty_deltas {
        return pieces;
    }
    pieces.into_iter().flat_map(|piece| [String::new(), piece]).collect()
}

/// Marks the last of the delta events at `delta_indexes` as the endless one.
fn mark_endless(events: &mut [Event], delta_indexes: &[usize]) {
    if let Some(&last) = delta_indexes.last()
        && let Some(event) = events.get_mut(last)
    {
        event.repeat = true;
    }
}
