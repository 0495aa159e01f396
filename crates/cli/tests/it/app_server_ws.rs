//! `codecoder app-server --listen ws://` end to end: the real binary on a loopback port, driven by
//! tungstenite's client and by raw HTTP requests, against the fake model server — a turn over
//! WebSocket (and over a unix socket, as `codex --remote unix://` speaks it), two clients at
//! once, the health probes, and each refusal (an Origin header, a
//! foreign Host, no or a wrong token, a short secret, a non-loopback address without auth, a
//! taken port) with its status, its access-log line, and no session started.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use base64::Engine as _;
use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tungstenite::client::IntoClientRequest;
use tungstenite::{Message, WebSocket};

use crate::exec::{Run, openai_env};

/// How long any one message may take to arrive before the test fails.
const PATIENCE: Duration = Duration::from_secs(60);
const TOKEN: &str = "a-capability-token-of-forty-characters!!";

/// A running `codecoder app-server --listen ws://127.0.0.1:0`, killed on drop.
struct Listener {
    child: Child,
    addr: SocketAddr,
}

/// Starts `codecoder app-server ARGS`; returns it and the URL it says it listens on.
fn spawn_listening(run: &Run, args: &[&str]) -> (Child, String) {
    let mut child = run
        .command(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut banner = Vec::new();
    let url = loop {
        let Some(Ok(line)) = lines.next() else {
            panic!("the server ended before listening: {banner:?}");
        };
        if let Some(url) = line.trim().strip_prefix("listening on: ") {
            break url.to_owned();
        }
        banner.push(line);
    };
    // Read on, so the server never blocks on a full pipe.
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    (child, url)
}

impl Listener {
    fn start(run: &Run, extra: &[&str]) -> Self {
        let mut args = vec!["app-server", "--listen", "ws://127.0.0.1:0"];
        args.extend_from_slice(extra);
        let (child, url) = spawn_listening(run, &args);
        let addr = url.strip_prefix("ws://").unwrap().parse().unwrap();
        Self { child, addr }
    }

    /// Sends `head` as a whole request and returns the status and the whole answer.
    fn raw(&self, head: &str) -> (u16, String) {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        stream.write_all(head.as_bytes()).unwrap();
        let mut answer = Vec::new();
        // An upgrade's answer does not end the connection: read its head only.
        let mut byte = [0u8; 1];
        while !answer.ends_with(b"\r\n\r\n") {
            match stream.read(&mut byte).unwrap() {
                0 => break,
                _ => answer.push(byte[0]),
            }
        }
        if !answer.starts_with(b"HTTP/1.1 101") {
            stream.read_to_end(&mut answer).unwrap();
        }
        let answer = String::from_utf8(answer).unwrap();
        let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        (status, answer)
    }

    /// A WebSocket upgrade's head with these extra header lines (`Host` is the bound address
    /// unless one is given).
    fn upgrade(&self, extra: &[&str]) -> String {
        let mut head = String::from("GET / HTTP/1.1\r\n");
        if !extra.iter().any(|h| h.to_ascii_lowercase().starts_with("host:")) {
            head.push_str(&format!("Host: {}\r\n", self.addr));
        }
        head.push_str(
            "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
        );
        for line in extra {
            head.push_str(line);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        head
    }

    fn connect(&self, token: Option<&str>) -> Client {
        let mut request = format!("ws://{}", self.addr).into_client_request().unwrap();
        if let Some(token) = token {
            request
                .headers_mut()
                .insert("Authorization", format!("Bearer {token}").parse().unwrap());
        }
        let stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        let (socket, response) = tungstenite::client(request, stream).unwrap();
        assert_eq!(response.status().as_u16(), 101);
        Client { socket, next_id: 1, backlog: Vec::new() }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A codex app-server client over one WebSocket.
struct Client<S: Read + Write = TcpStream> {
    socket: WebSocket<S>,
    next_id: i64,
    backlog: Vec<Value>,
}

impl<S: Read + Write> Client<S> {
    fn send(&mut self, message: &Value) {
        self.socket.send(Message::text(message.to_string())).unwrap();
    }

    fn read(&mut self) -> Value {
        loop {
            match self.socket.read().expect("the server said nothing more") {
                Message::Text(text) => {
                    let value: Value = serde_json::from_str(text.as_str()).unwrap();
                    assert!(value.get("jsonrpc").is_none(), "{value}");
                    return value;
                }
                Message::Close(_) => panic!("the server closed the connection"),
                _ => {}
            }
        }
    }

    fn recv(&mut self) -> Value {
        if self.backlog.is_empty() { self.read() } else { self.backlog.remove(0) }
    }

    fn result(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"id": id, "method": method, "params": params}));
        loop {
            let message = self.read();
            if message.get("method").is_none() && message["id"] == id {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
            self.backlog.push(message);
        }
    }

    fn initialize(&mut self) {
        let result = self.result(
            "initialize",
            json!({"clientInfo": {"name": "ws-test", "title": "Test", "version": "1.0"}}),
        );
        assert!(result["userAgent"].as_str().unwrap().starts_with("codecoder/"), "{result}");
        self.send(&json!({"method": "initialized"}));
    }

    /// Starts a thread and a turn with `prompt`; returns the thread's id.
    fn start_turn(&mut self, cwd: &Path, prompt: &str) -> String {
        let started = self.result(
            "thread/start",
            json!({"cwd": cwd, "approvalPolicy": "never", "sandbox": "read-only"}),
        );
        let thread_id = started["thread"]["id"].as_str().unwrap().to_owned();
        self.result(
            "turn/start",
            json!({"threadId": thread_id, "input": [{"type": "text", "text": prompt}]}),
        );
        thread_id
    }

    /// Reads until `turn/completed`; returns the agent's text of the turn.
    fn finish_turn(&mut self) -> String {
        let mut text = String::new();
        loop {
            let message = self.recv();
            match message["method"].as_str() {
                Some("item/completed") if message["params"]["item"]["type"] == "agentMessage" => {
                    text.push_str(message["params"]["item"]["text"].as_str().unwrap());
                }
                Some("turn/completed") => {
                    assert_eq!(message["params"]["turn"]["status"], "completed", "{message}");
                    return text;
                }
                _ => {}
            }
        }
    }
}

fn access_log(home: &Path) -> String {
    std::fs::read_to_string(home.join("logs/app-server-access.log")).unwrap_or_default()
}

fn session_logs(home: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(home.join("sessions")) else { return 0 };
    let mut count = 0;
    let mut dirs: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    while let Some(path) = dirs.pop() {
        if path.is_dir() {
            dirs.extend(std::fs::read_dir(&path).unwrap().flatten().map(|e| e.path()));
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            count += 1;
        }
    }
    count
}

#[test]
fn a_client_runs_a_turn_over_websocket_and_the_probes_answer() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let script = Script::new().reply(Reply::text("Hello over WebSocket.").chunks(4));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let listener = Listener::start(&run, &[]);
    for path in ["/readyz", "/healthz"] {
        let (status, _) = listener.raw(&format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n"));
        assert_eq!(status, 200, "{path}");
    }
    let (status, _) =
        listener.raw(&format!("GET /other HTTP/1.1\r\nHost: {}\r\n\r\n", listener.addr));
    assert_eq!(status, 404);

    let mut client = listener.connect(None);
    client.initialize();
    // Before a thread, a malformed frame gets its parse error, as a line would.
    client.socket.send(Message::text("{not json")).unwrap();
    let error = client.recv();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    // A pretty-printed message is one message.
    let listed = json!({"id": 99, "method": "thread/list", "params": {}});
    client.socket.send(Message::text(serde_json::to_string_pretty(&listed).unwrap())).unwrap();
    let answer = client.recv();
    assert_eq!(answer["id"], 99, "{answer}");
    assert!(answer["result"]["data"].is_array(), "{answer}");

    let thread_id = client.start_turn(cwd.path(), "say hello");
    assert_eq!(client.finish_turn(), "Hello over WebSocket.");
    client.socket.close(None).unwrap();
    // The server answers the close and ends the connection.
    while client.socket.read().is_ok() {}

    let out = crate::codecoder(home.path(), &["sessions", "validate", &thread_id]);
    assert!(out.status.success(), "{}", crate::stdout(&out));
    let log = access_log(home.path());
    assert!(log.contains("GET /readyz") && log.contains(" 200 health"), "{log}");
    assert!(log.contains("101 accepted anonymous"), "{log}");
    let waited = std::time::Instant::now();
    while !access_log(home.path()).contains("anonymous closed") {
        assert!(waited.elapsed() < PATIENCE, "the close was not logged: {log}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn two_clients_are_served_at_once() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let script = Script::new().reply(Reply::text("Done.")).reply(Reply::text("Done."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let listener = Listener::start(&run, &[]);
    let mut first = listener.connect(None);
    let mut second = listener.connect(None);
    first.initialize();
    // Each connection has its own handshake.
    let id = second.next_id;
    second.send(&json!({"id": id, "method": "thread/list", "params": {}}));
    let refused = second.recv();
    assert_eq!(refused["error"]["message"], "Not initialized", "{refused}");
    second.next_id += 1;
    second.initialize();
    let one = first.start_turn(cwd.path(), "first");
    let two = second.start_turn(cwd.path(), "second");
    assert_ne!(one, two);
    assert_eq!(first.finish_turn(), "Done.");
    assert_eq!(second.finish_turn(), "Done.");
    assert_eq!(session_logs(home.path()), 2);
}

#[test]
fn refused_requests_get_their_status_are_logged_and_start_nothing() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let server = FakeModelServer::start(Script::new().reply(Reply::text("Authorized."))).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let token_file = cwd.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let listener = Listener::start(
        &run,
        &["--ws-auth", "capability-token", "--ws-token-file", token_file.to_str().unwrap()],
    );
    let bearer = format!("Authorization: Bearer {TOKEN}");
    let port = listener.addr.port();
    let cases: Vec<(Vec<String>, u16, &str)> = vec![
        (vec![bearer.clone(), "Origin: http://127.0.0.1".into()], 403, "Origin"),
        (vec![bearer.clone(), format!("Host: rebind.example:{port}")], 403, "foreign Host"),
        (vec![bearer.clone(), format!("Host: 127.0.0.1:{}", port.wrapping_add(1))], 403, "port"),
        (vec![], 401, "no Authorization header"),
        (vec!["Authorization: Bearer a-wrong-token-that-is-long-enough-000".into()], 401, "wrong"),
        (vec!["Authorization: Bearer short".into()], 401, "too short"),
    ];
    for (headers, status, why) in &cases {
        let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
        let (got, answer) = listener.raw(&listener.upgrade(&headers));
        assert_eq!(got, *status, "{why}: {answer}");
    }
    let (status, _) = listener.raw(&format!(
        "GET /readyz HTTP/1.1\r\nHost: {}\r\nOrigin: https://evil.example\r\n\r\n",
        listener.addr
    ));
    assert_eq!(status, 403, "a probe with an Origin");
    assert!(server.requests().is_empty());
    assert_eq!(session_logs(home.path()), 0);
    let log = access_log(home.path());
    assert_eq!(log.matches(" refused: ").count(), cases.len() + 1, "{log}");
    assert!(log.contains(" 403 refused: a request with an Origin header"), "{log}");
    assert!(log.contains(" 403 refused: a foreign Host header"), "{log}");
    assert!(log.contains(" 401 refused: wrong token"), "{log}");
    assert!(!log.contains(TOKEN), "the token reached the log: {log}");

    // The right token opens the connection; a client that sends its hash is let in too.
    let mut client = listener.connect(Some(TOKEN));
    client.initialize();
    client.start_turn(cwd.path(), "hello");
    assert_eq!(client.finish_turn(), "Authorized.");
    assert!(access_log(home.path()).contains("101 accepted capability-token"));
}

#[test]
fn a_token_given_as_its_sha256_and_a_signed_bearer_token_let_clients_in() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: Vec::new() };
    let digest: String =
        Sha256::digest(TOKEN.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    let listener =
        Listener::start(&run, &["--ws-auth", "capability-token", "--ws-token-sha256", &digest]);
    listener.connect(Some(TOKEN)).initialize();
    drop(listener);

    let secret = "the shared secret, thirty-two bytes or more";
    let secret_file = cwd.path().join("secret");
    std::fs::write(&secret_file, secret).unwrap();
    let listener = Listener::start(
        &run,
        &[
            "--ws-auth",
            "signed-bearer-token",
            "--ws-shared-secret-file",
            secret_file.to_str().unwrap(),
            "--ws-audience",
            "codecoder",
        ],
    );
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let claims = json!({"sub": "remote-tui", "aud": "codecoder", "exp": now.as_secs() + 300});
    listener.connect(Some(&jwt(&claims, secret))).initialize();
    let forged = jwt(&claims, "another secret, thirty-two bytes or more");
    let (status, answer) =
        listener.raw(&listener.upgrade(&[&format!("Authorization: Bearer {forged}")]));
    assert_eq!(status, 401, "{answer}");
    let log = access_log(home.path());
    assert!(log.contains("101 accepted sub=remote-tui"), "{log}");
    assert!(log.contains("401 refused: bad JWT signature"), "{log}");
}

/// An HS256 JWT: HMAC-SHA256 (RFC 2104) over `header.claims`.
fn jwt(claims: &Value, secret: &str) -> String {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let signed = format!(
        "{}.{}",
        b64(json!({"alg": "HS256", "typ": "JWT"}).to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let mut key = [0u8; 64];
    key[..secret.len()].copy_from_slice(secret.as_bytes());
    let inner = Sha256::new()
        .chain_update(key.map(|b| b ^ 0x36))
        .chain_update(signed.as_bytes())
        .finalize();
    let mac = Sha256::new().chain_update(key.map(|b| b ^ 0x5c)).chain_update(inner).finalize();
    format!("{signed}.{}", b64(&mac))
}

#[test]
fn unsafe_or_impossible_listeners_refuse_to_start() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: Vec::new() };
    let short = cwd.path().join("short");
    std::fs::write(&short, "short\n").unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = format!("ws://{}", taken.local_addr().unwrap());
    let short = short.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--listen", "ws://0.0.0.0:0"], "--ws-auth capability-token"),
        (vec!["--listen", &taken], "cannot listen on"),
        (vec!["--listen", "ws://localhost:0"], "ws://IP:PORT"),
        (vec!["--listen", "tcp://127.0.0.1:0"], "expected stdio://, ws://IP:PORT or unix://[PATH]"),
        (vec!["--listen", "ws://127.0.0.1:0", "--ws-auth", "capability-token"], "--ws-token-file"),
        (
            vec![
                "--listen",
                "ws://127.0.0.1:0",
                "--ws-auth",
                "capability-token",
                "--ws-token-file",
                short,
            ],
            "shorter than 32 bytes",
        ),
        (vec!["--listen", "ws://127.0.0.1:0", "--ws-token-file", short], "need --ws-auth"),
        (
            vec!["--listen", "ws://127.0.0.1:0", "--ws-auth", "signed-bearer-token"],
            "--ws-shared-secret-file",
        ),
    ];
    for (args, expected) in cases {
        let mut all = vec!["app-server"];
        all.extend_from_slice(&args);
        let out = run.command(&all).stdin(Stdio::null()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn a_unix_socket_serves_websocket_clients_and_a_stale_one_is_replaced() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::UnixStream;
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: Vec::new() };
    let socket = home.path().join("control/app.sock");
    let listen = format!("unix://{}", socket.display());
    let (mut child, url) = spawn_listening(&run, &["app-server", "--listen", &listen]);
    assert_eq!(url, listen);
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let dir_mode = std::fs::metadata(socket.parent().unwrap()).unwrap().permissions().mode();
    assert_eq!(dir_mode & 0o777, 0o700, "{dir_mode:o}");
    // As codex's client asks: path /rpc, Host localhost.
    let connect = || {
        let stream = UnixStream::connect(&socket).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        let (socket, _) = tungstenite::client("ws://localhost/rpc", stream).unwrap();
        Client { socket, next_id: 1, backlog: Vec::new() }
    };
    let mut client = connect();
    client.initialize();
    assert!(client.result("thread/list", json!({}))["data"].is_array());
    // A second server cannot take a socket someone listens on.
    let out =
        run.command(&["app-server", "--listen", &listen]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot listen on unix://"));
    child.kill().unwrap();
    child.wait().unwrap();
    // The killed server left its socket file: the next one replaces it.
    let (mut child, _) = spawn_listening(&run, &["app-server", "--listen", &listen]);
    connect().initialize();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(access_log(home.path()).contains("unix GET /rpc"), "{}", access_log(home.path()));
}

impl<S: Read + Write> Client<S> {
    /// Reads until `turn/completed`, accepting every approval request; returns every message
    /// read, the last one `turn/completed`.
    fn accepting_turn(&mut self) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let message = self.recv();
            seen.push(message.clone());
            let method = message["method"].as_str().unwrap_or_default();
            if method.ends_with("/requestApproval") {
                self.send(&json!({"id": message["id"], "result": {"decision": "accept"}}));
            }
            if method == "turn/completed" {
                return seen;
            }
        }
    }
}

#[test]
fn a_turns_model_effort_cwd_and_sandbox_apply_to_it_within_the_servers_own_sandbox() {
    let home = tempfile::tempdir().unwrap();
    let first_cwd = tempfile::tempdir().unwrap();
    let second_cwd = tempfile::tempdir().unwrap();
    let script = Script::new()
        .reply(Reply::tool_call("c1", "run_command", json!({"command": "touch made-here.txt"})))
        .reply(Reply::text("Made it in the other directory."))
        .reply(Reply::text("Still the same settings."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: first_cwd.path(), env: openai_env(&server) };
    // The server allows at most workspace-write.
    let listener = Listener::start(&run, &["-s", "workspace-write"]);
    let mut client = listener.connect(None);
    client.initialize();

    // A thread asking for more than the server allows gets the server's sandbox, and is told.
    let loose = client.result("thread/start", json!({"sandbox": "danger-full-access"}));
    assert_eq!(loose["sandbox"], json!({"type": "workspaceWrite"}), "{loose}");
    let warning = client.recv();
    assert_eq!(warning["method"], "warning", "{warning}");
    assert!(
        warning["params"]["message"].as_str().unwrap().contains("at most the workspace-write"),
        "{warning}"
    );

    let started = client.result(
        "thread/start",
        json!({"cwd": first_cwd.path(), "approvalPolicy": "on-request", "sandbox": "read-only"}),
    );
    let thread_id = started["thread"]["id"].as_str().unwrap().to_owned();
    assert_eq!(started["sandbox"], json!({"type": "readOnly"}), "{started}");
    assert_eq!(started["model"], "gpt-5", "{started}");
    // codex's TUI sends its policy objects whole: their other fields are accepted.
    client.result(
        "turn/start",
        json!({
            "threadId": thread_id,
            "input": [{"type": "text", "text": "make a file"}],
            "model": "gpt-5-mini",
            "effort": "high",
            "cwd": second_cwd.path(),
            "sandboxPolicy": {"type": "dangerFullAccess"},
            "approvalPolicy": "untrusted",
        }),
    );
    let messages = client.accepting_turn();
    let completed = messages.last().unwrap();
    assert_eq!(completed["params"]["turn"]["status"], "completed", "{completed}");
    assert!(
        messages.iter().any(|m| m["method"] == "warning"
            && m["params"]["message"].as_str().unwrap().contains("not danger-full-access")),
        "{messages:#?}"
    );
    // The command ran in the turn's directory.
    assert!(second_cwd.path().join("made-here.txt").exists());
    assert!(!first_cwd.path().join("made-here.txt").exists());
    // The request went out with the turn's model and effort.
    let requests = server.requests();
    assert_eq!(requests[0].body["model"], "gpt-5-mini", "{}", requests[0].raw_body);
    assert_eq!(requests[0].body["reasoning"]["effort"], "high", "{}", requests[0].raw_body);
    // The loaded thread runs with them from now on, the sandbox within the server's.
    let resumed = client.result("thread/resume", json!({"threadId": thread_id}));
    assert_eq!(resumed["model"], "gpt-5-mini", "{resumed}");
    assert_eq!(resumed["sandbox"], json!({"type": "workspaceWrite"}), "{resumed}");
    assert_eq!(resumed["approvalPolicy"], "untrusted", "{resumed}");
    assert_eq!(
        std::fs::canonicalize(resumed["cwd"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(second_cwd.path()).unwrap()
    );
    // A turn that names no settings keeps them.
    client.result(
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "again"}]}),
    );
    assert_eq!(client.finish_turn(), "Still the same settings.");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2].body["model"], "gpt-5-mini");
    // Both turns are in the thread's log, newest first, a page at a time.
    let page = client.result("thread/turns/list", json!({"threadId": thread_id, "limit": 1}));
    assert_eq!(page["data"].as_array().unwrap().len(), 1, "{page}");
    assert_eq!(page["nextCursor"], "1", "{page}");
    let text_of = |turn: &Value| turn["items"].to_string();
    assert!(text_of(&page["data"][0]).contains("Still the same settings."), "{page}");
    let rest = client
        .result("thread/turns/list", json!({"threadId": thread_id, "cursor": "1", "limit": 5}));
    assert_eq!(rest["nextCursor"], Value::Null, "{rest}");
    assert!(text_of(&rest["data"][0]).contains("Made it in the other directory."), "{rest}");
    // An effort no model has is refused before anything changes.
    let id = client.next_id;
    client.next_id += 1;
    client.send(&json!({"id": id, "method": "turn/start", "params": {
        "threadId": thread_id, "input": [{"type": "text", "text": "x"}], "effort": "extreme"}}));
    let refused = client.recv();
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    // One log holds both turns.
    let out = crate::codecoder(home.path(), &["sessions", "validate", &thread_id]);
    assert!(out.status.success(), "{}", crate::stdout(&out));
}

