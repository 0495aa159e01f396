//! The fake model server: a std `TcpListener` on 127.0.0.1, a named accept thread, a named
//! thread per connection, each playing the next script step for each request it reads.
//!
//! Framing: a 200 reply is `text/event-stream` with `Transfer-Encoding: chunked`; each SSE event
//! (or comment, or injected bytes, or half of a split event) is one chunk written with one
//! `write`, so the network writes are exactly the cuts the script asks for. Connections are
//! kept alive (HTTP/1.1) unless the client sends `Connection: close` or a fault ends them.
//!
//! Invariants: requests are recorded and matched to steps in one critical section, so the n-th
//! recorded request got the n-th step. Every thread is joined when the server is dropped or
//! shut down: dropping the shutdown sender wakes every pause and, within `http::POLL`, every
//! blocked read and write; a loopback connect wakes the accept thread. Bad input gets a 400,
//! never a panic.

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use codecoder_stdx::{JoinOnDrop, spawn_named};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use serde_json::Value;

use crate::Error;
use crate::http::{self, Conn, ReadError, Request, Stop};
use crate::script::{Fault, Reply, Script, Step, UntilTools};
use crate::wire::{self, Api, Ctx, KEEP_ALIVE};

/// The error message of the 500 sent when the script has no step left.
pub const SCRIPT_EXHAUSTED: &str = "fake model: script exhausted";

/// The message llama.cpp's server answers a streamed request with tools with.
pub const STREAM_TOOLS_REFUSAL: &str = "Cannot use tools with stream";

/// What a stamped reply (`Reply::stamped`) replaces in each event with the time it is written:
/// the wall clock's microseconds since the Unix epoch, in decimal.
pub const SEND_STAMP: &str = "{send_us}";

/// A request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// `POST`, `GET`, …
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query, without `?`.
    pub query: Option<String>,
    /// Headers in arrival order, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; `Null` when empty or not JSON.
    pub body: Value,
    /// The body as text (lossy UTF-8).
    pub raw_body: String,
    /// The API the path speaks, if any.
    pub api: Option<Api>,
    /// Which TCP connection carried it (0, 1, … in accept order): equal numbers mean the client
    /// reused a kept-alive connection.
    pub connection: usize,
}

impl RecordedRequest {
    /// The first value of header `name` (give it lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }
}

/// A running fake model server; dropping it (or `shutdown`) stops it and joins its threads.
#[derive(Debug)]
pub struct FakeModelServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// Never sends; dropping it is the shutdown signal. Taken (dropped) before the accept thread
    /// is joined.
    shutdown_tx: Option<Sender<()>>,
    accept_thread: Option<JoinOnDrop<()>>,
}

impl FakeModelServer {
    /// Starts a server on 127.0.0.1 at a free port, playing `script`.
    pub fn start(script: Script) -> io::Result<Self> {
        Self::start_on(script, 0)
    }

