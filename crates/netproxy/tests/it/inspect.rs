//! TLS inspection: a tunnel to a host whose rules name paths or methods is terminated with a
//! leaf of the session's CA and each request inside is checked; a host without such rules is
//! tunnelled untouched. A loopback HTTPS server with a self-signed certificate (trusted through
//! the proxy's extra roots) stands in for the host.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread;

use codecoder_netproxy::{Decision, NetworkEvent, Outcome, RequestKind};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use crate::support::{Answer, Client, Recorder, connect_request, header, proxy_with, read_head};

/// A self-signed HTTPS server for `name`: answers each request with its method and path, and a
/// body of `size` bytes for `/big`. Returns its address and its certificate's PEM.
fn https_server(name: &str) -> (SocketAddr, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec![name.to_owned()]).unwrap();
    let certificate = params.self_signed(&key).unwrap();
    let pem = certificate.pem();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![certificate.der().clone()],
        PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).unwrap(),
    )
    .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let config = Arc::clone(&config);
            thread::spawn(move || {
                let connection = rustls::ServerConnection::new(config).unwrap();
                let mut tls = rustls::StreamOwned::new(connection, stream);
                let (head, mut rest) = read_head(&mut tls);
                let length = header(&head, "content-length").map_or(0, |v| v.parse().unwrap());
                while rest.len() < length {
                    let mut chunk = [0_u8; 4096];
                    let n = tls.read(&mut chunk).unwrap();
                    rest.extend_from_slice(&chunk[..n]);
                }
                let request_line = head.lines().next().unwrap_or("").to_owned();
                let body = format!("{request_line}\n{}", String::from_utf8_lossy(&rest));
                let response =
                    format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len());
                let _ = tls.write_all(response.as_bytes());
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    (address, pem)
}

/// TLS through an open tunnel, trusting only `root_pem`; the response to `request`.
fn tls_request(client: Client, name: &str, root_pem: &str, request: &str) -> String {
    let mut roots = rustls::RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(root_pem.as_bytes()) {
        roots.add(certificate.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let server_name = ServerName::try_from(name.to_owned()).unwrap();
    let connection = rustls::ClientConnection::new(Arc::new(config), server_name).unwrap();
    let mut tls = rustls::StreamOwned::new(connection, client);
    tls.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    // A peer closing without close_notify is an error after the data: keep what was read.
    let _ = tls.read_to_end(&mut response);
    String::from_utf8_lossy(&response).into_owned()
}

struct Fixture {
    handle: codecoder_netproxy::ProxyHandle,
    recorder: Arc<Recorder>,
    server_pem: String,
}

fn fixture() -> Fixture {
    let (inspected, server_pem) = https_server("secure.test");
    let (tunnelled, tunnelled_pem) = https_server("plain.test");
    let recorder = Recorder::new(Answer::Now(Decision::Deny));
    let roots = vec![server_pem.clone(), tunnelled_pem.clone()];
    let handle = proxy_with(
        &["GET secure.test/org/**", "plain.test"],
        &[],
        &[("secure.test", inspected), ("plain.test", tunnelled)],
        &recorder,
        |config| config.extra_roots_pem = roots,
    );
    Fixture { handle, recorder, server_pem: format!("{server_pem}{tunnelled_pem}") }
}

/// A tunnel through a fresh endpoint, which the proxy's drop closes.
fn open_tunnel(fixture: &Fixture, authority: &str) -> Client {
    let endpoint = fixture.handle.endpoint("cmd").unwrap();
    let mut client = Client::connect(&endpoint);
    let (head, _) = connect_request(&mut client, authority);
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    // Kept open for the test's life: dropping it would close the tunnel.
    Box::leak(Box::new(endpoint));
    client
}

#[test]
fn an_allowed_request_to_an_inspected_host_passes_through_a_leaf_of_the_session_ca() {
    let fixture = fixture();
    let ca = fixture.handle.ca_certificate_pem().unwrap().unwrap();
    assert!(ca.contains("BEGIN CERTIFICATE"));
    assert!(!ca.contains("PRIVATE KEY"));
    let client = open_tunnel(&fixture, "secure.test:443");
    // Only the session CA is trusted: the handshake proves the leaf is its.
    let response = tls_request(
        client,
        "secure.test",
        &ca,
        "GET /org/repo/info?x=1 HTTP/1.1\r\nHost: secure.test\r\n\r\n",
    );
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    assert!(response.contains("GET /org/repo/info?x=1 HTTP/1.1"), "{response}");
    let events = fixture.recorder.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].kind, RequestKind::Connect);
    assert_eq!(events[0].request.as_ref().unwrap().path, "/org/repo/info?x=1");
    assert!(matches!(events[0].outcome, Outcome::Allowed { .. }), "{events:?}");
}

