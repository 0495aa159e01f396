//! One language server: spawned through the sandbox, spoken to over stdio with JSON-RPC, its
//! messages read by one named thread (`lsp-reader-NAME`) and written by another
//! (`lsp-writer-NAME`, from a bounded queue, so that a server that stops reading blocks no
//! caller).
//!
//! Invariants:
//! - Starting never blocks: `Client::start` spawns the server and sends `initialize`; until the
//!   server answers it, the messages callers send are held and go out, in order, right after
//!   `initialized` (as the protocol asks). A server not answering within its start bound is
//!   taken for hung (`start_expired`).
//! - Every request has a deadline: a server that hangs costs the caller at most that long, and
//!   a server that exits fails every pending request at once.
//! - The reader thread owns the stdout; it answers the server's own requests (configuration,
//!   capability registration, progress) with empty results so that no server waits on us.
//! - Dropping a `Client` asks the server to shut down (briefly), then kills its process group
//!   and joins the reader.

use std::collections::HashMap;
use std::io::BufReader;
use std::path::Path;
use std::process::ChildStdin;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use codecoder_sandbox::{CommandSpec, PipedChild, SpawnConfig};
use codecoder_stdx::{JoinOnDrop, spawn_named};
use crossbeam_channel::{Receiver, Sender};
use serde_json::{Value, json};

use crate::framing::{read_frame, write_frame};
use crate::{Error, Result, ServerConfig, path_to_uri};

/// How long `shutdown` may take when the client is dropped.
const SHUTDOWN_WAIT: Duration = Duration::from_millis(200);

/// Messages queued for the writer thread. A server that stops reading fills the pipe, then this
/// queue; past that a message is dropped and the server taken for stuck (no caller blocks).
const WRITE_QUEUE: usize = 256;

/// Diagnostics the server last published for one document.
#[derive(Debug, Clone, Default)]
pub(crate) struct Published {
    /// Bumped on every publish for the document.
    pub(crate) generation: u64,
    /// The document version the server said it analysed, when it says.
    pub(crate) version: Option<i64>,
    /// The diagnostics, as the server sent them.
    pub(crate) diagnostics: Vec<Value>,
}

/// The id of `initialize`, the first request (later ones count from 1).
const INITIALIZE_ID: i64 = 0;

/// Where the `initialize` handshake stands.
enum Readiness {
    /// Not answered yet: the messages sent meanwhile, in order.
    Starting(Vec<Vec<u8>>),
    /// Answered; messages go out as they are sent.
    Ready,
    /// Answered with an error: why.
    Refused(String),
}

/// State the reader thread and callers share. The mutexes are held only to read or update a
/// map, never across IO or a wait on another lock; the condition variable wakes callers waiting
/// for a publish or for a response.
struct Shared {
    /// The writer thread's queue; `None` once the client is dropped.
    outgoing: Mutex<Option<Sender<Vec<u8>>>>,
    responses: Mutex<HashMap<i64, std::result::Result<Value, String>>>,
    published: Mutex<HashMap<String, Published>>,
    changed: Condvar,
    dead: AtomicBool,
    /// Held while a message is sent (so that held messages keep their order), never across a
    /// wait.
    readiness: Mutex<Readiness>,
}

impl Shared {
    /// Sends `message`, or holds it while the server has not answered `initialize`.
    fn send(&self, message: &Value) -> bool {
        let Ok(body) = serde_json::to_vec(message) else { return false };
        let Ok(mut readiness) = self.readiness.lock() else { return false };
        match &mut *readiness {
            Readiness::Starting(held) => {
                held.push(body);
                true
            }
            Readiness::Ready => self.send_now(body),
            Readiness::Refused(_) => false,
        }
    }

    /// Queues `body` for the writer whatever the handshake's state (`initialize` itself, and
    /// the answers to the server's own requests).
    fn send_now(&self, body: Vec<u8>) -> bool {
        let Ok(outgoing) = self.outgoing.lock() else { return false };
        match outgoing.as_ref() {
            Some(queue) => queue.try_send(body).is_ok(),
            None => false,
        }
    }

