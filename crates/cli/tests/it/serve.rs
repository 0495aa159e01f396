//! `codecoder serve` end to end, in raw HTTP over TCP against the real binary: the one URL line
//! and the private discovery file, a taken port and an unprotected address refused at start,
//! and each security point (token, cookie exchange, Host allowlist, Origin, JSON-only
//! mutations, security headers, the access log without the token) refused with its status and
//! nothing changed; then a session started, streamed, approved and resumed through the API.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::{Value, json};

use crate::exec::{Run, openai_env};

/// How long any one answer may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(60);

/// A running `codecoder serve`.
struct Served {
    child: Child,
    port: u16,
    token: String,
    url: String,
    home: PathBuf,
    /// What the server wrote to stdout after the URL line.
    rest: Option<std::thread::JoinHandle<String>>,
}

impl Served {
    fn start(run: &Run, args: &[&str]) -> Self {
        let mut command_args = vec!["serve"];
        command_args.extend_from_slice(args);
        let mut child = run
            .command(&command_args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut url = String::new();
        stdout.read_line(&mut url).unwrap();
        let url = url.trim_end().to_owned();
        // Anything more on stdout would break a script reading the one line: the rest is read
        // to the end on a thread, and `stop` checks it is empty.
        let tail = std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = stdout.read_to_string(&mut rest);
            rest
        });
        let rest = url.strip_prefix("http://127.0.0.1:").unwrap_or_else(|| panic!("{url}"));
        let (port, token) = rest.split_once("/?token=").unwrap();
        Self {
            child,
            port: port.parse().unwrap(),
            token: token.to_owned(),
            url: url.clone(),
            home: run.home.to_owned(),
            rest: Some(tail),
        }
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Sends `head` (request line and headers, without the final blank line) and `body`.
    fn raw(&self, head: &str, body: &str) -> Answer {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        let request =
            format!("{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
        stream.write_all(request.as_bytes()).unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        Answer::parse(&text)
    }

    /// A request with the right Host and the token as a bearer.
    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Answer {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}",
            self.host(),
            self.token
        );
        if body.is_some() {
            head.push_str("\r\nContent-Type: application/json");
        }
        self.raw(&head, &body.map(Value::to_string).unwrap_or_default())
    }

    /// Stops the server as Ctrl-C would; returns its exit code.
    fn stop(mut self) -> Option<i32> {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap()),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        let code = self.child.wait().unwrap().code();
        let rest = self.rest.take().unwrap().join().unwrap();
        assert_eq!(rest, "", "more than one line on stdout");
        code
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP answer.
#[derive(Debug)]
struct Answer {
    status: u16,
    /// Header names lower-cased.
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn parse(text: &str) -> Self {
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text, ""));
        let mut lines = head.split("\r\n");
        let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
        let headers = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.to_ascii_lowercase(), value.trim().to_owned()))
            .collect();
        Self { status, headers, body: body.to_owned() }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|err| panic!("{err}: {self:?}"))
    }

    /// The security headers every answer carries.
    fn assert_hardened(&self) {
        let csp = self.header("content-security-policy").unwrap_or_else(|| panic!("{self:?}"));
        assert!(csp.contains("connect-src 'self'"), "{csp}");
        assert!(csp.contains("default-src 'none'"), "{csp}");
        assert_eq!(self.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(self.header("referrer-policy"), Some("no-referrer"));
        assert_eq!(self.header("x-frame-options"), Some("DENY"));
    }
}

fn temp_run<'a>(home: &'a Path, cwd: &'a Path) -> Run<'a> {
    Run { home, cwd, env: Vec::new() }
}

fn session_files(home: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(home.join("sessions")) else { return 0 };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|ext| ext == "jsonl"))
        .count()
}

#[test]
fn serve_prints_one_url_and_keeps_a_private_discovery_file_while_it_runs() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let served = Served::start(&temp_run(home.path(), cwd.path()), &[]);
    // 256 bits in hex: far past the 128 the token needs.
    assert_eq!(served.token.len(), 64, "{}", served.url);
    assert!(served.token.chars().all(|c| c.is_ascii_hexdigit()));
    let discovery = home.path().join("serve.json");
    let mode = std::fs::metadata(&discovery).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&discovery).unwrap()).unwrap();
    assert_eq!(written["url"], served.url.as_str());
    assert_eq!(written["token"], served.token.as_str());
    assert_eq!(written["pid"], served.child.id());
    assert_eq!(written["listen"], served.host());

    // A second server gets a token of its own.
    let home2 = tempfile::tempdir().unwrap();
    let other = Served::start(&temp_run(home2.path(), cwd.path()), &[]);
    assert_ne!(other.token, served.token);
    assert_ne!(other.port, served.port);

    assert_eq!(served.stop(), Some(0));
    assert!(!discovery.exists(), "serve.json outlived the server");
}

#[test]
fn a_taken_port_and_an_unprotected_address_are_refused_at_start() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let run = temp_run(home.path(), cwd.path());
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let output = run.run(&["serve", "--listen", &addr], "");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("cannot listen on {addr}")), "{stderr}");
    assert!(output.stdout.is_empty());

    let output = run.run(&["serve", "--listen", "0.0.0.0:0"], "");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("refusing to listen on 0.0.0.0:0"), "{stderr}");
    assert!(stderr.contains("--auth token"), "{stderr}");
    assert!(output.stdout.is_empty());
    assert!(!home.path().join("serve.json").exists());

    let output = run.run(&["serve", "--listen", "nowhere"], "");
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn a_non_loopback_address_with_explicit_auth_serves_and_says_it_is_plain_http() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let mut child = temp_run(home.path(), cwd.path())
        .command(&["serve", "--listen", "0.0.0.0:0", "--auth", "token"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("http://127.0.0.1:"), "{line}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("plain HTTP"), "{stderr}");
    let port =
        line.trim_end().strip_prefix("http://127.0.0.1:").unwrap().split('/').next().unwrap();
    let hint = stderr.lines().find(|l| l.contains("--allow-host NAME")).unwrap_or_else(|| {
        panic!("no word of the accepted Host names: {stderr}");
    });
    assert!(hint.contains(&format!("localhost:{port}")), "{hint}");
    assert_eq!(output.status.code(), Some(0), "{stderr}");
}

#[test]
fn localhost_is_a_listen_address() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let served = Served::start(&temp_run(home.path(), cwd.path()), &["--listen", "localhost:0"]);
    let answer = served.call("GET", "/api/server", None);
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(served.stop(), Some(0));
}

/// `codecoder serve ARGS` with stderr captured: the child and the URL line.
fn spawn_serve(run: &Run, args: &[&str]) -> (Child, String) {
    let mut command_args = vec!["serve"];
    command_args.extend_from_slice(args);
    let mut child = run
        .command(&command_args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    (child, line.trim_end().to_owned())
}

/// Stops a `spawn_serve` child as Ctrl-C would: its exit code and stderr.
fn terminate(child: Child) -> (Option<i32>, String) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let output = child.wait_with_output().unwrap();
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}

fn discovery_token(home: &Path) -> Option<String> {
    let text = std::fs::read_to_string(home.join("serve.json")).ok()?;
    let written: Value = serde_json::from_str(&text).unwrap();
    Some(written["token"].as_str().unwrap().to_owned())
}

