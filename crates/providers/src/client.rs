//! `HttpModelClient`: the kernel's `ModelClient` over real HTTP (ureq, rustls).
//!
//! Each request runs on a long-lived named worker thread (`provider-<id>`, see `workers`): send,
//! retry with backoff, read the SSE body, parse it into neutral events, send them into the
//! stream's channel. What the kernel never sees: retries (429/408/409/5xx/529 and connection
//! failures before the first event, exponential backoff with full jitter, `Retry-After`
//! honoured), the idle watchdog (one thread per client, see `watchdog`), and the socket. A step
//! spawns no thread.
//!
//! Invariants:
//! - Cancel closes the socket at once: dropping the `ResponseStream` runs an abort hook that
//!   shuts down the request's agent (its connections), which wakes a blocked read, and wakes a
//!   backoff sleep; the worker then sees its channel closed, ends the request and goes idle.
//! - A request is either finished by its worker or aborted by its stream, never both (one
//!   compare-and-swap on its state): only an aborted request's agent is shut down.
//! - An agent whose request was aborted is never reused; one whose request completed goes back
//!   to a small pool so the next step reuses the connection.
//! - The API key is read once, sent only in its header, and scrubbed from every error text.
//!
//! The fallback by behaviour: a streamed request that offers tools and fails before any content
//! reached the kernel, in a way a server that cannot stream tool calls fails (any error status
//! but 401/403/404/429, a stream that ends without its end, an error event; see
//! `Error::may_be_streaming`), is sent once more at once without streaming. If that works, the
//! model is remembered as unstreamed for tools: for the session, and in the client's
//! `ProviderMemory` when it has one, so the next session sends unstreamed from its first
//! request; a warning says so once. If it fails too, the streamed form goes on under the usual
//! retry policy (the unstreamed try is not counted as a retry) and its final error names both
//! failures. A failure after content reached the kernel is never a fallback: the kernel runs the
//! step again.

use std::collections::HashSet;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codecoder_kernel::{ModelClient, ModelError, ModelRequest, ResponseEvent, ResponseStream};
use codecoder_protocol::Usage;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::config::{ProviderConfig, WireApi};
use crate::error::{Error, Server, Unreachable, scrub};
use crate::memory::{ProviderMemory, ServerKey};
use crate::sse::SseDecoder;
use crate::watchdog::Watchdog;
use crate::workers::Workers;
use crate::{anthropic, chat, responses};
use codecoder_context::estimate_tokens;

/// Events buffered between the HTTP thread and the kernel.
const STREAM_CAPACITY: usize = 1024;
/// Idle agents kept for reuse.
const POOL_SIZE: usize = 4;
/// First backoff delay; doubles per attempt.
const BACKOFF_BASE: Duration = Duration::from_millis(500);
/// Longest backoff delay, and longest `Retry-After` honoured.
const BACKOFF_CAP: Duration = Duration::from_secs(60);
/// How much of an error body is read.
const ERROR_BODY_LIMIT: u64 = 64 * 1024;

/// A model provider reached over HTTP.
pub struct HttpModelClient {
    config: Arc<ProviderConfig>,
    /// Resolved once: every header to send, the key included.
    headers: Arc<Vec<(String, String)>>,
    api_key: Option<Arc<str>>,
    // Idle agents. A Mutex because stream() is called from any agent thread; it is held only
    // to push or pop, never across I/O or a channel operation.
    pool: Arc<Mutex<Vec<ureq::Agent>>>,
    /// The server as errors name it.
    server: Arc<Server>,
    /// What is remembered about servers across sessions, when the runtime gave a memory.
    memory: Option<Arc<dyn ProviderMemory>>,
    /// The models found unable to stream requests with tools in this session: their later
    /// requests with tools are sent without streaming. A Mutex because a request's worker
    /// adds to it while another thread starts a request; held only to look up or insert.
    unstreamed: Arc<Mutex<HashSet<String>>>,
    /// The ids of tool calls found in text, unique across the client's requests.
    text_call_ids: crate::text_calls::CallIds,
    // Dropped before `watchdog`: a worker's last read ends before the watchdog's thread stops.
    workers: Workers,
    watchdog: Arc<Watchdog>,
}

