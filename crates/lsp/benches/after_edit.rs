//! The wait an edit pays for diagnostics (issue 29): with no server configured for the file
//! (target: 0, no wait at all), the first edit of a cold pyright with the default 1 s wait
//! (target: ≤ 1 s, start-up included, then a note), and with a warm pyright (target:
//! ≤ pyright's own publish latency + 20 ms). pyright's own latency is measured by a bare client in this file (frames
//! written and read directly, no `CodeIntel`), on the same file and the same edits.
//! `cargo bench -p codecoder-lsp --bench after_edit`.
//!
//! Environment: `CODECODER_TEST_LSP` (the npm prefix `.ci/run` installs pyright into; else
//! `pyright-langserver` on `PATH`; without either the warm case is skipped),
//! `CODECODER_BENCH_RUNS` (edits per case, default 30).
// A benchmark is an edge binary: it reports on stdout and unwraps.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use codecoder_lsp::{CodeIntel, LspConfig, ServerConfig};
use codecoder_sandbox::{CommandSpec, SpawnConfig};
use serde_json::{Value, json};

const GOOD: &str = "def add(a: int, b: int) -> int:\n    return a + b\n";
const BAD: &str = "def add(a: int, b: int) -> int:\n    return str(a + b)\n";

fn main() {
    let runs: usize =
        std::env::var("CODECODER_BENCH_RUNS").ok().and_then(|runs| runs.parse().ok()).unwrap_or(30);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs_err::write(root.join("pyproject.toml"), "[project]\nname = \"bench\"\n").unwrap();

    // No server for the file: the presets are configured, the file is not theirs.
    let intel = CodeIntel::new(LspConfig::standard(&root));
    let notes = root.join("notes.txt");
    fs_err::write(&notes, "hello\n").unwrap();
    let mut times = Vec::new();
    for _ in 0..runs.max(1000) {
        let start = Instant::now();
        let note = intel.after_edit(std::slice::from_ref(&notes));
        times.push(start.elapsed());
        assert!(note.is_empty());
    }
    println!(
        "no server for the file: median {:?}, max {:?} (nothing started, no wait)",
        median(&mut times),
        times.last().unwrap()
    );

    let Some(bin) = pyright() else {
        println!(
            "pyright: not found (set CODECODER_TEST_LSP or put pyright-langserver on PATH); the warm case is skipped"
        );
        return;
    };
    println!("pyright: {}", bin.display());
    let file = root.join("calc.py");

    let server = ServerConfig {
        name: "pyright".to_owned(),
        command: bin.to_string_lossy().into_owned(),
        args: vec!["--stdio".to_owned()],
        extensions: vec!["py".to_owned()],
        root_markers: vec!["pyproject.toml".to_owned()],
        env: Vec::new(),
        initialization_options: None,
        configured: true,
    };
    fs_err::write(&file, GOOD).unwrap();

    // The first edit of a cold pyright with the default wait: bounded by it, start-up included.
    let mut config = LspConfig::standard(&root);
    config.servers = vec![server.clone()];
    let mut cold = Vec::new();
    for _ in 0..3 {
        let intel = CodeIntel::new(config.clone());
        let start = Instant::now();
        let note = intel.after_edit(std::slice::from_ref(&file));
        cold.push(start.elapsed());
        println!("first edit, cold pyright, default wait: {:?}: {note}", start.elapsed());
    }
    println!(
        "first edit, cold pyright, default {:?} wait: max {:?} (target ≤ the wait)",
        config.diagnostics_wait,
        cold.iter().max().unwrap()
    );

    // Read then edit: the read starts pyright and opens the file; the edit follows once the
    // server published for the read (a model's turn is usually longer than that).
    let intel = CodeIntel::new(config.clone());
    let read = Instant::now();
    intel.touch(std::slice::from_ref(&file), true);
    let touch = read.elapsed();
    let mut note = String::new();
    while read.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
        fs_err::write(&file, BAD).unwrap();
        let edit = Instant::now();
        note = intel.after_edit(std::slice::from_ref(&file));
        if note.contains("1 error(s)") {
            println!(
                "read then edit: the read returned in {touch:?}; an edit {:?} after it got diagnostics in {:?}",
                edit.duration_since(read),
                edit.elapsed()
            );
            break;
        }
    }
    assert!(note.contains("1 error(s)"), "{note}");
    drop(intel);
    fs_err::write(&file, GOOD).unwrap();

    // Through CodeIntel: one edit to start and warm the server, then timed edits.
    let mut config = LspConfig::standard(&root);
    config.diagnostics_wait = Duration::from_secs(30);
    config.start_timeout = Duration::from_secs(60);
    config.servers = vec![server];
    let intel = CodeIntel::new(config);
    let first = Instant::now();
    let note = intel.after_edit(std::slice::from_ref(&file));
    println!(
        "first edit (starts pyright, first analysis): {:?}: {}",
        first.elapsed(),
        note.lines().next().unwrap_or("")
    );
    let mut harness = Vec::new();
    for run in 0..runs {
        fs_err::write(&file, if run % 2 == 0 { BAD } else { GOOD }).unwrap();
        let start = Instant::now();
        let note = intel.after_edit(std::slice::from_ref(&file));
        harness.push(start.elapsed());
        let expected = if run % 2 == 0 { "1 error(s)" } else { "none." };
        assert!(note.contains(expected), "{note}");
    }
    drop(intel);

    // A bare client: the same edits, timed from the change sent to the publish read.
    let mut bare = Bare::start(&bin, &root);
    bare.open(&file, GOOD);
    let mut own = Vec::new();
    for run in 0..runs {
        let text = if run % 2 == 0 { BAD } else { GOOD };
        own.push(bare.change(&file, text));
    }
    let (harness_median, own_median) = (median(&mut harness), median(&mut own));
    println!("warm pyright, {runs} edits alternating an error in and out:");
    println!("  through CodeIntel (the edit's added wait): median {harness_median:?}");
    println!("  pyright's own publish latency (bare client): median {own_median:?}");
    println!(
        "  added by the harness: {:?} (target ≤ 20 ms)",
        harness_median.saturating_sub(own_median)
    );
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn pyright() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(codecoder_protocol::env::CODECODER_TEST_LSP) {
        // A relative prefix is the workspace's (`cargo bench` runs in the crate's directory).
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let prefix = workspace.join(dir);
        let prefix = prefix.canonicalize().unwrap_or(prefix);
        return Some(prefix.join("node_modules/.bin/pyright-langserver"));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("pyright-langserver")).find(|bin| bin.is_file())
}

