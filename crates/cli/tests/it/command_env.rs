//! The command environment policy end to end: with API keys and tokens in codecoder's
//! environment, the model's commands (foreground, background, `codecoder sandbox`) never see
//! them, so they reach no request body, no session log and no blob; the provider still gets its
//! key in the header. `-c shell_environment_policy.*` changes what commands get, and `doctor`
//! names what is withheld.

use std::path::{Path, PathBuf};
use std::process::Command;

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::json;

use crate::{stderr, stdout};

const OPENAI_KEY: &str = "sk-secret-openai-7f3a9c";
const GITHUB_TOKEN: &str = "ghp_secretgithub4b8d2e";
const AWS_SECRET: &str = "aws-secret-access-1c5e7a";
const SECRETS: [&str; 3] = [OPENAI_KEY, GITHUB_TOKEN, AWS_SECRET];
const MARKER: &str = "CODECODER_TEST_MARKER=visible";

/// A codecoder home, a HOME and a workspace in one temporary directory.
struct World {
    _dir: tempfile::TempDir,
    codecoder_home: PathBuf,
    home: PathBuf,
    workspace: PathBuf,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let world = Self {
            codecoder_home: root.join("cchome"),
            home: root.join("home"),
            workspace: root.join("workspace"),
            _dir: dir,
        };
        for dir in [&world.codecoder_home, &world.home, &world.workspace] {
            std::fs::create_dir_all(dir).unwrap();
        }
        world
    }

    /// `codecoder ARGS` with the three secrets and the marker in its environment, and the
    /// OpenAI provider pointed at `server` with one of the secrets as its key.
    fn command(&self, server: Option<&FakeModelServer>, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_codecoder"));
        command
            .args(args)
            .current_dir(&self.workspace)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("CODECODER_HOME", &self.codecoder_home)
            .env("OPENAI_API_KEY", OPENAI_KEY)
            .env("GITHUB_TOKEN", GITHUB_TOKEN)
            .env("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
            .env("CODECODER_TEST_MARKER", "visible")
            .stdin(std::process::Stdio::null());
        if let Some(server) = server {
            command.env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()));
        }
        command
    }
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return found };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files(&path));
        } else {
            found.push(path);
        }
    }
    found
}

fn assert_no_secret(what: &str, text: &str) {
    for secret in SECRETS {
        if let Some(at) = text.find(secret) {
            let start = text.floor_char_boundary(at.saturating_sub(200));
            let end = text.ceil_char_boundary(at + secret.len() + 200);
            panic!("{what} holds `{secret}`: …{}…", &text[start..end]);
        }
    }
}

#[test]
fn commands_foreground_and_background_never_see_the_secrets() {
    let world = World::new();
    // The background job writes its environment to a file and renames it when done; the
    // foreground command waits for that name, so the model reads the whole output.
    let background = "env > bg-env.partial && mv bg-env.partial bg-env.txt";
    let wait_and_read = "until [ -e bg-env.txt ]; do sleep 0.05; done; cat bg-env.txt";
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "run_command", json!({ "command": "env" })))
            .reply(Reply::tool_call(
                "c2",
                "run_command",
                json!({ "command": background, "background": true }),
            ))
            .reply(Reply::tool_call("c3", "run_command", json!({ "command": wait_and_read })))
            .reply(Reply::tool_call("c4", "job_output", json!({ "id": 1 })))
            .reply(Reply::tool_call(
                "c5",
                "run_command",
                json!({ "command": "printenv GITHUB_TOKEN OPENAI_API_KEY; echo status=$?" }),
            ))
            // The agent's own environment, through the read tool rather than a command.
            .reply(Reply::tool_call("c6", "read_file", json!({ "path": "/proc/self/environ" })))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = world.command(Some(&server), &["exec", "print the environment"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_no_secret("exec's stdout", &stdout(&out));
    assert_no_secret("exec's stderr", &stderr(&out));

    let requests = server.requests();
    assert_eq!(requests.len(), 7, "one request per step");
    for (index, request) in requests.iter().enumerate() {
        assert_no_secret(&format!("request {index}'s body"), &request.raw_body);
        // The provider's own key still reaches the provider, in its header.
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {OPENAI_KEY}").as_str()),
            "request {index}"
        );
    }
    // What the commands printed did reach the model: the search above can fail.
    assert!(requests[1].raw_body.contains(MARKER), "foreground env: {}", requests[1].raw_body);
    assert!(requests[3].raw_body.contains(MARKER), "background env: {}", requests[3].raw_body);
    assert!(requests[5].raw_body.contains("status=1"), "{}", requests[5].raw_body);
    assert!(requests[6].raw_body.contains("hidden path"), "{}", requests[6].raw_body);
    let background_env = std::fs::read_to_string(world.workspace.join("bg-env.txt")).unwrap();
    assert!(background_env.contains(MARKER), "{background_env}");
    assert_no_secret("the background job's output", &background_env);

    let sessions = world.codecoder_home.join("sessions");
    let logged = files(&sessions);
    assert!(logged.iter().any(|path| path.extension().is_some_and(|e| e == "jsonl")));
    let mut log_has_marker = false;
    for path in logged {
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        assert_no_secret(&path.display().to_string(), &text);
        log_has_marker |= text.contains(MARKER);
    }
    assert!(log_has_marker, "the session log holds the commands' output");
}

