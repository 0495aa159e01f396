//! The MCP client against real servers: `@modelcontextprotocol/server-everything`, installed by
//! `.ci/run` (`npm install --prefix`) into the directory `CODECODER_TEST_NPM` names.
//! Under `CI=true` a missing install fails the tests; elsewhere they are skipped with a note,
//! so that `cargo test` works on a machine without Node.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use codecoder_kernel::ToolKind;
use codecoder_mcp::{
    CallHost, McpManager, McpTool, NoHost, Options, ReportOutcome, ServerConfig, Transport,
};
use codecoder_protocol::{ContentItem, env};
use serde_json::json;

/// Where the test servers are installed; `None` (skip) only outside CI.
// Says why a test is skipped.
#[allow(clippy::print_stderr)]
pub fn servers_dir() -> Option<PathBuf> {
    match std::env::var_os(env::CODECODER_TEST_NPM) {
        Some(dir) => Some(PathBuf::from(dir)),
        None if std::env::var(env::CI).is_ok_and(|v| v == "true") => panic!(
            "{} is not set: .ci/run installs the MCP test servers with npm and sets it",
            env::CODECODER_TEST_NPM
        ),
        None => {
            eprintln!(
                "skipped: {} is not set (install the MCP test servers as .ci/run does)",
                env::CODECODER_TEST_NPM
            );
            None
        }
    }
}

fn stdio(name: &str, command: &str, args: &[&str]) -> ServerConfig {
    let lookup = |key: &str| std::env::var_os(key);
    ServerConfig::new(
        name,
        Transport::Stdio {
            command: command.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: codecoder_mcp::base_env(&lookup),
            cwd: None,
        },
    )
}

fn everything(dir: &std::path::Path) -> ServerConfig {
    let bin = dir.join("node_modules/.bin/mcp-server-everything");
    stdio("everything", &bin.to_string_lossy(), &["stdio"])
}

#[test]
fn everything_server_tools_run_and_results_convert() {
    let Some(dir) = servers_dir() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let (manager, reports) = McpManager::start(vec![everything(&dir)], cwd.path()).unwrap();
    assert!(
        matches!(reports[0].outcome, ReportOutcome::Ready { tools } if tools > 3),
        "{reports:?}"
    );
    let tools = manager.list_tools();
    let find = |part: &str| {
        tools
            .iter()
            .find(|t| t.name.to_lowercase().replace(['-', '_'], "").contains(part))
            .unwrap_or_else(|| panic!("no tool like {part} in {tools:?}"))
            .clone()
    };
    let echo = find("echo");
    let sum = tools
        .iter()
        .find(|t| t.name == "get-sum" || t.name == "add")
        .unwrap_or_else(|| panic!("no sum tool in {tools:?}"))
        .clone();
    let image = find("tinyimage");
    let (_never, cancel) = crossbeam_channel::bounded(0);
    let timeout = Duration::from_secs(30);

    let args = json!({"message": "hello mcp"}).as_object().unwrap().clone();
    let result =
        manager.call_tool("everything", &echo.name, args, &cancel, timeout, &NoHost).unwrap();
    let output = codecoder_mcp::to_tool_output(&result);
    assert!(!output.is_error);
    assert!(ContentItem::joined_text(&output.content).contains("hello mcp"), "{output:?}");

    let args = json!({"a": 2, "b": 40}).as_object().unwrap().clone();
    let result =
        manager.call_tool("everything", &sum.name, args, &cancel, timeout, &NoHost).unwrap();
    let output = codecoder_mcp::to_tool_output(&result);
    assert!(ContentItem::joined_text(&output.content).contains("42"), "{output:?}");

    let result = manager
        .call_tool("everything", &image.name, Default::default(), &cancel, timeout, &NoHost)
        .unwrap();
    let output = codecoder_mcp::to_tool_output(&result);
    assert!(
        output.content.iter().any(|item| matches!(item, ContentItem::Image(image) if image.media_type == "image/png" && !image.data_base64.is_empty())),
        "{output:?}"
    );

    // An unknown tool is the server's error, not a crash.
    let err = manager
        .call_tool("everything", "no-such-tool", Default::default(), &cancel, timeout, &NoHost)
        .map(|result| codecoder_mcp::to_tool_output(&result).is_error);
    assert!(matches!(err, Err(_) | Ok(true)), "{err:?}");
}

