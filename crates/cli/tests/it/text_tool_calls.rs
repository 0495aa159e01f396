//! Tool calls a local model writes as text, end to end: a Chat provider with
//! `tool_call_format = "hermes"` whose model answers `<tool_call>{…}</tool_call>` gets the call
//! run (the file is written) and the next request carries its result as a proper tool message;
//! a call that does not parse is shown as the text it was, with a note in the session log.

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::Value;

use crate::local::LocalHome;
use crate::{stderr, stdout};

/// A home whose `local` provider parses tool calls written as text in `format` (line 7).
fn local_home(base_url: &str, format: &str) -> LocalHome {
    LocalHome::new(
        base_url,
        "local-model",
        &format!("name = \"Local server\"\ntool_call_format = \"{format}\"\n"),
    )
}

fn records(local: &LocalHome) -> Vec<Value> {
    std::fs::read_to_string(local.session_log())
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn a_hermes_call_in_the_text_runs_and_its_result_goes_back() {
    let server = FakeModelServer::start(
        Script::new()
            .reply(
                Reply::text(
                    "Writing it.\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"hello.txt\", \"content\": \"hi there\\n\"}}\n</tool_call>",
                )
                .chunks(6),
            )
            .reply(Reply::text("Done.")),
    )
    .unwrap();
    let local = local_home(&server.base_url(), "hermes");
    let (cwd, run) = (&local.cwd, local.run());
    let out = run.run(&["-a", "never", "-s", "workspace-write", "exec", "write hello.txt"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(cwd.path().join("hello.txt")).unwrap(), "hi there\n");
    let shown = stdout(&out);
    assert!(!shown.contains("<tool_call>"), "the call is not shown as text: {shown}");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap();
    let assistant = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(assistant["content"], "Writing it.\n");
    let call = &assistant["tool_calls"][0];
    assert_eq!(call["function"]["name"], "write_file");
    let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["tool_call_id"], call["id"]);
    assert!(!tool["content"].as_str().unwrap().is_empty(), "{tool}");
    assert!(
        !records(&local).iter().any(|r| r["type"] == "error"),
        "no note for a call that parsed"
    );
    let out = run.run(&["doctor"], "");
    assert!(
        stdout(&out).contains("tool calls written as text: parsed as hermes (tool_call_format"),
        "doctor shows the setting took: {}",
        stdout(&out)
    );
}

#[test]
fn a_malformed_call_stays_text_with_a_note_in_the_session_log() {
    let broken = "<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": </tool_call>";
    let server = FakeModelServer::start(Script::new().reply(Reply::text(broken))).unwrap();
    let local = local_home(&server.base_url(), "hermes");
    let run = local.run();
    let out = run.run(&["-a", "never", "-s", "workspace-write", "exec", "write hello.txt"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{broken}\n"));
    assert!(stderr(&out).contains("kept as text"), "{}", stderr(&out));
    assert_eq!(server.requests().len(), 1, "no call ran, so no second request");
    let notes: Vec<String> = records(&local)
        .iter()
        .filter(|r| r["type"] == "error")
        .map(|r| r["message"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("looks like a hermes tool call") && notes[0].contains("bad JSON"));
    let log = local.session_log();
    let out = run.run(&["sessions", "validate", log.to_str().unwrap()], "");
    assert!(out.status.success(), "the log with its note is valid: {}", stdout(&out));
}

#[test]
fn an_unknown_format_is_refused_with_the_file_and_line() {
    let local = local_home("http://127.0.0.1:9", "xml");
    let run = local.run();
    let out = run.run(&["exec", "hi"], "");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("config.toml:7"), "{err}");
    assert!(err.contains("unknown variant `xml`"), "{err}");
}
