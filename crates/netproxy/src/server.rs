//! The proxy's listeners: a private directory of unix sockets (one endpoint per sandboxed
//! command) and loopback TCP endpoints, each served by an acceptor thread that starts a thread
//! per connection.
//!
//! Invariants: every thread is named and joined (a connection's threads by its acceptor, an
//! acceptor by the endpoint's drop or the handle's); stopping an endpoint shuts down every socket
//! its connections hold, so no thread stays blocked in a read, and disconnects the `stopped`
//! channel a waiting `Decide` selects on; a unix endpoint's socket file is removed when it stops,
//! and the directory with the handle; at most `max_connections` connections are served at once
//! across all endpoints (one over the cap is closed unanswered).

use std::collections::{HashMap, HashSet};
use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

use codecoder_stdx::{JoinOnDrop, spawn_named};
use crossbeam_channel::{Receiver, Sender};

use crate::decide::{Asks, Decide, Observe};
use crate::inspect::Inspection;
use crate::policy::NetworkPolicy;
use crate::{Error, Result};

/// How the proxy runs.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// The rules.
    pub policy: NetworkPolicy,
    /// Where the private directory of unix sockets is made (short: a socket path has at most
    /// 107 bytes).
    pub socket_parent: PathBuf,
    /// Names reached at a fixed address instead of through the resolver, for tests standing in
    /// local servers for registries. Empty unless a caller sets it for a test.
    pub name_overrides: HashMap<String, SocketAddr>,
    /// Connections served at once, across endpoints.
    pub max_connections: usize,
    /// How long a client has to send its request head (or SOCKS5 handshake).
    pub head_timeout: Duration,
    /// How long connecting to a host may take, per address.
    pub connect_timeout: Duration,
    /// Certificates (PEM) trusted upstream besides the public roots when an inspected request
    /// is forwarded, for tests standing in local HTTPS servers. Empty unless a test sets it.
    pub extra_roots_pem: Vec<String>,
}

impl ProxyConfig {
    /// The standard limits, sockets under the system's temporary directory, no overrides.
    pub fn standard(policy: NetworkPolicy) -> ProxyConfig {
        ProxyConfig {
            policy,
            socket_parent: std::env::temp_dir(),
            name_overrides: HashMap::new(),
            max_connections: 256,
            head_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
            extra_roots_pem: Vec::new(),
        }
    }
}

/// What every connection thread reads: the configuration, the asks, the observer.
pub(crate) struct Core {
    pub(crate) config: ProxyConfig,
    pub(crate) asks: Asks,
    pub(crate) observe: Arc<dyn Observe>,
    pub(crate) inspection: Inspection,
    live_connections: AtomicUsize,
    // The ports of the live loopback listeners, which the proxy never connects to (a loop):
    // written as TCP endpoints open and stop, read by the connection threads; map operations
    // only.
    own_ports: Mutex<HashSet<u16>>,
}

impl Core {
    /// True when `port` is one of the proxy's live loopback listeners.
    pub(crate) fn is_own_port(&self, port: u16) -> bool {
        self.own_ports.lock().unwrap_or_else(PoisonError::into_inner).contains(&port)
    }
}

/// A running proxy. Dropping it stops every endpoint (joining their threads) and removes the
/// socket directory.
pub struct ProxyHandle {
    shared: Arc<Shared>,
    // Written once, by the first caller of `ca_files`.
    ca_files: OnceLock<std::result::Result<CaFiles, String>>,
    // Dropped after `Drop::drop` has stopped every endpoint, so the sockets are gone first.
    _socket_dir: tempfile::TempDir,
}

/// The session CA's certificate as files in the proxy's private directory (removed with it),
/// for the commands' TLS clients: never the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaFiles {
    /// The CA certificate alone (PEM), for `NODE_EXTRA_CA_CERTS`.
    pub certificate: PathBuf,
    /// The system's CA bundle followed by the CA certificate, for the variables that replace
    /// the roots (`SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE`, `CARGO_HTTP_CAINFO`, `GIT_SSL_CAINFO`).
    pub bundle: PathBuf,
}

/// Where the system keeps its CA bundle (Debian, Fedora, Alpine and macOS's layouts).
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
];

/// The system's CA bundle that [`ProxyHandle::ca_files`] puts before the session CA, if the
/// machine has one of the known layouts.
pub fn system_ca_bundle() -> Option<PathBuf> {
    SYSTEM_BUNDLES.iter().map(PathBuf::from).find(|path| path.is_file())
}

