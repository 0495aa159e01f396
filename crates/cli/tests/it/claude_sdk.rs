//! Claude Code's headless protocol end to end: the Claude Agent SDKs (TypeScript
//! `@anthropic-ai/claude-agent-sdk` and Python `claude-agent-sdk`, installed by
//! `.ci/claude-sdk-env.sh` where `CODECODER_TEST_CLAUDE_SDK_JS` and `CODECODER_TEST_CLAUDE_SDK_PY`
//! say) drive the real binary unchanged, against the fake model server speaking Anthropic
//! Messages. Each scenario runs once per SDK through the drivers in `tests/claude-sdk/`, which
//! print every message the SDK yields and a summary this file asserts on; without an SDK its
//! tests are skipped, or fail under `CI=true`.
//!
//! Input that is easier to get wrong on purpose without an SDK (a malformed line, an unknown
//! control request, a hook callback that fails, an in-process MCP server that never answers)
//! is written here straight to the binary's stdin, as NDJSON; and a shell script uses print mode
//! (`-p --output-format json`) the way a CI job does.
//!
//! The model sees codecoder's own tools (`run_command`); the SDKs see Claude's names (`Bash`).
//! What each scenario expects is what the Claude Code binary bundled with the SDKs does with the
//! same script (in Claude's tool names) offline: the permission callback asked for every
//! command, denials listed in the result, the SDKs raising after an error result, and so on.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::Duration;

use codecoder_protocol::env;
use codecoder_test_support::{FakeModelServer, Reply, Script, Usage};
use crossbeam_channel::Receiver;
use serde_json::{Value, json};

use crate::{stderr, stdout};

/// A model of the price table, so that a run has a cost.
const MODEL: &str = "claude-sonnet-4";

/// How long one frame may take to arrive before a raw-protocol test fails: a guard against a
/// hang, never a measure.
const PATIENCE: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug)]
enum Sdk {
    TypeScript,
    Python,
}

impl Sdk {
    fn name(self) -> &'static str {
        match self {
            Sdk::TypeScript => "ts",
            Sdk::Python => "py",
        }
    }

    /// The command that runs this SDK's driver on `scenario`; `None` when the SDK is not
    /// installed (the test is skipped, or fails under `CI=true`).
    #[allow(clippy::print_stderr)]
    fn driver(self, scenario: &str) -> Option<Command> {
        let var = match self {
            Sdk::TypeScript => env::CODECODER_TEST_CLAUDE_SDK_JS,
            Sdk::Python => env::CODECODER_TEST_CLAUDE_SDK_PY,
        };
        let value = match std::env::var_os(var).filter(|value| !value.is_empty()) {
            Some(value) => value,
            None if std::env::var(env::CI).is_ok_and(|v| v == "true") => {
                panic!("{var} is not set: .ci/run installs the Claude Agent SDKs and sets it")
            }
            None => {
                eprintln!("skipped: {var} is not set");
                return None;
            }
        };
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/claude-sdk");
        let mut command = match self {
            Sdk::TypeScript => {
                let mut command = Command::new("node");
                command.arg(dir.join("drive.mjs")).env_clear().env(var, value);
                command
            }
            Sdk::Python => {
                let mut command = Command::new(value);
                command.arg(dir.join("drive.py")).env_clear();
                command
            }
        };
        command.arg(scenario);
        Some(command)
    }
}

/// A home configured for the fake model (Anthropic Messages), a workspace, and the server.
struct World {
    home: tempfile::TempDir,
    ws: tempfile::TempDir,
    server: FakeModelServer,
}

impl World {
    fn new(script: Script) -> Self {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            format!("model = \"{MODEL}\"\nmodel_provider = \"anthropic\"\n"),
        )
        .unwrap();
        std::fs::create_dir(home.path().join("user")).unwrap();
        let server = FakeModelServer::start(script).unwrap();
        Self { home, ws, server }
    }

    /// What the binary's environment holds, whoever starts it: no `HOME` of the person running
    /// the tests (Claude Code's user settings live there), the fake model's URL and key.
    fn env(&self) -> Vec<(&'static str, std::ffi::OsString)> {
        vec![
            ("PATH", std::env::var_os("PATH").unwrap_or_default()),
            ("HOME", self.home.path().join("user").into()),
            ("CODECODER_HOME", self.home.path().into()),
            ("ANTHROPIC_BASE_URL", self.server.base_url().into()),
            ("ANTHROPIC_API_KEY", "sk-ant-test".into()),
        ]
    }

    /// Runs `scenario` through `sdk`'s driver, which must end without an error; `None` when the
    /// SDK is not installed.
    fn drive(&self, sdk: Sdk, scenario: &str, extra: &[(&str, &str)]) -> Option<Drive> {
        let drive = self.drive_to_end(sdk, scenario, extra)?;
        assert_eq!(drive.summary["error"], Value::Null, "the SDK failed: {}", drive.transcript);
        Some(drive)
    }

    /// Runs `scenario` through `sdk`'s driver, which must end with an error the SDK raised
    /// after an error result (both SDKs do, as after Claude Code's exit status 1); `None` when
    /// the SDK is not installed.
    fn drive_to_error(&self, sdk: Sdk, scenario: &str) -> Option<Drive> {
        let drive = self.drive_to_end(sdk, scenario, &[])?;
        assert!(drive.summary["error"].is_string(), "the SDK raised nothing: {}", drive.transcript);
        Some(drive)
    }

    fn drive_to_end(&self, sdk: Sdk, scenario: &str, extra: &[(&str, &str)]) -> Option<Drive> {
        let mut command = sdk.driver(scenario)?;
        command
            .current_dir(self.ws.path())
            .envs(self.env())
            .env("CODECODER_BIN", env!("CARGO_BIN_EXE_codecoder"))
            .env("SDK_MODEL", MODEL)
            .envs(extra.iter().copied());
        let out = command.output().unwrap();
        let text = stdout(&out);
        let transcript = format!("{}\n{text}\nstderr:\n{}", sdk.name(), stderr(&out));
        let summary = text
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find_map(|line| line.get("summary").cloned())
            .unwrap_or_else(|| panic!("the driver printed no summary: {transcript}"));
        assert!(out.status.success(), "{transcript}");
        Some(Drive { summary, transcript })
    }

    /// The run's one result is a success whose text is `text`, and its log is valid.
    fn succeeded(&self, drive: &Drive, text: &str) -> Value {
        let t = &drive.transcript;
        let result = drive.result().clone();
        assert_eq!(result["subtype"], "success", "{t}");
        assert_eq!(result["result"], text, "{t}");
        self.validate(result["session_id"].as_str().unwrap());
        result
    }

    /// The MCP server `server` was connected at `init`, and `answer` (its tool's answer)
    /// reached the model in the last request.
    fn mcp_answered(&self, drive: &Drive, server: &str, answer: &str) {
        let t = &drive.transcript;
        let requests = self.server.requests();
        let last = &requests.last().unwrap().raw_body;
        assert!(last.contains(answer), "the answer reached the model: {t}\n{last}");
        let servers =
            drive.summary["init"]["mcp_servers"].as_array().unwrap_or_else(|| panic!("{t}"));
        let found = servers.iter().find(|s| s["name"] == server).unwrap_or_else(|| panic!("{t}"));
        assert_eq!(found["status"], "connected", "{t}");
    }

    /// Checks the session log of `id` with `codecoder sessions validate`.
    fn validate(&self, id: &str) {
        let out = crate::codecoder(self.home.path(), &["sessions", "validate", id]);
        assert!(out.status.success(), "{id}: {}{}", stdout(&out), stderr(&out));
    }

    /// Checks every session log of the home.
    fn validate_all(&self) {
        let dir = self.home.path().join("sessions");
        let Ok(entries) = std::fs::read_dir(&dir) else { return };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) == Some("jsonl") {
                self.validate(path.to_str().unwrap());
            }
        }
    }

    /// The body of the `n`-th model request.
    fn request(&self, n: usize) -> String {
        let requests = self.server.requests();
        requests
            .get(n)
            .unwrap_or_else(|| panic!("{} model requests, not {}", requests.len(), n + 1))
            .raw_body
            .clone()
    }
}

