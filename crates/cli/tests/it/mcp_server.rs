//! `codecoder mcp-server` end to end: the real binary as an MCP server, driven by a client on
//! the official TypeScript SDK (`fixtures/mcp_server_client.mjs`, `@modelcontextprotocol/sdk`
//! from the directory `CODECODER_TEST_NPM` names), with the fake model server answering. Under
//! `CI=true` a missing install fails these tests; elsewhere they are skipped with a note.

use std::path::{Path, PathBuf};
use std::process::Command;

use codecoder_protocol::env;
use codecoder_test_support::{FakeModelServer, Fault, Reply, Script};
use serde_json::{Value, json};

use crate::exec::openai_env;

// Says why a test is skipped.
#[allow(clippy::print_stderr)]
fn npm_dir() -> Option<PathBuf> {
    match std::env::var_os(env::CODECODER_TEST_NPM) {
        Some(dir) => Some(PathBuf::from(dir)),
        None if std::env::var(env::CI).is_ok_and(|v| v == "true") => panic!(
            "{} is not set: .ci/run installs the MCP SDK with npm and sets it",
            env::CODECODER_TEST_NPM
        ),
        None => {
            eprintln!("skipped: {} is not set", env::CODECODER_TEST_NPM);
            None
        }
    }
}

/// One client process: connects to `codecoder [ARGS] mcp-server` and runs `steps`; returns one
/// JSON value per step.
struct Client<'a> {
    npm: &'a Path,
    home: &'a Path,
    cwd: &'a Path,
    server: &'a FakeModelServer,
    elicitation: bool,
    args: &'a [&'a str],
    /// The last run's stderr (the server's and the client's), for failure messages.
    stderr: std::cell::RefCell<String>,
}

impl Client<'_> {
    fn run(&self, steps: &Value) -> Vec<Value> {
        let plan_dir = tempfile::tempdir().unwrap();
        let mut server_env = serde_json::Map::new();
        server_env.insert("PATH".into(), json!(std::env::var("PATH").unwrap_or_default()));
        server_env.insert("CODECODER_HOME".into(), json!(self.home));
        for (key, value) in openai_env(self.server) {
            server_env.insert(key, json!(value));
        }
        let mut args: Vec<&str> = self.args.to_vec();
        args.push("mcp-server");
        let plan = json!({
            "command": env!("CARGO_BIN_EXE_codecoder"),
            "args": args,
            "env": server_env,
            "cwd": self.cwd,
            "elicitation": self.elicitation,
            "steps": steps,
        });
        let plan_path = plan_dir.path().join("plan.json");
        std::fs::write(&plan_path, plan.to_string()).unwrap();
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/mcp_server_client.mjs");
        let out = Command::new("node")
            .arg(script)
            .arg(&plan_path)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env(env::CODECODER_TEST_NPM, self.npm)
            .output()
            .expect("run node");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "the client failed:\n{stdout}\n{stderr}");
        let lines: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), steps.as_array().unwrap().len(), "{stdout}\n{stderr}");
        self.stderr.replace(stderr.into_owned());
        lines
    }
}