#[test]
fn thread_list_leaves_out_subagent_logs() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let script = Script::new()
        .reply(Reply::tool_call("t1", "agent", json!({"task": "look around"})))
        .reply(Reply::text("CHILD-ANSWER: nothing here"))
        .reply(Reply::text("The subagent found nothing."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let listener = Listener::start(&run, &["-a", "never", "-s", "danger-full-access"]);
    let mut client = listener.connect(None);
    client.initialize();
    let thread_id = client.start_turn(cwd.path(), "delegate");
    assert_eq!(client.finish_turn(), "The subagent found nothing.");
    assert_eq!(session_logs(home.path()), 2, "the subagent has a log of its own");
    let listed = client.result("thread/list", json!({"modelProviders": []}));
    let ids: Vec<&str> =
        listed["data"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [thread_id.as_str()], "{listed}");
}

#[test]
fn a_signal_stops_the_listener_its_turns_and_their_commands_and_removes_the_socket() {
    use std::os::unix::net::UnixStream;
    // SIGTERM to a unix socket's server, SIGINT to a TCP one.
    for (signal, over_tcp) in [("TERM", false), ("INT", true)] {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        // A duration no other process on the machine uses, to find ours in /proc.
        let marker = format!(
            "{}.{}{}",
            60 + std::process::id() % 9,
            std::process::id() % 1000,
            signal.len()
        );
        let script = Script::new().reply(Reply::tool_call(
            "c1",
            "run_command",
            json!({"command": format!("sleep {marker}")}),
        ));
        let server = FakeModelServer::start(script).unwrap();
        let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
        let socket = home.path().join("app.sock");
        let unix = format!("unix://{}", socket.display());
        let listen = if over_tcp { "ws://127.0.0.1:0" } else { unix.as_str() };
        let (mut child, url) = spawn_listening(&run, &["app-server", "--listen", listen]);
        // The client stays connected (and its turn running) until the signal.
        let (thread_id, _client): (String, Box<dyn std::any::Any>) = if over_tcp {
            let stream = TcpStream::connect(url.strip_prefix("ws://").unwrap()).unwrap();
            stream.set_read_timeout(Some(PATIENCE)).unwrap();
            let (websocket, _) = tungstenite::client(url.as_str(), stream).unwrap();
            let mut client = Client { socket: websocket, next_id: 1, backlog: Vec::new() };
            client.initialize();
            (client.start_turn(cwd.path(), "sleep"), Box::new(client))
        } else {
            let stream = UnixStream::connect(&socket).unwrap();
            stream.set_read_timeout(Some(PATIENCE)).unwrap();
            let (websocket, _) = tungstenite::client("ws://localhost/rpc", stream).unwrap();
            let mut client = Client { socket: websocket, next_id: 1, backlog: Vec::new() };
            client.initialize();
            (client.start_turn(cwd.path(), "sleep"), Box::new(client))
        };
        let needle = format!("sleep {marker}");
        let waited = std::time::Instant::now();
        while crate::app_server::processes_running(&needle) == 0 {
            assert!(waited.elapsed() < PATIENCE, "the command never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        let pid = child.id().to_string();
        let sent = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(sent.success());
        let waited = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(waited.elapsed() < PATIENCE, "SIG{signal}: the server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "SIG{signal}: {status:?}");
        assert_eq!(crate::app_server::processes_running(&needle), 0, "SIG{signal}: it survived");
        assert!(!socket.exists(), "SIG{signal}: the socket file is left");
        // The turn was closed in the log before the process ended.
        let out = crate::codecoder(home.path(), &["sessions", "validate", &thread_id]);
        assert!(out.status.success(), "SIG{signal}: {}", crate::stdout(&out));
    }
}

/// A tmux server of the test's own (its socket in a temp dir), killed on drop.
struct Tmux {
    socket: std::path::PathBuf,
}

impl Tmux {
    fn command(&self) -> std::process::Command {
        let mut command = std::process::Command::new("tmux");
        command.arg("-S").arg(&self.socket).env_remove("TMUX");
        command
    }

    /// The pane's text, wrapped lines joined.
    fn pane(&self) -> String {
        let out = self.command().args(["capture-pane", "-p", "-J", "-t", "codex"]).output();
        out.map(|out| String::from_utf8_lossy(&out.stdout).into_owned()).unwrap_or_default()
    }

    /// Waits until the pane shows `text`; returns the pane. `why` names what is waited for.
    fn wait_for(&self, text: &str, why: &str, log: &Path) -> String {
        let waited = std::time::Instant::now();
        loop {
            let pane = self.pane();
            if pane.contains(text) {
                return pane;
            }
            assert!(
                waited.elapsed() < PATIENCE,
                "{why}: `{text}` never showed:\n{pane}\ncodex's stderr:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn keys(&self, keys: &[&str]) {
        let status = self.command().args(["send-keys", "-t", "codex"]).args(keys).status();
        assert!(status.unwrap().success(), "send-keys {keys:?}");
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command().arg("kill-server").status();
    }
}

/// Whether tmux runs here: without it the test is skipped with a note, except under CI.
#[allow(clippy::print_stderr)] // Says why a test is skipped.
fn tmux_available() -> bool {
    let works =
        std::process::Command::new("tmux").arg("-V").output().is_ok_and(|out| out.status.success());
    match works {
        true => true,
        false if std::env::var(codecoder_protocol::env::CI).is_ok_and(|v| v == "true") => {
            panic!("tmux is not installed: .ci/run installs it")
        }
        false => {
            eprintln!("skipped: tmux is not installed");
            false
        }
    }
}

/// codex's own TUI (the `@openai/codex` package the SDK tests install), attached with
/// `codex --remote` in tmux — over a unix socket, and over `ws://` with a capability token —
/// starts against the server (its account, models and configuration reads answered), sends a
/// prompt, shows the streamed reply and a command that needs approval, and approving it in the
/// TUI runs the command.
#[test]
fn codex_tui_attached_with_remote_runs_a_turn_and_an_approved_command() {
    let Some(npm) = crate::npm_dir() else { return };
    if !tmux_available() {
        return;
    }
    drive_codex_tui(&npm, false);
    drive_codex_tui(&npm, true);
}

fn drive_codex_tui(npm: &Path, over_tcp: bool) {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let codex_home = tempfile::tempdir().unwrap();
    let script = Script::new()
        .reply(
            Reply::tool_call(
                "c1",
                "run_command",
                json!({"command": "touch approved-in-codex.txt"}),
            )
            .with_text("I will make the file."),
        )
        .reply(Reply::text("The file is there now, made through codex remote.").chunks(5))
        // codex names the task with a side thread of its own (started, run, unsubscribed).
        .when_request_contains("task title", Reply::text("Make the file"));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let token_file = home.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let socket = home.path().join("app.sock");
    let unix = format!("unix://{}", socket.display());
    let listen: Vec<&str> = if over_tcp {
        let token = token_file.to_str().unwrap();
        vec!["--listen", "ws://127.0.0.1:0", "--ws-auth", "capability-token"]
            .into_iter()
            .chain(["--ws-token-file", token])
            .collect()
    } else {
        vec!["--listen", &unix]
    };
    let (mut child, url) = spawn_listening(&run, &[&["app-server"][..], &listen[..]].concat());

    // Offline and quiet: no update check, no analytics.
    std::fs::write(
        codex_home.path().join("config.toml"),
        "check_for_update_on_startup = false\n\n[analytics]\nenabled = false\n",
    )
    .unwrap();
    let errors = codex_home.path().join("codex.err");
    let codex = npm.join("node_modules/@openai/codex/bin/codex.js");
    let auth = if over_tcp { " --remote-auth-token-env CODEX_REMOTE_TOKEN" } else { "" };
    let line =
        format!("node '{}' --remote '{url}'{auth} 2> '{}'", codex.display(), errors.display());
    let tmux = Tmux { socket: codex_home.path().join("tmux.sock") };
    let started = tmux
        .command()
        .args(["new-session", "-d", "-s", "codex", "-x", "160", "-y", "50"])
        .arg(&line)
        .current_dir(cwd.path())
        .env("HOME", codex_home.path())
        .env("CODEX_HOME", codex_home.path())
        .env("CODEX_REMOTE_TOKEN", TOKEN)
        .status()
        .unwrap();
    assert!(started.success());

    // The composer is up once the thread started: the footer names the server's model.
    tmux.wait_for("gpt-5", "codex's composer", &errors);
    tmux.keys(&["-l", "please make the file"]);
    tmux.wait_for("please make the file", "the typed prompt", &errors);
    tmux.keys(&["Enter"]);
    let pane = tmux.wait_for("Would you like to run", "the approval", &errors);
    assert!(pane.contains("touch approved-in-codex.txt"), "{pane}");
    assert!(!cwd.path().join("approved-in-codex.txt").exists(), "it ran before the approval");
    tmux.keys(&["y"]);
    tmux.wait_for("The file is there now, made through codex remote.", "the reply", &errors);
    assert!(cwd.path().join("approved-in-codex.txt").exists(), "the approved command did not run");
    let turn_requests =
        server.requests().iter().filter(|r| !r.raw_body.contains("task title")).count();
    assert_eq!(turn_requests, 2);
    let who = if over_tcp { "accepted capability-token" } else { "accepted anonymous" };
    assert!(access_log(home.path()).contains(who), "{}", access_log(home.path()));
    drop(tmux);
    child.kill().unwrap();
    child.wait().unwrap();
}
