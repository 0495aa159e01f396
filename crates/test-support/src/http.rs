//! Just enough HTTP/1.1 for the fake server, on a std `TcpStream`: reading requests
//! (`Content-Length` and chunked bodies, `Expect: 100-continue`, keep-alive), writing a head,
//! chunked body chunks, and pauses that notice shutdown and a departed client.
//!
//! Invariants: nothing here panics on bad input; a malformed request is a `ReadError::Bad`
//! with a message for the 400 body. Every blocking call wakes at least every `POLL` to check
//! the shutdown channel (it never carries a message; its sender is dropped on shutdown), so a
//! connection thread ends promptly however it is blocked. One `send` is one chunk of the
//! response as the caller cut it: `send_chunk` frames exactly the given bytes, never an empty
//! chunk (which would end the body).

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};

/// How often blocked reads and writes check for shutdown.
const POLL: Duration = Duration::from_millis(20);
/// The longest request head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// The longest request body accepted.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// A parsed request.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) query: Option<String>,
    pub(crate) http_1_0: bool,
    /// Names lowercased, in arrival order.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Request {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }

    /// Whether the connection stays open after the response (HTTP/1.1 default, unless
    /// `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`).
    pub(crate) fn keep_alive(&self) -> bool {
        let connection = self.header("connection").map(str::to_ascii_lowercase);
        let has = |token: &str| {
            connection.as_deref().is_some_and(|value| value.split(',').any(|t| t.trim() == token))
        };
        if self.http_1_0 { has("keep-alive") } else { !has("close") }
    }
}

/// Why no request was read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The client closed the connection (between requests, or mid-request).
    Closed,
    /// The server is shutting down.
    Shutdown,
    /// The request is malformed; the message goes into the 400 body.
    Bad(String),
}

/// Why a response stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The server is shutting down.
    Shutdown,
    /// The client closed the connection.
    ClientGone,
}

/// One client connection.
pub(crate) struct Conn {
    stream: TcpStream,
    /// Bytes read but not yet consumed.
    buf: Vec<u8>,
    shutdown: Receiver<()>,
}

impl Conn {
    pub(crate) fn new(stream: TcpStream, shutdown: Receiver<()>) -> Self {
        // Small writes must leave at once (the mid-character split depends on it); the timeouts
        // are how blocked calls come back to check for shutdown. Failures only cost promptness.
        let _ = stream.set_nodelay(true);
        let _ = stream.set_read_timeout(Some(POLL));
        let _ = stream.set_write_timeout(Some(POLL));
        Self { stream, buf: Vec::new(), shutdown }
    }

