//! One client connection: tells HTTP from SOCKS5 by the first byte, decides, connects, then
//! tunnels (CONNECT, SOCKS5) or forwards one plain-HTTP request.
//!
//! Invariants: the client has `head_timeout` to send its head or handshake and no limit after;
//! a refused request gets a 403 (HTTP) or SOCKS5 code 2 and the reason in the 403's
//! `X-Codecoder-Network` header and body; a plain-HTTP request is forwarded in origin form with
//! the hop-by-hop headers dropped and `Connection: close` both ways, so each client connection
//! carries one request and then closes; every socket is registered with the endpoint so a stop
//! unblocks every read.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream, ToSocketAddrs};

use codecoder_stdx::spawn_named;

use crate::decide::{Ask, DecisionSource, NetworkEvent, Outcome};
use crate::policy::{DenyReason, Host, HttpRequest, RequestKind, Target, Verdict};
use crate::server::{Connection, Stream};

/// The largest request or response head read.
const MAX_HEAD: usize = 64 * 1024;
/// The copy buffer of a direction copied through user space.
const PUMP_BUFFER: usize = 64 * 1024;
/// The pipe a tunnel's direction splices through: larger than the default 64 KiB to move more
/// per call, small enough that a few dozen tunnels stay within the user's pipe quota
/// (`pipe-user-pages-soft`, 64 MiB), past which every new pipe of the user gets one page.
const PIPE_CAPACITY: i32 = 256 * 1024;
/// Headers that belong to one hop and are not forwarded.
pub(crate) const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "upgrade",
];

pub(crate) fn serve(connection: &Connection, mut client: Stream) {
    connection.live.add(&client);
    let _ = client.set_read_timeout(Some(connection.core.config.head_timeout));
    let mut first = [0_u8; 1];
    if client.read_exact(&mut first).is_err() {
        return;
    }
    match first[0] {
        5 => socks5(connection, client),
        _ => http(connection, client, first[0]),
    }
}

fn http(connection: &Connection, mut client: Stream, first: u8) {
    let mut buffer = vec![first];
    let Some(head_len) = read_head(&mut client, &mut buffer) else {
        reply(&mut client, 400, "Bad Request", "bad-request", "the request head is incomplete");
        return;
    };
    let mut headers = [httparse::EMPTY_HEADER; 100];
    let mut request = httparse::Request::new(&mut headers);
    let (Ok(httparse::Status::Complete(_)), Some(method), Some(uri)) =
        (request.parse(&buffer[..head_len]), request.method, request.path)
    else {
        reply(&mut client, 400, "Bad Request", "bad-request", "the request head does not parse");
        return;
    };
    let leftover = &buffer[head_len..];
    if method.eq_ignore_ascii_case("CONNECT") {
        let Some((host, port)) = parse_authority(uri, None) else {
            reply(&mut client, 400, "Bad Request", "bad-request", "CONNECT needs host:port");
            return;
        };
        if connection.core.config.policy.inspects(&host, port) {
            // The requests inside are checked one by one once TLS is terminated.
            if client.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").is_ok() {
                crate::inspect::serve(
                    connection,
                    client,
                    host,
                    port,
                    leftover,
                    RequestKind::Connect,
                );
            }
            return;
        }
        let target = Target { host, port, request: None };
        let Some(upstream) = open(connection, &mut client, &target, RequestKind::Connect) else {
            return;
        };
        let _ = client.set_read_timeout(None);
        if client.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").is_err() {
            return;
        }
        let mut upstream_writer = &upstream;
        if upstream_writer.write_all(leftover).is_err() {
            return;
        }
        tunnel(client, upstream);
        return;
    }
    let Some(rest) = strip_prefix_ignore_case(uri, "http://") else {
        reply(
            &mut client,
            400,
            "Bad Request",
            "bad-request",
            "this is a proxy: send http:// URLs in absolute form, or CONNECT for https",
        );
        return;
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(at) if rest[at..].starts_with('/') => (&rest[..at], rest[at..].to_owned()),
        Some(at) => (&rest[..at], format!("/{}", &rest[at..])),
        None => (rest, "/".to_owned()),
    };
    let Some((host, port)) = parse_authority(authority, Some(80)) else {
        reply(&mut client, 400, "Bad Request", "bad-request", "the URL's host does not parse");
        return;
    };
    let method = method.to_ascii_uppercase();
    let target = Target {
        host,
        port,
        request: Some(HttpRequest { method: method.clone(), path: path.clone() }),
    };
    let Some(upstream) = open(connection, &mut client, &target, RequestKind::Http) else {
        return;
    };
    let _ = client.set_read_timeout(None);
    let version = if request.version == Some(0) { "1.0" } else { "1.1" };
    let mut head = format!("{method} {path} HTTP/{version}\r\n");
    let dropped = connection_tokens(request.headers);
    // The URL's authority is the host asked for and decided on: a different `Host` header
    // from the client is replaced, as HTTP asks of a proxy.
    head.push_str(&format!("Host: {authority}\r\n"));
    for header in request.headers.iter() {
        let name = header.name.to_ascii_lowercase();
        if HOP_BY_HOP.contains(&name.as_str()) || dropped.contains(&name) || name == "host" {
            continue;
        }
        head.push_str(header.name);
        head.push_str(": ");
        head.push_str(&String::from_utf8_lossy(header.value));
        head.push_str("\r\n");
    }
    head.push_str("Connection: close\r\n\r\n");
    let mut upstream_writer = &upstream;
    if upstream_writer.write_all(head.as_bytes()).is_err()
        || upstream_writer.write_all(leftover).is_err()
    {
        return;
    }
    forward_response(&method, client, upstream);
}