/// What a driver printed: the summary, and everything for failure messages.
struct Drive {
    summary: Value,
    transcript: String,
}

impl Drive {
    /// The one `result` of a single-turn run.
    fn result(&self) -> &Value {
        let results = self.summary["results"].as_array().unwrap();
        assert_eq!(results.len(), 1, "one result per turn: {}", self.transcript);
        &results[0]
    }

    fn list(&self, key: &str) -> &Vec<Value> {
        self.summary[key].as_array().unwrap_or_else(|| panic!("{key}: {}", self.transcript))
    }
}

/// A script whose model runs `command` (as `toolu_1`), then answers `answer`.
fn command_then(command: &str, answer: &str) -> Script {
    Script::new()
        .reply(Reply::tool_call("toolu_1", "run_command", json!({"command": command})))
        .reply(Reply::text(answer))
}

/// A duration no other process on the machine sleeps, to find ours in /proc.
/// One per SDK, since both SDKs' tests run at once in one test process.
fn sleep_marker(sdk: Sdk) -> String {
    let base = match sdk {
        Sdk::TypeScript => 80,
        Sdk::Python => 70,
    };
    format!("{}.{}", base + std::process::id() % 9, std::process::id() % 1000)
}

fn sleeping(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.unwrap().path().join("cmdline")).ok())
        .filter(|cmdline| {
            String::from_utf8_lossy(cmdline).replace('\0', " ").contains(&format!("sleep {marker}"))
        })
        .count()
}

