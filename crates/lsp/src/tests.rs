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

/// A language server in Python: answers `initialize` (`gated`: once a file `go` exists beside
/// the script; `mute`: never); on a document's open or change it publishes one warning and one
/// error (`publish`, `gated`; `silent`: on open only), or exits (`crash`).
const FAKE_SERVER: &str = r#"
import json, os, sys, time
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
        if mode == "mute":
            continue
        while mode == "gated" and not os.path.exists(os.path.join(os.path.dirname(sys.argv[0]), "go")):
            time.sleep(0.02)
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
    // Only the silent and the gated servers run into the wait; the others end it early,
    // however loaded the machine is.
    config.diagnostics_wait = std::time::Duration::from_millis(match mode {
        "silent" | "gated" => 300,
        _ => 30_000,
    });
    if mode == "mute" {
        config.start_timeout = std::time::Duration::from_millis(200);
    }

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
    // Read first: the server starts and gets the file; its publish for the open comes.
    intel.touch(std::slice::from_ref(&file), true);
    let client = running_client(&intel);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    assert!(client.wait_published(&file, 0, 1, deadline).is_some());
    assert_eq!(
        intel.after_edit(std::slice::from_ref(&file)),
        "Diagnostics for a.fk: fake published none within 300 ms."
    );
}

/// The one client `intel` started.
fn running_client(intel: &crate::CodeIntel) -> std::sync::Arc<crate::client::Client> {
    let slots = intel.slots.lock().unwrap();
    let mut clients = slots.values().filter_map(|slot| match slot {
        crate::Slot::Running(client) => Some(std::sync::Arc::clone(client)),
        crate::Slot::Failed(_) => None,
    });
    let client = clients.next().expect("a server was started");
    assert!(clients.next().is_none());
    client
}

fn state_of(intel: &crate::CodeIntel) -> crate::ServerState {
    intel.states().into_iter().next().unwrap().1
}

#[test]
fn an_edit_does_not_wait_past_its_bound_for_a_server_still_starting() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let intel = fake_intel(&root, "gated");
    let file = root.join("a.fk");
    fs_err::write(&file, "one\ntwo\n").unwrap();
    // The server cannot answer `initialize` before `go` exists: the edit returns at its bound
    // with the note, and the server goes on starting.
    assert_eq!(
        intel.after_edit(std::slice::from_ref(&file)),
        "Diagnostics for a.fk: fake is starting; its diagnostics come with later edits."
    );
    assert_eq!(state_of(&intel), crate::ServerState::Starting);
    fs_err::write(root.join("go"), "").unwrap();
    // Once it answers, the open and the changes held meanwhile reach it: a later edit gets the
    // diagnostics (each edit is bounded by the wait, so a loaded machine may take a few).
    let mut last = String::new();
    for _ in 0..100 {
        last = intel.after_edit(std::slice::from_ref(&file));
        if last.contains("1 error(s)") {
            break;
        }
        assert!(
            last.ends_with("is starting; its diagnostics come with later edits.")
                || last.contains("published none"),
            "{last}"
        );
    }
    assert!(last.starts_with("Diagnostics for a.fk (fake): 1 error(s), 1 other(s)"), "{last}");
    assert_eq!(state_of(&intel), crate::ServerState::Running);
}

#[test]
fn a_server_that_never_answers_initialize_is_cut_at_its_start_bound_not_the_edit_s_wait() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    // The edit would wait 30 s for diagnostics; the server's start bound is 200 ms.
    let intel = fake_intel(&root, "mute");
    let file = root.join("a.fk");
    fs_err::write(&file, "one\n").unwrap();
    let failed = "Diagnostics for a.fk: unavailable (fake did not start: fake did not answer initialize within 200 ms).";
    assert_eq!(intel.after_edit(std::slice::from_ref(&file)), failed);
    assert!(matches!(state_of(&intel), crate::ServerState::Failed(_)));
    // Not tried again: the same note at once.
    assert_eq!(intel.after_edit(std::slice::from_ref(&file)), failed);
}

#[test]
fn a_search_starts_the_server_without_opening_the_files_a_read_opens_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let intel = fake_intel(&root, "publish");
    let (found, read) = (root.join("found.fk"), root.join("read.fk"));
    fs_err::write(&found, "x\n").unwrap();
    fs_err::write(&read, "x\n").unwrap();
    // Files of no server's language, or that do not exist, start nothing.
    intel.touch(&[root.join("notes.txt"), root.join("missing.txt")], false);
    assert!(intel.slots.lock().unwrap().is_empty());
    intel.touch(&[found.clone(), root.join("notes.txt")], false);
    let client = running_client(&intel);
    assert!(!client.is_open(&found));
    intel.touch(std::slice::from_ref(&read), true);
    assert!(client.is_open(&read));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    assert!(client.wait_published(&read, 0, 1, deadline).is_some());
    assert!(client.is_ready());
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