#[test]
fn a_second_server_leaves_a_live_servers_discovery_file_and_replaces_a_stale_one() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let run = temp_run(home.path(), cwd.path());
    let first = Served::start(&run, &[]);
    let (second, url) = spawn_serve(&run, &[]);
    assert!(url.starts_with("http://127.0.0.1:") && !url.ends_with(&first.token), "{url}");
    assert_eq!(discovery_token(home.path()).as_deref(), Some(first.token.as_str()));
    let (code, stderr) = terminate(second);
    assert_eq!(code, Some(0), "{stderr}");
    let address = format!("http://127.0.0.1:{}/", first.port);
    assert!(
        stderr.contains("serve.json belongs to the server at")
            && stderr.contains(&address)
            && stderr.contains(&format!("pid {}", first.child.id()))
            && stderr.contains("only the line printed"),
        "{stderr}"
    );
    assert!(!stderr.contains(&first.token), "{stderr}");
    assert_eq!(
        discovery_token(home.path()).as_deref(),
        Some(first.token.as_str()),
        "the second removed the live server's file at exit"
    );
    assert_eq!(first.stop(), Some(0));
    assert!(!home.path().join("serve.json").exists());

    // A file naming a process that is gone, or one that cannot be read, is replaced.
    for stale in [
        r#"{"url": "http://127.0.0.1:9/?token=old", "token": "old", "pid": 2147483647, "listen": "127.0.0.1:9"}"#,
        "not json",
    ] {
        std::fs::write(home.path().join("serve.json"), stale).unwrap();
        let (child, url) = spawn_serve(&run, &[]);
        let token = url.split_once("?token=").unwrap().1.to_owned();
        assert_eq!(discovery_token(home.path()), Some(token));
        let (code, stderr) = terminate(child);
        assert_eq!(code, Some(0), "{stderr}");
        assert!(!stderr.contains("belongs to"), "{stderr}");
        assert!(!home.path().join("serve.json").exists());
    }
}

#[test]
fn idle_connections_make_room_for_a_request() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let served = Served::start(&temp_run(home.path(), cwd.path()), &[]);
    // More connections than the server serves at once, none sending a byte.
    let idle: Vec<TcpStream> =
        (0..300).map(|_| TcpStream::connect(("127.0.0.1", served.port)).unwrap()).collect();
    let answer = served.call("GET", "/api/server", None);
    assert_eq!(answer.status, 200, "{answer:?}");
    // The oldest idle one was closed to make room.
    let mut oldest = &idle[0];
    oldest.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut byte = [0; 1];
    assert!(matches!(oldest.read(&mut byte), Ok(0) | Err(_)), "the oldest idle one is open");
    // Stopping does not wait for the idle ones still open.
    let started = std::time::Instant::now();
    assert_eq!(served.stop(), Some(0));
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    drop(idle);
}

#[test]
fn resuming_a_session_whose_directory_is_gone_says_so() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let gone = project.path().canonicalize().unwrap();
    let server = FakeModelServer::start(Script::new().reply(Reply::text("Done."))).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let served = Served::start(&run, &["-m", "test-model"]);
    let id = start_session(&served, &json!({"cwd": gone.to_string_lossy(), "prompt": "hello"}));
    read_events(&served, &id, 0, |e| kind(e) == "turn_done");
    let closed = served.call("POST", &format!("/api/sessions/{id}/close"), Some(&json!({})));
    assert_eq!(closed.status, 200, "{closed:?}");
    drop(project);
    assert!(!gone.exists());
    let resumed = served.call("POST", "/api/sessions", Some(&json!({"resume": id})));
    assert_eq!(resumed.status, 400, "{resumed:?}");
    let message = resumed.json()["error"].as_str().unwrap().to_owned();
    assert_eq!(
        message,
        format!("the session's project directory {} no longer exists", gone.display())
    );
    assert_eq!(served.stop(), Some(0));
}

#[test]
fn the_token_is_required_and_a_browser_trades_it_for_a_strict_cookie() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let served = Served::start(&temp_run(home.path(), cwd.path()), &[]);
    let host = served.host();

    let none = served.raw(&format!("GET /api/sessions HTTP/1.1\r\nHost: {host}"), "");
    assert_eq!(none.status, 401, "{none:?}");
    none.assert_hardened();
    let page = served.raw(&format!("GET / HTTP/1.1\r\nHost: {host}"), "");
    assert_eq!(page.status, 401);
    let wrong = served.raw(&format!("GET /?token=0123 HTTP/1.1\r\nHost: {host}"), "");
    assert_eq!(wrong.status, 401);
    let wrong_bearer = served.raw(
        &format!(
            "GET /api/sessions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {}x",
            served.token
        ),
        "",
    );
    assert_eq!(wrong_bearer.status, 401);

    let exchange =
        served.raw(&format!("GET /?token={} HTTP/1.1\r\nHost: {host}", served.token), "");
    assert_eq!(exchange.status, 303, "{exchange:?}");
    assert_eq!(exchange.header("location"), Some("/"));
    exchange.assert_hardened();
    let cookie = exchange.header("set-cookie").unwrap();
    assert!(cookie.ends_with("; HttpOnly; SameSite=Strict; Path=/"), "{cookie}");
    let pair = cookie.split(';').next().unwrap();
    assert!(!pair.contains(&served.token), "the cookie is a secret of its own: {cookie}");

    let with_cookie = served.raw(&format!("GET / HTTP/1.1\r\nHost: {host}\r\nCookie: {pair}"), "");
    assert_eq!(with_cookie.status, 200);
    with_cookie.assert_hardened();
    assert!(with_cookie.body.contains("codecoder"));
    let api =
        served.raw(&format!("GET /api/sessions HTTP/1.1\r\nHost: {host}\r\nCookie: {pair}"), "");
    assert_eq!(api.status, 200);
    assert_eq!(api.json(), json!({"sessions": []}));
    // The page and its files come from the binary: nothing from elsewhere.
    assert!(with_cookie.body.contains("<script src=\"/app.js\""), "{}", with_cookie.body);
    let script = served.raw(&format!("GET /app.js HTTP/1.1\r\nHost: {host}\r\nCookie: {pair}"), "");
    assert_eq!(script.status, 200);
    assert_eq!(script.header("content-type"), Some("text/javascript; charset=utf-8"));
    script.assert_hardened();
    for file in [&with_cookie.body, &script.body] {
        assert!(!file.contains("https://") && !file.contains("http://"), "an outside URL: {file}");
    }
    let facts =
        served.raw(&format!("GET /api/server HTTP/1.1\r\nHost: {host}\r\nCookie: {pair}"), "");
    assert_eq!(facts.json()["cwd"], cwd.path().canonicalize().unwrap().to_string_lossy().as_ref());
    let bearer = served.call("GET", "/api/sessions", None);
    assert_eq!(bearer.status, 200);
    bearer.assert_hardened();
}

#[test]
fn a_foreign_host_is_refused_unless_allowed() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let served =
        Served::start(&temp_run(home.path(), cwd.path()), &["--allow-host", "box.example"]);
    let port = served.port;
    let ask = |host: &str| {
        served.raw(
            &format!(
                "GET /api/sessions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {}",
                served.token
            ),
            "",
        )
    };
    // The DNS-rebinding shape: the right token, a foreign name for our address.
    let rebound = ask(&format!("evil.example:{port}"));
    assert_eq!(rebound.status, 403, "{rebound:?}");
    rebound.assert_hardened();
    assert_eq!(ask(&format!("127.0.0.1:{}", port + 1)).status, 403);
    assert_eq!(ask(&format!("localhost:{port}")).status, 200);
    assert_eq!(ask(&format!("[::1]:{port}")).status, 200);
    assert_eq!(ask(&format!("box.example:{port}")).status, 200);
    let exchange = served
        .raw(&format!("GET /?token={} HTTP/1.1\r\nHost: evil.example:{port}", served.token), "");
    assert_eq!(exchange.status, 403);
    assert!(exchange.header("set-cookie").is_none());
}