#[test]
fn a_cancelled_call_returns_at_once() {
    let Some(dir) = servers_dir() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let (manager, _) = McpManager::start(vec![everything(&dir)], cwd.path()).unwrap();
    let long = manager
        .list_tools()
        .iter()
        .find(|t| t.name.to_lowercase().replace(['-', '_'], "").contains("longrunning"))
        .unwrap()
        .clone();
    let (cancel_tx, cancel) = crossbeam_channel::bounded::<std::convert::Infallible>(0);
    drop(cancel_tx);
    let args = json!({"duration": 30, "steps": 3}).as_object().unwrap().clone();
    let outcome = manager.call_tool(
        "everything",
        &long.name,
        args,
        &cancel,
        Duration::from_secs(60),
        &NoHost,
    );
    assert!(matches!(outcome, Err(codecoder_mcp::Error::Cancelled)), "{outcome:?}");
    // The server still answers after the cancellation.
    let (_never, cancel) = crossbeam_channel::bounded(0);
    let echo = manager.list_tools().iter().find(|t| t.name == "echo").unwrap().clone();
    let args = json!({"message": "still here"}).as_object().unwrap().clone();
    let result = manager.call_tool(
        "everything",
        &echo.name,
        args,
        &cancel,
        Duration::from_secs(30),
        &NoHost,
    );
    assert!(result.is_ok(), "{result:?}");
}

#[test]
fn missing_and_hanging_servers_are_reported_and_left_out() {
    let cwd = tempfile::tempdir().unwrap();
    let missing = stdio("missing", "/nonexistent/mcp-server", &[]);
    let mut hanging = stdio("hanging", "sleep", &["30"]);
    hanging.startup_timeout = Duration::from_secs(1);
    let (manager, reports) = McpManager::start(vec![missing, hanging], cwd.path()).unwrap();
    assert!(manager.list_tools().is_empty());
    assert!(
        matches!(&reports[0].outcome, ReportOutcome::Failed { message } if message.contains("/nonexistent/mcp-server")),
        "{reports:?}"
    );
    assert!(matches!(reports[1].outcome, ReportOutcome::TimedOut { .. }), "{reports:?}");
    assert!(reports[1].to_string().contains("startup_timeout_sec"), "{}", reports[1]);
}

#[test]
fn annotations_decide_the_kind() {
    let info = |read_only| codecoder_mcp::McpToolInfo {
        server: "s".to_owned(),
        name: "t".to_owned(),
        description: String::new(),
        input_schema: json!({"type": "object"}),
        read_only,
        destructive: None,
        timeout: Duration::from_secs(1),
    };
    assert_eq!(McpTool::kind_of(&info(true)), ToolKind::ReadOnly);
    assert_eq!(McpTool::kind_of(&info(false)), ToolKind::Network);
}

#[test]
fn a_server_sees_the_base_environment_and_its_own_table_only() {
    let Some(dir) = servers_dir() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let lookup = |key: &str| match key {
        "OPENAI_API_KEY" => Some(std::ffi::OsString::from("sk-secret")),
        _ => std::env::var_os(key),
    };
    let mut env = codecoder_mcp::base_env(&lookup);
    env.insert("OWN_VAR".to_owned(), "own-value".to_owned());
    let bin = dir.join("node_modules/.bin/mcp-server-everything");
    let server = ServerConfig::new(
        "everything",
        Transport::Stdio {
            command: bin.to_string_lossy().into_owned(),
            args: vec!["stdio".to_owned()],
            env,
            cwd: None,
        },
    );
    let (manager, _) = McpManager::start(vec![server], cwd.path()).unwrap();
    let Some(get_env) = manager.list_tools().iter().find(|t| t.name == "get-env").cloned() else {
        panic!("no get-env tool in {:?}", manager.list_tools());
    };
    // Its annotations say read-only, so it runs as a read-only tool.
    assert!(get_env.read_only);
    let (_never, cancel) = crossbeam_channel::bounded(0);
    let result = manager
        .call_tool(
            "everything",
            "get-env",
            Default::default(),
            &cancel,
            Duration::from_secs(30),
            &NoHost,
        )
        .unwrap();
    let text = ContentItem::joined_text(&codecoder_mcp::to_tool_output(&result).content);
    assert!(text.contains("\"OWN_VAR\": \"own-value\""), "{text}");
    assert!(!text.contains("OPENAI_API_KEY") && !text.contains("sk-secret"), "{text}");
    assert!(text.contains("\"PATH\""), "{text}");
}

