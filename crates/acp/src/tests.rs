//! Unit tests of the translations: tool calls to kinds, titles, locations and diffs; prompt
//! blocks to input; plans; a log replayed as updates; the client's MCP servers as ours.

use std::path::Path;

use agent_client_protocol::v1::schema as acp;
use codecoder_protocol::{
    ContentItem, Message, MessageItem, Reasoning, Record, RecordBody, Role, ToolCall, ToolCallId,
    ToolResult, ToolResultStatus,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{server, translate};

fn call(name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall { id: ToolCallId::new("c1"), name: name.to_owned(), args }
}

fn json_of<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap()
}

#[test]
fn tool_calls_get_kinds_titles_and_absolute_locations() {
    let cwd = Path::new("/work");
    let read = call("read_file", json!({"path": "src/a.rs", "offset": 12}));
    assert_eq!(translate::tool_kind("read_file"), acp::ToolKind::Read);
    assert_eq!(translate::tool_kind("run_command"), acp::ToolKind::Execute);
    assert_eq!(translate::tool_kind("grep"), acp::ToolKind::Search);
    assert_eq!(translate::tool_kind("mcp__x__y"), acp::ToolKind::Other);
    assert_eq!(translate::title(&read), "Read src/a.rs");
    assert_eq!(
        json_of(&translate::locations(&read, cwd)),
        json!([{"path": "/work/src/a.rs", "line": 12}])
    );
    let run = call("run_command", json!({"command": "cargo test"}));
    assert_eq!(translate::title(&run), "Run `cargo test`");
    assert!(translate::locations(&run, cwd).is_empty());
    // Whatever the model sent, nothing panics.
    let odd = call("edit", json!("not an object"));
    assert_eq!(translate::title(&odd), "Edit ");
}

#[test]
fn edits_and_patches_become_diffs() {
    let cwd = Path::new("/work");
    let edit = call("edit", json!({"path": "a.txt", "old_string": "x", "new_string": "y"}));
    assert_eq!(
        json_of(&translate::call_content(&edit, cwd)),
        json!([{"type": "diff", "path": "/work/a.txt", "oldText": "x", "newText": "y"}])
    );
    let patch = "*** Begin Patch\n*** Add File: new.txt\n+hello\n*** Update File: b.txt\n@@\n-old\n+new\n*** End Patch";
    let apply = call("apply_patch", json!({"input": patch}));
    assert_eq!(
        json_of(&translate::call_content(&apply, cwd)),
        json!([
            {"type": "diff", "path": "/work/new.txt", "newText": "hello\n"},
            {"type": "diff", "path": "/work/b.txt", "oldText": "old", "newText": "new"}
        ])
    );
    assert_eq!(translate::title(&apply), "Patch new.txt, b.txt");
    let output =
        translate::result_content(Some(&call("run_command", json!({}))), "ok\n", true, cwd);
    assert_eq!(
        json_of(&output),
        json!([{"type": "content", "content": {"type": "text", "text": "```\nok\n```"}}])
    );
}

#[test]
fn prompt_blocks_become_input() {
    let blocks: Vec<acp::ContentBlock> = serde_json::from_value(json!([
        {"type": "text", "text": "fix it"},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
        {"type": "resource_link", "name": "a.rs", "uri": "file:///w/a.rs"},
        {"type": "resource", "resource": {"uri": "file:///w/b.rs", "text": "fn b() {}"}}
    ]))
    .unwrap();
    let input = translate::user_input(blocks);
    assert_eq!(
        input.content,
        vec![
            ContentItem::Text { text: "fix it".to_owned() },
            ContentItem::Image(codecoder_protocol::Image {
                media_type: "image/png".to_owned(),
                data_base64: "AAAA".to_owned(),
            }),
            ContentItem::Text { text: "@file:///w/a.rs".to_owned() },
            ContentItem::Text {
                text: "<context uri=\"file:///w/b.rs\">\nfn b() {}\n</context>".to_owned()
            },
        ]
    );
}

#[test]
fn plans_and_modes() {
    let plan = translate::plan(&json!({"plan": [
        {"step": "one", "status": "completed"},
        {"step": "two", "status": "in_progress"},
        {"step": "three", "status": "pending"}
    ]}))
    .unwrap();
    assert_eq!(
        json_of(&plan),
        json!({"entries": [
            {"content": "one", "priority": "medium", "status": "completed"},
            {"content": "two", "priority": "medium", "status": "in_progress"},
            {"content": "three", "priority": "medium", "status": "pending"}
        ]})
    );
    assert_eq!(translate::plan(&json!({"plan": "no"})), None);
    let modes = translate::modes(codecoder_protocol::ApprovalMode::OnRequest);
    assert_eq!(&*modes.current_mode_id.0, "on-request");
    let ids: Vec<&str> = modes.available_modes.iter().map(|m| &*m.id.0).collect();
    assert_eq!(ids, ["untrusted", "on-request", "never"]);
}