fn is_version(text: &str) -> bool {
    let parts: Vec<&str> = text.split('.').collect();
    parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

fn same_dir(a: &str, b: &Path) -> bool {
    Path::new(a).canonicalize().ok() == b.canonicalize().ok()
}

// The scenarios, each run through both SDKs.

fn plain(sdk: Sdk) {
    let world =
        World::new(Script::new().reply(Reply::text("hi there").usage(Usage::tokens(100, 5))));
    let Some(drive) = world.drive(sdk, "plain", &[]) else { return };
    let t = &drive.transcript;
    let init = &drive.summary["init"];
    let id = init["session_id"].as_str().unwrap_or_else(|| panic!("no system/init: {t}"));
    assert!(!id.is_empty(), "{t}");
    assert!(same_dir(init["cwd"].as_str().unwrap(), world.ws.path()), "{t}");
    assert!(init["tools"].as_array().unwrap().contains(&json!("Bash")), "{t}");
    assert_eq!(init["model"], MODEL, "{t}");
    assert_eq!(init["permissionMode"], "default", "{t}");
    assert!(is_version(init["claude_code_version"].as_str().unwrap_or_default()), "{t}");
    assert_eq!(drive.summary["texts"], json!(["hi there"]), "{t}");
    let result = drive.result();
    assert_eq!(result["subtype"], "success", "{t}");
    assert_eq!(result["is_error"], false, "{t}");
    assert_eq!(result["result"], "hi there", "{t}");
    assert_eq!(result["session_id"], id, "{t}");
    assert_eq!(result["num_turns"], 1, "{t}");
    assert!(result["total_cost_usd"].as_f64().unwrap() > 0.0, "priced model: {t}");
    let requests = world.server.requests();
    assert_eq!(requests.len(), 1, "{t}");
    assert_eq!(requests[0].path, "/v1/messages", "{t}");
    assert_eq!(requests[0].body["model"], MODEL, "{t}");
    assert!(requests[0].raw_body.contains("say hi"), "{t}");
    world.validate(id);
}

fn permissions(sdk: Sdk) {
    let world = World::new(
        Script::new()
            .reply(Reply::tool_call(
                "toolu_1",
                "run_command",
                json!({"command": "touch allowed.txt"}),
            ))
            .reply(Reply::tool_call(
                "toolu_2",
                "run_command",
                json!({"command": "touch denied.txt"}),
            ))
            .reply(Reply::text("one made, one refused")),
    );
    let Some(drive) = world.drive(sdk, "permissions", &[]) else { return };
    let t = &drive.transcript;
    let calls = drive.list("permission_calls");
    assert_eq!(calls.len(), 2, "the callback is asked for each command: {t}");
    for (call, command) in calls.iter().zip(["touch allowed.txt", "touch denied.txt"]) {
        assert_eq!(call["tool_name"], "Bash", "{t}");
        assert_eq!(call["input"]["command"], command, "{t}");
        assert!(call["tool_use_id"].as_str().is_some_and(|id| !id.is_empty()), "{t}");
    }
    // The allowed command ran as the callback changed it.
    assert!(world.ws.path().join("updated.txt").exists(), "updatedInput was not applied: {t}");
    assert!(!world.ws.path().join("allowed.txt").exists(), "updatedInput was not applied: {t}");
    assert!(!world.ws.path().join("denied.txt").exists(), "the denied command ran: {t}");
    // The model is told why, in the callback's words.
    let denial = format!("denied by the {} callback", sdk.name());
    assert!(world.request(2).contains(&denial), "{t}");
    let result = drive.result();
    assert_eq!(result["subtype"], "success", "{t}");
    assert_eq!(result["result"], "one made, one refused", "{t}");
    let denials = result["permission_denials"].as_array().unwrap_or_else(|| panic!("{t}"));
    assert_eq!(denials.len(), 1, "{t}");
    assert_eq!(denials[0]["tool_name"], "Bash", "{t}");
    assert_eq!(denials[0]["tool_input"]["command"], "touch denied.txt", "{t}");
    world.validate(result["session_id"].as_str().unwrap());
}

fn grants(sdk: Sdk) {
    let world = World::new(
        Script::new()
            .reply(Reply::tool_call("toolu_1", "run_command", json!({"command": "touch one.txt"})))
            .reply(Reply::tool_call("toolu_2", "run_command", json!({"command": "touch two.txt"})))
            .reply(Reply::text("both made")),
    );
    let Some(drive) = world.drive(sdk, "grants", &[]) else { return };
    let t = &drive.transcript;
    // The first answer's updatedPermissions (`Bash(touch:*)` for the session) covered the second.
    let calls = drive.list("permission_calls");
    assert_eq!(calls.len(), 1, "{t}");
    assert_eq!(calls[0]["input"]["command"], "touch one.txt", "{t}");
    assert!(world.ws.path().join("one.txt").exists(), "{t}");
    assert!(world.ws.path().join("two.txt").exists(), "{t}");
    let result = drive.result();
    assert_eq!(result["subtype"], "success", "{t}");
    world.validate(result["session_id"].as_str().unwrap());
}

fn partial(sdk: Sdk) {
    let world = World::new(Script::new().reply(Reply::text("hi there").chunks(3)));
    let Some(drive) = world.drive(sdk, "partial", &[]) else { return };
    let t = &drive.transcript;
    let notes = &drive.summary["notes"];
    assert!(notes["stream_events"].as_u64() >= Some(3), "{t}");
    assert_eq!(notes["streamed_text"], "hi there", "the text deltas, in order: {t}");
    assert_eq!(drive.summary["texts"], json!(["hi there"]), "and the whole message once: {t}");
    assert_eq!(drive.result()["result"], "hi there", "{t}");
}

fn hook(sdk: Sdk) {
    let world = World::new(command_then("touch hooked.txt", "the hook said no"));
    let Some(drive) = world.drive(sdk, "hook", &[]) else { return };
    let t = &drive.transcript;
    let calls = drive.list("hook_calls");
    assert_eq!(calls.len(), 1, "{t}");
    assert_eq!(calls[0]["hook_event_name"], "PreToolUse", "{t}");
    assert_eq!(calls[0]["tool_name"], "Bash", "{t}");
    assert_eq!(calls[0]["tool_input"]["command"], "touch hooked.txt", "{t}");
    assert!(!world.ws.path().join("hooked.txt").exists(), "the blocked command ran: {t}");
    let reason = format!("blocked by the {} hook", sdk.name());
    assert!(world.request(1).contains(&reason), "{t}");
    world.succeeded(&drive, "the hook said no");
}

fn turn_hooks(sdk: Sdk) {
    let world = World::new(command_then("ls", "nothing here"));
    let Some(drive) = world.drive(sdk, "turn_hooks", &[]) else { return };
    let t = &drive.transcript;
    let calls = drive.list("hook_calls");
    let events: Vec<&str> = calls.iter().filter_map(|c| c["hook_event_name"].as_str()).collect();
    assert_eq!(events, ["UserPromptSubmit", "PostToolUse", "Stop"], "{t}");
    assert_eq!(calls[0]["prompt"], "list the files", "{t}");
    assert_eq!(calls[1]["tool_name"], "Bash", "{t}");
    assert_eq!(calls[1]["tool_use_id"], "toolu_1", "{t}");
    assert_eq!(calls[1]["has_tool_response"], true, "{t}");
    // UserPromptSubmit's additionalContext reached the model with the prompt.
    let context = format!("CONTEXT-FROM-THE-{}-HOOK", sdk.name().to_uppercase());
    assert!(world.request(0).contains(&context), "{t}");
    let result = drive.result();
    assert_eq!(result["result"], "nothing here", "{t}");
    world.validate(result["session_id"].as_str().unwrap());
}

fn hook_failure(sdk: Sdk) {
    let world = World::new(command_then("touch failing.txt", "the turn went on"));
    let Some(drive) = world.drive(sdk, "hook_failure", &[]) else { return };
    let t = &drive.transcript;
    assert_eq!(drive.list("hook_calls").len(), 1, "{t}");
    // onFailure "block": a hook that fails blocks the call it guards.
    assert!(!world.ws.path().join("failing.txt").exists(), "the guarded command ran: {t}");
    let results = drive.list("tool_results");
    assert_eq!(results.len(), 1, "{t}");
    assert_eq!(results[0]["is_error"], true, "{t}");
    let result = drive.result();
    assert_eq!(result["subtype"], "success", "{t}");
    assert_eq!(result["result"], "the turn went on", "{t}");
    let denials = result["permission_denials"].as_array().unwrap_or_else(|| panic!("{t}"));
    assert_eq!(denials.len(), 1, "{t}");
    assert_eq!(denials[0]["tool_name"], "Bash", "{t}");
    world.validate(result["session_id"].as_str().unwrap());
}

fn sdk_mcp(sdk: Sdk) {
    let world = World::new(
        Script::new()
            .until_tools(["mcp__calc__add"], crate::mcp::wait_for_servers())
            .reply(Reply::tool_call("toolu_1", "mcp__calc__add", json!({"a": 40, "b": 2})))
            .reply(Reply::text("40 and 2 make 42")),
    );
    let Some(drive) = world.drive(sdk, "sdk_mcp", &[]) else { return };
    let t = &drive.transcript;
    let calls = drive.list("mcp_calls");
    assert_eq!(calls.len(), 1, "the in-process tool ran once: {t}");
    assert_eq!(calls[0]["args"]["a"], 40.0, "{t}");
    assert_eq!(calls[0]["args"]["b"], 2.0, "{t}");
    assert!(
        drive.list("tool_uses").iter().any(|u| u["name"] == "mcp__calc__add"),
        "the SDK saw the call under its MCP name: {t}"
    );
    // Its answer reached the model.
    world.mcp_answered(&drive, "calc", "the sum is 42");
    world.succeeded(&drive, "40 and 2 make 42");
}

fn external_mcp(sdk: Sdk) {
    let world = World::new(
        Script::new()
            .until_tools(["mcp__echo__echo"], crate::mcp::wait_for_servers())
            .reply(Reply::tool_call("toolu_1", "mcp__echo__echo", json!({"text": "ping"})))
            .reply(Reply::text("it said ping")),
    );
    let Some(drive) = world.drive(sdk, "external_mcp", &[]) else { return };
    let t = &drive.transcript;
    assert!(drive.list("tool_uses").iter().any(|u| u["name"] == "mcp__echo__echo"), "{t}");
    world.mcp_answered(&drive, "echo", "echo: ping");
    world.succeeded(&drive, "it said ping");
}

fn interrupt(sdk: Sdk) {
    let marker = sleep_marker(sdk);
    let world = World::new(
        Script::new()
            .reply(Reply::tool_call(
                "toolu_1",
                "run_command",
                json!({"command": format!("sleep {marker}")}),
            ))
            .when_exhausted(Reply::text("after the interrupt")),
    );
    let Some(drive) = world.drive_to_end(sdk, "interrupt", &[("SLEEP_MARKER", &marker)]) else {
        return;
    };
    let t = &drive.transcript;
    assert!(drive.summary["notes"]["sleeping_before_interrupt"].as_u64() >= Some(1), "{t}");
    assert_eq!(sleeping(&marker), 0, "a process of the interrupted command survived: {t}");
    // As with Claude Code: the interrupted turn's result is an error of its own, which the
    // TypeScript SDK raises after yielding it.
    let results = drive.list("results");
    let last = results.last().unwrap_or_else(|| panic!("the interrupted turn has a result: {t}"));
    assert_eq!(last["subtype"], "error_during_execution", "{t}");
    assert_eq!(last["is_error"], true, "{t}");
    assert!(last["errors"].as_array().is_some_and(|errors| !errors.is_empty()), "{t}");
    match &drive.summary["error"] {
        Value::Null => {}
        Value::String(error) => assert!(error.contains("error result"), "{t}"),
        other => panic!("{other}: {t}"),
    }
    assert_eq!(world.server.requests().len(), 1, "no request after the interrupt: {t}");
    world.validate_all();
}

fn controls(sdk: Sdk) {
    let world = World::new(Script::new().when_exhausted(Reply::text("hi there")));
    let other = "claude-haiku-4";
    let Some(drive) = world.drive(sdk, "controls", &[("SDK_OTHER_MODEL", other)]) else {
        return;
    };
    let t = &drive.transcript;
    let notes = &drive.summary["notes"];
    let servers = match sdk {
        Sdk::TypeScript => &notes["mcp_status"],
        Sdk::Python => &notes["mcp_status"]["mcpServers"],
    };
    assert!(servers.is_array(), "mcp_status lists the servers: {t}");
    assert!(notes["commands"].is_array(), "{t}");
    let result = drive.result();
    assert_eq!(result["subtype"], "success", "{t}");
    assert_eq!(result["result"], "hi there", "{t}");
    let requests = world.server.requests();
    assert_eq!(requests.len(), 1, "{t}");
    assert_eq!(requests[0].body["model"], other, "set_model took: {t}");
    if let Some(mode) = drive.summary["init"]["permissionMode"].as_str() {
        assert_eq!(mode, "acceptEdits", "set_permission_mode took: {t}");
    }
    world.validate(result["session_id"].as_str().unwrap());
}

fn subagent(sdk: Sdk) {
    let world = World::new(
        Script::new()
            .reply(Reply::tool_call("toolu_task", "agent", json!({"task": "list the files"})))
            .reply(Reply::tool_call("toolu_ls", "run_command", json!({"command": "ls"})))
            .reply(Reply::text("CHILD-ANSWER: nothing here"))
            .reply(Reply::text("the subagent found nothing")),
    );
    let Some(drive) = world.drive(sdk, "subagent", &[]) else { return };
    let t = &drive.transcript;
    let uses = drive.list("tool_uses");
    // Claude's name for the subagent tool is Task (Agent in later versions).
    let task = uses
        .iter()
        .find(|u| u["name"] == "Task" || u["name"] == "Agent")
        .unwrap_or_else(|| panic!("the subagent call under Claude's name: {t}"));
    assert_eq!(task["parent"], Value::Null, "{t}");
    let task_id = task["id"].as_str().unwrap();
    let inner = uses.iter().find(|u| u["name"] == "Bash").unwrap_or_else(|| panic!("{t}"));
    assert_eq!(inner["parent"], task_id, "the subagent's call names its parent: {t}");
    let results = drive.list("tool_results");
    let inner_result =
        results.iter().find(|r| r["tool_use_id"] == inner["id"]).unwrap_or_else(|| panic!("{t}"));
    assert_eq!(inner_result["parent"], task_id, "{t}");
    let task_result =
        results.iter().find(|r| r["tool_use_id"] == task_id).unwrap_or_else(|| panic!("{t}"));
    assert_eq!(task_result["parent"], Value::Null, "{t}");
    assert!(task_result["content"].to_string().contains("CHILD-ANSWER"), "{t}");
    let result = drive.result();
    assert_eq!(result["result"], "the subagent found nothing", "{t}");
    world.validate(result["session_id"].as_str().unwrap());
}

fn agents(sdk: Sdk) {
    let world = World::new(
        Script::new()
            .reply(Reply::tool_call(
                "toolu_task",
                "agent",
                json!({"task": "review the code", "agent_type": "reviewer"}),
            ))
            .reply(Reply::text("CHILD-ANSWER: fine"))
            .reply(Reply::text("the reviewer says fine")),
    );
    let Some(drive) = world.drive(sdk, "agents", &[]) else { return };
    let t = &drive.transcript;
    let requests = world.server.requests();
    assert_eq!(requests.len(), 3, "{t}");
    // The caller's agent is offered to the model and runs with its own prompt and tools.
    assert!(requests[0].raw_body.contains("reviewer"), "{t}");
    let child = &requests[1];
    assert!(child.body["system"].to_string().contains("REVIEWER-PROMPT"), "{t}");
    let tools: Vec<&str> = child.body["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|tool| tool["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(!tools.contains(&"run_command"), "the agent's tools are Read and Grep: {tools:?}");
    let result = drive.result();
    assert_eq!(result["result"], "the reviewer says fine", "{t}");
    world.validate(result["session_id"].as_str().unwrap());
}

fn system_prompt(sdk: Sdk) {
    let world = World::new(Script::new().when_exhausted(Reply::text("arr")));
    let Some(drive) = world.drive(sdk, "system_prompt", &[]) else { return };
    let t = &drive.transcript;
    assert_eq!(drive.list("results").len(), 2, "{t}");
    let requests = world.server.requests();
    assert_eq!(requests.len(), 2, "{t}");
    // A custom prompt replaces the base instructions; the preset keeps them and appends.
    let custom = requests[0].body["system"].to_string();
    assert!(custom.contains("PIRATE-PROMPT"), "{custom}");
    let preset = requests[1].body["system"].to_string();
    assert!(preset.contains("APPENDED-LINE"), "{preset}");
    assert!(!preset.contains("PIRATE-PROMPT"), "{preset}");
    assert!(preset.len() > custom.len(), "the preset keeps the base instructions: {preset}");
}

fn resume(sdk: Sdk) {
    let world = World::new(
        Script::new()
            .reply(Reply::text("noted: pelican"))
            .reply(Reply::text("the word was pelican")),
    );
    let Some(drive) = world.drive(sdk, "resume", &[]) else { return };
    let t = &drive.transcript;
    let results = drive.list("results");
    assert_eq!(results.len(), 2, "{t}");
    assert!(results.iter().all(|r| r["subtype"] == "success"), "{t}");
    let id = results[0]["session_id"].as_str().unwrap();
    assert_eq!(results[1]["session_id"], id, "a resumed session keeps its id: {t}");
    assert_eq!(results[1]["result"], "the word was pelican", "{t}");
    let second = world.request(1);
    for earlier in ["remember the word pelican", "noted: pelican", "which word?"] {
        assert!(second.contains(earlier), "{earlier} missing from the resumed request: {second}");
    }
    world.validate(id);
}

fn fork(sdk: Sdk) {
    let world = World::new(
        Script::new()
            .reply(Reply::text("noted: pelican"))
            .reply(Reply::text("forked"))
            .reply(Reply::text("continued")),
    );
    let Some(drive) = world.drive(sdk, "fork", &[]) else { return };
    let t = &drive.transcript;
    let results = drive.list("results");
    assert_eq!(results.len(), 3, "{t}");
    assert!(results.iter().all(|r| r["subtype"] == "success"), "{t}");
    let first = results[0]["session_id"].as_str().unwrap();
    let forked = results[1]["session_id"].as_str().unwrap();
    assert_ne!(forked, first, "a fork is a session of its own: {t}");
    assert_eq!(results[2]["session_id"], forked, "--continue takes the newest session: {t}");
    let second = world.request(1);
    for earlier in ["remember the word pelican", "noted: pelican", "fork it"] {
        assert!(second.contains(earlier), "{earlier} missing from the fork's request: {second}");
    }
    let third = world.request(2);
    for earlier in ["remember the word pelican", "forked", "and continue"] {
        assert!(third.contains(earlier), "{earlier} missing from the continued request: {third}");
    }
    world.validate(first);
    world.validate(forked);
}

fn json_schema(sdk: Sdk) {
    let world = World::new(Script::new().reply(Reply::text(r#"{"answer": 42}"#)));
    let Some(drive) = world.drive(sdk, "json_schema", &[]) else { return };
    let t = &drive.transcript;
    let result = drive.result();
    assert_eq!(result["subtype"], "success", "{t}");
    assert_eq!(result["structured_output"], json!({"answer": 42}), "{t}");
    world.validate(result["session_id"].as_str().unwrap());
}

fn max_turns(sdk: Sdk) {
    let world = World::new(command_then("ls", "unreachable"));
    let Some(drive) = world.drive_to_error(sdk, "max_turns") else { return };
    let t = &drive.transcript;
    let result = drive.result();
    assert_eq!(result["subtype"], "error_max_turns", "{t}");
    assert_eq!(result["is_error"], true, "{t}");
    let errors = result["errors"].as_array().unwrap_or_else(|| panic!("errors[]: {t}"));
    assert!(!errors.is_empty() && errors.iter().all(Value::is_string), "{t}");
    assert_eq!(world.server.requests().len(), 1, "one turn, one request: {t}");
    world.validate(result["session_id"].as_str().unwrap());
}

fn budget(sdk: Sdk) {
    let world = World::new(
        Script::new()
            .reply(
                Reply::tool_call("toolu_1", "run_command", json!({"command": "ls"}))
                    .usage(Usage::tokens(100_000, 1_000)),
            )
            .reply(Reply::text("unreachable")),
    );
    let Some(drive) = world.drive_to_error(sdk, "budget") else { return };
    let t = &drive.transcript;
    let result = drive.result();
    assert_eq!(result["subtype"], "error_max_budget_usd", "{t}");
    assert_eq!(result["is_error"], true, "{t}");
    let errors = result["errors"].as_array().unwrap_or_else(|| panic!("errors[]: {t}"));
    assert!(!errors.is_empty() && errors.iter().all(Value::is_string), "{t}");
    assert!(result["total_cost_usd"].as_f64().unwrap() > 0.0001, "{t}");
    assert_eq!(world.server.requests().len(), 1, "no request past the budget: {t}");
    world.validate(result["session_id"].as_str().unwrap());
}

macro_rules! through_both_sdks {
    ($($scenario:ident),* $(,)?) => {
        mod typescript {
            $(#[test] fn $scenario() { super::$scenario(super::Sdk::TypeScript) })*
        }
        mod python {
            $(#[test] fn $scenario() { super::$scenario(super::Sdk::Python) })*
        }
    };
}

through_both_sdks!(
    plain,
    controls,
    permissions,
    grants,
    partial,
    hook,
    hook_failure,
    turn_hooks,
    sdk_mcp,
    external_mcp,
    interrupt,
    subagent,
    agents,
    system_prompt,
    resume,
    fork,
    json_schema,
    max_turns,
    budget
);

// The raw protocol: NDJSON written to the binary's stdin.

/// One `codecoder` process in stream-json mode, as an SDK starts it.
struct Headless {
    child: Child,
    stdin: Option<ChildStdin>,
    frames: Receiver<Value>,
    /// Every frame read so far, in order, for failure messages.
    seen: Vec<Value>,
}

impl Headless {
    fn start(world: &World, extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_codecoder"))
            .args(["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"])
            .args(["--model", MODEL])
            .args(extra)
            .current_dir(world.ws.path())
            .env_clear()
            .envs(world.env())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let out = child.stdout.take().unwrap();
        // Unbounded: the reader never waits on the test, which reads at its own pace.
        let (tx, frames) = crossbeam_channel::unbounded();
        std::thread::Builder::new()
            .name("headless-stdout".into())
            .spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    let frame = serde_json::from_str(&line)
                        .unwrap_or_else(|err| json!({"not_json": line, "error": err.to_string()}));
                    if tx.send(frame).is_err() {
                        break;
                    }
                }
            })
            .unwrap();
        Self { child, stdin, frames, seen: Vec::new() }
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, frame: &Value) {
        self.send_line(&frame.to_string());
    }

    fn initialize(&mut self, request: Value) -> Value {
        let mut request = request;
        request["subtype"] = json!("initialize");
        self.send(
            &json!({"type": "control_request", "request_id": "req_init", "request": request}),
        );
        let answer = self.next(|f| f["type"] == "control_response");
        assert_eq!(answer["response"]["request_id"], "req_init", "{answer}");
        assert_eq!(answer["response"]["subtype"], "success", "{answer}");
        answer
    }

    fn user(&mut self, text: &str) {
        self.send(&json!({
            "type": "user",
            "session_id": "",
            "message": {"role": "user", "content": [{"type": "text", "text": text}]},
            "parent_tool_use_id": null,
        }));
    }

    /// The next frame that `wanted` accepts; the frames before it are kept in `seen`.
    fn next(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        loop {
            let Ok(frame) = self.frames.recv_timeout(PATIENCE) else {
                panic!("no such frame within {PATIENCE:?}; seen: {}", self.transcript());
            };
            self.seen.push(frame.clone());
            if wanted(&frame) {
                return frame;
            }
        }
    }

    fn transcript(&self) -> String {
        self.seen.iter().map(Value::to_string).collect::<Vec<_>>().join("\n")
    }

    /// Closes stdin and waits for the exit; returns the status and every frame.
    fn finish(mut self) -> (ExitStatus, Vec<Value>, String) {
        drop(self.stdin.take());
        while let Ok(frame) = self.frames.recv_timeout(PATIENCE) {
            self.seen.push(frame);
        }
        let mut err = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            std::io::Read::read_to_string(&mut pipe, &mut err).unwrap();
        }
        let status = self.child.wait().unwrap();
        (status, self.seen, err)
    }
}

fn frames_text(frames: &[Value]) -> String {
    frames.iter().map(Value::to_string).collect::<Vec<_>>().join("\n")
}

#[test]
fn a_malformed_stdin_line_is_an_error_result_not_a_hang() {
    let world = World::new(Script::new().when_exhausted(Reply::text("hi there")));
    let mut headless = Headless::start(&world, &[]);
    headless.initialize(json!({"hooks": null}));
    headless.send_line(r#"{"type": "user", "message": {"#);
    headless.user("say hi");
    let (status, frames, err) = headless.finish();
    let t = format!("{}\nstderr: {err}", frames_text(&frames));
    let error_result = frames.iter().find(|f| {
        f["type"] == "result"
            && f["is_error"] == true
            && f["errors"].as_array().is_some_and(|errors| !errors.is_empty())
    });
    assert!(error_result.is_some(), "a result with errors[]: {t}");
    assert!(status.code().is_some(), "exited, not killed: {t}");
    world.validate_all();
}

#[test]
fn an_unknown_control_request_gets_an_error_response_that_names_it() {
    let world = World::new(Script::new().reply(Reply::text("hi there")));
    let mut headless = Headless::start(&world, &[]);
    headless.initialize(json!({"hooks": null}));
    headless.send(&json!({
        "type": "control_request",
        "request_id": "req_2",
        "request": {"subtype": "frobnicate_everything"},
    }));
    let answer = headless.next(|f| f["type"] == "control_response");
    assert_eq!(answer["response"]["subtype"], "error", "{answer}");
    assert_eq!(answer["response"]["request_id"], "req_2", "{answer}");
    assert!(
        answer["response"]["error"].as_str().unwrap_or_default().contains("frobnicate_everything"),
        "{answer}"
    );
    // An answer and a withdrawal for requests nobody made are dropped; the session goes on.
    headless.send(&json!({
        "type": "control_response",
        "response": {"subtype": "success", "request_id": "never_asked", "response": {}},
    }));
    headless.send(&json!({"type": "control_cancel_request", "request_id": "never_asked_either"}));
    headless.user("say hi");
    let result = headless.next(|f| f["type"] == "result");
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(result["result"], "hi there", "{result}");
    let (status, frames, err) = headless.finish();
    assert_eq!(status.code(), Some(0), "{}\nstderr: {err}", frames_text(&frames));
    world.validate(result["session_id"].as_str().unwrap());
}

#[test]
fn a_user_message_with_an_image_block_reaches_the_model() {
    // A 1×1 PNG.
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    let world = World::new(Script::new().reply(Reply::text("a dot")));
    let mut headless = Headless::start(&world, &[]);
    headless.initialize(json!({"hooks": null}));
    headless.send(&json!({
        "type": "user",
        "session_id": "",
        "message": {"role": "user", "content": [
            {"type": "text", "text": "what is in this picture?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ]},
        "parent_tool_use_id": null,
    }));
    let result = headless.next(|f| f["type"] == "result");
    let (status, frames, err) = headless.finish();
    let t = format!("{}\nstderr: {err}", frames_text(&frames));
    assert_eq!(status.code(), Some(0), "{t}");
    assert_eq!(result["result"], "a dot", "{t}");
    let request = &world.server.requests()[0].body;
    let content =
        request["messages"][0]["content"].as_array().unwrap_or_else(|| panic!("{request}"));
    let image =
        content.iter().find(|b| b["type"] == "image").unwrap_or_else(|| panic!("{request}"));
    assert_eq!(image["source"]["data"], PNG, "{request}");
    assert_eq!(image["source"]["media_type"], "image/png", "{request}");
    assert!(content.iter().any(|b| b["text"] == "what is in this picture?"), "{request}");
    world.validate(result["session_id"].as_str().unwrap());
}

#[test]
fn replay_user_messages_echoes_each_user_message_before_its_answer() {
    // As Claude Code does: the message as given, its uuid kept, `isReplay: true`.
    let world = World::new(Script::new().reply(Reply::text("hi there")));
    let mut headless = Headless::start(&world, &["--replay-user-messages"]);
    headless.initialize(json!({"hooks": null}));
    let uuid = "11111111-2222-4333-8444-555555555555";
    headless.send(&json!({
        "type": "user",
        "session_id": "",
        "uuid": uuid,
        "message": {"role": "user", "content": [{"type": "text", "text": "say hi"}]},
        "parent_tool_use_id": null,
    }));
    headless.next(|f| f["type"] == "result");
    let (status, frames, err) = headless.finish();
    let t = format!("{}\nstderr: {err}", frames_text(&frames));
    assert_eq!(status.code(), Some(0), "{t}");
    let replay = frames
        .iter()
        .position(|f| f["type"] == "user" && f["isReplay"] == true)
        .unwrap_or_else(|| panic!("no replayed user message: {t}"));
    let answer =
        frames.iter().position(|f| f["type"] == "assistant").unwrap_or_else(|| panic!("{t}"));
    assert!(replay < answer, "{t}");
    assert_eq!(frames[replay]["uuid"], uuid, "{t}");
    assert_eq!(frames[replay]["message"]["content"][0]["text"], "say hi", "{t}");
    assert_eq!(frames[replay]["parent_tool_use_id"], Value::Null, "{t}");
}

#[test]
fn an_interrupt_while_a_permission_request_waits_withdraws_it_and_ends_the_turn() {
    // As Claude Code does: a control_cancel_request for the unanswered can_use_tool, the
    // interrupt answered, and the turn's error result; the command never runs.
    let world = World::new(
        Script::new()
            .reply(Reply::tool_call("toolu_1", "run_command", json!({"command": "touch it.txt"})))
            .when_exhausted(Reply::text("unreachable")),
    );
    let mut headless = Headless::start(&world, &["--permission-prompt-tool", "stdio"]);
    headless.initialize(json!({"hooks": null}));
    headless.user("touch it");
    let ask = headless
        .next(|f| f["type"] == "control_request" && f["request"]["subtype"] == "can_use_tool");
    headless.send(&json!({
        "type": "control_request",
        "request_id": "req_interrupt",
        "request": {"subtype": "interrupt"},
    }));
    let result = headless.next(|f| f["type"] == "result");
    let (status, frames, err) = headless.finish();
    let t = format!("{}\nstderr: {err}", frames_text(&frames));
    assert!(status.code().is_some(), "{t}");
    assert!(
        frames
            .iter()
            .any(|f| f["type"] == "control_cancel_request" && f["request_id"] == ask["request_id"]),
        "the unanswered request is withdrawn: {t}"
    );
    assert!(
        frames.iter().any(|f| f["type"] == "control_response"
            && f["response"]["request_id"] == "req_interrupt"
            && f["response"]["subtype"] == "success"),
        "{t}"
    );
    assert_eq!(result["is_error"], true, "{t}");
    assert_eq!(result["subtype"], "error_during_execution", "{t}");
    assert!(!world.ws.path().join("it.txt").exists(), "{t}");
    assert_eq!(world.server.requests().len(), 1, "{t}");
    world.validate(result["session_id"].as_str().unwrap());
}

#[test]
fn sigterm_during_a_command_leaves_no_process_and_a_valid_log() {
    // The SDKs end the process with SIGTERM when it outlives their close of stdin.
    let marker = format!("{}.{}", 60 + std::process::id() % 9, std::process::id() % 1000);
    let world = World::new(
        Script::new()
            .reply(Reply::tool_call(
                "toolu_1",
                "run_command",
                json!({"command": format!("sleep {marker}")}),
            ))
            .when_exhausted(Reply::text("unreachable")),
    );
    let mut headless = Headless::start(&world, &["--permission-mode", "bypassPermissions"]);
    headless.initialize(json!({"hooks": null}));
    headless.user("sleep a while");
    headless.next(|f| f["type"] == "assistant");
    let started = std::time::Instant::now();
    while sleeping(&marker) == 0 {
        assert!(started.elapsed() < PATIENCE, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = headless.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let (status, frames, err) = headless.finish();
    let t = format!("{}\nstderr: {err}", frames_text(&frames));
    assert_eq!(status.code(), Some(128 + 15), "{t}");
    assert_eq!(sleeping(&marker), 0, "a process of the command survived: {t}");
    assert_eq!(world.server.requests().len(), 1, "{t}");
    world.validate_all();
}

/// A PreToolUse hook callback (with `on_failure` when given) that answers with an error while
/// the model runs `touch ran.txt`; returns the world, the turn's result and every frame.
fn failing_hook(on_failure: Option<&str>) -> (World, Value, String) {
    let world = World::new(command_then("touch ran.txt", "the turn went on"));
    let mut headless = Headless::start(&world, &["--permission-mode", "bypassPermissions"]);
    let mut matcher = json!({"matcher": "Bash", "hookCallbackIds": ["hook_0"]});
    if let Some(on_failure) = on_failure {
        matcher["onFailure"] = json!(on_failure);
    }
    headless.initialize(json!({"hooks": {"PreToolUse": [matcher]}}));
    headless.user("touch ran.txt");
    let request = headless
        .next(|f| f["type"] == "control_request" && f["request"]["subtype"] == "hook_callback");
    assert_eq!(request["request"]["callback_id"], "hook_0", "{request}");
    assert_eq!(request["request"]["input"]["hook_event_name"], "PreToolUse", "{request}");
    assert_eq!(request["request"]["input"]["tool_name"], "Bash", "{request}");
    headless.send(&json!({
        "type": "control_response",
        "response": {
            "subtype": "error",
            "request_id": request["request_id"],
            "error": "the hook exploded",
        },
    }));
    let result = headless.next(|f| f["type"] == "result");
    let (status, frames, err) = headless.finish();
    let t = format!("{}\nstderr: {err}", frames_text(&frames));
    assert_eq!(status.code(), Some(0), "{t}");
    assert_eq!(result["subtype"], "success", "{t}");
    assert_eq!(result["result"], "the turn went on", "{t}");
    world.validate(result["session_id"].as_str().unwrap());
    (world, result, t)
}

#[test]
fn a_hook_callback_that_fails_lets_the_call_go_ahead() {
    // Claude Code's default for a failing hook (`onFailure: "continue"`): a warning, and the
    // action it guards goes ahead.
    let (world, _, t) = failing_hook(None);
    assert!(world.ws.path().join("ran.txt").exists(), "{t}");
}

#[test]
fn a_hook_callback_that_fails_with_on_failure_block_blocks_the_call() {
    let (world, result, t) = failing_hook(Some("block"));
    assert!(!world.ws.path().join("ran.txt").exists(), "the guarded command ran: {t}");
    let denials = result["permission_denials"].as_array().unwrap_or_else(|| panic!("{t}"));
    assert_eq!(denials.len(), 1, "{t}");
    assert_eq!(denials[0]["tool_name"], "Bash", "{t}");
}

#[test]
fn an_sdk_mcp_server_that_never_answers_does_not_hold_the_session() {
    let world = World::new(Script::new().when_exhausted(Reply::text("hi there")));
    let config = json!({"mcpServers": {"mute": {"type": "sdk", "name": "mute"}}}).to_string();
    let mut headless = Headless::start(&world, &["--mcp-config", &config]);
    headless.initialize(json!({"hooks": null}));
    // Its requests are never answered.
    headless.user("say hi");
    let result = headless.next(|f| f["type"] == "result");
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(result["result"], "hi there", "{result}");
    let (status, frames, err) = headless.finish();
    let t = format!("{}\nstderr: {err}", frames_text(&frames));
    assert_eq!(status.code(), Some(0), "{t}");
    let asked = frames
        .iter()
        .find(|f| f["type"] == "control_request" && f["request"]["subtype"] == "mcp_message")
        .unwrap_or_else(|| panic!("the server was never asked: {t}"));
    assert_eq!(asked["request"]["server_name"], "mute", "{t}");
    for init in frames.iter().filter(|f| f["type"] == "system" && f["subtype"] == "init") {
        let servers = init["mcp_servers"].as_array().unwrap_or_else(|| panic!("{t}"));
        let mute = servers.iter().find(|s| s["name"] == "mute").unwrap_or_else(|| panic!("{t}"));
        assert_ne!(mute["status"], "connected", "{t}");
    }
    world.validate(result["session_id"].as_str().unwrap());
}

// Print mode, from a shell script.

#[test]
fn a_shell_script_reads_print_modes_json_result() {
    let world = World::new(
        Script::new()
            .reply(Reply::text("hi there").usage(Usage::tokens(100, 5)))
            .reply(Reply::text("hi again"))
            .reply(Reply::tool_call("toolu_1", "run_command", json!({"command": "ls"})))
            .reply(Reply::text("unreachable")),
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/claude-sdk/print-json.sh");
    let out = Command::new("sh")
        .arg(&script)
        .current_dir(world.ws.path())
        .env_clear()
        .envs(world.env())
        .env("CODECODER", env!("CARGO_BIN_EXE_codecoder"))
        .output()
        .unwrap();
    let t = format!("{}{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{t}");
    assert_eq!(
        stdout(&out),
        "answer: hi there\nsession: yes\nturns: 1\ncost: yes\n\
         hi again\n\
         error_max_turns: 1 error(s)\nexit: 1\n",
        "{t}"
    );
    let requests = world.server.requests();
    assert_eq!(requests.len(), 3, "{t}");
    assert!(requests[1].raw_body.contains("say it again"), "the prompt from stdin: {t}");
    world.validate_all();
}
