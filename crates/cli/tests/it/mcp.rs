//! MCP servers' tools through `codecoder exec` end to end: the real binary, the fake model
//! server, and real MCP servers (`@modelcontextprotocol/server-everything` and
//! `server-filesystem`, installed by `.ci/run` into the directory `CODECODER_TEST_NPM`
//! names). Under `CI=true` a missing install fails these tests; elsewhere they are skipped with
//! a note, so that `cargo test` works on a machine without Node.

use std::path::{Path, PathBuf};

use codecoder_mcp::{McpManager, ServerConfig, Transport};
use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::json;

use crate::exec::{Run, openai_env};
use crate::stderr;

pub(crate) fn servers_dir() -> Option<PathBuf> {
    crate::npm_dir()
}

pub(crate) fn bin(dir: &Path, name: &str) -> String {
    dir.join("node_modules/.bin").join(name).to_string_lossy().into_owned()
}

/// The tool names a server offers now (they changed across releases, so tests look them up).
pub(crate) fn tool_names(command: &str, args: &[&str], cwd: &Path) -> Vec<String> {
    let lookup = |key: &str| std::env::var_os(key);
    let server = ServerConfig::new(
        "probe",
        Transport::Stdio {
            command: command.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: codecoder_mcp::base_env(&lookup),
            cwd: None,
        },
    );
    let (manager, _) = McpManager::start(vec![server], cwd).unwrap();
    manager.list_tools().iter().map(|t| t.name.clone()).collect()
}

pub(crate) fn pick<'a>(names: &'a [String], candidates: &[&str]) -> &'a str {
    names
        .iter()
        .find(|n| candidates.contains(&n.as_str()))
        .unwrap_or_else(|| panic!("none of {candidates:?} in {names:?}"))
}

fn toml_list(items: &[&str]) -> String {
    serde_json::to_string(items).unwrap()
}

/// What the fake model answers while the MCP tools it needs have not joined the session yet
/// (the servers start behind the first request): a quick look at the directory, a tenth of a
/// second later.
pub(crate) fn wait_for_servers() -> Reply {
    let mut reply = Reply::tool_call("wait", "list_dir", json!({ "path": "." }));
    reply.delay_ms = 100;
    reply
}

/// The requests from the first one that offers all of `tools` on.
pub(crate) fn from_tools(
    requests: Vec<codecoder_test_support::RecordedRequest>,
    tools: &[String],
) -> Vec<codecoder_test_support::RecordedRequest> {
    requests.into_iter().skip_while(|r| !tools.iter().all(|t| r.raw_body.contains(t))).collect()
}

/// The servers' log of the one session under `home`.
fn mcp_log(home: &Path) -> String {
    fn find(dir: &Path) -> Option<PathBuf> {
        for entry in std::fs::read_dir(dir).ok()? {
            let path = entry.ok()?.path();
            if path.is_dir() {
                if let Some(found) = find(&path) {
                    return Some(found);
                }
            } else if path.to_string_lossy().ends_with(".mcp.log") {
                return Some(path);
            }
        }
        None
    }
    find(home).map(|path| std::fs::read_to_string(path).unwrap()).unwrap_or_default()
}