fn record(seq: u64, body: RecordBody) -> Record {
    Record { seq, ts: 0, body }
}

#[test]
fn a_log_replays_as_updates() {
    let read = call("read_file", json!({"path": "a.txt"}));
    let records = [
        record(1, RecordBody::UserMessage { message: Message::user_text("look at a.txt") }),
        record(
            2,
            RecordBody::AssistantMessage {
                message: Message::new(
                    Role::Assistant,
                    vec![
                        MessageItem::Reasoning(Reasoning {
                            text: "hm".to_owned(),
                            ..Reasoning::default()
                        }),
                        MessageItem::ToolCall(read.clone()),
                    ],
                ),
            },
        ),
        record(
            3,
            RecordBody::ToolResult {
                result: ToolResult::text(read.id.clone(), ToolResultStatus::Success, "1\thi"),
                synthetic: None,
            },
        ),
        record(
            4,
            RecordBody::AssistantMessage {
                message: Message::new(
                    Role::Assistant,
                    vec![MessageItem::Text { text: "done".to_owned() }],
                ),
            },
        ),
    ];
    let updates = translate::replay(records.iter(), Path::new("/w"));
    let kinds: Vec<String> = updates
        .iter()
        .map(|update| json_of(update)["sessionUpdate"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "agent_thought_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk"
        ]
    );
    let done = json_of(&updates[3]);
    assert_eq!(done["status"], "completed");
    assert_eq!(done["content"][0]["content"]["text"], "1\thi");
}

#[test]
fn the_clients_mcp_servers_become_ours() {
    let servers: Vec<acp::McpServer> = serde_json::from_value(json!([
        {"name": "files", "command": "/bin/srv", "args": ["-x"], "env": [{"name": "TOKEN", "value": "t"}]},
        {"type": "http", "name": "web", "url": "http://127.0.0.1:1/mcp", "headers": [{"name": "X-A", "value": "1"}]},
        {"type": "sse", "name": "old", "url": "http://127.0.0.1:1/sse", "headers": []}
    ]))
    .unwrap();
    let mut notices = Vec::new();
    let configs = server::mcp_configs(&servers, &mut |text| notices.push(text.to_owned()));
    assert_eq!(configs.len(), 3);
    match &configs[0].transport {
        codecoder_mcp::Transport::Stdio { command, args, env, .. } => {
            assert_eq!(command, "/bin/srv");
            assert_eq!(args, &["-x"]);
            assert_eq!(env.get("TOKEN").map(String::as_str), Some("t"));
        }
        other => panic!("{other:?}"),
    }
    match &configs[1].transport {
        codecoder_mcp::Transport::Http { url, headers, .. } => {
            assert_eq!(url, "http://127.0.0.1:1/mcp");
            assert_eq!(headers.get("X-A").map(String::as_str), Some("1"));
        }
        other => panic!("{other:?}"),
    }
    match &configs[2].transport {
        codecoder_mcp::Transport::Sse { url, .. } => assert_eq!(url, "http://127.0.0.1:1/sse"),
        other => panic!("{other:?}"),
    }
    assert!(notices.is_empty(), "{notices:?}");
}

#[test]
fn a_question_becomes_a_form_and_its_answer_comes_back() {
    use codecoder_protocol::AskUserAnswer;
    let free = json_of(&translate::question_form(&[]));
    assert_eq!(free["properties"]["answer"]["type"], "string", "{free}");
    assert_eq!(free["required"], json!(["answer"]), "{free}");
    let picks = json_of(&translate::question_form(&["red".to_owned(), "blue".to_owned()]));
    assert_eq!(
        picks["properties"]["choice"]["oneOf"],
        json!([{"const": "red", "title": "red"}, {"const": "blue", "title": "blue"}]),
        "{picks}"
    );
    assert_eq!(picks["properties"]["answer"]["type"], "string", "{picks}");
    assert!(picks["required"].is_null(), "either field answers: {picks}");

    let answer = |response: serde_json::Value| {
        translate::question_answer(Some(serde_json::from_value(response).unwrap()))
    };
    let text = |text: &str| AskUserAnswer::Answer { text: text.to_owned() };
    assert_eq!(answer(json!({"action": "accept", "content": {"choice": "blue"}})), text("blue"));
    // The person's own words win over a pick; blanks do not count.
    assert_eq!(
        answer(json!({"action": "accept", "content": {"choice": "blue", "answer": " teal "}})),
        text("teal")
    );
    assert_eq!(
        answer(json!({"action": "accept", "content": {"choice": "red", "answer": "  "}})),
        text("red")
    );
    for declined in [
        json!({"action": "accept", "content": {}}),
        json!({"action": "accept"}),
        json!({"action": "accept", "content": {"answer": 5}}),
        json!({"action": "decline"}),
        json!({"action": "cancel"}),
        json!({"action": "_later"}),
    ] {
        assert_eq!(answer(declined.clone()), AskUserAnswer::Declined, "{declined}");
    }
    assert_eq!(translate::question_answer(None), AskUserAnswer::Declined);
}