/// A request's state: running until its worker finishes it or its stream aborts it.
const RUNNING: u8 = 0;
const FINISHED: u8 = 1;
const ABORTED: u8 = 2;

impl std::fmt::Debug for HttpModelClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpModelClient").field("provider", &self.config.id).finish_non_exhaustive()
    }
}

impl HttpModelClient {
    /// A client for `config`, reading the key and header variables through `env`.
    pub fn new(
        config: ProviderConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, Error> {
        let (headers, api_key) = request_headers(&config, env)?;
        let workers = Workers::new(format!("provider-{}", config.id), POOL_SIZE);
        let watchdog = Arc::new(Watchdog::new(
            format!("provider-{}-idle", config.id),
            Duration::from_millis(config.stream_idle_timeout_ms),
        ));
        let server = Arc::new(Server {
            id: config.id.clone(),
            name: config.name.clone(),
            base_url: config.base_url.clone(),
        });
        Ok(Self {
            workers,
            watchdog,
            config: Arc::new(config),
            headers: Arc::new(headers),
            api_key: api_key.map(Arc::from),
            pool: Arc::new(Mutex::new(Vec::new())),
            server,
            memory: None,
            unstreamed: Arc::new(Mutex::new(HashSet::new())),
            text_call_ids: crate::text_calls::CallIds::new(fastrand::u32(..)),
        })
    }

    /// This client, remembering in `memory` which models cannot stream requests with tools and
    /// sending their requests with tools unstreamed from the first one.
    #[must_use]
    pub fn with_memory(mut self, memory: Arc<dyn ProviderMemory>) -> Self {
        self.memory = Some(memory);
        self
    }

    /// Whether requests with tools to `model` go unstreamed: learnt in this session, or
    /// remembered from an earlier one.
    fn unstreamed_tools(&self, model: &str) -> bool {
        if self.unstreamed.lock().is_ok_and(|models| models.contains(model)) {
            return true;
        }
        self.memory.as_ref().is_some_and(|memory| {
            memory.unstreamed_tools(&ServerKey {
                provider: &self.config.id,
                base_url: &self.config.base_url,
                model,
            })
        })
    }

    /// The provider's configuration.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    fn take_agent(&self) -> ureq::Agent {
        let pooled = self.pool.lock().ok().and_then(|mut pool| pool.pop());
        pooled.unwrap_or_else(new_agent)
    }
}

/// Header names (lowercase) and values, in sending order.
pub(crate) type Headers = Vec<(String, String)>;

/// Every header a request to the provider `config` describes carries (the key's included, read
/// through `env`), and the key itself; shared by the model requests and the discovery of what the
/// server serves.
pub(crate) fn request_headers(
    config: &ProviderConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Headers, Option<String>), Error> {
    let api_key = match &config.env_key {
        Some(env_key) => {
            match env(env_key).map(|k| k.trim().to_owned()).filter(|k| !k.is_empty()) {
                Some(key) => Some(key),
                None => {
                    return Err(Error::MissingApiKey {
                        provider: config.id.clone(),
                        env_key: env_key.clone(),
                    });
                }
            }
        }
        None => None,
    };
    let mut headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        ("user-agent".to_owned(), format!("codecoder/{}", env!("CARGO_PKG_VERSION"))),
    ];
    match (config.wire_api, &api_key) {
        (WireApi::Anthropic, key) => {
            headers.push(("anthropic-version".to_owned(), anthropic::API_VERSION.to_owned()));
            if let Some(key) = key {
                headers.push(("x-api-key".to_owned(), key.clone()));
            }
        }
        (WireApi::Responses | WireApi::Chat, Some(key)) => {
            headers.push(("authorization".to_owned(), format!("Bearer {key}")));
        }
        (WireApi::Responses | WireApi::Chat, None) => {}
    }
    for (name, value) in &config.http_headers {
        headers.push((name.to_ascii_lowercase(), value.clone()));
    }
    for (name, var) in &config.env_http_headers {
        if let Some(value) = env(var).filter(|v| !v.is_empty()) {
            headers.push((name.to_ascii_lowercase(), value));
        }
    }
    Ok((headers, api_key))
}

