//! Plan mode end to end: `exec --plan` (only read-only tools run; the plan is printed and
//! nothing changes) and the TUI's review of a plan (approve: the plan becomes the todo list and
//! writes run again; keep planning with feedback: the feedback reaches the model).

use std::path::Path;

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::json;

use crate::exec::{Run, item_events, json_lines, openai_env};
use crate::{stderr, stdout};

const PLAN: &str = "# Plan\n\n1. Fix the greeting in `a.txt`\n2. Add `notes.txt`\n";

/// A model that tries to write, edit and run a writing command, reads a file, then presents
/// its plan.
fn planning_script() -> Script {
    Script::new()
        .reply(
            Reply::tool_call("call_1", "write_file", json!({"path": "new.txt", "content": "x"}))
                .and_tool_call(
                    "call_2",
                    "edit",
                    json!({"path": "a.txt", "old_string": "helo", "new_string": "hello"}),
                )
                .and_tool_call("call_3", "run_command", json!({"command": "touch made.txt"})),
        )
        .reply(Reply::tool_call("call_4", "read_file", json!({"path": "a.txt"})))
        .reply(Reply::tool_call("call_5", "exit_plan_mode", json!({"plan": PLAN})))
        .reply(Reply::text("The plan is ready for review."))
}

fn workspace(dir: &Path) {
    std::fs::write(dir.join("a.txt"), "helo world\n").unwrap();
}

#[test]
fn exec_plan_refuses_writes_edits_and_commands_and_prints_the_plan() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    workspace(cwd.path());
    let server = FakeModelServer::start(planning_script()).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "--plan", "-s", "workspace-write", "Fix the greeting."], "");
    assert!(out.status.success(), "{}", stderr(&out));
    // The plan is the answer on stdout.
    assert_eq!(stdout(&out), PLAN);
    // Nothing changed.
    assert_eq!(std::fs::read_to_string(cwd.path().join("a.txt")).unwrap(), "helo world\n");
    assert!(!cwd.path().join("new.txt").exists());
    assert!(!cwd.path().join("made.txt").exists());

    // The turn ends once the plan is presented: the model is not asked again.
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", stderr(&out));
    assert!(!stderr(&out).contains("The plan is ready for review."), "{}", stderr(&out));
    // The model is told it plans and is offered the plan tool.
    assert!(requests[0].raw_body.contains("Plan mode is on"), "{}", requests[0].raw_body);
    assert!(requests[0].raw_body.contains("exit_plan_mode"));
    // All three writes were refused with plan mode's reason; the read ran.
    let refusals =
        requests[1].raw_body.matches("blocked by the permission policy: plan mode").count();
    assert_eq!(refusals, 3, "{}", requests[1].raw_body);
    assert!(requests[1].raw_body.contains("`write_file` changes files"));
    assert!(requests[1].raw_body.contains("`touch made.txt` is not known to be read-only"));
    assert!(requests[2].raw_body.contains("helo world"), "the read ran");
    // Nobody approves in exec: the plan tool's result says so, in the log a resume sends on,
    // and the turn closed completed.
    let log = session_log(home.path());
    assert!(log.contains("not here to approve"), "{log}");
    let last = log.lines().last().unwrap();
    assert!(last.contains("turn_end") && last.contains("completed"), "{last}");
}

/// The one session log under `home`.
fn session_log(home: &Path) -> String {
    let logs: Vec<_> = std::fs::read_dir(home.join("sessions"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    std::fs::read_to_string(&logs[0]).unwrap()
}

#[test]
fn permission_mode_plan_is_the_same_and_json_carries_the_plan() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    workspace(cwd.path());
    let server = FakeModelServer::start(planning_script()).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "--json", "--permission-mode", "plan", "Fix the greeting."], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!cwd.path().join("new.txt").exists());
    let lines = json_lines(&out);
    let plan_item = lines.iter().find(|event| {
        event["type"] == "item.completed" && event["item"]["name"] == "exit_plan_mode"
    });
    let plan_item = plan_item.unwrap_or_else(|| panic!("no plan item:\n{}", stdout(&out)));
    assert_eq!(plan_item["item"]["arguments"]["plan"], PLAN);
    assert_eq!(plan_item["item"]["status"], "completed");
    // Every call is an item: plan mode's refusals fail the file changes (codex's file_change
    // has no `declined`) and decline the command; the read and the plan tool ran.
    let completed: Vec<(String, String)> = item_events(&lines)
        .into_iter()
        .filter(|(event, ..)| event == "item.completed")
        .map(|(_, _, kind, status)| (kind, status))
        .collect();
    let expected = [
        ("file_change", "failed"),
        ("file_change", "failed"),
        ("command_execution", "declined"),
        ("tool_call", "completed"),
        ("tool_call", "completed"),
        ("agent_message", ""),
    ]
    .map(|(kind, status)| (kind.to_owned(), status.to_owned()));
    assert_eq!(completed, expected, "{lines:#?}");
    // The plan is the turn's answer, its last message, not an error; then the turn completes.
    let n = lines.len();
    assert_eq!(lines[n - 2]["item"]["type"], "agent_message");
    assert_eq!(lines[n - 2]["item"]["text"], PLAN.trim_end());
    assert_eq!(lines[n - 1]["type"], "turn.completed");
    assert_eq!(server.requests().len(), 3);
}

