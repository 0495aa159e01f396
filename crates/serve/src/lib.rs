//! `codecoder serve`: one local HTTP server hosting many sessions, for the browser and for
//! programs. A thin front-end: the runtime (`codecoder_app`) assembles each session, the
//! kernel runs it; this crate checks requests, routes them and streams the agent's events.
//!
//! # Security
//!
//! Every request passes `guard.rs` first: its `Host` must be one this server answers to
//! (`127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT`, plus `--allow-host` names), which stops DNS
//! rebinding; an `Origin` on a state-changing request or a WebSocket upgrade must be the
//! server's own; it must carry the per-run token (`Authorization: Bearer T`) or the session
//! cookie a browser gets for `GET /?token=T` (`HttpOnly; SameSite=Strict`, then a redirect to
//! `/` so the address bar drops the token); a mutation's body must be
//! `Content-Type: application/json`. Every answer carries a strict CSP (`connect-src 'self'`),
//! `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer` and
//! `X-Frame-Options: DENY`. Each request is one line in `$CODECODER_HOME/logs/serve-access.log`
//! (time, peer, method, path with any token redacted, status). A non-loopback address is
//! refused unless auth was asked for explicitly (`Config::auth_explicit`).
//!
//! # API
//!
//! Every shape below is a type of `types.rs`; `GET /api/schema` serves the JSON Schema
//! generated from them (checked in as `api-schema.json`, kept current by a unit test).
//!
//! - `GET /api/schema`: that schema, with a table of the routes and their bodies and answers.
//! - `GET /api/server`: `{cwd, version}`, `cwd` being the project a new session opens on.
//! - `GET /api/projects`: `{"projects": [{cwd, sessions, updatedMs}]}`, the server's own
//!   directory first (even with no session), then the index's directories, newest first.
//! - `GET /api/sessions/{id}`: `{id, cwd, title, live, model, provider, contextWindow,
//!   permissionMode, approval, sandbox}`: a hosted session's facts as the runtime started it
//!   (the last four `null` for one that is not hosted).
//! - `POST /api/sessions/{id}/close {}`: stops hosting it (agent shut down, log unlocked).
//! - `POST /api/sessions/{id}/undo {force?}`, `.../rewind {turns, force?}`: as the TUI's
//!   `/undo` and `/rewind N`: the files (and, for a rewind, the conversation) back to before
//!   the newest turn or the `turns`th newest prompt; answers the `rewind` record; 409 while a
//!   turn runs, when nothing is left, or with `conflicts` (files changed outside codecoder).
//! - `POST /api/sessions/{id}/mode {permissionMode}`: `default`, `acceptEdits` or `plan`.
//! - `GET /api/sessions/{id}/files?q=TEXT`: at most 50 paths for `@file` completion.
//! - `GET /api/sessions/{id}/commands`: the slash commands a prompt may start with: the
//!   server's own (`undo`, `rewind`, `compact`, `plan`), skills, custom prompts. A prompt
//!   `/name ARGS` runs a built-in here, activates a skill as `$name ARGS` does, or is expanded
//!   by the runtime as a custom prompt; an unknown name is 400.
//! - `GET /api/sessions?q=TEXT&cwd=DIR`: `{"sessions": [Summary]}`, newest first, from the
//!   session index; subagents' logs are not listed. `Summary` is `{id, title, cwd, model,
//!   provider, createdMs, updatedMs, parent, live}` (`live`: hosted by this server now).
//! - `POST /api/sessions {cwd?, prompt?, resume?, fork?, model?, effort?, permissionMode?}`:
//!   starts a session in `cwd` (an existing directory; default the server's `-C`), or
//!   continues (`resume`) or copies (`fork`) the indexed session of that id in its own
//!   project, with the sandbox and approval policy of the server's command line and config, as
//!   the TUI's would be (the model, reasoning effort and permission mode a request picks apply
//!   to that session only and relax neither); `201 {id, cwd}`. A log another process holds is
//!   refused (409), as is resuming one hosted here already.
//! - `POST /api/sessions/{id}/prompt {text}`: a turn with this input (queued when one runs).
//! - `POST /api/sessions/{id}/steer {text}`: input added to the running turn at its next step
//!   (a turn of its own when none runs).
//! - `POST /api/sessions/{id}/cancel {}`: cancels the running turn.
//! - `GET /api/sessions/{id}/events?after=N`: every `Event` with `seq` above `N` (or the
//!   `Last-Event-ID` header), then each new one as it comes, until the session stops: as
//!   server-sent events (`id: SEQ`, `data: Event`), or, when the request upgrades to a
//!   WebSocket, one text frame per `Event` (pings keep it alive; a close frame ends it).
//! - `GET /api/sessions/{id}/history`: `{id, cwd, events}`, any indexed session's history
//!   replayed from its log by the runtime: each `{seq, event}` (the same `AgentEvent` shape as
//!   the live stream), `{seq, user}` (the person's input) or `{seq, approval: {callId,
//!   decision, decidedBy, permissionKeys}}`, `seq` being the log record's.
//! - `GET /api/sessions/{id}/pending`: `{"approvals": [Event], "questions": [Event]}`, the
//!   approval requests and the model's questions (`ask_user`) no client has answered yet.
//! - `POST /api/approvals/{requestId} {decision}`: answers one; `decision` is
//!   `"allow_once"`, `"allow_for_session"`, `"deny"` or `{"type": "deny_with_feedback",
//!   "feedback": TEXT}`. The first answer wins: a later one gets 409.
//! - `POST /api/questions/{requestId} {text}` or `{decline: true}`: answers a question; the
//!   first answer wins, as for approvals.
//!
//! `Event` is `{seq, sessionId, event}`: `seq` counts the session's events from 1 (a reader
//! resumes with `after=` the last it saw and misses nothing); `event` is the runtime's
//! `AgentEvent` as it serializes: `{source: {sessionId, subagentPath?}, kind: {type, …}}` with
//! `type` one of `turn_started`, `step_started`, `text_delta`, `reasoning_delta`,
//! `tool_started` / `call_progress` / `tool_finished` (each with the call's `view`, the
//! `CallView` its tool wrote: kind, title, paths, changes with diffs, command), `agent_message`,
//! `tool_output_delta`, `approval_request` (`id`, `view`, `summary`, `permissionKeys`,
//! `reason`), `ask_user`, `usage`, `warning`, `turn_done`, and the rest of `AgentEventKind`.
//! A client renders a call from its view, never from the tool's name. When a client answers,
//! every reader gets `{seq, sessionId, approvalResolved: {id, decision}}` (or
//! `questionResolved: {id, answer}`) in the same stream, before the call goes on. A plan
//! review (plan mode's `exit_plan_mode`) is an `ask_user` whose options are `Approve` and
//! `Keep planning`, answered at `/api/questions/{id}`. A session keeps its newest
//! `Config::max_events` items; a reader whose cursor is older first gets `{seq, sessionId,
//! gap: {from, to}}` (reload `/history`), then the stream from `to + 1`.
//!
//! Invariants: one request per connection (`Connection: close`), each on a named thread of its
//! own that the server joins; the discovery file (`serve.json`, mode 0600) exists exactly while
//! the server that wrote it runs, and a server started while another live one owns it leaves
//! it alone (a stale one, whose process is gone or whose address answers no more, is
//! replaced); stopping the server stops every hosted session (their commands are killed,
//! their logs closed) before `serve` returns; a unix socket's directory is private (made
//! 0700 when missing, refused when others may write to it).

