//! Unit tests of the listener's checks (Origin, Host, auth, the upgrade's headers), the
//! capability token and the signed bearer token, HMAC-SHA256 against RFC 4231, the frame
//! reader's lines, and the frame writer dropping a client that does not read.

use std::io::BufRead;
use std::net::SocketAddr;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::auth::{hmac_sha256, sha256};
use super::conn::{FrameReader, FrameWriter, Outgoing};
use super::{Verdict, WsAuth, decide, host_allowed, http};

const TOKEN: &str = "0123456789abcdef0123456789abcdef-token";
const NOW: u64 = 1_800_000_000;

fn local() -> Option<SocketAddr> {
    Some("127.0.0.1:4500".parse().unwrap())
}

fn request(headers: &[(&str, &str)]) -> http::Request {
    let mut head = String::from("GET / HTTP/1.1\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    http::parse(head.as_bytes()).unwrap()
}

fn upgrade_headers() -> Vec<(&'static str, &'static str)> {
    vec![
        ("Host", "127.0.0.1:4500"),
        ("Upgrade", "websocket"),
        ("Connection", "keep-alive, Upgrade"),
        ("Sec-WebSocket-Version", "13"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ]
}

fn with(extra: &[(&'static str, &'static str)]) -> http::Request {
    let mut headers = upgrade_headers();
    headers.extend_from_slice(extra);
    request(&headers)
}

fn status(verdict: &Verdict) -> u16 {
    match verdict {
        Verdict::Health => 200,
        Verdict::Upgrade { .. } => 101,
        Verdict::Refused { status, .. } => *status,
    }
}

fn token_auth() -> WsAuth {
    WsAuth::CapabilityToken { sha256: sha256(TOKEN.as_bytes()) }
}

#[test]
fn an_upgrade_on_loopback_without_auth_is_accepted_for_anyone() {
    assert_eq!(
        decide(&with(&[]), local(), &WsAuth::None, NOW),
        Verdict::Upgrade { who: "anonymous".into(), key: "dGhlIHNhbXBsZSBub25jZQ==".into() }
    );
}

#[test]
fn any_origin_is_refused_even_on_health_probes() {
    let verdict =
        decide(&with(&[("Origin", "http://127.0.0.1:4500")]), local(), &WsAuth::None, NOW);
    assert_eq!(status(&verdict), 403);
    let probe = request(&[("Host", "localhost:4500"), ("Origin", "null")]);
    assert_eq!(status(&decide(&probe, local(), &WsAuth::None, NOW)), 403);
}

#[test]
fn health_probes_answer_without_auth() {
    for path in ["/readyz", "/healthz"] {
        let head = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:4500\r\n\r\n");
        let probe = http::parse(head.as_bytes()).unwrap();
        assert_eq!(decide(&probe, local(), &token_auth(), NOW), Verdict::Health);
    }
    let other = request(&[("Host", "127.0.0.1:4500")]);
    assert_eq!(status(&decide(&other, local(), &WsAuth::None, NOW)), 404);
}

#[test]
fn hosts_other_than_the_bound_address_or_localhost_are_refused() {
    let bound = local().unwrap();
    for host in ["127.0.0.1:4500", "localhost:4500", "LOCALHOST", "127.0.0.1", "[::1]:4500"] {
        assert!(host_allowed(host, bound), "{host}");
    }
    for host in ["evil.example:4500", "evil.example", "127.0.0.1:80", "10.0.0.1:4500", "[::1"] {
        assert!(!host_allowed(host, bound), "{host}");
    }
    let all: SocketAddr = "0.0.0.0:4500".parse().unwrap();
    assert!(host_allowed("192.0.2.7:4500", all));
    assert!(!host_allowed("rebind.example:4500", all));
    assert!(!host_allowed("localhost:4500", all));
    let mut headers = upgrade_headers();
    headers[0] = ("Host", "evil.example:4500");
    assert_eq!(status(&decide(&request(&headers), local(), &WsAuth::None, NOW)), 403);
    headers.remove(0);
    assert_eq!(status(&decide(&request(&headers), local(), &WsAuth::None, NOW)), 403);
    // On a unix socket no browser can connect: the Host is not checked.
    assert_eq!(status(&decide(&request(&headers), None, &WsAuth::None, NOW)), 101);
}

#[test]
fn a_capability_token_is_required_and_compared() {
    let auth = token_auth();
    assert_eq!(status(&decide(&with(&[]), local(), &auth, NOW)), 401);
    let right = format!("Bearer {TOKEN}");
    let right: &'static str = Box::leak(right.into_boxed_str());
    assert_eq!(
        decide(&with(&[("Authorization", right)]), local(), &auth, NOW),
        Verdict::Upgrade { who: "capability-token".into(), key: "dGhlIHNhbXBsZSBub25jZQ==".into() }
    );
    let wrong = "Bearer 0123456789abcdef0123456789abcdef-other";
    assert_eq!(
        decide(&with(&[("Authorization", wrong)]), local(), &auth, NOW),
        Verdict::Refused { status: 401, why: "wrong token".into() }
    );
    assert_eq!(
        decide(&with(&[("Authorization", "Bearer short")]), local(), &auth, NOW),
        Verdict::Refused { status: 401, why: "token too short".into() }
    );
    assert_eq!(status(&decide(&with(&[("Authorization", "Basic abc")]), local(), &auth, NOW)), 401);
}

#[test]
fn the_token_is_given_as_a_file_or_its_sha256_and_short_ones_are_refused() {
    let dir = tempfile_dir();
    let file = dir.join("token");
    fs_err::write(&file, format!("{TOKEN}\n")).unwrap();
    let from_file = WsAuth::token_file(&file).unwrap();
    let hex: String = sha256(TOKEN.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    let from_hex = WsAuth::token_sha256(&hex.to_uppercase()).unwrap();
    for auth in [from_file, from_hex] {
        let WsAuth::CapabilityToken { sha256: digest } = auth else { panic!("{auth:?}") };
        assert_eq!(digest, sha256(TOKEN.as_bytes()));
    }
    fs_err::write(&file, "too-short\n").unwrap();
    let err = WsAuth::token_file(&file).unwrap_err();
    assert!(err.to_string().contains("shorter than 32 bytes"), "{err}");
    assert!(WsAuth::token_sha256("abcd").is_err());
    assert!(WsAuth::token_sha256(&"g".repeat(64)).is_err());
    let _ = fs_err::remove_dir_all(&dir);
}

#[test]
fn an_upgrade_must_be_websocket_13_with_a_key() {
    let mut headers = upgrade_headers();
    headers[3] = ("Sec-WebSocket-Version", "8");
    assert_eq!(status(&decide(&request(&headers), local(), &WsAuth::None, NOW)), 426);
    let mut headers = upgrade_headers();
    headers.pop();
    assert_eq!(status(&decide(&request(&headers), local(), &WsAuth::None, NOW)), 400);
    let mut headers = upgrade_headers();
    headers[2] = ("Connection", "keep-alive");
    assert_eq!(status(&decide(&request(&headers), local(), &WsAuth::None, NOW)), 400);
}

#[test]
fn hmac_sha256_matches_rfc_4231() {
    let hex = |bytes: [u8; 32]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    assert_eq!(
        hex(hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
    // Test case 6: a key longer than the block is hashed first.
    assert_eq!(
        hex(hmac_sha256(&[0xaa; 131], b"Test Using Larger Than Block-Size Key - Hash Key First")),
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
    );
}

const SECRET: &str = "a shared secret of at least thirty-two bytes";

fn jwt(claims: &serde_json::Value, secret: &str) -> String {
    let header = URL_SAFE_NO_PAD.encode(json!({"alg": "HS256", "typ": "JWT"}).to_string());
    let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signed = format!("{header}.{claims}");
    let signature = URL_SAFE_NO_PAD.encode(hmac_sha256(secret.as_bytes(), signed.as_bytes()));
    format!("{signed}.{signature}")
}

fn bearer_auth() -> WsAuth {
    let dir = tempfile_dir();
    let file = dir.join("secret");
    fs_err::write(&file, SECRET).unwrap();
    let auth =
        WsAuth::signed_bearer(&file, Some("issuer".into()), Some("codecoder".into()), 30).unwrap();
    let _ = fs_err::remove_dir_all(&dir);
    auth
}

fn check_jwt(auth: &WsAuth, token: &str) -> Result<String, String> {
    auth.check(Some(&format!("Bearer {token}")), NOW)
}

#[test]
fn a_signed_bearer_token_is_checked_for_signature_time_issuer_and_audience() {
    let auth = bearer_auth();
    let good =
        json!({"sub": "ci", "iss": "issuer", "aud": ["other", "codecoder"], "exp": NOW + 60});
    assert_eq!(check_jwt(&auth, &jwt(&good, SECRET)), Ok("sub=ci".into()));
    // Within the skew allowance.
    let late = json!({"iss": "issuer", "aud": "codecoder", "exp": NOW - 20});
    assert_eq!(check_jwt(&auth, &jwt(&late, SECRET)), Ok("signed-bearer-token".into()));
    let cases = [
        (json!({"iss": "issuer", "aud": "codecoder", "exp": NOW - 31}), "the JWT has expired"),
        (json!({"iss": "issuer", "aud": "codecoder"}), "the JWT has no exp"),
        (
            json!({"iss": "issuer", "aud": "codecoder", "exp": NOW + 600, "nbf": NOW + 60}),
            "the JWT is not valid yet",
        ),
        (
            json!({"iss": "someone", "aud": "codecoder", "exp": NOW + 60}),
            "the JWT's issuer is not the expected one",
        ),
        (
            json!({"iss": "issuer", "aud": "elsewhere", "exp": NOW + 60}),
            "the JWT's audience is not the expected one",
        ),
    ];
    for (claims, why) in cases {
        assert_eq!(check_jwt(&auth, &jwt(&claims, SECRET)), Err(why.into()), "{claims}");
    }
    let forged = jwt(&good, "another secret of at least thirty-two bytes");
    assert_eq!(check_jwt(&auth, &forged), Err("bad JWT signature".into()));
    let none_alg = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(json!({"alg": "none"}).to_string()),
        URL_SAFE_NO_PAD.encode(good.to_string())
    );
    assert_eq!(check_jwt(&auth, &none_alg), Err("the JWT is not signed with HS256".into()));
    assert_eq!(check_jwt(&auth, "not-a-jwt"), Err("not a JWT".into()));
    let debug = format!("{auth:?}");
    assert!(!debug.contains("shared secret"), "{debug}");
}

#[test]
fn each_text_frame_is_one_line_for_the_server() {
    let (tx, rx) = crossbeam_channel::bounded(4);
    tx.send(b"{\"id\":1}\n".to_vec()).unwrap();
    tx.send(b"{\"id\":2}\n".to_vec()).unwrap();
    drop(tx);
    let lines: Vec<String> = FrameReader::new(rx).lines().map(Result::unwrap).collect();
    assert_eq!(lines, ["{\"id\":1}", "{\"id\":2}"]);
}

#[test]
fn a_head_is_split_from_the_bytes_after_it() {
    let bytes = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n\x81\x00".to_vec();
    let (head, rest) = http::read_head(&mut bytes.as_slice()).unwrap().unwrap();
    assert!(head.ends_with(b"\r\n\r\n"));
    assert_eq!(rest, b"\x81\x00");
    assert!(http::read_head(&mut &b"GET / HTTP/1.1\r\n"[..]).unwrap().is_none());
    assert!(http::parse(b"GET / SPDY/3\r\n\r\n").is_none());
}

#[test]
fn a_client_whose_queue_is_full_is_dropped() {
    use std::io::{Read, Write};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server_side, _) = listener.accept().unwrap();
    let (tx, rx) = crossbeam_channel::bounded(2);
    let not_reading = Arc::new(AtomicBool::new(false));
    let mut writer = FrameWriter::new(tx, server_side, Arc::clone(&not_reading));
    // Lines written in pieces are whole frames.
    writer.write_all(b"{\"a\":").unwrap();
    writer.write_all(b"1}\n{\"b\":2}\n").unwrap();
    let texts: Vec<String> = rx
        .try_iter()
        .map(|o| match o {
            Outgoing::Text(text) => text,
            Outgoing::Raw(_) => panic!("raw bytes"),
        })
        .collect();
    assert_eq!(texts, ["{\"a\":1}", "{\"b\":2}"]);
    writer.write_all(b"{\"c\":3}\n{\"d\":4}\n").unwrap();
    assert!(!not_reading.load(Ordering::SeqCst));
    // The queue holds two: the third is one too many.
    let err = writer.write_all(b"{\"e\":5}\n").unwrap_err();
    assert!(err.to_string().contains("not reading"), "{err}");
    assert!(not_reading.load(Ordering::SeqCst));
    // The socket was shut down: the client reads its end.
    let mut rest = Vec::new();
    client.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
    drop(rx);
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("codecoder-listen-{}", uuid::Uuid::now_v7()));
    fs_err::create_dir_all(&dir).unwrap();
    dir
}
