//! The stream-json wire: one JSON object per line each way. The `claude-stdin` thread reads
//! the input; answers to our own control requests (`control_response`) go straight to the
//! request waiting for them, everything else to the engine in order. `Peer` writes lines and
//! makes control requests of the SDK from any thread.
//!
//! Invariants: a line is written whole under one lock, so frames from several threads never
//! interleave; a control request waits only while the input is open: when it ends, every
//! request still waiting fails with that reason, and later ones fail at once.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use serde_json::{Value, json};

/// The longest input line read: room for images (5 MB each in the Messages API, a third more
/// in base64) and large answers of in-process MCP tools.
const MAX_LINE: usize = 256 << 20;

/// One item of the input, in order.
#[derive(Debug)]
pub(crate) enum Input {
    /// A message that is neither a control request nor a response (a `user` message).
    Message(Value),
    /// A control request of the SDK: its id and the request.
    Control { request_id: String, request: Value },
    /// A line that is not a JSON object: its number and why.
    Bad { line: usize, error: String },
    /// The input ended (or failed: the reason).
    End(Option<String>),
}

/// Where frames go, and the control requests in flight.
pub(crate) struct Peer {
    out: Mutex<Box<dyn Write + Send>>,
    /// Frames are written (stream-json output); otherwise only the final answer is.
    streaming: bool,
    pending: Mutex<HashMap<String, Sender<Result<Value, String>>>>,
    next: AtomicU64,
    closed: AtomicBool,
}

impl Peer {
    pub(crate) fn new(out: Box<dyn Write + Send>, streaming: bool) -> Arc<Peer> {
        Arc::new(Peer {
            out: Mutex::new(out),
            streaming,
            pending: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            closed: AtomicBool::new(false),
        })
    }

    /// Writes `frame` as one line when frames are streamed.
    pub(crate) fn frame(&self, frame: &Value) -> std::io::Result<()> {
        if self.streaming { self.line(frame) } else { Ok(()) }
    }

    /// Writes `value` as one line whatever the output format.
    pub(crate) fn line(&self, value: &Value) -> std::io::Result<()> {
        let mut text = value.to_string();
        text.push('\n');
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        out.write_all(text.as_bytes())?;
        out.flush()
    }

    /// Writes raw text (print mode's answer).
    pub(crate) fn text(&self, text: &str) -> std::io::Result<()> {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        out.write_all(text.as_bytes())?;
        out.flush()
    }

    /// Answers the SDK's control request `request_id`.
    pub(crate) fn respond(&self, request_id: &str, answer: Result<Value, String>) {
        let response = match answer {
            Ok(response) => {
                json!({"subtype": "success", "request_id": request_id, "response": response})
            }
            Err(error) => json!({"subtype": "error", "request_id": request_id, "error": error}),
        };
        // A closed output ends the run through the frames written next.
        let _ = self.line(&json!({"type": "control_response", "response": response}));
    }

