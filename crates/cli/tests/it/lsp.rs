//! Language servers and formatters after edits, end to end: the real binary, the fake model
//! server scripting the calls, and a real pyright (installed by `.ci/run` into the npm prefix
//! `CODECODER_TEST_LSP` names; under `CI=true` a missing install fails the tests that need it,
//! elsewhere they are skipped with a note). An edit that introduces a type error gets the
//! diagnostic in the same tool result; `lsp` answers definition, references (by position and
//! by name), hover, document symbols and callers on a fixture project; a server that exits at once is a note, not a hang or a failed edit; a formatter
//! runs and its effect is noted; `doctor` lists the servers. With the default 1 s wait: a read
//! starts pyright, so the edit after it gets diagnostics; an edit before the server is ready
//! returns with a note and a later edit gets them; the server ends with the session, and with
//! codecoder killed by SIGKILL.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::json;

use crate::exec::{Run, openai_env};
use crate::{stderr, stdout};

/// The directory of the pinned pyright's binaries, when installed.
#[allow(clippy::print_stderr)]
fn pyright_bin() -> Option<PathBuf> {
    use codecoder_protocol::env;
    match std::env::var_os(env::CODECODER_TEST_LSP) {
        Some(dir) => Some(PathBuf::from(dir).join("node_modules/.bin/pyright-langserver")),
        None if std::env::var(env::CI).is_ok_and(|v| v == "true") => panic!(
            "{} is not set: .ci/run installs the pinned pyright and sets it",
            env::CODECODER_TEST_LSP
        ),
        None => {
            eprintln!("skipped: {} is not set", env::CODECODER_TEST_LSP);
            None
        }
    }
}

struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    workspace: PathBuf,
}

fn world(config: &str, files: &[(&str, &str)]) -> World {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (home, workspace) = (root.join("home"), root.join("ws"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(home.join("config.toml"), config).unwrap();
    for (name, text) in files {
        std::fs::write(workspace.join(name), text).unwrap();
    }
    World { _dir: dir, home, workspace }
}

/// Runs `codecoder exec` with the script; returns the bodies of the requests after the first
/// (each holds the previous call's result).
fn exec(world: &World, script: Script) -> Vec<String> {
    let server = FakeModelServer::start(script).unwrap();
    let run = Run { home: &world.home, cwd: &world.workspace, env: openai_env(&server) };
    let out = run.run(&["exec", "work on the code"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    server.requests().iter().skip(1).map(|request| last_output(&request.raw_body)).collect()
}

/// The output of the last call in a request's input (the result the model just got).
fn last_output(body: &str) -> String {
    let body: serde_json::Value = serde_json::from_str(body).unwrap();
    let input = body["input"].as_array().unwrap();
    let item = input.iter().rev().find(|item| item["type"] == "function_call_output").unwrap();
    item["output"].as_str().unwrap().to_owned()
}

fn pyright_config(bin: &Path) -> String {
    // The first analysis loads the standard library's stubs: give it time on a loaded machine.
    format!(
        "[lsp]\ndiagnostics_wait_ms = 60000\nrequest_timeout_ms = 60000\nstartup_timeout_ms = 60000\n[lsp.pyright]\ncommand = {:?}\n",
        bin.to_string_lossy()
    )
}

#[test]
fn an_edit_that_introduces_a_type_error_returns_the_diagnostic_in_its_result() {
    let Some(bin) = pyright_bin() else { return };
    let world = world(
        &pyright_config(&bin),
        &[
            ("pyproject.toml", "[project]\nname = \"fixture\"\n"),
            ("calc.py", "def add(a: int, b: int) -> int:\n    return a + b\n"),
        ],
    );
    let bodies = exec(
        &world,
        Script::new()
            .reply(Reply::tool_call(
                "c1",
                "edit",
                json!({ "path": "calc.py", "old_string": "return a + b", "new_string": "return str(a + b)" }),
            ))
            .reply(Reply::tool_call(
                "c2",
                "edit",
                json!({ "path": "calc.py", "old_string": "return str(a + b)", "new_string": "return a * b" }),
            ))
            .reply(Reply::text("done")),
    );
    assert_eq!(bodies.len(), 2);
    let first = &bodies[0];
    assert!(first.contains("Diagnostics for calc.py (pyright): 1 error(s)"), "{first}");
    assert!(first.contains("calc.py:2:12: error:"), "{first}");
    assert!(first.contains("reportReturnType"), "{first}");
    // The fix clears it: the next publish for the file is empty.
    let second = &bodies[1];
    assert!(second.contains("Diagnostics for calc.py (pyright): none."), "{second}");
    assert_eq!(
        std::fs::read_to_string(world.workspace.join("calc.py")).unwrap(),
        "def add(a: int, b: int) -> int:\n    return a * b\n"
    );
}

/// `[lsp.pyright]` with the default bounds (1 s for an edit's diagnostics), run by a script
/// that waits `delay` seconds before starting pyright with its arguments and `MARKER` set to
/// `marker` in its environment (so that the test finds its processes).
fn default_pyright_config(dir: &Path, bin: &Path, delay: u32, marker: &str) -> String {
    let script = dir.join("pyright");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nsleep {delay}\nexec {:?} \"$@\"\n", bin.to_string_lossy()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!(
        "[lsp.pyright]\ncommand = {:?}\nenv = {{ MARKER = {marker:?} }}\n",
        script.to_string_lossy()
    )
}

/// The ids of live processes whose environment holds `MARKER=marker`.
fn marked_processes(marker: &str) -> Vec<u32> {
    let needle = format!("MARKER={marker}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                environ.windows(needle.len()).any(|window| window == needle.as_bytes())
            }) && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z'))
            })
        })
        .collect()
}