/// A minimal stdio MCP server in Node: `ping` answers with its pid, `die` exits without
/// answering.
const DYING_SERVER: &str = r#"
const rl = require('readline').createInterface({ input: process.stdin });
const send = (id, result) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id, result }) + '\n');
rl.on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.id === undefined) return;
  if (msg.method === 'initialize') {
    send(msg.id, { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'dying', version: '1' } });
  } else if (msg.method === 'tools/list') {
    const schema = { type: 'object', properties: {} };
    send(msg.id, { tools: [{ name: 'ping', inputSchema: schema }, { name: 'die', inputSchema: schema }] });
  } else if (msg.method === 'tools/call' && msg.params.name === 'die') {
    process.exit(3);
  } else if (msg.method === 'tools/call') {
    send(msg.id, { content: [{ type: 'text', text: 'pong ' + process.pid }] });
  } else {
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'no' } }) + '\n');
  }
});
"#;

#[test]
fn a_server_that_dies_is_restarted_once_at_its_next_call() {
    // Node is what the test servers need too.
    if servers_dir().is_none() {
        return;
    }
    let cwd = tempfile::tempdir().unwrap();
    let script = cwd.path().join("dying.js");
    fs_err::write(&script, DYING_SERVER).unwrap();
    let server = stdio("dying", "node", &[&script.to_string_lossy()]);
    let (manager, reports) = McpManager::start(vec![server], cwd.path()).unwrap();
    assert!(matches!(reports[0].outcome, ReportOutcome::Ready { tools: 2 }), "{reports:?}");
    let (_never, cancel) = crossbeam_channel::bounded(0);
    let timeout = Duration::from_secs(30);
    let call = |tool: &str| {
        manager.call_tool("dying", tool, Default::default(), &cancel, timeout, &NoHost)
    };
    let pong = |outcome: codecoder_mcp::CallOutcome| {
        ContentItem::joined_text(&codecoder_mcp::to_tool_output(&outcome.unwrap()).content)
    };
    let first = pong(call("ping"));
    assert!(first.starts_with("pong "), "{first}");
    assert!(call("die").is_err());
    let second = pong(call("ping"));
    assert!(second.starts_with("pong ") && second != first, "a new process answers: {second}");
    assert!(call("die").is_err());
    let third = call("ping");
    assert!(
        matches!(&third, Err(err) if err.to_string().contains("already restarted once")),
        "{third:?}"
    );
}