#[test]
fn mcp_tools_answer_the_model_and_broken_servers_are_warnings() {
    let Some(dir) = servers_dir() else { return };
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("notes.txt"), "the answer is in the filesystem\n").unwrap();
    let repo_path = repo.path().canonicalize().unwrap();
    let repo_text = repo_path.to_string_lossy().into_owned();

    let everything = bin(&dir, "mcp-server-everything");
    let filesystem = bin(&dir, "mcp-server-filesystem");
    let everything_tools = tool_names(&everything, &["stdio"], repo.path());
    let fs_tools = tool_names(&filesystem, &[&repo_text], repo.path());
    let echo = pick(&everything_tools, &["echo"]);
    let sum = pick(&everything_tools, &["get-sum", "add"]);
    let image = pick(&everything_tools, &["get-tiny-image", "getTinyImage"]);
    let read = pick(&fs_tools, &["read_text_file", "read_file"]);

    std::fs::write(
        home.path().join("config.toml"),
        format!(
            r#"
[mcp_servers.everything]
command = {everything:?}
args = ["stdio"]

[mcp_servers.fs]
command = {filesystem:?}
args = {args}

[mcp_servers.missing]
command = "/nonexistent/mcp-server"

[mcp_servers.hanging]
command = "sleep"
args = ["30"]
startup_timeout_sec = 0.5
"#,
            args = toml_list(&[&repo_text]),
        ),
    )
    .unwrap();
    let notes = repo_path.join("notes.txt").to_string_lossy().into_owned();
    let server = FakeModelServer::start(
        Script::new()
            .until_tools(
                [format!("mcp__everything__{echo}"), format!("mcp__fs__{read}")],
                wait_for_servers(),
            )
            .reply(Reply::tool_call(
                "c1",
                format!("mcp__everything__{echo}"),
                json!({ "message": "hello from mcp" }),
            ))
            .reply(Reply::tool_call(
                "c2",
                format!("mcp__everything__{sum}"),
                json!({ "a": 19, "b": 23 }),
            ))
            .reply(Reply::tool_call("c3", format!("mcp__everything__{image}"), json!({})))
            .reply(Reply::tool_call("c4", format!("mcp__fs__{read}"), json!({ "path": notes })))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let run = Run { home: home.path(), cwd: repo.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "use the MCP tools"], "");
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    // The first request waited for the servers to settle: the failures are warnings before
    // it, and lines of the servers' log.
    assert!(err.contains("MCP server `missing` did not start"), "{err}");
    assert!(err.contains("MCP server `hanging` did not start within 0.5 s"), "{err}");
    let log = mcp_log(home.path());
    assert!(log.contains("mcp[missing] error: MCP server `missing` did not start"), "{log}");
    assert!(log.contains("MCP server `hanging` did not start within 0.5 s"), "{log}");
    assert!(log.contains("mcp[everything] info: MCP server `everything`: ready"), "{log}");

    // The servers' tools are in the first request, after the built-in ones.
    let all = server.requests();
    assert!(all[0].raw_body.contains(&format!("mcp__fs__{read}")), "{}", all[0].raw_body);
    let requests =
        from_tools(all, &[format!("mcp__everything__{echo}"), format!("mcp__fs__{read}")]);
    assert_eq!(requests.len(), 5, "{err}");
    assert_eq!(server.requests().len(), 5, "no request went out without the servers' tools");
    let first = &requests[0].raw_body;
    assert!(first.contains(&format!("mcp__everything__{echo}")), "{first}");
    assert!(first.contains(&format!("mcp__fs__{read}")), "{first}");
    assert!(!first.contains("mcp__missing__") && !first.contains("mcp__hanging__"));
    assert!(requests[1].raw_body.contains("hello from mcp"), "{}", requests[1].raw_body);
    assert!(requests[2].raw_body.contains("42"), "{}", requests[2].raw_body);
    assert!(requests[3].raw_body.contains("image/png"), "{}", requests[3].raw_body);
    assert!(
        requests[4].raw_body.contains("the answer is in the filesystem"),
        "{}",
        requests[4].raw_body
    );
}

