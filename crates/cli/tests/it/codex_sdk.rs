//! codex's TypeScript SDK (`@openai/codex-sdk`, installed by `.ci/run` into the directory
//! `CODECODER_TEST_NPM` names) drives `codecoder exec` unchanged through `codexPathOverride`: its
//! flags (`--experimental-json`, `--skip-git-repo-check`, `--config`, `resume ID` with the prompt
//! on stdin), its key (`CODEX_API_KEY`) and base URL (`openai_base_url`), and its parsing of the
//! JSONL events (items, final response, usage, the thread id for resume).

use std::path::Path;
use std::process::Command;

use codecoder_test_support::{FakeModelServer, Reply, Script, Usage};
use serde_json::{Value, json};

use crate::{stderr, stdout};

#[test]
fn the_codex_sdk_runs_and_resumes_a_thread() {
    let Some(npm) = crate::npm_dir() else { return };
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(Reply::tool_call(
                "call_1",
                "run_command",
                json!({"command": "printf 'from the sdk' > out.txt"}),
            ))
            .reply(Reply::text("made out.txt").usage(Usage::tokens(1200, 30).cached(1000)))
            .reply(Reply::text("again done").usage(Usage::tokens(1500, 7))),
    )
    .unwrap();

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/codex_sdk.mjs");
    let out = Command::new("node")
        .arg(script)
        .env("CODECODER_TEST_NPM", &npm)
        .env("BIN", env!("CARGO_BIN_EXE_codecoder"))
        .env("URL", server.base_url())
        .env("WS", ws.path())
        .env("HOME_DIR", home.path())
        .output()
        .expect("run node");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let lines: Vec<Value> =
        stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{}", stdout(&out));

    // The first turn: the command ran in the working directory, and the SDK saw its item, the
    // final response and the usage.
    assert_eq!(std::fs::read_to_string(ws.path().join("out.txt")).unwrap(), "from the sdk");
    let first = &lines[0];
    let items = first["items"].as_array().unwrap();
    let command = items.iter().find(|i| i["type"] == "command_execution").expect("command item");
    assert_eq!(command["command"], "printf 'from the sdk' > out.txt");
    assert_eq!(command["status"], "completed");
    assert_eq!(command["exit_code"], 0);
    assert_eq!(first["finalResponse"], "made out.txt");
    assert_eq!(first["usage"]["input_tokens"], 1200);
    assert_eq!(first["usage"]["cached_input_tokens"], 1000);
    assert_eq!(first["usage"]["output_tokens"], 30);

    // The thread id is a codecoder session, and resuming it carried the history.
    let id = first["id"].as_str().expect("thread id");
    assert_eq!(lines[1]["id"], id);
    let types: Vec<&str> =
        lines[1]["types"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"thread.started"), "{types:?}");
    assert!(types.contains(&"turn.started"), "{types:?}");
    assert_eq!(types.last(), Some(&"turn.completed"), "{types:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let last = requests[2].raw_body.clone();
    for earlier in ["create out.txt", "made out.txt", "and again"] {
        assert!(last.contains(earlier), "{earlier} missing from the resumed request: {last}");
    }
    for request in &requests {
        assert_eq!(request.header("authorization"), Some("Bearer sk-from-the-sdk"));
        assert_eq!(request.path, "/v1/responses");
    }
    let list = crate::codecoder(home.path(), &["sessions", "list", "--json"]);
    assert!(stdout(&list).contains(id), "{}{}", stdout(&list), stderr(&list));
}
