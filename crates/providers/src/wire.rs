//! What the three wire adapters share: the parser interface, and rendering of neutral content
//! (tool-result text, blob references, images) into strings and data URLs.

use std::borrow::Cow;

use codecoder_kernel::ResponseEvent;
use codecoder_protocol::{BlobRef, ContentItem, Image};

use crate::config::WireApi;
use crate::error::Error;
use crate::sse::SseEvent;
use crate::{anthropic, chat, responses};

/// Turns one API's SSE events into neutral `ResponseEvent`s.
pub(crate) trait StreamParser: Send {
    /// Handles one event. `Ok(true)` means the response is complete.
    fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut dyn FnMut(ResponseEvent),
    ) -> Result<bool, Error>;

    /// The byte stream ended without a terminal event. `Ok(())` when this API allows that (the
    /// parser then emits what completes the response), else the error for a broken stream.
    fn on_eof(&mut self, out: &mut dyn FnMut(ResponseEvent)) -> Result<(), Error>;
}

/// A fresh parser for `api`'s stream.
pub(crate) fn parser(api: WireApi) -> Box<dyn StreamParser> {
    match api {
        WireApi::Responses => Box::new(responses::Parser::new()),
        WireApi::Chat => Box::new(chat::Parser::new()),
        WireApi::Anthropic => Box::new(anthropic::Parser::new()),
    }
}

/// The text of a tool result or user content, as one string for APIs that take strings.
/// Borrowed when the content is one text item (the common case), so a request that re-sends
/// the history does not copy every tool output.
pub(crate) fn content_text(content: &[ContentItem]) -> Cow<'_, str> {
    if let [ContentItem::Text { text }] = content {
        return Cow::Borrowed(text);
    }
    let mut out = String::new();
    for item in content {
        if !out.is_empty() {
            out.push('\n');
        }
        match item {
            ContentItem::Text { text } => out.push_str(text),
            ContentItem::Image(image) => out.push_str(&format!("[image {}]", image.media_type)),
            ContentItem::BlobRef(blob) => out.push_str(&blob_text(blob)),
        }
    }
    Cow::Owned(out)
}

/// What the model sees of content that was too large for the log and was not resolved.
pub(crate) fn blob_text(blob: &BlobRef) -> String {
    format!(
        "{}\n[… {} bytes in all; the rest is stored as blob sha256:{}]",
        blob.preview, blob.size, blob.sha256
    )
}

/// An image as a `data:` URL.
pub(crate) fn data_url(image: &Image) -> String {
    format!("data:{};base64,{}", image.media_type, image.data_base64)
}

/// Tool-call arguments as the JSON text the APIs want (`arguments` strings).
pub(crate) fn args_text(args: &serde_json::Value) -> Cow<'_, str> {
    match args {
        // Invalid JSON from the model is kept as its raw text; send it back as it was.
        serde_json::Value::String(raw) => Cow::Borrowed(raw),
        serde_json::Value::Null => Cow::Borrowed("{}"),
        other => Cow::Owned(other.to_string()),
    }
}

/// Parses an event's JSON data, or says which event was malformed.
pub(crate) fn parse_data(event: &SseEvent) -> Result<serde_json::Value, Error> {
    serde_json::from_str(&event.data).map_err(|err| Error::Protocol {
        message: format!(
            "malformed SSE data{}: {err}",
            event.event.as_deref().map(|e| format!(" in `{e}`")).unwrap_or_default()
        ),
    })
}

/// Parses an event's JSON data into a typed (borrowing) shape.
pub(crate) fn parse_typed<'a, T: serde::Deserialize<'a>>(event: &'a SseEvent) -> Result<T, Error> {
    serde_json::from_str(&event.data).map_err(|err| Error::Protocol {
        message: format!(
            "malformed SSE data{}: {err}",
            event.event.as_deref().map(|e| format!(" in `{e}`")).unwrap_or_default()
        ),
    })
}

/// A string field of a JSON object, or "".
pub(crate) fn str_field<'a>(value: &'a serde_json::Value, key: &str) -> &'a str {
    value.get(key).and_then(serde_json::Value::as_str).unwrap_or("")
}

/// An integer field of a JSON object, or 0.
pub(crate) fn u64_field(value: &serde_json::Value, key: &str) -> u64 {
    value.get(key).and_then(serde_json::Value::as_u64).unwrap_or(0)
}