/// Kills the child when the test ends, however it ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
#[allow(clippy::disallowed_methods)] // The test runs its HTTP server itself.
fn a_streamable_http_server_is_reached_by_url() {
    let Some(dir) = servers_dir() else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = std::process::Command::new(dir.join("node_modules/.bin/mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _child = KillOnDrop(child);
    // Wait until it listens (outcome-based: give up after a generous bound).
    let ready = (0..300).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(ready, "server-everything did not listen on {port}");
    let server = ServerConfig::new(
        "web",
        Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            bearer_token: None,
            headers: BTreeMap::from([("X-Test".to_owned(), "1".to_owned())]),
        },
    );
    let cwd = tempfile::tempdir().unwrap();
    let (manager, reports) = McpManager::start(vec![server], cwd.path()).unwrap();
    assert!(matches!(reports[0].outcome, ReportOutcome::Ready { .. }), "{reports:?}");
    let (_never, cancel) = crossbeam_channel::bounded(0);
    let args = json!({"message": "over http"}).as_object().unwrap().clone();
    let result =
        manager.call_tool("web", "echo", args, &cancel, Duration::from_secs(30), &NoHost).unwrap();
    let text = ContentItem::joined_text(&codecoder_mcp::to_tool_output(&result).content);
    assert!(text.contains("over http"), "{text}");
}

#[test]
#[allow(clippy::disallowed_methods)] // The test runs its HTTP+SSE server itself.
fn an_http_sse_server_of_the_2024_transport_is_reached_by_url() {
    let Some(dir) = servers_dir() else { return };
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/sse_server.mjs");
    let mut child = std::process::Command::new("node")
        .arg(&fixture)
        .env(env::CODECODER_TEST_NPM, &dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _child = KillOnDrop(child);
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
    let port: u16 = line.trim().parse().unwrap_or_else(|_| panic!("no port: {line:?}"));
    let server = ServerConfig::new(
        "old",
        Transport::Sse {
            url: format!("http://127.0.0.1:{port}/sse"),
            bearer_token: None,
            headers: BTreeMap::from([("X-Test".to_owned(), "7".to_owned())]),
        },
    );
    let cwd = tempfile::tempdir().unwrap();
    let (manager, reports) = McpManager::start(vec![server], cwd.path()).unwrap();
    assert!(matches!(reports[0].outcome, ReportOutcome::Ready { tools: 1 }), "{reports:?}");
    let tools = manager.list_tools();
    assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["echo"]);
    let (_never, cancel) = crossbeam_channel::bounded(0);
    let args = json!({"message": "over sse"}).as_object().unwrap().clone();
    let result =
        manager.call_tool("old", "echo", args, &cancel, Duration::from_secs(30), &NoHost).unwrap();
    let text = ContentItem::joined_text(&codecoder_mcp::to_tool_output(&result).content);
    assert_eq!(text, "echo: over sse (x-test 7)");
}

#[test]
fn an_sse_url_that_serves_no_event_stream_is_reported_with_its_url() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Answers one request with a 404 and closes.
    let serve = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4096];
        let _ = std::io::Read::read(&mut stream, &mut buf);
        let _ = std::io::Write::write_all(
            &mut stream,
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        );
    });
    let url = format!("http://127.0.0.1:{port}/sse");
    let server = ServerConfig::new(
        "gone",
        Transport::Sse { url: url.clone(), bearer_token: None, headers: BTreeMap::new() },
    );
    let cwd = tempfile::tempdir().unwrap();
    let (_manager, reports) = McpManager::start(vec![server], cwd.path()).unwrap();
    serve.join().unwrap();
    match &reports[0].outcome {
        ReportOutcome::Failed { message } => {
            assert!(message.contains(&url) && message.contains("404"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

/// A call's host that keeps the progress it is shown and answers questions with `answer`
/// (`None`: declined).
struct Recorder {
    progress: std::sync::Mutex<Vec<String>>,
    questions: std::sync::Mutex<Vec<(String, Vec<String>)>>,
    answer: fn(&str) -> Option<String>,
}

impl Recorder {
    fn new(answer: fn(&str) -> Option<String>) -> Self {
        Self { progress: Default::default(), questions: Default::default(), answer }
    }
}

impl CallHost for Recorder {
    fn progress(&self, line: &str) {
        self.progress
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(line.to_owned());
    }

    fn ask(&self, question: &str, options: Vec<String>) -> Option<String> {
        let mut questions =
            self.questions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        questions.push((question.to_owned(), options));
        (self.answer)(question)
    }
}

/// Waits (a generous bound, for a slow machine) until `manager` lists a tool named `name`.
fn wait_for_tool(manager: &McpManager, name: &str) -> bool {
    (0..300).any(|_| {
        if manager.list_tools().iter().any(|t| t.name == name) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
        false
    })
}

#[test]
fn progress_of_a_long_running_call_reaches_the_host() {
    let Some(dir) = servers_dir() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let (manager, _) = McpManager::start(vec![everything(&dir)], cwd.path()).unwrap();
    let (_never, cancel) = crossbeam_channel::bounded(0);
    let host = Recorder::new(|_| None);
    let args = json!({"duration": 0.3, "steps": 3}).as_object().unwrap().clone();
    let result = manager
        .call_tool(
            "everything",
            "trigger-long-running-operation",
            args,
            &cancel,
            Duration::from_secs(30),
            &host,
        )
        .unwrap();
    let text = ContentItem::joined_text(&codecoder_mcp::to_tool_output(&result).content);
    assert!(text.contains("completed"), "{text}");
    assert_eq!(
        *host.progress.lock().unwrap(),
        ["progress 1/3", "progress 2/3", "progress 3/3"],
        "each notifications/progress of the call, in order"
    );
}

#[test]
fn log_messages_and_start_outcomes_go_to_the_log_file() {
    let Some(dir) = servers_dir() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let log = cwd.path().join("session.mcp.log");
    let missing = stdio("missing", "/nonexistent/mcp-server", &[]);
    let options = Options { log: Some(log.clone()), ..Options::none() };
    let manager = McpManager::launch(vec![everything(&dir), missing], cwd.path(), options).unwrap();
    manager.wait_started();
    let (_never, cancel) = crossbeam_channel::bounded(0);
    manager
        .call_tool(
            "everything",
            "toggle-simulated-logging",
            Default::default(),
            &cancel,
            Duration::from_secs(30),
            &NoHost,
        )
        .unwrap();
    // The server sends its first message at once; wait for it to be written.
    let logged = (0..300).find_map(|_| {
        let text = fs_err::read_to_string(&log).unwrap_or_default();
        if text.lines().any(|l| l.contains("mcp[everything]") && l.contains("level")) {
            return Some(text);
        }
        std::thread::sleep(Duration::from_millis(50));
        None
    });
    let text = logged.unwrap_or_else(|| fs_err::read_to_string(&log).unwrap_or_default());
    assert!(
        text.lines().any(|l| l.contains("mcp[everything]") && l.contains("-level message")
            || l.contains("level-message")),
        "{text}"
    );
    assert!(text.contains("mcp[everything] info: MCP server `everything`: ready"), "{text}");
    assert!(text.contains("mcp[missing] error: MCP server `missing` did not start"), "{text}");
    // The failure is also a notice for the person, given once.
    let notices = manager.take_notices();
    assert!(notices.len() == 1 && notices[0].contains("`missing`"), "{notices:?}");
    assert!(manager.take_notices().is_empty());
}

#[test]
fn a_form_is_asked_field_by_field_and_the_answers_reach_the_server() {
    let Some(dir) = servers_dir() else { return };
    let cwd = tempfile::tempdir().unwrap();
    // No one to answer: the capability is not declared, so the server offers no such tool.
    let (manager, _) = McpManager::start(vec![everything(&dir)], cwd.path()).unwrap();
    assert!(!manager.list_tools().iter().any(|t| t.name == "trigger-elicitation-request"));
    drop(manager);

    let options = Options { elicitation: true, ..Options::none() };
    let manager = McpManager::launch(vec![everything(&dir)], cwd.path(), options).unwrap();
    manager.wait_started();
    // The server registers the tool once it knows the client's capabilities, and says so with
    // notifications/tools/list_changed.
    assert!(wait_for_tool(&manager, "trigger-elicitation-request"), "{:?}", manager.list_tools());
    let (_never, cancel) = crossbeam_channel::bounded(0);
    let host = Recorder::new(|question| {
        let answer = if question.contains("legal name") {
            "Ada Lovelace"
        } else if question.contains("Agree") {
            "yes"
        } else if question.contains("favorite friend") {
            "Joey"
        } else if question.contains("favorite hero") {
            "Wonder Woman"
        } else if question.contains("instruments") {
            "Piano, Drums"
        } else if question.contains("Favorite number") {
            "-"
        } else {
            ""
        };
        Some(answer.to_owned())
    });
    let result = manager
        .call_tool(
            "everything",
            "trigger-elicitation-request",
            Default::default(),
            &cancel,
            Duration::from_secs(30),
            &host,
        )
        .unwrap();
    let text = ContentItem::joined_text(&codecoder_mcp::to_tool_output(&result).content);
    assert!(text.contains("\"action\": \"accept\""), "{text}");
    for expected in ["Ada Lovelace", "\"check\": true", "Joey", "hero-3", "Piano", "Drums"] {
        assert!(text.contains(expected), "{expected} in {text}");
    }
    // Defaults fill the fields left empty or answered `-`.
    assert!(text.contains("\"integer\": 42") && text.contains("\"number\": 3.14"), "{text}");
    let questions = host.questions.lock().unwrap();
    let hero = questions.iter().find(|(q, _)| q.contains("favorite hero")).unwrap();
    assert_eq!(hero.1, ["Superman", "Green Lantern", "Wonder Woman"]);
    assert!(hero.0.contains("[default: hero-1; answer - to keep it]"), "{}", hero.0);
    let email = questions.iter().find(|(q, _)| q.contains("email")).unwrap();
    assert!(email.0.contains("[optional; answer - to skip]"), "{}", email.0);
    drop(questions);

    // A declined question declines the form.
    let host = Recorder::new(|_| None);
    let result = manager
        .call_tool(
            "everything",
            "trigger-elicitation-request",
            Default::default(),
            &cancel,
            Duration::from_secs(30),
            &host,
        )
        .unwrap();
    let text = ContentItem::joined_text(&codecoder_mcp::to_tool_output(&result).content);
    assert!(text.contains("declined"), "{text}");
}

/// A model that answers every request with one text and keeps the requests.
struct FakeModel {
    requests: std::sync::Mutex<Vec<codecoder_kernel::ModelRequest>>,
}

impl codecoder_kernel::ModelClient for FakeModel {
    fn stream(
        &self,
        request: codecoder_kernel::ModelRequest,
    ) -> Result<codecoder_kernel::ResponseStream, codecoder_kernel::ModelError> {
        self.requests.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(request);
        let (tx, rx) = crossbeam_channel::unbounded();
        let _ = tx.send(codecoder_kernel::ResponseEvent::TextDelta("a sampled answer".to_owned()));
        let _ = tx.send(codecoder_kernel::ResponseEvent::Completed {
            stop_reason: codecoder_protocol::StopReason::EndTurn,
        });
        Ok(codecoder_kernel::ResponseStream::new(rx))
    }
}

#[test]
fn sampling_is_answered_by_the_session_model_only_when_the_server_may_sample() {
    let Some(dir) = servers_dir() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let model = std::sync::Arc::new(FakeModel { requests: Default::default() });
    let sampler = std::sync::Arc::new(codecoder_mcp::Sampler {
        client: model.clone(),
        model: "the-model".to_owned(),
        session_id: codecoder_protocol::SessionId::new(),
    });
    let options = Options { sampler: Some(sampler), ..Options::none() };

    // Not allowed: no capability, no tool, no request to the model.
    let manager = McpManager::launch(vec![everything(&dir)], cwd.path(), options.clone()).unwrap();
    manager.wait_started();
    let (_never, cancel) = crossbeam_channel::bounded(0);
    let args = json!({"message": "sync"}).as_object().unwrap().clone();
    manager
        .call_tool("everything", "echo", args, &cancel, Duration::from_secs(30), &NoHost)
        .unwrap();
    assert!(!manager.list_tools().iter().any(|t| t.name == "trigger-sampling-request"));
    drop(manager);

    let mut server = everything(&dir);
    server.sampling = true;
    let manager = McpManager::launch(vec![server], cwd.path(), options).unwrap();
    manager.wait_started();
    assert!(wait_for_tool(&manager, "trigger-sampling-request"), "{:?}", manager.list_tools());
    let args = json!({"prompt": "say hi", "maxTokens": 50}).as_object().unwrap().clone();
    let result = manager
        .call_tool(
            "everything",
            "trigger-sampling-request",
            args,
            &cancel,
            Duration::from_secs(30),
            &NoHost,
        )
        .unwrap();
    let text = ContentItem::joined_text(&codecoder_mcp::to_tool_output(&result).content);
    assert!(text.contains("a sampled answer") && text.contains("the-model"), "{text}");
    let requests = model.requests.lock().unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].model, "the-model");
    assert_eq!(requests[0].instructions, "You are a helpful test server.");
    assert_eq!(requests[0].max_output_tokens, Some(50));
    assert!(requests[0].tools.is_empty());
    let asked = ContentItem::joined_text(&[]) + &format!("{:?}", requests[0].history);
    assert!(asked.contains("say hi"), "{asked}");
}

/// A stdio server in Node that asks for sampling during every call whatever the client
/// declared, and answers the call with what it got back; `grow` changes its tool list.
const ASKING_SERVER: &str = r#"
const rl = require('readline').createInterface({ input: process.stdin });
const out = (msg) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...msg }) + '\n');
let tools = ['ask', 'grow'];
const pending = new Map();
rl.on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.method === undefined && pending.has(msg.id)) {
    const callId = pending.get(msg.id);
    pending.delete(msg.id);
    out({ id: callId, result: { content: [{ type: 'text', text: JSON.stringify(msg.error || msg.result) }] } });
    return;
  }
  if (msg.id === undefined) return;
  if (msg.method === 'initialize') {
    out({ id: msg.id, result: { protocolVersion: msg.params.protocolVersion, capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'asking', version: '1' } } });
  } else if (msg.method === 'tools/list') {
    out({ id: msg.id, result: { tools: tools.map((name) => ({ name, inputSchema: { type: 'object', properties: {} } })) } });
  } else if (msg.method === 'tools/call' && msg.params.name === 'grow') {
    tools = ['grow', 'late'];
    out({ method: 'notifications/tools/list_changed' });
    out({ id: msg.id, result: { content: [{ type: 'text', text: 'grown' }] } });
  } else if (msg.method === 'tools/call') {
    const id = 'sample-' + msg.id;
    pending.set(id, msg.id);
    out({ id, method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 10 } });
  } else {
    out({ id: msg.id, error: { code: -32601, message: 'no' } });
  }
});
"#;