    /// The server answered `initialize`: on success `initialized` goes out, then the held
    /// messages in order; on an error they are dropped and the reason kept.
    fn answered_initialize(&self, answer: std::result::Result<Value, String>) {
        if let Ok(mut readiness) = self.readiness.lock() {
            let held = match std::mem::replace(&mut *readiness, Readiness::Ready) {
                Readiness::Starting(held) => held,
                other @ (Readiness::Ready | Readiness::Refused(_)) => {
                    *readiness = other;
                    return;
                }
            };
            match answer {
                Ok(_) => {
                    let initialized =
                        json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} });
                    if let Ok(body) = serde_json::to_vec(&initialized) {
                        self.send_now(body);
                    }
                    for body in held {
                        self.send_now(body);
                    }
                }
                Err(message) => *readiness = Readiness::Refused(message),
            }
        }
        // Take both locks in turn so a waiter between its check and its wait sees the wake.
        drop(self.responses.lock());
        drop(self.published.lock());
        self.wake();
    }

    fn wake(&self) {
        self.changed.notify_all();
    }
}

/// One spawn asked of the spawner thread, with where its answer goes.
type SpawnRequest = (CommandSpec, Sender<codecoder_sandbox::Result<PipedChild>>);

/// The thread servers are spawned from (`lsp-spawner`), living as long as the session's
/// `CodeIntel`: a child dies with the thread that started it (`PR_SET_PDEATHSIG`, and
/// bubblewrap's `--die-with-parent`), and the tool threads that first need a server end after
/// their call.
pub(crate) struct Spawner {
    // The sender goes first: dropping it ends the thread's loop, then the handle joins it.
    requests: Option<Sender<SpawnRequest>>,
    thread: Option<JoinOnDrop<()>>,
}

impl Spawner {
    /// Starts the thread; servers it spawns get `config`.
    pub(crate) fn start(config: SpawnConfig) -> std::io::Result<Spawner> {
        let (requests, incoming) = crossbeam_channel::bounded::<SpawnRequest>(1);
        let thread = spawn_named("lsp-spawner", move || {
            for (spec, reply) in incoming {
                let _ = reply.send(codecoder_sandbox::spawn_piped(&spec, &config));
            }
        })?;
        Ok(Spawner { requests: Some(requests), thread: Some(thread) })
    }

    /// Spawns `spec` on the thread; `Err(None)` when the thread is gone.
    fn spawn(
        &self,
        spec: CommandSpec,
    ) -> std::result::Result<PipedChild, Option<codecoder_sandbox::Error>> {
        let (reply, answer) = crossbeam_channel::bounded(1);
        let requests = self.requests.as_ref().ok_or(None)?;
        requests.send((spec, reply)).map_err(|_| None)?;
        answer.recv().map_err(|_| None)?.map_err(Some)
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        drop(self.requests.take());
        drop(self.thread.take());
    }
}

/// A running language server.
pub(crate) struct Client {
    name: String,
    shared: Arc<Shared>,
    next_id: AtomicI64,
    /// When it was spawned, and how long it may take to answer `initialize`.
    started: Instant,
    start_timeout: Duration,
    versions: Mutex<HashMap<String, i64>>,
    // The child goes before the reader: killing it ends the reader's stream, so the join that
    // follows returns.
    child: Option<PipedChild>,
    reader: Option<JoinOnDrop<()>>,
    writer: Option<JoinOnDrop<()>>,
}

