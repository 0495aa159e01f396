//! `codecoder serve` with many sessions (prints figures; issue 28's benchmark): one real
//! `codecoder serve` process (temp home, the fake model over loopback), 50 sessions started at
//! once through `POST /api/sessions` with a prompt, each followed over a WebSocket on its
//! events until its turn is done; then, with all of them hosted and idle, the server's VmRSS
//! against its VmRSS before the first session (with the 50 readers still attached, and again
//! once they left and the server's connection threads ended), and the growth per session.
//! Then 10 more sessions one at a time (the cost of one more session once the shared parts
//! are paid), and the event latency with the server idle.
//!
//! Latency: every reply of the fake model is a stream of text deltas `<T> `, T being the wall
//! clock's microseconds when the fake model wrote that delta (`Reply::stamped`); a WebSocket
//! reader takes its own clock when a frame arrives and counts each `<T>` in a `text_delta`
//! event as one sample (the kernel may merge deltas that arrived together into one event).
//! So a sample is the fake model's write → the provider's parse → the kernel → the server's
//! hub → the reader: an upper bound on "the kernel emitted it → a client has it". Three runs:
//! the 50 sessions' first turns, streaming while the others start (deltas sent before the
//! reader connected are left out: that is the backlog a late reader is sent, not latency); the
//! 50 sessions' second turns, all prompted at once; one session's turns, one at a time, with
//! the other sessions hosted and idle.
//!
//! `CODECODER_BENCH_BIN` measures another codecoder build (a release one). Run:
//! `cargo bench --profile dev -p codecoder-cli --bench serve [-- SESSIONS]` (default 50).
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::cast_precision_loss
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Barrier;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use codecoder_protocol::env::{
    CODECODER_BENCH_BIN, CODECODER_HOME, HOME, OPENAI_API_KEY, OPENAI_BASE_URL, PATH,
};
use codecoder_test_support::{FakeModelServer, Reply, SEND_STAMP, Script};
use serde_json::{Value, json};
use tungstenite::client::IntoClientRequest;
use tungstenite::{Message, WebSocket};

#[path = "support/mod.rs"]
mod support;
use support::agents::load_average;
use support::median;

const BIN: &str = env!("CARGO_BIN_EXE_codecoder");
/// Text deltas in every reply, and the pause between two of them.
const DELTAS: usize = 20;
const PACE_MS: u64 = 5;
/// Sessions started one at a time after the concurrent ones.
const EXTRA: usize = 10;
/// Turns of the idle-server latency run.
const IDLE_TURNS: usize = 25;
/// A guard against a run that hangs, not a measure.
const PATIENCE: Duration = Duration::from_secs(120);
/// How long the server's idle connection threads may take to notice their readers left (its
/// keep-alive comes every 15 s; the write after a close is the one that fails).
const CONNECTIONS_GONE: Duration = Duration::from_secs(45);

/// The running server.
struct Served {
    child: Child,
    port: u16,
    token: String,
}