struct Shared {
    core: Arc<Core>,
    socket_dir: PathBuf,
    // The endpoint table: written by `endpoint`, an `Endpoint`'s drop and the handle's drop, on
    // the caller's threads; held for map operations only (an acceptor is stopped after it is
    // taken out).
    endpoints: Mutex<EndpointTable>,
}

#[derive(Default)]
struct EndpointTable {
    stopped: bool,
    next_id: u64,
    acceptors: HashMap<u64, Acceptor>,
}

/// Starts a proxy with no endpoint yet.
pub fn start(
    config: ProxyConfig,
    decide: Arc<dyn Decide>,
    observe: Arc<dyn Observe>,
) -> Result<ProxyHandle> {
    let socket_dir = tempfile::Builder::new()
        .prefix(crate::sweep::DIR_PREFIX)
        .tempdir_in(&config.socket_parent)
        .map_err(|source| Error::SocketDir { parent: config.socket_parent.clone(), source })?;
    // A proxy killed without its drop left its directory behind: this start removes those.
    crate::sweep::mark_and_sweep(&config.socket_parent, socket_dir.path());
    let inspection = Inspection::new(config.extra_roots_pem.clone());
    let core = Arc::new(Core {
        config,
        asks: Asks::new(decide),
        observe,
        inspection,
        live_connections: AtomicUsize::new(0),
        own_ports: Mutex::new(HashSet::new()),
    });
    let shared = Arc::new(Shared {
        core,
        socket_dir: socket_dir.path().to_owned(),
        endpoints: Mutex::new(EndpointTable::default()),
    });
    Ok(ProxyHandle { shared, ca_files: OnceLock::new(), _socket_dir: socket_dir })
}

impl ProxyHandle {
    /// A unix-socket endpoint for one command; `label` names it in asks and events.
    pub fn endpoint(&self, label: &str) -> Result<Endpoint> {
        let id = self.next_id();
        let path = self.shared.socket_dir.join(format!("{id}.sock"));
        let listener = UnixListener::bind(&path)
            .map_err(|source| Error::Listen { address: path.display().to_string(), source })?;
        self.add(id, label, Listener::Unix(listener), Address::Unix(path))
    }

    /// A loopback TCP endpoint (an ephemeral port), for callers that cannot reach a unix socket;
    /// `label` names it in asks and events.
    pub fn tcp_endpoint(&self, label: &str) -> Result<Endpoint> {
        let id = self.next_id();
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .and_then(|listener| Ok((listener.local_addr()?, listener)))
            .map_err(|source| Error::Listen { address: "127.0.0.1:0".to_owned(), source })?;
        let (address, listener) = listener;
        self.shared
            .core
            .own_ports
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(address.port());
        self.add(id, label, Listener::Tcp(listener), Address::Tcp(address))
    }

    /// The session CA's certificate in PEM when the policy has rules naming paths or methods
    /// (tunnels to their hosts are inspected), generated now if it is not yet; `None` without
    /// such rules. Its key stays in the proxy's memory.
    pub fn ca_certificate_pem(&self) -> Option<Result<String>> {
        if !self.shared.core.config.policy.inspects_any() {
            return None;
        }
        Some(
            self.shared
                .core
                .inspection
                .authority()
                .map(|authority| authority.certificate_pem().to_owned())
                .map_err(|reason| Error::Authority { reason }),
        )
    }

    /// The session CA's certificate written as [`CaFiles`] when the policy has rules naming
    /// paths or methods (written at the first call); `None` without such rules.
    pub fn ca_files(&self) -> Option<Result<CaFiles>> {
        let pem = match self.ca_certificate_pem()? {
            Ok(pem) => pem,
            Err(error) => return Some(Err(error)),
        };
        let written = self.ca_files.get_or_init(|| {
            let certificate = self.shared.socket_dir.join("ca.pem");
            let bundle = self.shared.socket_dir.join("ca-bundle.pem");
            let system = SYSTEM_BUNDLES
                .iter()
                .find_map(|path| fs_err::read_to_string(path).ok())
                .unwrap_or_default();
            let separator = if system.is_empty() || system.ends_with('\n') { "" } else { "\n" };
            fs_err::write(&certificate, &pem)
                .and_then(|()| fs_err::write(&bundle, format!("{system}{separator}{pem}")))
                .map_err(|error| error.to_string())?;
            Ok(CaFiles { certificate, bundle })
        });
        Some(written.clone().map_err(|reason| Error::Authority { reason }))
    }

    /// Requests waiting for an answer from the caller's `Decide` (the one asking and those
    /// joined to its ask).
    pub fn waiting_asks(&self) -> usize {
        self.shared.core.asks.waiting()
    }

