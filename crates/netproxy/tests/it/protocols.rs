//! Each protocol end to end: CONNECT tunnels, plain HTTP forwarding, SOCKS5, and the answers a
//! refused or unreachable host gets.

use std::io::{Read, Write};
use std::net::SocketAddr;

use codecoder_netproxy::{
    DecisionSource, DenyReason, Host, HttpRequest, NetworkEvent, Outcome, RequestKind,
};

use crate::support::Recorder;
use crate::support::{
    Answer, Client, connect_request, echo_round_trip, echo_server, header, http_server, proxy,
    read_head,
};
use codecoder_netproxy::Decision;

#[test]
fn an_allowed_connect_tunnels_bytes_both_ways_and_passes_on_the_end() {
    let echo = echo_server();
    let recorder = Recorder::new(Answer::Now(Decision::Deny));
    let handle = proxy(&["echo.test"], &[], &[("echo.test", echo)], &recorder);
    let endpoint = handle.endpoint("cmd-1").unwrap();
    let mut client = Client::connect(&endpoint);
    let (head, rest) = connect_request(&mut client, "echo.test:443");
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert!(rest.is_empty());
    assert_eq!(echo_round_trip(&mut client, b"ping"), b"ping");
    let big = vec![7_u8; 1 << 20];
    assert_eq!(echo_round_trip(&mut client, &big), big);
    // The client's end of input reaches the echo server, which closes: the tunnel ends.
    client.shutdown_write();
    assert_eq!(client.read_all(), "");
    assert_eq!(
        recorder.events(),
        vec![NetworkEvent {
            endpoint: "cmd-1".to_owned(),
            host: Host::Name("echo.test".to_owned()),
            port: 443,
            kind: RequestKind::Connect,
            request: None,
            outcome: Outcome::Allowed { source: DecisionSource::Policy },
        }]
    );
    assert_eq!(recorder.asks.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[test]
fn plain_http_is_forwarded_in_origin_form_without_hop_by_hop_headers() {
    let server = http_server();
    let recorder = Recorder::new(Answer::Now(Decision::Deny));
    let handle = proxy(&["web.test"], &[], &[("web.test", server)], &recorder);
    let endpoint = handle.tcp_endpoint("web_fetch").unwrap();
    let mut client = Client::connect(&endpoint);
    client
        .write_all(
            b"GET http://web.test/docs/page?q=1 HTTP/1.1\r\nHost: other.test\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive, X-Hop\r\nX-Hop: dropped\r\nX-Kept: kept\r\n\r\n",
        )
        .unwrap();
    let (head, mut rest) = read_head(&mut client);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert_eq!(header(&head, "connection").as_deref(), Some("close"));
    assert_eq!(header(&head, "keep-alive"), None);
    assert_eq!(header(&head, "x-server").as_deref(), Some("echo"));
    // The proxy closes after the response although the server keeps its connection open.
    client.read_to_end(&mut rest).unwrap();
    let received = String::from_utf8(rest).unwrap();
    assert!(received.starts_with("GET /docs/page?q=1 HTTP/1.1\r\n"), "{received}");
    assert_eq!(header(&received, "host").as_deref(), Some("web.test"));
    assert_eq!(header(&received, "x-kept").as_deref(), Some("kept"));
    assert_eq!(header(&received, "connection").as_deref(), Some("close"));
    for hop in ["proxy-connection", "x-hop", "keep-alive"] {
        assert_eq!(header(&received, hop), None, "{hop} was forwarded: {received}");
    }
    let events = recorder.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].endpoint, "web_fetch");
    assert_eq!(events[0].kind, RequestKind::Http);
    assert_eq!(
        events[0].request,
        Some(HttpRequest { method: "GET".to_owned(), path: "/docs/page?q=1".to_owned() })
    );
}

#[test]
fn a_plain_http_body_reaches_the_server() {
    let server = http_server();
    let recorder = Recorder::new(Answer::Now(Decision::Deny));
    let handle = proxy(&["POST web.test/upload"], &[], &[("web.test", server)], &recorder);
    let endpoint = handle.endpoint("cmd").unwrap();
    let mut client = Client::connect(&endpoint);
    client
        .write_all(b"POST http://web.test/upload HTTP/1.1\r\nHost: web.test\r\nContent-Length: 5\r\n\r\nhello")
        .unwrap();
    let response = client.read_all();
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    assert!(response.ends_with("\r\n\r\nhello"), "{response}");
    // The same host, another path: outside the rule, refused without asking.
    let mut client = Client::connect(&endpoint);
    client.write_all(b"GET http://web.test/upload HTTP/1.1\r\nHost: web.test\r\n\r\n").unwrap();
    let response = client.read_all();
    assert!(response.starts_with("HTTP/1.1 403 Forbidden"), "{response}");
    assert!(
        response.ends_with(
            "blocked by codecoder's network policy: GET web.test/upload is outside the paths and methods allowed for web.test\n"
        ),
        "{response}"
    );
}

