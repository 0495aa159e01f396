//! Benchmark of a 10 MB download from a loopback server, direct against through the proxy's
//! CONNECT tunnel (over a unix endpoint, as a sandboxed command's relay reaches it, and over the
//! TCP endpoint). Prints medians and the ratio to direct; `cargo bench -p codecoder-netproxy`.
//!
//! The payload is plain bytes: TLS inside the tunnel costs the same direct and proxied (the
//! proxy does not look into a tunnel to a host without path rules), so leaving it out makes the
//! ratio the stricter one.
//!
//! Then the cost of TLS inspection: a 10 MB HTTPS download (a loopback server with a self-signed
//! certificate, trusted through the proxy's extra roots) through a plain tunnel against the
//! same download from a host whose rule names a path, whose tunnel the proxy terminates (TLS
//! to the client with the session CA's leaf, TLS again to the server, the response relayed
//! through user space). A new connection per download, handshakes included.
//!
//! Each case prints its median and its fastest run: on a busy machine the proxy's thread (a third
//! runnable thread besides the server's and the client's) waits for a core, which the median
//! shows and the fastest run mostly does not.
//!
//! Environment: `CODECODER_BENCH_RUNS` (downloads per case, default 30).
// A benchmark is an edge binary: it reports on stdout and unwraps.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codecoder_netproxy::{
    Ask, Decide, Decision, NetworkEvent, NetworkPolicy, Observe, ProxyConfig,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

const PAYLOAD: usize = 10 * 1024 * 1024;

struct Quiet;

impl Decide for Quiet {
    fn decide(&self, _ask: &Ask<'_>) -> Decision {
        Decision::Deny
    }
}

impl Observe for Quiet {
    fn observe(&self, _event: &NetworkEvent) {}
}

fn main() {
    let runs: usize =
        std::env::var("CODECODER_BENCH_RUNS").ok().and_then(|runs| runs.parse().ok()).unwrap_or(30);
    let server = download_server();
    let policy = NetworkPolicy::new(&["registry.bench".to_owned()], &[], &[]).unwrap();
    let mut config = ProxyConfig::standard(policy);
    config.name_overrides = HashMap::from([("registry.bench".to_owned(), server)]);
    let quiet = Arc::new(Quiet);
    let handle = codecoder_netproxy::start(config, quiet.clone(), quiet).unwrap();
    let unix = handle.endpoint("bench").unwrap();
    let tcp = handle.tcp_endpoint("bench").unwrap();
    let unix_path = unix.unix_path().unwrap().to_owned();
    let tcp_address = tcp.tcp_address().unwrap();

    let direct = median(runs, || download(TcpStream::connect(server).unwrap()));
    let through_unix = median(runs, || {
        let mut stream = UnixStream::connect(&unix_path).unwrap();
        open_tunnel(&mut stream);
        download(stream)
    });
    let through_tcp = median(runs, || {
        let mut stream = TcpStream::connect(tcp_address).unwrap();
        stream.set_nodelay(true).unwrap();
        open_tunnel(&mut stream);
        download(stream)
    });
    let ratio = |proxied: Duration, direct: Duration| proxied.as_secs_f64() / direct.as_secs_f64();
    println!("10 MB download from a loopback server, {runs} runs, median / fastest:");
    println!("  direct:                        {:?} / {:?}", direct.0, direct.1);
    for (name, (median, fastest)) in
        [("unix endpoint", through_unix), ("TCP endpoint ", through_tcp)]
    {
        println!(
            "  CONNECT tunnel, {name}: {median:?} ({:.2}x) / {fastest:?} ({:.2}x)",
            ratio(median, direct.0),
            ratio(fastest, direct.1)
        );
    }
    inspection(runs);
}