#[test]
fn permission_rules_and_hooks_match_mcp_tool_names() {
    let Some(dir) = servers_dir() else { return };
    let home = tempfile::tempdir().unwrap();
    let user_home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let everything = bin(&dir, "mcp-server-everything");
    let names = tool_names(&everything, &["stdio"], repo.path());
    let echo = pick(&names, &["echo"]);
    let sum = pick(&names, &["get-sum", "add"]);
    // A PreToolUse hook on `mcp__.*` blocks the echo tool; a deny rule covers the server.
    let hook = user_home.path().join("block.sh");
    std::fs::write(
        &hook,
        "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in *'\"tool_name\":\"mcp__everything__echo\"'*) echo 'echo is blocked by hook' >&2; exit 2;; esac\nexit 0\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::create_dir_all(user_home.path().join(".claude")).unwrap();
    std::fs::write(
        user_home.path().join(".claude/settings.json"),
        json!({ "hooks": { "PreToolUse": [{ "matcher": "mcp__.*", "hooks": [{ "type": "command", "command": hook }] }] } })
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            r#"
[permissions]
deny = ["mcp__everything__{sum}"]

[mcp_servers.everything]
command = {everything:?}
args = ["stdio"]
"#
        ),
    )
    .unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .until_tools([format!("mcp__everything__{echo}")], wait_for_servers())
            .reply(Reply::tool_call(
                "c1",
                format!("mcp__everything__{echo}"),
                json!({ "message": "hi" }),
            ))
            .reply(Reply::tool_call(
                "c2",
                format!("mcp__everything__{sum}"),
                json!({ "a": 1, "b": 2 }),
            ))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let mut env = openai_env(&server);
    env.push(("HOME".into(), user_home.path().to_string_lossy().into_owned()));
    let run = Run { home: home.path(), cwd: repo.path(), env };
    let out = run.run(&["exec", "try the tools"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = from_tools(server.requests(), &[format!("mcp__everything__{echo}")]);
    assert!(requests[1].raw_body.contains("echo is blocked by hook"), "{}", requests[1].raw_body);
    assert!(!requests[1].raw_body.contains("Echo: hi"), "{}", requests[1].raw_body);
    assert!(
        !requests[2].raw_body.contains("\"3\"") && !requests[2].raw_body.contains("is 3"),
        "{}",
        requests[2].raw_body
    );
    assert!(
        requests[2].raw_body.to_lowercase().contains("denied")
            || requests[2].raw_body.contains("deny"),
        "{}",
        requests[2].raw_body
    );
}

/// `exec --json` shows every call as codex does: MCP servers' tools as `mcp_tool_call` (the
/// content blocks and structured content on success; `failed` with the error for a server's
/// error result and for a call the rules deny), a refused command as `declined`, an unknown tool as a failed
/// `tool_call`.
#[test]
fn exec_json_shows_mcp_calls_and_refused_calls_as_codex_items() {
    let Some(dir) = servers_dir() else { return };
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let everything = bin(&dir, "mcp-server-everything");
    let tools = tool_names(&everything, &["stdio"], repo.path());
    let echo = pick(&tools, &["echo"]);
    let reference = pick(&tools, &["get-resource-reference", "getResourceReference"]);
    let sum = pick(&tools, &["get-sum", "add"]);
    let structured = pick(&tools, &["get-structured-content", "getStructuredContent"]);
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            r#"
[permissions]
deny = ["mcp__everything__{sum}"]

[mcp_servers.everything]
command = {everything:?}
args = ["stdio"]
"#
        ),
    )
    .unwrap();
    let mcp = |tool: &str| format!("mcp__everything__{tool}");
    let server = FakeModelServer::start(
        Script::new()
            .until_tools([mcp(echo)], wait_for_servers())
            .reply(
                Reply::tool_call("c1", "run_command", json!({ "command": "touch /etc/cc-mcp-x" }))
                    .and_tool_call("c2", "mcp__nope__tool", json!({})),
            )
            .reply(Reply::tool_call("c3", mcp(echo), json!({ "message": "hi" })))
            .reply(Reply::tool_call("c4", mcp(reference), json!({ "resourceId": 0 })))
            .reply(Reply::tool_call("c5", mcp(sum), json!({ "a": 1, "b": 2 })))
            .reply(Reply::tool_call("c6", mcp(structured), json!({ "location": "Chicago" })))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let run = Run { home: home.path(), cwd: repo.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "--json", "-s", "workspace-write", "-a", "never", "go"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = crate::exec::json_lines(&out);
    // Every item that starts completes, under the same id, after it started.
    let events = crate::exec::item_events(&lines);
    for (index, (event, id, ..)) in events.iter().enumerate() {
        if event == "item.started" {
            let completed =
                events[index..].iter().any(|(e, i, ..)| e == "item.completed" && i == id);
            assert!(completed, "{id} never completed: {events:?}");
        }
    }
    let completed = |pick: &dyn Fn(&serde_json::Value) -> bool| -> (String, serde_json::Value) {
        let found = lines
            .iter()
            .find(|l| l["type"] == "item.completed" && pick(&l["item"]))
            .unwrap_or_else(|| panic!("no such item: {lines:#?}"));
        (found["item"]["id"].as_str().unwrap().to_owned(), found["item"].clone())
    };
    let started = |id: &str| -> serde_json::Value {
        lines
            .iter()
            .find(|l| l["type"] == "item.started" && l["item"]["id"] == id)
            .unwrap_or_else(|| panic!("{id} never started: {lines:#?}"))["item"]
            .clone()
    };

    let (id, item) = completed(&|i| i["command"] == "touch /etc/cc-mcp-x");
    assert_eq!(item["status"], "declined");
    assert_eq!(item["aggregated_output"], "");
    assert_eq!(item["exit_code"], serde_json::Value::Null);
    assert_eq!(started(&id)["status"], "in_progress");

    let (id, item) = completed(&|i| i["name"] == "mcp__nope__tool");
    assert_eq!(item["type"], "tool_call");
    assert_eq!(item["status"], "failed");
    assert!(item["result"].as_str().unwrap().contains("unknown tool"), "{item}");
    assert_eq!(started(&id)["status"], "in_progress");

    let (id, item) = completed(&|i| i["tool"] == echo);
    assert_eq!(
        item,
        json!({
            "id": id,
            "type": "mcp_tool_call",
            "server": "everything",
            "tool": echo,
            "arguments": { "message": "hi" },
            "result": { "content": [{ "type": "text", "text": "Echo: hi" }], "structured_content": null },
            "error": null,
            "status": "completed"
        })
    );
    assert_eq!(
        started(&id),
        json!({
            "id": id,
            "type": "mcp_tool_call",
            "server": "everything",
            "tool": echo,
            "arguments": { "message": "hi" },
            "result": null,
            "error": null,
            "status": "in_progress"
        })
    );

    // Structured content as the server sent it, next to its content blocks.
    let (_, item) = completed(&|i| i["tool"] == structured);
    assert_eq!(item["status"], "completed");
    let weather =
        json!({ "temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82 });
    assert_eq!(item["result"]["structured_content"], weather, "{item}");
    let block = &item["result"]["content"][0];
    assert_eq!(block["type"], "text", "{item}");
    let text: serde_json::Value = serde_json::from_str(block["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, weather);

    // The server's error result.
    let (id, item) = completed(&|i| i["tool"] == reference);
    assert_eq!(item["status"], "failed");
    assert_eq!(item["result"], serde_json::Value::Null);
    let message = item["error"]["message"].as_str().unwrap();
    assert!(message.contains("Invalid resourceId"), "{item}");
    assert_eq!(started(&id)["type"], "mcp_tool_call");

    // Denied by a rule before it ran: MCP calls have no `declined`, so failed with the reason.
    let (id, item) = completed(&|i| i["tool"] == sum);
    assert_eq!(item["type"], "mcp_tool_call");
    assert_eq!(item["status"], "failed");
    assert_eq!(item["arguments"], json!({ "a": 1, "b": 2 }));
    let message = item["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("permission denied"), "{item}");
    assert_eq!(started(&id)["status"], "in_progress");

    assert_eq!(lines.last().unwrap()["type"], "turn.completed");
    assert!(!Path::new("/etc/cc-mcp-x").exists());
}

#[test]
fn mcp_add_list_get_remove_edit_config_toml_and_keep_the_rest() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    std::fs::write(
        &config,
        "# my settings\nmodel = \"gpt-5\"\n\n[mcp_servers.other]\ncommand = \"other-server\"\n",
    )
    .unwrap();
    let run = |args: &[&str]| crate::codecoder(home.path(), args);

    let out = run(&[
        "mcp",
        "add",
        "fs",
        "--env",
        "ROOT_TOKEN=abc",
        "--",
        "npx",
        "-y",
        "server-filesystem",
        "/tmp",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.starts_with("# my settings\nmodel = \"gpt-5\"\n"), "{text}");
    assert!(text.contains("[mcp_servers.fs]"), "{text}");

    let out = run(&["mcp", "list"]);
    let listed = crate::stdout(&out);
    assert!(listed.contains("fs  stdio: npx -y server-filesystem /tmp"), "{listed}");
    assert!(listed.contains("other  stdio: other-server"), "{listed}");

    let out = run(&["mcp", "get", "fs", "--json"]);
    let got: serde_json::Value = serde_json::from_str(&crate::stdout(&out)).unwrap();
    assert_eq!(got["command"], "npx");
    assert_eq!(got["env"]["ROOT_TOKEN"], "*****", "env values may be secrets: masked");
    let out = run(&["mcp", "get", "fs"]);
    let shown = crate::stdout(&out);
    assert!(shown.contains("env: ROOT_TOKEN=*****") && !shown.contains("abc"), "{shown}");

    let out = run(&["mcp", "add", "web", "--url", "https://example.test/mcp", "--sampling"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = crate::stdout(&run(&["mcp", "get", "web"]));
    assert!(shown.contains("sampling: allowed"), "{shown}");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains("sampling = true"), "{text}");
    let out = run(&["mcp", "remove", "fs"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(!text.contains("mcp_servers.fs") && !text.contains("ROOT_TOKEN"), "{text}");
    assert!(text.contains("# my settings") && text.contains("[mcp_servers.other]"), "{text}");
    assert!(text.contains("[mcp_servers.web]"), "{text}");
    let out = run(&["mcp", "remove", "fs"]);
    assert!(!out.status.success());
    let out = run(&["mcp", "add", "bad name", "--", "x"]);
    assert!(!out.status.success());
}

#[test]
fn doctor_lists_mcp_servers_and_their_state() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[mcp_servers.missing]\ncommand = \"/nonexistent/mcp-server\"\n",
    )
    .unwrap();
    let out = crate::codecoder(home.path(), &["doctor"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = crate::stdout(&out);
    assert!(
        report.contains("MCP servers (stdio servers run outside the command sandbox"),
        "{report}"
    );
    assert!(report.contains("missing (stdio: /nonexistent/mcp-server): failed"), "{report}");
}

#[test]
fn progress_of_an_mcp_tool_streams_to_exec_json_and_sampling_uses_the_session_model() {
    let Some(dir) = servers_dir() else { return };
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let everything = bin(&dir, "mcp-server-everything");
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            r#"
[mcp_servers.everything]
command = {everything:?}
args = ["stdio"]
sampling = true
"#
        ),
    )
    .unwrap();
    let long = "mcp__everything__trigger-long-running-operation";
    let sample = "mcp__everything__trigger-sampling-request";
    let server = FakeModelServer::start(
        Script::new()
            // The sampling tool is offered once the server knows it may sample, through its
            // tools/list_changed.
            .until_tools([long, sample], wait_for_servers())
            .reply(Reply::tool_call("c1", long, json!({ "duration": 0.2, "steps": 2 })))
            .reply(Reply::tool_call("c2", sample, json!({ "prompt": "name a colour" })))
            .reply(Reply::text("done"))
            // The server's sampling request reaches the session's model without tools.
            .when_no_tools(Reply::text("teal, said the session's model")),
    )
    .unwrap();
    let run = Run { home: home.path(), cwd: repo.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "--json", "use the MCP tools"], "");
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let events: Vec<serde_json::Value> =
        crate::stdout(&out).lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    events.iter().for_each(crate::exec::check_json_line);
    // Each progress notification is an item.updated of the running MCP tool call, the progress
    // so far as its result's text.
    let long_tool = "trigger-long-running-operation";
    let updates: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "item.updated" && e["item"]["tool"] == long_tool)
        .filter_map(|e| e["item"]["result"]["content"][0]["text"].as_str())
        .collect();
    assert_eq!(updates, ["progress 1/2\n", "progress 1/2\nprogress 2/2\n"], "{events:?}");
    let completed = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["tool"] == long_tool)
        .unwrap();
    assert_eq!(completed["item"]["type"], "mcp_tool_call");
    assert_eq!(completed["item"]["server"], "everything");
    assert_eq!(completed["item"]["status"], "completed");
    let text = completed["item"]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("completed"), "{completed}");

    let requests = server.requests();
    let sampling: Vec<_> = requests
        .iter()
        .filter(|r| r.body.get("tools").and_then(|t| t.as_array()).is_none_or(Vec::is_empty))
        .collect();
    assert_eq!(sampling.len(), 1, "one sampling request");
    assert!(sampling[0].raw_body.contains("name a colour"), "{}", sampling[0].raw_body);
    assert!(
        sampling[0].raw_body.contains("You are a helpful test server."),
        "{}",
        sampling[0].raw_body
    );
    let last = &requests[requests.len() - 1].raw_body;
    assert!(last.contains("teal, said the session"), "{last}");
}

/// Kills the child when the test ends, however it ends.
pub(crate) struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the MCP crate's fixture, the TypeScript SDK's SSEServerTransport with one `echo` tool
/// that also answers the `X-Test` header its stream was opened with; returns it (killed on
/// drop) and its event stream's URL.
pub(crate) fn start_sse_server(npm_dir: &Path) -> (KillOnDrop, String) {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/it/fixtures/sse_server.mjs");
    let mut child = std::process::Command::new("node")
        .arg(&fixture)
        .env(codecoder_protocol::env::CODECODER_TEST_NPM, npm_dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = KillOnDrop(child);
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
    let port: u16 = line.trim().parse().unwrap_or_else(|_| panic!("no port: {line:?}"));
    (child, format!("http://127.0.0.1:{port}/sse"))
}

#[test]
fn a_mcp_json_server_of_type_sse_is_reached_over_the_older_http_sse_transport() {
    let Some(dir) = servers_dir() else { return };
    let (_child, url) = start_sse_server(&dir);

    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    let mcp_json =
        json!({"mcpServers": {"old": {"type": "sse", "url": url, "headers": {"X-Test": "9"}}}});
    std::fs::write(repo.path().join(".mcp.json"), mcp_json.to_string()).unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .until_tools(["mcp__old__echo"], wait_for_servers())
            .reply(Reply::tool_call("c1", "mcp__old__echo", json!({ "message": "over sse" })))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let run = Run { home: home.path(), cwd: repo.path(), env: openai_env(&server) };
    // Untrusted, the project's servers are not read, and doctor says why.
    let out = run.run(&["doctor"], "");
    let report = crate::stdout(&out) + &stderr(&out);
    assert!(report.contains(".mcp.json is not read: this project is not trusted"), "{report}");
    let out = run.run(&["trust"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    // `mcp list` and `mcp get` show the project's servers too, with where they come from.
    let listed = crate::stdout(&run.run(&["mcp", "list"], ""));
    assert!(listed.contains(&format!("old  sse: {url}  (from ")), "{listed}");
    assert!(listed.contains(".mcp.json)"), "{listed}");
    let got = crate::stdout(&run.run(&["mcp", "get", "old"], ""));
    assert!(got.contains(&format!("sse: {url}")) && got.contains("from: "), "{got}");

    let out = run.run(&["doctor"], "");
    let report = crate::stdout(&out);
    assert!(report.contains(&format!("old (sse: {url}): ready, 1 tools")), "{report}");

    let out = run.run(&["exec", "echo over the old transport"], "");
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let requests = from_tools(server.requests(), &["mcp__old__echo".to_owned()]);
    assert_eq!(requests.len(), 2, "{err}");
    assert!(requests[1].raw_body.contains("echo: over sse (x-test 9)"), "{}", requests[1].raw_body);
}

#[test]
fn a_tool_its_server_marks_destructive_is_refused_when_no_one_can_approve_it() {
    // server-filesystem marks `write_file` destructive and `read_text_file` read-only. In exec
    // (approvals `never`) nobody can approve the write: it is refused and the model told why,
    // while the read runs.
    let Some(dir) = servers_dir() else { return };
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let repo_path = repo.path().canonicalize().unwrap();
    let repo_text = repo_path.to_string_lossy().into_owned();
    std::fs::write(repo_path.join("notes.txt"), "kept\n").unwrap();
    let filesystem = bin(&dir, "mcp-server-filesystem");
    let fs_tools = tool_names(&filesystem, &[&repo_text], repo.path());
    let read = pick(&fs_tools, &["read_text_file", "read_file"]);
    let write = pick(&fs_tools, &["write_file"]);
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[mcp_servers.fs]\ncommand = {filesystem:?}\nargs = {}\n",
            toml_list(&[&repo_text])
        ),
    )
    .unwrap();
    let target = repo_path.join("written.txt").to_string_lossy().into_owned();
    let notes = repo_path.join("notes.txt").to_string_lossy().into_owned();
    let server = FakeModelServer::start(
        Script::new()
            .until_tools([format!("mcp__fs__{write}")], wait_for_servers())
            .reply(Reply::tool_call(
                "c1",
                format!("mcp__fs__{write}"),
                json!({ "path": target, "content": "x" }),
            ))
            .reply(Reply::tool_call("c2", format!("mcp__fs__{read}"), json!({ "path": notes })))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let run = Run { home: home.path(), cwd: repo.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "write a file"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!repo_path.join("written.txt").exists(), "the destructive tool ran");
    let requests = from_tools(server.requests(), &[format!("mcp__fs__{write}")]);
    assert_eq!(requests.len(), 3);
    let refusal = &requests[1].raw_body;
    assert!(refusal.contains("marked destructive by its MCP server"), "{refusal}");
    assert!(requests[2].raw_body.contains("kept"), "{}", requests[2].raw_body);
}
