//! TLS inspection: a tunnel to a host whose rules name paths or methods is terminated by the
//! proxy with a leaf for that host signed by a per-session CA, each request inside is checked
//! against the rules like a plain-HTTP one, and an allowed request is forwarded to the host over
//! a TLS connection of the proxy's own (checked against the public roots and the configured
//! extra roots).
//!
//! Invariants: the CA's key lives in this process's memory only (it is never serialized; only
//! the certificate is handed out, by [`Authority::certificate_pem`]); the CA is generated the
//! first time it is needed and lives as long as the proxy; a leaf is issued once per host and
//! cached; both TLS sides offer HTTP/1.1 only; each inspected client connection carries one
//! request (`Connection: close` both ways), as the plain-HTTP path does.

use std::collections::HashMap;
use std::io::{self, BufRead, Read, Write};
use std::net::Shutdown;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, ServerConfig, ServerConnection};

use crate::conn::{
    HOP_BY_HOP, authorize, connect, connection_tokens, error_response, read_head, relay_response,
    report_failure,
};
use crate::policy::{Host, HttpRequest, RequestKind, Target};
use crate::server::{Connection, Stream};

/// The ALPN protocol both sides offer: the proxy parses HTTP/1.1 only.
const HTTP_1_1: &[u8] = b"http/1.1";

/// The session's inspection state: the CA (made when first needed) and the upstream TLS
/// configuration.
pub(crate) struct Inspection {
    extra_roots_pem: Vec<String>,
    authority: OnceLock<Result<Arc<Authority>, String>>,
    upstream: OnceLock<Result<Arc<ClientConfig>, String>>,
}

impl Inspection {
    pub(crate) fn new(extra_roots_pem: Vec<String>) -> Inspection {
        Inspection { extra_roots_pem, authority: OnceLock::new(), upstream: OnceLock::new() }
    }

    /// The session's CA, generated now if it is not yet.
    pub(crate) fn authority(&self) -> Result<&Arc<Authority>, String> {
        self.authority
            .get_or_init(|| Authority::generate().map(Arc::new))
            .as_ref()
            .map_err(Clone::clone)
    }