/// Polls until `done` holds, for at most a minute (a loaded machine starts node slowly).
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..600 {
        if done() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("{what}: not within a minute");
}

const CALC: &str = "def add(a: int, b: int) -> int:\n    return a + b\n";

#[test]
fn a_read_starts_pyright_so_the_edit_after_it_gets_diagnostics_within_the_default_wait() {
    let Some(bin) = pyright_bin() else { return };
    let scripts = tempfile::tempdir().unwrap();
    let marker = format!("read-{}", std::process::id());
    let world = world(
        &default_pyright_config(scripts.path(), &bin, 0, &marker),
        &[("pyproject.toml", "[project]\nname = \"fixture\"\n"), ("calc.py", CALC)],
    );
    let bodies = exec(
        &world,
        Script::new()
            .reply(Reply::tool_call("c1", "read_file", json!({ "path": "calc.py" })))
            // The model's turn: the time pyright has to start, opened on the file read.
            .reply(
                Reply::tool_call(
                    "c2",
                    "edit",
                    json!({ "path": "calc.py", "old_string": "return a + b", "new_string": "return str(a + b)" }),
                )
                .delay_ms(20_000),
            )
            .reply(Reply::text("done")),
    );
    let edit = &bodies[1];
    assert!(edit.contains("Diagnostics for calc.py (pyright): 1 error(s)"), "{edit}");
    assert!(edit.contains("calc.py:2:12: error:"), "{edit}");
    // The session's end stopped it.
    assert_eq!(marked_processes(&marker), Vec::<u32>::new());
}

