//! Prefix stability: the requests of a 5-step conversation extend each other byte for byte,
//! even though the clock moves, AGENTS.md changes on disk and the blob resolver would answer
//! differently each time it is asked.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use codecoder_context::{AgentsMdLoader, ContextBuilder, Environment, GitStatus};
use codecoder_kernel::{ModelRequest, PromptBuilder, PromptInput};
use codecoder_protocol::{
    BlobRef, ContentItem, Message, MessageItem, Role, SessionId, StepId, ToolCall, ToolCallId,
    ToolResult, ToolResultStatus, TurnId,
};
use codecoder_stdx::ManualClock;
use serde_json::json;

use crate::support::{Project, START_MS, assert_prefix_stable, open_body, set_mtime, tools};

const DAY_MS: u64 = 86_400_000;

fn blob(index: usize) -> BlobRef {
    BlobRef {
        sha256: format!("{index:064x}"),
        size: 50_000,
        media_type: "text/plain; charset=utf-8".to_owned(),
        preview: format!("preview {index}"),
    }
}

/// The messages one step adds: the model's call, then its result (held in the blob store).
fn step_messages(step: usize) -> Vec<Message> {
    let id = ToolCallId::new(format!("call_{step}"));
    vec![
        Message::new(
            Role::Assistant,
            vec![
                MessageItem::Text { text: format!("Reading part {step}.") },
                MessageItem::ToolCall(ToolCall {
                    id: id.clone(),
                    name: "read_file".to_owned(),
                    args: json!({ "path": format!("src/part{step}.rs") }),
                }),
            ],
        ),
        Message::new(
            Role::Tool,
            vec![MessageItem::ToolResult(ToolResult {
                tool_call_id: id,
                content: vec![ContentItem::BlobRef(blob(step))],
                status: ToolResultStatus::Success,
                exit: None,
            })],
        ),
    ]
}

#[test]
fn five_steps_extend_each_other_byte_for_byte() {
    let project = Project::new();
    let agents = project.write("repo/AGENTS.md", "Use tabs.");
    set_mtime(&agents, 1_000);
    let loader = Arc::new(AgentsMdLoader::new());
    let config = project.config();
    // Every reading of the clock moves it a day, so a second reading would change the date.
    let clock = ManualClock::new(START_MS, DAY_MS);
    let mut environment = Environment::new(project.repo(), Some("/bin/bash".to_owned()));
    environment.git_status = Some(GitStatus::Porcelain(" M src/lib.rs\n".to_owned()));
    // The resolver answers differently every time: only its cache keeps requests stable.
    let resolutions = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&resolutions);
    let builder = ContextBuilder::new(&config, &environment, &clock, &loader)
        .unwrap()
        .with_blob_resolver(move |blob| {
            let nth = counter.fetch_add(1, Ordering::SeqCst);
            Some(ContentItem::Text { text: format!("full text of {} (read #{nth})", blob.preview) })
        });

    let session_id = SessionId::new();
    let tools = tools();
    let mut history = vec![Message::user_text("Fix the parser bug.")];
    let mut requests: Vec<ModelRequest> = Vec::new();
    for step in 1..=5 {
        let request = builder.build(&PromptInput {
            session_id,
            model: "gpt-test",
            agent_instructions: None,
            history: &crate::support::arcs(&history),
            tools: &tools,
            turn: TurnId::new(1),
            step: StepId::new(u32::try_from(step).unwrap()),
        });
        requests.push(request);
        history.extend(step_messages(step));
        // Between steps the project changes under the session.
        project.write("repo/AGENTS.md", &format!("Use spaces (edit {step})."));
        set_mtime(&agents, 1_000 + step as u64 * 60);
        environment.git_status = Some(GitStatus::Porcelain(format!("?? new{step}.rs\n")));
    }

    assert_prefix_stable(&requests);
    let last = requests.last().unwrap();
    assert!(last.instructions.contains("Use tabs."));
    assert!(last.instructions.contains("2026-11-30"));
    assert!(last.instructions.contains("1 modified"));
    assert_eq!(last.history.len(), 9);
    // Each blob was resolved once, when it first appeared, and inlined.
    assert_eq!(resolutions.load(Ordering::SeqCst), 4);
    let MessageItem::ToolResult(result) = &last.history[2].items[0] else { panic!() };
    assert_eq!(
        result.content,
        vec![ContentItem::Text { text: "full text of preview 1 (read #0)".to_owned() }]
    );

    // The freeze is what kept them stable: a new session's builder sees today's files.
    let next_session = ContextBuilder::new(&config, &environment, &clock, &loader).unwrap();
    let fresh = next_session.build(&PromptInput {
        session_id: SessionId::new(),
        model: "gpt-test",
        agent_instructions: None,
        history: &crate::support::arcs(&history[..1]),
        tools: &tools,
        turn: TurnId::new(1),
        step: StepId::new(1),
    });
    assert!(fresh.instructions.contains("Use spaces (edit 5)."), "{}", fresh.instructions);
    assert!(fresh.instructions.contains("new5.rs"));
    assert!(!fresh.instructions.contains("2026-11-30"), "the clock moved a day");
    assert!(!open_body(&fresh).starts_with(&open_body(&requests[0])));
}

#[test]
fn a_session_keeps_its_first_agent_instructions() {
    let project = Project::new();
    let builder = project.builder(&project.repo(), &project.config());
    let session_id = SessionId::new();
    let first = builder.instructions_for(session_id, Some("Only review."));
    let later = builder.instructions_for(session_id, Some("Something else."));
    assert_eq!(first, later);
    assert!(first.ends_with("# Agent instructions\n\nOnly review."));
}
