//! The review of a project's hooks end to end: a trusted project's new or changed hooks wait for
//! `codecoder hooks trust` (exec skips them with a warning naming each), `hooks list` shows every
//! hook's state, `--trust-project-hooks` runs them unreviewed, user hooks need no review, and
//! the set of hooks is fixed when the session starts.

use std::path::Path;

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::json;

use crate::hooks::Setup;
use crate::{stderr, stdout};

/// An executable script appending its name to `log` on each run.
fn marker(dir: &Path, name: &str, log: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!("#!/bin/sh\ncat >/dev/null\necho {name} >> '{}'\n", log.display()),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

/// `dir/.claude/settings.json` with one UserPromptSubmit hook running `command`.
fn prompt_hook(dir: &Path, command: &str) {
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    let hooks = json!({ "hooks": { "UserPromptSubmit": [{ "hooks": [
        { "type": "command", "command": command }
    ] }] } });
    std::fs::write(dir.join(".claude/settings.json"), hooks.to_string()).unwrap();
}

/// The hooks that ran, sorted: the hooks of one event run in parallel.
fn ran(log: &Path) -> Vec<String> {
    let mut ran: Vec<String> =
        std::fs::read_to_string(log).unwrap_or_default().lines().map(str::to_owned).collect();
    ran.sort();
    ran
}

fn exec(setup: &Setup, extra: &[&str]) -> std::process::Output {
    let server = FakeModelServer::start(Script::new().reply(Reply::text("hi"))).unwrap();
    let mut args = extra.to_vec();
    args.extend(["exec", "hello"]);
    let out = setup.run(&server, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

#[test]
fn a_project_hook_runs_only_once_reviewed_and_again_only_after_a_change_is_reviewed() {
    let setup = Setup::new();
    let log = setup.user_home.path().join("ran.log");
    let project = marker(setup.user_home.path(), "project-hook", &log);
    let user = marker(setup.user_home.path(), "user-hook", &log);
    prompt_hook(setup.repo.path(), &project);
    prompt_hook(setup.user_home.path(), &user);
    let trusted = setup.run_with(Vec::new(), &["trust"]);
    assert!(trusted.status.success(), "{}", stderr(&trusted));

    // Trusted project, hook not reviewed: skipped with a warning naming it; the user's runs.
    let out = exec(&setup, &[]);
    assert_eq!(ran(&log), ["user-hook"]);
    let err = stderr(&out);
    assert!(err.contains("skipping 1 project hook not reviewed"), "{err}");
    assert!(err.contains(&project) && err.contains("codecoder hooks trust"), "{err}");

    // `hooks list` names each hook's state and source.
    let listed = setup.run_with(Vec::new(), &["hooks", "list"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let text = stdout(&listed);
    let pending = text.lines().find(|line| line.contains(&project)).unwrap_or_default();
    assert!(pending.starts_with("pending ") && pending.contains("UserPromptSubmit"), "{text}");
    assert!(pending.contains(".claude/settings.json"), "{text}");
    let user_line = text.lines().find(|line| line.contains(&user)).unwrap_or_default();
    assert!(user_line.starts_with("user "), "{text}");
    assert!(text.contains("1 project hook waits for review"), "{text}");

    // `--trust-project-hooks` runs it once without recording anything.
    exec(&setup, &["--trust-project-hooks"]);
    assert_eq!(ran(&log), ["project-hook", "user-hook", "user-hook"]);
    std::fs::remove_file(&log).unwrap();

    // `hooks trust` approves it (and says which); then it runs.
    let approved = setup.run_with(Vec::new(), &["hooks", "trust"]);
    assert!(approved.status.success(), "{}", stderr(&approved));
    assert!(stdout(&approved).contains(&project), "{}", stdout(&approved));
    let out = exec(&setup, &[]);
    assert_eq!(ran(&log), ["project-hook", "user-hook"]);
    assert!(!stderr(&out).contains("not reviewed"), "{}", stderr(&out));
    let listed = stdout(&setup.run_with(Vec::new(), &["hooks", "list"]));
    assert!(listed.lines().any(|l| l.starts_with("approved") && l.contains(&project)), "{listed}");
    std::fs::remove_file(&log).unwrap();

    // Reformatting the file keeps the approval; a changed hook waits for review again.
    let settings = setup.repo.path().join(".claude/settings.json");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    std::fs::write(&settings, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    exec(&setup, &[]);
    assert_eq!(ran(&log), ["project-hook", "user-hook"]);
    std::fs::remove_file(&log).unwrap();
    let changed = format!("{project} --changed");
    prompt_hook(setup.repo.path(), &changed);
    let out = exec(&setup, &[]);
    assert_eq!(ran(&log), ["user-hook"], "a changed hook must not run before its review");
    assert!(stderr(&out).contains(&changed), "{}", stderr(&out));
    // Naming an unknown digest is refused; naming the pending one's prefix approves it.
    let wrong = setup.run_with(Vec::new(), &["hooks", "trust", "zzzz"]);
    assert!(!wrong.status.success());
    let listed = stdout(&setup.run_with(Vec::new(), &["hooks", "list"]));
    let line = listed.lines().find(|l| l.starts_with("pending")).unwrap_or_default();
    let digest = line.split_whitespace().nth(1).unwrap_or_default();
    assert_eq!(digest.len(), 12, "{listed}");
    let approved = setup.run_with(Vec::new(), &["hooks", "trust", &digest[..8]]);
    assert!(approved.status.success(), "{}", stderr(&approved));
    std::fs::remove_file(&log).unwrap();
    exec(&setup, &[]);
    assert_eq!(ran(&log), ["project-hook", "user-hook"]);
}

#[test]
fn the_hooks_are_fixed_when_the_session_starts() {
    let setup = Setup::new();
    let log = setup.user_home.path().join("ran.log");
    let hook = marker(setup.user_home.path(), "late-hook", &log);
    let settings = setup.user_home.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, "{}").unwrap();
    let late = json!({ "hooks": { "PreToolUse": [{ "matcher": "Bash", "hooks": [
        { "type": "command", "command": hook }
    ] }] } });
    let write = format!("printf '%s' '{}' > '{}'", late, settings.display());
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "run_command", json!({ "command": write })))
            .reply(Reply::tool_call("c2", "run_command", json!({ "command": "echo second" })))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = setup.run(&server, &["-s", "danger-full-access", "exec", "go"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::read_to_string(&settings).unwrap().contains("late-hook"), "not written");
    assert!(ran(&log).is_empty(), "a hook added during the session ran: {:?}", ran(&log));
    // The next session has it.
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "run_command", json!({ "command": "echo third" })))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = setup.run(&server, &["-s", "danger-full-access", "exec", "go"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(ran(&log), ["late-hook"]);
}

/// In the UI: the session start names the unreviewed project hook, `/hooks` lists it as pending
/// beside the user's, `/hooks trust` approves it, and the next session runs it.
#[test]
fn the_ui_lists_and_approves_a_projects_hooks() {
    let setup = Setup::new();
    let log = setup.user_home.path().join("ran.log");
    let project = marker(setup.user_home.path(), "project-hook", &log);
    let user = marker(setup.user_home.path(), "user-hook", &log);
    prompt_hook(setup.repo.path(), &project);
    prompt_hook(setup.user_home.path(), &user);
    assert!(setup.run_with(Vec::new(), &["trust"]).status.success());
    let server = FakeModelServer::start(Script::new().when_exhausted(Reply::text("hi"))).unwrap();
    let mut env = crate::exec::openai_env(&server);
    env.push(("HOME".into(), setup.user_home.path().to_string_lossy().into_owned()));
    let mut pty = crate::tui::Pty::spawn(setup.home.path(), setup.repo.path(), &env, &[]);
    pty.wait_for("not reviewed yet", "the warning about the unreviewed project hook");
    pty.type_text("/hooks");
    pty.send("\r");
    pty.wait_for("1 project hook(s) wait for review", "the /hooks listing");
    let text = pty.text();
    assert!(text.contains("pending") && text.contains("user "), "{text}");
    pty.type_text("/hooks trust");
    pty.send("\r");
    pty.wait_for("approved 1 project hook(s)", "the approval");
    pty.type_text("/quit");
    pty.send("\r");
    assert!(pty.wait_exit().success());
    let listed = stdout(&setup.run_with(Vec::new(), &["hooks", "list"]));
    assert!(listed.lines().any(|l| l.starts_with("approved") && l.contains(&project)), "{listed}");
    exec(&setup, &[]);
    assert_eq!(ran(&log), ["project-hook", "user-hook"]);
}