#[test]
fn an_edit_before_pyright_is_ready_returns_with_a_note_and_a_later_edit_gets_diagnostics() {
    let Some(bin) = pyright_bin() else { return };
    let scripts = tempfile::tempdir().unwrap();
    let marker = format!("slow-{}", std::process::id());
    // pyright starts 3 s after it is asked: past the edit's 1 s, whatever the machine.
    let world = world(
        &default_pyright_config(scripts.path(), &bin, 3, &marker),
        &[("pyproject.toml", "[project]\nname = \"fixture\"\n"), ("calc.py", CALC)],
    );
    let bodies = exec(
        &world,
        Script::new()
            .reply(Reply::tool_call(
                "c1",
                "edit",
                json!({ "path": "calc.py", "old_string": "return a + b", "new_string": "return str(a + b)" }),
            ))
            .reply(
                Reply::tool_call(
                    "c2",
                    "edit",
                    json!({ "path": "calc.py", "old_string": "return str(a + b)", "new_string": "return [a + b]" }),
                )
                .delay_ms(20_000),
            )
            .reply(Reply::text("done")),
    );
    let first = &bodies[0];
    assert!(
        first.contains(
            "Diagnostics for calc.py: pyright is starting; its diagnostics come with later edits."
        ),
        "{first}"
    );
    let second = &bodies[1];
    assert!(second.contains("Diagnostics for calc.py (pyright): 1 error(s)"), "{second}");
    assert!(second.contains("list[int]"), "{second}");
    assert_eq!(
        std::fs::read_to_string(world.workspace.join("calc.py")).unwrap(),
        "def add(a: int, b: int) -> int:\n    return [a + b]\n"
    );
    assert_eq!(marked_processes(&marker), Vec::<u32>::new());
}

#[test]
fn pyright_ends_when_codecoder_is_killed_with_sigkill() {
    let Some(bin) = pyright_bin() else { return };
    // Sandboxed (the default) and unconfined.
    for (mode, args) in [("sandboxed", &[][..]), ("unconfined", &["-s", "danger-full-access"][..])]
    {
        killed_with_sigkill(&bin, mode, args);
    }
}

fn killed_with_sigkill(bin: &Path, mode: &str, args: &[&str]) {
    let scripts = tempfile::tempdir().unwrap();
    let marker = format!("kill-{mode}-{}", std::process::id());
    let world = world(
        &default_pyright_config(scripts.path(), bin, 0, &marker),
        &[("pyproject.toml", "[project]\nname = \"fixture\"\n"), ("calc.py", CALC)],
    );
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "read_file", json!({ "path": "calc.py" })))
            .reply(Reply::text("never sent").delay_ms(600_000)),
    )
    .unwrap();
    let run = Run { home: &world.home, cwd: &world.workspace, env: openai_env(&server) };
    let mut child = run
        .command(&[args, &["exec", "work on the code"][..]].concat())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The read started pyright (node running pyright-langserver, in the sandbox when there is
    // one; the script before it is not enough).
    eventually(&format!("{mode}: pyright started"), || {
        marked_processes(&marker).iter().any(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
                String::from_utf8_lossy(&cmdline).contains("pyright-langserver")
            })
        })
    });
    child.kill().unwrap();
    child.wait().unwrap();
    eventually(&format!("{mode}: pyright gone after SIGKILL of codecoder"), || {
        marked_processes(&marker).is_empty()
    });
}

/// A `pyright-langserver` on the `PATH` the session gets: it leaves a mark when started, then
/// runs `then` (`exit 0`: exits at once).
fn pyright_on_path(dir: &Path, then: &str) -> (String, PathBuf) {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let mark = dir.join("started");
    let server = bin.join("pyright-langserver");
    std::fs::write(&server, format!("#!/bin/sh\ntouch {:?}\n{then}\n", mark.to_string_lossy()))
        .unwrap();
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::join_paths(
        std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    (path.to_string_lossy().into_owned(), mark)
}

#[test]
fn a_preset_server_on_path_starts_on_a_read_unless_the_home_turns_servers_off() {
    let script = || {
        Script::new()
            .reply(Reply::tool_call("c1", "read_file", json!({ "path": "calc.py" })))
            .reply(Reply::tool_call(
                "c2",
                "write_file",
                json!({ "path": "calc.py", "content": "x = 2\n" }),
            ))
            .reply(Reply::text("done"))
    };
    for hermetic in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let (path, mark) = pyright_on_path(&dir.path().canonicalize().unwrap(), "exit 0");
        let world = world("", &[("calc.py", "x = 1\n")]);
        if hermetic {
            crate::exec::without_language_servers(&world.home);
        }
        let server = FakeModelServer::start(script()).unwrap();
        let mut env = openai_env(&server);
        env.push(("PATH".to_owned(), path));
        let run = Run { home: &world.home, cwd: &world.workspace, env };
        let out = run.run(&["exec", "work on the code"], "");
        assert!(out.status.success(), "{}", stderr(&out));
        let edit = last_output(&server.requests()[2].raw_body);
        if hermetic {
            // The test homes' setting: no server is looked for, nothing is added to the edit.
            assert!(!mark.exists(), "a server started in a home that turns them off");
            assert!(!edit.contains("Diagnostics"), "{edit}");
        } else {
            // The preset found on PATH (no configuration) was started by the read.
            assert!(mark.exists(), "the preset on PATH was not started");
            assert!(
                edit.contains(
                    "Diagnostics for calc.py: unavailable (pyright did not start: pyright exited)"
                ),
                "{edit}"
            );
        }
    }
}