fn progress_messages(step: &Value) -> Vec<String> {
    step["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn mcp_server_lists_its_tools_runs_a_task_and_continues_the_session() {
    let Some(npm) = npm_dir() else { return };
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("notes.txt"), "status: broken\n").unwrap();
    let script = Script::new()
        .reply(Reply::text("Running it first.").and_tool_call(
            "call_1",
            "run_command",
            json!({"command": "echo ran > ran.txt"}),
        ))
        .reply(Reply::tool_call(
            "call_2",
            "edit",
            json!({"path": "notes.txt", "old_string": "broken", "new_string": "fixed"}),
        ))
        // The SDK handles a notification a microtask after reading it but a response at once,
        // so notifications read in the same chunk as the result are dropped as "unknown token":
        // a pause keeps the edit's notifications in a read of their own.
        .reply(Reply::text("Ran the command and fixed notes.txt.").delay_ms(300))
        .reply(Reply::text("Second answer, with the first turn in view."));
    let server = FakeModelServer::start(script).unwrap();
    let client = Client {
        npm: &npm,
        home: home.path(),
        cwd: repo.path(),
        server: &server,
        elicitation: false,
        args: &[],
        stderr: std::cell::RefCell::default(),
    };
    let steps = client.run(&json!([
        {"list": true},
        {"tool": "codecoder", "arguments": {"prompt": "Run it and fix the notes."}, "progress": true},
        {"tool": "codecoder-reply", "arguments": {"threadId": "$threadId", "prompt": "And then?"}},
    ]));

    let tools = steps[0]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["codecoder", "codecoder-reply"]);
    let start = &tools[0]["inputSchema"];
    for field in ["prompt", "model", "profile", "cwd", "approval-policy", "sandbox", "config"] {
        assert!(start["properties"].get(field).is_some(), "{field}: {start}");
    }
    assert_eq!(start["required"], json!(["prompt"]));
    assert_eq!(
        start["properties"]["approval-policy"]["enum"],
        json!(["untrusted", "on-request", "never"])
    );
    let reply = &tools[1]["inputSchema"];
    assert!(reply["properties"].get("threadId").is_some(), "{reply}");
    assert!(reply["properties"].get("sessionId").is_some(), "{reply}");

    let first = &steps[1]["result"];
    assert_ne!(first["isError"], json!(true), "{first}");
    assert_eq!(first["content"][0]["text"], "Ran the command and fixed notes.txt.");
    let structured = &first["structuredContent"];
    assert_eq!(structured["content"], "Ran the command and fixed notes.txt.");
    let thread = structured["threadId"].as_str().unwrap();
    assert_eq!(structured["sessionId"], thread);
    assert!(
        home.path()
            .join("sessions")
            .read_dir()
            .unwrap()
            .any(|e| { e.unwrap().file_name().to_string_lossy().contains(thread) })
    );
    assert_eq!(std::fs::read_to_string(repo.path().join("ran.txt")).unwrap(), "ran\n");
    assert_eq!(std::fs::read_to_string(repo.path().join("notes.txt")).unwrap(), "status: fixed\n");
    let progress = progress_messages(&steps[1]);
    for expected in [
        "started: command `echo ran > ran.txt`",
        "finished: command `echo ran > ran.txt` (exit 0)",
        "started: edit notes.txt",
        "finished: edit notes.txt",
        // The last message's notification comes with the result, so an earlier one is checked.
        "message: Running it first.",
    ] {
        assert!(
            progress.iter().any(|m| m == expected),
            "{expected}: {progress:?}\n{}",
            client.stderr.borrow()
        );
    }

    let second = &steps[2]["result"];
    assert_eq!(second["content"][0]["text"], "Second answer, with the first turn in view.");
    assert_eq!(second["structuredContent"]["threadId"], thread);
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let body = &requests[3].raw_body;
    for seen in ["Run it and fix the notes.", "Ran the command and fixed notes.txt.", "And then?"] {
        assert!(body.contains(seen), "the reply's request holds the first turn: {seen}");
    }
}

