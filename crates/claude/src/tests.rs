//! Unit tests: the command line, list splitting, the headless-mode test, and the translator's
//! frames.

use codecoder_protocol::{
    AgentEvent, AgentEventKind, CallView, EventSource, SessionId, StepId, ToolCall, ToolCallId,
    TurnId,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::args::{ClaudeMode, InputFormat, OutputFormat, is_headless, parse, split_list};
use crate::translate::Translator;

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn both_token_styles_and_empty_values_parse() {
    let parsed = parse(&strings(&[
        "--output-format=stream-json",
        "--verbose",
        "--input-format",
        "stream-json",
        "--system-prompt",
        "",
        "--tools=",
        "--permission-mode=acceptEdits",
        "--max-turns",
        "3",
        "--allowedTools",
        "Bash(git log:*),Read",
        "--add-dir",
        "/a",
        "--add-dir=/b",
        "--resume=abc",
        "--setting-sources=",
    ]))
    .unwrap();
    assert_eq!(parsed.output, OutputFormat::StreamJson);
    assert_eq!(parsed.input, InputFormat::StreamJson);
    assert_eq!(parsed.system_prompt.as_deref(), Some(""));
    assert_eq!(parsed.tools, Some(Vec::new()));
    assert_eq!(parsed.permission_mode, Some(ClaudeMode::AcceptEdits));
    assert_eq!(parsed.max_turns, Some(3));
    assert_eq!(parsed.allowed_tools, ["Bash(git log:*)", "Read"]);
    assert_eq!(parsed.add_dirs.len(), 2);
    assert_eq!(parsed.resume.as_deref(), Some("abc"));
    assert_eq!(parsed.setting_sources, Some(Vec::new()));
}

#[test]
fn short_flags_are_claudes() {
    let parsed = parse(&strings(&["-p", "-c", "do it"])).unwrap();
    assert!(parsed.print && parsed.continue_session);
    assert_eq!(parsed.prompt.as_deref(), Some("do it"));
    let parsed = parse(&strings(&["-r", "id", "--", "-looks like a flag"])).unwrap();
    assert_eq!(parsed.resume.as_deref(), Some("id"));
    assert_eq!(parsed.prompt.as_deref(), Some("-looks like a flag"));
}

#[test]
fn unknown_and_malformed_flags_are_named() {
    let err = |args: &[&str]| parse(&strings(args)).unwrap_err().0;
    assert!(err(&["--nope"]).contains("--nope"));
    assert!(err(&["--model"]).contains("--model needs a value"));
    assert!(err(&["--verbose=yes"]).contains("takes no value"));
    assert!(err(&["--max-budget-usd", "-1"]).contains("--max-budget-usd"));
    assert!(err(&["--input-format", "xml"]).contains("xml"));
    assert!(err(&["a", "b"]).contains("more than one prompt"));
}

#[test]
fn harmless_flags_are_kept_for_a_note() {
    let parsed = parse(&strings(&["--debug", "--max-thinking-tokens", "9", "--betas=x"])).unwrap();
    assert_eq!(parsed.ignored, ["--debug", "--max-thinking-tokens", "--betas"]);
}

#[test]
fn lists_split_outside_parentheses() {
    assert_eq!(split_list("Bash(git diff:*) Read,Edit"), ["Bash(git diff:*)", "Read", "Edit"]);
    assert_eq!(split_list(" , "), Vec::<String>::new());
}

#[test]
fn headless_mode_is_asked_by_claudes_flags_outside_subcommands() {
    let subs = ["exec", "models"];
    assert!(is_headless(&strings(&["-p", "hi"]), &subs));
    assert!(is_headless(&strings(&["--output-format=json", "hi"]), &subs));
    assert!(is_headless(&strings(&["--input-format", "stream-json"]), &subs));
    assert!(!is_headless(&strings(&["hi"]), &subs));
    assert!(!is_headless(&strings(&["-p", "prof", "models"]), &subs));
    assert!(!is_headless(&strings(&["exec", "--", "-p"]), &subs));
}

fn event(kind: AgentEventKind, subagent: Option<&str>) -> AgentEvent {
    AgentEvent {
        source: EventSource {
            session_id: SessionId::new(),
            subagent_path: subagent.map(|id| vec![ToolCallId::new(id)]).unwrap_or_default(),
        },
        kind,
    }
}

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: ToolCallId::new(id),
        name: "run_command".to_owned(),
        args: json!({"command": "ls", "timeout_ms": 1000}),
    }
}

#[test]
fn a_call_is_announced_once_under_claudes_name_before_its_result() {
    let mut translator = Translator::new("s".to_owned(), "m".to_owned(), false);
    let (turn, step) = (TurnId::new(1), StepId::new(1));
    let started = event(
        AgentEventKind::ToolStarted { turn, step, call: call("c1"), view: CallView::default() },
        None,
    );
    let frames = translator.event(&started);
    assert_eq!(frames.len(), 1);
    let block = &frames[0]["message"]["content"][0];
    assert_eq!(block["type"], "tool_use");
    assert_eq!(block["name"], "Bash");
    assert_eq!(block["input"], json!({"command": "ls", "timeout": 1000}));
    let finished = event(
        AgentEventKind::ToolFinished {
            turn,
            step,
            call_id: ToolCallId::new("c1"),
            call: call("c1"),
            view: CallView::default(),
            result: Err(codecoder_protocol::ToolError::Cancelled),
            mcp_result: None,
        },
        Some("task_1"),
    );
    let frames = translator.event(&finished);
    assert_eq!(frames.len(), 1, "announced already: {frames:?}");
    assert_eq!(frames[0]["type"], "user");
    assert_eq!(frames[0]["parent_tool_use_id"], "task_1");
    assert_eq!(frames[0]["message"]["content"][0]["is_error"], true);
}

#[test]
fn partial_messages_stream_blocks_and_the_text_comes_whole_once() {
    let mut translator = Translator::new("s".to_owned(), "m".to_owned(), true);
    let (turn, step) = (TurnId::new(1), StepId::new(1));
    let mut frames = Vec::new();
    for kind in [
        AgentEventKind::StepStarted { turn, step },
        AgentEventKind::ReasoningDelta { turn, step, delta: "hmm".to_owned() },
        AgentEventKind::TextDelta { turn, step, delta: "he".to_owned() },
        AgentEventKind::TextDelta { turn, step, delta: "llo".to_owned() },
        AgentEventKind::AgentMessage { turn, step, text: "hello".to_owned() },
        AgentEventKind::StepFinished {
            turn,
            step,
            usage: codecoder_protocol::Usage::default(),
            text: "hello".to_owned(),
        },
    ] {
        frames.extend(translator.event(&event(kind, None)));
    }
    let kinds: Vec<String> = frames
        .iter()
        .map(|f| match f["type"].as_str().unwrap() {
            "stream_event" => f["event"]["type"].as_str().unwrap().to_owned(),
            other => other.to_owned(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "assistant",
            "assistant",
            "content_block_stop",
            "message_stop",
        ]
    );
    let texts: Vec<&Value> = frames.iter().filter(|f| f["type"] == "assistant").collect();
    assert_eq!(texts[0]["message"]["content"][0]["thinking"], "hmm");
    assert_eq!(texts[1]["message"]["content"][0]["text"], "hello");
}

#[test]
fn frame_ids_are_distinct_uuids() {
    let mut translator = Translator::new("0190-aa".to_owned(), "m".to_owned(), false);
    let a = translator.uuid();
    let b = translator.uuid();
    assert_ne!(a, b);
    for id in [a, b] {
        let parts: Vec<usize> = id.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12], "{id}");
    }
}
