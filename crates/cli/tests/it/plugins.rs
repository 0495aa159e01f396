//! Claude Code plugins end to end: `codecoder plugin add|list|disable|remove` on a plugin
//! directory, whose Python PreToolUse hook (run through `${CLAUDE_PLUGIN_ROOT}`) and commands
//! reach `codecoder exec` with the fake model server.

use std::path::Path;

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::json;

use crate::stderr;

const BLOCK_PY: &str = r#"import json, os, sys
event = json.load(sys.stdin)
root = os.environ.get("CLAUDE_PLUGIN_ROOT", "")
if event.get("tool_name") == "Bash" and os.path.isfile(os.path.join(root, "hooks", "block.py")):
    print("PLUGIN-BLOCKED: commands are off in this project", file=sys.stderr)
    sys.exit(2)
sys.exit(0)
"#;

/// A plugin `guard` in `dir`: a PreToolUse hook blocking commands, a `/guard:hello` command and
/// `/guard:bye` from a folder its manifest names, a
/// `guard:lint` skill and a `guard:checker` agent.
fn write_plugin(dir: &Path) {
    std::fs::create_dir_all(dir.join(".claude-plugin")).unwrap();
    std::fs::write(
        dir.join(".claude-plugin/plugin.json"),
        json!({ "name": "guard", "description": "Blocks commands", "version": "1.0.0",
                "commands": ["./extra-commands", "../outside"] })
        .to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("hooks")).unwrap();
    std::fs::write(dir.join("hooks/block.py"), BLOCK_PY).unwrap();
    std::fs::write(
        dir.join("hooks/hooks.json"),
        json!({ "hooks": { "PreToolUse": [{ "matcher": "Bash", "hooks": [
            { "type": "command", "command": "python3 ${CLAUDE_PLUGIN_ROOT}/hooks/block.py" }
        ] }] } })
        .to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("commands")).unwrap();
    std::fs::write(
        dir.join("commands/hello.md"),
        "---\ndescription: Say hello\n---\nPLUGIN-HELLO to $ARGUMENTS\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("extra-commands")).unwrap();
    std::fs::write(dir.join("extra-commands/bye.md"), "PLUGIN-BYE to $ARGUMENTS\n").unwrap();
    std::fs::create_dir_all(dir.join("skills/lint")).unwrap();
    std::fs::write(
        dir.join("skills/lint/SKILL.md"),
        "---\nname: lint\ndescription: Lint the code\n---\nPLUGIN-LINT-BODY\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("agents")).unwrap();
    std::fs::write(
        dir.join("agents/checker.md"),
        "---\nname: checker\ndescription: Checks things\n---\nYou are PLUGIN-CHECKER.\n",
    )
    .unwrap();
}

/// The shared project set-up plus a plugin directory.
struct Setup {
    project: crate::hooks::Setup,
    plugin: tempfile::TempDir,
}

impl std::ops::Deref for Setup {
    type Target = crate::hooks::Setup;

    fn deref(&self) -> &Self::Target {
        &self.project
    }
}

impl Setup {
    fn new() -> Self {
        let setup =
            Self { project: crate::hooks::Setup::new(), plugin: tempfile::tempdir().unwrap() };
        write_plugin(setup.plugin.path());
        setup
    }

    fn plugin(&self, args: &[&str]) -> String {
        let mut all = vec!["plugin"];
        all.extend_from_slice(args);
        let out = self.run_with(Vec::new(), &all);
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs `exec` with a model that calls `run_command` to create `made.txt`; returns the
    /// second request's body (the one carrying the command's result).
    fn exec_touch(&self) -> String {
        let server = FakeModelServer::start(
            Script::new()
                .reply(Reply::tool_call(
                    "c1",
                    "run_command",
                    json!({ "command": "touch made.txt" }),
                ))
                .reply(Reply::text("done")),
        )
        .unwrap();
        let out = self.run(&server, &["exec", "make a file"]);
        assert!(out.status.success(), "{}", stderr(&out));
        server.requests()[1].raw_body.clone()
    }
}

#[test]
fn a_plugin_python_hook_blocks_commands_until_the_plugin_is_disabled() {
    let setup = Setup::new();
    let dir = setup.plugin.path().to_string_lossy().into_owned();
    let added = setup.plugin(&["add", &dir]);
    assert!(added.contains("guard"), "{added}");

    let body = setup.exec_touch();
    assert!(!setup.repo.path().join("made.txt").exists(), "the plugin's hook must block");
    assert!(body.contains("PLUGIN-BLOCKED: commands are off"), "{body}");

    setup.plugin(&["disable", "guard"]);
    let body = setup.exec_touch();
    assert!(setup.repo.path().join("made.txt").exists(), "a disabled plugin's hook must not run");
    assert!(!body.contains("PLUGIN-BLOCKED"), "{body}");
}

#[test]
fn a_plugin_command_expands_under_the_plugins_name() {
    let setup = Setup::new();
    setup.plugin(&["add", &setup.plugin.path().to_string_lossy()]);
    let server = FakeModelServer::start(Script::new().reply(Reply::text("ok"))).unwrap();
    let out = setup.run(&server, &["exec", "/guard:hello world"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &server.requests()[0].raw_body;
    assert!(body.contains("PLUGIN-HELLO to world"), "{body}");

    // A folder the manifest names adds commands; a path leaving the plugin is a warning.
    let server = FakeModelServer::start(Script::new().reply(Reply::text("ok"))).unwrap();
    let out = setup.run(&server, &["exec", "/guard:bye now"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &server.requests()[0].raw_body;
    assert!(body.contains("PLUGIN-BYE to now"), "{body}");
    assert!(stderr(&out).contains("../outside"), "{}", stderr(&out));
}

#[test]
fn plugin_list_shows_state_and_remove_forgets_it() {
    let setup = Setup::new();
    let dir = std::fs::canonicalize(setup.plugin.path()).unwrap();
    setup.plugin(&["add", &dir.to_string_lossy()]);
    let list = setup.plugin(&["list"]);
    assert!(list.contains("guard 1.0.0"), "{list}");
    assert!(list.contains(&*dir.to_string_lossy()), "{list}");
    assert!(list.contains("(enabled)"), "{list}");

    setup.plugin(&["disable", "guard"]);
    assert!(setup.plugin(&["list"]).contains("(disabled)"));

    let doctor = setup.run_with(Vec::new(), &["doctor"]);
    let doctor_out = String::from_utf8_lossy(&doctor.stdout);
    assert!(doctor_out.contains("guard"), "{doctor_out}{}", stderr(&doctor));

    setup.plugin(&["remove", "guard"]);
    assert!(setup.plugin(&["list"]).contains("no plugins"));
    let again = setup.run_with(Vec::new(), &["plugin", "remove", "guard"]);
    assert!(!again.status.success(), "removing twice must fail");
}

#[test]
fn plugin_add_rejects_a_directory_without_a_manifest() {
    let setup = Setup::new();
    let out = setup.run_with(Vec::new(), &["plugin", "add", &setup.repo.path().to_string_lossy()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("plugin.json"), "{}", stderr(&out));
}

#[test]
fn a_plugin_skill_and_agent_are_named_after_the_plugin() {
    let setup = Setup::new();
    setup.plugin(&["add", &setup.plugin.path().to_string_lossy()]);
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("s1", "skill", json!({ "name": "guard:lint" })))
            .reply(Reply::text("linted")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "lint it"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests();
    let first = &requests[0].raw_body;
    assert!(first.contains("guard:lint"), "the catalogue names the skill: {first}");
    assert!(first.contains("guard:checker"), "the agent tool offers the agent: {first}");
    assert!(requests[1].raw_body.contains("PLUGIN-LINT-BODY"), "{}", requests[1].raw_body);
}
