//! Unit tests of the translations: calls' views to kinds, titles, locations and diffs; prompt
//! blocks to input; plans; a log replayed as updates; the client's MCP servers as ours; the live
//! translator's updates for a step's text, calls announced while written, permission requests
//! and a tool no front-end knows.

use std::path::{Path, PathBuf};
use std::time::Instant;

use agent_client_protocol::v1::schema as acp;
use codecoder_app::history::{BuiltinViewer, HistoryEvent, Replayed, Viewer};
use codecoder_app::testing::{TEST_ONLY_TOOL, TestOnlyTool, Tool};
use codecoder_protocol::{
    AgentEventKind, CallView, ContentItem, EventSource, SessionId, StepId, ToolCall, ToolCallId,
    ToolResult, ToolResultStatus, TurnId, Usage, UserInput,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::live::{self, Translator};
use crate::{server, translate};

fn call(name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall { id: ToolCallId::new("c1"), name: name.to_owned(), args }
}

/// The call's view as the kernel sends it: the built-in tool's own, the generic view for a
/// name no built-in has.
fn view(call: &ToolCall) -> CallView {
    BuiltinViewer::new().view(&call.name, &call.args)
}

fn json_of<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap()
}

fn translator() -> Translator {
    Translator::new(PathBuf::from("/work"))
}

fn started(call: &ToolCall, view: CallView) -> AgentEventKind {
    AgentEventKind::ToolStarted {
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        call: call.clone(),
        view,
    }
}

fn finished(call: &ToolCall, view: CallView, text: &str) -> AgentEventKind {
    AgentEventKind::ToolFinished {
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        call_id: call.id.clone(),
        call: call.clone(),
        view,
        result: Ok(ToolResult::text(call.id.clone(), ToolResultStatus::Success, text)),
        mcp_result: None,
    }
}

fn progress(call: &ToolCall, view: CallView) -> AgentEventKind {
    AgentEventKind::CallProgress {
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        call_id: call.id.clone(),
        name: call.name.clone(),
        view,
    }
}

/// The updates of `events`, in order, as JSON.
fn updates(translator: &mut Translator, events: &[AgentEventKind]) -> Vec<serde_json::Value> {
    let now = Instant::now();
    events.iter().flat_map(|event| translator.event(event, now)).map(|u| json_of(&u)).collect()
}

#[test]
fn tool_calls_get_kinds_titles_and_absolute_locations() {
    let cwd = Path::new("/work");
    let read = call("read_file", json!({"path": "src/a.rs", "offset": 12}));
    assert_eq!(translate::tool_kind(&view(&read)), acp::ToolKind::Read);
    let kind = |name: &str| translate::tool_kind(&view(&call(name, json!({}))));
    assert_eq!(kind("run_command"), acp::ToolKind::Execute);
    assert_eq!(kind("grep"), acp::ToolKind::Search);
    assert_eq!(kind("mcp__x__y"), acp::ToolKind::Other);
    assert_eq!(
        json_of(&translate::locations(&view(&read), cwd)),
        json!([{"path": "/work/src/a.rs", "line": 12}])
    );
    let shown = updates(&mut translator(), &[started(&read, view(&read))]);
    assert_eq!(shown[0]["sessionUpdate"], "tool_call");
    assert_eq!(shown[0]["title"], "Read src/a.rs");
    assert_eq!(shown[0]["kind"], "read");
    assert_eq!(shown[0]["status"], "in_progress");
    assert_eq!(shown[0]["locations"], json!([{"path": "/work/src/a.rs", "line": 12}]));
    let run = call("run_command", json!({"command": "cargo test"}));
    assert_eq!(view(&run).title, "Run `cargo test`");
    assert!(translate::locations(&view(&run), cwd).is_empty());
    let shown = updates(&mut translator(), &[started(&run, view(&run))]);
    assert_eq!(shown[0]["title"], "Run `cargo test`");
    // Whatever the model sent, nothing panics.
    let odd = call("edit", json!("not an object"));
    let shown = updates(&mut translator(), &[started(&odd, view(&odd))]);
    assert_eq!(shown[0]["title"], "Edit ");
}

