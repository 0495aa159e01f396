//! `codecoder mcp add` and `mcp add-json` in Claude Code's and codex's forms, end to end: what
//! each form writes to config.toml (read back with the `toml` crate and compared as values),
//! what `mcp list` and `mcp get` show (never env or header values), the refused forms (an error
//! naming the problem, config.toml untouched), and sessions that use servers added this way.

use std::path::Path;

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::json;

use crate::exec::{Run, openai_env};
use crate::mcp::{
    bin, from_tools, pick, servers_dir, start_sse_server, tool_names, wait_for_servers,
};
use crate::{stderr, stdout};

fn run_ok(home: &Path, args: &[&str]) -> String {
    let out = crate::codecoder(home, args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

fn config_value(home: &Path) -> toml::Value {
    let text = std::fs::read_to_string(home.join("config.toml")).unwrap();
    toml::from_str(&text).unwrap_or_else(|err| panic!("{err}\n{text}"))
}

#[test]
fn mcp_add_takes_claude_codes_and_codexs_forms_and_writes_codexs_tables() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    std::fs::write(&config, "# my settings\nmodel = \"gpt-5\"\n").unwrap();
    let h = home.path();

    // Claude Code's forms.
    run_ok(
        h,
        &[
            "mcp",
            "add",
            "--transport",
            "http",
            "api",
            "https://example.test/mcp",
            "-H",
            "X-Api-Key: k-123",
            "--header",
            "X-Team:  blue ",
        ],
    );
    run_ok(
        h,
        &[
            "mcp",
            "add",
            "-t",
            "sse",
            "old",
            "http://127.0.0.1:9/sse",
            "--header",
            "Authorization: Bearer ${OLD_TOKEN}",
        ],
    );
    run_ok(
        h,
        &[
            "mcp",
            "add",
            "fs",
            "-e",
            "ROOT_TOKEN=abc",
            "--env",
            "MODE=ro",
            "--",
            "npx",
            "-y",
            "srv",
            "/tmp",
        ],
    );
    run_ok(h, &["mcp", "add", "--transport", "stdio", "plain", "--", "plain-server"]);
    // Codex's.
    run_ok(
        h,
        &[
            "mcp",
            "add",
            "codex-api",
            "--url",
            "https://example.test/codex",
            "--bearer-token-env-var",
            "API_TOKEN",
        ],
    );
    run_ok(
        h,
        &["mcp", "add", "codex-sse", "--transport", "sse", "--url", "https://example.test/sse"],
    );
    // Claude Code's JSON.
    run_ok(
        h,
        &[
            "mcp",
            "add-json",
            "js",
            r#"{"type":"stdio","command":"node","args":["server.js","--port","0"],"env":{"K":"v-secret"}}"#,
        ],
    );
    run_ok(
        h,
        &[
            "mcp",
            "add-json",
            "jh",
            r#"{"type":"http","url":"https://example.test/h","headers":{"X-Key":"h-secret"}}"#,
        ],
    );
    run_ok(h, &["mcp", "add-json", "jsse", r#"{"type":"sse","url":"https://example.test/s"}"#]);
    run_ok(h, &["mcp", "add-json", "untyped", r#"{"url":"https://example.test/u"}"#]);
    run_ok(
        h,
        &[
            "mcp",
            "add-json",
            "bearer",
            r#"{"type":"http","url":"https://example.test/b","headers":{"authorization":"bearer ${B_TOKEN}"}}"#,
        ],
    );

    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.starts_with("# my settings\nmodel = \"gpt-5\"\n"), "{text}");
    let written = config_value(h);
    assert_eq!(written["model"].as_str(), Some("gpt-5"));
    let expected: toml::Value = toml::from_str(
        r#"
[api]
url = "https://example.test/mcp"
http_headers = { "X-Api-Key" = "k-123", "X-Team" = "blue" }

[old]
url = "http://127.0.0.1:9/sse"
transport = "sse"
bearer_token_env_var = "OLD_TOKEN"

[fs]
command = "npx"
args = ["-y", "srv", "/tmp"]
env = { ROOT_TOKEN = "abc", MODE = "ro" }

[plain]
command = "plain-server"

[codex-api]
url = "https://example.test/codex"
bearer_token_env_var = "API_TOKEN"

[codex-sse]
url = "https://example.test/sse"
transport = "sse"

[js]
command = "node"
args = ["server.js", "--port", "0"]
env = { K = "v-secret" }

[jh]
url = "https://example.test/h"
http_headers = { "X-Key" = "h-secret" }

[jsse]
url = "https://example.test/s"
transport = "sse"

[untyped]
url = "https://example.test/u"

[bearer]
url = "https://example.test/b"
bearer_token_env_var = "B_TOKEN"
"#,
    )
    .unwrap();
    assert_eq!(written["mcp_servers"], expected, "{text}");

    // The transport and the header names show; no env or header value does.
    let secrets = ["k-123", "blue", "abc", "v-secret", "h-secret"];
    let listed = run_ok(h, &["mcp", "list"]);
    for line in [
        "api  http: https://example.test/mcp (headers: X-Api-Key, X-Team)",
        "old  sse: http://127.0.0.1:9/sse",
        "fs  stdio: npx -y srv /tmp",
        "codex-sse  sse: https://example.test/sse",
        "jh  http: https://example.test/h (headers: X-Key)",
    ] {
        assert!(listed.lines().any(|l| l == line), "{line}\n{listed}");
    }
    let listed_json = run_ok(h, &["mcp", "list", "--json"]);
    let shown = [
        listed_json.clone(),
        run_ok(h, &["mcp", "get", "api"]),
        run_ok(h, &["mcp", "get", "fs"]),
        run_ok(h, &["mcp", "get", "api", "--json"]),
        run_ok(h, &["mcp", "get", "js", "--json"]),
    ];
    for text in &shown {
        for secret in secrets {
            assert!(!text.contains(secret), "{secret} shown:\n{text}");
        }
    }
    assert!(shown[1].contains("  http: https://example.test/mcp\n"), "{}", shown[1]);
    assert!(shown[1].contains("  headers: X-Api-Key=*****, X-Team=*****\n"), "{}", shown[1]);
    assert!(shown[2].contains("  env: MODE=*****, ROOT_TOKEN=*****\n"), "{}", shown[2]);
    let api: serde_json::Value = serde_json::from_str(&shown[3]).unwrap();
    assert_eq!(api["http_headers"], json!({"X-Api-Key": "*****", "X-Team": "*****"}));
    let listed: serde_json::Value = serde_json::from_str(&listed_json).unwrap();
    assert_eq!(listed["old"]["transport"], "sse");
    assert_eq!(listed["js"]["env"], json!({"K": "*****"}));
    let old = run_ok(h, &["mcp", "get", "old"]);
    assert!(old.contains("  sse: http://127.0.0.1:9/sse\n"), "{old}");
    assert!(old.contains("  bearer token from: $OLD_TOKEN\n"), "{old}");
}

#[test]
fn mcp_add_help_shows_both_forms_with_examples() {
    let home = tempfile::tempdir().unwrap();
    let help = run_ok(home.path(), &["mcp", "add", "--help"]);
    for part in [
        "-t, --transport <TRANSPORT>",
        "-e, --env <KEY=VALUE>",
        "-H, --header <NAME: VALUE>",
        "codecoder mcp add --transport http api https://example.com/mcp",
        "codecoder mcp add api --url https://example.com/mcp --bearer-token-env-var API_TOKEN",
        "codecoder mcp add --transport sse old https://example.com/sse",
        "codecoder mcp add github -e GITHUB_TOKEN=",
    ] {
        assert!(help.contains(part), "{part}\n{help}");
    }
    let help = run_ok(home.path(), &["mcp", "add-json", "--help"]);
    for example in [
        r#"codecoder mcp add-json fs '{"type":"stdio","command":"npx","args":["-y","mcp-fs","/tmp"]}'"#,
        r#"codecoder mcp add-json api '{"type":"http","url":"https://example.com/mcp"}'"#,
    ] {
        assert!(help.contains(example), "{example}\n{help}");
    }
    let help = run_ok(home.path(), &["mcp", "--help"]);
    assert!(help.contains("add-json"), "{help}");
}

#[test]
fn refused_servers_name_the_problem_and_leave_config_toml_unchanged() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    let before = "# kept\n[mcp_servers.x]\ncommand = \"already-here\"\n";
    std::fs::write(&config, before).unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["add", "--transport", "sse", "x", "--", "cmd"],
            "an sse server is reached at a URL, not by a command (`cmd`)",
        ),
        (
            &["add", "--transport", "stdio", "x", "https://e.test/mcp"],
            "a stdio server is a command, not a URL (`https://e.test/mcp`)",
        ),
        (
            &["add", "x", "https://a.test/mcp", "--url", "https://b.test/mcp"],
            "the URL is given twice",
        ),
        (&["add", "x", "--url", "ftp://e.test/mcp"], "`ftp://e.test/mcp` is not an http(s) URL"),
        (
            &["add", "x", "npx"],
            "`npx` is not an http(s) URL (like https://example.com/mcp); a stdio server's command goes after `--`",
        ),
        (&["add", "--transport", "http", "x", "https://"], "`https://` is not an http(s) URL"),
        (&["add", "x", "https://e.test", "--", "cmd"], "give either a command or a URL, not both"),
        (&["add", "x"], "give either a command (`codecoder mcp add NAME -- CMD ARGS…`) or a URL"),
        (&["add", "--transport", "sse", "x"], "an sse server needs a URL"),
        (
            &["add", "x", "--url", "https://e.test", "--header", "NoColon"],
            "--header `NoColon` is not `Name: value`",
        ),
        (
            &["add", "x", "--url", "https://e.test", "-H", "Bad Name: v"],
            "`Bad Name` is not a header name",
        ),
        (
            &["add", "x", "--url", "https://e.test", "-H", "X-A: 1", "-H", "x-a: 2"],
            "the header `x-a` is given twice",
        ),
        (
            &["add", "x", "-H", "X-A: 1", "--", "cmd"],
            "headers are for http and sse servers; `X-A` cannot go to a stdio server",
        ),
        (
            &["add", "x", "--bearer-token-env-var", "T", "--", "cmd"],
            "--bearer-token-env-var `T` cannot go to a stdio server",
        ),
        (&["add", "x", "--env", "NOEQ", "--", "cmd"], "--env wants KEY=VALUE, got `NOEQ`"),
        (
            &["add", "x", "--url", "https://e.test", "-H", ": v"],
            "--header `: v` is not `Name: value`",
        ),
        (&["add", "x", "--", ""], "the command is empty"),
        (
            &["add-json", "x", r#"{"url":"https://e.test","headers":{"":"v"}}"#],
            "a header has an empty name",
        ),
        (
            &["add", "x", "-e", "K=v", "--url", "https://e.test"],
            "variables are for stdio servers (a command); `K` cannot go to an http server",
        ),
        (
            &[
                "add",
                "x",
                "--url",
                "https://e.test",
                "-H",
                "Authorization: Bearer ${A}",
                "--bearer-token-env-var",
                "B",
            ],
            "the bearer token is given twice",
        ),
        (
            &["add", "x", "--url", "https://e.test", "-H", "X-K: ${A}"],
            "the header `X-K` uses `${…}`, which config.toml does not expand",
        ),
        (&["add", "bad name", "--", "cmd"], "`bad name` is not a server name"),
        (
            &["add-json", "x", "{\"type\":\"stdio\",\n  \"command\": }"],
            "not valid JSON at line 2, column 14",
        ),
        (
            &["add-json", "x", r#"{"type":"websocket","url":"wss://e.test"}"#],
            r#"unknown type `websocket`: the known types are "stdio", "http" and "sse""#,
        ),
        (
            &["add-json", "x", r#"{"type":"sse","command":"c"}"#],
            "an sse server is reached at a URL, not by a command (`c`)",
        ),
        (
            &["add-json", "x", r#"{"type":"stdio","url":"https://e.test"}"#],
            "a stdio server is a command, not a URL",
        ),
        (
            &["add-json", "x", r#"{"command":"c","env":{"T":"${TOKEN}"}}"#],
            "`env.T` uses `${…}`, which config.toml does not expand",
        ),
        (
            &["add-json", "x", r#"{"command":"c","cwd":"/"}"#],
            "unknown key `cwd` (the known keys are type, command, args, env, url and headers)",
        ),
        (
            &["add-json", "x", r#"{"command":"c","args":"-y"}"#],
            "`args` must be an array of strings",
        ),
        (
            &["add-json", "x", r#"{"type":"http","url":"https://e.test","headers":{"X-A":1}}"#],
            "`headers.X-A` must be a string, not 1",
        ),
        (&["add-json", "x", "[1]"], "expected an object like"),
        (&["add-json", "x", "{}"], "it needs a `command` (stdio) or a `url` (http, sse)"),
        (&["add-json", "bad name", r#"{"command":"c"}"#], "`bad name` is not a server name"),
    ];
    for (args, message) in cases {
        let args: Vec<&str> = ["mcp"].iter().chain(args.iter()).copied().collect();
        let out = crate::codecoder(home.path(), &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(message), "{args:?}: wanted `{message}` in:\n{err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(
            std::fs::read_to_string(&config).unwrap(),
            before,
            "{args:?} changed config.toml"
        );
    }
    // Clap names the values it knows.
    let out =
        crate::codecoder(home.path(), &["mcp", "add", "--transport", "ws", "x", "https://e.test"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("[possible values: stdio, http, sse]"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before);
}

#[test]
fn servers_added_with_transport_sse_and_with_add_json_serve_a_session() {
    let Some(dir) = servers_dir() else { return };
    let (_child, url) = start_sse_server(&dir);
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let h = home.path();

    run_ok(h, &["mcp", "add", "--transport", "sse", "old", &url, "--header", "X-Test: 7"]);
    let everything = bin(&dir, "mcp-server-everything");
    let names = tool_names(&everything, &["stdio"], repo.path());
    let get_env = format!("mcp__js__{}", pick(&names, &["get-env", "printEnv"]));
    let server_json = json!({
        "type": "stdio",
        "command": everything,
        "args": ["stdio"],
        "env": {"ADDED_BY": "add-json-4711"},
    });
    run_ok(h, &["mcp", "add-json", "js", &server_json.to_string()]);

    let echo = "mcp__old__echo";
    let server = FakeModelServer::start(
        Script::new()
            .until_tools([echo, get_env.as_str()], wait_for_servers())
            .reply(Reply::tool_call("c1", echo, json!({ "message": "added with --transport sse" })))
            .reply(Reply::tool_call("c2", &get_env, json!({})))
            .reply(Reply::text("done")),
    )
    .unwrap();
    let run = Run { home: h, cwd: repo.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "use both servers"], "");
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let requests = from_tools(server.requests(), &[echo.to_owned(), get_env.clone()]);
    assert_eq!(requests.len(), 3, "{err}");
    // The header given with --header reached the server over the older transport.
    assert!(
        requests[1].raw_body.contains("echo: added with --transport sse (x-test 7)"),
        "{}",
        requests[1].raw_body
    );
    // The variable given in the JSON reached the stdio server.
    assert!(requests[2].raw_body.contains("add-json-4711"), "{}", requests[2].raw_body);
}

#[test]
fn concurrent_adds_on_one_home_keep_every_server() {
    // Eight `mcp add` processes at once on one home, as scripts setting up a machine do: each
    // edit waits for the one before, and no server is lost.
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "model = \"gpt-5\"\n").unwrap();
    let children: Vec<std::process::Child> = (0..8)
        .map(|n| {
            std::process::Command::new(env!("CARGO_BIN_EXE_codecoder"))
                .args(["mcp", "add", &format!("server-{n}"), "--", "echo", &n.to_string()])
                .env_clear()
                .env("CODECODER_HOME", home.path())
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let config = config_value(home.path());
    assert_eq!(config["model"].as_str(), Some("gpt-5"));
    let servers = config["mcp_servers"].as_table().unwrap();
    let names: Vec<&String> = servers.keys().collect();
    assert_eq!(names.len(), 8, "{names:?}");
    for n in 0..8 {
        let server = &servers[&format!("server-{n}")];
        assert_eq!(server["args"].as_array().unwrap()[0].as_str(), Some(n.to_string().as_str()));
    }
}
