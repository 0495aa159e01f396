//! Unit tests of the text tool-call machine: each format, several calls, text around them,
//! every split of the text into two pieces, and text that only looks like a call.

use codecoder_kernel::ResponseEvent;
use codecoder_protocol::{StopReason, ToolCallFormat, ToolCallId};
use serde_json::{Value, json};

use super::{CallIds, Filter, Format, TextCall, TextCalls};

fn tools() -> Vec<String> {
    vec!["write_file".to_owned(), "read_file".to_owned()]
}

/// What a whole response gives: everything shown, the calls (arguments as values) and notes.
#[derive(Debug, PartialEq)]
struct Outcome {
    text: String,
    calls: Vec<(String, Value)>,
    notes: usize,
}

fn run(format: Format, pieces: &[&str]) -> Outcome {
    let mut machine = TextCalls::new(format, tools());
    let mut text = String::new();
    for piece in pieces {
        text.push_str(&machine.push(piece));
    }
    let finish = machine.finish();
    text.push_str(&finish.text);
    let calls = finish
        .calls
        .into_iter()
        .map(|TextCall { name, arguments }| {
            let arguments: Value = serde_json::from_str(&arguments).expect("arguments are JSON");
            (name, arguments)
        })
        .collect();
    Outcome { text, calls, notes: finish.notes.len() }
}

/// Runs `text` whole and split at every char boundary; all must agree. Also checks that no
/// piece shown before the end contains the start of a call that was then made.
fn check(format: Format, text: &str) -> Outcome {
    let whole = run(format, &[text]);
    for at in (0..=text.len()).filter(|&at| text.is_char_boundary(at)) {
        let split = run(format, &[&text[..at], &text[at..]]);
        assert_eq!(split, whole, "split at {at} of {text:?}");
    }
    // One byte (char) at a time, as the slowest stream would give it.
    let chars: Vec<String> = text.chars().map(String::from).collect();
    let pieces: Vec<&str> = chars.iter().map(String::as_str).collect();
    assert_eq!(run(format, &pieces), whole, "char by char: {text:?}");
    whole
}

fn call(name: &str, args: Value) -> (String, Value) {
    (name.to_owned(), args)
}

#[test]
fn hermes_one_call_becomes_a_call() {
    let out = check(
        Format::Hermes,
        r#"<tool_call>{"name": "write_file", "arguments": {"path": "a.txt", "content": "hi"}}</tool_call>"#,
    );
    assert_eq!(
        out,
        Outcome {
            text: String::new(),
            calls: vec![call("write_file", json!({"path": "a.txt", "content": "hi"}))],
            notes: 0
        }
    );
}

#[test]
fn hermes_several_calls_with_text_before_and_after() {
    let out = check(
        Format::Hermes,
        "I will write both.\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": \"{\\\"path\\\": \\\"a\\\"}\"}\n</tool_call>\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}</tool_call>\nDone.",
    );
    assert_eq!(out.text, "I will write both.\n\nDone.");
    assert_eq!(
        out.calls,
        vec![call("write_file", json!({"path": "a"})), call("read_file", json!({"path": "b"}))]
    );
    assert_eq!(out.notes, 0);
}

