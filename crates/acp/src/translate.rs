//! Pure translations between codecoder's vocabulary and ACP's: a prompt's content blocks to
//! `UserInput`; a call's view to its kind, locations and content (diffs for edits); a result to
//! content; a plan update's plan to a plan; the approval modes to session modes; the person's
//! logged message to the chunks that show it again; the model's question to an elicitation form and
//! the form's answer back.
//!
//! Invariants: a call is known by its `CallView` alone (no tool is named here, no argument
//! read); no input panics; paths sent to the client are absolute (relative ones joined to the
//! session's working directory).

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema as acp;
use codecoder_protocol::{
    ApprovalMode, AskUserAnswer, CallKind, CallView, ContentItem, Image, PlanView,
    ToolResultStatus, UserInput,
};

/// What the model is told when the client takes no questions.
pub(crate) const NO_QUESTIONS: &str = "the editor driving this session (through ACP) does not take \
     questions: it did not advertise form elicitation (`elicitation.form`)";

/// The form field of the person's own answer.
const ANSWER_FIELD: &str = "answer";
/// The form field of a suggested answer picked.
const CHOICE_FIELD: &str = "choice";

/// The form of a question: one required text field, or, with suggested answers, a pick among
/// them and a text field for an answer of the person's own (which wins when both are given).
pub(crate) fn question_form(options: &[String]) -> acp::ElicitationSchema {
    if options.is_empty() {
        let answer = acp::StringPropertySchema::new().title("Your answer".to_owned());
        return acp::ElicitationSchema::new().property(ANSWER_FIELD, answer, true);
    }
    let choices: Vec<acp::EnumOption> =
        options.iter().map(|option| acp::EnumOption::new(option.clone(), option.clone())).collect();
    let choice = acp::StringPropertySchema::new().title("Choose".to_owned()).one_of(choices);
    let answer = acp::StringPropertySchema::new().title("Or answer in your own words".to_owned());
    acp::ElicitationSchema::new().property(CHOICE_FIELD, choice, false).property(
        ANSWER_FIELD,
        answer,
        false,
    )
}

/// The person's answer to a question form; anything but an accepted form with a non-empty
/// answer (a decline, a cancel, a failed request) declines.
pub(crate) fn question_answer(response: Option<acp::CreateElicitationResponse>) -> AskUserAnswer {
    let Some(acp::ElicitationAction::Accept(accepted)) = response.map(|r| r.action) else {
        return AskUserAnswer::Declined;
    };
    let content = accepted.content.unwrap_or_default();
    let text = |field: &str| match content.get(field) {
        Some(acp::ElicitationContentValue::String(text)) => text.trim().to_owned(),
        Some(acp::ElicitationContentValue::StringArray(texts)) => {
            texts.join(", ").trim().to_owned()
        }
        // Numbers and booleans are not answers to these text fields.
        Some(_) | None => String::new(),
    };
    let text = [text(ANSWER_FIELD), text(CHOICE_FIELD)].into_iter().find(|t| !t.is_empty());
    match text {
        Some(text) => AskUserAnswer::Answer { text },
        None => AskUserAnswer::Declined,
    }
}

/// The call's ACP kind, by the class its view gives it.
pub(crate) fn tool_kind(view: &CallView) -> acp::ToolKind {
    match view.kind {
        CallKind::Read => acp::ToolKind::Read,
        CallKind::Edit => acp::ToolKind::Edit,
        CallKind::Search => acp::ToolKind::Search,
        CallKind::Execute => acp::ToolKind::Execute,
        CallKind::Fetch => acp::ToolKind::Fetch,
        CallKind::Plan => acp::ToolKind::Think,
        CallKind::Ask | CallKind::Agent | CallKind::Mcp { .. } | CallKind::Other => {
            acp::ToolKind::Other
        }
    }
}

fn absolute(cwd: &Path, path: &str) -> PathBuf {
    cwd.join(path)
}

/// The files the call reads or changes, absolute; a read's line goes with its file.
pub(crate) fn locations(view: &CallView, cwd: &Path) -> Vec<acp::ToolCallLocation> {
    view.paths
        .iter()
        .enumerate()
        .map(|(index, path)| {
            let line = if index == 0 { view.line } else { None };
            acp::ToolCallLocation::new(absolute(cwd, path)).line(line)
        })
        .collect()
}

/// What an edit will change, as diffs of old text to new (shown before and while it runs):
/// one per replacement of each changed file; nothing for other calls.
pub(crate) fn call_content(view: &CallView, cwd: &Path) -> Vec<acp::ToolCallContent> {
    let mut out = Vec::new();
    for change in &view.changes {
        let path = absolute(cwd, &change.path);
        for edit in &change.edits {
            out.push(acp::ToolCallContent::Diff(
                acp::Diff::new(path.clone(), edit.new.clone()).old_text(edit.old.clone()),
            ));
        }
    }
    out
}

/// Text as tool-call content.
pub(crate) fn text_content(text: impl Into<String>) -> acp::ToolCallContent {
    acp::ToolCallContent::Content(acp::Content::new(acp::ContentBlock::Text(
        acp::TextContent::new(text),
    )))
}

/// A command's output as tool-call content: a fenced block, as a terminal shows it.
pub(crate) fn terminal_content(output: &str) -> acp::ToolCallContent {
    let fence = if output.contains("```") { "~~~~" } else { "```" };
    text_content(format!("{fence}\n{}\n{fence}", output.trim_end()))
}