mod api;
mod error;
mod guard;
mod http;
mod hub;
mod types;

#[cfg(test)]
mod tests;

use std::io::{BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use codecoder_app::Overrides;
use codecoder_stdx::{Clock, JoinOnDrop, SystemClock, format_utc_ms, spawn_named};
use fs_err::os::unix::fs::OpenOptionsExt;

pub use error::{Error, Result};
pub use hub::MAX_KEPT_EVENTS;

use crate::guard::{Access, Guard};
use crate::http::{ReadError, Response};
use crate::hub::Hub;

/// The discovery file's name in `$CODECODER_HOME`.
pub const DISCOVERY_FILE: &str = "serve.json";
/// The access log's path under `$CODECODER_HOME`.
pub const ACCESS_LOG: &str = "logs/serve-access.log";
/// How long one read of a request's body may wait.
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a connection has to send its whole request head; past it the connection is closed.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once (each holds a thread). When that many are open, a new one closes
/// the oldest that has not sent its request head yet, so idle connections cannot starve a real
/// request; when none is idle it is answered 503 at once.
const MAX_CONNECTIONS: usize = 256;

/// How the server is to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// `--listen`: `HOST:PORT` (port 0: a free one; `localhost` is `127.0.0.1`) or `unix:PATH`.
    pub listen: String,
    /// `--auth token` was given: the only way a non-loopback address is accepted.
    pub auth_explicit: bool,
    /// `--allow-host NAME`: more `Host` names accepted (with the port, or without for any).
    pub allowed_hosts: Vec<String>,
    /// The command line's overrides, which every session starts from.
    pub overrides: Overrides,
    /// `$CODECODER_HOME`: the discovery file, the access log, the sessions.
    pub home: PathBuf,
    /// The project a new session opens on when a request names none (`-C`).
    pub default_cwd: PathBuf,
    /// Events kept in memory per hosted session (the newest; `MAX_KEPT_EVENTS` unless a test
    /// asks for fewer). A reader further behind is told of the gap and reloads the history.
    pub max_events: usize,
}