    /// Reads the next request; `Closed` when the client closed the connection.
    pub(crate) fn read_request(&mut self) -> Result<Request, ReadError> {
        let head_end = loop {
            if let Some(pos) = find(&self.buf, b"\r\n\r\n") {
                break pos;
            }
            if self.buf.len() > MAX_HEAD {
                return Err(ReadError::Bad(format!("request head longer than {MAX_HEAD} bytes")));
            }
            if self.fill()? == 0 {
                return Err(ReadError::Closed);
            }
        };
        let head: Vec<u8> = self.buf.drain(..head_end + 4).collect();
        let head = String::from_utf8(head)
            .map_err(|_| ReadError::Bad("request head is not UTF-8".to_owned()))?;
        let mut lines = head.split("\r\n").filter(|line| !line.is_empty());
        let request_line = lines.next().unwrap_or_default();
        let mut parts = request_line.split(' ');
        let (Some(method), Some(target), Some(version), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(ReadError::Bad(format!("malformed request line {request_line:?}")));
        };
        if method.is_empty() || !target.starts_with('/') || !version.starts_with("HTTP/1.") {
            return Err(ReadError::Bad(format!("malformed request line {request_line:?}")));
        }
        let mut headers = Vec::new();
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                return Err(ReadError::Bad(format!("malformed header line {line:?}")));
            };
            if name.is_empty() || name.contains(char::is_whitespace) {
                return Err(ReadError::Bad(format!("malformed header name {name:?}")));
            }
            headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
        }
        let (path, query) = match target.split_once('?') {
            Some((path, query)) => (path.to_owned(), Some(query.to_owned())),
            None => (target.to_owned(), None),
        };
        let mut request = Request {
            method: method.to_owned(),
            path,
            query,
            http_1_0: version == "HTTP/1.0",
            headers,
            body: Vec::new(),
        };

        if request.header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
            self.send(b"HTTP/1.1 100 Continue\r\n\r\n").map_err(|_| ReadError::Closed)?;
        }
        let chunked = request
            .header("transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
        if chunked {
            request.body = self.read_chunked_body()?;
        } else if let Some(length) = request.header("content-length") {
            let length: usize = length
                .parse()
                .map_err(|_| ReadError::Bad(format!("bad content-length {length:?}")))?;
            if length > MAX_BODY {
                return Err(ReadError::Bad(format!("body longer than {MAX_BODY} bytes")));
            }
            request.body = self.take(length)?;
        }
        Ok(request)
    }

    fn read_chunked_body(&mut self) -> Result<Vec<u8>, ReadError> {
        let mut body = Vec::new();
        loop {
            let line = self.read_line()?;
            let size = line.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size, 16)
                .map_err(|_| ReadError::Bad(format!("bad chunk size line {line:?}")))?;
            if size == 0 {
                // Trailers, up to the empty line.
                while !self.read_line()?.is_empty() {}
                return Ok(body);
            }
            if body.len() + size > MAX_BODY {
                return Err(ReadError::Bad(format!("body longer than {MAX_BODY} bytes")));
            }
            body.extend(self.take(size)?);
            if self.take(2)? != b"\r\n" {
                return Err(ReadError::Bad("chunk data not followed by CRLF".to_owned()));
            }
        }
    }

    fn read_line(&mut self) -> Result<String, ReadError> {
        loop {
            if let Some(pos) = find(&self.buf, b"\r\n") {
                let line: Vec<u8> = self.buf.drain(..pos + 2).take(pos).collect();
                return String::from_utf8(line)
                    .map_err(|_| ReadError::Bad("chunk line is not UTF-8".to_owned()));
            }
            if self.buf.len() > MAX_HEAD {
                return Err(ReadError::Bad("chunk line too long".to_owned()));
            }
            if self.fill()? == 0 {
                return Err(ReadError::Closed);
            }
        }
    }

    /// Takes exactly `n` bytes, reading as needed.
    fn take(&mut self, n: usize) -> Result<Vec<u8>, ReadError> {
        while self.buf.len() < n {
            if self.fill()? == 0 {
                return Err(ReadError::Closed);
            }
        }
        Ok(self.buf.drain(..n).collect())
    }

    /// Reads some bytes into the buffer; 0 means the client closed its side.
    fn fill(&mut self) -> Result<usize, ReadError> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(n);
                }
                Err(err) if is_timeout(&err) => {
                    if self.shutdown_requested() {
                        return Err(ReadError::Shutdown);
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(ReadError::Closed),
            }
        }
    }

    /// Writes all of `bytes` (one `write` when the socket buffer has room).
    pub(crate) fn send(&mut self, bytes: &[u8]) -> Result<(), Stop> {
        let mut written = 0;
        while written < bytes.len() {
            match self.stream.write(&bytes[written..]) {
                Ok(0) => return Err(Stop::ClientGone),
                Ok(n) => written += n,
                Err(err) if is_timeout(&err) => {
                    if self.shutdown_requested() {
                        return Err(Stop::Shutdown);
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(Stop::ClientGone),
            }
        }
        Ok(())
    }

    /// Writes `data` as one chunk of a chunked body; nothing for empty data.
    pub(crate) fn send_chunk(&mut self, data: &[u8]) -> Result<(), Stop> {
        if data.is_empty() {
            return Ok(());
        }
        let mut framed = format!("{:x}\r\n", data.len()).into_bytes();
        framed.extend_from_slice(data);
        framed.extend_from_slice(b"\r\n");
        self.send(&framed)
    }

    /// Ends a chunked body.
    pub(crate) fn finish_chunked(&mut self) -> Result<(), Stop> {
        self.send(b"0\r\n\r\n")
    }

    /// Sleeps `ms`, waking early when the server shuts down or the client closes.
    pub(crate) fn pause(&mut self, ms: u64) -> Result<(), Stop> {
        let deadline = Instant::now() + Duration::from_millis(ms);
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Ok(());
            }
            let slice = (deadline - now).min(Duration::from_millis(10));
            match self.shutdown.recv_timeout(slice) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return Err(Stop::Shutdown),
            }
            if self.client_gone() {
                return Err(Stop::ClientGone);
            }
        }
    }

    /// Whether the client has closed the connection (a peek sees end of stream or an error).
    fn client_gone(&self) -> bool {
        if self.stream.set_nonblocking(true).is_err() {
            return false;
        }
        let mut byte = [0u8; 1];
        let gone = match self.stream.peek(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(err) => !is_timeout(&err) && err.kind() != io::ErrorKind::Interrupted,
        };
        let _ = self.stream.set_nonblocking(false);
        gone
    }

    /// Closes after an error response to a request that may not have been read to its end:
    /// stop writing, then discard what the client still sends for a short while, so that the
    /// close does not become a reset that destroys the response on its way.
    pub(crate) fn close_after_error(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Write);
        let deadline = Instant::now() + Duration::from_millis(200);
        while Instant::now() < deadline {
            match self.fill() {
                Ok(0) | Err(_) => return,
                Ok(_) => self.buf.clear(),
            }
        }
    }

    /// Closes both directions at once, as a dropped connection looks to the client.
    pub(crate) fn close_abruptly(&self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    fn shutdown_requested(&self) -> bool {
        matches!(self.shutdown.try_recv(), Err(TryRecvError::Disconnected))
    }
}

/// The head of a response.
pub(crate) fn head(status: u16, headers: &[(&str, String)]) -> Vec<u8> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head.into_bytes()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Site Overloaded",
        _ => "Unknown",
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

fn is_timeout(err: &io::Error) -> bool {
    matches!(err.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}