    fn upstream(&self) -> Result<&Arc<ClientConfig>, String> {
        self.upstream
            .get_or_init(|| upstream_config(&self.extra_roots_pem).map(Arc::new))
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// The per-session CA and the leaves it has issued.
pub(crate) struct Authority {
    issuer: Issuer<'static, KeyPair>,
    certificate_der: CertificateDer<'static>,
    certificate_pem: String,
    // Read and filled by the connection threads; held for map operations only (a leaf is
    // issued outside the lock; two threads issuing one host's leaf at once keep either).
    leaves: Mutex<HashMap<Host, Arc<ServerConfig>>>,
}

impl Authority {
    fn generate() -> Result<Authority, String> {
        let key = KeyPair::generate().map_err(|error| error.to_string())?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(|e| e.to_string())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.distinguished_name.push(DnType::CommonName, "codecoder session network CA");
        params.distinguished_name.push(DnType::OrganizationName, "codecoder");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let certificate = params.self_signed(&key).map_err(|error| error.to_string())?;
        Ok(Authority {
            certificate_der: certificate.der().clone(),
            certificate_pem: certificate.pem(),
            issuer: Issuer::new(params, key),
            leaves: Mutex::new(HashMap::new()),
        })
    }

    /// The CA's certificate in PEM (never its key).
    pub(crate) fn certificate_pem(&self) -> &str {
        &self.certificate_pem
    }

    /// The TLS server configuration presenting a leaf for `host`, issued now if it is not yet.
    fn server_config(&self, host: &Host) -> Result<Arc<ServerConfig>, String> {
        if let Some(config) = self.leaves.lock().unwrap_or_else(PoisonError::into_inner).get(host) {
            return Ok(Arc::clone(config));
        }
        let name = match host {
            Host::Name(name) => name.clone(),
            Host::Ip(ip) => ip.to_string(),
        };
        let key = KeyPair::generate().map_err(|error| error.to_string())?;
        let mut params = CertificateParams::new(vec![name.clone()]).map_err(|e| e.to_string())?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let leaf = params.signed_by(&key, &self.issuer).map_err(|error| error.to_string())?;
        let private_key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|error| error.to_string())?
            .with_no_client_auth()
            .with_single_cert(vec![leaf.der().clone(), self.certificate_der.clone()], private_key)
            .map_err(|error| error.to_string())?;
        config.alpn_protocols = vec![HTTP_1_1.to_vec()];
        let config = Arc::new(config);
        self.leaves
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(host.clone(), Arc::clone(&config));
        Ok(config)
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The proxy's TLS client: the public roots (webpki-roots, as ureq uses) and the extra roots.
fn upstream_config(extra_roots_pem: &[String]) -> Result<ClientConfig, String> {
    let mut roots = RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for pem in extra_roots_pem {
        for certificate in CertificateDer::pem_slice_iter(pem.as_bytes()) {
            let certificate = certificate.map_err(|error| error.to_string())?;
            roots.add(certificate).map_err(|error| error.to_string())?;
        }
    }
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|error| error.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![HTTP_1_1.to_vec()];
    Ok(config)
}

/// Serves an inspected tunnel to `host:port` whose client has been told the tunnel is open:
/// TLS with the session CA's leaf, then one request checked and forwarded, or refused with a
/// 403 naming the reason. `early` holds bytes the client sent after its CONNECT head.
pub(crate) fn serve(
    connection: &Connection,
    client: Stream,
    host: Host,
    port: u16,
    early: &[u8],
    kind: RequestKind,
) {
    let core = &connection.core;
    let server_config =
        match core.inspection.authority().and_then(|authority| authority.server_config(&host)) {
            Ok(config) => config,
            Err(_) => return,
        };
    let Ok(mut tls) = ServerConnection::new(server_config) else { return };
    let mut early = early;
    while !early.is_empty() {
        if tls.read_tls(&mut early).is_err() || tls.process_new_packets().is_err() {
            return;
        }
    }
    let mut client = rustls::StreamOwned::new(tls, client);
    let mut buffer = Vec::new();
    let Some(head_len) = read_head(&mut client, &mut buffer) else { return };
    let mut headers = [httparse::EMPTY_HEADER; 100];
    let mut request = httparse::Request::new(&mut headers);
    let (Ok(httparse::Status::Complete(_)), Some(method), Some(uri)) =
        (request.parse(&buffer[..head_len]), request.method, request.path)
    else {
        finish(
            &mut client,
            &error_response(400, "Bad Request", "bad-request", "the request head does not parse"),
        );
        return;
    };
    // Origin form as clients send it inside a tunnel; an absolute URL's path otherwise.
    let path = match uri.split_once("://") {
        Some((_, rest)) => match rest.find('/') {
            Some(at) => rest[at..].to_owned(),
            None => "/".to_owned(),
        },
        None => uri.to_owned(),
    };
    let method = method.to_ascii_uppercase();
    let target = Target {
        host: host.clone(),
        port,
        request: Some(HttpRequest { method: method.clone(), path: path.clone() }),
    };
    if let Err(reason) = authorize(connection, &target, kind) {
        let body = format!("blocked by codecoder's network policy: {reason}");
        finish(
            &mut client,
            &error_response(403, "Forbidden", &format!("blocked; {reason}"), &body),
        );
        return;
    }
    let upstream = match open_upstream(connection, &target) {
        Ok(upstream) => upstream,
        Err(error) => {
            report_failure(connection, &target, kind, &error);
            let body = format!("codecoder's network proxy could not reach {host}:{port}: {error}");
            finish(
                &mut client,
                &error_response(502, "Bad Gateway", &format!("unreachable; {error}"), &body),
            );
            return;
        }
    };
    let _ = client.sock.set_read_timeout(None);
    let mut upstream = upstream;
    let authority = match port {
        443 => host.to_string(),
        _ => format!("{host}:{port}"),
    };
    let version = if request.version == Some(0) { "1.0" } else { "1.1" };
    let mut head = format!("{method} {path} HTTP/{version}\r\nHost: {authority}\r\n");
    let dropped = connection_tokens(request.headers);
    let mut content_length: u64 = 0;
    let mut chunked = false;
    for header in request.headers.iter() {
        let name = header.name.to_ascii_lowercase();
        match name.as_str() {
            "content-length" => {
                content_length = std::str::from_utf8(header.value)
                    .ok()
                    .and_then(|value| value.trim().parse().ok())
                    .unwrap_or(0);
            }
            "transfer-encoding" => chunked = true,
            _ => {}
        }
        // The body is sent whole before the response is read: a 100 Continue is not waited for.
        if HOP_BY_HOP.contains(&name.as_str())
            || dropped.contains(&name)
            || name == "host"
            || name == "expect"
        {
            continue;
        }
        head.push_str(header.name);
        head.push_str(": ");
        head.push_str(&String::from_utf8_lossy(header.value));
        head.push_str("\r\n");
    }
    head.push_str("Connection: close\r\n\r\n");
    let leftover = buffer[head_len..].to_vec();
    let sent = upstream.write_all(head.as_bytes()).and_then(|()| {
        let mut body = io::Read::chain(&leftover[..], &mut client);
        match chunked {
            true => copy_chunked(&mut body, &mut upstream),
            false => copy_exact(&mut body.take(content_length), &mut upstream, content_length),
        }
    });
    if sent.is_ok() && upstream.flush().is_ok() {
        let _ = relay_response(&method, &mut upstream, &mut client);
    }
    client.conn.send_close_notify();
    let _ = client.flush();
    let _ = client.sock.shutdown(Shutdown::Both);
    let _ = upstream.sock.shutdown(Shutdown::Both);
}

/// Connects to the target and starts TLS with it, checking its certificate for the host.
fn open_upstream(
    connection: &Connection,
    target: &Target,
) -> io::Result<rustls::StreamOwned<ClientConnection, std::net::TcpStream>> {
    let config = connection.core.inspection.upstream().map_err(io::Error::other)?;
    let name = match &target.host {
        Host::Name(name) => ServerName::try_from(name.clone()).map_err(io::Error::other)?,
        Host::Ip(ip) => ServerName::IpAddress((*ip).into()),
    };
    let tcp = connect(connection, target)?;
    let tls = ClientConnection::new(Arc::clone(config), name).map_err(io::Error::other)?;
    let mut stream = rustls::StreamOwned::new(tls, tcp);
    // The handshake now, so a certificate the host cannot prove is a 502 before any byte of
    // the request leaves.
    while stream.conn.is_handshaking() {
        stream.conn.complete_io(&mut stream.sock)?;
    }
    Ok(stream)
}

/// Answers the client inside the tunnel and ends the TLS session.
fn finish(client: &mut rustls::StreamOwned<ServerConnection, Stream>, response: &str) {
    let _ = client.write_all(response.as_bytes());
    client.conn.send_close_notify();
    let _ = client.flush();
    let _ = client.sock.shutdown(Shutdown::Both);
}

/// Copies exactly `length` bytes; fewer (the client closed early) is an error.
fn copy_exact(from: &mut impl Read, to: &mut impl Write, length: u64) -> io::Result<()> {
    let copied = io::copy(from, to)?;
    match copied == length {
        true => Ok(()),
        false => Err(io::ErrorKind::UnexpectedEof.into()),
    }
}

/// Copies a chunked body as it is, through its last chunk and trailers.
fn copy_chunked(from: &mut impl Read, to: &mut impl Write) -> io::Result<()> {
    let mut from = io::BufReader::new(from);
    loop {
        let line = read_line(&mut from)?;
        to.write_all(&line)?;
        let size_text = String::from_utf8_lossy(&line);
        let size_text = size_text.trim().split(';').next().unwrap_or("").trim().to_owned();
        let size = u64::from_str_radix(&size_text, 16)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "chunk size"))?;
        if size == 0 {
            // Trailers, then the empty line.
            loop {
                let line = read_line(&mut from)?;
                to.write_all(&line)?;
                if line == b"\r\n" || line == b"\n" {
                    return Ok(());
                }
            }
        }
        copy_exact(&mut (&mut from).take(size + 2), to, size + 2)?;
    }
}

fn read_line(from: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    (&mut *from).take(4096).read_until(b'\n', &mut line)?;
    match line.ends_with(b"\n") {
        true => Ok(line),
        false => Err(io::Error::new(io::ErrorKind::InvalidData, "chunk line")),
    }
}