/// Where the server listens.
enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

/// A bound server, not yet serving.
pub struct Server {
    listener: Listener,
    shared: Arc<Shared>,
    url: String,
    token: String,
    listen: String,
    /// The TCP address to connect to to wake the accept loop (`None` for a unix socket).
    wake: Wake,
    /// The `Host` values requests may carry.
    hosts: Vec<String>,
    /// The live server whose discovery file this one left alone, if any.
    other: Option<OtherServer>,
    /// Declared last: the file goes once everything else has stopped.
    discovery: Discovery,
}

/// Another running server that owns the discovery file of this home: this one neither
/// overwrites nor removes it, so local clients keep finding the server that was there first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherServer {
    /// Its address, without the token (`http://127.0.0.1:PORT/`).
    pub url: String,
    /// Its process id.
    pub pid: u32,
}

/// The discovery file and the token it holds, removed when dropped (the server stopped, or
/// never served) when this server wrote it and no other server has written its own since.
struct Discovery {
    path: PathBuf,
    token: String,
    /// Whether this server wrote the file (false while another live server owns it).
    owned: bool,
}

impl Drop for Discovery {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        let ours = fs_err::read_to_string(&self.path).is_ok_and(|text| text.contains(&self.token));
        if ours {
            let _ = fs_err::remove_file(&self.path);
        }
    }
}

/// The live server a discovery file names, or `None` when the file is missing, unreadable or
/// stale: its process is gone, or nothing answers at its address any more (its pid reused).
fn live_owner(path: &Path) -> Option<OtherServer> {
    let text = fs_err::read_to_string(path).ok()?;
    let written: serde_json::Value = serde_json::from_str(&text).ok()?;
    let pid = u32::try_from(written.get("pid")?.as_u64()?).ok()?;
    if pid == std::process::id() {
        return None;
    }
    // Where /proc exists, a missing entry is a dead process; elsewhere the address decides.
    if Path::new("/proc/self").exists() && !Path::new(&format!("/proc/{pid}")).exists() {
        return None;
    }
    let listen = written.get("listen")?.as_str()?;
    let answers = if let Some(socket) = listen.strip_prefix("unix:") {
        UnixStream::connect(socket).is_ok()
    } else {
        let mut addr: SocketAddr = listen.parse().ok()?;
        if addr.ip().is_unspecified() {
            addr.set_ip(loopback_like(addr.ip()));
        }
        TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok()
    };
    if !answers {
        return None;
    }
    let url = written.get("url")?.as_str()?;
    let url = url.split_once("?token=").map_or(url, |(address, _)| address).to_owned();
    Some(OtherServer { url, pid })
}

