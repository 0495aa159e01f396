//! The HTTP a WebSocket listener needs: reading one request's head, its request line and
//! headers, and writing a short answer. Nothing else of HTTP is served: every answer but the
//! upgrade closes the connection.
//!
//! Invariant: a head is read up to `MAX_HEAD_BYTES`; the bytes read past it (a client's first
//! frame sent without waiting for the upgrade's answer) are kept for the WebSocket.

use std::io::{self, Read};

/// The longest request head read.
const MAX_HEAD_BYTES: usize = 16 * 1024;

/// One request's head.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) path: String,
    headers: Vec<(String, String)>,
}

impl Request {
    /// The first header of this name (case-insensitive), trimmed.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Whether a comma-separated header lists `token` (case-insensitive).
    pub(crate) fn header_lists(&self, name: &str, token: &str) -> bool {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .flat_map(|(_, v)| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }
}

/// Reads up to the end of the head: the head, and what was read past it. `None` when the
/// client closed first or the head is too long.
pub(crate) fn read_head(stream: &mut impl Read) -> io::Result<Option<(Vec<u8>, Vec<u8>)>> {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 2048];
    loop {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(None);
        }
        // The end may straddle two reads: look from three bytes before the new ones.
        let from = bytes.len().saturating_sub(3);
        bytes.extend_from_slice(&chunk[..n]);
        if let Some(at) = bytes[from..].windows(4).position(|w| w == b"\r\n\r\n") {
            let end = from + at + 4;
            let rest = bytes.split_off(end);
            return Ok(Some((bytes, rest)));
        }
        if bytes.len() > MAX_HEAD_BYTES {
            return Ok(None);
        }
    }
}

/// The request line and headers of a head; `None` when it is not HTTP/1.x.
pub(crate) fn parse(head: &[u8]) -> Option<Request> {
    let head = std::str::from_utf8(head).ok()?;
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let version = request_line.next()?;
    if !version.starts_with("HTTP/1.") || request_line.next().is_some() {
        return None;
    }
    let mut headers = Vec::new();
    for line in lines.take_while(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    Some(Request { method, path, headers })
}

/// A whole answer that ends the connection.
pub(crate) fn answer(status: u16, body: &str) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        426 => "Upgrade Required",
        503 => "Service Unavailable",
        _ => "Error",
    };
    let mut extra = String::new();
    if status == 401 {
        extra.push_str("WWW-Authenticate: Bearer\r\n");
    }
    if status == 426 {
        extra.push_str("Sec-WebSocket-Version: 13\r\n");
    }
    format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n{extra}\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The answer that turns the connection into a WebSocket.
pub(crate) fn switching_protocols(key: &str) -> Vec<u8> {
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {accept}\r\n\r\n"
    )
    .into_bytes()
}