    /// Starts a server on 127.0.0.1:`port` (0: any free port), playing `script`.
    pub fn start_on(script: Script, port: u16) -> io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                steps: script.steps.into(),
                when_exhausted: script.when_exhausted.map(|step| *step),
                when_no_tools: script.when_no_tools.map(|step| *step),
                until_tools: script.until_tools,
                refuse_streamed_tools: script.refuse_streamed_tools,
                when_streamed_tools: script.when_streamed_tools.map(|step| *step),
                when_request_contains: script.when_request_contains,
                discovery: script.discovery,
                discovery_requests: Vec::new(),
                requests: Vec::new(),
                disconnects: 0,
            }),
            changed: Condvar::new(),
        });
        let (shutdown_tx, shutdown_rx) = crossbeam_channel::bounded::<()>(0);
        let accept_shared = Arc::clone(&shared);
        let accept_thread = spawn_named("fake-model-accept", move || {
            accept_loop(&listener, &accept_shared, &shutdown_rx);
        })?;
        Ok(Self {
            addr,
            shared,
            shutdown_tx: Some(shutdown_tx),
            accept_thread: Some(accept_thread),
        })
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Appends a step to the script while the server runs.
    pub fn push(&self, step: impl Into<Step>) {
        self.shared.lock().steps.push_back(step.into());
    }

    /// How many scripted steps have not been played yet.
    pub fn remaining_steps(&self) -> usize {
        self.shared.lock().steps.len()
    }

    /// Every request received so far, in arrival order, but those at discovery paths.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// Every request at a discovery path (`DISCOVERY_PATHS`) so far, in arrival order.
    pub fn discovery_requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().discovery_requests.clone()
    }

    /// Waits until at least `n` requests arrived; returns them all.
    pub fn wait_for_requests(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Result<Vec<RecordedRequest>, Error> {
        let state = self.shared.wait_until(timeout, |state| state.requests.len() >= n);
        if state.requests.len() >= n {
            return Ok(state.requests.clone());
        }
        Err(Error::Timeout { what: "requests", wanted: n, seen: state.requests.len(), timeout })
    }

    /// How many responses ended because the client closed the connection before they were
    /// complete.
    pub fn disconnects(&self) -> usize {
        self.shared.lock().disconnects
    }

    /// Waits until at least `n` client disconnects were observed; returns the count.
    pub fn wait_for_disconnects(&self, n: usize, timeout: Duration) -> Result<usize, Error> {
        let state = self.shared.wait_until(timeout, |state| state.disconnects >= n);
        if state.disconnects >= n {
            return Ok(state.disconnects);
        }
        Err(Error::Timeout { what: "disconnects", wanted: n, seen: state.disconnects, timeout })
    }

    /// Stops the server and joins its threads (what drop does, made explicit).
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let Some(shutdown_tx) = self.shutdown_tx.take() else {
            return;
        };
        drop(shutdown_tx);
        // Wake the accept thread out of `accept`; it sees the shutdown and returns. If the
        // connect fails the thread is still blocked and the join below would hang, but a
        // loopback connect to our own listener only fails when the machine is out of sockets.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(accept_thread) = self.accept_thread.take() {
            let _ = accept_thread.join();
        }
    }
}

impl Drop for FakeModelServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// State shared by the handle and the connection threads.
///
/// A `Mutex` (not a channel to one owner) because the test thread must read snapshots and wait
/// for counts while connection threads append; the lock is held only to push, pop or clone,
/// never across IO or a channel operation.
#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug)]
struct State {
    steps: VecDeque<Step>,
    when_exhausted: Option<Step>,
    when_no_tools: Option<Step>,
    until_tools: Option<UntilTools>,
    refuse_streamed_tools: bool,
    when_streamed_tools: Option<Step>,
    when_request_contains: Vec<(String, Step)>,
    discovery: std::collections::BTreeMap<String, Value>,
    discovery_requests: Vec<RecordedRequest>,
    requests: Vec<RecordedRequest>,
    disconnects: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait_until(
        &self,
        timeout: Duration,
        done: impl Fn(&State) -> bool,
    ) -> MutexGuard<'_, State> {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        while !done(&state) {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            state = match self.changed.wait_timeout(state, deadline - now) {
                Ok((state, _)) => state,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        state
    }

    /// Records the request; when `take_step`, also takes its step (`None`: script exhausted).
    /// Returns the request number (1-based) and the step.
    fn record(&self, request: RecordedRequest, take_step: bool) -> (usize, Option<Step>) {
        let mut state = self.lock();
        let offered: Vec<&str> = request
            .body
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|tool| {
                tool.get("name").or_else(|| tool.get("function")?.get("name"))?.as_str()
            })
            .collect();
        let no_tools = request.body.is_object() && offered.is_empty();
        let waiting = state
            .until_tools
            .as_ref()
            .filter(|until| until.names.iter().any(|name| !offered.contains(&name.as_str())));
        let waiting_step = waiting.map(|until| (*until.step).clone());
        let streamed = request.body.get("stream") == Some(&Value::Bool(true));
        let side_step = state
            .when_request_contains
            .iter()
            .find(|(text, _)| request.raw_body.contains(text.as_str()))
            .map(|(_, step)| step.clone());
        state.requests.push(request);
        let n = state.requests.len();
        let step = if let (true, Some(step)) = (take_step, side_step) {
            Some(step)
        } else if take_step && streamed && !no_tools && state.refuse_streamed_tools {
            let mut fault = Fault::status(500);
            fault.body = Some(serde_json::json!({"error": {
                "code": 500,
                "message": STREAM_TOOLS_REFUSAL,
                "type": "server_error",
            }}));
            Some(Step::Fault(fault))
        } else if take_step && streamed && !no_tools && state.when_streamed_tools.is_some() {
            state.when_streamed_tools.clone()
        } else if take_step && no_tools && state.when_no_tools.is_some() {
            state.when_no_tools.clone()
        } else if let (true, Some(mut step)) = (take_step, waiting_step) {
            if let Step::Reply(reply) = &mut step {
                for call in &mut reply.tool_calls {
                    call.id = format!("{}-{n}", call.id);
                }
            }
            Some(step)
        } else if take_step {
            state.steps.pop_front().or_else(|| state.when_exhausted.clone())
        } else {
            None
        };
        drop(state);
        self.changed.notify_all();
        (n, step)
    }

    fn count_disconnect(&self) {
        self.lock().disconnects += 1;
        self.changed.notify_all();
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>, shutdown: &Receiver<()>) {
    // Connection threads, joined when this vector drops at the end of the loop.
    let mut connections: Vec<JoinOnDrop<()>> = Vec::new();
    for conn_idx in 0.. {
        let accepted = listener.accept();
        if matches!(shutdown.try_recv(), Err(TryRecvError::Disconnected)) {
            break;
        }
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(_) => {
                // E.g. out of file descriptors: back off briefly instead of spinning.
                match shutdown.recv_timeout(Duration::from_millis(10)) {
                    Err(RecvTimeoutError::Timeout) => continue,
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                }
            }
        };
        connections.retain(|connection| !connection.is_finished());
        let shared = Arc::clone(shared);
        let shutdown = shutdown.clone();
        // If the thread cannot be spawned the stream is dropped: the client sees a closed
        // connection, as from an overloaded server.
        if let Ok(connection) = spawn_named(format!("fake-model-conn-{conn_idx}"), move || {
            serve_connection(stream, conn_idx, &shared, shutdown);
        }) {
            connections.push(connection);
        }
    }
}