/// A minimal LSP client on the caller's thread: writes frames, reads until what it waits for.
struct Bare {
    _child: codecoder_sandbox::PipedChild,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    version: i64,
}

impl Bare {
    fn start(bin: &Path, root: &Path) -> Bare {
        let mut spec = CommandSpec::new(bin, ["--stdio"]);
        spec.cwd = Some(root.to_path_buf());
        let mut child = codecoder_sandbox::spawn_piped(&spec, &SpawnConfig::standard()).unwrap();
        let stdin = child.take_stdin().unwrap();
        let stdout = BufReader::new(child.take_stdout().unwrap());
        let mut bare = Bare { _child: child, stdin, stdout, version: 1 };
        let uri = format!("file://{}", root.display());
        bare.send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": null, "rootUri": uri, "workspaceFolders": [{ "uri": uri, "name": "bench" }],
            "capabilities": { "textDocument": { "publishDiagnostics": { "versionSupport": true } }, "workspace": { "configuration": true } }
        } }));
        bare.until(|message| {
            message.get("id") == Some(&json!(1)) && message.get("method").is_none()
        });
        bare.send(&json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} }));
        bare
    }

    fn send(&mut self, message: &Value) {
        let body = serde_json::to_vec(message).unwrap();
        write!(self.stdin, "Content-Length: {}\r\n\r\n", body.len()).unwrap();
        self.stdin.write_all(&body).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Reads messages (answering the server's requests) until `done` accepts one.
    fn until(&mut self, done: impl Fn(&Value) -> bool) {
        loop {
            let mut length = 0;
            loop {
                let mut line = String::new();
                self.stdout.read_line(&mut line).unwrap();
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some(value) = line.strip_prefix("Content-Length:") {
                    length = value.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            self.stdout.read_exact(&mut body).unwrap();
            let message: Value = serde_json::from_slice(&body).unwrap();
            if let (Some(id), Some(method)) = (message.get("id"), message.get("method")) {
                let items =
                    message.pointer("/params/items").and_then(Value::as_array).map_or(0, Vec::len);
                let result = if method == "workspace/configuration" {
                    Value::Array(vec![Value::Null; items])
                } else {
                    Value::Null
                };
                self.send(&json!({ "jsonrpc": "2.0", "id": id, "result": result }));
                continue;
            }
            if done(&message) {
                return;
            }
        }
    }

    fn wait_publish(&mut self, uri: &str, version: i64) {
        self.until(|message| {
            message.get("method").and_then(Value::as_str) == Some("textDocument/publishDiagnostics")
                && message.pointer("/params/uri").and_then(Value::as_str) == Some(uri)
                && message
                    .pointer("/params/version")
                    .and_then(Value::as_i64)
                    .is_none_or(|v| v >= version)
        });
    }

    fn open(&mut self, file: &Path, text: &str) {
        let uri = format!("file://{}", file.display());
        self.send(&json!({ "jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": { "uri": uri, "languageId": "python", "version": 1, "text": text } } }));
        self.wait_publish(&uri, 1);
    }

    /// Sends a whole-text change and a save; returns the time to the publish for it.
    fn change(&mut self, file: &Path, text: &str) -> Duration {
        self.version += 1;
        let uri = format!("file://{}", file.display());
        let start = Instant::now();
        self.send(&json!({ "jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": { "uri": uri, "version": self.version }, "contentChanges": [{ "text": text }] } }));
        self.send(&json!({ "jsonrpc": "2.0", "method": "textDocument/didSave", "params": {
            "textDocument": { "uri": uri }, "text": text } }));
        self.wait_publish(&uri, self.version);
        start.elapsed()
    }
}
