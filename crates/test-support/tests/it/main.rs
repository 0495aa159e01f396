//! Integration tests of the fake model server over real loopback sockets, with a tiny blocking
//! HTTP/1.1 client (below) so that nothing here depends on the provider adapters.
//!
//! Invariant: every test is hermetic (127.0.0.1 only) and bounded: the client's reads time out
//! after `READ_TIMEOUT`, so a server bug fails a test instead of hanging it.
// Tests unwrap in helpers, and one test runs the binary (std::process::Command).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod anthropic;
mod chat;
mod faults;
mod responses;
mod server;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use codecoder_test_support::{FakeModelServer, Script};
use serde_json::{Value, json};

pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(10);
pub(crate) const WAIT: Duration = Duration::from_secs(5);

/// A client connection to the server.
pub(crate) struct Client {
    stream: TcpStream,
    /// Bytes read but not yet consumed by a response.
    pending: Vec<u8>,
}

/// A response as the client read it.
#[derive(Debug, Default)]
pub(crate) struct Response {
    pub(crate) status: u16,
    /// Names lowercased.
    pub(crate) headers: Vec<(String, String)>,
    /// The decoded body.
    pub(crate) body: Vec<u8>,
    /// The chunks of a chunked body, as the server framed them.
    pub(crate) chunks: Vec<Vec<u8>>,
    /// For a chunked body: the decoded body length after each `read` call.
    pub(crate) read_boundaries: Vec<usize>,
    /// The body ended properly (final chunk, or `Content-Length` bytes); false on a premature
    /// end of stream.
    pub(crate) complete: bool,
}

impl Client {
    pub(crate) fn connect(server: &FakeModelServer) -> Self {
        let stream = TcpStream::connect(server.addr()).unwrap();
        stream.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        stream.set_nodelay(true).unwrap();
        Self { stream, pending: Vec::new() }
    }