/// The loopback address of `ip`'s family.
fn loopback_like(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => IpAddr::from([127, 0, 0, 1]),
        IpAddr::V6(_) => IpAddr::from([0, 0, 0, 0, 0, 0, 0, 1]),
    }
}

/// What every connection thread reads.
struct Shared {
    guard: Guard,
    hub: Hub,
    home: PathBuf,
    default_cwd: PathBuf,
    access_log: Mutex<fs_err::File>,
    stop: AtomicBool,
}

#[derive(Debug, Clone)]
enum Wake {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// Stops a running server from another thread (a signal handler's).
#[derive(Clone)]
pub struct Stopper {
    shared: Arc<Shared>,
    wake: Wake,
}

impl Stopper {
    /// Makes `serve` return: no new connection is taken, hosted sessions are stopped.
    pub fn stop(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // The accept loop blocks in accept(): a connection of our own wakes it.
        match &self.wake {
            Wake::Tcp(addr) => drop(TcpStream::connect(addr)),
            Wake::Unix(path) => drop(UnixStream::connect(path)),
        }
    }
}

impl Server {
    /// Binds the address and writes the discovery file.
    ///
    /// # Errors
    /// A bad or unprotected address, a taken port, an unwritable home, no randomness.
    pub fn bind(config: Config) -> Result<Self> {
        let token =
            guard::fresh_secret().map_err(|err| Error::Random { message: err.to_string() })?;
        let cookie =
            guard::fresh_secret().map_err(|err| Error::Random { message: err.to_string() })?;
        let (listener, port, hosts, url, listen, wake) = if let Some(path) =
            config.listen.strip_prefix("unix:")
        {
            let path = PathBuf::from(path);
            private_socket_dir(&path)?;
            // A socket left by a server that died is replaced; a live one is refused.
            let stale = fs_err::symlink_metadata(&path)
                .is_ok_and(|meta| std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()))
                && UnixStream::connect(&path).is_err();
            if stale {
                fs_err::remove_file(&path)?;
            }
            let listener = UnixListener::bind(&path)
                .map_err(|source| Error::Bind { addr: config.listen.clone(), source })?;
            fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
            let hosts = vec!["localhost".to_owned()];
            let url = format!("http://localhost/?token={token}");
            (
                Listener::Unix(listener, path.clone()),
                0,
                hosts,
                url,
                config.listen.clone(),
                Wake::Unix(path),
            )
        } else {
            let bad = || Error::BadListen { value: config.listen.clone() };
            let addr: SocketAddr = match config.listen.strip_prefix("localhost:") {
                Some(port) => {
                    SocketAddr::from(([127, 0, 0, 1], port.parse::<u16>().map_err(|_| bad())?))
                }
                None => config.listen.parse().map_err(|_| bad())?,
            };
            if !addr.ip().is_loopback() && !config.auth_explicit {
                return Err(Error::Unprotected { addr: addr.to_string() });
            }
            let listener = TcpListener::bind(addr)
                .map_err(|source| Error::Bind { addr: addr.to_string(), source })?;
            let local = listener.local_addr()?;
            let port = local.port();
            let mut hosts = vec![
                format!("127.0.0.1:{port}"),
                format!("localhost:{port}"),
                format!("[::1]:{port}"),
            ];
            if !local.ip().is_loopback() && !local.ip().is_unspecified() {
                hosts.push(host_port(local.ip(), port));
            }
            let url = format!("http://{}/?token={token}", host_port(local.ip(), port))
                .replace("http://0.0.0.0:", "http://127.0.0.1:")
                .replace("http://[::]:", "http://[::1]:");
            let wake_ip =
                if local.ip().is_unspecified() { loopback_like(local.ip()) } else { local.ip() };
            let listen = local.to_string();
            (
                Listener::Tcp(listener),
                port,
                hosts,
                url,
                listen,
                Wake::Tcp(SocketAddr::new(wake_ip, port)),
            )
        };
        let mut hosts = hosts;
        for name in &config.allowed_hosts {
            hosts.push(if name.contains(':') || port == 0 {
                name.clone()
            } else {
                format!("{name}:{port}")
            });
        }
        let logs = config.home.join("logs");
        fs_err::create_dir_all(&logs)?;
        let access_log = fs_err::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(config.home.join(ACCESS_LOG))?;
        let path = config.home.join(DISCOVERY_FILE);
        let other = live_owner(&path);
        let discovery = Discovery { path, token: token.clone(), owned: other.is_none() };
        let server = Self {
            listener,
            shared: Arc::new(Shared {
                guard: Guard::new(token.clone(), cookie, port, hosts.clone()),
                hub: Hub::new(config.overrides, config.max_events),
                home: config.home,
                default_cwd: config.default_cwd,
                access_log: Mutex::new(access_log),
                stop: AtomicBool::new(false),
            }),
            url,
            token,
            listen,
            wake,
            hosts,
            other,
            discovery,
        };
        if server.discovery.owned {
            server.write_discovery()?;
        }
        Ok(server)
    }