impl Client {
    /// Spawns the server for `root` and sends `initialize`, without waiting for the answer:
    /// messages sent before it are held (see the invariants). It is taken for hung when it has
    /// not answered within `start_timeout`.
    pub(crate) fn start(
        server: &ServerConfig,
        root: &Path,
        spawner: &Spawner,
        start_timeout: Duration,
    ) -> Result<Client> {
        let mut spec = CommandSpec::new(&server.command, &server.args);
        spec.cwd = Some(root.to_path_buf());
        spec.env = server.env.iter().map(|(key, value)| (key.into(), value.into())).collect();
        let mut child = spawner.spawn(spec).map_err(|source| match source {
            Some(source) => Error::Spawn { server: server.name.clone(), source },
            None => Error::Exited { server: server.name.clone() },
        })?;
        let stdin = child.take_stdin();
        let stdout = child.take_stdout();
        let (outgoing, queue) = crossbeam_channel::bounded::<Vec<u8>>(WRITE_QUEUE);
        let writer = match stdin {
            Some(stdin) => Some(
                spawn_named(format!("lsp-writer-{}", server.name), move || {
                    write_loop(stdin, &queue)
                })
                .map_err(Error::Thread)?,
            ),
            None => None,
        };
        let shared = Arc::new(Shared {
            outgoing: Mutex::new(Some(outgoing)),
            responses: Mutex::new(HashMap::new()),
            published: Mutex::new(HashMap::new()),
            changed: Condvar::new(),
            dead: AtomicBool::new(false),
            readiness: Mutex::new(Readiness::Starting(Vec::new())),
        });
        let reader = match stdout {
            Some(stdout) => {
                let shared = Arc::clone(&shared);
                Some(
                    spawn_named(format!("lsp-reader-{}", server.name), move || {
                        read_loop(&shared, BufReader::new(stdout));
                    })
                    .map_err(Error::Thread)?,
                )
            }
            None => None,
        };
        let client = Client {
            name: server.name.clone(),
            shared,
            next_id: AtomicI64::new(INITIALIZE_ID + 1),
            started: Instant::now(),
            start_timeout,
            versions: Mutex::new(HashMap::new()),
            child: Some(child),
            reader,
            writer,
        };
        let root_uri = path_to_uri(root);
        let params = json!({
            // No process id: a server watches the id it is given and exits when it sees no
            // such process, and inside the sandbox's pid namespace it would not see ours.
            "processId": Value::Null,
            "rootUri": root_uri,
            "rootPath": root.to_string_lossy(),
            "workspaceFolders": [{ "uri": root_uri, "name": root.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default() }],
            "initializationOptions": server.initialization_options.clone().unwrap_or(Value::Null),
            "capabilities": {
                "textDocument": {
                    "synchronization": { "didSave": true },
                    "publishDiagnostics": { "relatedInformation": false, "versionSupport": true },
                    "hover": { "contentFormat": ["markdown", "plaintext"] },
                    "definition": { "linkSupport": false },
                    "implementation": { "linkSupport": false },
                    "references": {},
                    "documentSymbol": { "hierarchicalDocumentSymbolSupport": true },
                    "callHierarchy": {}
                },
                "workspace": { "symbol": {}, "workspaceFolders": true, "configuration": true },
                "general": { "positionEncodings": ["utf-16"] }
            }
        });
        let initialize = json!({ "jsonrpc": "2.0", "id": INITIALIZE_ID, "method": "initialize", "params": params });
        let Ok(body) = serde_json::to_vec(&initialize) else {
            return Err(Error::Exited { server: server.name.clone() });
        };
        if !client.shared.send_now(body) {
            return Err(Error::Exited { server: server.name.clone() });
        }
        Ok(client)
    }

    /// Whether the server answered `initialize` (successfully).
    pub(crate) fn is_ready(&self) -> bool {
        self.shared.readiness.lock().is_ok_and(|readiness| matches!(*readiness, Readiness::Ready))
    }

    /// Why the server did not start: it answered `initialize` with an error, exited before
    /// answering, or did not answer within its start bound. `None` while it is ready or still
    /// within its bound.
    pub(crate) fn start_failure(&self) -> Option<Error> {
        let refused = match self.shared.readiness.lock().as_deref() {
            Ok(Readiness::Ready) => return None,
            Ok(Readiness::Refused(message)) => Some(message.clone()),
            Ok(Readiness::Starting(_)) => None,
            Err(_) => return Some(Error::Poisoned),
        };
        if let Some(message) = refused {
            return Some(Error::Response {
                server: self.name.clone(),
                method: "initialize".to_owned(),
                message,
            });
        }
        if self.is_dead() {
            return Some(Error::Exited { server: self.name.clone() });
        }
        self.start_expired().then(|| Error::Timeout {
            server: self.name.clone(),
            method: "initialize".to_owned(),
            millis: u64::try_from(self.start_timeout.as_millis()).unwrap_or(u64::MAX),
        })
    }

