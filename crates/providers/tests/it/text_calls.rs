//! Tool calls written as text (`tool_call_format`) through real loopback requests: a streamed and
//! a whole Chat answer become the same calls, text before a call is shown and the call's text is
//! not, a call that does not parse stays text with a warning, the calls of one client have
//! distinct ids, and the setting is off by default and ignored by the Responses API.

use codecoder_kernel::ResponseEvent;
use codecoder_protocol::{Message, StopReason, ToolCallFormat, ToolCallId};
use codecoder_providers::WireApi;
use codecoder_test_support::{FakeModelServer, Reply, Script};

use crate::{client, collect, config, request, text_of};

const ANSWER: &str = "I will read it.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_call>";

fn run(api: WireApi, format: ToolCallFormat, stream: bool, text: &str) -> Vec<ResponseEvent> {
    let server = FakeModelServer::start(Script::new().reply(Reply::text(text).chunks(7))).unwrap();
    let mut config = config(&server, api);
    config.tool_call_format = format;
    config.stream = stream;
    collect(&client(config), request(vec![Message::user_text("read notes.txt")]))
}

fn calls_of(events: &[ResponseEvent]) -> Vec<ResponseEvent> {
    events
        .iter()
        .filter(|e| {
            matches!(
                e,
                ResponseEvent::ToolCallStart { .. }
                    | ResponseEvent::ToolCallArgsDelta { .. }
                    | ResponseEvent::ToolCallDone { .. }
                    | ResponseEvent::Completed { .. }
            )
        })
        .cloned()
        .collect()
}

#[test]
fn streamed_and_whole_chat_answers_give_the_same_calls() {
    for stream in [true, false] {
        let events = run(WireApi::Chat, ToolCallFormat::Hermes, stream, ANSWER);
        assert_eq!(text_of(&events), "I will read it.\n", "stream = {stream}");
        let id = first_call_id(&events);
        assert!(id.to_string().starts_with("call_text_") && id.to_string().ends_with("_0"), "{id}");
        assert_eq!(
            calls_of(&events),
            vec![
                ResponseEvent::ToolCallStart { id: id.clone(), name: "read_file".into() },
                ResponseEvent::ToolCallArgsDelta {
                    id: id.clone(),
                    delta: r#"{"path":"notes.txt"}"#.into()
                },
                ResponseEvent::ToolCallDone { id },
                ResponseEvent::Completed { stop_reason: StopReason::ToolUse },
            ],
            "stream = {stream}"
        );
        assert!(!events.iter().any(|e| matches!(e, ResponseEvent::Warning(_))), "{events:?}");
    }
}

fn first_call_id(events: &[ResponseEvent]) -> ToolCallId {
    events
        .iter()
        .find_map(|e| match e {
            ResponseEvent::ToolCallStart { id, .. } => Some(id.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no call in {events:?}"))
}

#[test]
fn the_calls_of_one_client_never_share_an_id() {
    let server =
        FakeModelServer::start(Script::new().reply(Reply::text(ANSWER)).reply(Reply::text(ANSWER)))
            .unwrap();
    let mut config = config(&server, WireApi::Chat);
    config.tool_call_format = ToolCallFormat::Hermes;
    let client = client(config);
    let first = first_call_id(&collect(&client, request(vec![Message::user_text("read")])));
    let second = first_call_id(&collect(&client, request(vec![Message::user_text("again")])));
    assert_ne!(first, second);
}

#[test]
fn auto_takes_the_format_from_the_model_family() {
    let server = FakeModelServer::start(Script::new().reply(Reply::text(ANSWER))).unwrap();
    let mut config = config(&server, WireApi::Chat);
    config.tool_call_format = ToolCallFormat::Auto;
    let mut qwen = request(vec![Message::user_text("read notes.txt")]);
    qwen.model = "qwen2.5-coder:7b".into();
    let events = collect(&client(config), qwen);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ResponseEvent::ToolCallStart { name, .. } if name == "read_file")),
        "{events:?}"
    );
}

#[test]
fn a_call_that_does_not_parse_stays_text_with_a_warning() {
    let broken = "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": </tool_call>";
    for stream in [true, false] {
        let events = run(WireApi::Chat, ToolCallFormat::Hermes, stream, broken);
        assert_eq!(text_of(&events), broken, "stream = {stream}");
        assert!(
            events
                .iter()
                .any(|e| matches!(e, ResponseEvent::Warning(w) if w.contains("kept as text"))),
            "{events:?}"
        );
        assert_eq!(
            calls_of(&events),
            vec![ResponseEvent::Completed { stop_reason: StopReason::EndTurn }]
        );
    }
}

#[test]
fn off_by_default_and_ignored_by_other_wire_apis() {
    let cases =
        [(WireApi::Chat, ToolCallFormat::Off), (WireApi::Responses, ToolCallFormat::Hermes)];
    for (api, format) in cases {
        let events = run(api, format, true, ANSWER);
        assert_eq!(text_of(&events), ANSWER, "{api}");
        assert!(
            !events.iter().any(|e| matches!(e, ResponseEvent::ToolCallStart { .. })),
            "{api}: {events:?}"
        );
    }
}
