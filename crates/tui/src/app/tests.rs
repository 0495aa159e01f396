//! The app state machine: approvals, questions, cancel and quit keys, steering, history,
//! streaming commits and slash commands, asserted through the command channel and the replies.

use codecoder_protocol::{
    AgentCommand, AgentEventKind, ApprovalDecision, AskUserAnswer, ContentItem, StepId, ToolCallId,
    ToolResult, ToolResultStatus, TurnOutcome, Usage, UserInput,
};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;

use crate::app::{Effect, InputMode};
use crate::cells::Cell;
use crate::testing::{
    app, approval, ask, call, event, finished, started, sub_event, text, turn, turn_started,
};
use crate::{SessionChoice, StartRequest};

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn type_str(app: &mut crate::app::App, s: &str) {
    for c in s.chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
}

fn turn_done(outcome: TurnOutcome) -> codecoder_protocol::AgentEvent {
    event(AgentEventKind::TurnDone {
        turn: turn(),
        cancelled: outcome == TurnOutcome::Cancelled,
        outcome,
        usage: Usage::default(),
    })
}

fn notes(cells: &[Cell]) -> Vec<String> {
    cells
        .iter()
        .filter_map(|c| match c {
            Cell::Note { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn enter_submits_and_typing_during_a_turn_steers() {
    let (mut app, rx) = app();
    type_str(&mut app, "hello");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(rx.try_recv().unwrap(), AgentCommand::Submit(UserInput::text("hello")));
    assert!(app.editor.is_empty());
    app.on_agent_event(turn_started());
    type_str(&mut app, "also this");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(rx.try_recv().unwrap(), AgentCommand::Steer(UserInput::text("also this")));
    let history = app.take_history();
    assert!(
        matches!(&history[..], [Cell::User { queued: false, .. }, Cell::User { queued: true, .. }]),
        "{history:?}"
    );
}

#[test]
fn ctrl_j_and_shift_enter_insert_newlines_and_up_down_walk_history() {
    let (mut app, rx) = app();
    type_str(&mut app, "a");
    app.on_key(ctrl('j'));
    type_str(&mut app, "b");
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT));
    type_str(&mut app, "c");
    assert_eq!(app.editor.text(), "a\nb\nc");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(rx.try_recv().unwrap(), AgentCommand::Submit(UserInput::text("a\nb\nc")));
    app.on_agent_event(turn_done(TurnOutcome::Completed));
    type_str(&mut app, "second");
    app.on_key(key(KeyCode::Enter));
    app.on_agent_event(turn_done(TurnOutcome::Completed));
    type_str(&mut app, "draft");
    app.on_key(key(KeyCode::Up));
    assert_eq!(app.editor.text(), "second");
    app.on_key(key(KeyCode::Up));
    assert_eq!(app.editor.text(), "a\nb\nc");
    // Down first walks the lines of the multi-line entry, then on to newer entries.
    app.on_key(key(KeyCode::Down));
    app.on_key(key(KeyCode::Down));
    assert_eq!(app.editor.text(), "a\nb\nc");
    app.on_key(key(KeyCode::Down));
    assert_eq!(app.editor.text(), "second");
    app.on_key(key(KeyCode::Down));
    assert_eq!(
        app.editor.text(),
        "draft",
        "coming down past the newest entry gives the draft back"
    );
}

#[test]
fn approval_keys_answer_through_the_reply() {
    let cases = [
        ('y', ApprovalDecision::AllowOnce),
        ('a', ApprovalDecision::AllowForSession),
        ('n', ApprovalDecision::Deny),
    ];
    for (pressed, expected) in cases {
        let (mut app, _rx) = app();
        app.on_agent_event(turn_started());
        let (ev, reply) = approval(
            call("c1", "run_command", json!({"command": "git push"})),
            "run `git push`",
            None,
        );
        app.on_agent_event(ev);
        app.on_key(key(KeyCode::Char(pressed)));
        assert_eq!(reply.try_recv().unwrap(), expected);
        assert!(app.approvals.is_empty());
        assert!(app.editor.is_empty(), "the key is not typed into the editor");
    }
}

#[test]
fn deny_with_feedback_collects_text_then_sends_it() {
    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    let (ev, reply) = approval(
        call("c1", "run_command", json!({"command": "rm -rf build"})),
        "run `rm -rf build`",
        Some("ask — default"),
    );
    app.on_agent_event(ev);
    app.on_key(key(KeyCode::Char('f')));
    assert_eq!(app.mode, InputMode::Feedback);
    type_str(&mut app, "use make clean");
    assert!(reply.try_recv().is_err(), "nothing is sent before Enter");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(
        reply.try_recv().unwrap(),
        ApprovalDecision::DenyWithFeedback { feedback: "use make clean".to_owned() }
    );
    assert_eq!(app.mode, InputMode::Normal);
}

#[test]
fn turn_end_drops_open_requests_as_cancelled() {
    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    let (ev, reply) =
        approval(call("c1", "run_command", json!({"command": "ls"})), "run `ls`", None);
    app.on_agent_event(ev);
    let (ev, answer) = ask("Which?", &["a"]);
    app.on_agent_event(ev);
    app.on_agent_event(turn_done(TurnOutcome::Cancelled));
    assert!(reply.recv().is_err(), "the approval reply was dropped");
    assert!(answer.recv().is_err(), "the question reply was dropped");
    assert!(notes(&app.take_history()).iter().any(|n| n.contains("turn cancelled")));
}

/// In a hosted session another client may answer first: the call then starts (or finishes,
/// refused) and the prompt still showing for it goes, so the next one is asked.
#[test]
fn a_request_answered_elsewhere_is_taken_down_when_its_call_moves_on() {
    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    let first = call("c1", "run_command", json!({"command": "git push"}));
    let (ev, first_reply) = approval(first.clone(), "run `git push`", None);
    app.on_agent_event(ev);
    let second = call("c2", "run_command", json!({"command": "git tag v1"}));
    let (ev, _second_reply) = approval(second.clone(), "run `git tag v1`", None);
    app.on_agent_event(ev);
    app.on_agent_event(started(&first));
    assert!(first_reply.recv().is_err(), "the first prompt was taken down unanswered");
    assert_eq!(app.approvals.len(), 1);
    assert_eq!(app.approvals[0].call.id, second.id);
    let refused = Err(codecoder_protocol::ToolError::PermissionDenied {
        reason: "the user denied it".to_owned(),
    });
    app.on_agent_event(finished(&second, refused));
    assert!(app.approvals.is_empty());

    let (ev, answer) = ask("Which?", &["a"]);
    app.on_agent_event(ev);
    let asking = call("call_ask", "ask_user", json!({"question": "Which?"}));
    app.on_agent_event(finished(&asking, Err(codecoder_protocol::ToolError::Cancelled)));
    assert!(app.asks.is_empty());
    assert!(answer.recv().is_err(), "the question was let go unanswered");
}

#[test]
fn questions_take_a_number_text_or_esc() {
    let (mut app, _rx) = app();
    let (ev, answer) = ask("Which database?", &["postgres", "sqlite"]);
    app.on_agent_event(ev);
    app.on_key(key(KeyCode::Char('2')));
    assert_eq!(answer.try_recv().unwrap(), AskUserAnswer::Answer { text: "sqlite".to_owned() });

    let (ev, answer) = ask("Name?", &[]);
    app.on_agent_event(ev);
    type_str(&mut app, "Ada");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(answer.try_recv().unwrap(), AskUserAnswer::Answer { text: "Ada".to_owned() });

    let (ev, answer) = ask("Really?", &["yes"]);
    app.on_agent_event(ev);
    app.on_key(key(KeyCode::Esc));
    assert_eq!(answer.try_recv().unwrap(), AskUserAnswer::Declined);
}

#[test]
fn esc_and_ctrl_c_cancel_a_running_turn_and_ctrl_c_twice_quits_when_idle() {
    let (mut app, rx) = app();
    app.on_agent_event(turn_started());
    app.on_key(key(KeyCode::Esc));
    assert_eq!(rx.try_recv().unwrap(), AgentCommand::Cancel);
    app.on_key(ctrl('c'));
    assert_eq!(rx.try_recv().unwrap(), AgentCommand::Cancel);
    app.on_agent_event(turn_done(TurnOutcome::Cancelled));

    type_str(&mut app, "half typed");
    app.on_key(ctrl('c'));
    assert!(app.editor.is_empty(), "Ctrl+C first clears the input");
    assert!(app.take_effects().is_empty());
    app.on_key(ctrl('c'));
    assert!(app.quit_armed);
    assert!(app.take_effects().is_empty(), "one Ctrl+C does not quit");
    app.on_key(ctrl('c'));
    assert_eq!(app.take_effects(), vec![Effect::Quit]);
    assert!(rx.try_recv().is_err(), "idle Ctrl+C sends nothing to the agent");
}

#[test]
fn streamed_text_is_committed_at_block_boundaries_never_inside_a_fence() {
    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    for chunk in
        ["# Title\n", "\nSome ", "text.\n\n```rust\nfn a() {}\n", "\n", "fn b() {}\n```\n", "tail"]
    {
        app.on_agent_event(text(chunk));
    }
    let committed = app.take_history();
    let rendered: Vec<String> = committed
        .iter()
        .flat_map(|c| c.lines(std::time::Instant::now(), 0))
        .map(|l| l.to_string())
        .collect();
    assert!(rendered.iter().any(|l| l == "Title"), "{rendered:?}");
    assert!(
        rendered.iter().any(|l| l.contains("fn b() {}")),
        "the closed fence is committed whole: {rendered:?}"
    );
    let live: Vec<String> = app.live_answer().iter().map(ToString::to_string).collect();
    assert_eq!(live, vec!["tail".to_owned()]);
    app.on_agent_event(turn_done(TurnOutcome::Completed));
    assert!(app.live_answer().is_empty());
    let rest: Vec<String> = app
        .take_history()
        .iter()
        .flat_map(|c| c.lines(std::time::Instant::now(), 0))
        .map(|l| l.to_string())
        .collect();
    assert!(rest.iter().any(|l| l == "tail"), "{rest:?}");
}

#[test]
fn tool_cards_live_while_running_and_go_to_history_when_done() {
    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    let agent = call("c1", "agent", json!({"task": "find the bug"}));
    app.on_agent_event(started(&agent));
    let grep = call("s1", "grep", json!({"pattern": "panic!"}));
    let nested = |event: codecoder_protocol::AgentEvent| sub_event("c1", event.kind);
    app.on_agent_event(nested(started(&grep)));
    assert_eq!(app.tools.len(), 1);
    assert_eq!(app.tools[0].children.len(), 1, "the subagent's tool nests under its card");
    app.on_agent_event(nested(finished(
        &grep,
        Ok(ToolResult::text(ToolCallId::new("s1"), ToolResultStatus::Success, "3 matches")),
    )));
    assert_eq!(app.tools[0].children[0].ok, Some(true));
    app.on_agent_event(finished(
        &agent,
        Ok(ToolResult {
            tool_call_id: ToolCallId::new("c1"),
            content: vec![ContentItem::Text { text: "found".to_owned() }],
            status: ToolResultStatus::Success,
            exit: None,
        }),
    ));
    assert!(app.tools.is_empty());
    assert!(matches!(app.take_history().as_slice(), [Cell::Tool(_)]));
}

#[test]
fn slash_commands() {
    let (mut app, rx) = app();
    app.slash("/compact keep the plan");
    assert!(matches!(
        rx.try_recv(),
        Ok(AgentCommand::Compact { focus: Some(focus) }) if focus == "keep the plan"
    ));
    app.slash("/approvals");
    app.slash("/status");
    app.slash("/bogus");
    let texts = notes(&app.take_history());
    assert!(texts[0].contains("on-request") && texts[0].contains("/approvals never"), "{texts:?}");
    assert!(texts[1].contains(crate::testing::SESSION) && texts[1].contains("gpt-5"), "{texts:?}");
    assert!(texts[2].contains("unknown command /bogus"), "{texts:?}");

    app.slash("/model o3");
    app.slash("/new");
    app.slash("/fork");
    app.slash("/resume");
    app.slash("/diff");
    app.slash("/hooks");
    app.slash("/hooks trust");
    app.slash("/quit");
    let id = crate::testing::SESSION.to_owned();
    assert_eq!(
        app.take_effects(),
        vec![
            Effect::Start(StartRequest {
                session: SessionChoice::Resume(id.clone()),
                model: Some("o3".to_owned()),
                provider: None,
                reasoning_effort: None,
            }),
            Effect::Start(StartRequest {
                session: SessionChoice::New,
                model: None,
                provider: None,
                reasoning_effort: None,
            }),
            Effect::Start(StartRequest {
                session: SessionChoice::Fork(id),
                model: None,
                provider: None,
                reasoning_effort: None,
            }),
            Effect::ListSessions,
            Effect::Diff,
            Effect::Hooks { approve: false },
            Effect::Hooks { approve: true },
            Effect::Quit,
        ]
    );
}

#[test]
fn completion_menus_for_commands_files_and_skills() {
    let (mut app, rx) = app();
    type_str(&mut app, "/st");
    let menu = app.completion.clone().unwrap();
    assert_eq!(menu.items[0].0, "/status");
    app.on_key(key(KeyCode::Enter));
    assert!(
        notes(&app.take_history()).iter().any(|n| n.contains("session:")),
        "Enter on a command runs it"
    );

    type_str(&mut app, "look at @mai");
    assert_eq!(app.completion.as_ref().unwrap().items[0].0, "@src/main.rs");
    app.on_key(key(KeyCode::Tab));
    assert_eq!(app.editor.text(), "look at @src/main.rs ");
    assert!(app.completion.is_none());

    app.skills = vec!["review".to_owned(), "release".to_owned()];
    type_str(&mut app, "$rev");
    assert_eq!(app.completion.as_ref().unwrap().items, vec![("$review".to_owned(), String::new())]);
    app.on_key(key(KeyCode::Esc));
    assert!(app.completion.is_none());
    assert!(rx.try_recv().is_err());
}

#[test]
fn usage_context_and_cost() {
    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    app.on_agent_event(event(AgentEventKind::StepFinished {
        turn: turn(),
        step: StepId::FIRST,
        usage: Usage {
            input_tokens: 40_000,
            cached_input_tokens: 0,
            output_tokens: 0,
            reasoning_output_tokens: 0,
        },
        text: String::new(),
    }));
    app.on_agent_event(event(AgentEventKind::TurnDone {
        turn: turn(),
        cancelled: false,
        outcome: TurnOutcome::Completed,
        usage: Usage {
            input_tokens: 1_000_000,
            cached_input_tokens: 0,
            output_tokens: 100_000,
            reasoning_output_tokens: 0,
        },
    }));
    assert_eq!(app.context_percent(), 10);
    // 1M input at $1.25 + 100k output at $10.
    assert!((app.cost().unwrap() - 2.25).abs() < 1e-9);
}

#[test]
fn a_50k_token_stream_keeps_the_live_tail_bounded() {
    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    for i in 0..50_000 {
        app.on_agent_event(text(if i % 500 == 499 { "word\n\n" } else { "word " }));
        if i % 1000 == 0 {
            let live: usize = app.live_answer().iter().map(|l| l.width()).sum();
            assert!(live <= 5_000, "the live tail stays small: {live}");
        }
    }
    // Every committed cell is a finished paragraph.
    assert_eq!(app.take_history().len(), 100);
}

#[test]
fn an_initial_prompt_is_sent_whole_even_when_it_ends_in_a_completable_word() {
    let (mut app, rx) = app();
    app.send_text("explain @src/mai".to_owned());
    assert_eq!(rx.try_recv().unwrap(), AgentCommand::Submit(UserInput::text("explain @src/mai")));
    assert!(app.completion.is_none());
}

#[test]
fn a_hook_message_is_a_hook_note() {
    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    app.on_agent_event(event(AgentEventKind::HookMessage {
        event: "PostToolUse".to_owned(),
        message: "remember the tests".to_owned(),
    }));
    let history = app.take_history();
    assert_eq!(notes(&history), ["PostToolUse hook: remember the tests"]);
    assert!(
        history.iter().any(|c| matches!(c, Cell::Note { kind: crate::cells::NoteKind::Hook, .. })),
        "{history:?}"
    );
}

#[test]
fn a_custom_command_goes_to_the_agent_and_a_builtin_of_the_same_name_wins() {
    let (mut app, rx) = app();
    app.commands = vec!["fix-issue".to_owned(), "help".to_owned()];
    app.send_text("/fix-issue 123".to_owned());
    assert_eq!(rx.try_recv().unwrap(), AgentCommand::Submit(UserInput::text("/fix-issue 123")));
    app.send_text("/help".to_owned());
    assert!(rx.try_recv().is_err(), "/help is the UI's own");
    app.send_text("/unknown".to_owned());
    assert!(rx.try_recv().is_err());
    assert!(notes(&app.take_history()).iter().any(|n| n.contains("unknown command /unknown")));
}

#[test]
fn model_switches_model_and_reasoning_effort() {
    let (mut app, _rx) = app();
    app.slash("/model gpt-5 high");
    app.slash("/model low");
    app.slash("/model gpt-5 fast");
    let id = crate::testing::SESSION.to_owned();
    let start = |model: Option<&str>, effort: Option<&str>| {
        Effect::Start(StartRequest {
            session: SessionChoice::Resume(id.clone()),
            model: model.map(str::to_owned),
            provider: None,
            reasoning_effort: effort.map(str::to_owned),
        })
    };
    assert_eq!(
        app.take_effects(),
        vec![start(Some("gpt-5"), Some("high")), start(None, Some("low"))],
        "an unknown effort starts nothing"
    );
    let texts = notes(&app.take_history());
    assert!(texts.iter().any(|t| t.contains("/model gpt-5 fast: expected")), "{texts:?}");
}

#[test]
fn shift_tab_asks_for_the_next_permission_mode() {
    let (mut app, _rx) = app();
    app.on_key(KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT));
    assert_eq!(app.take_effects(), vec![Effect::CyclePermissionMode]);
}

#[test]
fn a_plan_review_is_approved_sent_back_or_edited() {
    let plan = "1. Fix\n2. Test";
    let options = [codecoder_app::PLAN_APPROVE, codecoder_app::PLAN_KEEP_PLANNING];

    let (mut app, _rx) = app();
    let (review, answer) = ask(plan, &options);
    app.on_agent_event(review);
    app.on_key(key(KeyCode::Char('1')));
    assert_eq!(answer.try_recv().unwrap(), AskUserAnswer::Answer { text: "Approve".to_owned() });

    let (review, answer) = ask(plan, &options);
    app.on_agent_event(review);
    type_str(&mut app, "smaller");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(answer.try_recv().unwrap(), AskUserAnswer::Answer { text: "smaller".to_owned() });

    // Ctrl+G puts the plan in the editor; Esc goes back to the review, still pending.
    let (review, answer) = ask(plan, &options);
    app.on_agent_event(review);
    app.on_key(ctrl('g'));
    assert_eq!(app.mode, InputMode::PlanEdit);
    assert_eq!(app.editor.text(), plan);
    app.on_key(key(KeyCode::Esc));
    assert_eq!(app.mode, InputMode::Normal);
    assert!(answer.try_recv().is_err());
    app.on_key(ctrl('g'));
    type_str(&mut app, "\n3. Ship");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(
        answer.try_recv().unwrap(),
        AskUserAnswer::Answer { text: "Approve edited plan:\n1. Fix\n2. Test\n3. Ship".to_owned() }
    );
    assert_eq!(app.mode, InputMode::Normal);

    // Ctrl+G does nothing for an ordinary question.
    let (question, _answer) = ask("Which?", &["a", "b"]);
    app.on_agent_event(question);
    app.on_key(ctrl('g'));
    assert_eq!(app.mode, InputMode::Normal);
}

/// Starts `call_id` as a `run_command`, streams `lines` numbered lines, finishes it.
fn run_command_with_output(app: &mut crate::app::App, call_id: &str, lines: usize) {
    let call = call(call_id, "run_command", json!({"command": "seq"}));
    app.on_agent_event(started(&call));
    let output: String = (1..=lines).map(|i| format!("out {i}\n")).collect();
    for piece in output.as_bytes().chunks(4096) {
        app.on_agent_event(event(AgentEventKind::ToolOutputDelta {
            call_id: call.id.clone(),
            stream: codecoder_protocol::OutputStream::Stdout,
            chunk: String::from_utf8(piece.to_vec()).unwrap(),
        }));
    }
    let result = ToolResult {
        tool_call_id: call.id.clone(),
        content: vec![ContentItem::Text { text: "(elided for the model)".to_owned() }],
        status: ToolResultStatus::Success,
        exit: None,
    };
    app.on_agent_event(finished(&call, Ok(result)));
}

#[test]
fn ctrl_o_pages_the_last_output_as_it_streamed_and_esc_gives_it_back() {
    let (mut app, _rx) = app();
    app.on_key(ctrl('o'));
    assert!(app.pager.is_none());
    assert!(notes(&app.take_history()).iter().any(|n| n.contains("no tool output")));

    app.on_agent_event(turn_started());
    run_command_with_output(&mut app, "c1", 5_000);
    app.on_key(ctrl('o'));
    let pager = app.pager.as_ref().unwrap();
    assert_eq!(pager.output.title, "run_command $ seq");
    assert_eq!(pager.output.preview.len(), 5_000);
    assert_eq!(pager.output.preview.line(4_999), "out 5000");
    // Keys scroll the pager, not the editor.
    app.on_key(key(KeyCode::End));
    type_str(&mut app, "x");
    assert!(app.editor.is_empty());
    assert!(app.pager.as_ref().unwrap().top > 4_000);
    app.on_key(key(KeyCode::Esc));
    assert!(app.pager.is_none());
    app.on_key(ctrl('o'));
    assert_eq!(app.pager.as_ref().unwrap().top, 0, "it opens again, at the start");
    app.on_key(ctrl('o'));

    // A tool with no streamed output pages its result's text.
    let read = call("c2", "read_file", json!({"path": "src/lib.rs"}));
    app.on_agent_event(started(&read));
    app.on_agent_event(finished(
        &read,
        Ok(ToolResult::text(ToolCallId::new("c2"), ToolResultStatus::Success, "a\nb\n")),
    ));
    app.on_key(ctrl('o'));
    let pager = app.pager.as_ref().unwrap();
    assert_eq!(pager.output.title, "read_file src/lib.rs");
    assert_eq!(pager.output.preview.len(), 2);
}

#[test]
fn a_huge_output_is_kept_bounded_and_the_card_keeps_none_of_it() {
    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    run_command_with_output(&mut app, "c1", 200_000);
    let kept = app.last_output.as_ref().unwrap();
    assert_eq!(kept.preview.total_lines(), 200_000);
    assert_eq!(kept.preview.len(), 10_001);
    assert!(kept.preview.heap_bytes() < 1_000_000, "{} bytes", kept.preview.heap_bytes());
    let Some(Cell::Tool(card)) = app.take_history().pop() else { panic!("no tool card") };
    assert!(card.preview.is_empty());
    assert!(card.output.len() <= 16 * 1024);
}

#[test]
fn at_completion_waits_for_the_background_list_and_a_turn_end_refreshes_it() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::create_dir_all(dir.path().join("src")).unwrap();
    fs_err::write(dir.path().join("src/main.rs"), "").unwrap();
    let (mut app, _rx) = app();
    app.info.cwd = dir.path().to_path_buf();
    app.files = crate::complete::FileIndex::spawn(dir.path().to_path_buf());
    type_str(&mut app, "@mai");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while app.completion.is_none() {
        assert!(std::time::Instant::now() < deadline, "no list came");
        std::thread::sleep(std::time::Duration::from_millis(5));
        app.poll_files();
    }
    assert_eq!(app.completion.as_ref().unwrap().items[0].0, "@src/main.rs");

    // A file the turn wrote is offered once the turn has ended.
    fs_err::write(dir.path().join("src/domain.rs"), "").unwrap();
    app.on_agent_event(turn_started());
    app.on_agent_event(turn_done(TurnOutcome::Completed));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while app.completion.as_ref().is_none_or(|menu| menu.items.len() < 2) {
        assert!(std::time::Instant::now() < deadline, "no new list came");
        std::thread::sleep(std::time::Duration::from_millis(5));
        app.poll_files();
    }
    let items: Vec<&str> =
        app.completion.as_ref().unwrap().items.iter().map(|(text, _)| text.as_str()).collect();
    assert_eq!(items, ["@src/main.rs", "@src/domain.rs"]);
}

