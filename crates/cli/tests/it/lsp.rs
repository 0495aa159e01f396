//! Language servers and formatters after edits, end to end: the real binary, the fake model
//! server scripting the calls, and a real pyright (installed by `.ci/run` into the npm prefix
//! `CODECODER_TEST_LSP` names; under `CI=true` a missing install fails the tests that need it,
//! elsewhere they are skipped with a note). An edit that introduces a type error gets the
//! diagnostic in the same tool result; `lsp` answers definition, references (by position and
//! by name), hover, document symbols and callers on a fixture project; a server that exits at once is a note, not a hang or a failed edit; a formatter
//! runs and its effect is noted; `doctor` lists the servers.

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
