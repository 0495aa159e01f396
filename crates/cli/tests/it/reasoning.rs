//! Reasoning controls and non-streaming servers end to end: the real binary against the fake
//! model server. The effort reaches each API's body (and only for models that reason); an
//! Anthropic thinking block goes back with its signature unchanged (a redacted one with its
//! data) and the log rebuilds them;
//! `stream = false` and the automatic fallback after a refused stream with tools.

use std::path::Path;

use codecoder_test_support::{FakeModelServer, Reply, Script};
use serde_json::json;

use crate::exec::{Run, openai_env};
use crate::{stderr, stdout};

fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines().map(|line| serde_json::from_str(line).expect("each line is JSON")).collect()
}

#[test]
fn the_effort_reaches_each_api_body() {
    let cases = [
        ("openai", "gpt-5", "/reasoning", json!({"effort": "high", "summary": "concise"})),
        ("openai-chat", "gpt-5", "/reasoning_effort", json!("high")),
        (
            "anthropic",
            "claude-sonnet-4-5",
            "/thinking",
            json!({"type": "enabled", "budget_tokens": 24_000}),
        ),
        ("anthropic", "claude-opus-4-6", "/output_config", json!({"effort": "high"})),
    ];
    for (provider, model, pointer, expected) in cases {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let server = FakeModelServer::start(Script::new().reply(Reply::text("ok"))).unwrap();
        let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
        let out = run.run(
            &[
                "exec",
                "--provider",
                provider,
                "-m",
                model,
                "-c",
                "model_reasoning_effort=\"high\"",
                "-c",
                "model_reasoning_summary=\"concise\"",
                "hi",
            ],
            "",
        );
        assert!(out.status.success(), "{provider} {model}: {}", stderr(&out));
        let body = &server.requests()[0].body;
        assert_eq!(body.pointer(pointer), Some(&expected), "{provider} {model}: {body}");
        if provider == "openai" {
            assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        }
    }
}

#[test]
fn an_effort_for_a_model_that_does_not_reason_is_not_sent_and_says_so() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let server = FakeModelServer::start(Script::new().reply(Reply::text("ok"))).unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let out = run.run(&["exec", "-m", "gpt-4.1", "-c", "model_reasoning_effort=\"low\"", "hi"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("does not reason"), "{}", stderr(&out));
    assert!(server.requests()[0].body.get("reasoning").is_none());
}

#[test]
fn an_anthropic_thinking_block_goes_back_unchanged_and_the_log_rebuilds_it() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("notes.txt"), "remember the milk\n").unwrap();
    let signature = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+/==";
    let server = FakeModelServer::start(
        Script::new()
            .reply(
                Reply::tool_call("toolu_1", "read_file", json!({"path": "notes.txt"}))
                    .reasoning("I should read the notes first.")
                    .reasoning_chunks(3)
                    .signature(signature)
                    .redacted_thinking("EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw=="),
            )
            .reply(Reply::text("It says to remember the milk.")),
    )
    .unwrap();
    let run = Run { home: home.path(), cwd: cwd.path(), env: openai_env(&server) };
    let out = run.run(
        &[
            "exec",
            "--json",
            "--provider",
            "anthropic",
            "-m",
            "claude-sonnet-4-5",
            "-c",
            "model_reasoning_effort=\"medium\"",
            "what do my notes say?",
        ],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = json_lines(&stdout(&out));
    let reasoning: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["type"] == "item.completed" && l["item"]["type"] == "reasoning")
        .collect();
    assert_eq!(reasoning.len(), 1, "{lines:?}");
    assert_eq!(reasoning[0]["item"]["text"], "I should read the notes first.");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let assistant = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .cloned()
        .expect("the first answer goes back");
    assert_eq!(
        assistant["content"][0],
        json!({"type": "thinking", "thinking": "I should read the notes first.", "signature": signature}),
        "the thinking block goes back first, with its signature, unchanged"
    );
    assert_eq!(
        assistant["content"][1],
        json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw=="}),
        "the redacted block follows as its own block"
    );
    assert!(requests[1].raw_body.contains(signature), "byte-identical in the body");
    assert_eq!(requests[1].body["thinking"], json!({"type": "enabled", "budget_tokens": 10_000}));

    // The log keeps the block: the second request rebuilds byte for byte.
    let thread = lines[0]["thread_id"].as_str().unwrap();
    let shown = run.run(&["sessions", "show", thread, "--request", "2"], "");
    assert!(shown.status.success(), "{}", stderr(&shown));
    assert_eq!(stdout(&shown), requests[1].raw_body);
}

fn write_local_provider(home: &Path, server: &FakeModelServer, stream: Option<bool>) {
    let stream = stream.map(|s| format!("stream = {s}\n")).unwrap_or_default();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model = \"local-model\"\nmodel_provider = \"local\"\n[model_providers.local]\nbase_url = \"{}/v1\"\nwire_api = \"chat\"\n{stream}",
            server.base_url()
        ),
    )
    .unwrap();
}

#[test]
fn stream_false_sends_whole_requests_and_runs_tools() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("notes.txt"), "buy bread\n").unwrap();
    let server = FakeModelServer::start(
        Script::new()
            .reply(
                Reply::tool_call("call_1", "read_file", json!({"path": "notes.txt"}))
                    .reasoning("look"),
            )
            .reply(Reply::text("Buy bread.")),
    )
    .unwrap();
    write_local_provider(home.path(), &server, Some(false));
    let run = Run { home: home.path(), cwd: cwd.path(), env: Vec::new() };
    let out = run.run(&["exec", "--json", "read my notes"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = json_lines(&stdout(&out));
    assert!(lines.iter().any(|l| l["item"]["type"] == "reasoning" && l["item"]["text"] == "look"));
    assert!(
        lines
            .iter()
            .any(|l| l["item"]["type"] == "agent_message" && l["item"]["text"] == "Buy bread.")
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.body["stream"], false);
    }
    let tool_message =
        requests[1].body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool");
    assert!(tool_message.unwrap()["content"].as_str().unwrap().contains("buy bread"));
}

#[test]
fn a_server_that_refuses_to_stream_tools_is_asked_again_without_streaming() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let server = FakeModelServer::start(
        Script::new().refuse_streamed_tools().reply(Reply::text("Hello from a plain answer.")),
    )
    .unwrap();
    write_local_provider(home.path(), &server, None);
    let run = Run { home: home.path(), cwd: cwd.path(), env: Vec::new() };
    let out = run.run(&["exec", "hi"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Hello from a plain answer.\n");
    let err = stderr(&out);
    assert_eq!(err.matches("cannot stream tool calls").count(), 1, "{err}");
    assert!(err.contains(codecoder_test_support::STREAM_TOOLS_REFUSAL), "{err}");
    let streams: Vec<bool> =
        server.requests().iter().map(|r| r.body["stream"].as_bool().unwrap()).collect();
    assert_eq!(streams, [true, false]);
}

#[test]
fn doctor_and_help_name_the_reasoning_and_streaming_settings() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let server = FakeModelServer::start(Script::new()).unwrap();
    write_local_provider(home.path(), &server, Some(false));
    let run = Run { home: home.path(), cwd: cwd.path(), env: Vec::new() };
    let out = run.run(&["-c", "model_reasoning_effort=\"medium\"", "doctor"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("provider: local (chat API, stream = false"), "{text}");
    assert!(text.contains("reasoning: effort medium"), "{text}");
    let out = run.run(&["exec", "--help"], "");
    assert!(stdout(&out).contains("model_reasoning_effort"), "{}", stdout(&out));
}