    /// The URL to open, with the token.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The per-run token.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// What the server listens on (`127.0.0.1:PORT` or `unix:PATH`).
    pub fn listen(&self) -> &str {
        &self.listen
    }

    /// The `Host` values a request may carry (`127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT`,
    /// the `--allow-host` names).
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// The live server that owns `serve.json` in this home, when one did at start: this server
    /// then wrote no discovery file, and its URL is only the one `url` returns.
    pub fn other_server(&self) -> Option<&OtherServer> {
        self.other.as_ref()
    }

    /// A handle that stops `serve` from another thread.
    pub fn stopper(&self) -> Stopper {
        Stopper { shared: Arc::clone(&self.shared), wake: self.wake.clone() }
    }

    /// `{url, token, pid, listen}` into `$CODECODER_HOME/serve.json`, readable by the user
    /// only, for local clients to find the server.
    fn write_discovery(&self) -> Result<()> {
        let body = serde_json::json!({
            "url": self.url,
            "token": self.token,
            "pid": std::process::id(),
            "listen": self.listen,
        });
        let text = serde_json::to_string_pretty(&body)
            .map_err(|source| Error::Discovery { path: self.discovery.path.clone(), source })?;
        // Written beside and renamed, so a reader never sees half a file; 0600 from creation.
        let partial = self.discovery.path.with_extension("json.partial");
        let _ = fs_err::remove_file(&partial);
        let mut file =
            fs_err::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&partial)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        fs_err::rename(&partial, &self.discovery.path)?;
        Ok(())
    }

    /// Serves until stopped; then stops every hosted session, joins every thread and removes
    /// the discovery file (and the unix socket).
    ///
    /// # Errors
    /// When the listener fails.
    pub fn serve(self) -> Result<()> {
        let result = self.accept_loop();
        if let Listener::Unix(_, path) = &self.listener {
            let _ = fs_err::remove_file(path);
        }
        result
    }

    fn accept_loop(&self) -> Result<()> {
        // Oldest first: the order idle ones are closed in when the table is full.
        let mut connections: Vec<(JoinOnDrop<()>, Arc<Waiting>)> = Vec::new();
        let counter = AtomicU64::new(0);
        let result = loop {
            let accepted: std::io::Result<(Box<dyn Connection>, String)> = match &self.listener {
                Listener::Tcp(listener) => listener.accept().map(|(stream, peer)| {
                    (Box::new(stream) as Box<dyn Connection>, peer.to_string())
                }),
                Listener::Unix(listener, _) => listener.accept().map(|(stream, _)| {
                    (Box::new(stream) as Box<dyn Connection>, "unix".to_owned())
                }),
            };
            if self.shared.stop.load(Ordering::SeqCst) {
                break Ok(());
            }
            let (stream, peer) = match accepted {
                Ok(accepted) => accepted,
                // A connection that failed before it was accepted is the client's problem.
                Err(_) => continue,
            };
            connections.retain(|(thread, _)| !thread.is_finished());
            let open =
                connections.iter().filter(|(_, waiting)| !waiting.closed.load(Ordering::SeqCst));
            if open.count() >= MAX_CONNECTIONS {
                let idle = connections.iter().find(|(_, waiting)| waiting.idle());
                match idle {
                    Some((_, waiting)) => waiting.close(),
                    None => {
                        let mut stream = stream;
                        let _ = Response::error(503, "too many connections; retry later")
                            .write_to(&mut stream);
                        self.shared.log(&peer, "-", "-", 503);
                        continue;
                    }
                }
            }
            let waiting = Arc::new(Waiting::new(stream.closer()));
            let n = counter.fetch_add(1, Ordering::Relaxed);
            let shared = Arc::clone(&self.shared);
            let state = Arc::clone(&waiting);
            let thread = spawn_named(format!("serve-conn-{n}"), move || {
                handle(&shared, stream, &peer, &state);
            });
            match thread {
                Ok(thread) => connections.push((thread, waiting)),
                Err(source) => break Err(Error::Thread { source }),
            }
        };
        // Each connection ends once its request is answered or its event stream sees the
        // sessions stop (which `serve` does next), or, still waiting for its request head, when
        // closed here; so the joins below end too.
        self.shared.hub.shutdown();
        for (_, waiting) in &connections {
            waiting.close();
        }
        drop(connections);
        result
    }
}