/// What a finished call shows, by the view of the call as it started (`None` for a call that
/// never started): an edit keeps its diffs, a command its output as a terminal does, anything
/// else the result's text.
pub(crate) fn result_content(
    view: Option<&CallView>,
    text: &str,
    ok: bool,
    cwd: &Path,
) -> Vec<acp::ToolCallContent> {
    let Some(view) = view else {
        return if text.is_empty() { Vec::new() } else { vec![text_content(text)] };
    };
    if view.command.is_some() {
        return vec![terminal_content(text)];
    }
    if ok && view.kind == CallKind::Edit {
        let diffs = call_content(view, cwd);
        if !diffs.is_empty() {
            return diffs;
        }
        return vec![text_content(text)];
    }
    if text.is_empty() { Vec::new() } else { vec![text_content(text)] }
}

/// The status a result ends a call with.
pub(crate) fn result_status(status: ToolResultStatus) -> acp::ToolCallStatus {
    match status {
        ToolResultStatus::Success => acp::ToolCallStatus::Completed,
        ToolResultStatus::Error | ToolResultStatus::Cancelled => acp::ToolCallStatus::Failed,
    }
}

/// A call's plan as an ACP plan; `None` for a plan without steps (no plan a tool accepts).
pub(crate) fn plan(plan: &PlanView) -> Option<acp::Plan> {
    if plan.steps.is_empty() {
        return None;
    }
    let entries = plan
        .steps
        .iter()
        .map(|step| {
            let status = match step.status.as_str() {
                "completed" => acp::PlanEntryStatus::Completed,
                "in_progress" => acp::PlanEntryStatus::InProgress,
                _ => acp::PlanEntryStatus::Pending,
            };
            acp::PlanEntry::new(step.text.clone(), acp::PlanEntryPriority::Medium, status)
        })
        .collect();
    Some(acp::Plan::new(entries))
}

/// The plan a call states, when the call is a plan update (a call that only presents a plan
/// for approval stays a tool call).
pub(crate) fn plan_update(view: &CallView) -> Option<&PlanView> {
    match view.kind {
        CallKind::Plan => view.plan.as_ref(),
        CallKind::Read
        | CallKind::Edit
        | CallKind::Search
        | CallKind::Execute
        | CallKind::Fetch
        | CallKind::Ask
        | CallKind::Agent
        | CallKind::Mcp { .. }
        | CallKind::Other => None,
    }
}

/// The prompt's content blocks as the person's input: text and images as they are, a resource
/// link as a mention of its URI, an embedded text resource as a tagged block with its URI (the
/// editor's context); binary resources and audio are named, not inlined.
pub(crate) fn user_input(blocks: Vec<acp::ContentBlock>) -> UserInput {
    let mut content = Vec::new();
    let text = |text: String| ContentItem::Text { text };
    for block in blocks {
        match block {
            acp::ContentBlock::Text(block) => content.push(text(block.text)),
            acp::ContentBlock::Image(image) => content.push(ContentItem::Image(Image {
                media_type: image.mime_type,
                data_base64: image.data,
            })),
            acp::ContentBlock::ResourceLink(link) => content.push(text(format!("@{}", link.uri))),
            acp::ContentBlock::Resource(resource) => match resource.resource {
                acp::EmbeddedResourceResource::TextResourceContents(contents) => {
                    content.push(text(format!(
                        "<context uri=\"{}\">\n{}\n</context>",
                        contents.uri, contents.text
                    )));
                }
                acp::EmbeddedResourceResource::BlobResourceContents(contents) => {
                    content.push(text(format!("[binary resource {}]", contents.uri)));
                }
                _ => {}
            },
            acp::ContentBlock::Audio(_) => content.push(text("[audio left out]".to_owned())),
            _ => {}
        }
    }
    UserInput { content }
}

/// The session modes: our approval modes.
pub(crate) fn modes(current: ApprovalMode) -> acp::SessionModeState {
    let mode = |approval: ApprovalMode, name: &str, description: &str| {
        acp::SessionMode::new(approval.as_str(), name).description(description.to_owned())
    };
    acp::SessionModeState::new(
        current.as_str(),
        vec![
            mode(ApprovalMode::Untrusted, "Untrusted", "Ask before anything but known-safe reads"),
            mode(
                ApprovalMode::OnRequest,
                "On request",
                "Ask for what leaves the sandbox or is destructive",
            ),
            mode(ApprovalMode::Never, "Never ask", "Refuse what would ask; never interrupt"),
        ],
    )
}

/// The person's message as the chunks that show it again: its text and images (stored
/// outputs are not shown).
pub(crate) fn user_updates(input: &UserInput) -> Vec<acp::SessionUpdate> {
    let mut out = Vec::new();
    for item in &input.content {
        let block = match item {
            ContentItem::Text { text } => acp::ContentBlock::Text(acp::TextContent::new(text)),
            ContentItem::Image(image) => acp::ContentBlock::Image(acp::ImageContent::new(
                image.data_base64.clone(),
                image.media_type.clone(),
            )),
            ContentItem::BlobRef(_) => continue,
        };
        out.push(acp::SessionUpdate::UserMessageChunk(acp::ContentChunk::new(block)));
    }
    out
}