fn new_agent() -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(30)))
        .max_idle_connections_per_host(2)
        .build();
    ureq::Agent::new_with_config(config)
}

/// The exact bytes `HttpModelClient` sends as the body of `request` to the provider `config`
/// describes (its wire API and body settings). The client sends what this returns, so a request
/// rebuilt from a session log encodes to the body that was sent. Each API's typed body borrows
/// from the request and is written straight to bytes.
///
/// With `stream = false` the body asks for one whole JSON answer (`"stream": false`, and no
/// Chat `stream_options`).
pub fn encode_request(config: &ProviderConfig, request: &ModelRequest) -> Result<Vec<u8>, Error> {
    let stream = config.stream;
    let encoded = match config.wire_api {
        WireApi::Responses => {
            let mut body = responses::request_body(request);
            body.stream = stream;
            serde_json::to_vec(&body)
        }
        WireApi::Chat => {
            let mut body = chat::request_body(request, config.send_reasoning_content);
            if !stream {
                body.stream = false;
                body.stream_options = None;
            }
            serde_json::to_vec(&body)
        }
        WireApi::Anthropic => {
            let mut body = anthropic::request_body(request);
            body.stream = stream;
            serde_json::to_vec(&body)
        }
    };
    encoded
        .map_err(|err| Error::Protocol { message: format!("could not encode the request: {err}") })
}