impl Served {
    fn start(dir: &Path, model: &FakeModelServer) -> Self {
        let mut child = Command::new(bin())
            .args(["serve", "-m", "test-model"])
            .current_dir(dir.join("ws"))
            .env_clear()
            .env(PATH, std::env::var_os(PATH).unwrap_or_default())
            .env(HOME, dir.join("user"))
            .env(CODECODER_HOME, dir.join("home"))
            .env(OPENAI_BASE_URL, format!("{}/v1", model.base_url()))
            .env(OPENAI_API_KEY, "sk-bench")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let rest =
            line.trim().strip_prefix("http://127.0.0.1:").unwrap_or_else(|| panic!("{line}"));
        let (port, token) = rest.split_once("/?token=").unwrap();
        Self { child, port: port.parse().unwrap(), token: token.to_owned() }
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A JSON request with the token; the answer's status and JSON body (`Null` when none).
    fn call(&self, method: &str, path: &str, body: &Value) -> (u16, Value) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        let body = body.to_string();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.host(),
            self.token,
            body.len()
        )
        .unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        (status, serde_json::from_str(body).unwrap_or(Value::Null))
    }

    /// Starts a session with `prompt`; its id.
    fn start_session(&self, prompt: &str) -> String {
        let (status, body) = self.call("POST", "/api/sessions", &json!({ "prompt": prompt }));
        assert_eq!(status, 201, "{body}");
        body["id"].as_str().unwrap().to_owned()
    }

    /// A WebSocket on the session's events after `after`, and the wall-clock time (µs) it was
    /// open.
    fn events(&self, id: &str, after: u64) -> (WebSocket<TcpStream>, u128) {
        let stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        stream.set_nodelay(true).unwrap();
        let mut request = format!("ws://{}/api/sessions/{id}/events?after={after}", self.host())
            .into_client_request()
            .unwrap();
        request
            .headers_mut()
            .insert("Authorization", format!("Bearer {}", self.token).parse().unwrap());
        let (socket, _) = tungstenite::client::client(request, stream).unwrap();
        (socket, now_us())
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn now_us() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros()
}

/// What one reader saw of a turn.
struct Turn {
    /// The turn ended `completed`.
    completed: bool,
    /// Latency samples in ms.
    samples: Vec<f64>,
    /// The last `seq` read.
    cursor: u64,
}

/// Reads events until a `turn_done`; deltas stamped before `since` (µs) are not samples.
fn read_turn(socket: &mut WebSocket<TcpStream>, since: u128) -> Turn {
    let mut turn = Turn { completed: false, samples: Vec::new(), cursor: 0 };
    loop {
        let message = socket.read().unwrap();
        let at = now_us();
        let Message::Text(text) = message else {
            assert!(!matches!(message, Message::Close(_)), "the stream closed mid-turn");
            continue;
        };
        let record: Value = serde_json::from_str(text.as_str()).unwrap();
        turn.cursor = record["seq"].as_u64().unwrap_or(turn.cursor);
        let kind = &record["event"]["kind"];
        match kind["type"].as_str() {
            Some("text_delta") => {
                let delta = kind["delta"].as_str().unwrap_or_default();
                for stamp in delta.split('<').skip(1).filter_map(|s| s.split_once('>')) {
                    let sent: u128 = stamp.0.parse().unwrap();
                    if sent >= since {
                        turn.samples.push(at.saturating_sub(sent) as f64 / 1000.0);
                    }
                }
            }
            Some("turn_done") => {
                turn.completed = kind["outcome"]["type"] == "completed";
                return turn;
            }
            _ => {}
        }
    }
}

/// The process's memory and threads, from `/proc`.
#[derive(Clone, Copy)]
struct Memory {
    rss_kib: u64,
    anon_kib: u64,
    file_kib: u64,
    threads: u64,
}