#[test]
fn cross_origin_and_non_json_posts_change_nothing() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let served = Served::start(&temp_run(home.path(), cwd.path()), &[]);
    let host = served.host();
    let token = &served.token;
    let body = json!({"cwd": cwd.path(), "prompt": "hi"}).to_string();

    let cross = served.raw(
        &format!(
            "POST /api/sessions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\
             Origin: http://evil.example\r\nContent-Type: application/json"
        ),
        &body,
    );
    assert_eq!(cross.status, 403, "{cross:?}");
    cross.assert_hardened();
    let plain = served.raw(
        &format!(
            "POST /api/sessions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: text/plain"
        ),
        &body,
    );
    assert_eq!(plain.status, 415, "{plain:?}");
    let form = served.raw(
        &format!(
            "POST /api/sessions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/x-www-form-urlencoded"
        ),
        "cwd=/tmp&prompt=hi",
    );
    assert_eq!(form.status, 415);
    let untyped = served.raw(
        &format!("POST /api/sessions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}"),
        &body,
    );
    assert_eq!(untyped.status, 415);
    let upgrade = served.raw(
        &format!(
            "GET /api/sessions/x/events HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\
             Upgrade: websocket\r\nConnection: Upgrade\r\nOrigin: http://evil.example"
        ),
        "",
    );
    assert_eq!(upgrade.status, 403);

    assert_eq!(session_files(home.path()), 0, "a refused request started a session");
    assert_eq!(served.call("GET", "/api/sessions", None).json(), json!({"sessions": []}));
}