impl ModelClient for HttpModelClient {
    fn stream(&self, request: ModelRequest) -> Result<ResponseStream, ModelError> {
        let offers_tools = !request.tools.is_empty();
        let config = if offers_tools && self.config.stream && self.unstreamed_tools(&request.model)
        {
            Arc::new(ProviderConfig { stream: false, ..(*self.config).clone() })
        } else {
            Arc::clone(&self.config)
        };
        let body =
            encode_request(&config, &request).map_err(|err| ModelError::new(err.to_string()))?;
        let model = request.model.clone();
        let text_calls = crate::text_calls::for_request(&config, &request);
        // Kept only where a failed stream may be sent again without streaming.
        let fallback = (config.stream && offers_tools).then_some(request);
        let agent = self.take_agent();
        let state = Arc::new(AtomicU8::new(RUNNING));
        // Dropped by the abort hook: wakes a backoff sleep at once.
        let (wake_tx, wake_rx) = crossbeam_channel::bounded::<()>(0);
        let (tx, rx) = crossbeam_channel::bounded(STREAM_CAPACITY);
        let mut job = Job {
            text_calls,
            text_call_ids: self.text_call_ids.clone(),
            config,
            fallback,
            streamed: None,
            model,
            server: Arc::clone(&self.server),
            memory: self.memory.clone(),
            unstreamed: Arc::clone(&self.unstreamed),
            headers: Arc::clone(&self.headers),
            api_key: self.api_key.clone(),
            agent: agent.clone(),
            body,
            state: Arc::clone(&state),
            wake: wake_rx,
            watchdog: Arc::clone(&self.watchdog),
            agent_dead: AtomicBool::new(false),
        };
        let pool = Arc::clone(&self.pool);
        self.workers
            .run(Box::new(move || {
                let reusable = job.run(&tx);
                drop(tx);
                let finished = job
                    .state
                    .compare_exchange(RUNNING, FINISHED, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok();
                if finished
                    && reusable
                    && !job.agent_dead.load(Ordering::SeqCst)
                    && let Ok(mut pool) = pool.lock()
                    && pool.len() < POOL_SIZE
                {
                    pool.push(job.agent.clone());
                }
            }))
            .map_err(|err| {
                ModelError::new(format!("could not start the provider thread: {err}"))
            })?;
        Ok(ResponseStream::new(rx).with_abort(move || {
            if state.compare_exchange(RUNNING, ABORTED, Ordering::SeqCst, Ordering::SeqCst).is_ok()
            {
                agent.shutdown();
            }
            drop(wake_tx);
        }))
    }
}

/// One request, with its retries.
struct Job {
    /// The fresh state of tool calls written as text, when the provider asks for their parsing;
    /// each attempt starts from a copy.
    text_calls: Option<crate::text_calls::TextCalls>,
    text_call_ids: crate::text_calls::CallIds,
    config: Arc<ProviderConfig>,
    /// The request, while a failed stream may still be sent again without streaming.
    fallback: Option<ModelRequest>,
    /// While the unstreamed try runs: the streamed form and how it failed.
    streamed: Option<Streamed>,
    /// The model asked for.
    model: String,
    server: Arc<Server>,
    memory: Option<Arc<dyn ProviderMemory>>,
    unstreamed: Arc<Mutex<HashSet<String>>>,
    headers: Arc<Vec<(String, String)>>,
    api_key: Option<Arc<str>>,
    agent: ureq::Agent,
    body: Vec<u8>,
    /// `RUNNING`, `FINISHED` or `ABORTED`.
    state: Arc<AtomicU8>,
    wake: Receiver<()>,
    watchdog: Arc<Watchdog>,
    /// The watchdog shut the agent down: it is not reused.
    agent_dead: AtomicBool,
}

/// A streamed request set aside while it is tried unstreamed.
struct Streamed {
    config: Arc<ProviderConfig>,
    body: Vec<u8>,
    /// How the streamed attempt failed.
    error: Error,
    retry_after: Option<Duration>,
}

/// How one attempt ended.
enum Attempt {
    /// The response completed; the connection can be reused.
    Done,
    /// Failed; `emitted` says whether events already reached the kernel.
    Failed { error: Error, emitted: bool, retry_after: Option<Duration> },
    /// The kernel went away (cancel).
    Gone,
}

impl Job {
    fn aborted(&self) -> bool {
        self.state.load(Ordering::SeqCst) == ABORTED
    }

    /// Runs the request to its end. Returns whether the agent may be reused.
    fn run(&mut self, tx: &Sender<ResponseEvent>) -> bool {
        let mut attempt = 0u32;
        // How the unstreamed try failed, once it did.
        let mut unstreamed_failure: Option<Error> = None;
        loop {
            match self.attempt(tx) {
                Attempt::Done => return true,
                Attempt::Gone => return false,
                Attempt::Failed { error, emitted, retry_after } => {
                    if self.aborted() {
                        return false;
                    }
                    let error = error.classify(&self.server, &self.model);
                    let (error, emitted, retry_after) = match self.streamed.take() {
                        // The unstreamed try says what is wrong with the request (llama-cpp-
                        // python ends a stream early on an overflow, and answers it with a 400
                        // unstreamed): that is the error, and no form of it is tried again.
                        Some(_) if error.is_definitive() => (error, false, None),
                        // The unstreamed try failed too: the streamed form goes on under the
                        // usual policy, from its own failure.
                        Some(streamed) => {
                            unstreamed_failure = Some(error);
                            self.config = streamed.config;
                            self.body = streamed.body;
                            (streamed.error, false, streamed.retry_after)
                        }
                        None => (error, emitted, retry_after),
                    };
                    if unstreamed_failure.is_none()
                        && !emitted
                        && error.may_be_streaming()
                        && let Some((config, body)) = self.unstream()
                    {
                        self.streamed = Some(Streamed { config, body, error, retry_after });
                        continue;
                    }
                    let retry = !emitted
                        && error.is_retryable()
                        && attempt < self.config.request_max_retries;
                    if !retry {
                        let error = match unstreamed_failure.take() {
                            Some(unstreamed) => Error::UnstreamedAlsoFailed {
                                streamed: Box::new(error),
                                unstreamed: Box::new(unstreamed),
                            },
                            None => error,
                        };
                        let message = scrub(&error.to_string(), self.api_key.as_deref());
                        // After events reached the kernel the adapter cannot retry without the
                        // person seeing text twice; the kernel re-runs the step instead.
                        // An overflow makes the kernel compact and send the step again.
                        let error = if error.is_context_overflow() {
                            ModelError::context_overflow(message)
                        } else if emitted && error.is_retryable() {
                            ModelError::retryable(message)
                        } else {
                            ModelError::new(message)
                        };
                        let _ = tx.send(ResponseEvent::Error(error));
                        return false;
                    }
                    let delay = retry_after.unwrap_or_else(|| backoff(attempt)).min(BACKOFF_CAP);
                    attempt += 1;
                    match self.wake.recv_timeout(delay) {
                        Err(RecvTimeoutError::Timeout) => {}
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => return false,
                    }
                }
            }
        }
    }