#[test]
fn a_server_sampling_without_permission_is_refused_with_a_clear_message() {
    if servers_dir().is_none() {
        return;
    }
    let cwd = tempfile::tempdir().unwrap();
    let script = cwd.path().join("asking.js");
    fs_err::write(&script, ASKING_SERVER).unwrap();
    let server = stdio("asking", "node", &[&script.to_string_lossy()]);
    let (manager, _) = McpManager::start(vec![server], cwd.path()).unwrap();
    let (_never, cancel) = crossbeam_channel::bounded(0);
    let result = manager
        .call_tool("asking", "ask", Default::default(), &cancel, Duration::from_secs(30), &NoHost)
        .unwrap();
    let text = ContentItem::joined_text(&codecoder_mcp::to_tool_output(&result).content);
    assert!(
        text.contains("sampling is off for MCP server `asking`")
            && text.contains("sampling = true")
            && text.contains("[mcp_servers.asking]"),
        "{text}"
    );
}

#[test]
fn a_changed_tool_list_appends_new_tools_and_refuses_dropped_ones() {
    if servers_dir().is_none() {
        return;
    }
    let cwd = tempfile::tempdir().unwrap();
    let script = cwd.path().join("asking.js");
    fs_err::write(&script, ASKING_SERVER).unwrap();
    let server = stdio("asking", "node", &[&script.to_string_lossy()]);
    let manager =
        std::sync::Arc::new(McpManager::launch(vec![server], cwd.path(), Options::none()).unwrap());
    manager.wait_started();
    let late = codecoder_kernel::LateTools::with_source(std::sync::Arc::new(
        codecoder_mcp::McpToolSource::new(manager.clone()),
    ));
    let mut registry = codecoder_kernel::ToolRegistry::new();
    registry.attach_late(late.clone());
    late.poll();
    let names = |registry: &codecoder_kernel::ToolRegistry| -> Vec<String> {
        registry.specs().into_iter().map(|s| s.name).collect()
    };
    assert_eq!(names(&registry), ["mcp__asking__ask", "mcp__asking__grow"]);
    let (_never, cancel) = crossbeam_channel::bounded(0);
    manager
        .call_tool("asking", "grow", Default::default(), &cancel, Duration::from_secs(30), &NoHost)
        .unwrap();
    assert!(wait_for_tool(&manager, "late"), "{:?}", manager.list_tools());
    late.poll();
    // Appended, nothing reordered or removed: the requests' prefix stays the same.
    assert_eq!(names(&registry), ["mcp__asking__ask", "mcp__asking__grow", "mcp__asking__late"]);
    assert!(!manager.offers("asking", "ask"));
    assert!(manager.offers("asking", "late"));
}