fn step_finished(text: &str) -> codecoder_protocol::AgentEvent {
    event(AgentEventKind::StepFinished {
        turn: turn(),
        step: StepId::FIRST,
        usage: Usage::default(),
        text: text.to_owned(),
    })
}

fn shown(cells: &[Cell]) -> Vec<String> {
    cells
        .iter()
        .flat_map(|c| c.lines(std::time::Instant::now(), 0))
        .map(|l| l.to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn a_step_shows_its_text_once_whether_it_streamed_or_not() {
    let (mut app, _rx) = app();
    app.on_agent_event(turn_started());
    app.on_agent_event(event(AgentEventKind::StepStarted { turn: turn(), step: StepId::FIRST }));
    app.on_agent_event(text("Streamed "));
    app.on_agent_event(text("answer."));
    app.on_agent_event(step_finished("Streamed answer."));
    assert!(app.live_answer().is_empty(), "a finished step's text is committed");
    assert_eq!(shown(&app.take_history()), ["Streamed answer."]);

    // A step whose text never streamed shows the text it finished with.
    app.on_agent_event(event(AgentEventKind::StepStarted { turn: turn(), step: StepId::FIRST }));
    app.on_agent_event(step_finished("Logged **answer**."));
    assert_eq!(shown(&app.take_history()), ["Logged answer."]);

    // A retried step shows what the retry streamed, not the void text before it.
    app.on_agent_event(event(AgentEventKind::StepStarted { turn: turn(), step: StepId::FIRST }));
    app.on_agent_event(text("void"));
    app.on_agent_event(event(AgentEventKind::StepRetried {
        turn: turn(),
        step: StepId::FIRST,
        reason: "reset".to_owned(),
    }));
    app.on_agent_event(text("Again."));
    app.on_agent_event(step_finished("Again."));
    let lines = shown(&app.take_history());
    assert!(lines.iter().any(|l| l == "Again."), "{lines:?}");
    assert!(!lines.iter().any(|l| l.contains("void")), "{lines:?}");
}

/// The replay's item of `event`, from the session's own log.
fn replayed(event: codecoder_app::history::HistoryEvent) -> codecoder_app::history::Replayed {
    let source = codecoder_protocol::EventSource {
        session_id: crate::testing::session_id(),
        subagent_path: Vec::new(),
    };
    codecoder_app::history::Replayed { seq: 0, ts: 0, source, event }
}

#[test]
fn a_resumed_session_shows_its_replay_as_it_ran_and_counts_its_tokens() {
    use codecoder_app::history::HistoryEvent::{Agent, User};
    let (mut app, _rx) = app();
    let listing = call("c1", "run_command", json!({"command": "ls"}));
    let orphan = call("c2", "read_file", json!({"path": "a"}));
    let usage = Usage { input_tokens: 1_000, output_tokens: 20, ..Usage::default() };
    let first = vec![
        replayed(User(UserInput::text("hi"))),
        replayed(Agent(AgentEventKind::TurnStarted { turn: turn() })),
        replayed(Agent(AgentEventKind::StepStarted { turn: turn(), step: StepId::FIRST })),
        replayed(Agent(AgentEventKind::ReasoningDelta {
            turn: turn(),
            step: StepId::FIRST,
            delta: "think".to_owned(),
        })),
        replayed(Agent(text("Looking.").kind)),
        replayed(Agent(started(&listing).kind)),
        replayed(Agent(
            finished(
                &listing,
                Ok(ToolResult::text(ToolCallId::new("c1"), ToolResultStatus::Success, "a.rs")),
            )
            .kind,
        )),
        replayed(Agent(AgentEventKind::StepFinished {
            turn: turn(),
            step: StepId::FIRST,
            usage,
            text: "Looking.".to_owned(),
        })),
        replayed(Agent(AgentEventKind::TurnDone {
            turn: turn(),
            cancelled: false,
            outcome: TurnOutcome::Completed,
            usage,
        })),
        // The log ends inside a second turn: the process died with a call running.
        replayed(User(UserInput::text("and then?"))),
        replayed(Agent(AgentEventKind::TurnStarted { turn: turn() })),
        replayed(Agent(AgentEventKind::StepStarted { turn: turn(), step: StepId::FIRST })),
        replayed(Agent(started(&orphan).kind)),
    ];
    app.replay(first);
    let history = app.take_history();
    let lines = shown(&history);
    assert_eq!(
        lines,
        [
            "› hi",
            "▸ thought (1 lines; Ctrl+T shows reasoning in full)",
            "Looking.",
            "✓ run_command $ ls",
            "  │ a.rs",
            "  └ done in 0.0s",
            "› and then?",
            "✗ read_file a",
            "  │ no result (interrupted)",
            "  └ failed after 0.0s",
        ],
        "{history:?}"
    );
    assert!(!app.turn_running, "nothing of the past runs");
    assert_eq!(app.total_usage(), usage);
    assert_eq!(app.context_tokens, 1_020);

    // Another session's past replaces the counts; a new session's (none) clears them.
    app.replay(Vec::new());
    assert_eq!(app.total_usage(), Usage::default());
    assert_eq!(app.context_tokens, 0);
}

#[test]
fn ps_lists_command_sessions_and_stop_names_what_it_could_not_end() {
    let sessions = [
        codecoder_app::ExecSessionInfo {
            id: 3,
            command: "python3 -i".to_owned(),
            pid: 4242,
            tty: true,
            job: None,
            seconds: 12,
        },
        codecoder_app::ExecSessionInfo {
            id: 5,
            command: "npm run dev".to_owned(),
            pid: 4343,
            tty: false,
            job: Some(1),
            seconds: 7,
        },
    ];
    let text = super::process_list(&sessions);
    assert_eq!(
        text,
        "command sessions (end one with /stop N):\n  3  `python3 -i` (pid 4242, on a terminal, 12 s)\n  5  `npm run dev` (pid 4343, background job 1, 7 s)"
    );
    assert_eq!(super::process_list(&[]), "no command sessions are running");
    let (mut app, _rx) = app();
    app.slash("/stop 987654321");
    app.slash("/stop soon");
    let texts = notes(&app.take_history());
    assert!(texts[0].contains("no running command session 987654321"), "{texts:?}");
    assert!(texts[1].contains("usage: /stop N"), "{texts:?}");
}