/// Sends the request's body upstream on a second thread while the response comes back on this
/// one with its hop-by-hop headers replaced by `Connection: close`; ends both sockets when the
/// response ends.
fn forward_response(method: &str, client: Stream, upstream: TcpStream) {
    let (Ok(client_reader), Ok(upstream_writer)) = (client.try_clone(), upstream.try_clone())
    else {
        return;
    };
    let Ok(body) = spawn_named("netproxy-body", move || {
        let mut client_reader = client_reader;
        let _ = pump(&mut client_reader, &mut &upstream_writer);
    }) else {
        return;
    };
    let mut client = client;
    let mut upstream_reader = &upstream;
    let _ = relay_response(method, &mut upstream_reader, &mut client);
    let _ = client.shutdown(Shutdown::Both);
    let _ = upstream.shutdown(Shutdown::Both);
    drop(body);
}

pub(crate) fn relay_response(
    method: &str,
    upstream: &mut impl Read,
    client: &mut impl Write,
) -> io::Result<()> {
    let mut buffer = Vec::new();
    loop {
        let head_len = read_head(upstream, &mut buffer)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "response head"))?;
        let mut headers = [httparse::EMPTY_HEADER; 100];
        let mut response = httparse::Response::new(&mut headers);
        let Ok(httparse::Status::Complete(_)) = response.parse(&buffer[..head_len]) else {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "response head"));
        };
        let code = response.code.unwrap_or(502);
        if (100..200).contains(&code) && code != 101 {
            // An interim response (100 Continue) passes as is; the final head follows.
            client.write_all(&buffer[..head_len])?;
            buffer.drain(..head_len);
            continue;
        }
        let reason = response.reason.unwrap_or("");
        let version = if response.version == Some(0) { "1.0" } else { "1.1" };
        let mut head = format!("HTTP/{version} {code} {reason}\r\n");
        let dropped = connection_tokens(response.headers);
        let mut content_length = None;
        let mut chunked = false;
        for header in response.headers.iter() {
            let name = header.name.to_ascii_lowercase();
            match name.as_str() {
                "content-length" => {
                    content_length = std::str::from_utf8(header.value)
                        .ok()
                        .and_then(|value| value.trim().parse::<u64>().ok());
                }
                "transfer-encoding" => chunked = true,
                _ => {}
            }
            if HOP_BY_HOP.contains(&name.as_str()) || dropped.contains(&name) {
                continue;
            }
            head.push_str(header.name);
            head.push_str(": ");
            head.push_str(&String::from_utf8_lossy(header.value));
            head.push_str("\r\n");
        }
        head.push_str("Connection: close\r\n\r\n");
        client.write_all(head.as_bytes())?;
        // The body's end: none after HEAD, 204 and 304; the Content-Length when there is one
        // (a server may keep its side open despite `Connection: close`); else the server's
        // close, which `Connection: close` asked for.
        let body_length = match (method == "HEAD" || code == 204 || code == 304, chunked) {
            (true, _) => Some(0),
            (false, true) => None,
            (false, false) => content_length,
        };
        let buffered = &buffer[head_len..];
        return match body_length {
            None => {
                client.write_all(buffered)?;
                pump(upstream, client)
            }
            Some(length) => {
                let now = buffered.len().min(usize::try_from(length).unwrap_or(usize::MAX));
                client.write_all(&buffered[..now])?;
                let remaining = length.saturating_sub(u64::try_from(now).unwrap_or(length));
                pump(&mut upstream.take(remaining), client)
            }
        };
    }
}