    /// Asks the SDK `request` (a control request body with its `subtype`) and waits for the
    /// answer, at most `timeout` when given.
    ///
    /// # Errors
    /// The SDK's error, a closed input, or the time running out.
    pub(crate) fn request(
        &self,
        request: Value,
        timeout: Option<Duration>,
    ) -> Result<Value, String> {
        let subtype = request.get("subtype").and_then(Value::as_str).unwrap_or("?").to_owned();
        if self.closed.load(Ordering::SeqCst) {
            return Err(format!("cannot ask the SDK ({subtype}): its input is closed"));
        }
        let id = format!("cc_req_{}", self.next.fetch_add(1, Ordering::SeqCst));
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).insert(id.clone(), tx);
        let sent =
            self.line(&json!({"type": "control_request", "request_id": id, "request": request}));
        if let Err(err) = sent {
            self.forget(&id);
            return Err(format!("cannot ask the SDK ({subtype}): {err}"));
        }
        let answer = match timeout {
            Some(timeout) => rx.recv_timeout(timeout).map_err(|_| {
                format!("the SDK did not answer `{subtype}` within {}s", timeout.as_secs())
            }),
            None => rx.recv().map_err(|_| format!("the SDK did not answer `{subtype}`")),
        };
        self.forget(&id);
        if answer.is_err() && timeout.is_some() {
            // Withdrawn, so a late answer is not mistaken for another's.
            let _ = self.line(&json!({"type": "control_cancel_request", "request_id": id}));
        }
        answer?
    }

    fn forget(&self, id: &str) {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
    }

    /// Routes the SDK's answer to our request.
    fn answered(&self, response: &Value) {
        let Some(id) = response.get("request_id").and_then(Value::as_str) else { return };
        let Some(waiting) = self.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(id)
        else {
            return;
        };
        let answer = if response.get("subtype").and_then(Value::as_str) == Some("error") {
            let error = response.get("error").and_then(Value::as_str).unwrap_or("no message");
            Err(format!("the SDK answered with an error: {error}"))
        } else {
            Ok(response.get("response").cloned().unwrap_or(Value::Null))
        };
        let _ = waiting.send(answer);
    }

    /// Withdraws every request still waiting for the SDK (`control_cancel_request` each), and
    /// fails it with `reason`: the turn they belong to is being interrupted.
    pub(crate) fn withdraw_all(&self, reason: &str) {
        let pending =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        for (id, waiting) in pending {
            let _ = self.line(&json!({"type": "control_cancel_request", "request_id": id}));
            let _ = waiting.send(Err(reason.to_owned()));
        }
    }

    /// The input ended: every request waiting fails, and later ones fail at once.
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let pending =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        for (_, waiting) in pending {
            let _ = waiting.send(Err("the SDK closed its input before answering".to_owned()));
        }
    }
}

/// Starts the `claude-stdin` thread reading `input` into the returned channel.
pub(crate) fn read_input(
    input: Box<dyn BufRead + Send>,
    peer: Arc<Peer>,
) -> std::io::Result<Receiver<Input>> {
    let (tx, rx) = crossbeam_channel::unbounded();
    // Detached: it may be blocked on an input that never ends; it holds nothing else.
    std::thread::Builder::new()
        .name("claude-stdin".to_owned())
        .spawn(move || read(input, &peer, &tx))?;
    Ok(rx)
}

fn read(mut input: Box<dyn BufRead + Send>, peer: &Peer, tx: &Sender<Input>) {
    let mut number = 0;
    loop {
        let mut line = Vec::new();
        let read =
            std::io::Read::take(&mut input, MAX_LINE as u64 + 1).read_until(b'\n', &mut line);
        number += 1;
        match read {
            Ok(0) => break,
            Ok(_) => {}
            Err(err) => {
                peer.close();
                let _ = tx.send(Input::End(Some(err.to_string())));
                return;
            }
        }
        if line.len() > MAX_LINE && !line.ends_with(b"\n") {
            // The rest of the line is skipped.
            let mut rest = Vec::new();
            let _ = input.read_until(b'\n', &mut rest);
            let _ = tx.send(Input::Bad { line: number, error: "longer than 256 MiB".to_owned() });
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let item = match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(object)) => classify(Value::Object(object), peer),
            Ok(_) => Some(Input::Bad { line: number, error: "not a JSON object".to_owned() }),
            Err(err) => Some(Input::Bad { line: number, error: format!("not JSON: {err}") }),
        };
        if let Some(item) = item
            && tx.send(item).is_err()
        {
            return;
        }
    }
    peer.close();
    let _ = tx.send(Input::End(None));
}

fn classify(value: Value, peer: &Peer) -> Option<Input> {
    match value.get("type").and_then(Value::as_str) {
        Some("control_response") => {
            peer.answered(value.get("response").unwrap_or(&Value::Null));
            None
        }
        // Our requests are not cancelled by the SDK in a way we must act on; a request of its
        // own it withdraws needs no reply.
        Some("control_cancel_request" | "keep_alive") => None,
        Some("control_request") => {
            let request_id = value
                .get("request_id")
                .map(|id| id.as_str().map_or_else(|| id.to_string(), str::to_owned))
                .unwrap_or_default();
            let request = value.get("request").cloned().unwrap_or(Value::Null);
            Some(Input::Control { request_id, request })
        }
        _ => Some(Input::Message(value)),
    }
}