#[test]
fn every_request_is_logged_and_the_token_never_is() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let served = Served::start(&temp_run(home.path(), cwd.path()), &[]);
    let host = served.host();
    served.raw(&format!("GET /?token={} HTTP/1.1\r\nHost: {host}", served.token), "");
    served.raw("GET /api/sessions HTTP/1.1\r\nHost: evil.example", "");
    served.call("GET", "/api/sessions?q=x", None);
    let token = served.token.clone();
    let home_path = served.home.clone();
    assert_eq!(served.stop(), Some(0));
    let log = std::fs::read_to_string(home_path.join("logs/serve-access.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 3, "{log}");
    assert!(!log.contains(&token), "{log}");
    assert!(lines.iter().any(|line| line.ends_with(" GET /?token=REDACTED 303")), "{log}");
    assert!(lines.iter().all(|line| line.contains(" 127.0.0.1:")), "{log}");
    assert!(lines.iter().any(|line| line.ends_with(" GET /api/sessions 403")), "{log}");
    assert!(lines.iter().any(|line| line.ends_with(" GET /api/sessions?q=x 200")), "{log}");
}

/// Reads a session's event stream from `after` until `until` holds for an event, and returns
/// every event read (the stream is dropped then).
fn read_events(
    served: &Served,
    id: &str,
    after: u64,
    until: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut stream = TcpStream::connect(("127.0.0.1", served.port)).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(
        stream,
        "GET /api/sessions/{id}/events?after={after} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\r\n",
        served.host(),
        served.token
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    let mut events = Vec::new();
    let mut last_id = after;
    for line in reader.lines() {
        let line = line.unwrap();
        if let Some(id) = line.strip_prefix("id: ") {
            last_id = id.parse().unwrap();
        }
        if let Some(data) = line.strip_prefix("data: ") {
            let event: Value = serde_json::from_str(data).unwrap();
            assert_eq!(event["seq"], last_id, "the id line names the event's seq");
            let done = until(&event);
            events.push(event);
            if done {
                return events;
            }
        }
    }
    panic!("the stream ended before the awaited event: {events:#?}");
}

/// As `read_events`, over a WebSocket (the page's own origin, as a browser sends it).
fn read_ws_events(
    served: &Served,
    id: &str,
    after: u64,
    until: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut stream = TcpStream::connect(("127.0.0.1", served.port)).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(
        stream,
        "GET /api/sessions/{id}/events?after={after} HTTP/1.1\r\nHost: {host}\r\n\
         Authorization: Bearer {}\r\nOrigin: http://{host}\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Version: 13\r\n\r\n",
        served.token,
        host = served.host(),
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        head.push(line.trim_end().to_owned());
    }
    assert!(head[0].starts_with("HTTP/1.1 101"), "{head:?}");
    // RFC 6455's example key and its accept value.
    assert!(
        head.contains(&"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=".to_owned()),
        "{head:?}"
    );
    let mut events = Vec::new();
    loop {
        let mut start = [0u8; 2];
        reader.read_exact(&mut start).unwrap();
        let opcode = start[0] & 0x0f;
        assert_eq!(start[1] & 0x80, 0, "a server's frames are not masked");
        let len = match start[1] & 0x7f {
            126 => {
                let mut bytes = [0u8; 2];
                reader.read_exact(&mut bytes).unwrap();
                u64::from(u16::from_be_bytes(bytes))
            }
            127 => {
                let mut bytes = [0u8; 8];
                reader.read_exact(&mut bytes).unwrap();
                u64::from_be_bytes(bytes)
            }
            len => u64::from(len),
        };
        let mut payload = vec![0u8; usize::try_from(len).unwrap()];
        reader.read_exact(&mut payload).unwrap();
        match opcode {
            1 => {
                let event: Value = serde_json::from_slice(&payload).unwrap();
                let done = until(&event);
                events.push(event);
                if done {
                    return events;
                }
            }
            9 => {}
            8 => panic!("the stream closed before the awaited event: {events:#?}"),
            other => panic!("unexpected frame {other}"),
        }
    }
}

fn kind(event: &Value) -> &str {
    // `approvalResolved` records have no agent event: their kind is empty.
    event["event"]["kind"]["type"].as_str().unwrap_or_default()
}

#[test]
fn a_session_is_started_streamed_approved_once_and_resumed_from_its_cursor() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let work = cwd.path().canonicalize().unwrap();
    let script = Script::new()
        .reply(Reply::tool_call("c1", "run_command", json!({"command": "touch approved.txt"})))
        .reply(Reply::text("Made it.").chunks(3))
        .reply(Reply::text("Second turn."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    // The server's own flags are every session's policy: untrusted asks for the command.
    let served =
        Served::start(&run, &["-a", "untrusted", "-s", "danger-full-access", "-m", "test-model"]);

    let started =
        served.call("POST", "/api/sessions", Some(&json!({"cwd": work, "prompt": "make a file"})));
    assert_eq!(started.status, 201, "{started:?}");
    let started = started.json();
    let id = started["id"].as_str().unwrap().to_owned();
    assert_eq!(started["cwd"], work.to_string_lossy().as_ref());

    let first = read_events(&served, &id, 0, |e| kind(e) == "approval_request");
    let seqs: Vec<u64> = first.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "seq counts from 1 with no gap");
    assert!(first.iter().all(|e| e["sessionId"] == id.as_str()));
    assert!(first.iter().any(|e| kind(e) == "turn_started"), "{first:#?}");
    let asked = first.last().unwrap();
    let request = &asked["event"]["kind"];
    assert_eq!(request["view"]["kind"]["type"], "execute", "{request}");
    assert!(request["summary"].as_str().unwrap().contains("touch approved.txt"), "{request}");
    assert!(!work.join("approved.txt").exists(), "ran before it was approved");

    // Any client sees what is pending, and the first answer wins.
    let pending = served.call("GET", &format!("/api/sessions/{id}/pending"), None).json();
    assert_eq!(pending["approvals"], json!([asked]), "{pending}");
    let request_id = request["id"].as_str().unwrap();
    let bad = served.call(
        "POST",
        &format!("/api/approvals/{request_id}"),
        Some(&json!({"decision": "maybe"})),
    );
    assert_eq!(bad.status, 400);
    let yes = served.call(
        "POST",
        &format!("/api/approvals/{request_id}"),
        Some(&json!({"decision": "allow_once"})),
    );
    assert_eq!(yes.status, 200, "{yes:?}");
    let again = served.call(
        "POST",
        &format!("/api/approvals/{request_id}"),
        Some(&json!({"decision": "deny"})),
    );
    assert_eq!(again.status, 409, "{again:?}");

    // A reader that reconnects after the last event it saw misses nothing.
    let after = asked["seq"].as_u64().unwrap();
    let rest = read_events(&served, &id, after, |e| kind(e) == "turn_done");
    assert_eq!(rest[0]["seq"], after + 1, "{rest:#?}");
    // Every reader learns that the approval was answered, and how, before the call runs.
    let resolved = rest.iter().position(|e| !e["approvalResolved"].is_null()).unwrap();
    assert_eq!(
        rest[resolved]["approvalResolved"],
        json!({"id": request_id, "decision": {"type": "allow_once"}}),
    );
    let ran = rest.iter().position(|e| kind(e) == "tool_started").unwrap();
    assert!(resolved < ran, "{rest:#?}");
    assert!(work.join("approved.txt").exists());
    let finished = rest.iter().find(|e| kind(e) == "tool_finished").unwrap();
    assert_eq!(finished["event"]["kind"]["view"]["kind"]["type"], "execute");
    assert!(
        rest.iter().any(|e| kind(e) == "agent_message" && e["event"]["kind"]["text"] == "Made it.")
    );
    assert_eq!(
        served.call("GET", &format!("/api/sessions/{id}/pending"), None).json(),
        json!({"approvals": [], "questions": []})
    );

    // A second turn through the prompt route, read from where the first ended.
    let done_seq = rest.last().unwrap()["seq"].as_u64().unwrap();
    let prompted =
        served.call("POST", &format!("/api/sessions/{id}/prompt"), Some(&json!({"text": "again"})));
    assert_eq!(prompted.status, 202, "{prompted:?}");
    let second = read_events(&served, &id, done_seq, |e| kind(e) == "turn_done");
    assert!(second.iter().any(|e| kind(e) == "turn_started"), "{second:#?}");
    assert!(second.iter().any(|e| e["event"]["kind"]["text"] == "Second turn."));
    let cancel = served.call("POST", &format!("/api/sessions/{id}/cancel"), Some(&json!({})));
    assert_eq!(cancel.status, 202);

    // Its history, replayed from the log by the runtime, has the same events as the stream.
    let history = served.call("GET", &format!("/api/sessions/{id}/history"), None);
    assert_eq!(history.status, 200, "{history:?}");
    let history = history.json();
    let records = history["events"].as_array().unwrap();
    let user = records.iter().find(|r| !r["user"].is_null()).unwrap();
    assert_eq!(
        user["user"]["content"],
        json!([{"type": "text", "text": "make a file"}]),
        "{history:#}"
    );
    let approval = records.iter().find(|r| !r["approval"].is_null()).unwrap();
    assert_eq!(approval["approval"]["decision"], json!({"type": "allow_once"}));
    let replayed = records.iter().find(|r| kind(r) == "tool_finished").unwrap();
    assert_eq!(replayed["event"]["kind"]["view"], finished["event"]["kind"]["view"]);
    assert_eq!(records.iter().filter(|r| kind(r) == "turn_done").count(), 2);
    let missing = served.call("GET", "/api/sessions/nope/history", None);
    assert_eq!(missing.status, 404);

    // The index lists it, live, and a search finds it by its title.
    let listed = served.call("GET", "/api/sessions?q=MAKE%20A", None).json();
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["id"], id.as_str());
    assert_eq!(sessions[0]["live"], true);
    assert_eq!(
        served.call("GET", "/api/sessions?q=nothing-like-it", None).json(),
        json!({"sessions": []})
    );
    let unknown = served.call("POST", "/api/sessions/nope/prompt", Some(&json!({"text": "x"})));
    assert_eq!(unknown.status, 404);
    assert_eq!(served.stop(), Some(0));
}

#[test]
fn a_unix_socket_is_private_and_guarded_the_same_way() {
    use std::os::unix::net::UnixStream;
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let socket = home.path().join("serve.sock");
    let listen = format!("unix:{}", socket.display());
    // A socket a dead server left behind is replaced.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    assert!(socket.exists());
    let mut child = temp_run(home.path(), cwd.path())
        .command(&["serve", "--listen", &listen])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let token = line.trim_end().rsplit_once("?token=").unwrap().1.to_owned();
    assert_eq!(std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777, 0o600);
    let ask = |head: &str| {
        let mut stream = UnixStream::connect(&socket).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        write!(stream, "{head}\r\nConnection: close\r\n\r\n").unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        Answer::parse(&text)
    };
    let ok = ask(&format!(
        "GET /api/sessions HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}"
    ));
    assert_eq!(ok.status, 200, "{ok:?}");
    assert_eq!(ask("GET /api/sessions HTTP/1.1\r\nHost: localhost").status, 401);
    let foreign = ask(&format!(
        "GET /api/sessions HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer {token}"
    ));
    assert_eq!(foreign.status, 403);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert!(!socket.exists(), "the socket outlived the server");

    // A live one is not taken over.
    let live = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let output = temp_run(home.path(), cwd.path()).run(&["serve", "--listen", &listen], "");
    assert_eq!(output.status.code(), Some(2), "{}", String::from_utf8_lossy(&output.stderr));
    drop(live);
    assert!(!home.path().join("serve.json").exists());
}

#[test]
fn the_models_question_is_pending_for_every_client_and_the_first_answer_wins() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let script = Script::new()
        .reply(Reply::tool_call(
            "q1",
            "ask_user",
            json!({"question": "Which color should the button be?", "options": ["red", "blue"]}),
        ))
        .reply(Reply::text("Blue it is."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let served = Served::start(&run, &["-m", "test-model"]);
    let started = served.call("POST", "/api/sessions", Some(&json!({"prompt": "style it"})));
    assert_eq!(started.status, 201, "{started:?}");
    let id = started.json()["id"].as_str().unwrap().to_owned();

    let asked = read_events(&served, &id, 0, |e| kind(e) == "ask_user");
    let question = asked.last().unwrap();
    assert_eq!(question["event"]["kind"]["question"], "Which color should the button be?");
    assert_eq!(question["event"]["kind"]["options"], json!(["red", "blue"]));
    let pending = served.call("GET", &format!("/api/sessions/{id}/pending"), None).json();
    assert_eq!(pending, json!({"approvals": [], "questions": [question]}));
    let request_id = question["event"]["kind"]["id"].as_str().unwrap();
    // An approval's answer does not answer a question.
    let wrong_kind = served.call(
        "POST",
        &format!("/api/approvals/{request_id}"),
        Some(&json!({"decision": "allow_once"})),
    );
    assert_eq!(wrong_kind.status, 409);
    let answered = served.call(
        "POST",
        &format!("/api/questions/{request_id}"),
        Some(&json!({"text": "blue"})),
    );
    assert_eq!(answered.status, 200, "{answered:?}");
    let late = served.call(
        "POST",
        &format!("/api/questions/{request_id}"),
        Some(&json!({"decline": true})),
    );
    assert_eq!(late.status, 409);

    // The rest over a WebSocket, from the same cursor.
    let after = question["seq"].as_u64().unwrap();
    let rest = read_ws_events(&served, &id, after, |e| kind(e) == "turn_done");
    assert_eq!(rest[0]["seq"], after + 1, "{rest:#?}");
    assert!(
        rest.iter().any(|e| e["questionResolved"]
            == json!({"id": request_id, "answer": {"type": "answer", "text": "blue"}})),
        "{rest:#?}"
    );
    let body = server.requests()[1].raw_body.clone();
    assert!(body.contains("The user answered: blue"), "{body}");
    assert_eq!(served.stop(), Some(0));
}

/// Processes whose command line contains `needle`.
fn processes_running(needle: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.unwrap().path().join("cmdline")).ok())
        .filter(|cmdline| String::from_utf8_lossy(cmdline).replace('\0', " ").contains(needle))
        .count()
}