/// The header names a `Connection` header lists, lower case: hop-by-hop too.
pub(crate) fn connection_tokens(headers: &[httparse::Header<'_>]) -> Vec<String> {
    headers
        .iter()
        .filter(|header| header.name.eq_ignore_ascii_case("connection"))
        .flat_map(|header| {
            String::from_utf8_lossy(header.value)
                .split(',')
                .map(|token| token.trim().to_ascii_lowercase())
                .collect::<Vec<_>>()
        })
        .collect()
}

fn socks5(connection: &Connection, mut client: Stream) {
    const GRANTED: u8 = 0;
    const FAILURE: u8 = 1;
    const NOT_ALLOWED: u8 = 2;
    const HOST_UNREACHABLE: u8 = 4;
    const REFUSED: u8 = 5;
    const COMMAND_UNSUPPORTED: u8 = 7;
    const ADDRESS_UNSUPPORTED: u8 = 8;
    let reply_code = |client: &mut Stream, code: u8, bound: Option<SocketAddr>| {
        let mut reply = vec![5, code, 0];
        match bound {
            Some(SocketAddr::V6(address)) => {
                reply.push(4);
                reply.extend_from_slice(&address.ip().octets());
                reply.extend_from_slice(&address.port().to_be_bytes());
            }
            Some(SocketAddr::V4(address)) => {
                reply.push(1);
                reply.extend_from_slice(&address.ip().octets());
                reply.extend_from_slice(&address.port().to_be_bytes());
            }
            None => reply.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0]),
        }
        client.write_all(&reply)
    };
    let mut count = [0_u8; 1];
    if client.read_exact(&mut count).is_err() {
        return;
    }
    let mut methods = vec![0_u8; usize::from(count[0])];
    if client.read_exact(&mut methods).is_err() {
        return;
    }
    // Only "no authentication": the endpoint itself is the credential.
    if !methods.contains(&0) {
        let _ = client.write_all(&[5, 0xff]);
        return;
    }
    if client.write_all(&[5, 0]).is_err() {
        return;
    }
    let mut request = [0_u8; 4];
    if client.read_exact(&mut request).is_err() || request[0] != 5 {
        return;
    }
    let host = match request[3] {
        1 => {
            let mut octets = [0_u8; 4];
            if client.read_exact(&mut octets).is_err() {
                return;
            }
            Host::Ip(IpAddr::from(octets))
        }
        3 => {
            let mut length = [0_u8; 1];
            if client.read_exact(&mut length).is_err() {
                return;
            }
            let mut name = vec![0_u8; usize::from(length[0])];
            if client.read_exact(&mut name).is_err() {
                return;
            }
            let name = String::from_utf8_lossy(&name).into_owned();
            match Host::parse(&name) {
                Some(host) => host,
                None => {
                    let _ = reply_code(&mut client, NOT_ALLOWED, None);
                    return;
                }
            }
        }
        4 => {
            let mut octets = [0_u8; 16];
            if client.read_exact(&mut octets).is_err() {
                return;
            }
            Host::Ip(IpAddr::from(octets))
        }
        _ => {
            let _ = reply_code(&mut client, ADDRESS_UNSUPPORTED, None);
            return;
        }
    };
    let mut port = [0_u8; 2];
    if client.read_exact(&mut port).is_err() {
        return;
    }
    if request[1] != 1 {
        let _ = reply_code(&mut client, COMMAND_UNSUPPORTED, None);
        return;
    }
    let port = u16::from_be_bytes(port);
    if connection.core.config.policy.inspects(&host, port) {
        // Granted before any request is seen: each is checked inside the terminated TLS.
        if reply_code(&mut client, GRANTED, None).is_ok() {
            crate::inspect::serve(connection, client, host, port, &[], RequestKind::Socks5);
        }
        return;
    }
    let target = Target { host, port, request: None };
    if authorize(connection, &target, RequestKind::Socks5).is_err() {
        let _ = reply_code(&mut client, NOT_ALLOWED, None);
        return;
    }
    let upstream = match connect(connection, &target) {
        Ok(upstream) => upstream,
        Err(error) => {
            report_failure(connection, &target, RequestKind::Socks5, &error);
            let code = match error.kind() {
                io::ErrorKind::ConnectionRefused => REFUSED,
                io::ErrorKind::NotFound
                | io::ErrorKind::TimedOut
                | io::ErrorKind::HostUnreachable
                | io::ErrorKind::NetworkUnreachable => HOST_UNREACHABLE,
                _ => FAILURE,
            };
            let _ = reply_code(&mut client, code, None);
            return;
        }
    };
    let bound = upstream.local_addr().ok();
    if reply_code(&mut client, GRANTED, bound).is_err() {
        return;
    }
    let _ = client.set_read_timeout(None);
    tunnel(client, upstream);
}