#[test]
fn overrides_choose_what_commands_get() {
    let world = World::new();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "run_command", json!({ "command": "env" })))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = world
        .command(
            Some(&server),
            &[
                "-c",
                "shell_environment_policy.inherit=none",
                "-c",
                "shell_environment_policy.set.ONLY_THIS=set-by-policy",
                "exec",
                "print the environment",
            ],
        )
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &server.requests()[1].raw_body;
    assert!(body.contains("ONLY_THIS=set-by-policy"), "{body}");
    assert!(!body.contains("CODECODER_TEST_MARKER"), "inherit=none passed it on: {body}");
    assert!(!body.contains("CODECODER_HOME"), "inherit=none passed it on: {body}");

    // With the default excludes off, a named secret is passed on (so the default is what
    // withholds it); the rest of the excludes still apply.
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "run_command", json!({ "command": "env" })))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let out = world
        .command(
            Some(&server),
            &[
                "-c",
                "shell_environment_policy.ignore_default_excludes=true",
                "-c",
                "shell_environment_policy.exclude=[\"openai_*\", \"aws_*\"]",
                "exec",
                "print the environment",
            ],
        )
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &server.requests()[1].raw_body;
    assert!(body.contains(GITHUB_TOKEN), "{body}");
    assert!(!body.contains(OPENAI_KEY) && !body.contains(AWS_SECRET), "{body}");
}

#[test]
fn sandbox_runs_commands_in_the_command_environment_on_every_backend() {
    let world = World::new();
    for mode in [
        &["-c", "sandbox.backend=\"bwrap\""][..],
        &["-c", "sandbox.backend=\"landlock\""],
        &["--yolo"],
    ] {
        let mut args = mode.to_vec();
        args.extend_from_slice(&["sandbox", "--", "env"]);
        let out = world.command(None, &args).output().unwrap();
        assert!(out.status.success(), "{mode:?}: {}", stderr(&out));
        let text = stdout(&out);
        assert!(text.contains(MARKER), "{mode:?}: {text}");
        assert_no_secret(&format!("{mode:?}"), &text);
        assert_eq!(
            text.contains("CODECODER_SANDBOX="),
            mode[0] == "-c",
            "{mode:?}: the sandbox's own variable: {text}"
        );
    }
    let out = world
        .command(
            None,
            &[
                "-c",
                "shell_environment_policy.include_only=[\"codecoder_test_*\"]",
                "sandbox",
                "--",
                "env",
            ],
        )
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    // bubblewrap sets PWD to the directory it was told to enter.
    let mut lines: Vec<&str> = text.lines().filter(|line| !line.starts_with("PWD=")).collect();
    lines.sort_unstable();
    // Nothing but what include_only keeps, and the sandbox's own variables.
    assert_eq!(lines, ["CODECODER_SANDBOX=bwrap", "CODECODER_SANDBOX_NETWORK_DISABLED=1", MARKER]);
}

#[test]
fn doctor_names_the_withheld_variables_without_their_values() {
    let world = World::new();
    let out = world.command(None, &["doctor"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.lines().any(|line| line
            == "withheld from commands: AWS_SECRET_ACCESS_KEY, GITHUB_TOKEN, OPENAI_API_KEY"),
        "{text}"
    );
    assert_no_secret("doctor", &text);
    let out = world
        .command(None, &["-c", "shell_environment_policy.ignore_default_excludes=true", "doctor"])
        .output()
        .unwrap();
    assert!(stdout(&out).contains("withheld from commands: (none)"), "{}", stdout(&out));
}

/// Without a sandbox, a command runs as codecoder's user; it still cannot read codecoder's own
/// environment from /proc (the process is not dumpable). Root reads every /proc file, so as
/// root codecoder runs as `nobody` here (through `setpriv`).
#[test]
fn an_unsandboxed_command_cannot_read_the_agent_environment_from_proc() {
    use std::os::unix::fs::PermissionsExt as _;
    let world = World::new();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call(
                "c1",
                "run_command",
                json!({ "command": "tr '\\0' '\\n' < /proc/$PPID/environ; echo read=$?" }),
            ))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let mut command = world.command(Some(&server), &["--yolo", "exec", "read the agent's env"]);
    let root = Command::new("id").arg("-u").output().unwrap().stdout == b"0\n";
    if root {
        for dir in files_and_dirs(world._dir.path()) {
            let mode = if dir.is_dir() { 0o777 } else { 0o666 };
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let mut as_nobody = Command::new("setpriv");
        as_nobody
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(command.get_program())
            .args(command.get_args())
            .current_dir(&world.workspace)
            .env_clear()
            .envs(command.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .stdin(std::process::Stdio::null());
        command = as_nobody;
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &server.requests()[1].raw_body;
    assert!(body.contains("read=1"), "the read did not fail: {body}");
    assert_no_secret("the command's output", body);
}

/// `dir` and everything under it.
fn files_and_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut found = vec![dir.to_owned()];
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_and_dirs(&path));
        } else {
            found.push(path);
        }
    }
    found
}