/// Shuts a connection down from another thread (its blocked read then ends).
type Closer = Box<dyn Fn() + Send + Sync>;

/// A TCP or unix stream.
pub(crate) trait Connection: Read + Write + Send {
    fn set_timeout(&self, timeout: Duration);
    /// A handle that shuts this stream down, when the OS lets it be cloned.
    fn closer(&self) -> Option<Closer>;
}

impl Connection for TcpStream {
    fn set_timeout(&self, timeout: Duration) {
        let _ = self.set_read_timeout(Some(timeout));
    }

    fn closer(&self) -> Option<Closer> {
        let clone = self.try_clone().ok()?;
        Some(Box::new(move || drop(clone.shutdown(std::net::Shutdown::Both))))
    }
}

impl Connection for UnixStream {
    fn set_timeout(&self, timeout: Duration) {
        let _ = self.set_read_timeout(Some(timeout));
    }

    fn closer(&self) -> Option<Closer> {
        let clone = self.try_clone().ok()?;
        Some(Box::new(move || drop(clone.shutdown(std::net::Shutdown::Both))))
    }
}

/// What the accept loop knows of a connection: while its request head is still to come, how to
/// close it to make room for a new one (dropped once the head is in, so the stream's clone
/// keeps no socket open past its answer); whether it was closed that way.
struct Waiting {
    closer: Mutex<Option<Closer>>,
    closed: AtomicBool,
}

impl Waiting {
    fn new(closer: Option<Closer>) -> Self {
        Self { closer: Mutex::new(closer), closed: AtomicBool::new(false) }
    }

