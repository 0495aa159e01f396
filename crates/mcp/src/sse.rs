//! The older MCP HTTP+SSE transport (protocol revision 2024-11-05), as an rmcp transport.
//!
//! The client opens `GET <url>` with `Accept: text/event-stream`; the server's first event is
//! `endpoint`, whose data is the URL (resolved against the SSE URL) the client POSTs each
//! JSON-RPC message to; the server's own messages arrive as `message` events on the GET stream.
//!
//! Invariants: no message is sent before the endpoint is known (`connect` waits for it); the
//! stream's reader task ends with the transport (aborted on drop), and the transport's
//! `receive` ends when the stream does; every error names the URL it concerns.

use std::collections::BTreeMap;
use std::str::FromStr;

use reqwest::Url;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// A failure of the transport, its message naming the URL.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SseError(String);

/// One event of a `text/event-stream`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    /// The `event:` field (`message` when absent).
    pub(crate) kind: String,
    /// The `data:` lines joined with `\n`.
    pub(crate) data: String,
}

/// An incremental `text/event-stream` parser: bytes in, whole events out. Lines end with
/// `\n` or `\r\n`; a blank line ends an event; `:` lines are comments; an event without data
/// is dropped.
#[derive(Debug, Default)]
pub(crate) struct Parser {
    buf: Vec<u8>,
    kind: Option<String>,
    data: Option<String>,
}

impl Parser {
    /// The events completed by `chunk`.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Vec<Event> {
        self.buf.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = self.buf.drain(..=end).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line);
            if line.is_empty() {
                let kind = self.kind.take();
                if let Some(data) = self.data.take() {
                    events.push(Event { kind: kind.unwrap_or_else(|| "message".to_owned()), data });
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((&line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => self.kind = Some(value.to_owned()),
                "data" => match &mut self.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => self.data = Some(value.to_owned()),
                },
                _ => {}
            }
        }
        events
    }
}

/// A connected HTTP+SSE transport.
pub(crate) struct SseTransport {
    client: reqwest::Client,
    endpoint: Url,
    incoming: mpsc::UnboundedReceiver<RxJsonRpcMessage<RoleClient>>,
    reader: JoinHandle<()>,
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Opens the event stream at `url` and waits for the server's `endpoint` event.
///
/// # Errors
/// When a header is invalid, the GET fails or is refused, or the stream ends before the
/// endpoint event; the message names `url`.
pub(crate) async fn connect(
    url: &str,
    bearer_token: Option<&str>,
    headers: &BTreeMap<String, String>,
) -> Result<SseTransport, String> {
    let base = Url::parse(url).map_err(|err| format!("SSE URL `{url}`: {err}"))?;
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let name = HeaderName::from_str(name).map_err(|err| format!("header `{name}`: {err}"))?;
        let value =
            HeaderValue::from_str(value).map_err(|err| format!("header `{name}`: {err}"))?;
        map.insert(name, value);
    }
    if let Some(token) = bearer_token {
        let value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|err| format!("bearer token: {err}"))?;
        map.insert(AUTHORIZATION, value);
    }
    let client = reqwest::Client::builder()
        .default_headers(map)
        .build()
        .map_err(|err| format!("SSE client for `{url}`: {err}"))?;
    let mut response = client
        .get(base.clone())
        .header(ACCEPT, "text/event-stream")
        .send()
        .await
        .map_err(|err| format!("GET `{url}`: {err}"))?;
    if !response.status().is_success() {
        return Err(format!("GET `{url}`: HTTP {}", response.status()));
    }
    let mut parser = Parser::default();
    let mut early = Vec::new();
    let endpoint = 'found: loop {
        let chunk = response
            .chunk()
            .await
            .map_err(|err| format!("SSE stream `{url}`: {err}"))?
            .ok_or_else(|| format!("SSE stream `{url}` ended before its `endpoint` event"))?;
        for event in parser.feed(&chunk) {
            if event.kind == "endpoint" {
                let endpoint = base.join(event.data.trim()).map_err(|err| {
                    format!("SSE stream `{url}`: endpoint `{}`: {err}", event.data)
                })?;
                break 'found endpoint;
            }
            early.push(event);
        }
    };
    let (tx, incoming) = mpsc::unbounded_channel();
    let reader = tokio::spawn(async move {
        let deliver = |event: Event| {
            if event.kind != "message" {
                return true;
            }
            match serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&event.data) {
                Ok(message) => tx.send(message).is_ok(),
                // A malformed message is dropped; the stream goes on.
                Err(_) => true,
            }
        };
        for event in early.into_iter().chain(parser.feed(b"")) {
            if !deliver(event) {
                return;
            }
        }
        while let Ok(Some(chunk)) = response.chunk().await {
            for event in parser.feed(&chunk) {
                if !deliver(event) {
                    return;
                }
            }
        }
    });
    Ok(SseTransport { client, endpoint, incoming, reader })
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let client = self.client.clone();
        let endpoint = self.endpoint.clone();
        async move {
            let body = serde_json::to_vec(&item)
                .map_err(|err| SseError(format!("POST `{endpoint}`: {err}")))?;
            let response = client
                .post(endpoint.clone())
                .header(CONTENT_TYPE, "application/json")
                .body(body)
                .send()
                .await
                .map_err(|err| SseError(format!("POST `{endpoint}`: {err}")))?;
            let status = response.status();
            if status.is_success() {
                return Ok(());
            }
            let text = response.text().await.unwrap_or_default();
            Err(SseError(format!("POST `{endpoint}`: HTTP {status}: {}", text.trim())))
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        self.incoming.close();
        Ok(())
    }
}