fn serve_connection(stream: TcpStream, conn_idx: usize, shared: &Shared, shutdown: Receiver<()>) {
    let mut conn = Conn::new(stream, shutdown);
    loop {
        let request = match conn.read_request() {
            Ok(request) => request,
            Err(ReadError::Bad(message)) => {
                let body = wire::error_body(None, 400, None, &format!("fake model: {message}"), 0);
                if send_json(&mut conn, 400, &body, &[], false).is_ok() {
                    conn.close_after_error();
                }
                return;
            }
            Err(ReadError::Closed | ReadError::Shutdown) => return,
        };
        let keep_alive = request.keep_alive();
        match respond(&mut conn, conn_idx, shared, request, keep_alive) {
            Ok(true) => {}
            Ok(false) | Err(Stop::Shutdown) => return,
            Err(Stop::ClientGone) => {
                shared.count_disconnect();
                return;
            }
        }
    }
}

/// Records the request and answers it; `Ok(true)` when the connection stays open for the next
/// request.
fn respond(
    conn: &mut Conn,
    conn_idx: usize,
    shared: &Shared,
    request: Request,
    keep_alive: bool,
) -> Result<bool, Stop> {
    let api = Api::from_path(&request.path);
    let (body, body_error) = if request.body.iter().all(u8::is_ascii_whitespace) {
        (Value::Null, None)
    } else {
        match serde_json::from_slice::<Value>(&request.body) {
            Ok(body) => (body, None),
            Err(err) => (Value::Null, Some(err.to_string())),
        }
    };
    let is_post = request.method == "POST";
    let take_step = api.is_some() && is_post && body_error.is_none();
    let path = request.path.clone();
    let recorded = RecordedRequest {
        method: request.method,
        path: request.path,
        query: request.query,
        headers: request.headers,
        raw_body: String::from_utf8_lossy(&request.body).into_owned(),
        body: body.clone(),
        api,
        connection: conn_idx,
    };
    if api.is_none() && DISCOVERY_PATHS.contains(&path.trim_end_matches('/')) {
        return answer_discovery(conn, shared, recorded, keep_alive);
    }
    let (n, step) = shared.record(recorded, take_step);
    let request_id_header = match api {
        Some(Api::Anthropic) => "request-id",
        Some(Api::Responses | Api::Chat) | None => "x-request-id",
    };
    let request_id = (request_id_header, wire::request_id(n));

    let Some(api) = api else {
        let body = wire::error_body(None, 404, None, &format!("fake model: no API at {path}"), n);
        return send_json(conn, 404, &body, &[request_id], keep_alive);
    };
    if !is_post {
        let message = format!("fake model: {path} takes POST");
        let body = wire::error_body(Some(api), 405, None, &message, n);
        return send_json(conn, 405, &body, &[request_id], keep_alive);
    }
    if let Some(err) = body_error {
        let message = format!("fake model: request body is not JSON: {err}");
        let body = wire::error_body(Some(api), 400, None, &message, n);
        return send_json(conn, 400, &body, &[request_id], keep_alive);
    }
    match step {
        None => {
            let body = wire::error_body(Some(api), 500, None, SCRIPT_EXHAUSTED, n);
            send_json(conn, 500, &body, &[request_id], keep_alive)
        }
        Some(Step::Fault(fault)) => play_fault(conn, api, &fault, n, request_id, keep_alive),
        Some(Step::Reply(reply)) => {
            let ctx = Ctx::from_body(n, &body);
            if body.get("stream") == Some(&Value::Bool(false)) {
                conn.pause(reply.delay_ms)?;
                let answer = wire::whole_answer(api, &reply, &ctx);
                return send_json(conn, 200, &answer, &[request_id], keep_alive);
            }
            play_reply(conn, api, &reply, &ctx, request_id, keep_alive)
        }
    }
}

