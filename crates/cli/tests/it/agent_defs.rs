//! Agent definitions run as Claude Code runs them, end to end: the real binary against the fake
//! model server, with definitions in a temp project's `.claude/agents`. An agent's
//! `permissionMode` decides its subagent's calls; its `model` alias maps through
//! `[agent.model_aliases]`.

use std::io::Write as _;

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::json;

use crate::hooks::Setup;
use crate::stderr;

fn agent(setup: &Setup, name: &str, frontmatter: &str) {
    let dir = setup.repo.path().join(".claude/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("{name}.md")),
        format!("---\nname: {name}\ndescription: The {name} agent\n{frontmatter}\n---\nHelp.\n"),
    )
    .unwrap();
}

fn config(setup: &Setup, text: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(setup.home.path().join("config.toml"))
        .unwrap();
    writeln!(file, "{text}").unwrap();
}

/// The parent delegates `touch FILE` to `agent_type`, whose child runs it and answers.
fn delegated_touch(agent_type: &str, file: &str) -> Script {
    Script::new()
        .reply(Reply::tool_call(
            "a1",
            "agent",
            json!({ "task": format!("make {file}"), "agent_type": agent_type }),
        ))
        .reply(Reply::tool_call("c1", "run_command", json!({ "command": format!("touch {file}") })))
        .reply(Reply::text("CHILD-DONE"))
        .reply(Reply::text("delegated"))
}