    /// Switches this request to a non-streaming body, once; returns the streamed config and
    /// body it replaced, or `None` when it cannot be switched.
    fn unstream(&mut self) -> Option<(Arc<ProviderConfig>, Vec<u8>)> {
        let request = self.fallback.take()?;
        let config = ProviderConfig { stream: false, ..(*self.config).clone() };
        let body = encode_request(&config, &request).ok()?;
        // A fresh connection: a server whose stream failed may close the kept-alive one.
        self.agent = new_agent();
        let body = std::mem::replace(&mut self.body, body);
        Some((std::mem::replace(&mut self.config, Arc::new(config)), body))
    }

    /// The unstreamed try of a failed stream worked: the model is remembered as unstreamed for
    /// tools (session, memory), and a warning says so once per session. Returns false when the
    /// kernel went away.
    fn remember_unstreamed(&self, tx: &Sender<ResponseEvent>) -> bool {
        let Some(streamed) = &self.streamed else {
            return true;
        };
        let new = self.unstreamed.lock().is_ok_and(|mut models| models.insert(self.model.clone()));
        if !new {
            return true;
        }
        let key = ServerKey {
            provider: &self.server.id,
            base_url: &self.server.base_url,
            model: &self.model,
        };
        let remembered = match &self.memory {
            Some(memory) => match memory.remember_unstreamed_tools(&key) {
                Ok(()) => format!(
                    "from now on (remembered in {}; delete its entry there to try streaming again)",
                    memory.location()
                ),
                Err(err) => format!(
                    "for this session only (could not remember it in {}: {err})",
                    memory.location()
                ),
            },
            None => "for the rest of the session".to_owned(),
        };
        let failure = scrub(&streamed.error.to_string(), self.api_key.as_deref());
        let Server { id, name, base_url } = self.server.as_ref();
        let warning = format!(
            "{name} ({base_url}) cannot stream tool calls for model `{}`: a streamed request with tools failed before any answer ({failure}) and worked without streaming; requests with tools go unstreamed {remembered}; set stream = false in [model_providers.{id}] to skip streaming from the start",
            self.model
        );
        tx.send(ResponseEvent::Warning(warning)).is_ok()
    }

