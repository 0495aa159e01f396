//! `codecoder app-server --listen ws://IP:PORT` (or `unix://PATH`, WebSocket over a unix socket
//! as codex's `--remote unix://` speaks it): codex's app-server protocol over WebSocket, one
//! JSON-RPC message per text frame each way, each connection a client of its own served by the
//! same `serve` as stdio. `GET /readyz` and `GET /healthz` answer 200 on the same listener.
//!
//! Every request is checked before anything is started for it, in this order, and logged (who,
//! from where, what was answered) to the access log:
//! - an `Origin` header, whatever its value, is refused (403): browsers always send one, so no
//!   web page can reach the server, the upgrade included;
//! - on TCP, a `Host` that is not the bound address, a loopback address or `localhost` (with
//!   the bound port, if any) is refused (403): a DNS-rebinding page names its own host (no
//!   browser reaches a unix socket, whose access is its file's permissions);
//! - a WebSocket upgrade without the `--ws-auth` credentials is refused (401).
//!
//! Invariants: a non-loopback address without auth is refused before binding; at most
//! `MAX_CONNECTIONS` clients are served at once (more are answered 503); a client's queue is
//! bounded (see `conn`). A stop (`StopHandle::stop`, a signal's) ends every connection, so each
//! one's agents are shut down (running turns cancelled, their commands killed) and joined,
//! before `run` returns; a unix socket's file is removed then.

mod auth;
mod conn;
mod http;

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use codecoder_stdx::{Clock, JoinOnDrop, SystemClock, format_utc_ms, spawn_named};

pub use auth::{MIN_SECRET_BYTES, SignedBearer, WsAuth};
pub use conn::{OUTGOING_FRAMES, WRITE_TIMEOUT};

use crate::{Error, Result, ServeConfig};

/// Clients served at once.
pub const MAX_CONNECTIONS: usize = 64;
/// How long a client may take to send its request's head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// What a WebSocket listener needs.
#[derive(Debug, Clone)]
pub struct ListenConfig {
    /// What each connection's server is given.
    pub serve: ServeConfig,
    /// Who may connect.
    pub auth: WsAuth,
    /// The access log (appended to; its folder is created).
    pub access_log: PathBuf,
}

/// A bound listener, not yet serving: its address can be told before the first client.
pub struct WsListener {
    listener: Inner,
    shared: Arc<Shared>,
    stopping: Arc<AtomicBool>,
}

/// Stops a running listener from another thread (the signal handler's).
#[derive(Debug, Clone)]
pub struct StopHandle {
    stopping: Arc<AtomicBool>,
    /// Where to connect to wake the accept loop.
    wake: Wake,
}

#[derive(Debug, Clone)]
enum Wake {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl StopHandle {
    /// Makes `run` end its connections and return. The accept loop, blocked in `accept`, is
    /// woken by a connection of this handle's own, which it drops.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        match &self.wake {
            Wake::Tcp(addr) => drop(TcpStream::connect(addr)),
            Wake::Unix(path) => drop(UnixStream::connect(path)),
        }
    }
}

enum Inner {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

/// What every connection reads.
struct Shared {
    serve: ServeConfig,
    auth: WsAuth,
    /// The TCP address bound; `None` on a unix socket.
    local: Option<SocketAddr>,
    log: fs_err::File,
}

impl WsListener {
    /// Binds `addr` (port 0: a free port).
    ///
    /// # Errors
    /// When `addr` is not loopback and `auth` is `None`, when the access log cannot be opened, or
    /// when the address cannot be bound (taken, not this machine's).
    pub fn bind(addr: SocketAddr, config: ListenConfig) -> Result<Self> {
        if !addr.ip().is_loopback() && config.auth.is_none() {
            return Err(Error::NonLoopbackWithoutAuth { addr });
        }
        let log = open_log(&config.access_log)?;
        let listener = TcpListener::bind(addr).map_err(|source| Error::Bind { addr, source })?;
        let local = listener.local_addr().map_err(|source| Error::Bind { addr, source })?;
        let shared = Shared { serve: config.serve, auth: config.auth, local: Some(local), log };
        let stopping = Arc::new(AtomicBool::new(false));
        Ok(Self { listener: Inner::Tcp(listener), shared: Arc::new(shared), stopping })
    }

    /// Binds a unix socket at `path`, readable and writable by its owner only. A folder made
    /// for it is private (0700); a socket file nobody listens on any more is replaced.
    ///
    /// # Errors
    /// When the access log cannot be opened, or the socket cannot be bound (a server listens
    /// there, or the path is something else).
    pub fn bind_unix(path: &Path, config: ListenConfig) -> Result<Self> {
        let log = open_log(&config.access_log)?;
        let unix_error = |source| Error::BindUnix { path: path.to_owned(), source };
        // std's DirBuilder, as fs_err has none outside tokio: the error names the socket's path.
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(unix_error)?;
        }
        // A socket file whose server is gone refuses connections: it is left over, not taken.
        let stale = fs_err::symlink_metadata(path).is_ok_and(|m| {
            use std::os::unix::fs::FileTypeExt;
            m.file_type().is_socket()
        }) && UnixStream::connect(path).is_err();
        if stale {
            fs_err::remove_file(path).map_err(unix_error)?;
        }
        let listener = UnixListener::bind(path).map_err(unix_error)?;
        fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(unix_error)?;
        let shared = Shared { serve: config.serve, auth: config.auth, local: None, log };
        let stopping = Arc::new(AtomicBool::new(false));
        let listener = Inner::Unix(listener, path.to_owned());
        Ok(Self { listener, shared: Arc::new(shared), stopping })
    }

