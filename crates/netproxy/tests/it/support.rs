//! Shared fixtures: a proxy with a recording `Decide` and `Observe`, a loopback HTTP server that
//! echoes the request it received, a TCP echo server, and raw clients.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use codecoder_netproxy::{
    Ask, Decide, Decision, NetworkEvent, NetworkPolicy, Observe, ProxyConfig, ProxyHandle,
};
use crossbeam_channel::Receiver;

/// How the recorder answers asks.
pub(crate) enum Answer {
    /// At once.
    Now(Decision),
    /// After the gate receives (or disconnects).
    Gated(Decision, Receiver<()>),
    /// Never: waits for the proxy to stop, then denies.
    UntilStopped,
    /// Panics.
    Panic,
}

pub(crate) struct Recorder {
    answer: Answer,
    pub(crate) asks: AtomicUsize,
    pub(crate) asked: Mutex<Vec<(String, u16, String)>>,
    pub(crate) events: Mutex<Vec<NetworkEvent>>,
}

impl Recorder {
    pub(crate) fn new(answer: Answer) -> Arc<Recorder> {
        Arc::new(Recorder {
            answer,
            asks: AtomicUsize::new(0),
            asked: Mutex::new(Vec::new()),
            events: Mutex::new(Vec::new()),
        })
    }

    pub(crate) fn events(&self) -> Vec<NetworkEvent> {
        self.events.lock().unwrap().clone()
    }
}

impl Decide for Recorder {
    fn decide(&self, ask: &Ask<'_>) -> Decision {
        self.asks.fetch_add(1, Ordering::SeqCst);
        self.asked.lock().unwrap().push((ask.host.to_string(), ask.port, ask.endpoint.to_owned()));
        match &self.answer {
            Answer::Now(decision) => *decision,
            Answer::Gated(decision, gate) => {
                crossbeam_channel::select! {
                    recv(gate) -> _ => *decision,
                    recv(ask.stopped()) -> _ => Decision::Deny,
                }
            }
            Answer::UntilStopped => {
                let _ = ask.stopped().recv();
                Decision::Deny
            }
            Answer::Panic => panic!("the decider fails"),
        }
    }
}

impl Observe for Recorder {
    fn observe(&self, event: &NetworkEvent) {
        self.events.lock().unwrap().push(event.clone());
    }
}

pub(crate) fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// A proxy with these allowed and denied rules, names overridden to loopback servers.
pub(crate) fn proxy(
    allowed: &[&str],
    denied: &[&str],
    overrides: &[(&str, SocketAddr)],
    recorder: &Arc<Recorder>,
) -> ProxyHandle {
    proxy_with(allowed, denied, overrides, recorder, |_| {})
}

/// `proxy`, with the configuration adjusted by `adjust`.
pub(crate) fn proxy_with(
    allowed: &[&str],
    denied: &[&str],
    overrides: &[(&str, SocketAddr)],
    recorder: &Arc<Recorder>,
    adjust: impl FnOnce(&mut ProxyConfig),
) -> ProxyHandle {
    let policy = NetworkPolicy::new(&strings(allowed), &strings(denied), &[]).unwrap();
    let mut config = ProxyConfig::standard(policy);
    adjust(&mut config);
    config.name_overrides = overrides
        .iter()
        .map(|(name, address)| ((*name).to_owned(), *address))
        .collect::<HashMap<_, _>>();
    codecoder_netproxy::start(config, recorder.clone(), recorder.clone()).unwrap()
}

/// A loopback HTTP server answering every request with the request's head and body as its body,
/// and `Connection: keep-alive` plus a `Keep-Alive` header the proxy must drop. One request per
/// connection.
pub(crate) fn http_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            thread::spawn(move || {
                let (head, mut rest) = read_head(&mut stream);
                let length = header(&head, "content-length").map_or(0, |v| v.parse().unwrap());
                while rest.len() < length {
                    let mut chunk = [0_u8; 4096];
                    let n = stream.read(&mut chunk).unwrap();
                    assert!(n > 0, "the body ended early");
                    rest.extend_from_slice(&chunk[..n]);
                }
                let body = format!("{head}{}", String::from_utf8_lossy(&rest));
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nX-Server: echo\r\n\r\n{body}",
                    body.len()
                );
                stream.write_all(response.as_bytes()).unwrap();
                // Keeps the connection open as a keep-alive server would, until the peer closes.
                let _ = stream.read(&mut [0_u8; 1]);
            });
        }
    });
    address
}

/// A loopback TCP server echoing every byte until the client closes, then closing.
pub(crate) fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            thread::spawn(move || {
                let mut writer = stream.try_clone().unwrap();
                let _ = std::io::copy(&mut stream, &mut writer);
            });
        }
    });
    address
}

/// Reads a head (up to the blank line) and what came after it.
pub(crate) fn read_head(stream: &mut impl Read) -> (String, Vec<u8>) {
    let mut buffer = Vec::new();
    let mut chunk = [0_u8; 4096];
    loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8(buffer[..at + 4].to_vec()).unwrap();
            return (head, buffer[at + 4..].to_vec());
        }
        let n = stream.read(&mut chunk).unwrap();
        assert!(n > 0, "the stream ended before a head: {:?}", String::from_utf8_lossy(&buffer));
        buffer.extend_from_slice(&chunk[..n]);
    }
}

/// A header's value in a head, by case-insensitive name.
pub(crate) fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim().to_owned())
    })
}

/// A stream to either kind of endpoint.
pub(crate) enum Client {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Client {
    pub(crate) fn connect(endpoint: &codecoder_netproxy::Endpoint) -> Client {
        match (endpoint.unix_path(), endpoint.tcp_address()) {
            (Some(path), _) => Client::Unix(UnixStream::connect(path).unwrap()),
            (None, Some(address)) => Client::Tcp(TcpStream::connect(address).unwrap()),
            (None, None) => unreachable!("an endpoint has an address"),
        }
    }

    pub(crate) fn shutdown_write(&self) {
        match self {
            Client::Unix(stream) => stream.shutdown(std::net::Shutdown::Write).unwrap(),
            Client::Tcp(stream) => stream.shutdown(std::net::Shutdown::Write).unwrap(),
        }
    }

    pub(crate) fn read_all(&mut self) -> String {
        let mut all = Vec::new();
        self.read_to_end(&mut all).unwrap();
        String::from_utf8_lossy(&all).into_owned()
    }
}

impl Read for Client {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Client::Unix(stream) => stream.read(buf),
            Client::Tcp(stream) => stream.read(buf),
        }
    }
}

impl Write for Client {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Client::Unix(stream) => stream.write(buf),
            Client::Tcp(stream) => stream.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Sends a CONNECT and returns the response head and any bytes after it.
pub(crate) fn connect_request(client: &mut Client, authority: &str) -> (String, Vec<u8>) {
    let request = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n");
    client.write_all(request.as_bytes()).unwrap();
    read_head(client)
}

/// Writes `message` and reads back as many bytes.
pub(crate) fn echo_round_trip(client: &mut Client, message: &[u8]) -> Vec<u8> {
    client.write_all(message).unwrap();
    let mut back = vec![0_u8; message.len()];
    client.read_exact(&mut back).unwrap();
    back
}

/// Waits (generously) until `condition` holds; fails the test if it never does.
pub(crate) fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !condition() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        thread::sleep(Duration::from_millis(5));
    }
}