/// A language server in Python that, on each open or change, tries to read the file its
/// argument names and publishes what happened as an error: `read: TEXT` or `denied: ERROR`.
const PRYING_SERVER: &str = r#"
import json, sys
def read():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        key, value = line.split(b":", 1)
        if key.lower() == b"content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))
def send(message):
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()
while True:
    message = read()
    method = message.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {}}})
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": message["id"], "result": None})
    elif method in ("textDocument/didOpen", "textDocument/didChange"):
        try:
            what = "read: " + open(sys.argv[1]).read()
        except OSError as err:
            what = "denied: " + type(err).__name__
        document = message["params"]["textDocument"]
        place = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
        send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {
            "uri": document["uri"], "version": document["version"],
            "diagnostics": [{"range": place, "severity": 1, "message": what}]}})
"#;

#[test]
fn a_server_runs_under_the_sandbox_s_read_policy_and_cannot_read_a_hidden_path() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let (script, secret, visible) =
        (dir.join("prying.py"), dir.join("secret.txt"), dir.join("visible.txt"));
    std::fs::write(&script, PRYING_SERVER).unwrap();
    std::fs::write(&secret, "FAKE-LSP-SECRET").unwrap();
    std::fs::write(&visible, "FAKE-VISIBLE").unwrap();
    let config = |target: &Path| {
        format!(
            "[sandbox]\nhidden_paths = [{:?}]\n[lsp.prying]\ncommand = \"python3\"\nargs = [{:?}, {:?}]\nextensions = [\"fk\"]\n",
            secret.to_string_lossy(),
            script.to_string_lossy(),
            target.to_string_lossy()
        )
    };
    let edit = |config: String| {
        let world = world(&config, &[]);
        let bodies = exec(
            &world,
            Script::new()
                .reply(Reply::tool_call(
                    "c1",
                    "write_file",
                    json!({ "path": "a.fk", "content": "x\n" }),
                ))
                .reply(Reply::text("done")),
        );
        bodies[0].clone()
    };
    // The same server reads a path that is not hidden: the denial below is the sandbox's.
    let allowed = edit(config(&visible));
    assert!(allowed.contains("a.fk:1:1: error: read: FAKE-VISIBLE"), "{allowed}");
    let denied = edit(config(&secret));
    assert!(denied.contains("a.fk:1:1: error: denied: "), "{denied}");
    assert!(!denied.contains("FAKE-LSP-SECRET"), "{denied}");
}

