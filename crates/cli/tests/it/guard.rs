//! Protected paths end to end: every writer (`write_file`, `edit`, `apply_patch`) against every
//! kind of protected path (`.git/hooks`, `.git/config`, `.codecoder`, `.agents`,
//! `.claude/settings.json`, `.mcp.json`, codecoder's home), in a workspace under `/tmp` (itself a
//! writable root) and in one that is under no other root, through `exec` (approval never): each
//! write is refused with the path and the rule, and the file is left as it was. Plus the
//! question an asking policy puts (`permissions check`), and bypass.

use std::path::{Path, PathBuf};
use std::process::Output;

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::{Value, json};

use crate::exec::{Run, openai_env};
use crate::{stderr, stdout};

/// The protected paths written, relative to the workspace (`None`: codecoder's home), and the
/// name the refusal must give.
const TARGETS: [(Option<&str>, &str); 7] = [
    (Some(".git/hooks/pre-commit"), "`.git` inside the writable root"),
    (Some(".git/config"), "`.git` inside the writable root"),
    (Some(".codecoder/config.toml"), "`.codecoder` inside the writable root"),
    (Some(".agents/x"), "`.agents` inside the writable root"),
    (Some(".claude/settings.json"), "`.claude/settings.json` inside the writable root"),
    (Some(".mcp.json"), "`.mcp.json` inside the writable root"),
    (None, "is codecoder's home"),
];

/// A workspace with a git repository and the protected files (some absent, to cover creating
/// them), and codecoder's home beside it.
struct Layout {
    _dir: tempfile::TempDir,
    base: PathBuf,
    ws: PathBuf,
    cchome: PathBuf,
    /// Extra options: the layout outside `/tmp` also drops `/tmp` from the roots, so it is
    /// under no writable root wherever the target dir is.
    options: Vec<String>,
}

