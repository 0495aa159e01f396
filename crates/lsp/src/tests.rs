//! Unit tests: framing, URIs, roots, the diagnostics' rendering.

use std::io::BufReader;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::framing::{read_frame, write_frame};
use crate::{path_to_uri, render_diagnostics, root_of, uri_to_path};

#[test]
fn frames_round_trip_and_a_missing_length_is_an_error() {
    let mut wire = Vec::new();
    write_frame(&mut wire, br#"{"a":1}"#).unwrap();
    write_frame(&mut wire, b"{}").unwrap();
    let mut reader = BufReader::new(wire.as_slice());
    assert_eq!(read_frame(&mut reader).unwrap().unwrap(), br#"{"a":1}"#);
    assert_eq!(read_frame(&mut reader).unwrap().unwrap(), b"{}");
    assert!(read_frame(&mut reader).unwrap().is_none());
    let mut bad = BufReader::new(&b"Content-Type: x\r\n\r\n{}"[..]);
    assert!(read_frame(&mut bad).is_err());
}

#[test]
fn uris_escape_and_come_back() {
    let path = Path::new("/tmp/a b/ü.py");
    let uri = path_to_uri(path);
    assert_eq!(uri, "file:///tmp/a%20b/%C3%BC.py");
    assert_eq!(uri_to_path(&uri), Some(PathBuf::from("/tmp/a b/ü.py")));
    assert_eq!(uri_to_path("https://x"), None);
}

#[test]
fn the_root_is_the_nearest_marker_else_the_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("p");
    fs_err::create_dir_all(project.join("src")).unwrap();
    fs_err::write(project.join("pyproject.toml"), "").unwrap();
    let markers = vec!["pyproject.toml".to_owned()];
    assert_eq!(root_of(&project.join("src/m.py"), &markers, dir.path()), project);
    assert_eq!(
        root_of(&dir.path().join("x.py"), &markers, Path::new("/fallback")),
        PathBuf::from("/fallback")
    );
}

#[test]
fn diagnostics_show_errors_first_and_are_capped() {
    let diagnostics = vec![
        json!({ "range": { "start": { "line": 0, "character": 0 } }, "severity": 2, "message": "unused" }),
        json!({ "range": { "start": { "line": 4, "character": 2 } }, "severity": 1, "message": "bad type", "code": "reportX" }),
        json!({ "range": { "start": { "line": 9, "character": 0 } }, "severity": 1, "message": "second" }),
    ];
    let text = render_diagnostics("m.py", "pyright", &diagnostics, 2);
    assert_eq!(
        text,
        "Diagnostics for m.py (pyright): 2 error(s), 1 other(s)\n  m.py:5:3: error: bad type [reportX]\n  m.py:10:1: error: second\n  … and 1 more"
    );
    assert_eq!(
        render_diagnostics("m.py", "pyright", &[], 2),
        "Diagnostics for m.py (pyright): none."
    );
}

#[test]
fn the_lsp_tool_refuses_arguments_that_name_no_position_or_symbol() {
    use codecoder_kernel::Tool as _;
    let dir = tempfile::tempdir().unwrap();
    let intel = std::sync::Arc::new(crate::CodeIntel::new(crate::LspConfig::standard(dir.path())));
    let tool = crate::LspTool::new(intel);
    let check = |args: serde_json::Value| tool.check(&args);
    assert_eq!(
        check(json!({ "operation": "workspaceSymbol" })),
        Err("workspaceSymbol needs `symbol` (the name to search for)".to_owned())
    );
    assert_eq!(
        check(json!({ "operation": "documentSymbol" })),
        Err("documentSymbol needs `path`".to_owned())
    );
    assert_eq!(
        check(json!({ "operation": "definition", "path": "a.py", "line": 3 })),
        Err("give `line` and `column` together".to_owned())
    );
    assert_eq!(
        check(json!({ "operation": "references", "line": 3, "column": 1 })),
        Err("a position needs `path` with `line` and `column`".to_owned())
    );
    assert_eq!(
        check(json!({ "operation": "hover", "path": "a.py" })),
        Err("hover needs `path`, `line` and `column`, or `symbol`".to_owned())
    );
    assert_eq!(check(json!({ "operation": "definition", "symbol": "greet" })), Ok(()));
    assert_eq!(
        check(json!({ "operation": "incomingCalls", "path": "a.py", "line": 1, "column": 5 })),
        Ok(())
    );
    assert_eq!(check(json!({ "operation": "workspaceSymbol", "symbol": "greet" })), Ok(()));
}

#[test]
fn a_file_no_server_serves_costs_nothing_and_says_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let intel = crate::CodeIntel::new(crate::LspConfig::standard(dir.path()));
    let file = dir.path().join("notes.txt");
    fs_err::write(&file, "x").unwrap();
    assert_eq!(intel.after_edit(&[file, dir.path().join("deleted.py")]), "");
    // Nothing was started for it.
    assert!(intel.states().iter().all(|(_, state)| !matches!(state, crate::ServerState::Running)));
}