#[test]
fn another_method_or_path_on_an_inspected_host_gets_a_403_with_the_reason() {
    let fixture = fixture();
    let ca = fixture.handle.ca_certificate_pem().unwrap().unwrap();
    let post = "POST /org/repo HTTP/1.1\r\nHost: secure.test\r\nContent-Length: 2\r\n\r\nhi";
    let response = tls_request(open_tunnel(&fixture, "secure.test:443"), "secure.test", &ca, post);
    assert!(response.starts_with("HTTP/1.1 403 "), "{response}");
    assert!(
        response.contains("POST secure.test/org/repo is outside the paths and methods allowed"),
        "{response}"
    );
    let other = "GET /elsewhere HTTP/1.1\r\nHost: secure.test\r\n\r\n";
    let response = tls_request(open_tunnel(&fixture, "secure.test:443"), "secure.test", &ca, other);
    assert!(response.starts_with("HTTP/1.1 403 "), "{response}");
    assert!(response.contains("GET secure.test/elsewhere is outside"), "{response}");
    let outcomes: Vec<bool> = fixture
        .recorder
        .events()
        .iter()
        .map(|event: &NetworkEvent| matches!(event.outcome, Outcome::Denied { .. }))
        .collect();
    assert_eq!(outcomes, vec![true, true]);
    assert_eq!(fixture.recorder.asks.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[test]
fn a_host_without_path_rules_is_tunnelled_with_its_own_certificate() {
    let fixture = fixture();
    // Trusting the servers' own certificates only: the proxy does not terminate this tunnel.
    let response = tls_request(
        open_tunnel(&fixture, "plain.test:443"),
        "plain.test",
        &fixture.server_pem,
        "GET /anything HTTP/1.1\r\nHost: plain.test\r\n\r\n",
    );
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    assert!(response.contains("GET /anything HTTP/1.1"), "{response}");
    let events = fixture.recorder.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].request, None);
}

#[test]
fn an_inspected_host_presenting_an_untrusted_certificate_is_a_502() {
    let (server, _) = https_server("secure.test");
    let recorder = Recorder::new(Answer::Now(Decision::Deny));
    let handle =
        proxy_with(&["GET secure.test/**"], &[], &[("secure.test", server)], &recorder, |_| {});
    let ca = handle.ca_certificate_pem().unwrap().unwrap();
    let endpoint = handle.endpoint("cmd").unwrap();
    let mut client = Client::connect(&endpoint);
    let (head, _) = connect_request(&mut client, "secure.test:443");
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    let response =
        tls_request(client, "secure.test", &ca, "GET / HTTP/1.1\r\nHost: secure.test\r\n\r\n");
    assert!(response.starts_with("HTTP/1.1 502 "), "{response}");
}

#[test]
fn a_policy_without_path_rules_has_no_ca() {
    let recorder = Recorder::new(Answer::Now(Decision::Deny));
    let handle = proxy_with(&["plain.test"], &[], &[], &recorder, |_| {});
    assert!(handle.ca_certificate_pem().is_none());
}

#[test]
fn an_allowed_address_of_the_proxys_own_listener_is_refused() {
    let recorder = Recorder::new(Answer::Now(Decision::Deny));
    let handle = proxy_with(&["127.0.0.1"], &[], &[], &recorder, |_| {});
    let tcp = handle.tcp_endpoint("cmd").unwrap();
    let own = tcp.tcp_address().unwrap();
    let mut client = Client::connect(&tcp);
    let (head, _) = connect_request(&mut client, &own.to_string());
    assert!(head.starts_with("HTTP/1.1 502 "), "{head}");
    assert!(head.contains("is the network proxy itself"), "{head}");
}

#[test]
fn the_ca_files_hold_the_certificate_alone_and_after_the_system_bundle_never_the_key() {
    let recorder = Recorder::new(Answer::Now(Decision::Deny));
    let handle = proxy_with(&["GET secure.test/**"], &[], &[], &recorder, |_| {});
    let ca = handle.ca_certificate_pem().unwrap().unwrap();
    let files = handle.ca_files().unwrap().unwrap();
    assert_eq!(handle.ca_files().unwrap().unwrap(), files);
    let certificate = fs_err::read_to_string(&files.certificate).unwrap();
    let bundle = fs_err::read_to_string(&files.bundle).unwrap();
    assert_eq!(certificate, ca);
    assert!(bundle.ends_with(&ca), "{bundle}");
    for text in [&certificate, &bundle] {
        assert!(!text.contains("PRIVATE KEY"));
    }
    let directory = files.certificate.parent().unwrap().to_owned();
    drop(handle);
    assert!(!directory.exists());
}

#[test]
fn a_socks5_tunnel_to_an_inspected_host_is_inspected_too() {
    let fixture = fixture();
    let ca = fixture.handle.ca_certificate_pem().unwrap().unwrap();
    let endpoint = fixture.handle.endpoint("cmd").unwrap();
    let mut client = Client::connect(&endpoint);
    let mut address = vec![3, 11];
    address.extend_from_slice(b"secure.test");
    assert_eq!(crate::protocols::socks5_connect(&mut client, &address, 443), 0);
    let response = tls_request(
        client,
        "secure.test",
        &ca,
        "DELETE /org/repo HTTP/1.1\r\nHost: secure.test\r\n\r\n",
    );
    assert!(response.starts_with("HTTP/1.1 403 "), "{response}");
    let events = fixture.recorder.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].kind, RequestKind::Socks5);
    assert_eq!(events[0].request.as_ref().unwrap().method, "DELETE");
}