    fn next_id(&self) -> u64 {
        let mut table = self.shared.endpoints.lock().unwrap_or_else(PoisonError::into_inner);
        table.next_id += 1;
        table.next_id
    }

    fn add(&self, id: u64, label: &str, listener: Listener, address: Address) -> Result<Endpoint> {
        let acceptor = Acceptor::start(&self.shared.core, id, label, listener, address.clone())?;
        let mut table = self.shared.endpoints.lock().unwrap_or_else(PoisonError::into_inner);
        table.acceptors.insert(id, acceptor);
        Ok(Endpoint { id, label: label.to_owned(), address, shared: Arc::downgrade(&self.shared) })
    }
}

impl Drop for ProxyHandle {
    fn drop(&mut self) {
        let acceptors = {
            let mut table = self.shared.endpoints.lock().unwrap_or_else(PoisonError::into_inner);
            table.stopped = true;
            std::mem::take(&mut table.acceptors)
        };
        for (_, acceptor) in acceptors {
            acceptor.stop();
        }
    }
}

/// One listening endpoint. Dropping it closes the listener and every connection made through it
/// (a no-op once the proxy is gone).
pub struct Endpoint {
    id: u64,
    label: String,
    address: Address,
    shared: Weak<Shared>,
}

impl Endpoint {
    /// The label given when it was made.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The socket file of a unix endpoint.
    pub fn unix_path(&self) -> Option<&Path> {
        match &self.address {
            Address::Unix(path) => Some(path),
            Address::Tcp(_) => None,
        }
    }

    /// The address of a TCP endpoint.
    pub fn tcp_address(&self) -> Option<SocketAddr> {
        match &self.address {
            Address::Unix(_) => None,
            Address::Tcp(address) => Some(*address),
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        let Some(shared) = self.shared.upgrade() else { return };
        let acceptor = {
            let mut table = shared.endpoints.lock().unwrap_or_else(PoisonError::into_inner);
            table.acceptors.remove(&self.id)
        };
        if let Some(acceptor) = acceptor {
            acceptor.stop();
        }
        if let Address::Tcp(address) = &self.address {
            let mut ports = shared.core.own_ports.lock().unwrap_or_else(PoisonError::into_inner);
            ports.remove(&address.port());
        }
    }
}

#[derive(Debug, Clone)]
enum Address {
    Unix(PathBuf),
    Tcp(SocketAddr),
}

enum Listener {
    Unix(UnixListener),
    Tcp(TcpListener),
}

/// A client connection: a unix or TCP stream.
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    pub(crate) fn try_clone(&self) -> io::Result<Stream> {
        match self {
            Stream::Unix(stream) => stream.try_clone().map(Stream::Unix),
            Stream::Tcp(stream) => stream.try_clone().map(Stream::Tcp),
        }
    }

    pub(crate) fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            Stream::Unix(stream) => stream.shutdown(how),
            Stream::Tcp(stream) => stream.shutdown(how),
        }
    }

    pub(crate) fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(stream) => stream.set_read_timeout(timeout),
            Stream::Tcp(stream) => stream.set_read_timeout(timeout),
        }
    }
}

impl std::os::fd::AsFd for Stream {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        match self {
            Stream::Unix(stream) => stream.as_fd(),
            Stream::Tcp(stream) => stream.as_fd(),
        }
    }
}

impl io::Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(stream) => stream.read(buf),
            Stream::Tcp(stream) => stream.read(buf),
        }
    }
}

impl io::Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(stream) => stream.write(buf),
            Stream::Tcp(stream) => stream.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What a connection thread gets: the core, its endpoint's label, stop signal and live sockets.
pub(crate) struct Connection {
    pub(crate) core: Arc<Core>,
    pub(crate) label: Arc<str>,
    pub(crate) stopped: Receiver<()>,
    pub(crate) live: LiveGuard,
}

/// The sockets an endpoint's connections hold, shut down when the endpoint stops.
#[derive(Default)]
pub(crate) struct LiveSockets {
    // Written by the connection threads (register, deregister) and read by the stopping thread;
    // held for map operations and non-blocking `shutdown` calls only.
    state: Mutex<LiveState>,
}

#[derive(Default)]
struct LiveState {
    closed: bool,
    next_id: u64,
    sockets: HashMap<u64, Vec<Stream>>,
}

