//! Claude Code hook scripts, unchanged, driving `codecoder exec` end to end: the real binary, the
//! fake model server, and shell-script hooks in a temp HOME's `~/.claude/settings.json` or a
//! trusted project's `.claude/settings.json`.

use std::path::Path;

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::json;

use crate::exec::{Run, openai_env};
use crate::stderr;

/// Writes `script` as an executable file and returns its path.
fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

fn settings(dir: &Path, hooks: serde_json::Value) {
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    std::fs::write(dir.join(".claude/settings.json"), json!({ "hooks": hooks }).to_string())
        .unwrap();
}

/// A codecoder home, a user HOME and a git repository to work in, each a temporary directory;
/// shared by the tests of the features that read the user's and the project's files.
pub(crate) struct Setup {
    pub(crate) home: tempfile::TempDir,
    pub(crate) user_home: tempfile::TempDir,
    pub(crate) repo: tempfile::TempDir,
}

impl Setup {
    pub(crate) fn new() -> Self {
        let setup = Self {
            home: tempfile::tempdir().unwrap(),
            user_home: tempfile::tempdir().unwrap(),
            repo: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(setup.repo.path().join(".git")).unwrap();
        setup
    }

    /// `codecoder ARGS` in the repository, with `env` and the user HOME.
    pub(crate) fn run_with(
        &self,
        mut env: Vec<(String, String)>,
        args: &[&str],
    ) -> std::process::Output {
        env.push(("HOME".into(), self.user_home.path().to_string_lossy().into_owned()));
        let run = Run { home: self.home.path(), cwd: self.repo.path(), env };
        run.run(args, "")
    }

    /// `codecoder ARGS` against `server`.
    pub(crate) fn run(&self, server: &FakeModelServer, args: &[&str]) -> std::process::Output {
        self.run_with(openai_env(server), args)
    }
}

#[test]
fn a_pre_tool_use_hook_blocks_a_command_with_exit_2() {
    let setup = Setup::new();
    let guard = script(
        setup.user_home.path(),
        "no-rm.sh",
        r#"input=$(cat)
case "$input" in *'"tool_name":"Bash"'*) ;; *) exit 0;; esac
case "$input" in *'"command":"rm '*) echo "rm is not allowed here" >&2; exit 2;; esac
exit 0"#,
    );
    settings(
        setup.user_home.path(),
        json!({ "PreToolUse": [{ "matcher": "Bash", "hooks": [{ "type": "command", "command": guard }] }] }),
    );
    std::fs::write(setup.repo.path().join("keep.txt"), "precious").unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "run_command", json!({ "command": "rm keep.txt" })))
            .reply(Reply::text("could not remove it")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "remove keep.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(setup.repo.path().join("keep.txt").exists(), "the hook must have blocked rm");
    let requests = server.requests();
    assert!(requests[1].raw_body.contains("rm is not allowed here"), "{}", requests[1].raw_body);
}

#[test]
fn a_pre_tool_use_hook_rewrites_the_command() {
    let setup = Setup::new();
    let rewrite = script(
        setup.user_home.path(),
        "rewrite.sh",
        r#"cat >/dev/null
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"echo rewritten-by-hook"}}}'"#,
    );
    settings(
        setup.user_home.path(),
        json!({ "PreToolUse": [{ "matcher": "Bash", "hooks": [{ "type": "command", "command": rewrite }] }] }),
    );
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "run_command", json!({ "command": "echo original" })))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "say something"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &server.requests()[1].raw_body;
    assert!(body.contains("rewritten-by-hook") && !body.contains("original\\n"), "{body}");
}