    /// Writes raw bytes.
    pub(crate) fn write_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// Sends a request with a `Content-Length` body.
    pub(crate) fn send(
        &mut self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) {
        let mut request = format!(
            "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        self.write_raw(request.as_bytes());
    }

    /// `POST target` with a JSON body, then reads the whole response.
    pub(crate) fn post(&mut self, target: &str, body: &Value) -> Response {
        self.send("POST", target, &[("Content-Type", "application/json")], &body.to_string());
        self.read_response()
    }

    /// One `read`; an empty vector at end of stream.
    fn read_some(&mut self) -> Vec<u8> {
        let mut buf = [0u8; 64 * 1024];
        loop {
            match self.stream.read(&mut buf) {
                Ok(n) => return buf[..n].to_vec(),
                Err(err) if err.kind() == ErrorKind::Interrupted => {}
                Err(err) if err.kind() == ErrorKind::ConnectionReset => return Vec::new(),
                Err(err) => panic!("client read failed: {err}"),
            }
        }
    }

    /// Reads the status line and headers; `None` when the connection closed first.
    pub(crate) fn read_head(&mut self) -> Option<Response> {
        let end = loop {
            if let Some(pos) = find(&self.pending, b"\r\n\r\n") {
                break pos;
            }
            let bytes = self.read_some();
            if bytes.is_empty() {
                return None;
            }
            self.pending.extend(bytes);
        };
        let head = String::from_utf8(self.pending.drain(..end + 4).collect()).unwrap();
        let mut lines = head.split("\r\n");
        let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
        let headers = lines
            .filter(|line| !line.is_empty())
            .map(|line| {
                let (name, value) = line.split_once(':').unwrap();
                (name.to_ascii_lowercase(), value.trim().to_owned())
            })
            .collect();
        Some(Response { status, headers, ..Response::default() })
    }

    /// Reads a whole response (the body until its end, or until the connection closes).
    pub(crate) fn read_response(&mut self) -> Response {
        let mut response = self.read_head().expect("connection closed before a response");
        if response.header("transfer-encoding") == Some("chunked") {
            self.read_chunked(&mut response, usize::MAX);
        } else {
            let length: usize = response.header("content-length").unwrap().parse().unwrap();
            while self.pending.len() < length {
                let bytes = self.read_some();
                if bytes.is_empty() {
                    break;
                }
                self.pending.extend(bytes);
            }
            let length = length.min(self.pending.len());
            response.body = self.pending.drain(..length).collect();
            response.complete = response.body.len() == length;
        }
        response
    }

    /// Reads chunks until the final chunk, end of stream, or `max_chunks` chunks in all.
    pub(crate) fn read_chunked(&mut self, response: &mut Response, max_chunks: usize) {
        loop {
            if self.decode_pending(response, max_chunks) {
                return;
            }
            let bytes = self.read_some();
            if bytes.is_empty() {
                return;
            }
            self.pending.extend(bytes);
            let done = self.decode_pending(response, max_chunks);
            response.read_boundaries.push(response.body.len());
            if done {
                return;
            }
        }
    }

    /// Decodes the complete chunks in `pending`; true when the body ended or `max_chunks`
    /// chunks were decoded.
    fn decode_pending(&mut self, response: &mut Response, max_chunks: usize) -> bool {
        while let Some(line_end) = find(&self.pending, b"\r\n") {
            let size_line = std::str::from_utf8(&self.pending[..line_end]).unwrap();
            let size = usize::from_str_radix(size_line.trim(), 16).unwrap();
            if size == 0 {
                if self.pending.len() < line_end + 4 {
                    return false;
                }
                assert_eq!(&self.pending[line_end..line_end + 4], b"\r\n\r\n");
                self.pending.drain(..line_end + 4);
                response.complete = true;
                return true;
            }
            let data_start = line_end + 2;
            if self.pending.len() < data_start + size + 2 {
                return false;
            }
            let chunk: Vec<u8> = self.pending.drain(..data_start + size + 2).collect();
            assert_eq!(&chunk[data_start + size..], b"\r\n", "chunk not followed by CRLF");
            let data = chunk[data_start..data_start + size].to_vec();
            response.body.extend_from_slice(&data);
            response.chunks.push(data);
            if response.chunks.len() >= max_chunks {
                return true;
            }
        }
        false
    }

    /// True when the server closed the connection (a read sees end of stream).
    pub(crate) fn is_closed(&mut self) -> bool {
        self.pending.is_empty() && self.read_some().is_empty()
    }

    pub(crate) fn close(self) {
        drop(self.stream);
    }
}

impl Response {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// The SSE events of the body, comments excluded.
    pub(crate) fn events(&self) -> Vec<Sse> {
        parse_sse(&self.text()).into_iter().filter(|sse| sse.comment.is_none()).collect()
    }

    /// The SSE comments of the body.
    pub(crate) fn comments(&self) -> Vec<String> {
        parse_sse(&self.text()).into_iter().filter_map(|sse| sse.comment).collect()
    }
}

/// One SSE block.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sse {
    pub(crate) event: Option<String>,
    pub(crate) data: String,
    pub(crate) comment: Option<String>,
}

impl Sse {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|err| panic!("data is not JSON ({err}): {}", self.data))
    }
}

/// Splits an SSE body into blocks (blank-line separated).
pub(crate) fn parse_sse(text: &str) -> Vec<Sse> {
    text.split("\n\n")
        .filter(|block| !block.is_empty())
        .map(|block| {
            let mut sse = Sse::default();
            for line in block.lines() {
                if let Some(comment) = line.strip_prefix(':') {
                    sse.comment = Some(comment.trim().to_owned());
                } else if let Some(event) = line.strip_prefix("event: ") {
                    sse.event = Some(event.to_owned());
                } else if let Some(data) = line.strip_prefix("data: ") {
                    sse.data.push_str(data);
                }
            }
            sse
        })
        .collect()
}

/// Starts a server with `script` and posts one request to `target`.
pub(crate) fn one_request(script: Script, target: &str, body: &Value) -> Response {
    let server = FakeModelServer::start(script).unwrap();
    Client::connect(&server).post(target, body)
}

/// A request body like the adapters send.
pub(crate) fn request_body() -> Value {
    json!({"model": "test-model", "stream": true, "stream_options": {"include_usage": true}})
}

pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}
