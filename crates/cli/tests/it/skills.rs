//! Agent Skills and agent definitions end to end: the real binary against the fake model
//! server, skills and agents in a temp project's `.codecoder/skills`, `.claude/agents`.

use std::path::Path;

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::json;

use crate::hooks::Setup;
use crate::stderr;

/// Writing a project's skills and agent definitions.
trait Extensions {
    fn skill(&self, name: &str, frontmatter: &str, body: &str) -> std::path::PathBuf;
    fn agent(&self, file: &str, text: &str);
}

impl Extensions for Setup {
    fn skill(&self, name: &str, frontmatter: &str, body: &str) -> std::path::PathBuf {
        let dir = self.repo.path().join(".codecoder/skills").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), format!("---\n{frontmatter}\n---\n{body}\n")).unwrap();
        dir
    }

    fn agent(&self, file: &str, text: &str) {
        let dir = self.repo.path().join(".claude/agents");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(file), text).unwrap();
    }
}

fn tool_names(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_catalogue_is_in_the_first_request_and_the_skill_tool_returns_the_body() {
    let setup = Setup::new();
    let dir = setup.skill(
        "pdf-forms",
        "name: pdf-forms\ndescription: Fill in PDF forms\nwhen_to_use: when a PDF form must be filled",
        "SECRET-PDF-BODY: run ${CLAUDE_SKILL_DIR}/scripts/fill.py for $ARGUMENTS",
    );
    setup.skill("broken", "name: broken\ndescription: \"unclosed", "never seen");
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call(
                "c1",
                "skill",
                json!({ "name": "pdf-forms", "arguments": "tax.pdf" }),
            ))
            .reply(Reply::text("filled")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "fill in the form"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let broken = Path::new(".codecoder/skills/broken/SKILL.md");
    assert!(
        stderr(&out).contains(&format!("{}:3:", broken.display())),
        "a bad skill is a warning naming file and line: {}",
        stderr(&out)
    );
    let requests = server.requests();
    let first = &requests[0];
    let instructions = first.body["instructions"].as_str().unwrap();
    assert!(instructions.contains("# Skills"), "{instructions}");
    assert!(instructions.contains("`pdf-forms`: Fill in PDF forms"), "{instructions}");
    assert!(!first.raw_body.contains("SECRET-PDF-BODY"), "no body before activation");
    assert!(!first.raw_body.contains("never seen"));
    assert!(tool_names(&first.body).contains(&"skill".to_owned()));
    let expected = format!("SECRET-PDF-BODY: run {}/scripts/fill.py for tax.pdf", dir.display());
    let second: serde_json::Value = requests[1].body.clone();
    assert!(second.to_string().contains(&expected), "{}", requests[1].raw_body);
}

#[test]
fn a_dollar_mention_in_the_prompt_activates_the_skill() {
    let setup = Setup::new();
    setup.skill(
        "release-notes",
        "name: release-notes\ndescription: Write release notes",
        "NOTES-BODY for [$ARGUMENTS] in ${CLAUDE_SESSION_ID}",
    );
    let server = FakeModelServer::start(Script::new().reply(Reply::text("ok"))).unwrap();
    let out = setup.run(&server, &["exec", "$release-notes for v2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &server.requests()[0].raw_body;
    assert!(body.contains("NOTES-BODY for [for v2] in "), "{body}");
    assert!(!body.contains("${CLAUDE_SESSION_ID}"), "{body}");
}

#[test]
fn a_project_command_expands_its_arguments() {
    let setup = Setup::new();
    let dir = setup.repo.path().join(".claude/commands");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("fix-issue.md"),
        "---\ndescription: Fix an issue\n---\nFIX issue #$1 ($ARGUMENTS)\n",
    )
    .unwrap();
    let server = FakeModelServer::start(Script::new().reply(Reply::text("ok"))).unwrap();
    let out = setup.run(&server, &["exec", "/fix-issue 123 urgent"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &server.requests()[0].raw_body;
    assert!(body.contains("FIX issue #123 (123 urgent)"), "{body}");
}

const REVIEWER: &str = "---\nname: reviewer\ndescription: Reviews code read-only\ntools: Read, Grep\n---\nYou are REVIEWER-PROMPT.\n";

#[test]
fn an_agent_definition_limits_the_subagents_tools_and_its_answer_returns() {
    let setup = Setup::new();
    setup.agent("reviewer.md", REVIEWER);
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call(
                "a1",
                "agent",
                json!({ "task": "review src/ for bugs", "agent_type": "reviewer" }),
            ))
            .reply(Reply::text("CHILD-ANSWER: no bugs"))
            .reply(Reply::text("the reviewer found no bugs")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "get the code reviewed"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let parent_tools = tool_names(&requests[0].body);
    assert!(parent_tools.contains(&"agent".to_owned()), "{parent_tools:?}");
    let agent_tool = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "agent")
        .unwrap()
        .to_string();
    assert!(
        agent_tool.contains("general-purpose") && agent_tool.contains("Reviews code read-only")
    );
    let child = &requests[1];
    assert_eq!(tool_names(&child.body), vec!["read_file", "grep"]);
    assert!(child.body["instructions"].as_str().unwrap().contains("REVIEWER-PROMPT"));
    assert!(child.raw_body.contains("review src/ for bugs"));
    assert!(requests[2].raw_body.contains("CHILD-ANSWER: no bugs"), "{}", requests[2].raw_body);
}

#[test]
fn two_subagents_run_from_one_response_and_both_answers_return() {
    let setup = Setup::new();
    setup.agent("reviewer.md", REVIEWER);
    let server = FakeModelServer::start(
        Script::new()
            .reply(
                Reply::tool_call(
                    "a1",
                    "agent",
                    json!({ "task": "TASK-ONE", "agent_type": "reviewer" }),
                )
                .and_tool_call("a2", "agent", json!({ "task": "TASK-TWO" })),
            )
            .reply(Reply::text("ANSWER-X"))
            .reply(Reply::text("ANSWER-Y"))
            .reply(Reply::text("both done")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "split the work"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let children = [&requests[1].raw_body, &requests[2].raw_body];
    assert!(children.iter().any(|body| body.contains("TASK-ONE")));
    assert!(children.iter().any(|body| body.contains("TASK-TWO")));
    let last = &requests[3].raw_body;
    assert!(last.contains("ANSWER-X") && last.contains("ANSWER-Y"), "{last}");
}

#[test]
fn an_active_skills_allowed_tools_are_pre_approved_in_a_trusted_project() {
    let setup = Setup::new();
    setup.skill(
        "scaffold",
        "name: scaffold\ndescription: Make files\nallowed-tools: Bash(touch:*) Read",
        "Use touch.",
    );
    let script = |file: &str| {
        Script::new()
            .reply(Reply::tool_call(
                "c1",
                "run_command",
                json!({ "command": format!("touch {file}") }),
            ))
            .reply(Reply::text("done"))
    };
    // Not active: under `untrusted` approvals the command needs a person, and exec has none.
    let server = FakeModelServer::start(script("plain.txt")).unwrap();
    let out = setup.run(&server, &["-a", "untrusted", "exec", "make plain.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!setup.repo.path().join("plain.txt").exists());
    // Active in an untrusted project: its pre-approvals do not count.
    let server = FakeModelServer::start(script("early.txt")).unwrap();
    let out = setup.run(&server, &["-a", "untrusted", "exec", "$scaffold make early.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!setup.repo.path().join("early.txt").exists());
    // Active in a trusted project: the command runs without asking.
    let out = setup.run(&server, &["trust"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let server = FakeModelServer::start(script("made.txt")).unwrap();
    let out = setup.run(&server, &["-a", "untrusted", "exec", "$scaffold make made.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(setup.repo.path().join("made.txt").exists(), "{}", server.requests()[1].raw_body);
}

#[test]
fn doctor_lists_skills_agents_and_commands_with_their_files_and_warnings() {
    let setup = Setup::new();
    let dir = setup.skill("pdf-forms", "name: pdf-forms\ndescription: Fill PDF forms", "body");
    setup.skill("broken", "name: broken\ndescription: \"unclosed", "body");
    setup.agent("reviewer.md", REVIEWER);
    let commands = setup.repo.path().join(".claude/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(commands.join("ship.md"), "Ship it\n").unwrap();
    let server = FakeModelServer::start(Script::new()).unwrap();
    let out = setup.run(&server, &["doctor"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = crate::stdout(&out);
    assert!(
        text.contains(&format!("pdf-forms (project): {}", dir.join("SKILL.md").display())),
        "{text}"
    );
    assert!(text.contains("general-purpose (built in)"), "{text}");
    assert!(text.contains("reviewer (project): "), "{text}");
    assert!(text.contains("/ship (project): "), "{text}");
    assert!(text.contains("broken/SKILL.md:3: unclosed"), "{text}");
}

#[test]
fn an_agents_max_turns_bounds_its_steps() {
    let setup = Setup::new();
    setup.agent(
        "quick.md",
        "---\nname: quick\ndescription: One step only\nmaxTurns: 1\n---\nBe quick.\n",
    );
    std::fs::write(setup.repo.path().join("a.txt"), "alpha\n").unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call(
                "a1",
                "agent",
                json!({ "task": "read a.txt", "agent_type": "quick" }),
            ))
            .reply(Reply::tool_call("r1", "read_file", json!({ "path": "a.txt" })))
            .reply(Reply::text("the helper ran out of steps")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "delegate"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "the child never got a second step");
    assert!(requests[2].raw_body.contains("the subagent failed"), "{}", requests[2].raw_body);
}