fn play_fault(
    conn: &mut Conn,
    api: Api,
    fault: &Fault,
    n: usize,
    request_id: (&str, String),
    keep_alive: bool,
) -> Result<bool, Stop> {
    conn.pause(fault.delay_ms)?;
    if fault.hang_up {
        conn.close_abruptly();
        return Ok(false);
    }
    let status = fault.status;
    let body = match &fault.body {
        Some(body) => body.clone(),
        None => {
            let message = match (&fault.message, status) {
                (Some(message), _) => message.clone(),
                (None, 429) => "fake model: rate limited (scripted 429)".to_owned(),
                (None, 529) => "Overloaded".to_owned(),
                (None, status) => format!("fake model: scripted error {status}"),
            };
            wire::error_body(Some(api), status, fault.error_type.as_deref(), &message, n)
        }
    };
    let mut headers = vec![request_id];
    if let Some(secs) = fault.retry_after {
        headers.push(("retry-after", secs.to_string()));
    }
    headers.extend(fault.headers.iter().map(|(name, value)| (name.as_str(), value.clone())));
    send_json(conn, status, &body, &headers, keep_alive)
}

fn play_reply(
    conn: &mut Conn,
    api: Api,
    reply: &Reply,
    ctx: &Ctx,
    request_id: (&str, String),
    keep_alive: bool,
) -> Result<bool, Stop> {
    let events = wire::render(api, reply, ctx);
    conn.pause(reply.delay_ms)?;
    let connection = if keep_alive { "keep-alive" } else { "close" };
    conn.send(&http::head(
        200,
        &[
            ("content-type", "text/event-stream; charset=utf-8".to_owned()),
            ("cache-control", "no-cache".to_owned()),
            ("transfer-encoding", "chunked".to_owned()),
            ("connection", connection.to_owned()),
            request_id,
        ],
    ))?;
    let total = events.len();
    let mut body = Body { conn, coalesce: reply.coalesce, pending: Vec::new() };
    for index in 0..=total {
        // Faults "before event `index`"; at the end, every index past the last event applies.
        let applies =
            |before: usize| if index == total { before >= total } else { before == index };
        for stall in reply.stalls.iter().filter(|stall| applies(stall.before)) {
            body.pause(stall.ms)?;
        }
        for inject in reply.inject.iter().filter(|inject| applies(inject.before)) {
            body.piece(inject.raw.as_bytes())?;
        }
        if reply.malformed_before.is_some_and(applies) {
            body.piece(&wire::malformed_event(api))?;
        }
        if reply.drop_after.is_some_and(applies) {
            body.flush()?;
            body.conn.close_abruptly();
            return Ok(false);
        }
        if reply.end_after.is_some_and(applies) {
            body.finish()?;
            return Ok(keep_alive);
        }
        if let Some(error) = reply.error_after.as_ref().filter(|error| applies(error.after)) {
            body.piece(&wire::stream_error_event(api, error, ctx))?;
            body.finish()?;
            return Ok(keep_alive);
        }
        let Some(event) = events.get(index) else {
            break;
        };
        if index > 0 {
            body.pause(reply.pace_ms)?;
        }
        if reply.keep_alive {
            body.piece(KEEP_ALIVE)?;
        }
        body.event(reply, &event.bytes)?;
        if event.repeat {
            // Ends only when the client leaves or the server shuts down.
            loop {
                body.pause(reply.pace_ms.max(1))?;
                body.event(reply, &event.bytes)?;
            }
        }
    }
    body.finish()?;
    Ok(keep_alive)
}