    /// The bound TCP address (the port chosen when 0 was asked); `None` on a unix socket.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.shared.local
    }

    /// What clients connect to: `ws://IP:PORT` or `unix://PATH`.
    pub fn url(&self) -> String {
        match &self.listener {
            Inner::Tcp(listener) => listener
                .local_addr()
                .map_or_else(|_| "ws://?".to_owned(), |addr| format!("ws://{addr}")),
            Inner::Unix(_, path) => format!("unix://{}", path.display()),
        }
    }

    /// What stops `run` from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        let wake = match &self.listener {
            Inner::Tcp(_) => {
                let mut addr = self
                    .shared
                    .local
                    .unwrap_or_else(|| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0));
                // A listener on every address is reached on loopback.
                if addr.ip().is_unspecified() {
                    addr.set_ip(match addr {
                        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                        SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
                    });
                }
                Wake::Tcp(addr)
            }
            Inner::Unix(_, path) => Wake::Unix(path.clone()),
        };
        StopHandle { stopping: Arc::clone(&self.stopping), wake }
    }

    /// Serves clients, each on a thread of its own, until stopped (`stop_handle`): then every
    /// connection is ended and joined (its agents shut down) and a unix socket's file removed.
    pub fn run(self) {
        match &self.listener {
            Inner::Tcp(listener) => accept_loop(&self.shared, &self.stopping, || {
                let (stream, peer) = listener.accept()?;
                Ok((stream, peer.to_string()))
            }),
            Inner::Unix(listener, path) => {
                accept_loop(&self.shared, &self.stopping, || {
                    let (stream, _) = listener.accept()?;
                    Ok((stream, "unix".to_owned()))
                });
                // No client can reach a stopped server: its address goes with it.
                let _ = fs_err::remove_file(path);
            }
        }
    }
}

fn open_log(path: &Path) -> Result<fs_err::File> {
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir).map_err(|source| Error::AccessLog { source })?;
    }
    fs_err::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|source| Error::AccessLog { source })
}

