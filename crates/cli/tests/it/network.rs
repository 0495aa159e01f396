//! The managed network through the binary: a sandboxed command reaches the network only through
//! the session's proxy, which lets allowed hosts through, refuses denied hosts and bare IP
//! addresses, and asks about the rest (refused without asking under `exec`'s approval mode
//! `never`, asked through the app server's approval requests otherwise). Loopback HTTP servers
//! stand in for registries, reached by name through `CODECODER_TEST_NET_RESOLVE`.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use codecoder_protocol::env;
use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::{Value, json};

use crate::exec::{Run, openai_env};
use crate::stderr;

/// A loopback HTTP server answering every GET with `body`, or with the file under `root` its
/// path names when it has a root; it runs until the test process ends.
fn http_server(body: &'static str, root: Option<PathBuf>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let root = root.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    return;
                }
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                }
                let path = request_line.split(' ').nth(1).unwrap_or("/");
                // A proxy forwards plain HTTP in absolute form; the path starts at the third
                // slash.
                let path = match path.strip_prefix("http://") {
                    Some(rest) => rest.find('/').map_or("/", |at| &rest[at..]),
                    None => path,
                };
                let path = path.split('?').next().unwrap_or(path);
                let index = format!("{path}index.html");
                let path = if path.ends_with('/') { index.as_str() } else { path };
                let content = match &root {
                    Some(root) => std::fs::read(root.join(path.trim_start_matches('/'))).ok(),
                    None => Some(body.as_bytes().to_vec()),
                };
                let head = match &content {
                    Some(content) => format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\n\
                         Connection: close\r\n\r\n",
                        if path.ends_with(".whl") {
                            "application/octet-stream"
                        } else {
                            "text/html"
                        },
                        content.len()
                    ),
                    None => {
                        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            .to_owned()
                    }
                };
                let _ = stream.write_all(head.as_bytes());
                if let Some(content) = content {
                    let _ = stream.write_all(&content);
                }
            });
        }
    });
    port
}

/// A workspace and a codecoder home in a temporary directory.
struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    workspace: PathBuf,
}

impl World {
    fn new(config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let world =
            Self { home: root.join("cchome"), workspace: root.join("workspace"), _dir: dir };
        std::fs::create_dir_all(&world.home).unwrap();
        std::fs::create_dir_all(&world.workspace).unwrap();
        std::fs::write(world.home.join("config.toml"), config).unwrap();
        world
    }