#[test]
fn a_denied_host_gets_a_403_with_the_reason() {
    let recorder = Recorder::new(Answer::Now(Decision::AllowOnce));
    let handle = proxy(&["*.test"], &["evil.test"], &[], &recorder);
    let endpoint = handle.endpoint("cmd").unwrap();
    let mut client = Client::connect(&endpoint);
    let (head, body) = connect_request(&mut client, "evil.test:443");
    assert!(head.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{head}");
    assert_eq!(
        header(&head, "x-codecoder-network").as_deref(),
        Some("blocked; evil.test is denied (denied_domains: evil.test)")
    );
    let mut body = String::from_utf8(body).unwrap();
    body.push_str(&client.read_all());
    assert_eq!(
        body,
        "blocked by codecoder's network policy: evil.test is denied (denied_domains: evil.test)\n"
    );
    assert_eq!(recorder.asks.load(std::sync::atomic::Ordering::SeqCst), 0);
    let events = recorder.events();
    assert_eq!(
        events[0].outcome,
        Outcome::Denied {
            source: DecisionSource::Policy,
            reason: DenyReason::Denied {
                host: Host::Name("evil.test".to_owned()),
                rule: "evil.test".to_owned()
            },
        }
    );
}

#[test]
fn an_unlisted_ip_address_is_denied_without_asking() {
    let echo = echo_server();
    let recorder = Recorder::new(Answer::Now(Decision::AllowOnce));
    let handle = proxy(&["localhost"], &[], &[], &recorder);
    let endpoint = handle.endpoint("cmd").unwrap();
    let mut client = Client::connect(&endpoint);
    let (head, _) = connect_request(&mut client, &echo.to_string());
    assert!(head.starts_with("HTTP/1.1 403 "), "{head}");
    assert!(
        header(&head, "x-codecoder-network")
            .unwrap()
            .contains("127.0.0.1 is a bare IP address, reached only when listed"),
        "{head}"
    );
    assert_eq!(recorder.asks.load(std::sync::atomic::Ordering::SeqCst), 0);
    // Listed, the same address is reached.
    let listed = proxy(&["127.0.0.1"], &[], &[], &recorder);
    let endpoint = listed.endpoint("cmd").unwrap();
    let mut client = Client::connect(&endpoint);
    let (head, _) = connect_request(&mut client, &echo.to_string());
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert_eq!(echo_round_trip(&mut client, b"direct"), b"direct");
}

#[test]
fn an_allowed_name_that_cannot_be_reached_gets_a_502() {
    // A listener bound then closed: its port refuses connections.
    let closed: SocketAddr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let recorder = Recorder::new(Answer::Now(Decision::Deny));
    let handle = proxy(&["down.test"], &[], &[("down.test", closed)], &recorder);
    let endpoint = handle.endpoint("cmd").unwrap();
    let mut client = Client::connect(&endpoint);
    let (head, _) = connect_request(&mut client, "down.test:443");
    assert!(head.starts_with("HTTP/1.1 502 Bad Gateway\r\n"), "{head}");
    assert!(header(&head, "x-codecoder-network").unwrap().starts_with("unreachable; "));
    let events = recorder.events();
    assert_eq!(events.len(), 2);
    assert!(matches!(events[1].outcome, Outcome::Failed { .. }), "{events:?}");
}

/// A SOCKS5 handshake and CONNECT request; returns the reply's code.
pub(crate) fn socks5_connect(client: &mut Client, address: &[u8], port: u16) -> u8 {
    client.write_all(&[5, 1, 0]).unwrap();
    let mut choice = [0_u8; 2];
    client.read_exact(&mut choice).unwrap();
    assert_eq!(choice, [5, 0]);
    let mut request = vec![5, 1, 0];
    request.extend_from_slice(address);
    request.extend_from_slice(&port.to_be_bytes());
    client.write_all(&request).unwrap();
    let mut reply = [0_u8; 4];
    client.read_exact(&mut reply).unwrap();
    let rest = match reply[3] {
        1 => 6,
        4 => 18,
        other => panic!("address type {other}"),
    };
    let mut bound = vec![0_u8; rest];
    client.read_exact(&mut bound).unwrap();
    reply[1]
}

#[test]
fn socks5_connects_by_name_with_the_proxy_resolving_it() {
    let echo = echo_server();
    let recorder = Recorder::new(Answer::Now(Decision::Deny));
    let handle = proxy(&["git.test"], &[], &[("git.test", echo)], &recorder);
    let endpoint = handle.endpoint("git").unwrap();
    let mut client = Client::connect(&endpoint);
    let mut address = vec![3, 8];
    address.extend_from_slice(b"git.test");
    assert_eq!(socks5_connect(&mut client, &address, 22), 0);
    assert_eq!(echo_round_trip(&mut client, b"SSH-2.0-test\r\n"), b"SSH-2.0-test\r\n");
    assert_eq!(recorder.events()[0].kind, RequestKind::Socks5);
    assert_eq!(recorder.events()[0].port, 22);
}

#[test]
fn socks5_refuses_an_unlisted_address_and_a_denied_name() {
    let echo = echo_server();
    let recorder = Recorder::new(Answer::Now(Decision::AllowOnce));
    let handle = proxy(&[], &["evil.test"], &[], &recorder);
    let endpoint = handle.endpoint("cmd").unwrap();
    let mut client = Client::connect(&endpoint);
    let SocketAddr::V4(echo) = echo else { panic!("IPv4 echo server") };
    let mut address = vec![1];
    address.extend_from_slice(&echo.ip().octets());
    assert_eq!(socks5_connect(&mut client, &address, echo.port()), 2);
    let mut client = Client::connect(&endpoint);
    let mut address = vec![3, 9];
    address.extend_from_slice(b"evil.test");
    assert_eq!(socks5_connect(&mut client, &address, 443), 2);
    assert_eq!(recorder.asks.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[test]
fn an_origin_form_request_is_refused_with_a_hint() {
    let recorder = Recorder::new(Answer::Now(Decision::Deny));
    let handle = proxy(&[], &[], &[], &recorder);
    let endpoint = handle.endpoint("cmd").unwrap();
    let mut client = Client::connect(&endpoint);
    client.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let response = client.read_all();
    assert!(response.starts_with("HTTP/1.1 400 Bad Request"), "{response}");
    assert!(response.contains("send http:// URLs in absolute form"), "{response}");
}