#[test]
fn edits_and_patches_become_diffs() {
    let cwd = Path::new("/work");
    let edit = call("edit", json!({"path": "a.txt", "old_string": "x", "new_string": "y"}));
    assert_eq!(
        json_of(&translate::call_content(&view(&edit), cwd)),
        json!([{"type": "diff", "path": "/work/a.txt", "oldText": "x", "newText": "y"}])
    );
    let patch = "*** Begin Patch\n*** Add File: new.txt\n+hello\n*** Update File: b.txt\n@@\n-old\n+new\n*** End Patch";
    let apply = call("apply_patch", json!({"input": patch}));
    assert_eq!(
        json_of(&translate::call_content(&view(&apply), cwd)),
        json!([
            {"type": "diff", "path": "/work/new.txt", "newText": "hello\n"},
            {"type": "diff", "path": "/work/b.txt", "oldText": "old", "newText": "new"}
        ])
    );
    let shown = updates(&mut translator(), &[started(&apply, view(&apply))]);
    assert_eq!(shown[0]["title"], "Patch new.txt, b.txt");
    let run = call("run_command", json!({}));
    let output = translate::result_content(Some(&view(&run)), "ok\n", true, cwd);
    assert_eq!(
        json_of(&output),
        json!([{"type": "content", "content": {"type": "text", "text": "```\nok\n```"}}])
    );
    // A finished edit shows its diffs.
    let done = updates(
        &mut translator(),
        &[started(&edit, view(&edit)), finished(&edit, view(&edit), "Edited `a.txt`.")],
    );
    assert_eq!(done[1]["status"], "completed");
    assert_eq!(
        done[1]["content"],
        json!([{"type": "diff", "path": "/work/a.txt", "oldText": "x", "newText": "y"}])
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
    let plan_of = |args: serde_json::Value| {
        let view = view(&call("update_plan", args));
        translate::plan_update(&view).and_then(translate::plan)
    };
    let plan = plan_of(json!({"plan": [
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
    assert_eq!(plan_of(json!({"plan": "no"})), None);
    let modes = translate::modes(codecoder_protocol::ApprovalMode::OnRequest);
    assert_eq!(&*modes.current_mode_id.0, "on-request");
    let ids: Vec<&str> = modes.available_modes.iter().map(|m| &*m.id.0).collect();
    assert_eq!(ids, ["untrusted", "on-request", "never"]);
}

/// A replayed event of the session's own agent.
fn replayed(seq: u64, event: HistoryEvent) -> Replayed {
    let source = EventSource { session_id: SessionId::new(), subagent_path: Vec::new() };
    Replayed { seq, ts: 0, source, event }
}

#[test]
fn a_history_replays_through_the_live_translator() {
    let read = call("read_file", json!({"path": "a.txt"}));
    let agent = |seq, kind| replayed(seq, HistoryEvent::Agent(kind));
    let events = vec![
        replayed(1, HistoryEvent::User(UserInput::text("look at a.txt"))),
        agent(2, AgentEventKind::TurnStarted { turn: TurnId::FIRST }),
        agent(3, step_started()),
        agent(
            4,
            AgentEventKind::ReasoningDelta {
                turn: TurnId::FIRST,
                step: StepId::FIRST,
                delta: "hm".to_owned(),
            },
        ),
        agent(5, started(&read, view(&read))),
        agent(6, finished(&read, view(&read), "1\thi")),
        agent(7, step_finished("")),
        agent(8, step_started()),
        agent(9, text_delta("done")),
        agent(10, step_finished("done")),
        // A subagent's events are not the session's conversation.
        Replayed {
            source: EventSource {
                session_id: SessionId::new(),
                subagent_path: vec![ToolCallId::new("agent-call")],
            },
            ..agent(11, text_delta("nested"))
        },
    ];
    let updates: Vec<serde_json::Value> =
        live::replay(events, PathBuf::from("/w")).iter().map(json_of).collect();
    let kinds: Vec<&str> =
        updates.iter().map(|update| update["sessionUpdate"].as_str().unwrap()).collect();
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
    assert_eq!(updates[0]["content"]["text"], "look at a.txt");
    assert_eq!(updates[2]["locations"], json!([{"path": "/w/a.txt"}]));
    let done = &updates[3];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["content"][0]["content"]["text"], "1\thi");
    assert_eq!(updates[4]["content"]["text"], "done");
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
        codecoder_app::mcp_client::Transport::Stdio { command, args, env, .. } => {
            assert_eq!(command, "/bin/srv");
            assert_eq!(args, &["-x"]);
            assert_eq!(env.get("TOKEN").map(String::as_str), Some("t"));
        }
        other => panic!("{other:?}"),
    }
    match &configs[1].transport {
        codecoder_app::mcp_client::Transport::Http { url, headers, .. } => {
            assert_eq!(url, "http://127.0.0.1:1/mcp");
            assert_eq!(headers.get("X-A").map(String::as_str), Some("1"));
        }
        other => panic!("{other:?}"),
    }
    match &configs[2].transport {
        codecoder_app::mcp_client::Transport::Sse { url, .. } => {
            assert_eq!(url, "http://127.0.0.1:1/sse")
        }
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

/// A `tool_call`'s status: the wire leaves out `pending`, its default.
fn call_status(update: &serde_json::Value) -> &str {
    update["status"].as_str().unwrap_or("pending")
}

fn step_finished(text: &str) -> AgentEventKind {
    AgentEventKind::StepFinished {
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        usage: Usage::default(),
        text: text.to_owned(),
    }
}

fn step_started() -> AgentEventKind {
    AgentEventKind::StepStarted { turn: TurnId::FIRST, step: StepId::FIRST }
}

fn text_delta(delta: &str) -> AgentEventKind {
    AgentEventKind::TextDelta { turn: TurnId::FIRST, step: StepId::FIRST, delta: delta.to_owned() }
}

/// Each update's kind and text, for the chunks of a step.
fn chunks(updates: &[serde_json::Value]) -> Vec<(String, String)> {
    updates
        .iter()
        .map(|update| {
            let kind = update["sessionUpdate"].as_str().unwrap_or_default().to_owned();
            (kind, update["content"]["text"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

#[test]
fn a_steps_text_is_the_logged_text() {
    let chunk = |kind: &str, text: &str| (kind.to_owned(), text.to_owned());
    let retried = AgentEventKind::StepRetried {
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        reason: "the model stream broke (reset); running step 1 again".to_owned(),
    };
    // Streamed whole: nothing more at the step's end.
    let shown = updates(
        &mut translator(),
        &[step_started(), text_delta("Fixed "), text_delta("it."), step_finished("Fixed it.")],
    );
    assert_eq!(
        chunks(&shown),
        [chunk("agent_message_chunk", "Fixed "), chunk("agent_message_chunk", "it.")]
    );
    // A retried step: the person is told the text starts again, and the step's text is what
    // was logged, not the void text followed by it.
    let shown = updates(
        &mut translator(),
        &[
            step_started(),
            text_delta("Half a rep"),
            retried,
            text_delta("Fin"),
            step_finished("Final answer."),
        ],
    );
    assert_eq!(
        chunks(&shown),
        [
            chunk("agent_message_chunk", "Half a rep"),
            chunk(
                "agent_thought_chunk",
                "\nthe model stream broke (reset); running step 1 again\n"
            ),
            chunk("agent_message_chunk", "Fin"),
            chunk("agent_message_chunk", "al answer."),
        ]
    );
    // A step known only by its logged text (no deltas) shows it whole; a step that only
    // called tools shows nothing.
    let shown = updates(
        &mut translator(),
        &[step_started(), step_finished("Done."), step_started(), step_finished("")],
    );
    assert_eq!(chunks(&shown), [chunk("agent_message_chunk", "Done.")]);
}

#[test]
fn a_patch_being_written_is_announced_then_updated_with_its_diff_so_far() {
    let patch = |files: &[&str]| {
        let mut text = "*** Begin Patch\n".to_owned();
        for file in files {
            text.push_str(&format!("*** Add File: {file}\n+{file} text\n"));
        }
        text + "*** End Patch"
    };
    let partial = |files: &[&str]| view(&call("apply_patch", json!({"input": patch(files)})));
    let whole = call("apply_patch", json!({"input": patch(&["a.txt", "b.txt"])}));
    let mut translator = translator();
    let shown = updates(
        &mut translator,
        &[
            progress(&whole, partial(&["a.txt"])),
            progress(&whole, partial(&["a.txt", "b.txt"])),
            started(&whole, view(&whole)),
            finished(&whole, view(&whole), "Added a.txt, b.txt"),
        ],
    );
    let ids: Vec<&serde_json::Value> = shown.iter().map(|update| &update["toolCallId"]).collect();
    assert_eq!(ids, [&json!("c1"); 4], "one call throughout: {shown:#?}");
    // The first progress announces the call, pending, with what is written of it.
    assert_eq!(shown[0]["sessionUpdate"], "tool_call");
    assert_eq!(call_status(&shown[0]), "pending");
    assert_eq!(shown[0]["kind"], "edit");
    assert_eq!(shown[0]["locations"], json!([{"path": "/work/a.txt"}]));
    // Later ones update it with the diff so far.
    assert_eq!(shown[1]["sessionUpdate"], "tool_call_update");
    assert_eq!(shown[1]["locations"], json!([{"path": "/work/a.txt"}, {"path": "/work/b.txt"}]));
    assert_eq!(
        shown[1]["content"],
        json!([
            {"type": "diff", "path": "/work/a.txt", "newText": "a.txt text\n"},
            {"type": "diff", "path": "/work/b.txt", "newText": "b.txt text\n"}
        ])
    );
    assert!(shown[1].get("status").is_none(), "{}", shown[1]);
    // The start shows the whole call running; the end completes the same call.
    assert_eq!(shown[2]["sessionUpdate"], "tool_call_update");
    assert_eq!(shown[2]["status"], "in_progress");
    assert_eq!(shown[2]["title"], "Patch a.txt, b.txt");
    assert_eq!(shown[2]["rawInput"], whole.args);
    assert_eq!(shown[3]["status"], "completed");
    assert_eq!(shown[3]["content"], shown[1]["content"]);
}

#[test]
fn a_permission_request_announces_its_call_once() {
    let edit = call("edit", json!({"path": "a.txt", "old_string": "x", "new_string": "y"}));
    let mut live = translator();
    let (first, asked) =
        live.approval(&edit.id, &view(&edit), &edit.args, "edit a.txt", None, true);
    let first: Vec<serde_json::Value> = first.iter().map(json_of).collect();
    assert_eq!(first.len(), 1, "{first:#?}");
    assert_eq!(first[0]["sessionUpdate"], "tool_call");
    assert_eq!(call_status(&first[0]), "pending");
    let asked = json_of(&asked);
    assert_eq!(asked["toolCallId"], "c1");
    assert_eq!(asked["kind"], "edit");
    assert_eq!(asked["title"], "Edit a.txt");
    assert_eq!(asked["status"], "pending");
    assert_eq!(asked["content"][0]["oldText"], "x");
    // Asked again (an escalated retry): not announced again.
    let (again, _) = live.approval(
        &edit.id,
        &view(&edit),
        &edit.args,
        "edit a.txt",
        Some("outside the sandbox"),
        true,
    );
    assert!(again.is_empty());
    // Once it runs, only its status changes.
    let shown = updates(&mut live, &[started(&edit, view(&edit))]);
    assert_eq!(
        shown,
        [json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"})]
    );
    // A subagent's call is titled by its summary and not announced.
    let (none, asked) =
        translator().approval(&edit.id, &view(&edit), &edit.args, "edit a.txt", Some("why"), false);
    assert!(none.is_empty());
    assert_eq!(json_of(&asked)["title"], "edit a.txt (why)");
}

#[test]
fn a_tool_no_front_end_knows_is_shown_from_its_view() {
    let moves =
        json!({"moves": [{"from": "old.txt", "to": "new.txt"}, {"from": "a/b.rs", "to": "c.rs"}]});
    let relabel = call(TEST_ONLY_TOOL, moves.clone());
    let relabel_view = TestOnlyTool.view(&moves);
    let shown = updates(
        &mut translator(),
        &[
            started(&relabel, relabel_view.clone()),
            finished(&relabel, relabel_view, "relabelled 2 file(s)"),
        ],
    );
    assert_eq!(shown[0]["sessionUpdate"], "tool_call");
    assert_eq!(shown[0]["kind"], "edit");
    assert_eq!(shown[0]["title"], "Relabel 2 file(s)");
    assert_eq!(
        shown[0]["locations"],
        json!([
            {"path": "/work/old.txt"},
            {"path": "/work/new.txt"},
            {"path": "/work/a/b.rs"},
            {"path": "/work/c.rs"}
        ])
    );
    // Moves without edits have no diffs: the result's text shows.
    assert_eq!(shown[1]["status"], "completed");
    assert_eq!(shown[1]["content"][0]["content"]["text"], "relabelled 2 file(s)");
}

#[test]
fn a_commands_output_is_sent_whole_and_paced() {
    let run = call("run_command", json!({"command": "make"}));
    let output = |chunk: &str| AgentEventKind::ToolOutputDelta {
        call_id: run.id.clone(),
        stream: codecoder_protocol::OutputStream::Stdout,
        chunk: chunk.to_owned(),
    };
    let mut live = translator();
    let start = Instant::now();
    let mut at = |event: &AgentEventKind, ms: u64| {
        let updates = live.event(event, start + std::time::Duration::from_millis(ms));
        updates.iter().map(json_of).collect::<Vec<_>>()
    };
    assert_eq!(at(&started(&run, view(&run)), 0).len(), 1);
    let text = |update: &serde_json::Value| update["content"][0]["content"]["text"].clone();
    let first = at(&output("one\n"), 0);
    assert_eq!(text(&first[0]), "```\none\n```");
    // Within the interval: kept, not sent.
    assert!(at(&output("two\n"), 50).is_empty());
    // Past it: everything so far, whole.
    let later = at(&output("three\n"), 150);
    assert_eq!(later[0]["toolCallId"], "c1");
    assert_eq!(text(&later[0]), "```\none\ntwo\nthree\n```");
    // Output of a call not shown (never started) is not sent.
    let other = AgentEventKind::ToolOutputDelta {
        call_id: ToolCallId::new("unknown"),
        stream: codecoder_protocol::OutputStream::Stdout,
        chunk: "x".to_owned(),
    };
    assert!(at(&other, 500).is_empty());
}

#[test]
fn a_command_is_a_client_terminal_fed_through_meta_when_the_client_advertised_it() {
    let exec = call("exec_command", json!({"cmd": "make", "tty": true}));
    let output = || AgentEventKind::ToolOutputDelta {
        call_id: exec.id.clone(),
        stream: codecoder_protocol::OutputStream::Stdout,
        chunk: "built\n".to_owned(),
    };
    let mut result = ToolResult::text(exec.id.clone(), ToolResultStatus::Success, "Wall time");
    result.exit =
        Some(codecoder_protocol::CommandExit { code: Some(0), signal: None, duration_ms: 5 });
    let end = AgentEventKind::ToolFinished {
        turn: TurnId::FIRST,
        step: StepId::FIRST,
        call_id: exec.id.clone(),
        call: exec.clone(),
        view: view(&exec),
        result: Ok(result),
        mcp_result: None,
    };
    let events = [started(&exec, view(&exec)), output(), output(), end];
    let mut live = translator().terminal_output(true);
    let shown = updates(&mut live, &events);
    assert_eq!(shown.len(), 4, "{shown:#?}");
    assert_eq!(shown[0]["sessionUpdate"], "tool_call");
    assert_eq!(shown[0]["kind"], "execute");
    assert_eq!(shown[0]["content"], json!([{"type": "terminal", "terminalId": "c1"}]));
    assert_eq!(shown[0]["_meta"], json!({"terminal_info": {"terminal_id": "c1", "cwd": "/work"}}));
    // Every chunk goes out as it comes, unpaced, and only through `_meta`.
    for update in &shown[1..3] {
        assert_eq!(update["sessionUpdate"], "tool_call_update");
        assert_eq!(
            update["_meta"],
            json!({"terminal_output": {"terminal_id": "c1", "data": "built\n"}})
        );
        assert!(update.get("content").is_none(), "{update}");
    }
    assert_eq!(shown[3]["status"], "completed");
    assert!(shown[3].get("content").is_none(), "{:#}", shown[3]);
    assert_eq!(
        shown[3]["_meta"],
        json!({"terminal_exit": {"terminal_id": "c1", "exit_code": 0, "signal": null}})
    );
    // Without the capability the same events give text content and no `_meta`.
    let plain = updates(&mut translator(), &events);
    assert!(plain.iter().all(|update| update.get("_meta").is_none()), "{plain:#?}");
    assert_eq!(plain[1]["content"][0]["content"]["text"], "```\nbuilt\n```");
    // A call that is not a command is never a terminal.
    let read = call("read_file", json!({"path": "a.rs"}));
    let shown = updates(&mut translator().terminal_output(true), &[started(&read, view(&read))]);
    assert!(!shown[0].to_string().contains("terminal"), "{shown:#?}");
}