/// Decides a target and connects to it; on a refusal or a failure, answers the HTTP client and
/// returns `None`.
fn open(
    connection: &Connection,
    client: &mut Stream,
    target: &Target,
    kind: RequestKind,
) -> Option<TcpStream> {
    if let Err(reason) = authorize(connection, target, kind) {
        let body = format!("blocked by codecoder's network policy: {reason}");
        reply(client, 403, "Forbidden", &format!("blocked; {reason}"), &body);
        return None;
    }
    match connect(connection, target) {
        Ok(upstream) => Some(upstream),
        Err(error) => {
            report_failure(connection, target, kind, &error);
            let body = format!(
                "codecoder's network proxy could not connect to {}:{}: {error}",
                target.host, target.port
            );
            reply(client, 502, "Bad Gateway", &format!("unreachable; {error}"), &body);
            None
        }
    }
}

/// The policy's verdict, else the session's memory or the caller's answer; reports it.
pub(crate) fn authorize(
    connection: &Connection,
    target: &Target,
    kind: RequestKind,
) -> Result<(), DenyReason> {
    let core = &connection.core;
    let (result, source) = match core.config.policy.check(target) {
        Verdict::Allow => (Ok(()), DecisionSource::Policy),
        Verdict::Deny(reason) => (Err(reason), DecisionSource::Policy),
        Verdict::Ask => {
            let ask = Ask {
                host: &target.host,
                port: target.port,
                kind,
                endpoint: &connection.label,
                stopped: &connection.stopped,
            };
            let (allowed, source) = core.asks.resolve(&ask);
            match allowed {
                true => (Ok(()), source),
                false => (Err(DenyReason::Declined { host: target.host.clone() }), source),
            }
        }
    };
    let outcome = match &result {
        Ok(()) => Outcome::Allowed { source },
        Err(reason) => Outcome::Denied { source, reason: reason.clone() },
    };
    report(connection, target, kind, outcome);
    result
}

pub(crate) fn report_failure(
    connection: &Connection,
    target: &Target,
    kind: RequestKind,
    error: &io::Error,
) {
    report(connection, target, kind, Outcome::Failed { error: error.to_string() });
}

fn report(connection: &Connection, target: &Target, kind: RequestKind, outcome: Outcome) {
    connection.core.observe.observe(&NetworkEvent {
        endpoint: connection.label.to_string(),
        host: target.host.clone(),
        port: target.port,
        kind,
        request: target.request.clone(),
        outcome,
    });
}

/// Connects to the target: an override's address, the address itself, or each address the
/// system resolver gives for the name in turn.
pub(crate) fn connect(connection: &Connection, target: &Target) -> io::Result<TcpStream> {
    let config = &connection.core.config;
    let addresses: Vec<SocketAddr> = match &target.host {
        Host::Name(name) => match config.name_overrides.get(name) {
            Some(address) => vec![*address],
            None => (name.as_str(), target.port).to_socket_addrs()?.collect(),
        },
        Host::Ip(ip) => vec![SocketAddr::new(*ip, target.port)],
    };
    let mut last_error = io::Error::new(io::ErrorKind::NotFound, "the name has no address");
    for address in addresses {
        // An allowed name resolving to loopback must not reach the proxy's own listeners: a
        // request would loop through the proxy. Other local services are reached by design.
        if (address.ip().is_loopback() || address.ip().is_unspecified())
            && connection.core.is_own_port(address.port())
        {
            last_error = io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{address} is the network proxy itself"),
            );
            continue;
        }
        match TcpStream::connect_timeout(&address, config.connect_timeout) {
            Ok(stream) => {
                let _ = stream.set_nodelay(true);
                connection.live.add(&Stream::Tcp(stream.try_clone()?));
                return Ok(stream);
            }
            Err(error) => last_error = error,
        }
    }
    Err(last_error)
}

