//! The context window: `check_fits` and `ContextWindowGuard` pass what fits, refuse what does
//! not with a message saying what to do, and agree with each other.

use std::sync::Arc;

use codecoder_context::{ContextWindowGuard, Error};
use codecoder_kernel::{
    PromptBuilder, PromptInput, StepInfo, StepInterceptor, StepVerdict, ToolSpec,
};
use codecoder_protocol::{
    BlobRef, ContentItem, Message, MessageItem, Role, SessionId, StepId, TurnId, UserInput,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::{Project, tools};

fn input<'a>(
    session_id: SessionId,
    history: &'a [Arc<Message>],
    tools: &'a [codecoder_kernel::ToolSpec],
) -> PromptInput<'a> {
    PromptInput {
        session_id,
        model: "gpt-test",
        agent_instructions: None,
        history,
        tools,
        turn: TurnId::new(1),
        step: StepId::new(1),
    }
}

/// A text of exactly `tokens` tokens.
fn text_of(tokens: usize) -> String {
    " hello".repeat(tokens)
}

#[test]
fn check_fits_passes_then_fails_with_a_clear_message() {
    let project = Project::new();
    let mut config = project.config();
    config.context_window = 5_000;
    config.max_output_tokens = 1_000;
    let builder = project.builder(&project.repo(), &config);
    let tools = tools();
    let session_id = SessionId::new();

    let small = builder.build(&input(
        session_id,
        &crate::support::arcs(&[Message::user_text("hi")]),
        &tools,
    ));
    let fixed = builder.estimate_tokens(&small);
    assert!(fixed > 500, "instructions and tools count: {fixed}");
    builder.check_fits(&small).unwrap();

    // Exactly at the limit fits; one token more does not.
    let room = 4_000 - fixed + 1; // the "hi" message was 1 token of content
    let at_limit = builder.build(&input(
        session_id,
        &[Arc::new(Message::user_text(text_of(usize::try_from(room).unwrap())))],
        &tools,
    ));
    assert_eq!(builder.estimate_tokens(&at_limit), 4_000);
    builder.check_fits(&at_limit).unwrap();

    let history = [Message::user_text(text_of(usize::try_from(room + 1).unwrap()))];
    let over = builder.build(&input(session_id, &crate::support::arcs(&history), &tools));
    let err = builder.check_fits(&over).unwrap_err();
    assert!(
        matches!(err, Error::ContextWindowExceeded { needed: 4_001, available: 4_000, .. }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "the conversation needs ~4001 tokens but gpt-test fits 5000 - 1000 = 4000; {}",
            crate::WINDOW_ADVICE
        )
    );
    // Never truncated: the request still holds the whole history.
    assert_eq!(over.history, crate::support::arcs(&history));
}

#[test]
fn an_unresolved_blob_counts_its_preview_not_its_size() {
    let project = Project::new();
    let builder = project.builder(&project.repo(), &project.config());
    let tools = tools();
    let plain = builder.build(&input(SessionId::new(), &crate::support::arcs(&[]), &tools));
    let blob = BlobRef {
        sha256: "ab".repeat(32),
        size: 10_000_000,
        media_type: "text/plain; charset=utf-8".to_owned(),
        preview: text_of(50),
    };
    let history = [Message::new(Role::User, vec![MessageItem::BlobRef(blob)])];
    let with_blob =
        builder.build(&input(SessionId::new(), &crate::support::arcs(&history), &tools));
    assert_eq!(builder.estimate_tokens(&with_blob) - builder.estimate_tokens(&plain), 4 + 50);
}

/// The step `step` of turn 1 with no usage reported yet.
fn step_info<'a>(
    session_id: SessionId,
    step: u32,
    history: &'a [Message],
    tools: &'a [ToolSpec],
) -> StepInfo<'a> {
    StepInfo {
        session_id,
        turn: TurnId::new(1),
        step: StepId::new(step),
        history,
        depth: 0,
        reported: None,
        tools,
    }
}