    fn run(&self, server: &FakeModelServer, resolve: &str) -> Run<'_> {
        let mut env = openai_env(server);
        env.push((env::CODECODER_TEST_NET_RESOLVE.into(), resolve.into()));
        Run { home: &self.home, cwd: &self.workspace, env }
    }

    /// The records of the session's log (the only session of the home).
    fn log(&self) -> Vec<Value> {
        let log = std::fs::read_dir(self.home.join("sessions"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .find(|path| path.extension().and_then(|e| e.to_str()) == Some("jsonl"))
            .unwrap();
        std::fs::read_to_string(log)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

/// The `approval` records of network asks in `records`.
fn network_approvals(records: &[Value]) -> Vec<&Value> {
    records
        .iter()
        .filter(|record| {
            record["type"] == "approval"
                && record["permissionKeys"][0].as_str().is_some_and(|k| k.starts_with("network:"))
        })
        .collect()
}

/// The output the model was sent as the result of call `call_id`.
fn result_text(server: &FakeModelServer, call_id: &str) -> String {
    server
        .requests()
        .iter()
        .filter_map(|request| serde_json::from_str::<Value>(&request.raw_body).ok())
        .flat_map(|body| body["input"].as_array().cloned().unwrap_or_default())
        .find(|item| item["type"] == "function_call_output" && item["call_id"] == call_id)
        .map(|item| item["output"].to_string())
        .unwrap_or_default()
}

fn command(id: &str, command: &str) -> Reply {
    Reply::tool_call(id, "run_command", json!({ "command": command }))
}

#[test]
fn exec_reaches_allowed_hosts_through_the_proxy_under_bubblewrap() {
    exec_reaches_allowed_hosts_and_tells_the_model_why_others_fail("bwrap");
}

#[test]
fn exec_reaches_allowed_hosts_through_the_proxy_under_landlock() {
    exec_reaches_allowed_hosts_and_tells_the_model_why_others_fail("landlock");
}

fn exec_reaches_allowed_hosts_and_tells_the_model_why_others_fail(backend: &str) {
    let port = http_server("hello from the registry", None);
    let world = World::new(
        "[network]\nallowed_domains = [\"registry.test\"]\ndenied_domains = [\"evil.test\"]\n",
    );
    let script = Script::new()
        .reply(command("plain", &format!("curl -sS http://registry.test:{port}/simple/")))
        .reply(command(
            "tunnel",
            &format!("curl -sS --proxytunnel http://registry.test:{port}/simple/"),
        ))
        .reply(command("denied", &format!("curl -sS http://evil.test:{port}/")))
        .reply(command("address", "curl -sS http://192.0.2.1/"))
        .reply(command("direct", &format!("curl -sS --noproxy '*' http://127.0.0.1:{port}/")))
        .reply(command("unlisted", &format!("curl -sS http://other.test:{port}/")))
        .reply(Reply::tool_call(
            "session",
            "exec_command",
            json!({ "cmd": format!("curl -sS http://registry.test:{port}/; curl -sS http://other.test:{port}/") }),
        ))
        .reply(Reply::text("done"));
    let server = FakeModelServer::start(script).unwrap();
    let resolve = format!(
        "registry.test=127.0.0.1:{port},evil.test=127.0.0.1:{port},other.test=127.0.0.1:{port}"
    );
    let backend = format!("sandbox.backend=\"{backend}\"");
    let out = world.run(&server, &resolve).run(&["-c", &backend, "exec", "fetch things"], "");
    assert!(out.status.success(), "{}", stderr(&out));

    let plain = result_text(&server, "plain");
    assert!(plain.contains("hello from the registry"), "{plain}");
    let tunnel = result_text(&server, "tunnel");
    assert!(tunnel.contains("hello from the registry"), "{tunnel}");
    let denied = result_text(&server, "denied");
    assert!(denied.contains("evil.test is denied (denied_domains: evil.test)"), "{denied}");
    let address = result_text(&server, "address");
    assert!(address.contains("192.0.2.1 is a bare IP address"), "{address}");
    // Past the proxy there is no way out, not even to loopback.
    let direct = result_text(&server, "direct");
    assert!(!direct.contains("hello from the registry"), "{direct}");
    assert!(direct.contains("exit code"), "{direct}");
    let unlisted = result_text(&server, "unlisted");
    assert!(unlisted.contains("other.test is not in allowed_domains"), "{unlisted}");
    assert!(unlisted.contains("ask the user to add it to `allowed_domains`"), "{unlisted}");
    // An exec_command session goes through its own endpoint, and its result says why.
    let session = result_text(&server, "session");
    assert!(session.contains("hello from the registry"), "{session}");
    assert!(session.contains("other.test is not in allowed_domains"), "{session}");
    // None of the refusals offered a retry outside the sandbox.
    for body in [&denied, &address, &unlisted] {
        assert!(!body.contains("without the sandbox"), "{body}");
    }

    // Only the uncovered host was an ask: refused by the mode, and logged.
    let records = world.log();
    let approvals = network_approvals(&records);
    assert_eq!(approvals.len(), 2, "{approvals:#?}");
    assert_eq!(approvals[1]["callId"], "session");
    assert_eq!(approvals[0]["callId"], "unlisted");
    assert_eq!(approvals[0]["permissionKeys"], json!(["network:other.test"]));
    assert_eq!(approvals[0]["decidedBy"], "mode");
    assert_eq!(approvals[0]["decision"]["type"], "deny");
}

#[test]
fn a_bad_network_rule_stops_the_session_naming_its_file() {
    let world = World::new("[network]\nallowed_domains = [\"https://\"]\n");
    let server = FakeModelServer::start(Script::new().reply(Reply::text("never"))).unwrap();
    let out = world.run(&server, "").run(&["exec", "hello"], "");
    assert!(!out.status.success());
    let text = stderr(&out);
    assert!(text.contains("invalid network rule"), "{text}");
    assert!(text.contains("config.toml [network]"), "{text}");
    let doctor = world.run(&server, "").run(&["doctor"], "");
    let text = crate::stdout(&doctor);
    assert!(text.contains("error: invalid network rule"), "{text}");
}

#[test]
fn git_clones_over_http_from_an_allowed_forge() {
    let world = World::new("[network]\nallowed_domains = [\"forge.test\"]\n");
    // A bare repository served as static files (git's dumb HTTP protocol).
    let served = world.workspace.parent().unwrap().join("served");
    let source = world.workspace.parent().unwrap().join("source");
    git(&["init", "-q", "-b", "main", source.to_str().unwrap()], None);
    std::fs::write(source.join("README"), "cloned through the proxy\n").unwrap();
    git(&["add", "README"], Some(&source));
    git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"], Some(&source));
    git(
        &[
            "clone",
            "-q",
            "--bare",
            source.to_str().unwrap(),
            served.join("repo.git").to_str().unwrap(),
        ],
        None,
    );
    git(&["update-server-info"], Some(&served.join("repo.git")));
    let port = http_server("", Some(served));
    let script = Script::new()
        .reply(command(
            "clone",
            &format!("git clone -q http://forge.test:{port}/repo.git cloned && cat cloned/README"),
        ))
        .reply(Reply::text("done"));
    let server = FakeModelServer::start(script).unwrap();
    let out =
        world.run(&server, &format!("forge.test=127.0.0.1:{port}")).run(&["exec", "clone"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let clone = result_text(&server, "clone");
    assert!(clone.contains("cloned through the proxy"), "{clone}");
    assert!(world.workspace.join("cloned/README").exists());
}

fn git(args: &[&str], cwd: Option<&Path>) {
    let mut command = std::process::Command::new("git");
    command.args(args).env("GIT_CONFIG_NOSYSTEM", "1").env("HOME", "/nonexistent");
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
}

#[test]
fn an_app_server_client_allows_a_host_for_the_session_and_is_not_asked_again() {
    let port = http_server("served to the approved host", None);
    let world = World::new("");
    let script = Script::new()
        .reply(command("first", &format!("curl -sS http://asked.test:{port}/one")))
        .reply(command("second", &format!("curl -sS http://asked.test:{port}/two")))
        .reply(command("third", &format!("curl -sS http://refused.test:{port}/")))
        .reply(Reply::text("done"));
    let server = FakeModelServer::start(script).unwrap();
    let resolve = format!("asked.test=127.0.0.1:{port},refused.test=127.0.0.1:{port}");
    let run = world.run(&server, &resolve);
    let mut client = crate::app_server::Client::start(&run);
    client.initialize();
    let started = client.result(
        "thread/start",
        json!({
            "cwd": world.workspace,
            "approvalPolicy": "on-request",
            "sandbox": "workspace-write",
            "model": "test-model"
        }),
    );
    let thread_id = started["thread"]["id"].as_str().unwrap().to_owned();
    client.result(
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "fetch"}]}),
    );
    let mut asked = Vec::new();
    client.turn(|request| {
        asked.push(request.clone());
        match asked.len() {
            1 => "acceptForSession",
            _ => "decline",
        }
    });
    // One question per host: the first command's, allowed for the session; the second
    // command to the same host was not asked; the third, to another host, was and was refused.
    assert_eq!(asked.len(), 2, "{asked:#?}");
    let first = asked[0].to_string();
    assert!(first.contains("wants to reach asked.test:"), "{first}");
    let second = asked[1].to_string();
    assert!(second.contains("wants to reach refused.test:"), "{second}");
    assert!(result_text(&server, "first").contains("served to the approved host"));
    assert!(result_text(&server, "second").contains("served to the approved host"));
    let third = result_text(&server, "third");
    assert!(third.contains("refused.test is not in allowed_domains"), "{third}");
    assert!(third.contains("Do not retry"), "{third}");
    assert!(client.finish().success());

    let records = world.log();
    let approvals = network_approvals(&records);
    let decided: Vec<(&str, &str, &str)> = approvals
        .iter()
        .map(|record| {
            (
                record["callId"].as_str().unwrap(),
                record["decidedBy"].as_str().unwrap(),
                record["decision"]["type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        decided,
        [("first", "user", "allow_for_session"), ("third", "user", "deny")],
        "{approvals:#?}"
    );
}

#[test]
fn web_fetch_meets_the_same_policy() {
    let port = http_server("fetched through the proxy", None);
    let world = World::new(
        "[network]\nallowed_domains = [\"docs.test\"]\ndenied_domains = [\"evil.test\"]\n",
    );
    let fetch = |id: &str, host: &str| {
        Reply::tool_call(id, "web_fetch", json!({ "url": format!("http://{host}:{port}/page") }))
    };
    let script = Script::new()
        .reply(fetch("allowed", "docs.test"))
        .reply(fetch("denied", "evil.test"))
        .reply(Reply::text("done"));
    let server = FakeModelServer::start(script).unwrap();
    let resolve = format!("docs.test=127.0.0.1:{port},evil.test=127.0.0.1:{port}");
    let out = world.run(&server, &resolve).run(&["exec", "fetch"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let allowed = result_text(&server, "allowed");
    assert!(allowed.contains("fetched through the proxy"), "{allowed}");
    let denied = result_text(&server, "denied");
    // A whole-host entry is a web_fetch rule too: refused before any request is made.
    assert!(denied.contains("deny `web_fetch(domain:evil.test)`"), "{denied}");
    assert!(!denied.contains("fetched through the proxy"), "{denied}");
}

#[test]
#[allow(clippy::print_stderr)]
fn pip_downloads_from_an_allowed_index() {
    // The interpreter itself, not a version manager's shim that needs the user's profile.
    let python = std::process::Command::new("python3")
        .args(["-c", "import sys, pip; print(sys.executable)"])
        .output();
    let Some(python) = python.ok().filter(|out| out.status.success()) else {
        eprintln!("skipped: no python3 with pip");
        return;
    };
    let python = String::from_utf8(python.stdout).unwrap().trim().to_owned();
    let world = World::new("[network]\nallowed_domains = [\"pypi.test\"]\n");
    // A simple index of one pure-Python wheel.
    let served = world.workspace.parent().unwrap().join("index");
    std::fs::create_dir_all(served.join("simple/tinypkg")).unwrap();
    std::fs::create_dir_all(served.join("packages")).unwrap();
    let wheel = served.join("packages/tinypkg-1.0-py3-none-any.whl");
    let make_wheel = format!(
        "import zipfile\n\
         z = zipfile.ZipFile({wheel:?}, 'w')\n\
         z.writestr('tinypkg/__init__.py', '')\n\
         z.writestr('tinypkg-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: tinypkg\\nVersion: 1.0\\n')\n\
         z.writestr('tinypkg-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n\
         z.writestr('tinypkg-1.0.dist-info/RECORD', '')\n\
         z.close()\n"
    );
    let made = std::process::Command::new(&python).args(["-c", &make_wheel]).output().unwrap();
    assert!(made.status.success(), "{}", stderr(&made));
    std::fs::write(
        served.join("simple/tinypkg/index.html"),
        "<html><body><a href=\"../../packages/tinypkg-1.0-py3-none-any.whl\">tinypkg-1.0-py3-none-any.whl</a></body></html>",
    )
    .unwrap();
    let port = http_server("", Some(served));
    let script = Script::new()
        .reply(command(
            "pip",
            &format!(
                "'{python}' -m pip download --no-cache-dir --no-deps --disable-pip-version-check \
                 --index-url http://pypi.test:{port}/simple --trusted-host pypi.test -d downloaded \
                 tinypkg"
            ),
        ))
        .reply(Reply::text("done"));
    let server = FakeModelServer::start(script).unwrap();
    let out = world.run(&server, &format!("pypi.test=127.0.0.1:{port}")).run(&["exec", "pip"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let pip = result_text(&server, "pip");
    assert!(world.workspace.join("downloaded/tinypkg-1.0-py3-none-any.whl").exists(), "{pip}");
}

#[test]
fn a_background_job_reaches_allowed_hosts() {
    let port = http_server("served to a background job", None);
    let world = World::new("[network]\nallowed_domains = [\"registry.test\"]\n");
    let fetch =
        format!("curl -sS http://registry.test:{port}/ > job.partial; mv job.partial job.txt");
    let script = Script::new()
        .reply(Reply::tool_call(
            "start",
            "run_command",
            json!({ "command": fetch, "background": true }),
        ))
        .reply(command(
            "read",
            "for i in $(seq 100); do [ -e job.txt ] && break; sleep 0.1; done; cat job.txt",
        ))
        .reply(Reply::tool_call("output", "job_output", json!({ "id": 1 })))
        .reply(Reply::text("done"));
    let server = FakeModelServer::start(script).unwrap();
    let out =
        world.run(&server, &format!("registry.test=127.0.0.1:{port}")).run(&["exec", "job"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let read = result_text(&server, "read");
    let output = result_text(&server, "output");
    assert!(read.contains("served to a background job"), "{read}\n{output}");
}

/// The TUI asks about an uncovered host with the command and the host; `a` allows it for the
/// session, so the next command to it runs without a question.
#[test]
fn the_tui_asks_about_a_host_and_a_session_answer_covers_the_next_command() {
    let port = http_server("answered in the terminal", None);
    let world = World::new("");
    let script = Script::new()
        .reply(command("first", &format!("curl -sS http://asked.test:{port}/one")))
        .reply(command("second", &format!("curl -sS http://asked.test:{port}/two")))
        .reply(Reply::text("Both fetched."));
    let server = FakeModelServer::start(script).unwrap();
    let mut env = openai_env(&server);
    env.push((env::CODECODER_TEST_NET_RESOLVE.into(), format!("asked.test=127.0.0.1:{port}")));
    let mut pty = crate::tui::Pty::spawn(&world.home, &world.workspace, &env, &[]);
    pty.wait_visible("ask anything", "the input prompt");
    pty.type_text("fetch twice");
    pty.send("\r");
    pty.wait_visible("wants to reach asked.test:", "the network question");
    pty.wait_visible("[a] allow for session", "the approval keys");
    pty.send("a");
    pty.wait_for("Both fetched.", "the final answer");
    pty.wait_idle("the idle status line");
    assert!(result_text(&server, "first").contains("answered in the terminal"));
    assert!(result_text(&server, "second").contains("answered in the terminal"));
    pty.send("\x03");
    pty.send("\x03");
    let _ = pty.wait_exit();
    let records = world.log();
    let approvals = network_approvals(&records);
    // The proxy remembers the session answer: the second command's request is not asked.
    assert_eq!(approvals.len(), 1, "{approvals:#?}");
    assert_eq!(approvals[0]["callId"], "first");
    assert_eq!(approvals[0]["decidedBy"], "user");
    assert_eq!(approvals[0]["decision"]["type"], "allow_for_session");
}

/// A loopback HTTPS server for `name` with a self-signed certificate, answering each request
/// with its request line; returns its port and the certificate's PEM.
fn https_server(name: &str) -> (u16, String) {
    use std::io::Read as _;
    use std::sync::Arc;
    let key = rcgen::KeyPair::generate().unwrap();
    let certificate =
        rcgen::CertificateParams::new(vec![name.to_owned()]).unwrap().self_signed(&key).unwrap();
    let pem = certificate.pem();
    let key_der = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![certificate.der().clone()], key_der)
    .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let config = Arc::clone(&config);
            std::thread::spawn(move || {
                let connection = rustls::ServerConnection::new(config).unwrap();
                let mut tls = rustls::StreamOwned::new(connection, stream);
                let mut head = Vec::new();
                let mut byte = [0_u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if tls.read(&mut byte).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head);
                let body = format!("the forge saw {}\n", head.lines().next().unwrap_or(""));
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(response.as_bytes());
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    (port, pem)
}

#[test]
fn curl_reaches_an_inspected_https_host_trusting_the_session_ca_from_the_sandboxs_variables() {
    let (port, pem) = https_server("forge.test");
    let world = World::new("[network]\nallowed_domains = [\"GET forge.test/org/**\"]\n");
    let roots = world.home.join("forge-root.pem");
    std::fs::write(&roots, &pem).unwrap();
    // No -k and no --cacert: the command trusts the session CA through SSL_CERT_FILE. The URLs
    // name port 443, where a host with path rules is inspected; the override leads to the server.
    let script = Script::new()
        .reply(command("allowed", "curl -sS https://forge.test/org/repo"))
        .reply(command("refused", "curl -sS https://forge.test/other/repo"))
        .reply(command("variables", "cat \"$NODE_EXTRA_CA_CERTS\"; echo \"$GIT_SSL_CAINFO\""))
        .reply(Reply::text("done"));
    let server = FakeModelServer::start(script).unwrap();
    let mut run = world.run(&server, &format!("forge.test=127.0.0.1:{port}"));
    run.env.push((env::CODECODER_TEST_NET_ROOTS.into(), roots.display().to_string()));
    let out = run.run(&["exec", "fetch from the forge"], "");
    assert!(out.status.success(), "{}", stderr(&out));

    let allowed = result_text(&server, "allowed");
    assert!(allowed.contains("the forge saw GET /org/repo HTTP/1.1"), "{allowed}");
    let refused = result_text(&server, "refused");
    assert!(refused.contains("blocked by codecoder's network policy"), "{refused}");
    assert!(refused.contains("GET forge.test/other/repo is outside the paths"), "{refused}");
    let variables = result_text(&server, "variables");
    assert!(variables.contains("BEGIN CERTIFICATE"), "{variables}");
    assert!(variables.contains("ca-bundle.pem"), "{variables}");
    // The CA's key is never in the session's log (nor any private key).
    let log = world.log().iter().map(Value::to_string).collect::<String>();
    assert!(!log.contains("PRIVATE KEY"), "{log}");
}

#[test]
fn web_fetch_reaches_an_inspected_https_host_trusting_the_session_ca() {
    let (port, pem) = https_server("forge.test");
    let world = World::new("[network]\nallowed_domains = [\"GET forge.test/org/**\"]\n");
    let roots = world.home.join("forge-root.pem");
    std::fs::write(&roots, &pem).unwrap();
    let fetch = |id: &str, path: &str| {
        Reply::tool_call(id, "web_fetch", json!({ "url": format!("https://forge.test{path}") }))
    };
    let script = Script::new()
        .reply(fetch("allowed", "/org/repo"))
        .reply(fetch("refused", "/other/repo"))
        .reply(Reply::text("done"));
    let server = FakeModelServer::start(script).unwrap();
    let mut run = world.run(&server, &format!("forge.test=127.0.0.1:{port}"));
    run.env.push((env::CODECODER_TEST_NET_ROOTS.into(), roots.display().to_string()));
    let out = run.run(&["exec", "fetch from the forge"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let allowed = result_text(&server, "allowed");
    assert!(allowed.contains("the forge saw GET /org/repo HTTP/1.1"), "{allowed}");
    let refused = result_text(&server, "refused");
    assert!(!refused.contains("the forge saw"), "{refused}");
    assert!(refused.contains("outside the paths"), "{refused}");
}