/// Waits (up to `PATIENCE`) until `done` holds.
fn eventually(done: impl Fn() -> bool) -> bool {
    let deadline = std::time::Instant::now() + PATIENCE;
    while std::time::Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

#[test]
fn cancel_stops_a_running_command_and_leaves_no_process() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    // A duration no other process on the machine uses, to find ours in /proc.
    let marker = format!("{}.{}", 70 + std::process::id() % 9, std::process::id() % 1000 + 7);
    let script = Script::new()
        .reply(Reply::tool_call("c1", "run_command", json!({"command": format!("sleep {marker}")})))
        // Only reached if the cancel loses a race with the next request; cut off then.
        .reply(Reply::text("too late").delay_ms(3000));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let served =
        Served::start(&run, &["-a", "never", "-s", "danger-full-access", "-m", "test-model"]);
    let started = served.call("POST", "/api/sessions", Some(&json!({"prompt": "wait"})));
    assert_eq!(started.status, 201, "{started:?}");
    let id = started.json()["id"].as_str().unwrap().to_owned();
    let before = read_events(&served, &id, 0, |e| kind(e) == "tool_started");
    assert!(eventually(|| processes_running(&format!("sleep {marker}")) > 0), "never started");

    let cancel = served.call("POST", &format!("/api/sessions/{id}/cancel"), Some(&json!({})));
    assert_eq!(cancel.status, 202, "{cancel:?}");
    let after = before.last().unwrap()["seq"].as_u64().unwrap();
    let rest = read_events(&served, &id, after, |e| kind(e) == "turn_done");
    assert_eq!(rest.last().unwrap()["event"]["kind"]["cancelled"], true, "{rest:#?}");
    assert!(
        eventually(|| processes_running(&format!("sleep {marker}")) == 0),
        "the cancelled command is still running"
    );
    assert_eq!(served.stop(), Some(0));
}

#[test]
fn stopping_the_server_stops_its_sessions_commands() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let marker = format!("{}.{}", 60 + std::process::id() % 9, std::process::id() % 1000 + 11);
    let script = Script::new().reply(Reply::tool_call(
        "c1",
        "run_command",
        json!({"command": format!("sleep {marker}")}),
    ));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let served =
        Served::start(&run, &["-a", "never", "-s", "danger-full-access", "-m", "test-model"]);
    let started = served.call("POST", "/api/sessions", Some(&json!({"prompt": "wait"})));
    let id = started.json()["id"].as_str().unwrap().to_owned();
    read_events(&served, &id, 0, |e| kind(e) == "tool_started");
    assert!(eventually(|| processes_running(&format!("sleep {marker}")) > 0), "never started");
    assert_eq!(served.stop(), Some(0));
    assert_eq!(processes_running(&format!("sleep {marker}")), 0, "outlived the server");
    assert!(!home.path().join("serve.json").exists(), "serve.json outlived the server");
    // The log ends as a cancelled turn does: the call answered, the step and the turn closed.
    let log = std::fs::read_dir(home.path().join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|ext| ext == "jsonl"))
        .unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "turn_end", "{text}");
    assert!(text.contains("\"type\":\"tool_result\""), "{text}");
}

#[test]
fn a_session_is_resumed_or_forked_by_its_id_and_one_writer_holds() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let work = cwd.path().canonicalize().unwrap();
    let script = Script::new()
        .reply(Reply::text("First answer."))
        .reply(Reply::text("Resumed answer."))
        .reply(Reply::text("Forked answer."))
        .reply(Reply::text("Steered answer."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let first = Served::start(&run, &["-m", "test-model"]);
    let started = first.call("POST", "/api/sessions", Some(&json!({"prompt": "remember 42"})));
    let id = started.json()["id"].as_str().unwrap().to_owned();
    read_events(&first, &id, 0, |e| kind(e) == "turn_done");
    let again = first.call("POST", "/api/sessions", Some(&json!({"resume": id})));
    assert_eq!(again.status, 409, "{again:?}");

    // Another server cannot take the log while the first holds it.
    let second = Served::start(&run, &["-m", "test-model"]);
    let held = second.call("POST", "/api/sessions", Some(&json!({"resume": id})));
    assert_eq!(held.status, 409, "{held:?}");
    let discovery: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("serve.json")).unwrap())
            .unwrap();
    assert_eq!(discovery["token"], first.token.as_str(), "the second took the first's file");
    assert_eq!(first.stop(), Some(0));

    let resumed = second.call(
        "POST",
        "/api/sessions",
        Some(&json!({"resume": id, "prompt": "what number?"})),
    );
    assert_eq!(resumed.status, 201, "{resumed:?}");
    let resumed = resumed.json();
    assert_eq!(resumed["id"], id.as_str());
    assert_eq!(resumed["cwd"], work.to_string_lossy().as_ref());
    let events = read_events(&second, &id, 0, |e| kind(e) == "turn_done");
    assert!(events.iter().any(|e| e["event"]["kind"]["text"] == "Resumed answer."));
    assert!(server.requests()[1].raw_body.contains("remember 42"), "the history went along");

    let forked = second.call("POST", "/api/sessions", Some(&json!({"fork": id, "prompt": "fork"})));
    assert_eq!(forked.status, 201, "{forked:?}");
    let fork_id = forked.json()["id"].as_str().unwrap().to_owned();
    assert_ne!(fork_id, id);
    let forked_turn = read_events(&second, &fork_id, 0, |e| kind(e) == "turn_done");
    let steer = second.call(
        "POST",
        &format!("/api/sessions/{fork_id}/steer"),
        Some(&json!({"text": "steer me"})),
    );
    assert_eq!(steer.status, 202, "{steer:?}");
    let after = forked_turn.last().unwrap()["seq"].as_u64().unwrap();
    let steered = read_events(&second, &fork_id, after, |e| kind(e) == "turn_done");
    assert!(steered.iter().any(|e| e["event"]["kind"]["text"] == "Steered answer."));
    assert!(server.requests()[3].raw_body.contains("steer me"));

    let unknown = second.call("POST", "/api/sessions", Some(&json!({"resume": "0000"})));
    assert_eq!(unknown.status, 404);
    let by_path = second.call("POST", "/api/sessions", Some(&json!({"resume": "/etc/passwd"})));
    assert_eq!(by_path.status, 404, "a request names no file");
    let both = second.call("POST", "/api/sessions", Some(&json!({"resume": id, "cwd": "/tmp"})));
    assert_eq!(both.status, 400);
    assert_eq!(second.stop(), Some(0));
}