/// Copies both ways until both sides have finished sending, passing each end of input on as a
/// half-close.
fn tunnel(client: Stream, upstream: TcpStream) {
    let (Ok(mut client_reader), Ok(upstream_writer)) = (client.try_clone(), upstream.try_clone())
    else {
        return;
    };
    let Ok(outbound) = spawn_named("netproxy-pump", move || {
        match splice_pump(&mut client_reader, &mut &upstream_writer) {
            Ok(()) => {
                let _ = upstream_writer.shutdown(Shutdown::Write);
            }
            Err(_) => {
                let _ = upstream_writer.shutdown(Shutdown::Both);
                let _ = client_reader.shutdown(Shutdown::Both);
            }
        }
    }) else {
        return;
    };
    let mut client = client;
    match splice_pump(&mut &upstream, &mut client) {
        Ok(()) => {
            let _ = client.shutdown(Shutdown::Write);
        }
        Err(_) => {
            let _ = client.shutdown(Shutdown::Both);
            let _ = upstream.shutdown(Shutdown::Both);
        }
    }
    drop(outbound);
}

/// Copies until the end of input, in the kernel (splice through a pipe) where it can, else
/// through a buffer.
fn splice_pump<R, W>(from: &mut R, to: &mut W) -> io::Result<()>
where
    R: Read + std::os::fd::AsFd,
    W: Write + std::os::fd::AsFd,
{
    use nix::errno::Errno;
    use nix::fcntl::{FcntlArg, OFlag, SpliceFFlags, fcntl, splice};

    let Ok((pipe_out, pipe_in)) = nix::unistd::pipe2(OFlag::O_CLOEXEC) else {
        return pump(from, to);
    };
    // A larger pipe moves more per call; the default (64 KiB) stands if the system refuses.
    let capacity = fcntl(&pipe_in, FcntlArg::F_SETPIPE_SZ(PIPE_CAPACITY))
        .ok()
        .and_then(|size| usize::try_from(size).ok())
        .unwrap_or(PUMP_BUFFER);
    let flags = SpliceFFlags::SPLICE_F_MOVE;
    let mut first = true;
    loop {
        let n = match splice(&*from, None, &pipe_in, None, capacity, flags) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(Errno::EINTR) => continue,
            // A socket splice does not take: copy through user space instead.
            Err(Errno::EINVAL) if first => return pump(from, to),
            Err(errno) => return Err(io::Error::from(errno)),
        };
        first = false;
        let mut left = n;
        while left > 0 {
            match splice(&pipe_out, None, &*to, None, left, flags) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(moved) => left -= moved,
                Err(Errno::EINTR) => {}
                Err(errno) => return Err(io::Error::from(errno)),
            }
        }
    }
}

/// Copies until the end of input.
fn pump(from: &mut impl Read, to: &mut impl Write) -> io::Result<()> {
    let mut buffer = vec![0_u8; PUMP_BUFFER];
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        to.write_all(&buffer[..n])?;
    }
}

/// Reads until the buffer holds a whole head; its length, or `None` at the end of input, an
/// error or `MAX_HEAD` bytes without one.
pub(crate) fn read_head(stream: &mut impl Read, buffer: &mut Vec<u8>) -> Option<usize> {
    let mut searched: usize = 0;
    let mut chunk = [0_u8; 4096];
    loop {
        let start = searched.saturating_sub(3);
        if let Some(at) = buffer[start..].windows(4).position(|window| window == b"\r\n\r\n") {
            return Some(start + at + 4);
        }
        searched = buffer.len();
        if buffer.len() >= MAX_HEAD {
            return None;
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

/// `host[:port]` (`[v6][:port]`) into a host and a port; `default_port` when none is given, and
/// `None` when a port is needed (CONNECT) and missing, or when it carries user information.
pub(crate) fn parse_authority(authority: &str, default_port: Option<u16>) -> Option<(Host, u16)> {
    if authority.contains('@') {
        return None;
    }
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':')?.parse().ok()?),
        };
        (Host::Ip(IpAddr::V6(inside.parse().ok()?)), port)
    } else {
        let (host, port) = match authority.split_once(':') {
            Some((host, port)) => (host, Some(port.parse().ok()?)),
            None => (authority, None),
        };
        (Host::parse(host)?, port)
    };
    Some((host, port.or(default_port)?))
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &text[prefix.len()..])
}

/// Answers an HTTP client with an error and closes.
fn reply(client: &mut Stream, code: u16, phrase: &str, header: &str, body: &str) {
    let _ = client.write_all(error_response(code, phrase, header, body).as_bytes());
    let _ = client.shutdown(Shutdown::Write);
}

/// An error response: the reason in `X-Codecoder-Network` (printable ASCII) and in the body.
pub(crate) fn error_response(code: u16, phrase: &str, header: &str, body: &str) -> String {
    let header: String = header
        .chars()
        .map(|c| match c {
            ' '..='~' => c,
            _ => '?',
        })
        .collect();
    let body = format!("{body}\n");
    format!(
        "HTTP/1.1 {code} {phrase}\r\nX-Codecoder-Network: {header}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}