/// A stdio server in Node that speaks only the stateless 2026-07-28 revision: `server/discover`
/// instead of `initialize`, every request's `_meta` carries the revision, and a tool that needs
/// the person answers `input_required` first and completes when called again with the answer.
const STATELESS_SERVER: &str = r#"
const rl = require('readline').createInterface({ input: process.stdin });
const out = (msg) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...msg }) + '\n');
const V = 'io.modelcontextprotocol/protocolVersion';
rl.on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.id === undefined) return;
  const meta = (msg.params && msg.params._meta) || {};
  if (msg.method === 'server/discover') {
    out({ id: msg.id, result: { resultType: 'complete', supportedVersions: ['2026-07-28'], capabilities: { tools: {} }, ttlMs: 0, cacheScope: 'private', _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'stateless', version: '1' } } } });
  } else if (meta[V] !== '2026-07-28') {
    out({ id: msg.id, error: { code: -32600, message: 'no protocol version in _meta: ' + msg.method } });
  } else if (msg.method === 'tools/list') {
    const schema = { type: 'object', properties: {} };
    out({ id: msg.id, result: { resultType: 'complete', tools: [{ name: 'version', inputSchema: schema }, { name: 'ask', inputSchema: schema }] } });
  } else if (msg.method === 'tools/call' && msg.params.name === 'version') {
    out({ id: msg.id, result: { resultType: 'complete', content: [{ type: 'text', text: 'revision ' + meta[V] }] } });
  } else if (msg.method === 'tools/call' && !msg.params.inputResponses) {
    out({ id: msg.id, result: { resultType: 'input_required', requestState: 'asked', inputRequests: { colour: { method: 'elicitation/create', params: { mode: 'form', message: 'Pick a colour', requestedSchema: { type: 'object', properties: { colour: { type: 'string' } }, required: ['colour'] } } } } } });
  } else if (msg.method === 'tools/call') {
    const answer = msg.params.inputResponses.colour;
    out({ id: msg.id, result: { resultType: 'complete', content: [{ type: 'text', text: msg.params.requestState + ' ' + JSON.stringify(answer) }] } });
  } else {
    out({ id: msg.id, error: { code: -32601, message: 'no' } });
  }
});
"#;