impl Memory {
    fn of(pid: u32) -> Self {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let field = |key: &str| {
            status
                .lines()
                .find(|line| line.starts_with(key))
                .and_then(|line| line.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        Self {
            rss_kib: field("VmRSS:"),
            anon_kib: field("RssAnon:"),
            file_kib: field("RssFile:"),
            threads: field("Threads:"),
        }
    }

    fn show(self) -> String {
        format!(
            "VmRSS {:.1} MiB (anon {:.1}, file {:.1}), {} threads",
            mib(self.rss_kib),
            mib(self.anon_kib),
            mib(self.file_kib),
            self.threads
        )
    }

    /// Growth from `base` per session, in MiB: VmRSS and its anonymous part.
    fn per_session(self, base: Self, sessions: usize) -> String {
        let per = |now: u64, then: u64| (now as f64 - then as f64) / 1024.0 / sessions as f64;
        format!(
            "{:.2} MiB per session (anon {:.2})",
            per(self.rss_kib, base.rss_kib),
            per(self.anon_kib, base.anon_kib)
        )
    }
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The server's threads by name (digits and a trailing id dropped), most first.
fn threads_by_name(pid: u32) -> String {
    let mut names: Vec<(String, usize)> = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        // `serve-conn-7`, `serve-session-2` (a name is cut at 15 bytes): the number goes.
        let name = match comm.trim().rsplit_once('-') {
            Some((name, id)) if id.chars().all(|c| c.is_ascii_hexdigit()) => name,
            Some(_) | None => comm.trim(),
        };
        match names.iter_mut().find(|(known, _)| known == name) {
            Some((_, count)) => *count += 1,
            None => names.push((name.to_owned(), 1)),
        }
    }
    names.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
    names.iter().map(|(name, count)| format!("{name} {count}")).collect::<Vec<_>>().join(", ")
}

/// Waits (up to `CONNECTIONS_GONE`) until the server has no connection thread left.
fn connections_gone(pid: u32) -> bool {
    let started = Instant::now();
    while started.elapsed() < CONNECTIONS_GONE {
        if !threads_by_name(pid).contains("serve-conn") {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

fn percentile(mut samples: Vec<f64>, p: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    let rank = ((samples.len() as f64 * p).ceil() as usize).clamp(1, samples.len());
    samples[rank - 1]
}

fn latency(samples: &[f64]) -> String {
    if samples.is_empty() {
        return "no samples".to_owned();
    }
    format!(
        "median {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} samples)",
        median(samples.to_vec()),
        percentile(samples.to_vec(), 0.99),
        samples.iter().copied().fold(0.0, f64::max),
        samples.len()
    )
}

/// The codecoder binary measured: `CODECODER_BENCH_BIN`, else the one cargo built.
fn bin() -> PathBuf {
    std::env::var_os(CODECODER_BENCH_BIN)
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from(BIN), PathBuf::from)
}

fn main() {
    let sessions: usize = std::env::args().skip(1).find_map(|arg| arg.parse().ok()).unwrap_or(50);
    let dir = tempfile::tempdir().unwrap();
    for sub in ["home", "user", "ws"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    let chunks = vec![format!("<{SEND_STAMP}> "); DELTAS];
    let reply = Reply::text_chunks(chunks).stamped().pace_ms(PACE_MS);
    let model = FakeModelServer::start(Script::new().when_exhausted(reply)).unwrap();
    let served = Served::start(dir.path(), &model);
    let pid = served.pid();
    println!(
        "serve: {sessions} sessions ({} cores, load {}); codecoder: {}",
        std::thread::available_parallelism().map_or(1, usize::from),
        load_average(),
        bin().display()
    );
    println!("each turn: {DELTAS} stamped text deltas {PACE_MS} ms apart from the fake model");
    std::thread::sleep(Duration::from_millis(500));
    let before = Memory::of(pid);
    println!("before any session: {}", before.show());

    // All sessions at once: each thread starts one and follows it to its turn's end, then
    // stays attached until every session is done and the memory is read.
    let barrier = Barrier::new(sessions + 1);
    let started = Instant::now();
    let (turns, sockets, after_attached) = std::thread::scope(|scope| {
        let readers: Vec<_> = (0..sessions)
            .map(|n| {
                let (served, barrier) = (&served, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    let id = served.start_session(&format!("task {n}"));
                    let (mut socket, since) = served.events(&id, 0);
                    let turn = read_turn(&mut socket, since);
                    (id, turn, socket)
                })
            })
            .collect();
        barrier.wait();
        let done: Vec<_> = readers.into_iter().map(|reader| reader.join().unwrap()).collect();
        let elapsed = started.elapsed();
        let finished = done.iter().filter(|(_, turn, _)| turn.completed).count();
        println!(
            "{finished} of {sessions} turns completed, {:.2} s from the first POST to the last turn_done; {} model requests; load {}",
            elapsed.as_secs_f64(),
            model.requests().len(),
            load_average()
        );
        assert_eq!(finished, sessions, "every session's turn completes");
        std::thread::sleep(Duration::from_millis(500));
        let attached = Memory::of(pid);
        let mut turns = Vec::new();
        let mut sockets = Vec::new();
        for (id, turn, socket) in done {
            turns.push((id, turn));
            sockets.push(socket);
        }
        (turns, sockets, attached)
    });
    let loaded: Vec<f64> = turns.iter().flat_map(|(_, turn)| turn.samples.clone()).collect();
    println!(
        "{sessions} idle sessions, their readers attached: {}; {}",
        after_attached.show(),
        after_attached.per_session(before, sessions)
    );
    println!("  threads: {}", threads_by_name(pid));
    for mut socket in sockets {
        let _ = socket.close(None);
        let _ = socket.flush();
    }
    let gone = connections_gone(pid);
    std::thread::sleep(Duration::from_millis(500));
    let after = Memory::of(pid);
    println!(
        "{sessions} idle sessions, no reader{}: {}; {}",
        if gone { "" } else { " (connection threads still there)" },
        after.show(),
        after.per_session(before, sessions)
    );
    println!("  threads: {}", threads_by_name(pid));

    // One more session at a time, once the shared parts (code paged in, caches) are paid.
    for n in 0..EXTRA {
        let id = served.start_session(&format!("extra {n}"));
        let (mut socket, since) = served.events(&id, 0);
        assert!(read_turn(&mut socket, since).completed);
        let _ = socket.close(None);
        let _ = socket.flush();
    }
    connections_gone(pid);
    std::thread::sleep(Duration::from_millis(500));
    let extra = Memory::of(pid);
    println!(
        "{} idle sessions: {}; the last {EXTRA}, one at a time: {}",
        sessions + EXTRA,
        extra.show(),
        extra.per_session(after, EXTRA)
    );

    // Every started session's second turn at once: the server's fan-out under load, without
    // the sessions' start-up.
    let barrier = Barrier::new(sessions);
    let streaming: Vec<Turn> = std::thread::scope(|scope| {
        let readers: Vec<_> = turns
            .iter()
            .map(|(id, turn)| {
                let (served, barrier) = (&served, &barrier);
                scope.spawn(move || {
                    let (mut socket, _) = served.events(id, turn.cursor);
                    barrier.wait();
                    let since = now_us();
                    let path = format!("/api/sessions/{id}/prompt");
                    let (status, body) = served.call("POST", &path, &json!({"text": "once more"}));
                    assert_eq!(status, 202, "{body}");
                    let turn = read_turn(&mut socket, since);
                    assert!(turn.completed);
                    let _ = socket.close(None);
                    let _ = socket.flush();
                    turn
                })
            })
            .collect();
        readers.into_iter().map(|reader| reader.join().unwrap()).collect()
    });
    let cursor = streaming[0].cursor;
    let streaming: Vec<f64> = streaming.into_iter().flat_map(|turn| turn.samples).collect();
    let streaming_load = load_average();

    // The idle server: one session's turns, one at a time.
    let (id, _) = &turns[0];
    let (mut socket, _) = served.events(id, cursor);
    let mut idle = Vec::new();
    for n in 0..IDLE_TURNS {
        let since = now_us();
        let (status, body) = served.call(
            "POST",
            &format!("/api/sessions/{id}/prompt"),
            &json!({"text": format!("again {n}")}),
        );
        assert_eq!(status, 202, "{body}");
        let turn = read_turn(&mut socket, since);
        assert!(turn.completed);
        idle.extend(turn.samples);
    }
    println!("event latency, fake model's write -> WebSocket reader:");
    println!("  {sessions} sessions starting and streaming at once: {}", latency(&loaded));
    println!(
        "  {sessions} started sessions streaming at once: {}; load {streaming_load}",
        latency(&streaming)
    );
    println!(
        "  one session, {} others idle: {}; load {}",
        sessions + EXTRA - 1,
        latency(&idle),
        load_average()
    );
}