/// A language server in Python: answers `initialize`; on a document's open or change it
/// publishes one warning and one error (`publish`; `silent`: on open only), or exits (`crash`).
const FAKE_SERVER: &str = r#"
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
mode = sys.argv[1]
while True:
    message = read()
    method = message.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {}}})
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": message["id"], "result": None})
    elif method in ("textDocument/didOpen", "textDocument/didChange"):
        if mode == "silent" and method == "textDocument/didChange":
            continue
        if mode == "crash":
            sys.exit(3)
        document = message["params"]["textDocument"]
        at = lambda line: {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 1}}
        send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {
            "uri": document["uri"], "version": document["version"],
            "diagnostics": [
                {"range": at(0), "severity": 2, "message": "unused"},
                {"range": at(1), "severity": 1, "message": "broken", "code": "E1"}]}})
"#;

fn fake_intel(dir: &Path, mode: &str) -> crate::CodeIntel {
    let script = dir.join("fake_server.py");
    fs_err::write(&script, FAKE_SERVER).unwrap();
    let mut config = crate::LspConfig::standard(dir);
    // Only the silent server runs into the wait; the others end it early, however loaded the
    // machine is.
    config.diagnostics_wait =
        std::time::Duration::from_millis(if mode == "silent" { 300 } else { 30_000 });

    config.servers = vec![crate::ServerConfig {
        name: "fake".to_owned(),
        command: "python3".to_owned(),
        args: vec![script.to_string_lossy().into_owned(), mode.to_owned()],
        extensions: vec!["fk".to_owned()],
        root_markers: Vec::new(),
        env: Vec::new(),
        initialization_options: None,
        configured: true,
    }];
    crate::CodeIntel::new(config)
}

#[test]
fn a_fake_server_s_diagnostics_join_the_edit_errors_first() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let intel = fake_intel(&root, "publish");
    let file = root.join("a.fk");
    fs_err::write(&file, "one\ntwo\n").unwrap();
    let expected = "Diagnostics for a.fk (fake): 1 error(s), 1 other(s)\n  a.fk:2:1: error: broken [E1]\n  a.fk:1:1: warning: unused";
    assert_eq!(intel.after_edit(std::slice::from_ref(&file)), expected);
    // The second edit is a change of the open document, answered the same way.
    assert_eq!(intel.after_edit(std::slice::from_ref(&file)), expected);
}

#[test]
fn a_silent_server_costs_the_wait_then_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let intel = fake_intel(&root, "silent");
    let file = root.join("a.fk");
    fs_err::write(&file, "one\n").unwrap();
    // The first file waits for the server's first analysis (the start's bound), which comes.
    assert!(intel.after_edit(std::slice::from_ref(&file)).contains("1 error(s)"));
    assert_eq!(
        intel.after_edit(std::slice::from_ref(&file)),
        "Diagnostics for a.fk: fake published none within 300 ms."
    );
}

#[test]
fn a_server_that_crashes_is_a_note_and_is_not_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let intel = fake_intel(&root, "crash");
    let file = root.join("a.fk");
    fs_err::write(&file, "one\n").unwrap();
    assert_eq!(
        intel.after_edit(std::slice::from_ref(&file)),
        "Diagnostics for a.fk: unavailable (fake exited)."
    );
    assert_eq!(
        intel.after_edit(std::slice::from_ref(&file)),
        "Diagnostics for a.fk: unavailable (fake exited; it is not restarted in this session)."
    );
}

#[test]
fn a_rustup_proxy_counts_only_when_a_toolchain_has_the_component() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let (bin, home) = (dir.path().join("bin"), dir.path().join("rustup"));
    let toolchain = home.join("toolchains/stable/bin");
    fs_err::create_dir_all(&bin).unwrap();
    fs_err::create_dir_all(&toolchain).unwrap();
    fs_err::write(bin.join("rustup"), "").unwrap();
    std::os::unix::fs::symlink("rustup", bin.join("rust-analyzer")).unwrap();
    let proxy = bin.join("rust-analyzer");
    assert!(crate::is_idle_rustup_proxy(&proxy, "rust-analyzer", Some(&home)));
    let component = toolchain.join("rust-analyzer");
    fs_err::write(&component, "").unwrap();
    fs_err::set_permissions(&component, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(!crate::is_idle_rustup_proxy(&proxy, "rust-analyzer", Some(&home)));
    // Not a proxy: a binary of its own.
    assert!(!crate::is_idle_rustup_proxy(&component, "rust-analyzer", Some(&home)));
}