    /// Whether the start bound passed without an answer to `initialize`.
    fn start_expired(&self) -> bool {
        !self.is_ready() && self.started.elapsed() >= self.start_timeout
    }

    /// When the start bound ends, while the server has not answered `initialize`.
    fn start_deadline(&self) -> Option<Instant> {
        (!self.is_ready()).then(|| self.started + self.start_timeout)
    }

    /// The server's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Whether the server's process is gone (or its stream ended).
    pub(crate) fn is_dead(&self) -> bool {
        self.shared.dead.load(Ordering::SeqCst)
    }

    /// Sends a notification (lost silently when the server is gone: the next request says so).
    pub(crate) fn notify(&self, method: &str, params: Value) {
        self.shared.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    /// Sends a request and waits for its answer until `timeout`.
    pub(crate) fn request(&self, method: &str, params: Value, timeout: Duration) -> Result<Value> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        if self.is_dead() || !self.shared.send(&message) {
            return Err(Error::Exited { server: self.name.clone() });
        }
        let deadline = Instant::now() + timeout;
        let mut responses = self.shared.responses.lock().map_err(|_| Error::Poisoned)?;
        loop {
            if let Some(answer) = responses.remove(&id) {
                return answer.map_err(|message| Error::Response {
                    server: self.name.clone(),
                    method: method.to_owned(),
                    message,
                });
            }
            if let Some(failure) = self.start_failure() {
                return Err(failure);
            }
            if self.is_dead() {
                return Err(Error::Exited { server: self.name.clone() });
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::Timeout {
                    server: self.name.clone(),
                    method: method.to_owned(),
                    millis: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                });
            }
            let until = self.start_deadline().map_or(deadline, |start| start.min(deadline));
            let wait = until.saturating_duration_since(now).max(Duration::from_millis(1));
            responses = match self.shared.changed.wait_timeout(responses, wait) {
                Ok((guard, _)) => guard,
                Err(_) => return Err(Error::Poisoned),
            };
        }
    }

    /// Tells the server the document's text: `didOpen` the first time, then a whole-text
    /// `didChange` and a `didSave`. Returns the version sent.
    pub(crate) fn sync(&self, path: &Path, language_id: &str, text: &str) -> i64 {
        let uri = path_to_uri(path);
        let previous = self.versions.lock().ok().and_then(|mut versions| {
            let previous = versions.get(&uri).copied();
            versions.insert(uri.clone(), previous.unwrap_or(0) + 1);
            previous
        });
        match previous {
            None => {
                self.notify(
                    "textDocument/didOpen",
                    json!({ "textDocument": { "uri": uri, "languageId": language_id, "version": 1, "text": text } }),
                );
                1
            }
            Some(previous) => {
                let version = previous + 1;
                self.notify(
                    "textDocument/didChange",
                    json!({ "textDocument": { "uri": uri, "version": version }, "contentChanges": [{ "text": text }] }),
                );
                self.notify(
                    "textDocument/didSave",
                    json!({ "textDocument": { "uri": uri }, "text": text }),
                );
                version
            }
        }
    }

    /// Whether the document is open on the server.
    pub(crate) fn is_open(&self, path: &Path) -> bool {
        self.versions.lock().is_ok_and(|versions| versions.contains_key(&path_to_uri(path)))
    }

    /// Whether the server published diagnostics for any document yet (a server that has not
    /// is still in its first analysis).
    pub(crate) fn has_published(&self) -> bool {
        self.shared.published.lock().is_ok_and(|published| !published.is_empty())
    }

    /// The generation of the document's last publish (0: none yet).
    pub(crate) fn generation(&self, path: &Path) -> u64 {
        let uri = path_to_uri(path);
        self.shared
            .published
            .lock()
            .ok()
            .and_then(|published| published.get(&uri).map(|p| p.generation))
            .unwrap_or(0)
    }

    /// Waits until the server publishes diagnostics for `path` after generation `after` (and
    /// for `version` or later, when the server says which version it analysed), or `deadline`
    /// (or the start bound, while the server has not answered `initialize`). `None` when
    /// nothing came in time, the server is gone or did not start.
    pub(crate) fn wait_published(
        &self,
        path: &Path,
        after: u64,
        version: i64,
        deadline: Instant,
    ) -> Option<Published> {
        let uri = path_to_uri(path);
        let mut published = self.shared.published.lock().ok()?;
        loop {
            if let Some(entry) = published.get(&uri)
                && entry.generation > after
                && entry.version.is_none_or(|analysed| analysed >= version)
            {
                return Some(entry.clone());
            }
            if self.is_dead() || self.start_failure().is_some() {
                return None;
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            let until = self.start_deadline().map_or(deadline, |start| start.min(deadline));
            let wait = until.saturating_duration_since(now).max(Duration::from_millis(1));
            published = self.shared.changed.wait_timeout(published, wait).ok()?.0;
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // A server that has not answered `initialize` is killed without the shutdown request
        // (it would only be held).
        if !self.is_dead() && self.is_ready() {
            let _ = self.request("shutdown", Value::Null, SHUTDOWN_WAIT);
            self.notify("exit", Value::Null);
        }
        // The queue's sender goes first (the writer's loop ends), then the child (a write
        // blocked on its full pipe fails, its output ends), then both threads are joined.
        if let Ok(mut outgoing) = self.shared.outgoing.lock() {
            outgoing.take();
        }
        drop(self.child.take());
        drop(self.reader.take());
        drop(self.writer.take());
    }
}

/// The writer thread: writes each queued message until the queue closes or the pipe breaks.
fn write_loop(mut stdin: ChildStdin, queue: &Receiver<Vec<u8>>) {
    for body in queue {
        if write_frame(&mut stdin, &body).is_err() {
            return;
        }
    }
}

/// The reader thread: routes responses to their callers, stores published diagnostics and
/// answers the server's requests, until the stream ends.
fn read_loop(shared: &Shared, mut reader: BufReader<std::process::ChildStdout>) {
    while let Ok(Some(body)) = read_frame(&mut reader) {
        let Ok(message) = serde_json::from_slice::<Value>(&body) else { continue };
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id");
        match (method, id) {
            (Some(method), Some(id)) => {
                let result = match method {
                    "workspace/configuration" => {
                        let items = message
                            .pointer("/params/items")
                            .and_then(Value::as_array)
                            .map_or(0, Vec::len);
                        Value::Array(vec![Value::Null; items])
                    }
                    _ => Value::Null,
                };
                let answer = json!({ "jsonrpc": "2.0", "id": id, "result": result });
                if let Ok(body) = serde_json::to_vec(&answer) {
                    shared.send_now(body);
                }
            }
            (Some("textDocument/publishDiagnostics"), None) => {
                let Some(params) = message.get("params") else { continue };
                let Some(uri) = params.get("uri").and_then(Value::as_str) else { continue };
                if let Ok(mut published) = shared.published.lock() {
                    let entry = published.entry(uri.to_owned()).or_default();
                    entry.generation += 1;
                    entry.version = params.get("version").and_then(Value::as_i64);
                    entry.diagnostics = params
                        .get("diagnostics")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                }
                shared.wake();
            }
            (Some(_), None) => {}
            (None, Some(id)) => {
                let Some(id) = id.as_i64() else { continue };
                let answer = match message.get("error") {
                    Some(error) => Err(error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("error")
                        .to_owned()),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                if id == INITIALIZE_ID {
                    shared.answered_initialize(answer);
                    continue;
                }
                if let Ok(mut responses) = shared.responses.lock() {
                    responses.insert(id, answer);
                }
                shared.wake();
            }
            (None, None) => {}
        }
    }
    shared.dead.store(true, Ordering::SeqCst);
    // Take both locks in turn so a waiter between its check and its wait sees the wake.
    drop(shared.responses.lock());
    drop(shared.published.lock());
    shared.wake();
}
