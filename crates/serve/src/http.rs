//! The HTTP/1.1 this server speaks: one request per connection (`Connection: close`), its head
//! parsed with `httparse`, its body read to `Content-Length`, and answers written whole with the
//! security headers every answer carries.
//!
//! Invariants: a head larger than `MAX_HEAD` or a body larger than `MAX_BODY` is refused before
//! it is buffered; every answer, errors included, carries `SECURITY_HEADERS`.

use std::io::{self, BufRead, Read, Write};

/// The largest request head read.
const MAX_HEAD: usize = 64 * 1024;
/// The largest request body read.
const MAX_BODY: usize = 1024 * 1024;
/// Headers parsed at most.
const MAX_HEADERS: usize = 64;

/// Sent with every answer: no script, style or connection other than this server's own, no
/// sniffing, no referrer (the URL may hold the token once), no framing.
pub(crate) const SECURITY_HEADERS: &[(&str, &str)] = &[
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
    ("Cache-Control", "no-store"),
];

/// One parsed request.
#[derive(Debug)]
pub(crate) struct Request {
    /// `GET`, `POST`, …
    pub(crate) method: String,
    /// The path, without the query.
    pub(crate) path: String,
    /// The query string (after `?`), raw.
    pub(crate) query: String,
    /// Header names lower-cased, values as sent (lossy UTF-8).
    pub(crate) headers: Vec<(String, String)>,
    /// The body.
    pub(crate) body: Vec<u8>,
}

impl Request {
    /// The first value of a header (`name` lower-case).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }

    /// A query parameter, percent-decoded.
    pub(crate) fn query_param(&self, name: &str) -> Option<String> {
        query_pairs(&self.query).find(|(key, _)| key == name).map(|(_, value)| value)
    }
}

/// Why a request could not be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The connection failed, timed out or closed early: nothing to answer.
    Closed,
    /// Not HTTP, or too large: answer 400 or 413 and close.
    Bad(u16, &'static str),
}

impl From<io::Error> for ReadError {
    fn from(_: io::Error) -> Self {
        Self::Closed
    }
}

/// Reads one request from `reader`.
pub(crate) fn read_request(reader: &mut dyn BufRead) -> Result<Request, ReadError> {
    let mut head = Vec::new();
    loop {
        let mut line = Vec::new();
        let n = reader.take(MAX_HEAD as u64).read_until(b'\n', &mut line)?;
        if n == 0 {
            return Err(ReadError::Closed);
        }
        head.extend_from_slice(&line);
        if head.len() > MAX_HEAD {
            return Err(ReadError::Bad(431, "request head too large"));
        }
        if line == b"\r\n" || line == b"\n" {
            break;
        }
    }
    let mut storage = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut storage);
    match parsed.parse(&head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) | Err(_) => {
            return Err(ReadError::Bad(400, "malformed request"));
        }
    }
    let method = parsed.method.unwrap_or_default().to_owned();
    let target = parsed.path.unwrap_or("/");
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path.to_owned(), query.to_owned()),
        None => (target.to_owned(), String::new()),
    };
    let headers: Vec<(String, String)> = parsed
        .headers
        .iter()
        .map(|h| (h.name.to_ascii_lowercase(), String::from_utf8_lossy(h.value).into_owned()))
        .collect();
    let length = match headers.iter().find(|(key, _)| key == "content-length") {
        None => 0,
        Some((_, value)) => {
            value.trim().parse::<usize>().map_err(|_| ReadError::Bad(400, "bad Content-Length"))?
        }
    };
    if headers.iter().any(|(key, _)| key == "transfer-encoding") {
        return Err(ReadError::Bad(411, "chunked bodies are not accepted; send Content-Length"));
    }
    if length > MAX_BODY {
        return Err(ReadError::Bad(413, "request body too large"));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Request { method, path, query, headers, body })
}

/// An answer, written whole.
#[derive(Debug)]
pub(crate) struct Response {
    /// The status code.
    pub(crate) status: u16,
    /// Headers beyond the security headers and the framing ones.
    pub(crate) headers: Vec<(&'static str, String)>,
    /// The body.
    pub(crate) body: Vec<u8>,
}

impl Response {
    /// A JSON answer.
    pub(crate) fn json(status: u16, value: &serde_json::Value) -> Self {
        Self {
            status,
            headers: vec![("Content-Type", "application/json".to_owned())],
            body: value.to_string().into_bytes(),
        }
    }

    /// An error answer: `{"error": message}`.
    pub(crate) fn error(status: u16, message: &str) -> Self {
        Self::json(status, &serde_json::json!({ "error": message }))
    }

    /// Writes the status line, the headers (security ones included) and the body.
    pub(crate) fn write_to(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut head = format!("HTTP/1.1 {} {}\r\n", self.status, reason(self.status));
        for (name, value) in SECURITY_HEADERS {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n", self.body.len()));
        out.write_all(head.as_bytes())?;
        out.write_all(&self.body)?;
        out.flush()
    }
}

/// The head of a server-sent events stream (its events follow, until the connection closes).
pub(crate) fn write_event_stream_head(out: &mut dyn Write) -> io::Result<()> {
    let mut head = String::from("HTTP/1.1 200 OK\r\n");
    for (name, value) in SECURITY_HEADERS {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("Content-Type: text/event-stream\r\nConnection: close\r\n\r\n");
    out.write_all(head.as_bytes())?;
    out.flush()
}

/// The answer that turns the connection into a WebSocket (RFC 6455's accept key).
pub(crate) fn write_switching_protocols(out: &mut dyn Write, key: &str) -> io::Result<()> {
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    let mut head = String::from("HTTP/1.1 101 Switching Protocols\r\n");
    for (name, value) in SECURITY_HEADERS {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    ));
    out.write_all(head.as_bytes())?;
    out.flush()
}

/// The reason phrase of the statuses this server sends.
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        303 => "See Other",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// The `key=value` pairs of a query string, percent-decoded (`+` is a space).
pub(crate) fn query_pairs(query: &str) -> impl Iterator<Item = (String, String)> + '_ {
    query.split('&').filter(|pair| !pair.is_empty()).map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(key), percent_decode(value))
    })
}

/// `%XX` escapes and `+` decoded; an invalid escape is kept as it is.
pub(crate) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(high), Some(low)) => {
                    out.push(high * 16 + low);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The value of one hexadecimal digit.
fn hex(digit: u8) -> Option<u8> {
    char::from(digit).to_digit(16).and_then(|value| u8::try_from(value).ok())
}

/// The path and query as the access log shows them: the `token` parameter's value replaced by
/// `REDACTED`, so the secret never reaches the log.
pub(crate) fn loggable_target(path: &str, query: &str) -> String {
    if query.is_empty() {
        return path.to_owned();
    }
    let kept: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if percent_decode(key) == "token" => format!("{key}=REDACTED"),
            _ => pair.to_owned(),
        })
        .collect();
    format!("{path}?{}", kept.join("&"))
}