/// `exec --plan -o FILE`: the plan is the last message written to the file.
#[test]
fn exec_plan_writes_the_plan_to_the_output_file() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    workspace(cwd.path());
    let server = FakeModelServer::start(planning_script()).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let last = cwd.path().join("last.md");
    let out = run
        .run(&["exec", "--plan", "--json", "-o", last.to_str().unwrap(), "Fix the greeting."], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&last).unwrap(), PLAN.trim_end());
    assert!(
        !stdout(&out).contains("\"type\":\"error\""),
        "presenting a plan is no error:\n{}",
        stdout(&out)
    );
}

#[test]
fn without_plan_mode_the_plan_tool_is_not_offered_and_writes_run() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call(
                "call_1",
                "write_file",
                json!({"path": "new.txt", "content": "x"}),
            ))
            .reply(Reply::text("Written.")),
    )
    .unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "-s", "danger-full-access", "Write it."], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(cwd.path().join("new.txt").exists());
    let requests = server.requests();
    assert!(!requests[0].raw_body.contains("exit_plan_mode"));
    assert!(!requests[0].raw_body.contains("Plan mode is on"));
}

/// An AGENTS.md over its budget and a large one: the cut and the size are shown on exec's
/// stderr at session start and listed by `doctor`.
#[test]
fn prompt_warnings_are_shown_in_exec_and_listed_by_doctor() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::create_dir(cwd.path().join(".git")).unwrap();
    // Many short distinct words: well over 1,000 tokens in 6,000 bytes.
    let words: Vec<String> = (0..1500).map(|i| format!("w{i}")).collect();
    let lines: Vec<String> = words.chunks(10).map(|line| line.join(" ")).collect();
    std::fs::write(cwd.path().join("AGENTS.md"), lines.join("\n")).unwrap();
    std::fs::write(home.path().join("config.toml"), "project_doc_max_bytes = 6000\n").unwrap();
    let server = FakeModelServer::start(Script::new().reply(Reply::text("Hi."))).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "Hello."], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("warning: AGENTS.md files total"), "{err}");
    assert!(err.contains("over the budget of 6000; only the first"), "{err}");
    assert!(err.contains("warning: the prompt section `AGENTS.md` has ~"), "{err}");
    assert_eq!(stdout(&out), "Hi.\n");

    let doctor = run.run(&["doctor"], "");
    assert!(doctor.status.success(), "{}", stderr(&doctor));
    let text = stdout(&doctor);
    assert!(text.contains("instruction file: "), "{text}");
    assert!(text.contains("  warning: AGENTS.md files total"), "{text}");
    assert!(text.contains("has ~"), "{text}");
}

/// Claude Code's `permissions.defaultMode: "plan"` in the user's settings starts sessions in
/// plan mode; `doctor` shows it, and `--permission-mode` overrides it.
#[test]
fn claude_default_mode_plan_starts_in_plan_mode() {
    let home = tempfile::tempdir().unwrap();
    let user_home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::create_dir(user_home.path().join(".claude")).unwrap();
    std::fs::write(
        user_home.path().join(".claude/settings.json"),
        r#"{"permissions": {"defaultMode": "plan"}}"#,
    )
    .unwrap();
    let write = || {
        Script::new()
            .reply(Reply::tool_call(
                "call_1",
                "write_file",
                json!({"path": "new.txt", "content": "x"}),
            ))
            .reply(Reply::text("Done."))
    };
    let server = FakeModelServer::start(write()).unwrap();
    let mut env = openai_env(&server);
    env.push(("HOME".to_owned(), user_home.path().display().to_string()));
    let run = Run { home: home.path(), cwd: cwd.path(), env };
    let doctor = run.run(&["doctor"], "");
    assert!(
        stdout(&doctor).contains("exec: sandbox")
            && stdout(&doctor).contains("permission mode plan"),
        "{}",
        stdout(&doctor)
    );
    let out = run.run(&["exec", "-s", "danger-full-access", "Write it."], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!cwd.path().join("new.txt").exists(), "refused in plan mode");
    assert!(server.requests()[1].raw_body.contains("plan mode: `write_file` changes files"));

    let server = FakeModelServer::start(write()).unwrap();
    let mut env = openai_env(&server);
    env.push(("HOME".to_owned(), user_home.path().display().to_string()));
    let run = Run { home: home.path(), cwd: cwd.path(), env };
    let out = run.run(
        &["exec", "-s", "danger-full-access", "--permission-mode", "default", "Write it."],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(cwd.path().join("new.txt").exists(), "the flag wins over the settings file");
}

#[test]
fn help_explains_plan_mode() {
    let home = tempfile::tempdir().unwrap();
    let help = stdout(&crate::codecoder(home.path(), &["exec", "--help"]));
    assert!(help.contains("--plan") && help.contains("Plan only"), "{help}");
    assert!(help.contains("--permission-mode <MODE>") && help.contains("acceptEdits"), "{help}");
    let help = stdout(&crate::codecoder(home.path(), &["--help"]));
    assert!(help.contains("Shift+Tab"), "{help}");
    let out = crate::codecoder(home.path(), &["exec", "--permission-mode", "yolo", "x"]);
    assert_eq!(out.status.code(), Some(2), "an unknown mode is a usage error");
}