#[test]
fn hermes_without_closing_tag_runs_to_the_end() {
    let out = check(Format::Hermes, r#"<tool_call>{"name": "read_file", "arguments": {}}"#);
    assert_eq!(out.calls, vec![call("read_file", json!({}))]);
}

#[test]
fn hermes_bad_json_stays_text_with_a_note() {
    let text = r#"Sure. <tool_call>{"name": "write_file", "arguments": {"path": </tool_call>"#;
    let out = check(Format::Hermes, text);
    assert_eq!(out, Outcome { text: text.to_owned(), calls: vec![], notes: 1 });
}

#[test]
fn hermes_unknown_tool_stays_text_with_a_note() {
    let text = r#"<tool_call>{"name": "launch_rockets", "arguments": {}}</tool_call>"#;
    let out = check(Format::Hermes, text);
    assert_eq!(out, Outcome { text: text.to_owned(), calls: vec![], notes: 1 });
}

#[test]
fn hermes_missing_name_stays_text_with_a_note() {
    let text = r#"<tool_call>{"arguments": {"path": "a"}}</tool_call>"#;
    let out = check(Format::Hermes, text);
    assert_eq!(out, Outcome { text: text.to_owned(), calls: vec![], notes: 1 });
}

#[test]
fn prose_with_marker_like_text_is_shown_as_it_is() {
    // Almost-markers are shown; a `<` that turns out not to start a marker is not lost.
    let text = "Compare a < b and <tool and <tool_cal, then stop.";
    let out = check(Format::Hermes, text);
    assert_eq!(out, Outcome { text: text.to_owned(), calls: vec![], notes: 0 });
    // The marker's own words in prose: held, then given back as text with a note.
    let text = "The template wraps calls in <tool_call> tags.";
    let out = check(Format::Hermes, text);
    assert_eq!(out, Outcome { text: text.to_owned(), calls: vec![], notes: 1 });
}

#[test]
fn text_is_shown_before_the_end_but_not_a_marker() {
    let mut machine = TextCalls::new(Format::Hermes, tools());
    assert_eq!(machine.push("Writing it <tool"), "Writing it ");
    assert_eq!(machine.push("_call>{\"name\": \"read_file\"}"), "");
    assert_eq!(machine.push("</tool_call>"), "");
    let finish = machine.finish();
    assert_eq!(finish.calls.len(), 1);
    assert_eq!(finish.text, "");
}

#[test]
fn llama3_python_tag_calls_separated_by_semicolons() {
    let out = check(
        Format::Llama3,
        r#"<|python_tag|>{"name": "read_file", "parameters": {"path": "a; b"}}; {"name": "write_file", "arguments": {"path": "c"}}<|eom_id|>"#,
    );
    assert_eq!(
        out.calls,
        vec![call("read_file", json!({"path": "a; b"})), call("write_file", json!({"path": "c"}))]
    );
    assert_eq!((out.text.as_str(), out.notes), ("", 0));
}

#[test]
fn llama3_bare_json_message_is_a_call() {
    let out = check(
        Format::Llama3,
        "  {\"name\": \"write_file\", \"parameters\": {\"path\": \"x\", \"content\": \"y\"}}",
    );
    assert_eq!(out.calls, vec![call("write_file", json!({"path": "x", "content": "y"}))]);
    assert_eq!(out.text, "");
}

#[test]
fn llama3_json_answer_that_is_no_call_stays_text_quietly() {
    let text = r#"{"answer": 42}"#;
    assert_eq!(
        check(Format::Llama3, text),
        Outcome { text: text.to_owned(), calls: vec![], notes: 0 }
    );
    // Named like a call but for a tool that was not offered: kept, with a note.
    let text = r#"{"name": "rm_rf", "parameters": {}}"#;
    assert_eq!(
        check(Format::Llama3, text),
        Outcome { text: text.to_owned(), calls: vec![], notes: 1 }
    );
}

#[test]
fn llama3_json_after_prose_is_prose() {
    let text = r#"Here is JSON: {"name": "read_file", "parameters": {}}"#;
    assert_eq!(
        check(Format::Llama3, text),
        Outcome { text: text.to_owned(), calls: vec![], notes: 0 }
    );
}

#[test]
fn llama3_bad_json_after_tag_stays_text_with_a_note() {
    let text = r#"<|python_tag|>{"name": "read_file", "parameters": {"#;
    assert_eq!(
        check(Format::Llama3, text),
        Outcome { text: text.to_owned(), calls: vec![], notes: 1 }
    );
}

#[test]
fn mistral_array_form() {
    let out = check(
        Format::Mistral,
        r#"[TOOL_CALLS] [{"name": "read_file", "arguments": {"path": "a"}, "id": "abc123def"}, {"name": "write_file", "arguments": {"path": "b", "content": "c"}}]</s>"#,
    );
    assert_eq!(
        out,
        Outcome {
            text: String::new(),
            calls: vec![
                call("read_file", json!({"path": "a"})),
                call("write_file", json!({"path": "b", "content": "c"}))
            ],
            notes: 0
        }
    );
}

#[test]
fn mistral_v11_form_repeated() {
    let out = check(
        Format::Mistral,
        r#"Reading. [TOOL_CALLS]read_file[ARGS]{"path": "a"}[TOOL_CALLS]write_file[CALL_ID]x1[ARGS]{"path": "b"}"#,
    );
    assert_eq!(out.text, "Reading. ");
    assert_eq!(
        out.calls,
        vec![call("read_file", json!({"path": "a"})), call("write_file", json!({"path": "b"}))]
    );
}

#[test]
fn mistral_malformed_and_unknown_stay_text() {
    for text in [
        r#"[TOOL_CALLS] [{"name": "read_file", "arguments": {"#,
        r#"[TOOL_CALLS] [{"name": "nope", "arguments": {}}]"#,
        r#"[TOOL_CALLS]read_file{"path": "a"}"#,
    ] {
        assert_eq!(
            check(Format::Mistral, text),
            Outcome { text: text.to_owned(), calls: vec![], notes: 1 },
            "{text}"
        );
    }
}

#[test]
fn multibyte_text_is_split_only_at_char_boundaries() {
    let text = "Ça marche — <tool_call>{\"name\": \"write_file\", \"arguments\": {\"content\": \"é<\"}}</tool_call>";
    let out = check(Format::Hermes, text);
    assert_eq!(out.text, "Ça marche — ");
    assert_eq!(out.calls, vec![call("write_file", json!({"content": "é<"}))]);
}

#[test]
fn formats_resolve_from_the_setting_and_the_catalog() {
    assert_eq!(Format::resolve(ToolCallFormat::Off, "qwen2.5-coder:7b"), None);
    assert_eq!(Format::resolve(ToolCallFormat::Qwen, "anything"), Some(Format::Hermes));
    let auto = |model| Format::resolve(ToolCallFormat::Auto, model);
    assert_eq!(auto("qwen2.5-coder:7b"), Some(Format::Hermes));
    assert_eq!(auto("Qwen/Qwen3-8B"), Some(Format::Hermes));
    assert_eq!(auto("qwq:32b"), Some(Format::Hermes));
    assert_eq!(auto("NousResearch/Hermes-3-Llama-3.1-8B"), Some(Format::Hermes));
    assert_eq!(auto("llama3.1:8b"), Some(Format::Llama3));
    assert_eq!(auto("/models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"), Some(Format::Llama3));
    assert_eq!(auto("hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M"), Some(Format::Llama3));
    assert_eq!(auto("mistral-nemo:12b"), Some(Format::Mistral));
    assert_eq!(auto("Mixtral-8x7B-Instruct-v0.1.Q4_K_M.gguf"), Some(Format::Mistral));
    assert_eq!(auto("ministral-8b"), Some(Format::Mistral));
    assert_eq!(auto("codestral:22b"), Some(Format::Mistral));
    assert_eq!(auto("smollm2-135m-instruct"), None);
    assert_eq!(auto("gpt-5"), None);
}

/// The events a `Filter` gives for `events`.
fn filtered(events: Vec<ResponseEvent>) -> Vec<ResponseEvent> {
    filtered_with(&CallIds::new(0xab), events)
}

fn filtered_with(ids: &CallIds, events: Vec<ResponseEvent>) -> Vec<ResponseEvent> {
    let mut filter = Filter::new(TextCalls::new(Format::Hermes, tools()), ids.clone());
    let mut out = Vec::new();
    for event in events {
        filter.on_event(event, &mut |event| out.push(event));
    }
    out
}

#[test]
fn filter_turns_held_text_into_call_events_and_tool_use() {
    let out = filtered(vec![
        ResponseEvent::TextDelta("Ok. <tool_".to_owned()),
        ResponseEvent::TextDelta(
            "call>{\"name\": \"read_file\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}</tool_call>".to_owned(),
        ),
        ResponseEvent::Completed { stop_reason: StopReason::EndTurn },
    ]);
    let id0 = ToolCallId::new("call_text_000000ab_0");
    let id1 = ToolCallId::new("call_text_000000ab_1");
    assert_eq!(
        out,
        vec![
            ResponseEvent::TextDelta("Ok. ".to_owned()),
            ResponseEvent::ToolCallStart { id: id0.clone(), name: "read_file".to_owned() },
            ResponseEvent::ToolCallArgsDelta { id: id0.clone(), delta: "{}".to_owned() },
            ResponseEvent::ToolCallDone { id: id0 },
            ResponseEvent::ToolCallStart { id: id1.clone(), name: "read_file".to_owned() },
            ResponseEvent::ToolCallArgsDelta {
                id: id1.clone(),
                delta: r#"{"path":"b"}"#.to_owned()
            },
            ResponseEvent::ToolCallDone { id: id1 },
            ResponseEvent::Completed { stop_reason: StopReason::ToolUse },
        ]
    );
}

#[test]
fn filter_gives_a_failed_call_back_as_text_with_a_warning() {
    let text = r#"<tool_call>{"name": "nope"}</tool_call>"#;
    let out = filtered(vec![
        ResponseEvent::TextDelta(text.to_owned()),
        ResponseEvent::Completed { stop_reason: StopReason::EndTurn },
    ]);
    assert!(
        matches!(&out[0], ResponseEvent::Warning(note) if note.contains("unknown tool `nope`")),
        "{out:?}"
    );
    assert_eq!(
        out[1..],
        [
            ResponseEvent::TextDelta(text.to_owned()),
            ResponseEvent::Completed { stop_reason: StopReason::EndTurn },
        ]
    );
}

#[test]
fn call_ids_go_on_counting_across_the_responses_of_one_client() {
    let ids = CallIds::new(7);
    let response = || {
        vec![
            ResponseEvent::TextDelta(
                "<tool_call>{\"name\": \"read_file\", \"arguments\": {}}</tool_call>".to_owned(),
            ),
            ResponseEvent::Completed { stop_reason: StopReason::EndTurn },
        ]
    };
    let starts = |out: Vec<ResponseEvent>| -> Vec<ToolCallId> {
        out.into_iter()
            .filter_map(|event| match event {
                ResponseEvent::ToolCallStart { id, .. } => Some(id),
                _ => None,
            })
            .collect()
    };
    let first = starts(filtered_with(&ids, response()));
    let second = starts(filtered_with(&ids, response()));
    assert_eq!(first, [ToolCallId::new("call_text_00000007_0")]);
    assert_eq!(second, [ToolCallId::new("call_text_00000007_1")]);
    // Another client (another process resuming the session) draws another tag.
    let other = starts(filtered_with(&CallIds::new(8), response()));
    assert_ne!(other, first);
}