    /// Whether the request head is still to come (and the connection can be closed).
    fn idle(&self) -> bool {
        self.closer.lock().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    /// Closes the connection if its head is still to come.
    fn close(&self) {
        let closer = self.closer.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(closer) = closer {
            self.closed.store(true, Ordering::SeqCst);
            closer();
        }
    }

    /// The head is in (or the read is over): the connection is no longer closed for room.
    fn settle(&self) {
        drop(self.closer.lock().unwrap_or_else(PoisonError::into_inner).take());
    }
}

/// The connection as its request is read: the head must be complete by `deadline` (each read
/// waits only for what is left of it); once the blank line ending the head has gone by, the
/// connection is no longer idle and the body's reads wait `READ_TIMEOUT` each.
struct RequestReader<'a> {
    stream: &'a mut dyn Connection,
    waiting: &'a Waiting,
    deadline: std::time::Instant,
    /// Whether the bytes since the last line feed were only carriage returns.
    line_start: bool,
    head_done: bool,
}

impl Read for RequestReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if !self.head_done {
            let left = self.deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(std::io::ErrorKind::TimedOut.into());
            }
            self.stream.set_timeout(left);
        }
        let n = self.stream.read(buf)?;
        if !self.head_done {
            for &byte in &buf[..n] {
                match byte {
                    b'\n' if self.line_start => {
                        self.head_done = true;
                        break;
                    }
                    b'\n' => self.line_start = true,
                    b'\r' => {}
                    _ => self.line_start = false,
                }
            }
            if self.head_done {
                self.waiting.settle();
                self.stream.set_timeout(READ_TIMEOUT);
            }
        }
        Ok(n)
    }
}

/// Makes sure only this user can reach a socket at `path` through its directory: a missing
/// directory is created 0700 (and its missing parents); an existing one that others may write
/// to is refused, since another user could swap the socket there for one of their own.
fn private_socket_dir(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    };
    match fs_err::metadata(&dir) {
        Ok(meta) => {
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o022 != 0 {
                return Err(Error::SharedSocketDir { dir, mode });
            }
            Ok(())
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            use std::os::unix::fs::DirBuilderExt;
            // fs_err has no DirBuilder (the mode is set at creation): the error names the path here.
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir).map_err(|err| {
                std::io::Error::new(err.kind(), format!("creating {}: {err}", dir.display()))
            })?;
            Ok(())
        }
        Err(err) => Err(err.into()),
    }
}

/// `IP:PORT` as a `Host` header spells it (IPv6 in brackets).
fn host_port(ip: IpAddr, port: u16) -> String {
    match ip {
        IpAddr::V4(ip) => format!("{ip}:{port}"),
        IpAddr::V6(ip) => format!("[{ip}]:{port}"),
    }
}

/// Reads one request, checks it, answers it, and logs it.
fn handle(shared: &Shared, mut stream: Box<dyn Connection>, peer: &str, waiting: &Waiting) {
    let request = {
        let reader = RequestReader {
            stream: &mut *stream,
            waiting,
            deadline: std::time::Instant::now() + HEAD_TIMEOUT,
            line_start: false,
            head_done: false,
        };
        http::read_request(&mut BufReader::new(reader))
    };
    waiting.settle();
    if waiting.closed.load(Ordering::SeqCst) {
        // Closed to make room for a newer connection: nothing can be answered.
        return;
    }
    let request = match request {
        Ok(request) => request,
        Err(ReadError::Closed) => return,
        Err(ReadError::Bad(status, message)) => {
            let _ = Response::error(status, message).write_to(&mut stream);
            shared.log(peer, "-", "-", status);
            return;
        }
    };
    let target = http::loggable_target(&request.path, &request.query);
    let status = match shared.guard.check(&request) {
        Access::Refused(response) | Access::Exchange(response) => {
            let _ = response.write_to(&mut stream);
            response.status
        }
        Access::Allowed => api::route(shared, &request, &mut *stream),
    };
    shared.log(peer, &request.method, &target, status);
}

impl Shared {
    /// One line of the access log: time, peer, method, path (token redacted), status.
    fn log(&self, peer: &str, method: &str, target: &str, status: u16) {
        let line =
            format!("{} {peer} {method} {target} {status}\n", format_utc_ms(SystemClock.now_ms()));
        let mut file = self.access_log.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = file.write_all(line.as_bytes());
    }

    fn home(&self) -> &Path {
        &self.home
    }
}