#[test]
fn a_search_that_finds_a_python_file_starts_its_server() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mark) = pyright_on_path(&dir.path().canonicalize().unwrap(), "exec sleep 600");
    let world = world("", &[("calc.py", "x = 1\n"), ("notes.txt", "x = 1\n")]);
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call("c1", "grep", json!({ "pattern": "x = " })))
            .reply(Reply::text("never sent").delay_ms(600_000)),
    )
    .unwrap();
    let mut env = openai_env(&server);
    env.push(("PATH".to_owned(), path));
    let run = Run { home: &world.home, cwd: &world.workspace, env };
    let mut child = run
        .command(&["exec", "work on the code"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Nothing but the search ran: it started the server of the Python file it found.
    eventually("the search started pyright", || mark.exists());
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn lsp_answers_definition_and_references_on_a_fixture_project() {
    let Some(bin) = pyright_bin() else { return };
    let world = world(
        &pyright_config(&bin),
        &[
            ("pyproject.toml", "[project]\nname = \"fixture\"\n"),
            ("greeting.py", "def greet(name: str) -> str:\n    return \"hi \" + name\n"),
            ("main.py", "from greeting import greet\n\nprint(greet(\"a\"))\nprint(greet(\"b\"))\n"),
        ],
    );
    let bodies = exec(
        &world,
        Script::new()
            .reply(Reply::tool_call(
                "c1",
                "lsp",
                json!({ "operation": "definition", "path": "main.py", "line": 3, "column": 7 }),
            ))
            .reply(Reply::tool_call(
                "c2",
                "lsp",
                json!({ "operation": "references", "path": "greeting.py", "line": 1, "column": 5 }),
            ))
            .reply(Reply::tool_call(
                "c3",
                "lsp",
                json!({ "operation": "hover", "path": "main.py", "line": 3, "column": 7 }),
            ))
            .reply(Reply::tool_call("c4", "lsp", json!({ "operation": "definition", "line": 3 })))
            .reply(Reply::tool_call("c5", "lsp", json!({ "operation": "references", "symbol": "greet" })))
            .reply(Reply::tool_call("c6", "lsp", json!({ "operation": "documentSymbol", "path": "main.py" })))
            .reply(Reply::tool_call("c7", "lsp", json!({ "operation": "documentSymbol", "path": "greeting.py" })))
            .reply(Reply::tool_call("c8", "lsp", json!({ "operation": "incomingCalls", "path": "greeting.py", "line": 1, "column": 5 })))
            .reply(Reply::text("done")),
    );
    assert_eq!(bodies.len(), 8);
    let definition = &bodies[0];
    assert!(
        definition.contains("1 definition(s):\ngreeting.py:1:5: def greet(name: str) -> str:"),
        "{definition}"
    );
    let references = &bodies[1];
    for place in ["greeting.py:1:5", "main.py:1:22", "main.py:3:7", "main.py:4:7"] {
        assert!(references.contains(place), "{place} in {references}");
    }
    assert!(references.contains("4 reference(s)"), "{references}");
    let hover = &bodies[2];
    assert!(hover.contains("(name: str) -> str"), "{hover}");
    // A position needs all of path, line and column: refused with what to give.
    let invalid = &bodies[3];
    assert!(invalid.contains("give `line` and `column` together"), "{invalid}");
    // By name: the references of the definition `workspace/symbol` finds.
    assert_eq!(bodies[4], *references);
    assert_eq!(
        bodies[6],
        "Symbols of greeting.py:\nfunction greet (line 1)\n  variable name (line 1)"
    );
    let callers = &bodies[7];
    assert!(callers.starts_with("1 caller(s):\n(module) main.py: main.py:"), "{callers}");
}

#[test]
fn a_server_that_exits_at_once_is_a_note_not_a_hang_or_a_failed_edit() {
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().canonicalize().unwrap().join("dies");
    std::fs::write(&server, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    let world = world(
        &format!("[lsp.pyright]\ncommand = {:?}\n", server.to_string_lossy()),
        &[("calc.py", "x = 1\n")],
    );
    let bodies = exec(
        &world,
        Script::new()
            .reply(Reply::tool_call(
                "c1",
                "write_file",
                json!({ "path": "calc.py", "content": "x = 2\n" }),
            ))
            .reply(Reply::tool_call(
                "c2",
                "write_file",
                json!({ "path": "calc.py", "content": "x = 3\n" }),
            ))
            .reply(Reply::text("done")),
    );
    let first = &bodies[0];
    assert!(first.contains("Replaced `calc.py`"), "{first}");
    assert!(
        first.contains(
            "Diagnostics for calc.py: unavailable (pyright did not start: pyright exited)"
        ),
        "{first}"
    );
    // Not tried again in the session: the same note at once.
    assert!(
        bodies[1].contains("Diagnostics for calc.py: unavailable (pyright did not start"),
        "{}",
        bodies[1]
    );
    assert_eq!(std::fs::read_to_string(world.workspace.join("calc.py")).unwrap(), "x = 3\n");
}

#[test]
fn a_configured_formatter_runs_after_an_edit_and_its_effect_is_noted() {
    let world = world(
        "[lsp]\nenabled = false\n[formatters.upper]\ncommand = [\"sh\", \"-c\", \"tr a-z A-Z < \\\"$1\\\" > \\\"$1.tmp\\\" && mv \\\"$1.tmp\\\" \\\"$1\\\"\", \"sh\", \"$FILE\"]\nextensions = [\"txt\"]\n",
        &[],
    );
    let bodies = exec(
        &world,
        Script::new()
            .reply(Reply::tool_call(
                "c1",
                "write_file",
                json!({ "path": "notes.txt", "content": "hello\n" }),
            ))
            .reply(Reply::tool_call(
                "c2",
                "write_file",
                json!({ "path": "notes.md", "content": "hello\n" }),
            ))
            .reply(Reply::tool_call(
                "c3",
                "write_file",
                json!({ "path": "other.txt", "content": "DONE\n" }),
            ))
            .reply(Reply::text("done")),
    );
    assert!(
        bodies[0].contains("Formatter upper ran on notes.txt: the file changed"),
        "{}",
        bodies[0]
    );
    assert_eq!(std::fs::read_to_string(world.workspace.join("notes.txt")).unwrap(), "HELLO\n");
    // No formatter for .md: nothing added.
    assert!(!bodies[1].contains("Formatter"), "{}", bodies[1]);
    assert_eq!(std::fs::read_to_string(world.workspace.join("notes.md")).unwrap(), "hello\n");
    assert!(bodies[2].contains("Formatter upper ran on other.txt: no change."), "{}", bodies[2]);
}

#[test]
fn doctor_lists_the_language_servers_found_or_not() {
    let world = world(
        "[lsp.pyright]\ncommand = \"/nonexistent/pyright-langserver\"\n[lsp.mine]\ncommand = \"sh\"\nextensions = [\"foo\"]\n[formatters.upper]\ncommand = [\"true\", \"$FILE\"]\nextensions = [\"txt\"]\n",
        &[],
    );
    let run = Run { home: &world.home, cwd: &world.workspace, env: Vec::new() };
    let out = run.run(&["doctor"], "");
    let text = stdout(&out);
    assert!(text.contains("language servers"), "{text}");
    assert!(
        text.contains(
            "  pyright (py, pyi): not found (`/nonexistent/pyright-langserver` is not on PATH)"
        ),
        "{text}"
    );
    assert!(text.contains("  mine (foo): found: "), "{text}");
    assert!(text.contains("  gopls (go): "), "{text}");
    assert!(text.contains("  upper (txt): true $FILE"), "{text}");
}

/// Whether a process whose command line holds `needle` is alive.
fn process_with(needle: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(needle))
    })
}

#[test]
fn a_server_that_never_answers_is_a_note_after_its_startup_timeout_and_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().canonicalize().unwrap().join("hangs");
    let marker = format!("700.{}", std::process::id());
    std::fs::write(&server, format!("#!/bin/sh\nexec sleep {marker}\n")).unwrap();
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    let world = world(
        &format!(
            "[lsp]\nstartup_timeout_ms = 300\n[lsp.pyright]\ncommand = {:?}\n",
            server.to_string_lossy()
        ),
        &[("calc.py", "x = 1\n")],
    );
    let bodies = exec(
        &world,
        Script::new()
            .reply(Reply::tool_call(
                "c1",
                "edit",
                json!({ "path": "calc.py", "old_string": "x = 1", "new_string": "x = 2" }),
            ))
            .reply(Reply::text("done")),
    );
    assert!(
        bodies[0].contains(
            "Diagnostics for calc.py: unavailable (pyright did not start: pyright did not answer initialize within 300 ms)"
        ),
        "{}",
        bodies[0]
    );
    assert_eq!(std::fs::read_to_string(world.workspace.join("calc.py")).unwrap(), "x = 2\n");
    assert!(!process_with(&format!("sleep {marker}")), "the server outlived the session");
}
