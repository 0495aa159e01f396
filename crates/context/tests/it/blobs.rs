//! Blob resolution: references in the history are inlined through the resolver, once per blob
//! per builder; a blob the resolver cannot find stays a reference (also remembered).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use codecoder_context::ContextBuilder;
use codecoder_kernel::{PromptBuilder, PromptInput};
use codecoder_protocol::{
    BlobRef, ContentItem, Image, Message, MessageItem, Role, SessionId, StepId, ToolCallId,
    ToolResult, ToolResultStatus, TurnId,
};
use codecoder_session::BlobStore;
use pretty_assertions::assert_eq;

use crate::support::{Project, tools};

fn build(builder: &ContextBuilder, history: &[Message]) -> Vec<Message> {
    builder
        .build(&PromptInput {
            session_id: SessionId::new(),
            model: "gpt-test",
            agent_instructions: None,
            history: &crate::support::arcs(history),
            tools: &tools(),
            turn: TurnId::new(1),
            step: StepId::new(1),
        })
        .history
        .iter()
        .map(|message| (**message).clone())
        .collect()
}

fn tool_result(content: Vec<ContentItem>) -> Message {
    Message::new(
        Role::Tool,
        vec![MessageItem::ToolResult(ToolResult {
            tool_call_id: ToolCallId::new("call_1"),
            content,
            status: ToolResultStatus::Success,
            exit: None,
        })],
    )
}

#[test]
fn blobs_from_the_session_store_are_inlined_once() {
    let project = Project::new();
    let store = BlobStore::new(project.path("home/sessions/blobs"));
    let long_output = "test result: ok. 412 passed\n".repeat(2_000);
    let mut item = ContentItem::Text { text: long_output.clone() };
    store.externalize(&mut item, 1_024).unwrap();
    let ContentItem::BlobRef(blob) = item.clone() else { panic!("not externalized: {item:?}") };
    let missing = BlobRef { sha256: "0".repeat(64), preview: "lost".to_owned(), ..blob.clone() };

    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&asked);
    let resolver_store = store.clone();
    let builder = project.builder(&project.repo(), &project.config()).with_blob_resolver(
        move |blob: &BlobRef| {
            log.lock().unwrap().push(blob.sha256.clone());
            resolver_store.resolve(blob).ok()
        },
    );

    let history = vec![
        Message::new(Role::User, vec![MessageItem::BlobRef(blob.clone())]),
        tool_result(vec![
            ContentItem::Text { text: "head".to_owned() },
            item,
            ContentItem::BlobRef(missing.clone()),
        ]),
    ];
    for _ in 0..3 {
        let built = build(&builder, &history);
        assert_eq!(built[0].items, vec![MessageItem::Text { text: long_output.clone() }]);
        assert_eq!(built[0].id, history[0].id);
        assert_eq!(
            built[1].items,
            vec![MessageItem::ToolResult(ToolResult {
                tool_call_id: ToolCallId::new("call_1"),
                content: vec![
                    ContentItem::Text { text: "head".to_owned() },
                    ContentItem::Text { text: long_output.clone() },
                    ContentItem::BlobRef(missing.clone()),
                ],
                status: ToolResultStatus::Success,
                exit: None,
            })]
        );
    }
    // One look-up per distinct blob over three builds, the missing one included.
    assert_eq!(*asked.lock().unwrap(), vec![blob.sha256, missing.sha256]);
}

#[test]
fn an_image_blob_becomes_an_image_item() {
    let project = Project::new();
    let image =
        Image { media_type: "image/png".to_owned(), data_base64: "iVBORw0KGgo=".to_owned() };
    let answer = image.clone();
    let builder = project
        .builder(&project.repo(), &project.config())
        .with_blob_resolver(move |_| Some(ContentItem::Image(answer.clone())));
    let blob = BlobRef {
        sha256: "ef".repeat(32),
        size: 9,
        media_type: "image/png;base64".to_owned(),
        preview: String::new(),
    };
    let built = build(&builder, &[Message::new(Role::User, vec![MessageItem::BlobRef(blob)])]);
    assert_eq!(built[0].items, vec![MessageItem::Image(image)]);
}

#[test]
fn without_a_resolver_references_stay() {
    let project = Project::new();
    let builder = project.builder(&project.repo(), &project.config());
    let blob = BlobRef {
        sha256: "12".repeat(32),
        size: 100_000,
        media_type: "text/plain; charset=utf-8".to_owned(),
        preview: "first lines".to_owned(),
    };
    let history = vec![tool_result(vec![ContentItem::BlobRef(blob)])];
    assert_eq!(build(&builder, &history), history);
}

#[test]
fn messages_without_blobs_never_ask_the_resolver() {
    let project = Project::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let builder =
        project.builder(&project.repo(), &project.config()).with_blob_resolver(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
            None
        });
    let history = vec![
        Message::user_text("hi"),
        tool_result(vec![ContentItem::Text { text: "ok".to_owned() }]),
    ];
    assert_eq!(build(&builder, &history), history);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}