/// The chunked body of a reply: each piece is one chunk (one network write), or, when
/// coalescing, pieces are gathered into chunks of up to `COALESCE_BYTES`, flushed before every
/// pause and at the end.
struct Body<'a> {
    conn: &'a mut Conn,
    coalesce: bool,
    pending: Vec<u8>,
}

/// The chunk size when coalescing.
const COALESCE_BYTES: usize = 64 * 1024;

impl Body<'_> {
    fn piece(&mut self, bytes: &[u8]) -> Result<(), Stop> {
        if !self.coalesce {
            return self.conn.send_chunk(bytes);
        }
        self.pending.extend_from_slice(bytes);
        if self.pending.len() >= COALESCE_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Stop> {
        let pending = std::mem::take(&mut self.pending);
        self.conn.send_chunk(&pending)
    }

    /// Sends what is pending, then sleeps `ms` (nothing at all for 0).
    fn pause(&mut self, ms: u64) -> Result<(), Stop> {
        if ms == 0 {
            return Ok(());
        }
        self.flush()?;
        self.conn.pause(ms)
    }

    fn finish(&mut self) -> Result<(), Stop> {
        self.flush()?;
        self.conn.finish_chunked()
    }

    /// One event, split inside its first multi-byte character when the reply asks for it, and
    /// stamped with the time of its write when the reply asks for that.
    fn event(&mut self, reply: &Reply, bytes: &[u8]) -> Result<(), Stop> {
        let stamped;
        let bytes = if reply.stamp {
            stamped = stamp(bytes);
            &stamped[..]
        } else {
            bytes
        };
        // A UTF-8 lead byte of a multi-byte character is 0b11xx_xxxx.
        let lead = bytes.iter().position(|byte| *byte >= 0xC0);
        match lead {
            Some(lead) if reply.split_utf8 => {
                self.piece(&bytes[..=lead])?;
                self.pause(reply.split_pause_ms)?;
                self.piece(&bytes[lead + 1..])
            }
            Some(_) | None => self.piece(bytes),
        }
    }
}

/// `bytes` with every `SEND_STAMP` replaced by the wall clock's microseconds since the epoch.
fn stamp(bytes: &[u8]) -> Vec<u8> {
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_micros());
    let needle = SEND_STAMP.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() + 8);
    let mut rest = bytes;
    while let Some(at) = rest.windows(needle.len()).position(|window| window == needle) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(micros.to_string().as_bytes());
        rest = &rest[at + needle.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// The paths a client asks what a server serves at; requests there are recorded apart and
/// answered from `Script::discovery` (a 404 when it has no answer).
pub(crate) const DISCOVERY_PATHS: &[&str] =
    &["/models", "/v1/models", "/props", "/api/show", "/api/tags", "/api/ps", "/api/v0/models"];

/// Answers a request at a discovery path from the script's `discovery` answers.
fn answer_discovery(
    conn: &mut Conn,
    shared: &Shared,
    recorded: RecordedRequest,
    keep_alive: bool,
) -> Result<bool, Stop> {
    let path = recorded.path.trim_end_matches('/').to_owned();
    let answer = {
        let mut state = shared.lock();
        state.discovery_requests.push(recorded);
        state.discovery.get(&path).cloned()
    };
    shared.changed.notify_all();
    match answer {
        Some(answer) => send_json(conn, 200, &answer, &[], keep_alive),
        None => {
            let body =
                wire::error_body(None, 404, None, &format!("fake model: no API at {path}"), 0);
            send_json(conn, 404, &body, &[], keep_alive)
        }
    }
}

/// Sends a complete JSON response with `Content-Length`.
fn send_json(
    conn: &mut Conn,
    status: u16,
    body: &Value,
    extra_headers: &[(&str, String)],
    keep_alive: bool,
) -> Result<bool, Stop> {
    let body = body.to_string();
    let mut headers = vec![
        ("content-type", "application/json".to_owned()),
        ("content-length", body.len().to_string()),
        ("connection", if keep_alive { "keep-alive" } else { "close" }.to_owned()),
    ];
    headers.extend(extra_headers.iter().cloned());
    let mut response = http::head(status, &headers);
    response.extend_from_slice(body.as_bytes());
    conn.send(&response)?;
    Ok(keep_alive)
}