#[test]
fn an_agent_in_plan_mode_cannot_run_a_command_the_session_would_run() {
    let setup = Setup::new();
    agent(&setup, "planner", "permissionMode: plan");
    // The general-purpose subagent, in the session's mode, makes its file.
    let server = FakeModelServer::start(delegated_touch("general-purpose", "free.txt")).unwrap();
    let out = setup.run(&server, &["--full-auto", "exec", "delegate"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(setup.repo.path().join("free.txt").exists(), "{}", server.requests()[2].raw_body);
    // The planner's child is refused the same command, and the refusal names plan mode.
    let server = FakeModelServer::start(delegated_touch("planner", "planned.txt")).unwrap();
    let out = setup.run(&server, &["--full-auto", "exec", "delegate"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!setup.repo.path().join("planned.txt").exists());
    let refused = &server.requests()[2].raw_body;
    assert!(refused.to_lowercase().contains("plan"), "{refused}");
}

#[test]
fn an_agent_in_bypass_permissions_runs_what_the_session_would_ask_about() {
    let setup = Setup::new();
    agent(&setup, "builder", "permissionMode: bypassPermissions");
    agent(&setup, "careful", "permissionMode: dontAsk");
    // Under `untrusted` approvals the command needs a person, and exec has none.
    let server = FakeModelServer::start(delegated_touch("careful", "asked.txt")).unwrap();
    let out = setup.run(&server, &["-a", "untrusted", "exec", "delegate"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!setup.repo.path().join("asked.txt").exists());
    let server = FakeModelServer::start(delegated_touch("builder", "built.txt")).unwrap();
    let out = setup.run(&server, &["-a", "untrusted", "exec", "delegate"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(setup.repo.path().join("built.txt").exists(), "{}", server.requests()[2].raw_body);
}

/// The parent delegates a task to `agent_type`, whose child answers at once.
fn delegated(agent_type: &str) -> Script {
    Script::new()
        .reply(Reply::tool_call(
            "a1",
            "agent",
            json!({ "task": "look around", "agent_type": agent_type }),
        ))
        .reply(Reply::text("CHILD-DONE"))
        .reply(Reply::text("delegated"))
}

#[test]
fn an_agents_model_alias_maps_through_the_configured_table() {
    let setup = Setup::new();
    agent(&setup, "fast", "model: haiku");
    agent(&setup, "strong", "model: opus");
    agent(&setup, "same", "model: inherit");
    config(&setup, "model = \"parent-model\"\n[agent.model_aliases]\nhaiku = \"small-model\"");
    let model_of_child = |agent_type: &str| {
        let server = FakeModelServer::start(delegated(agent_type)).unwrap();
        let out = setup.run(&server, &["exec", "delegate"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let requests = server.requests();
        assert_eq!(requests[0].body["model"], "parent-model");
        (requests[1].body["model"].as_str().unwrap().to_owned(), stderr(&out))
    };
    assert_eq!(model_of_child("fast").0, "small-model");
    assert_eq!(model_of_child("same").0, "parent-model");
    // An alias the table does not map on this provider: the parent's model, with a warning.
    let (model, err) = model_of_child("strong");
    assert_eq!(model, "parent-model");
    assert!(err.contains("agent `strong` asks for model `opus`"), "{err}");
}

#[test]
fn an_agent_hook_reads_the_project_with_read_only_tools_and_its_verdict_denies_a_command() {
    let setup = Setup::new();
    let claude = setup.user_home.path().join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(
        claude.join("settings.json"),
        json!({ "hooks": { "PreToolUse": [{ "matcher": "Bash", "hooks": [{ "type": "agent",
            "prompt": "Check this call against POLICY.txt: $ARGUMENTS" }] }] } })
        .to_string(),
    )
    .unwrap();
    std::fs::write(setup.repo.path().join("POLICY.txt"), "POLICY-TEXT: never touch files\n")
        .unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "run_command", json!({ "command": "touch made.txt" })))
            .reply(Reply::tool_call("h1", "read_file", json!({ "path": "POLICY.txt" })))
            .reply(Reply::text("{\"ok\": false, \"reason\": \"the policy agent forbids touch\"}"))
            .reply(Reply::text("not allowed")),
    )
    .unwrap();
    let out = setup.run(&server, &["--full-auto", "exec", "make made.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!setup.repo.path().join("made.txt").exists(), "the agent hook must have denied touch");
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{:?}", requests.iter().map(|r| &r.raw_body).collect::<Vec<_>>());
    let hook_tools = requests[1].body["tools"].to_string();
    assert!(hook_tools.contains("\"read_file\""), "{hook_tools}");
    assert!(
        ["run_command", "write_file", "write_stdin", "update_plan", "agent"]
            .iter()
            .all(|tool| !hook_tools.contains(&format!("\"{tool}\""))),
        "the hook's subagent only reads: {hook_tools}"
    );
    assert!(requests[1].raw_body.contains("Check this call against POLICY.txt"));
    assert!(requests[2].raw_body.contains("POLICY-TEXT"), "{}", requests[2].raw_body);
    let body = &requests[3].raw_body;
    assert!(body.contains("the policy agent forbids touch"), "{body}");
}

#[test]
fn an_agents_mcp_servers_add_the_named_servers_tools_to_its_tool_list() {
    let Some(dir) = crate::mcp::servers_dir() else { return };
    let setup = Setup::new();
    let everything = crate::mcp::bin(&dir, "mcp-server-everything");
    let names = crate::mcp::tool_names(&everything, &["stdio"], setup.repo.path());
    let echo = crate::mcp::pick(&names, &["echo"]);
    config(
        &setup,
        &format!("[mcp_servers.everything]\ncommand = {everything:?}\nargs = [\"stdio\"]"),
    );
    agent(&setup, "reader", "tools: Read");
    agent(&setup, "linked", "tools: Read\nmcpServers:\n  - everything");
    let child_tools = |agent_type: &str| {
        let server = FakeModelServer::start(delegated(agent_type)).unwrap();
        let out = setup.run(&server, &["exec", "delegate"]);
        assert!(out.status.success(), "{}", stderr(&out));
        server.requests()[1].body["tools"].to_string()
    };
    let mcp_tool = format!("\"mcp__everything__{echo}\"");
    let plain = child_tools("reader");
    assert!(plain.contains("\"read_file\"") && !plain.contains(&mcp_tool), "{plain}");
    let linked = child_tools("linked");
    assert!(linked.contains("\"read_file\"") && linked.contains(&mcp_tool), "{linked}");
}