    fn attempt(&self, tx: &Sender<ResponseEvent>) -> Attempt {
        let url = self.config.endpoint();
        let mut builder = self.agent.post(&url);
        for (name, value) in self.headers.iter() {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let accept = if self.config.stream { "text/event-stream" } else { "application/json" };
        builder = builder.header("accept", accept);
        let response = match builder.send(&self.body[..]) {
            Ok(response) => response,
            Err(err) => {
                let unreachable = match &err {
                    ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                        Some(Unreachable::Refused)
                    }
                    ureq::Error::HostNotFound | ureq::Error::Timeout(ureq::Timeout::Resolve) => {
                        Some(Unreachable::HostNotFound)
                    }
                    ureq::Error::Timeout(ureq::Timeout::Connect) => Some(Unreachable::Timeout),
                    _ => None,
                };
                let error = match unreachable {
                    Some(reason) => {
                        Error::Unreachable { server: Box::new((*self.server).clone()), reason }
                    }
                    None => Error::Connection {
                        message: scrub(&err.to_string(), self.api_key.as_deref()),
                    },
                };
                return Attempt::Failed { error, emitted: false, retry_after: None };
            }
        };
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let retry_after = retry_after(response.headers());
            let request_id = header(response.headers(), "x-request-id")
                .or_else(|| header(response.headers(), "request-id"));
            let mut text = String::new();
            let _ =
                response.into_body().into_reader().take(ERROR_BODY_LIMIT).read_to_string(&mut text);
            let (error_type, message) = error_body(&text);
            return Attempt::Failed {
                error: Error::Http {
                    status,
                    error_type,
                    message: scrub(&message, self.api_key.as_deref()),
                    request_id,
                    env_key: self.config.env_key.clone(),
                    url: scrub(&url, self.api_key.as_deref()).into(),
                },
                emitted: false,
                retry_after,
            };
        }
        self.read_stream(response.into_body().into_reader(), tx)
    }

    fn read_stream(&self, mut reader: impl Read, tx: &Sender<ResponseEvent>) -> Attempt {
        let Some(watch) = self.watchdog.watch(self.agent.clone()) else {
            return Attempt::Failed {
                error: Error::Connection {
                    message: "could not start the provider's idle watchdog".to_owned(),
                },
                emitted: false,
                retry_after: None,
            };
        };
        let mut parser = crate::wire::parser(self.config.wire_api);
        let mut decoder = SseDecoder::new();
        // A non-streaming answer is one JSON document, parsed once it is whole.
        let mut whole: Option<Vec<u8>> = (!self.config.stream).then(Vec::new);
        let mut emitter = Emitter {
            tx,
            body: &self.body,
            emitted: false,
            gone: false,
            saw_usage: false,
            output: String::new(),
            text_calls: self
                .text_calls
                .clone()
                .map(|machine| crate::text_calls::Filter::new(machine, self.text_call_ids.clone())),
        };
        let mut buf = vec![0u8; 16 * 1024];
        let result: Result<bool, Error> = loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => match &whole {
                    Some(bytes) => {
                        let text = String::from_utf8_lossy(bytes);
                        let api = self.config.wire_api;
                        // Parsed whole before any event goes out, so that the warning of a
                        // fallback that worked comes before the answer.
                        let mut events = Vec::new();
                        if let Err(err) = crate::whole::parse(api, &text, &mut |e| events.push(e)) {
                            break Err(err);
                        }
                        if !self.remember_unstreamed(tx) {
                            break Ok(false);
                        }
                        for event in events {
                            emitter.emit(event);
                        }
                        break Ok(!emitter.gone);
                    }
                    None => break parser.on_eof(&mut |event| emitter.emit(event)).map(|()| true),
                },
                Ok(n) => n,
                Err(err) => break Err(Error::Connection { message: err.to_string() }),
            };
            watch.watch().progress();
            if let Some(bytes) = &mut whole {
                bytes.extend_from_slice(&buf[..n]);
                continue;
            }
            let mut complete = false;
            let pushed = decoder.push(&buf[..n], &mut |event| {
                if !complete {
                    complete = parser.on_event(event, &mut |event| emitter.emit(event))?;
                }
                Ok(())
            });
            if emitter.gone {
                break Ok(false);
            }
            if let Err(err) = pushed {
                break Err(err);
            }
            if complete {
                break Ok(true);
            }
        };
        let (emitted, gone) = (emitter.emitted, emitter.gone);
        let timed_out = watch.watch().timed_out();
        drop(watch);
        if timed_out {
            self.agent_dead.store(true, Ordering::SeqCst);
        }
        if gone || self.aborted() {
            return Attempt::Gone;
        }
        match result {
            Ok(true) => Attempt::Done,
            Ok(false) => Attempt::Gone,
            Err(_) if timed_out => Attempt::Failed {
                error: Error::IdleTimeout { timeout_ms: self.config.stream_idle_timeout_ms },
                emitted,
                retry_after: None,
            },
            Err(error) => Attempt::Failed { error, emitted, retry_after: None },
        }
    }
}