#[test]
fn prompt_hooks_add_context_and_post_hooks_see_claude_names() {
    let setup = Setup::new();
    let log = setup.user_home.path().join("post.json");
    let context = script(
        setup.user_home.path(),
        "context.sh",
        "cat >/dev/null; echo 'the build is broken on main'",
    );
    let post = script(setup.user_home.path(), "post.sh", &format!("cat > '{}'", log.display()));
    settings(
        setup.user_home.path(),
        json!({
            "UserPromptSubmit": [{ "hooks": [{ "type": "command", "command": context }] }],
            "PostToolUse": [{ "matcher": "Read", "hooks": [{ "type": "command", "command": post }] }],
        }),
    );
    std::fs::write(setup.repo.path().join("a.txt"), "alpha\n").unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "read_file", json!({ "path": "a.txt" })))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "read a.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(server.requests()[0].raw_body.contains("the build is broken on main"));
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PostToolUse");
    assert_eq!(input["tool_name"], "Read");
    assert_eq!(input["tool_input"]["file_path"], "a.txt");
    assert!(input["session_id"].as_str().is_some_and(|id| !id.is_empty()), "{input}");
}

#[test]
fn an_untrusted_projects_hooks_do_not_run() {
    let setup = Setup::new();
    let marker = setup.user_home.path().join("ran");
    let hook = script(setup.user_home.path(), "mark.sh", &format!("touch '{}'", marker.display()));
    settings(
        setup.repo.path(),
        json!({ "UserPromptSubmit": [{ "hooks": [{ "type": "command", "command": hook }] }] }),
    );
    let server = FakeModelServer::start(Script::new().reply(Reply::text("hi"))).unwrap();
    let out = setup.run(&server, &["exec", "hello"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!marker.exists(), "a cloned repository must not run commands by being opened");
    assert!(stderr(&out).contains("codecoder trust"), "{}", stderr(&out));
    // Once trusted and the hook approved, it runs.
    let out = setup.run(&server, &["trust"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = setup.run(&server, &["hooks", "trust"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let server = FakeModelServer::start(Script::new().reply(Reply::text("hi"))).unwrap();
    let out = setup.run(&server, &["exec", "hello"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(marker.exists());
}

#[test]
fn an_if_condition_limits_a_hook_to_the_calls_it_names() {
    let setup = Setup::new();
    let ran = setup.user_home.path().join("ran.log");
    let guard = script(
        setup.user_home.path(),
        "guard.sh",
        &format!(
            "cat >> '{}'; echo >> '{}'; echo 'no rm' >&2; exit 2",
            ran.display(),
            ran.display()
        ),
    );
    settings(
        setup.user_home.path(),
        json!({ "PreToolUse": [{ "matcher": "Bash", "hooks": [
            { "type": "command", "command": guard, "if": "Bash(rm *)" }
        ] }] }),
    );
    std::fs::write(setup.repo.path().join("keep.txt"), "precious").unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "run_command", json!({ "command": "echo fine" })))
            .reply(Reply::tool_call("c2", "run_command", json!({ "command": "ls && rm keep.txt" })))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "go"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = std::fs::read_to_string(&ran).unwrap();
    assert_eq!(log.lines().count(), 1, "the hook ran only for the rm: {log}");
    assert!(log.contains("rm keep.txt"), "{log}");
    assert!(setup.repo.path().join("keep.txt").exists());
    let requests = server.requests();
    // The echo ran (its output is in the result, not only in the call).
    assert!(requests[1].raw_body.contains("fine\\n[exit code 0"), "{}", requests[1].raw_body);
    assert!(requests[2].raw_body.contains("no rm"), "{}", requests[2].raw_body);
}

/// Every argument of every built-in tool survives a hook's `updatedInput` round trip: a new
/// tool argument the hook mapping does not know would otherwise be dropped silently.
#[test]
fn the_hook_mapping_covers_every_tool_argument() {
    let config = codecoder_tools::ToolsConfig::standard("/", vec!["/".into()]);
    for tool in codecoder_tools::builtin_tools(config) {
        let schema = tool.schema();
        let Some(properties) = schema["properties"].as_object() else { continue };
        for argument in properties.keys() {
            assert!(
                codecoder_hooks::mapping::covers(tool.name(), argument),
                "`{}`'s argument `{argument}` is missing from codecoder_hooks::mapping",
                tool.name()
            );
        }
    }
}

/// True when `pid` is a live (not zombie) process.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !matches!(
            stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().as_bytes()[0]),
            Some(b'Z' | b'X')
        ),
        Err(_) => false,
    }
}

#[test]
fn ctrl_c_kills_a_running_hook_and_exec_exits_130() {
    use std::process::Stdio;
    let setup = Setup::new();
    let dir = setup.user_home.path();
    let pids = dir.join("pids");
    let finished = dir.join("finished");
    // The hook records its shell and its `sleep`, then would mark itself finished after 30 s.
    let hook = script(
        dir,
        "slow.sh",
        &format!(
            "cat >/dev/null\nsleep 30 &\necho \"$$ $!\" > '{pids}.tmp'\nmv '{pids}.tmp' '{pids}'\nwait\ntouch '{finished}'",
            pids = pids.display(),
            finished = finished.display()
        ),
    );
    settings(
        dir,
        json!({ "UserPromptSubmit": [{ "hooks": [{ "type": "command", "command": hook, "timeout": 600 }] }] }),
    );
    let server = FakeModelServer::start(Script::new().reply(Reply::text("never asked"))).unwrap();
    let mut env = openai_env(&server);
    env.push(("HOME".into(), dir.to_string_lossy().into_owned()));
    let run = Run { home: setup.home.path(), cwd: setup.repo.path(), env };
    let child = run
        .command(&["exec", "hello"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !pids.exists() {
        assert!(std::time::Instant::now() < deadline, "the hook never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let pids = std::fs::read_to_string(&pids).unwrap();
    for pid in pids.split_whitespace() {
        assert!(!alive(pid.parse().unwrap()), "hook process {pid} outlived the cancel");
    }
    assert!(!finished.exists(), "the hook ran to its end instead of being killed");
    assert!(server.requests().is_empty(), "the prompt reached the model");
}

#[test]
fn continue_false_from_a_post_tool_use_hook_stops_the_turn_and_says_why() {
    let setup = Setup::new();
    let stop = script(
        setup.user_home.path(),
        "stop.sh",
        r#"cat >/dev/null; echo '{"continue": false, "stopReason": "enough for today"}'"#,
    );
    settings(
        setup.user_home.path(),
        json!({ "PostToolUse": [{ "matcher": "Read", "hooks": [{ "type": "command", "command": stop }] }] }),
    );
    std::fs::write(setup.repo.path().join("a.txt"), "alpha\n").unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "read_file", json!({ "path": "a.txt" })))
            .reply(Reply::text("never asked")),
    )
    .unwrap();
    let out = setup.run(&server, &["exec", "read a.txt"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("a PostToolUse hook stopped the turn: enough for today"), "{err}");
    assert_eq!(server.requests().len(), 1, "the model was asked again after the stop");
}

#[test]
fn a_system_message_reaches_execs_stderr_in_text_and_json_modes() {
    let setup = Setup::new();
    let say = script(
        setup.user_home.path(),
        "say.sh",
        r#"cat >/dev/null; echo '{"systemMessage": "remember the tests"}'"#,
    );
    settings(
        setup.user_home.path(),
        json!({ "PreToolUse": [{ "matcher": "Read", "hooks": [{ "type": "command", "command": say }] }] }),
    );
    std::fs::write(setup.repo.path().join("a.txt"), "alpha\n").unwrap();
    for json_mode in [false, true] {
        let server = FakeModelServer::start(
            Script::new()
                .reply(Reply::tool_call("c1", "read_file", json!({ "path": "a.txt" })))
                .reply(Reply::text("done")),
        )
        .unwrap();
        let args: &[&str] =
            if json_mode { &["exec", "--json", "read a.txt"] } else { &["exec", "read a.txt"] };
        let out = setup.run(&server, args);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(stderr(&out).contains("PreToolUse hook: remember the tests"), "{}", stderr(&out));
        assert!(!crate::stdout(&out).contains("remember the tests"), "{}", crate::stdout(&out));
    }
}