#[test]
fn the_list_leaves_out_subagents_logs() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let script = Script::new()
        .reply(Reply::tool_call("t1", "agent", json!({"task": "look around"})))
        .reply(Reply::text("CHILD-ANSWER: nothing here"))
        .reply(Reply::text("The subagent found nothing."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let served =
        Served::start(&run, &["-a", "never", "-s", "danger-full-access", "-m", "test-model"]);
    let started = served.call("POST", "/api/sessions", Some(&json!({"prompt": "delegate"})));
    let id = started.json()["id"].as_str().unwrap().to_owned();
    // The subagent's events come in the same stream, marked by their source.
    let events = read_events(&served, &id, 0, |e| {
        kind(e) == "turn_done" && e["event"]["source"]["subagentPath"].is_null()
    });
    assert!(events.iter().any(|e| e["event"]["kind"]["text"] == "CHILD-ANSWER: nothing here"
        && e["event"]["source"]["subagentPath"] == json!(["t1"])));
    assert!(
        events.iter().any(|e| e["event"]["kind"]["text"] == "The subagent found nothing."),
        "{events:#?}"
    );
    assert_eq!(session_files(home.path()), 2, "the subagent has a log of its own");
    let listed = served.call("GET", "/api/sessions", None).json();
    let ids: Vec<&str> =
        listed["sessions"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [id.as_str()], "{listed}");
    assert_eq!(served.stop(), Some(0));
}

/// Starts a session through the API and returns its id.
fn start_session(served: &Served, body: &Value) -> String {
    let started = served.call("POST", "/api/sessions", Some(body));
    assert_eq!(started.status, 201, "{started:?}");
    started.json()["id"].as_str().unwrap().to_owned()
}

#[test]
fn a_session_is_described_switched_between_modes_and_closed() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let own = cwd.path().canonicalize().unwrap().to_string_lossy().into_owned();
    let elsewhere = other.path().canonicalize().unwrap().to_string_lossy().into_owned();
    let script = Script::new().reply(Reply::text("Planned.")).reply(Reply::text("Elsewhere."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let served = Served::start(&run, &["-m", "test-model", "-a", "on-request"]);

    // The server's own project comes first even before it has a session.
    let projects = served.call("GET", "/api/projects", None).json();
    assert_eq!(projects, json!({"projects": [{"cwd": own, "sessions": 0, "updatedMs": null}]}));

    let bad_effort =
        served.call("POST", "/api/sessions", Some(&json!({"effort": "enormous", "prompt": "x"})));
    assert_eq!(bad_effort.status, 400, "{bad_effort:?}");
    let bypass = served.call(
        "POST",
        "/api/sessions",
        Some(&json!({"permissionMode": "bypassPermissions", "prompt": "x"})),
    );
    assert_eq!(bypass.status, 400, "a request never bypasses the server's policy: {bypass:?}");
    assert_eq!(session_files(home.path()), 0);

    let id = start_session(
        &served,
        &json!({"prompt": "plan it", "model": "other-model", "effort": "low", "permissionMode": "plan"}),
    );
    read_events(&served, &id, 0, |e| kind(e) == "turn_done");
    let body: Value = serde_json::from_str(&server.requests()[0].raw_body).unwrap();
    assert_eq!(body["model"], "other-model", "the session's own model");
    assert_eq!(body["reasoning"]["effort"], "low", "{body:#}");
    let info = served.call("GET", &format!("/api/sessions/{id}"), None);
    assert_eq!(info.status, 200, "{info:?}");
    let info = info.json();
    assert_eq!(info["id"], id.as_str());
    assert_eq!(info["cwd"], own.as_str());
    assert_eq!(info["live"], true);
    assert_eq!(info["model"], "other-model");
    assert_eq!(info["permissionMode"], "plan");
    assert_eq!(info["approval"], "on-request", "the server's approval policy: {info}");
    assert!(info["sandbox"].is_string(), "{info}");
    assert!(info["contextWindow"].as_u64().unwrap() > 0, "{info}");
    assert_eq!(info["title"], "plan it");

    let mode = served.call(
        "POST",
        &format!("/api/sessions/{id}/mode"),
        Some(&json!({"permissionMode": "acceptEdits"})),
    );
    assert_eq!(mode.status, 200, "{mode:?}");
    assert_eq!(mode.json(), json!({"permissionMode": "acceptEdits"}));
    let refused = served.call(
        "POST",
        &format!("/api/sessions/{id}/mode"),
        Some(&json!({"permissionMode": "bypassPermissions"})),
    );
    assert_eq!(refused.status, 400);
    let info = served.call("GET", &format!("/api/sessions/{id}"), None).json();
    assert_eq!(info["permissionMode"], "acceptEdits");

    // A session elsewhere makes a project of its own, newest after the server's.
    let there = start_session(&served, &json!({"prompt": "over there", "cwd": other.path()}));
    read_events(&served, &there, 0, |e| kind(e) == "turn_done");
    let projects = served.call("GET", "/api/projects", None).json();
    let listed: Vec<(&str, u64)> = projects["projects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["cwd"].as_str().unwrap(), p["sessions"].as_u64().unwrap()))
        .collect();
    assert_eq!(listed, [(own.as_str(), 1), (elsewhere.as_str(), 1)], "{projects}");

    // Closing stops hosting it: its stream ends, its log is free, the index still knows it.
    let closed = served.call("POST", &format!("/api/sessions/{id}/close"), Some(&json!({})));
    assert_eq!(closed.status, 200, "{closed:?}");
    let info = served.call("GET", &format!("/api/sessions/{id}"), None).json();
    assert_eq!(info["live"], false, "{info}");
    assert_eq!(info["permissionMode"], Value::Null);
    assert_eq!(info["model"], "other-model");
    let again = served.call("POST", &format!("/api/sessions/{id}/close"), Some(&json!({})));
    assert_eq!(again.status, 404);
    let prompt =
        served.call("POST", &format!("/api/sessions/{id}/prompt"), Some(&json!({"text": "x"})));
    assert_eq!(prompt.status, 404);
    let resumed = served.call("POST", "/api/sessions", Some(&json!({"resume": id})));
    assert_eq!(resumed.status, 201, "the closed session's log is unlocked: {resumed:?}");
    assert_eq!(served.call("GET", "/api/sessions/nope", None).status, 404);

    let schema = served.call("GET", "/api/schema", None);
    assert_eq!(schema.status, 200);
    let schema = schema.json();
    let checked_in: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../serve/api-schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(schema, checked_in, "GET /api/schema serves the checked-in schema");
    assert_eq!(served.stop(), Some(0));
}

#[test]
fn files_for_completion_respect_gitignore_and_slash_commands_list_and_run() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let root = cwd.path();
    std::fs::create_dir_all(root.join("src/deep")).unwrap();
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::create_dir_all(root.join(".claude/commands")).unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
    for file in ["src/main.rs", "src/deep/mainly.txt", "README.md", "target/main.o", "app.log"] {
        std::fs::write(root.join(file), "x\n").unwrap();
    }
    std::fs::write(
        root.join(".claude/commands/review.md"),
        "---\ndescription: Review the change\n---\nReview this: $ARGUMENTS\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join(".claude/skills/notes")).unwrap();
    std::fs::write(
        root.join(".claude/skills/notes/SKILL.md"),
        "---\nname: notes\ndescription: Takes notes.\n---\nWrite notes about $ARGUMENTS.\n",
    )
    .unwrap();
    let script = Script::new()
        .reply(Reply::text("Hello."))
        .reply(Reply::text("Reviewed."))
        .reply(Reply::text("Noted."))
        .reply(Reply::text("The summary of it all."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: root, env: openai_env(&server) };
    let served = Served::start(&run, &["-m", "test-model"]);
    let id = start_session(&served, &json!({"prompt": "hi"}));
    read_events(&served, &id, 0, |e| kind(e) == "turn_done");

    let files = served.call("GET", &format!("/api/sessions/{id}/files?q=main"), None).json();
    assert_eq!(files, json!({"files": ["src/main.rs", "src/deep/mainly.txt"]}));
    let all = served.call("GET", &format!("/api/sessions/{id}/files"), None).json();
    let all: Vec<&str> =
        all["files"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert!(all.contains(&"README.md") && all.contains(&"src/main.rs"), "{all:?}");
    assert!(!all.iter().any(|f| f.starts_with("target/") || f.ends_with(".log")), "{all:?}");
    let fuzzy = served.call("GET", &format!("/api/sessions/{id}/files?q=smr"), None).json();
    assert_eq!(fuzzy["files"][0], "src/main.rs", "{fuzzy}");

    let commands = served.call("GET", &format!("/api/sessions/{id}/commands"), None).json();
    let commands = commands["commands"].as_array().unwrap();
    for builtin in ["undo", "rewind", "compact", "plan"] {
        assert!(
            commands.iter().any(|c| c["name"] == builtin && c["kind"] == "builtin"),
            "{commands:#?}"
        );
    }
    let notes = commands.iter().find(|c| c["name"] == "notes").unwrap();
    assert_eq!(notes["kind"], "skill", "{commands:#?}");
    let review = commands.iter().find(|c| c["name"] == "review").unwrap();
    assert_eq!(review["kind"], "prompt");
    assert_eq!(review["description"], "Review the change");

    let prompt = |text: &str| {
        served.call("POST", &format!("/api/sessions/{id}/prompt"), Some(&json!({"text": text})))
    };
    let unknown = prompt("/frobnicate now");
    assert_eq!(unknown.status, 400);
    assert!(unknown.json()["error"].as_str().unwrap().contains("/frobnicate"), "{unknown:?}");
    let plan = prompt("/plan");
    assert_eq!(plan.status, 200, "{plan:?}");
    assert_eq!(plan.json(), json!({"command": "plan", "permissionMode": "plan"}));
    let off = prompt("/plan off");
    assert_eq!(off.json()["permissionMode"], "default");
    let info = served.call("GET", &format!("/api/sessions/{id}"), None).json();
    assert_eq!(info["permissionMode"], "default");

    // A custom prompt is expanded by the runtime into what the model gets.
    let before = read_events(&served, &id, 0, |e| kind(e) == "turn_done");
    let after = before.last().unwrap()["seq"].as_u64().unwrap();
    assert_eq!(prompt("/review the parser").status, 202);
    let reviewed = read_events(&served, &id, after, |e| kind(e) == "turn_done");
    let body = server.requests()[1].raw_body.clone();
    assert!(body.contains("Review this: the parser"), "{body}");

    // A skill is activated as `$name` would, with the rest as its arguments.
    let after = reviewed.last().unwrap()["seq"].as_u64().unwrap();
    assert_eq!(prompt("/notes the lexer").status, 202);
    let noted = read_events(&served, &id, after, |e| kind(e) == "turn_done");
    let body = server.requests()[2].raw_body.clone();
    assert!(body.contains("Write notes about the lexer"), "{body}");

    // `/compact` runs on the server: a compaction of its own.
    let after = noted.last().unwrap()["seq"].as_u64().unwrap();
    let compact = prompt("/compact");
    assert_eq!(compact.status, 202, "{compact:?}");
    assert_eq!(compact.json(), json!({"command": "compact"}));
    let compacted = read_events(&served, &id, after, |e| kind(e) == "turn_done");
    assert!(compacted.iter().any(|e| kind(e) == "compacted"), "{compacted:#?}");
    assert_eq!(served.stop(), Some(0));
}

#[test]
fn undo_and_rewind_take_files_and_the_conversation_back() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let root = cwd.path();
    let status = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(root)
        .env("HOME", home.path())
        .status()
        .unwrap();
    assert!(status.success());
    let script = Script::new()
        .reply(Reply::tool_call("c1", "write_file", json!({"path": "a.txt", "content": "v1\n"})))
        .reply(Reply::text("Wrote a."))
        .reply(Reply::tool_call(
            "c2",
            "edit",
            json!({"path": "a.txt", "old_string": "v1", "new_string": "v2"}),
        ))
        .reply(Reply::text("Changed a."))
        .reply(Reply::text("After."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: root, env: openai_env(&server) };
    let served = Served::start(&run, &["-a", "never", "-s", "workspace-write", "-m", "test-model"]);
    let id = start_session(&served, &json!({"prompt": "first change"}));
    let first = read_events(&served, &id, 0, |e| kind(e) == "turn_done");
    let seq = first.last().unwrap()["seq"].as_u64().unwrap();
    let undo_none =
        served.call("POST", &format!("/api/sessions/{id}/rewind"), Some(&json!({"turns": 3})));
    assert_eq!(undo_none.status, 409, "{undo_none:?}");
    let prompt = |text: &str| {
        served.call("POST", &format!("/api/sessions/{id}/prompt"), Some(&json!({"text": text})))
    };
    assert_eq!(prompt("second change").status, 202);
    let second = read_events(&served, &id, seq, |e| kind(e) == "turn_done");
    let seq = second.last().unwrap()["seq"].as_u64().unwrap();
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "v2\n");

    // Back past the last prompt: its file change and its messages are gone.
    let rewound =
        served.call("POST", &format!("/api/sessions/{id}/rewind"), Some(&json!({"turns": 1})));
    assert_eq!(rewound.status, 200, "{rewound:?}");
    let rewound = rewound.json();
    assert_eq!(rewound["turn"], 2, "{rewound}");
    assert_eq!(rewound["conversation"], true);
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "v1\n");

    // `/undo` as a prompt: the first turn's file goes too.
    let undone = prompt("/undo");
    assert_eq!(undone.status, 200, "{undone:?}");
    let undone = undone.json();
    assert_eq!(undone["command"], "undo");
    assert_eq!(undone["rewound"]["turn"], 1, "{undone}");
    assert!(!root.join("a.txt").exists());
    let nothing = served.call("POST", &format!("/api/sessions/{id}/undo"), Some(&json!({})));
    assert_eq!(nothing.status, 409, "{nothing:?}");

    // The next request carries the first prompt and not the rewound one.
    assert_eq!(prompt("after").status, 202);
    read_events(&served, &id, seq, |e| kind(e) == "turn_done" && e["seq"].as_u64() > Some(seq));
    let body = server.requests().last().unwrap().raw_body.clone();
    assert!(body.contains("first change") && body.contains("after"), "{body}");
    assert!(!body.contains("second change"), "the rewound prompt was sent again: {body}");
    assert_eq!(served.stop(), Some(0));
}

#[test]
fn a_running_turn_refuses_undo_and_a_plan_review_is_answered_as_a_question() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let script = Script::new()
        .reply(Reply::tool_call("p1", "exit_plan_mode", json!({"plan": "1. read\n2. write"})))
        .reply(Reply::text("Carrying it out."));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let served = Served::start(&run, &["-m", "test-model"]);
    let id = start_session(&served, &json!({"prompt": "plan first", "permissionMode": "plan"}));
    let asked = read_events(&served, &id, 0, |e| kind(e) == "ask_user");
    let review = asked.last().unwrap();
    assert_eq!(review["event"]["kind"]["options"], json!(["Approve", "Keep planning"]));
    assert!(review["event"]["kind"]["question"].as_str().unwrap().contains("2. write"));
    // The turn waits for the review: undo and rewind are refused meanwhile.
    let undo = served.call("POST", &format!("/api/sessions/{id}/undo"), Some(&json!({})));
    assert_eq!(undo.status, 409, "{undo:?}");
    assert!(undo.json()["error"].as_str().unwrap().contains("turn is running"), "{undo:?}");
    let pending = served.call("GET", &format!("/api/sessions/{id}/pending"), None).json();
    assert_eq!(pending["questions"][0], *review);
    let request_id = review["event"]["kind"]["id"].as_str().unwrap();
    let approved = served.call(
        "POST",
        &format!("/api/questions/{request_id}"),
        Some(&json!({"text": "Approve"})),
    );
    assert_eq!(approved.status, 200, "{approved:?}");
    let seq = review["seq"].as_u64().unwrap();
    read_events(&served, &id, seq, |e| kind(e) == "turn_done");
    let info = served.call("GET", &format!("/api/sessions/{id}"), None).json();
    assert_eq!(info["permissionMode"], "default", "an approved plan leaves plan mode: {info}");
    assert_eq!(served.stop(), Some(0));
}

#[test]
fn a_reader_behind_the_kept_events_is_told_of_the_gap() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let script = Script::new()
        .reply(Reply::text_chunks(["one ", "two ", "three ", "four ", "five ", "six"]));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let served = Served::start(&run, &["-m", "test-model", "--max-events", "4"]);
    let id = start_session(&served, &json!({"prompt": "count"}));
    // Read until the turn ends, from the start: the oldest are gone by then.
    let mut items = read_events(&served, &id, 0, |e| kind(e) == "turn_done");
    let mut guard = 0;
    while items.first().is_some_and(|first| first["gap"].is_null()) && guard < 50 {
        // The reader was fast enough to see the first events: read again from the start.
        items = read_events(&served, &id, 0, |e| kind(e) == "turn_done");
        guard += 1;
    }
    let gap = &items[0];
    assert_eq!(gap["sessionId"], id.as_str());
    assert_eq!(gap["gap"]["from"], 1, "{items:#?}");
    let to = gap["gap"]["to"].as_u64().unwrap();
    assert_eq!(gap["seq"], to);
    assert_eq!(items[1]["seq"], to + 1, "the stream goes on right after the gap");
    assert!(items.len() <= 5, "at most 4 events kept: {items:#?}");
    // A reader within what is kept gets no gap.
    let last = items.last().unwrap()["seq"].as_u64().unwrap();
    let recent = read_events(&served, &id, last - 2, |e| kind(e) == "turn_done");
    assert_eq!(recent[0]["seq"], last - 1, "{recent:#?}");
    // The history still has it all.
    let history = served.call("GET", &format!("/api/sessions/{id}/history"), None).json();
    assert!(history["events"].as_array().unwrap().iter().any(|e| e["user"].is_object()));
    assert_eq!(served.stop(), Some(0));
}

#[test]
fn every_reader_sees_each_prompt_before_the_turn_it_starts() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let script = Script::new().reply(Reply::text("first answer")).reply(Reply::text("second"));
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let served = Served::start(&run, &["-m", "test-model"]);
    let id = start_session(&served, &json!({"prompt": "from the browser"}));
    let first = read_events(&served, &id, 0, |e| kind(e) == "turn_done");
    // Another client prompts the same session; a reader that joins later sees both prompts.
    let sent = served.call(
        "POST",
        &format!("/api/sessions/{id}/prompt"),
        Some(&json!({"text": "from a terminal"})),
    );
    assert_eq!(sent.status, 202, "{sent:?}");
    let after = first.last().unwrap()["seq"].as_u64().unwrap();
    read_events(&served, &id, after, |e| kind(e) == "turn_done");
    let all = read_ws_events(&served, &id, 0, |e| {
        kind(e) == "turn_done" && e["seq"].as_u64() > Some(after)
    });
    let prompts: Vec<(usize, &str)> = all
        .iter()
        .enumerate()
        .filter_map(|(at, e)| Some((at, e["user"]["input"]["content"][0]["text"].as_str()?)))
        .collect();
    let texts: Vec<&str> = prompts.iter().map(|(_, text)| *text).collect();
    assert_eq!(texts, ["from the browser", "from a terminal"], "{all:#?}");
    for (at, _) in prompts {
        assert_eq!(all[at]["user"]["steer"], false);
        let next_turn = all[at..].iter().position(|e| kind(e) == "turn_started");
        let next_prompt = all[at + 1..].iter().position(|e| e["user"].is_object());
        assert!(
            next_turn.is_some_and(|turn| next_prompt.is_none_or(|prompt| turn <= prompt)),
            "each prompt comes before the turn it starts: {all:#?}"
        );
    }
    assert_eq!(served.stop(), Some(0));
}