impl LiveSockets {
    fn close_all(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.closed = true;
        for stream in state.sockets.values().flatten() {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    fn register(self: &Arc<Self>) -> LiveGuard {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.next_id += 1;
        let id = state.next_id;
        state.sockets.insert(id, Vec::new());
        LiveGuard { live: Arc::clone(self), id }
    }
}

/// A connection's entry in its endpoint's live sockets; removed on drop.
pub(crate) struct LiveGuard {
    live: Arc<LiveSockets>,
    id: u64,
}

impl LiveGuard {
    /// Adds a socket to shut down if the endpoint stops (at once if it already has).
    pub(crate) fn add(&self, stream: &Stream) {
        let Ok(clone) = stream.try_clone() else { return };
        let mut state = self.live.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.closed {
            let _ = clone.shutdown(Shutdown::Both);
        }
        state.sockets.entry(self.id).or_default().push(clone);
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        let mut state = self.live.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.sockets.remove(&self.id);
    }
}

/// Counts a connection against `max_connections` while it lives.
struct Slot(Arc<Core>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.live_connections.fetch_sub(1, Ordering::SeqCst);
    }
}

struct Acceptor {
    stopping: Arc<AtomicBool>,
    // Dropped by `stop` to disconnect the `stopped` receivers of waiting asks.
    stop_tx: Sender<()>,
    live: Arc<LiveSockets>,
    address: Address,
    thread: JoinOnDrop<()>,
}

impl Acceptor {
    fn start(
        core: &Arc<Core>,
        id: u64,
        label: &str,
        listener: Listener,
        address: Address,
    ) -> Result<Acceptor> {
        let stopping = Arc::new(AtomicBool::new(false));
        let (stop_tx, stop_rx) = crossbeam_channel::bounded::<()>(0);
        let live = Arc::new(LiveSockets::default());
        let name = format!("netproxy-accept-{id}");
        let thread = {
            let core = Arc::clone(core);
            let stopping = Arc::clone(&stopping);
            let live = Arc::clone(&live);
            let label: Arc<str> = Arc::from(label);
            spawn_named(name.clone(), move || {
                accept_loop(&core, &label, &listener, &stopping, &stop_rx, &live);
            })
            .map_err(|source| Error::Thread { name, source })?
        };
        Ok(Acceptor { stopping, stop_tx, live, address, thread })
    }

    fn stop(self) {
        let Acceptor { stopping, stop_tx, live, address, thread } = self;
        stopping.store(true, Ordering::SeqCst);
        drop(stop_tx);
        live.close_all();
        // Wakes the acceptor from its blocking accept; it sees `stopping` and ends.
        match &address {
            Address::Unix(path) => drop(UnixStream::connect(path)),
            Address::Tcp(address) => drop(TcpStream::connect(address)),
        }
        drop(thread);
        if let Address::Unix(path) = &address {
            let _ = fs_remove(path);
        }
    }
}

fn fs_remove(path: &Path) -> io::Result<()> {
    // The socket file only: the directory goes with the handle.
    fs_err::remove_file(path).or_else(|error| match error.kind() {
        io::ErrorKind::NotFound => Ok(()),
        _ => Err(error),
    })
}

fn accept_loop(
    core: &Arc<Core>,
    label: &Arc<str>,
    listener: &Listener,
    stopping: &AtomicBool,
    stopped: &Receiver<()>,
    live: &Arc<LiveSockets>,
) {
    let mut connections: Vec<JoinOnDrop<()>> = Vec::new();
    let mut n_accepted: u64 = 0;
    loop {
        let accepted = match listener {
            Listener::Unix(listener) => listener.accept().map(|(stream, _)| Stream::Unix(stream)),
            Listener::Tcp(listener) => listener.accept().map(|(stream, _)| {
                let _ = stream.set_nodelay(true);
                Stream::Tcp(stream)
            }),
        };
        if stopping.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = accepted else {
            // Out of descriptors or a client gone before accept: wait a little instead of
            // spinning, then accept again.
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        connections.retain(|connection| !connection.is_finished());
        let in_use = core.live_connections.fetch_add(1, Ordering::SeqCst);
        let slot = Slot(Arc::clone(core));
        if in_use >= core.config.max_connections {
            continue;
        }
        n_accepted += 1;
        let connection = Connection {
            core: Arc::clone(core),
            label: Arc::clone(label),
            stopped: stopped.clone(),
            live: live.register(),
        };
        let spawned = spawn_named(format!("netproxy-conn-{n_accepted}"), move || {
            let _slot = slot;
            // A panic ends this connection only (its sockets close as they drop).
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::conn::serve(&connection, stream);
            }));
        });
        if let Ok(thread) = spawned {
            connections.push(thread);
        }
    }
    live.close_all();
    drop(connections);
}