/// The HTTPS download tunnelled against inspected.
fn inspection(runs: usize) {
    let (server, server_pem) = https_server();
    let policy = NetworkPolicy::new(
        &["tunnel.bench".to_owned(), "GET inspected.bench/**".to_owned()],
        &[],
        &[],
    )
    .unwrap();
    let mut config = ProxyConfig::standard(policy);
    config.name_overrides = HashMap::from([
        ("tunnel.bench".to_owned(), server),
        ("inspected.bench".to_owned(), server),
    ]);
    config.extra_roots_pem = vec![server_pem.clone()];
    let quiet = Arc::new(Quiet);
    let handle = codecoder_netproxy::start(config, quiet.clone(), quiet).unwrap();
    let ca_pem = handle.ca_certificate_pem().unwrap().unwrap();
    let unix = handle.endpoint("bench").unwrap();
    let unix_path = unix.unix_path().unwrap().to_owned();
    let client_config = {
        let mut roots = rustls::RootCertStore::empty();
        for pem in [&server_pem, &ca_pem] {
            for certificate in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                roots.add(certificate.unwrap()).unwrap();
            }
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        Arc::new(config)
    };
    let https_download = |name: &str| {
        let mut stream = UnixStream::connect(&unix_path).unwrap();
        stream
            .write_all(
                format!("CONNECT {name}:443 HTTP/1.1\r\nHost: {name}:443\r\n\r\n").as_bytes(),
            )
            .unwrap();
        let mut head = Vec::new();
        let mut byte = [0_u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        assert!(head.starts_with(b"HTTP/1.1 200 "));
        let started = Instant::now();
        let server_name = ServerName::try_from(name.to_owned()).unwrap();
        let connection =
            rustls::ClientConnection::new(Arc::clone(&client_config), server_name).unwrap();
        let mut tls = rustls::StreamOwned::new(connection, stream);
        tls.write_all(format!("GET /file HTTP/1.1\r\nHost: {name}\r\n\r\n").as_bytes()).unwrap();
        let mut received = Vec::with_capacity(PAYLOAD + 1024);
        let _ = tls.read_to_end(&mut received);
        let elapsed = started.elapsed();
        assert!(received.len() > PAYLOAD, "{} bytes", received.len());
        elapsed
    };
    let tunnelled = median(runs, || https_download("tunnel.bench"));
    let inspected = median(runs, || https_download("inspected.bench"));
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    println!("10 MB HTTPS download through the unix endpoint, {runs} runs, median / fastest:");
    println!("  tunnelled: {:?} / {:?}", tunnelled.0, tunnelled.1);
    println!(
        "  inspected: {:?} ({:.2}x) / {:?} ({:.2}x)",
        inspected.0,
        ratio(inspected.0, tunnelled.0),
        inspected.1,
        ratio(inspected.1, tunnelled.1)
    );
}

/// A loopback HTTPS server for tunnel.bench and inspected.bench answering each request with
/// `PAYLOAD` bytes; its address and its certificate's PEM.
fn https_server() -> (SocketAddr, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let names = vec!["tunnel.bench".to_owned(), "inspected.bench".to_owned()];
    let certificate = rcgen::CertificateParams::new(names).unwrap().self_signed(&key).unwrap();
    let pem = certificate.pem();
    let key_der = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![certificate.der().clone()], key_der)
    .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let payload = vec![b'x'; PAYLOAD];
        for stream in listener.incoming() {
            let stream = stream.unwrap();
            let connection = rustls::ServerConnection::new(Arc::clone(&config)).unwrap();
            let mut tls = rustls::StreamOwned::new(connection, stream);
            let mut head = Vec::new();
            let mut byte = [0_u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                if tls.read(&mut byte).unwrap_or(0) == 0 {
                    break;
                }
                head.push(byte[0]);
            }
            let response = format!("HTTP/1.1 200 OK\r\nContent-Length: {PAYLOAD}\r\n\r\n");
            let _ = tls.write_all(response.as_bytes());
            let _ = tls.write_all(&payload);
            tls.conn.send_close_notify();
            let _ = tls.flush();
        }
    });
    (address, pem)
}

/// The median and the fastest of `runs` samples.
fn median(runs: usize, mut sample: impl FnMut() -> Duration) -> (Duration, Duration) {
    let mut samples: Vec<Duration> = (0..runs).map(|_| sample()).collect();
    samples.sort();
    (samples[samples.len() / 2], samples[0])
}

/// A server that answers each connection's one-line request with `PAYLOAD` bytes, then closes.
fn download_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let payload = vec![b'x'; PAYLOAD];
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut request = [0_u8; 4];
            stream.read_exact(&mut request).unwrap();
            stream.write_all(&payload).unwrap();
        }
    });
    address
}

fn open_tunnel(stream: &mut (impl Read + Write)) {
    stream
        .write_all(b"CONNECT registry.bench:443 HTTP/1.1\r\nHost: registry.bench:443\r\n\r\n")
        .unwrap();
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 200 "));
}

/// Times the request and the whole payload's arrival.
fn download(mut stream: impl Read + Write) -> Duration {
    let started = Instant::now();
    stream.write_all(b"GET\n").unwrap();
    let mut buffer = vec![0_u8; 256 * 1024];
    let mut total = 0;
    loop {
        let n = stream.read(&mut buffer).unwrap();
        if n == 0 {
            break;
        }
        total += n;
    }
    let elapsed = started.elapsed();
    assert_eq!(total, PAYLOAD);
    elapsed
}