#[test]
fn a_unix_socket_directory_is_made_private_or_refused_when_shared() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let run = temp_run(home.path(), cwd.path());
    let dir = home.path().join("run/serve");
    let socket = dir.join("s.sock");
    let mut child = run
        .command(&["serve", "--listen", &format!("unix:{}", socket.display())])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("http://localhost/?token="), "{line}");
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));

    let shared = home.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let output = run.run(&["serve", "--listen", &format!("unix:{}/s.sock", shared.display())], "");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("other users may write to"), "{stderr}");
    assert!(stderr.contains(&shared.display().to_string()), "{stderr}");
    assert!(output.stdout.is_empty());
    assert!(!shared.join("s.sock").exists());
    assert!(!home.path().join("serve.json").exists());
}

#[test]
fn open_starts_the_browser_with_the_url_or_warns_when_there_is_none() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let record = bin.path().join("opened");
    let browser = bin.path().join("browser");
    std::fs::write(
        &browser,
        format!("#!/bin/sh\necho \"$@\" > {}.part\nmv {0}.part {0}\n", record.display()),
    )
    .unwrap();
    std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = Run {
        home: home.path(),
        cwd: cwd.path(),
        env: vec![("BROWSER".into(), format!("/nonexistent/browser:{}", browser.display()))],
    };
    let served = Served::start(&run, &["--open"]);
    assert!(eventually(|| record.exists()), "the browser was never started");
    // The browser's command line, which every local user can read, holds a private page's
    // address, never the token.
    let opened = std::fs::read_to_string(&record).unwrap().trim_end().to_owned();
    assert!(!opened.contains(&served.token), "{opened}");
    let page = home.path().join(format!("serve-open-{}.html", served.child.id()));
    assert_eq!(opened, format!("file://{}", page.display()));
    let mode = std::fs::metadata(&page).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let text = std::fs::read_to_string(&page).unwrap();
    assert!(text.contains("http-equiv=\"refresh\""), "{text}");
    assert!(text.contains(&format!("location.replace(\"{}\")", served.url)), "{text}");
    assert_eq!(served.stop(), Some(0));
    assert!(!page.exists(), "the page outlived the server");

    // No browser at all: a warning, and the server serves anyway.
    let empty = tempfile::tempdir().unwrap();
    let run = Run {
        home: home.path(),
        cwd: cwd.path(),
        env: vec![
            ("BROWSER".into(), "/nonexistent/browser".into()),
            ("PATH".into(), empty.path().display().to_string()),
        ],
    };
    let mut child = run
        .command(&["serve", "--open"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("http://127.0.0.1:"), "{line}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("--open") && stderr.contains("open the URL above yourself"),
        "{stderr}"
    );
}