impl Layout {
    /// `under_tmp`: in a temp dir under `/tmp` (a writable root); otherwise under this crate's
    /// target dir, with `/tmp` not a root (and `TMPDIR` unset by the runner).
    fn new(under_tmp: bool) -> Self {
        let dir = if under_tmp {
            tempfile::Builder::new().prefix("codecoder-guard-").tempdir_in("/tmp").unwrap()
        } else {
            tempfile::Builder::new()
                .prefix("codecoder-guard-")
                .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
                .unwrap()
        };
        let base = dir.path().canonicalize().unwrap();
        let ws = base.join("ws");
        let cchome = base.join("cchome");
        for sub in [".git/hooks", ".codecoder", ".agents", ".claude", "src"] {
            std::fs::create_dir_all(ws.join(sub)).unwrap();
        }
        std::fs::create_dir_all(&cchome).unwrap();
        std::fs::create_dir_all(base.join("home")).unwrap();
        std::fs::write(ws.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
        std::fs::write(ws.join(".codecoder/config.toml"), "# original\n").unwrap();
        std::fs::write(ws.join(".agents/x"), "original\n").unwrap();
        std::fs::write(ws.join(".claude/settings.json"), "{}\n").unwrap();
        std::fs::write(cchome.join("config.toml"), "# original\n").unwrap();
        // `.git/hooks/pre-commit` and `.mcp.json` stay absent: creating them is refused too.
        let options = if under_tmp {
            assert!(ws.starts_with("/tmp"));
            Vec::new()
        } else {
            vec!["-c".to_owned(), "sandbox_workspace_write.exclude_slash_tmp=true".to_owned()]
        };
        Self { _dir: dir, base, ws, cchome, options }
    }

    fn target(&self, relative: Option<&str>) -> PathBuf {
        match relative {
            Some(relative) => self.ws.join(relative),
            None => self.cchome.join("config.toml"),
        }
    }

    /// Every target's content now (`None`: absent).
    fn snapshot(&self) -> Vec<(PathBuf, Option<String>)> {
        TARGETS
            .iter()
            .map(|(relative, _)| {
                let path = self.target(*relative);
                let content = std::fs::read_to_string(&path).ok();
                (path, content)
            })
            .collect()
    }

    fn run(&self, server: &FakeModelServer, extra: &[&str]) -> std::process::Output {
        let mut env = openai_env(server);
        env.push(("HOME".into(), self.base.join("home").to_string_lossy().into_owned()));
        let run = Run { home: &self.cchome, cwd: &self.ws, env };
        let mut args: Vec<&str> = self.options.iter().map(String::as_str).collect();
        args.extend_from_slice(extra);
        run.run(&args, "")
    }
}

/// One call of `writer` that writes `path` (absolute).
fn call(writer: &str, path: &Path) -> Value {
    let shown = path.display();
    match writer {
        "write_file" => json!({ "path": shown.to_string(), "content": "echo pwned\n" }),
        "edit" => {
            json!({ "path": shown.to_string(), "old_string": "original", "new_string": "pwned" })
        }
        _ => {
            let patch = if path.exists() {
                format!(
                    "*** Begin Patch\n*** Update File: {shown}\n@@\n-{}\n+pwned\n*** End Patch",
                    std::fs::read_to_string(path).unwrap().lines().next().unwrap_or_default()
                )
            } else {
                format!("*** Begin Patch\n*** Add File: {shown}\n+echo pwned\n*** End Patch")
            };
            json!({ "input": patch })
        }
    }
}

#[test]
fn every_writer_is_refused_every_protected_path_in_both_layouts() {
    for under_tmp in [true, false] {
        for writer in ["write_file", "edit", "apply_patch"] {
            let layout = Layout::new(under_tmp);
            let before = layout.snapshot();
            // All the writes in one response, plus an ordinary write that must go through.
            let mut reply = Reply::default();
            for (index, (relative, _)) in TARGETS.iter().enumerate() {
                let path = layout.target(*relative);
                reply = reply.and_tool_call(format!("c{index}"), writer, call(writer, &path));
            }
            let ordinary = layout.ws.join("src/ok.txt");
            reply = reply.and_tool_call(
                "ok",
                "write_file",
                json!({ "path": ordinary.display().to_string(), "content": "fine\n" }),
            );
            let server =
                FakeModelServer::start(Script::new().reply(reply).reply(Reply::text("done")))
                    .unwrap();
            let out = layout.run(&server, &["-s", "workspace-write", "exec", "plant hooks"]);
            let context = format!("{writer}, under /tmp: {under_tmp}");
            assert!(out.status.success(), "{context}: {}", stderr(&out));
            let requests = server.requests();
            assert_eq!(requests.len(), 2, "{context}");
            let body = &requests[1].raw_body;
            for (relative, rule) in TARGETS {
                let path = layout.target(relative);
                let refusal = format!("`{}` is protected: ", path.display());
                assert!(body.contains(&refusal), "{context}: no `{refusal}` in {body}");
                assert!(body.contains(rule), "{context}: no `{rule}` in {body}");
            }
            assert!(body.contains("approval mode is never"), "{context}: {body}");
            assert_eq!(layout.snapshot(), before, "{context}: a protected file changed");
            assert_eq!(std::fs::read_to_string(&ordinary).ok().as_deref(), Some("fine\n"));
        }
    }
}

#[test]
fn a_symlink_into_git_does_not_get_around_it() {
    let layout = Layout::new(true);
    std::os::unix::fs::symlink(layout.ws.join(".git/hooks"), layout.ws.join("src/hooks")).unwrap();
    let target = layout.ws.join("src/hooks/post-checkout");
    // And a patch that hides a hook behind the parser's leniency (no space after the colon),
    // next to an ordinary file.
    let patch = "*** Begin Patch\n*** Add File: src/fine.txt\n+fine\n*** Add File:.git/hooks/post-merge\n\
                 +echo pwned\n*** End Patch";
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "write_file", call("write_file", &target)).and_tool_call(
                "c2",
                "apply_patch",
                json!({ "input": patch }),
            ))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = layout.run(&server, &["-s", "workspace-write", "exec", "plant a hook"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &server.requests()[1].raw_body;
    let real = layout.ws.join(".git/hooks/post-checkout");
    assert!(body.contains(&format!("`{}` is protected: ", real.display())), "{body}");
    assert!(!real.exists());
    let merge = layout.ws.join(".git/hooks/post-merge");
    assert!(body.contains(&format!("`{}` is protected: ", merge.display())), "{body}");
    assert!(!merge.exists());
    assert!(!layout.ws.join("src/fine.txt").exists(), "the patch is refused as a whole");
}

#[test]
fn an_asking_policy_asks_and_says_why_and_bypass_writes() {
    let layout = Layout::new(true);
    let check = |extra: &[&str], path: &str| {
        let mut env = vec![("HOME".to_owned(), layout.base.join("home").display().to_string())];
        env.push(("CODECODER_HOME".to_owned(), layout.cchome.display().to_string()));
        let run = Run { home: &layout.cchome, cwd: &layout.ws, env };
        let mut args = vec!["-s", "workspace-write"];
        args.extend_from_slice(extra);
        let input = json!({ "path": path, "content": "x" }).to_string();
        args.extend_from_slice(&["permissions", "check", "write_file", &input]);
        let out = run.command(&args).output().unwrap();
        (out.status.code(), stdout(&out))
    };
    let hook = layout.ws.join(".git/hooks/pre-commit");
    let ws = layout.ws.display();
    for approval in ["on-request", "untrusted"] {
        let (code, text) = check(&["-a", approval], ".git/hooks/pre-commit");
        assert_eq!(code, Some(3), "{approval}: {text}");
        assert!(
            text.starts_with(&format!(
                "ask — `{}` is protected: `.git` inside the writable root {ws} (files there run \
                 code later); a protected write is always asked ({approval})",
                hook.display()
            )),
            "{text}"
        );
        let (code, text) = check(&["-a", approval], ".mcp.json");
        assert_eq!(code, Some(3), "{approval}: {text}");
        assert!(text.contains("the MCP servers it names are started later"), "{text}");
    }
    // An ordinary file under on-request is not asked.
    let (code, text) = check(&["-a", "on-request"], "src/lib.rs");
    assert_eq!(code, Some(0), "{text}");
    // Never: denied, with the same reason.
    let (code, text) = check(&["-a", "never"], ".git/hooks/pre-commit");
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("is protected: `.git` inside the writable root"), "{text}");

    // Exec under an asking policy has nobody to ask: the write is declined, and the model hears
    // why it would have been asked.
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "write_file", call("write_file", &hook)))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = layout.run(&server, &["-s", "workspace-write", "-a", "on-request", "exec", "hook"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &server.requests()[1].raw_body;
    assert!(body.contains("without a person to approve this"), "{body}");
    assert!(body.contains(&format!("`{}` is protected: ", hook.display())), "{body}");
    assert!(!hook.exists());

    // Bypass writes as before.
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "write_file", call("write_file", &hook)))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = layout.run(&server, &["--dangerously-bypass-approvals-and-sandbox", "exec", "hook"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&hook).ok().as_deref(), Some("echo pwned\n"));
}