#[test]
fn mcp_server_asks_approvals_through_elicitation() {
    let Some(npm) = npm_dir() else { return };
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[permissions]\nask = [\"run_command(touch approved*)\"]\n",
    )
    .unwrap();
    let script = Script::new()
        .reply(Reply::tool_call("call_1", "run_command", json!({"command": "touch approved-1"})))
        .reply(Reply::text("First done."))
        .reply(Reply::tool_call("call_2", "run_command", json!({"command": "touch approved-2"})))
        .reply(Reply::text("Second done."))
        .reply(Reply::tool_call("call_q", "ask_user", json!({"question": "Which colour?"})))
        .reply(Reply::text("Blue it is."))
        .reply(Reply::tool_call("call_4", "run_command", json!({"command": "touch approved-4"})))
        .reply(Reply::tool_call("call_3", "run_command", json!({"command": "touch approved-3"})))
        .reply(Reply::text("Third done."));
    let server = FakeModelServer::start(script).unwrap();
    let mut client = Client {
        npm: &npm,
        home: home.path(),
        cwd: repo.path(),
        server: &server,
        elicitation: true,
        args: &[],
        stderr: std::cell::RefCell::default(),
    };
    let steps = client.run(&json!([
        {"tool": "codecoder", "arguments": {"prompt": "one"}, "elicit": ["accept"]},
        {"tool": "codecoder", "arguments": {"prompt": "two"}, "elicit": ["decline"]},
        {"tool": "codecoder", "arguments": {"prompt": "ask me"}, "elicit": ["accept"]},
        {"tool": "codecoder", "arguments": {"prompt": "four"}, "elicit": ["cancel"]},
    ]));
    assert_eq!(steps[0]["result"]["content"][0]["text"], "First done.", "{}", steps[0]);
    let asked = steps[0]["elicitations"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{}", steps[0]);
    assert!(asked[0]["message"].as_str().unwrap().contains("touch approved-1"), "{}", asked[0]);
    let approval = &asked[0]["meta"]["codecoder/approval"];
    assert_eq!(approval["tool"], "run_command", "{}", asked[0]);
    assert_eq!(approval["arguments"]["command"], "touch approved-1", "{}", asked[0]);
    assert!(repo.path().join("approved-1").exists(), "accepted: the command ran");

    assert_eq!(steps[1]["result"]["content"][0]["text"], "Second done.", "{}", steps[1]);
    assert_eq!(steps[1]["elicitations"].as_array().unwrap().len(), 1, "{}", steps[1]);
    assert!(!repo.path().join("approved-2").exists(), "declined: the command did not run");
    let requests = server.requests();
    assert!(requests[3].raw_body.contains("the user declined this"), "the model hears the refusal");
    // The model's question is a form with one answer field; the answer reaches the model.
    assert_eq!(steps[2]["elicitations"][0]["message"], "Which colour?", "{}", steps[2]);
    assert_eq!(steps[2]["result"]["content"][0]["text"], "Blue it is.", "{}", steps[2]);
    assert!(requests[5].raw_body.contains("blue"), "the answer reached the model");
    // Cancel at the form: denied, and the turn stops (no request after the call).
    let stopped = &steps[3]["result"];
    assert_eq!(stopped["isError"], json!(true), "{stopped}");
    assert_eq!(stopped["content"][0]["text"], "the turn was stopped at an approval request");
    assert!(!repo.path().join("approved-4").exists(), "cancelled: the command did not run");
    assert_eq!(requests.len(), 7, "nothing was asked of the model after the cancel");

    // A client without elicitation: nobody to ask, so the default policy refuses.
    client.elicitation = false;
    let steps = client.run(&json!([{"tool": "codecoder", "arguments": {"prompt": "three"}}]));
    assert_eq!(steps[0]["result"]["content"][0]["text"], "Third done.", "{}", steps[0]);
    assert!(!repo.path().join("approved-3").exists(), "refused without asking");
    let requests = server.requests();
    assert!(
        requests[8].raw_body.contains("client cannot ask its user (no elicitation capability)"),
        "the model hears why"
    );
}

#[test]
fn cancelling_a_call_stops_its_turn_and_kills_its_command() {
    let Some(npm) = npm_dir() else { return };
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let pid_file = repo.path().join("pid.txt");
    let script = Script::new()
        .reply(Reply::tool_call(
            "call_1",
            "run_command",
            json!({"command": "echo $$ > pid.txt; exec sleep 60"}),
        ))
        .reply(Reply::text("Still serving."));
    let server = FakeModelServer::start(script).unwrap();
    let client = Client {
        npm: &npm,
        home: home.path(),
        cwd: repo.path(),
        server: &server,
        elicitation: false,
        args: &[],
        stderr: std::cell::RefCell::default(),
    };
    let steps = client.run(&json!([
        {
            "tool": "codecoder",
            "arguments": {"prompt": "sleep", "sandbox": "danger-full-access"},
            "abortOn": "started: command",
            "abortWhenFile": pid_file,
        },
        {"tool": "codecoder", "arguments": {"prompt": "are you there?"}},
    ]));
    assert!(
        steps[0]["error"]["message"].as_str().unwrap().contains("cancelled by the test"),
        "{}",
        steps[0]
    );
    assert_eq!(steps[1]["result"]["content"][0]["text"], "Still serving.", "{}", steps[1]);

    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    let pid = nix::unistd::Pid::from_raw(pid);
    // The server has exited (the client closed it); the command must be gone too.
    let gone = (0..100).any(|_| {
        let alive = nix::sys::signal::kill(pid, None).is_ok();
        if alive {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        !alive
    });
    assert!(gone, "the cancelled command {pid} is still running");
    // The cancelled turn is in the log as such.
    let logs: String = std::fs::read_dir(home.path().join("sessions"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert!(logs.contains("\"cancelled\""), "{logs}");
}

#[test]
fn mcp_server_rejects_bad_arguments_and_reports_model_failures() {
    let Some(npm) = npm_dir() else { return };
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let server = FakeModelServer::start(Script::new().reply(Fault::status(400))).unwrap();
    let client = Client {
        npm: &npm,
        home: home.path(),
        cwd: repo.path(),
        server: &server,
        elicitation: false,
        args: &[],
        stderr: std::cell::RefCell::default(),
    };
    let steps = client.run(&json!([
        {"tool": "codecoder", "arguments": {}},
        {"tool": "codecoder", "arguments": {"prompt": "x", "approval-policy": "sometimes"}},
        {"tool": "codecoder", "arguments": {"prompt": "x", "cwd": "/no/such/dir"}},
        {"tool": "codecoder", "arguments": {"prompt": "x", "profile": "nope"}},
        {"tool": "codecoder", "arguments": {"prompt": "x", "approval_policy": "never"}},
        {"tool": "codecoder-reply", "arguments": {"prompt": "x"}},
        {"tool": "codecoder-reply", "arguments": {"threadId": "0000dead", "prompt": "x"}},
        {"tool": "nonesuch", "arguments": {}},
        {"tool": "codecoder", "arguments": {"prompt": "fail"}},
    ]));
    for (step, field) in [
        (0, "prompt"),
        (1, "approval-policy"),
        (2, "cwd"),
        (3, "profile"),
        (4, "approval_policy"),
        (5, "threadId"),
        (6, "threadId"),
        (7, "nonesuch"),
    ] {
        let error = &steps[step]["error"];
        assert_eq!(error["code"], json!(-32602), "step {step}: {}", steps[step]);
        assert!(error["message"].as_str().unwrap().contains(field), "step {step}: {error}");
    }
    let failed = &steps[8]["result"];
    assert_eq!(failed["isError"], json!(true), "{failed}");
    assert!(failed["content"][0]["text"].as_str().unwrap().contains("the turn failed"), "{failed}");
    assert!(failed["structuredContent"]["threadId"].is_string(), "{failed}");
}

/// Two calls at once run two sessions at once: the first to ask the model waits for a file the
/// other's command creates, which only a server running both at the same time lets happen.
#[test]
fn concurrent_calls_run_concurrent_sessions() {
    let Some(npm) = npm_dir() else { return };
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let wait = "for i in $(seq 200); do [ -f go ] && exit 0; sleep 0.05; done; exit 1";
    let script = Script::new()
        .reply(Reply::tool_call("call_1", "run_command", json!({"command": wait})))
        .reply(Reply::tool_call("call_2", "run_command", json!({"command": "touch go"})))
        .reply(Reply::text("One session done."))
        .reply(Reply::text("Another session done."));
    let server = FakeModelServer::start(script).unwrap();
    let client = Client {
        npm: &npm,
        home: home.path(),
        cwd: repo.path(),
        server: &server,
        elicitation: false,
        args: &[],
        stderr: std::cell::RefCell::default(),
    };
    let steps = client.run(&json!([{"parallel": [
        {"tool": "codecoder", "arguments": {"prompt": "wait for go"}},
        {"tool": "codecoder", "arguments": {"prompt": "make go"}},
    ]}]));
    let results = steps[0]["parallel"].as_array().unwrap();
    let mut answers: Vec<&str> =
        results.iter().map(|r| r["result"]["content"][0]["text"].as_str().unwrap()).collect();
    answers.sort_unstable();
    assert_eq!(answers, ["Another session done.", "One session done."], "{results:?}");
    let threads: Vec<&str> = results
        .iter()
        .map(|r| r["result"]["structuredContent"]["threadId"].as_str().unwrap())
        .collect();
    assert_ne!(threads[0], threads[1]);
    let waited = server.requests().iter().any(|r| {
        r.raw_body.contains("\"call_id\":\"call_1\",\"output\"")
            && r.raw_body.contains("exit code 0")
    });
    assert!(waited, "the waiting command saw the other session's file");
}

/// `--help` says how to register the server; a bad flag or config fails at start, before any
/// client speaks, with the usage exit code.
#[test]
fn mcp_server_help_and_start_up_errors() {
    let home = tempfile::tempdir().unwrap();
    let help = crate::codecoder(home.path(), &["mcp-server", "--help"]);
    assert!(help.status.success());
    let text = crate::stdout(&help);
    for line in ["claude mcp add codecoder -- codecoder mcp-server", "[mcp_servers.codecoder]"] {
        assert!(text.contains(line), "{line}\n{text}");
    }
    let out = crate::codecoder(home.path(), &["-p", "nope", "mcp-server"]);
    assert_eq!(out.status.code(), Some(2), "{}", crate::stderr(&out));
    assert!(crate::stderr(&out).contains("no profile named `nope`"), "{}", crate::stderr(&out));
    assert!(out.stdout.is_empty(), "stdout is for MCP only");
}