#[test]
fn the_guard_agrees_with_check_fits() {
    let project = Project::new();
    let mut config = project.config();
    config.context_window = 6_000;
    config.max_output_tokens = 1_000;
    let builder = Arc::new(project.builder(&project.repo(), &config));
    let tools = tools();
    let guard = ContextWindowGuard::new(Arc::clone(&builder), "gpt-test", tools.clone());
    let session_id = SessionId::new();
    let history = vec![
        Message::user_text("Fix it."),
        Message::new(Role::Assistant, vec![MessageItem::Text { text: text_of(300) }]),
    ];
    let pending = vec![UserInput::text(text_of(200))];
    let info = step_info(session_id, 2, &history, &[]);

    // What the kernel will send after adding the pending input as a user message.
    let mut next_history = history.clone();
    next_history.push(Message::user_text(text_of(200)));
    let next = builder.build(&input(session_id, &crate::support::arcs(&next_history), &tools));
    assert_eq!(guard.estimate(&info, &pending), builder.estimate_tokens(&next));

    let mut kept = pending.clone();
    assert_eq!(guard.before_step(&info, &mut kept), StepVerdict::Proceed);
    assert_eq!(kept, pending, "the guard never rewrites input");

    let mut too_much = vec![UserInput::text(text_of(5_000))];
    let StepVerdict::Reject { message } = guard.before_step(&info, &mut too_much) else {
        panic!("a 5,000-token input cannot fit a 5,000-token budget beside the prompt");
    };
    assert!(message.starts_with("the conversation needs ~"), "{message}");
    assert!(
        message
            .ends_with(&format!("but gpt-test fits 6000 - 1000 = 5000; {}", crate::WINDOW_ADVICE)),
        "{message}"
    );
}

#[test]
fn the_guard_counts_blobs_as_the_builder_will_inline_them() {
    let project = Project::new();
    let mut config = project.config();
    config.context_window = 3_000;
    config.max_output_tokens = 500;
    let builder = Arc::new(
        project
            .builder(&project.repo(), &config)
            .with_blob_resolver(|_| Some(ContentItem::Text { text: text_of(5_000) })),
    );
    let guard = ContextWindowGuard::new(Arc::clone(&builder), "gpt-test", tools());
    let blob = BlobRef {
        sha256: "cd".repeat(32),
        size: 30_000,
        media_type: "text/plain; charset=utf-8".to_owned(),
        preview: "short".to_owned(),
    };
    let history = [Message::new(Role::User, vec![MessageItem::BlobRef(blob)])];
    let info = step_info(SessionId::new(), 1, &history, &[]);
    assert!(matches!(guard.before_step(&info, &mut Vec::new()), StepVerdict::Reject { .. }));
}

#[test]
fn the_guard_counts_the_tools_that_joined_late() {
    let project = Project::new();
    let mut config = project.config();
    config.context_window = 6_000;
    config.max_output_tokens = 1_000;
    let builder = Arc::new(project.builder(&project.repo(), &config));
    // Made with the registry's tools; an MCP server's tool with a large schema joins later.
    let guard = ContextWindowGuard::new(Arc::clone(&builder), "gpt-test", tools());
    let mut all = tools();
    all.push(ToolSpec {
        name: "mcp__docs__search".to_owned(),
        description: text_of(4_500),
        schema: json!({ "type": "object", "properties": { "query": { "type": "string" } } }),
    });
    let session_id = SessionId::new();
    let history = vec![Message::user_text(text_of(1_000))];
    let step = |tools| step_info(session_id, 2, &history, tools);

    // The estimate is what the builder counts for the request that offers every tool.
    let next = builder.build(&input(session_id, &crate::support::arcs(&history), &all));
    assert_eq!(guard.estimate(&step(&all), &[]), builder.estimate_tokens(&next));
    // Alone, the history fits beside the registry's tools; with the late tool it does not.
    assert_eq!(guard.before_step(&step(&[]), &mut Vec::new()), StepVerdict::Proceed);
    let verdict = guard.before_step(&step(&all), &mut Vec::new());
    assert!(matches!(verdict, StepVerdict::Reject { .. }), "{verdict:?}");
    // Asked again (the byte bound of the longer list is kept), the answer is the same.
    assert_eq!(guard.before_step(&step(&all), &mut Vec::new()), verdict);
}