#[test]
fn doctor_lists_the_protected_paths_from_the_guard() {
    let layout = Layout::new(true);
    std::fs::write(layout.ws.join(".git/config"), "[core]\n\thooksPath = .husky\n").unwrap();
    std::fs::create_dir_all(layout.ws.join(".husky")).unwrap();
    let run = Run {
        home: &layout.cchome,
        cwd: &layout.ws,
        env: vec![("HOME".to_owned(), layout.base.join("home").display().to_string())],
    };
    let out = run.command(&["-s", "workspace-write", "doctor"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let ws = layout.ws.display();
    for line in [
        format!("  {ws}/.git — `.git` inside the writable root {ws} (files there run code later)"),
        format!("  {ws}/.husky — `{ws}/.husky` is the hooks directory `core.hooksPath` names"),
        format!("  {ws}/.claude/settings.json — `.claude/settings.json` inside the writable root"),
        format!(
            "  {} — `{}` is codecoder's home",
            layout.cchome.display(),
            layout.cchome.display()
        ),
        "  below every writable root, existing or not: .git, .codecoder, .agents, .mcp.json, \
         .claude/settings*.json"
            .to_owned(),
    ] {
        assert!(text.contains(&line), "no `{line}` in:\n{text}");
    }
}

/// `codecoder sandbox` in a workspace without `.git`, `.mcp.json` or `.claude`, on `backend`,
/// running `script`.
fn sandbox_in_fresh_workspace(backend: &str, script: &str) -> (tempfile::TempDir, PathBuf, Output) {
    let dir = tempfile::Builder::new().prefix("codecoder-absent-").tempdir_in("/tmp").unwrap();
    let ws = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    let cchome = dir.path().join("cchome");
    std::fs::create_dir_all(&cchome).unwrap();
    let run = Run {
        home: &cchome,
        cwd: &ws,
        env: vec![("HOME".to_owned(), dir.path().join("home").display().to_string())],
    };
    let backend = format!("sandbox.backend=\"{backend}\"");
    let out = run
        .command(&["-c", &backend, "-s", "workspace-write", "sandbox", "--", "sh", "-c", script])
        .output()
        .unwrap();
    (dir, ws, out)
}

#[test]
fn a_sandboxed_command_cannot_leave_a_protected_name_it_created() {
    let script = "mkdir .git && printf '[core]\\n\\tfsmonitor = evil\\n' > .git/config \
                  && echo '{}' > .mcp.json && mkdir .codecoder .claude \
                  && echo '{}' > .claude/settings.local.json && echo fine > src/ok.txt \
                  && cat .git/config";
    for backend in ["bwrap", "landlock"] {
        let (_dir, ws, out) = sandbox_in_fresh_workspace(backend, script);
        let err = stderr(&out);
        assert!(out.status.success(), "{backend}: {err}");
        // The command saw what it made while it ran.
        assert!(stdout(&out).contains("fsmonitor = evil"), "{backend}: {}", stdout(&out));
        for name in [".git", ".mcp.json", ".codecoder", ".claude/settings.local.json"] {
            let path = ws.join(name);
            assert!(std::fs::symlink_metadata(&path).is_err(), "{backend}: {name} is left");
            let line = format!("removed `{}`, which the command created", path.display());
            assert!(err.contains(&line), "{backend}: no `{line}` in {err}");
        }
        assert!(err.contains("(files there run code later)"), "{backend}: {err}");
        assert_eq!(std::fs::read_to_string(ws.join("src/ok.txt")).unwrap(), "fine\n");
        // And a command that creates none leaves the workspace as it was (no mount point).
        let (_dir, ws, out) = sandbox_in_fresh_workspace(backend, "true");
        assert!(out.status.success(), "{backend}: {}", stderr(&out));
        let names: Vec<_> =
            std::fs::read_dir(&ws).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("src")], "{backend}");
    }
}