/// Sends parsed events to the kernel, and fills in estimated usage when the provider sent none.
struct Emitter<'a> {
    tx: &'a Sender<ResponseEvent>,
    body: &'a [u8],
    emitted: bool,
    gone: bool,
    saw_usage: bool,
    /// Generated text, kept only to estimate usage the provider did not report.
    output: String,
    /// Turns tool calls written as text into calls before the events go on.
    text_calls: Option<crate::text_calls::Filter>,
}

impl Emitter<'_> {
    fn emit(&mut self, event: ResponseEvent) {
        if let Some(mut filter) = self.text_calls.take() {
            filter.on_event(event, &mut |event| self.emit(event));
            self.text_calls = Some(filter);
            return;
        }
        match &event {
            ResponseEvent::Usage(_) => self.saw_usage = true,
            ResponseEvent::TextDelta(text)
            | ResponseEvent::ReasoningDelta(text)
            | ResponseEvent::ToolCallArgsDelta { delta: text, .. }
                if !self.saw_usage =>
            {
                self.output.push_str(text);
            }
            ResponseEvent::Completed { .. } if !self.saw_usage => {
                let usage = Usage {
                    input_tokens: estimate_tokens(&String::from_utf8_lossy(self.body)),
                    output_tokens: estimate_tokens(&self.output),
                    ..Usage::default()
                };
                self.send(ResponseEvent::UsageEstimate(usage));
            }
            _ => {}
        }
        self.send(event);
    }

    fn send(&mut self, event: ResponseEvent) {
        self.emitted = true;
        self.gone |= self.tx.send(event).is_err();
    }
}

/// Exponential backoff with full jitter: a random delay in `[0, base · 2^attempt]`, capped.
fn backoff(attempt: u32) -> Duration {
    let ceiling = BACKOFF_BASE.saturating_mul(2u32.saturating_pow(attempt)).min(BACKOFF_CAP);
    let millis = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
    Duration::from_millis(fastrand::u64(0..=millis))
}

fn header(headers: &ureq::http::HeaderMap, name: &str) -> Option<String> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
}

/// `Retry-After` (seconds) or `retry-after-ms`.
fn retry_after(headers: &ureq::http::HeaderMap) -> Option<Duration> {
    if let Some(ms) = header(headers, "retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return Some(Duration::from_secs_f64((ms / 1000.0).clamp(0.0, BACKOFF_CAP.as_secs_f64())));
    }
    let secs = header(headers, "retry-after")?.trim().parse::<f64>().ok()?;
    Some(Duration::from_secs_f64(secs.clamp(0.0, BACKOFF_CAP.as_secs_f64())))
}

/// The provider's error type and message from an error body (`{"error": {"type", "message"}}`
/// in OpenAI's and Anthropic's shapes), or the body's text.
fn error_body(text: &str) -> (Option<String>, String) {
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
        let error = value.get("error").unwrap_or(&value);
        if let Some(message) = error.get("message").and_then(serde_json::Value::as_str) {
            let error_type = error
                .get("type")
                .or_else(|| error.get("code"))
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned);
            return (error_type, message.to_owned());
        }
        if let Some(message) = error.as_str() {
            return (None, message.to_owned());
        }
    }
    let text = text.trim();
    let cut: String = text.chars().take(500).collect();
    (None, cut)
}