/// Accepts clients until `stopping` is set, then shuts every connection's socket down (which
/// ends its `serve`, shutting its agents down) and joins them all.
fn accept_loop<S: conn::Socket>(
    shared: &Arc<Shared>,
    stopping: &AtomicBool,
    mut accept: impl FnMut() -> std::io::Result<(S, String)>,
) {
    // Each connection's thread, and a handle on its socket to end it with.
    let mut connections: Vec<(JoinOnDrop<()>, Arc<S>)> = Vec::new();
    while !stopping.load(Ordering::SeqCst) {
        let (mut stream, peer) = match accept() {
            Ok(accepted) => accepted,
            Err(_) => {
                // Out of descriptors or a connection reset before it was accepted: wait a
                // little rather than spin on the same error.
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        if stopping.load(Ordering::SeqCst) {
            break;
        }
        connections.retain(|(connection, _)| !connection.is_finished());
        if connections.len() >= MAX_CONNECTIONS {
            shared.log(&peer, "-", 503, "refused: too many clients");
            let _ = stream.write_all(&http::answer(503, "too many clients\n"));
            continue;
        }
        let Ok(socket) = stream.try_clone().map(Arc::new) else {
            shared.log(&peer, "-", 503, "refused: the socket could not be cloned");
            continue;
        };
        let for_thread = Arc::clone(shared);
        let ender = Arc::clone(&socket);
        let serve = move || {
            connection(stream, &peer, &for_thread);
            // The loop's handle keeps the socket open: the client is told the end here.
            let _ = ender.shutdown();
        };
        match spawn_named("app-server-ws-conn", serve) {
            Ok(handle) => connections.push((handle, socket)),
            Err(_) => shared.log("?", "-", 503, "refused: no thread for the client"),
        }
    }
    // Every connection is ended first, then joined, so their agents shut down side by side.
    for (_, socket) in &connections {
        let _ = socket.shutdown();
    }
    connections.clear();
}

impl Shared {
    /// One line of the access log: time, peer, request, status, outcome. A line that cannot be
    /// written is lost, never the client.
    fn log(&self, peer: &str, request: &str, status: u16, outcome: &str) {
        let time = format_utc_ms(SystemClock.now_ms());
        let line = format!("{time} {peer} {request} {status} {outcome}\n");
        let _ = (&self.log).write_all(line.as_bytes());
    }
}

/// What is done with a request.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A health probe: 200.
    Health,
    /// The upgrade, for `who`, with the handshake's key.
    Upgrade { who: String, key: String },
    /// Refused with this status, for this reason.
    Refused { status: u16, why: String },
}

/// Decides a request's fate at `now_s` (Unix seconds).
pub(crate) fn decide(
    request: &http::Request,
    local: Option<SocketAddr>,
    auth: &WsAuth,
    now_s: u64,
) -> Verdict {
    let refused = |status, why: &str| Verdict::Refused { status, why: why.to_owned() };
    if request.header("origin").is_some() {
        return refused(403, "a request with an Origin header (a browser's)");
    }
    if let Some(local) = local {
        match request.header("host") {
            None => return refused(403, "no Host header"),
            Some(host) if !host_allowed(host, local) => {
                return refused(403, "a foreign Host header");
            }
            Some(_) => {}
        }
    }
    if request.method != "GET" {
        return refused(405, "not a GET");
    }
    let upgrade = request.header_lists("upgrade", "websocket");
    let path = request.path.split('?').next().unwrap_or_default();
    if !upgrade {
        return match path {
            "/readyz" | "/healthz" => Verdict::Health,
            _ => refused(404, "not a WebSocket upgrade"),
        };
    }
    let who = match auth.check(request.header("authorization"), now_s) {
        Ok(who) => who,
        Err(why) => return refused(401, &why),
    };
    if !request.header_lists("connection", "upgrade") {
        return refused(400, "an upgrade without Connection: Upgrade");
    }
    if request.header("sec-websocket-version") != Some("13") {
        return refused(426, "not WebSocket version 13");
    }
    match request.header("sec-websocket-key") {
        Some(key) if !key.is_empty() => Verdict::Upgrade { who, key: key.to_owned() },
        _ => refused(400, "no Sec-WebSocket-Key"),
    }
}

/// Whether `host` (a `Host` header) names this listener: `localhost` or a loopback address when
/// bound to one, the bound address, or any address when bound to all; with the bound port when
/// it has one. A name other than `localhost` is never allowed: it is what DNS rebinding uses.
pub(crate) fn host_allowed(host: &str, local: SocketAddr) -> bool {
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let Some((name, after)) = rest.split_once(']') else { return false };
        match after {
            "" => (name, None),
            _ => match after.strip_prefix(':') {
                Some(port) => (name, Some(port)),
                None => return false,
            },
        }
    } else {
        match host.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        }
    };
    if port.is_some_and(|port| port.parse::<u16>().ok() != Some(local.port())) {
        return false;
    }
    if name.eq_ignore_ascii_case("localhost") {
        return local.ip().is_loopback();
    }
    let Ok(ip) = name.parse::<IpAddr>() else { return false };
    ip == local.ip()
        || (ip.is_loopback() && local.ip().is_loopback())
        || local.ip().is_unspecified()
}

/// One client, from its request's head to its end.
fn connection<S: conn::Socket>(mut stream: S, peer: &str, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(HEAD_TIMEOUT));
    let (head, rest) = match http::read_head(&mut stream) {
        Ok(Some(head)) => head,
        Ok(None) | Err(_) => {
            shared.log(peer, "-", 400, "refused: no request head");
            let _ = stream.write_all(&http::answer(400, "no request head\n"));
            return;
        }
    };
    let Some(request) = http::parse(&head) else {
        shared.log(peer, "-", 400, "refused: not HTTP/1.1");
        let _ = stream.write_all(&http::answer(400, "not an HTTP/1.1 request\n"));
        return;
    };
    let line = format!(
        "{} {} ua={:?}",
        request.method,
        request.path,
        request.header("user-agent").unwrap_or_default()
    );
    let now_s = SystemClock.now_ms() / 1000;
    match decide(&request, shared.local, &shared.auth, now_s) {
        Verdict::Health => {
            shared.log(peer, &line, 200, "health");
            let _ = stream.write_all(&http::answer(200, "ok\n"));
        }
        Verdict::Refused { status, why } => {
            shared.log(peer, &line, status, &format!("refused: {why}"));
            let _ = stream.write_all(&http::answer(status, &format!("{why}\n")));
        }
        Verdict::Upgrade { who, key } => {
            if stream.write_all(&http::switching_protocols(&key)).is_err() {
                shared.log(peer, &line, 101, &format!("accepted {who}, gone at once"));
                return;
            }
            shared.log(peer, &line, 101, &format!("accepted {who}"));
            let outcome = match conn::serve_websocket(&stream, rest, shared.serve.clone()) {
                conn::Ended::Closed => "closed".to_owned(),
                conn::Ended::NotReading => {
                    format!("dropped: not reading ({OUTGOING_FRAMES} messages waiting)")
                }
                conn::Ended::Failed(why) => format!("failed: {why}"),
            };
            shared.log(peer, "-", 101, &format!("{who} {outcome}"));
        }
    }
}

#[cfg(test)]
mod tests;