#[test]
fn a_hooks_path_from_the_global_git_config_is_protected() {
    let layout = Layout::new(true);
    let home = layout.base.join("home");
    std::fs::create_dir_all(home.join(".config/git")).unwrap();
    std::fs::create_dir_all(home.join(".githooks")).unwrap();
    std::fs::create_dir_all(layout.ws.join("tools/hooks")).unwrap();
    std::fs::write(home.join(".gitconfig"), "[core]\n\thooksPath = ~/.githooks\n").unwrap();
    std::fs::write(home.join(".config/git/config"), "[core]\n\thooksPath = tools/hooks\n").unwrap();
    let run = Run {
        home: &layout.cchome,
        cwd: &layout.ws,
        env: vec![("HOME".to_owned(), home.display().to_string())],
    };
    let check = |path: &Path| {
        let input = json!({ "path": path, "content": "x" }).to_string();
        let args = ["-s", "workspace-write", "-a", "never", "permissions", "check", "write_file"];
        let out = run.command(&args).arg(&input).output().unwrap();
        (out.status.code(), stdout(&out))
    };
    for (hook, config) in [
        (home.join(".githooks/pre-commit"), home.join(".gitconfig")),
        (layout.ws.join("tools/hooks/pre-commit"), home.join(".config/git/config")),
    ] {
        let (code, text) = check(&hook);
        assert_eq!(code, Some(1), "{text}");
        let why = format!("is the hooks directory `core.hooksPath` names in {}", config.display());
        assert!(text.contains(&why), "no `{why}` in {text}");
    }
    let (code, text) = check(&layout.ws.join("tools/other.txt"));
    assert_eq!(code, Some(0), "{text}");
    // A confined command cannot plant a hook there either.
    let out = run
        .command(&[
            "-s",
            "workspace-write",
            "sandbox",
            "--",
            "sh",
            "-c",
            "echo pwned > tools/hooks/pre-commit; echo pwned > ~/.githooks/pre-commit; echo done",
        ])
        .output()
        .unwrap();
    assert!(stdout(&out).contains("done"), "{}", stderr(&out));
    assert!(!layout.ws.join("tools/hooks/pre-commit").exists());
    assert!(!home.join(".githooks/pre-commit").exists());
}