#[test]
fn a_stateless_server_is_reached_with_the_2026_revision_and_its_input_requests_answered() {
    if servers_dir().is_none() {
        return;
    }
    let cwd = tempfile::tempdir().unwrap();
    let script = cwd.path().join("stateless.js");
    fs_err::write(&script, STATELESS_SERVER).unwrap();
    let server = stdio("stateless", "node", &[&script.to_string_lossy()]);
    let options = Options { elicitation: true, ..Options::none() };
    let manager = McpManager::launch(vec![server], cwd.path(), options).unwrap();
    let reports = manager.wait_started();
    assert!(matches!(reports[0].outcome, ReportOutcome::Ready { tools: 2 }), "{reports:?}");
    assert_eq!(manager.protocol_version("stateless").as_deref(), Some("2026-07-28"));
    let (_never, cancel) = crossbeam_channel::bounded(0);
    let call = |tool: &str, host: &dyn CallHost| {
        let result = manager
            .call_tool(
                "stateless",
                tool,
                Default::default(),
                &cancel,
                Duration::from_secs(30),
                host,
            )
            .unwrap();
        ContentItem::joined_text(&codecoder_mcp::to_tool_output(&result).content)
    };
    assert_eq!(call("version", &NoHost), "revision 2026-07-28");
    let host = Recorder::new(|_| Some("teal".to_owned()));
    let text = call("ask", &host);
    assert!(
        text.starts_with("asked ") && text.contains("\"accept\"") && text.contains("teal"),
        "{text}"
    );
    assert!(host.questions.lock().unwrap()[0].0.contains("Pick a colour"));

    // A legacy server still gets the initialize handshake.
    let dir = servers_dir().unwrap();
    let (legacy, _) = McpManager::start(vec![everything(&dir)], cwd.path()).unwrap();
    assert_eq!(legacy.protocol_version("everything").as_deref(), Some("2025-11-25"));
}

#[test]
fn a_server_that_cannot_be_reached_is_reported_in_words() {
    // Nothing listens on the port: the report says what failed, not rmcp's transport types.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = ServerConfig::new(
        "gone",
        Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            bearer_token: None,
            headers: BTreeMap::new(),
        },
    );
    let cwd = tempfile::tempdir().unwrap();
    let (_manager, reports) = McpManager::start(vec![server], cwd.path()).unwrap();
    let ReportOutcome::Failed { message } = &reports[0].outcome else { panic!("{reports:?}") };
    assert!(!message.contains("rmcp::") && !message.contains('<'), "{message}");
    assert!(message.contains(&format!("127.0.0.1:{port}/mcp")), "{message}");
}