#[test]
fn permissions_check_classifies_mcp_tool_names_by_the_rules() {
    let layout = Layout::new(true);
    let run = Run {
        home: &layout.cchome,
        cwd: &layout.ws,
        env: vec![("HOME".to_owned(), layout.base.join("home").display().to_string())],
    };
    let check = |rules: &[&str], tool: &str| {
        let mut args = vec!["-s", "workspace-write", "-a", "on-request"];
        for rule in rules {
            args.extend_from_slice(&["-c", rule]);
        }
        args.extend_from_slice(&["permissions", "check", tool, "{\"q\":1}"]);
        let out = run.command(&args).output().unwrap();
        (out.status.code(), stdout(&out), stderr(&out))
    };
    // No rule: asked under on-request, as a session asks.
    let (code, text, err) = check(&[], "mcp__docs__search");
    assert_eq!(code, Some(3), "{text}{err}");
    assert!(text.contains("is an MCP server's tool and runs outside the sandbox"), "{text}");
    assert!(text.contains("keys: mcp__docs__search"), "{text}");
    let cases: [(&str, &str, Option<i32>); 5] = [
        ("permissions.allow=[\"mcp__docs__search\"]", "mcp__docs__search", Some(0)),
        ("permissions.allow=[\"mcp__docs\"]", "mcp__docs__search", Some(0)),
        ("permissions.allow=[\"mcp__docs__*\"]", "mcp__docs__fetch", Some(0)),
        ("permissions.deny=[\"mcp__docs\"]", "mcp__docs__search", Some(1)),
        ("permissions.allow=[\"mcp__docs\"]", "mcp__other__search", Some(3)),
    ];
    for (rule, tool, expected) in cases {
        let (code, text, err) = check(&[rule], tool);
        assert_eq!(code, expected, "{rule} {tool}: {text}{err}");
        if expected != Some(3) {
            assert!(text.contains("mcp__docs"), "{rule} {tool}: {text}");
        }
    }
    // Deny wins over allow.
    let (code, text, _) = check(
        &["permissions.allow=[\"mcp__docs\"]", "permissions.deny=[\"mcp__docs__search\"]"],
        "mcp__docs__search",
    );
    assert_eq!(code, Some(1), "{text}");
    // Not a tool name at all is still a usage error.
    let (code, _, err) = check(&[], "mcp__nothing");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("mcp__SERVER__TOOL"), "{err}");
}
