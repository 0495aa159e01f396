//! Pure translations between codecoder's vocabulary and ACP's: a prompt's content blocks to
//! `UserInput`; a tool call to its kind, title, locations and content (diffs for edits); a result
//! to content; `update_plan` to a plan; the approval modes to session modes; a session log's
//! records to the updates that replay it; the model's question to an elicitation form and the
//! form's answer back.
//!
//! Invariants: no input panics (arguments are the model's, unchecked here); paths sent to the
//! client are absolute (relative ones joined to the session's working directory).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema as acp;
use codecoder_protocol::{
    ApprovalMode, AskUserAnswer, ContentItem, Image, MessageItem, Record, RecordBody, ToolCall,
    ToolCallId, ToolResult, ToolResultStatus, UserInput,
};
use serde_json::Value;

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

/// The tool's ACP kind, by its name.
pub(crate) fn tool_kind(name: &str) -> acp::ToolKind {
    match name {
        "read_file" => acp::ToolKind::Read,
        "write_file" | "edit" | "apply_patch" => acp::ToolKind::Edit,
        "list_dir" | "glob" | "grep" => acp::ToolKind::Search,
        "run_command" | "job_output" | "job_kill" => acp::ToolKind::Execute,
        "web_fetch" => acp::ToolKind::Fetch,
        "update_plan" => acp::ToolKind::Think,
        _ => acp::ToolKind::Other,
    }
}

fn str_arg<'a>(args: &'a Value, name: &str) -> &'a str {
    args.get(name).and_then(Value::as_str).unwrap_or("")
}

/// One line saying what the call does, as an editor shows it.
pub(crate) fn title(call: &ToolCall) -> String {
    let args = &call.args;
    match call.name.as_str() {
        "read_file" => format!("Read {}", str_arg(args, "path")),
        "write_file" => format!("Write {}", str_arg(args, "path")),
        "edit" => format!("Edit {}", str_arg(args, "path")),
        "apply_patch" => format!("Patch {}", patch_paths(str_arg(args, "input")).join(", ")),
        "list_dir" => format!("List {}", str_arg(args, "path")),
        "glob" => format!("Find `{}`", str_arg(args, "pattern")),
        "grep" => format!("Search `{}`", str_arg(args, "pattern")),
        "run_command" => format!("Run `{}`", str_arg(args, "command")),
        "web_fetch" => format!("Fetch {}", str_arg(args, "url")),
        "update_plan" => "Update the plan".to_owned(),
        name => name.to_owned(),
    }
}

/// The paths a patch touches, as written in it (move destinations too).
fn patch_paths(input: &str) -> Vec<String> {
    let Ok(patch) = codecoder_apply_patch::parse(input) else { return Vec::new() };
    let mut paths = Vec::new();
    for hunk in patch.hunks() {
        paths.push(hunk.path().to_string_lossy().into_owned());
        if let codecoder_apply_patch::Hunk::Update { move_to: Some(to), .. } = hunk {
            paths.push(to.to_string_lossy().into_owned());
        }
    }
    paths
}

fn absolute(cwd: &Path, path: &str) -> PathBuf {
    cwd.join(path)
}

/// The files the call reads or changes, absolute.
pub(crate) fn locations(call: &ToolCall, cwd: &Path) -> Vec<acp::ToolCallLocation> {
    let args = &call.args;
    match call.name.as_str() {
        "read_file" | "write_file" | "edit" | "list_dir" => {
            let path = str_arg(args, "path");
            if path.is_empty() {
                return Vec::new();
            }
            let line =
                args.get("offset").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok());
            vec![acp::ToolCallLocation::new(absolute(cwd, path)).line(line)]
        }
        "apply_patch" => patch_paths(str_arg(args, "input"))
            .iter()
            .map(|path| acp::ToolCallLocation::new(absolute(cwd, path)))
            .collect(),
        _ => Vec::new(),
    }
}

/// What an edit will change, as diffs (shown before and while it runs); nothing for other tools.
pub(crate) fn call_content(call: &ToolCall, cwd: &Path) -> Vec<acp::ToolCallContent> {
    let args = &call.args;
    match call.name.as_str() {
        "edit" => vec![acp::ToolCallContent::Diff(
            acp::Diff::new(absolute(cwd, str_arg(args, "path")), str_arg(args, "new_string"))
                .old_text(str_arg(args, "old_string").to_owned()),
        )],
        "write_file" => vec![acp::ToolCallContent::Diff(acp::Diff::new(
            absolute(cwd, str_arg(args, "path")),
            str_arg(args, "content"),
        ))],
        "apply_patch" => {
            let Ok(patch) = codecoder_apply_patch::parse(str_arg(args, "input")) else {
                return Vec::new();
            };
            let mut out = Vec::new();
            for hunk in patch.hunks() {
                let path = absolute(cwd, &hunk.path().to_string_lossy());
                match hunk {
                    codecoder_apply_patch::Hunk::Add { contents, .. } => {
                        out.push(acp::ToolCallContent::Diff(acp::Diff::new(path, contents)));
                    }
                    codecoder_apply_patch::Hunk::Delete { .. } => {
                        out.push(acp::ToolCallContent::Diff(
                            acp::Diff::new(path, "").old_text(String::new()),
                        ));
                    }
                    codecoder_apply_patch::Hunk::Update { chunks, .. } => {
                        for chunk in chunks {
                            let old = chunk.old_lines().join("\n");
                            let new = chunk.new_lines().join("\n");
                            out.push(acp::ToolCallContent::Diff(
                                acp::Diff::new(path.clone(), new).old_text(old),
                            ));
                        }
                    }
                }
            }
            out
        }
        _ => Vec::new(),
    }
}

/// A result's text (images and stored outputs as short placeholders).
pub(crate) fn result_text(result: &ToolResult) -> String {
    let mut out = String::new();
    for item in &result.content {
        match item {
            ContentItem::Text { text } => out.push_str(text),
            ContentItem::Image(image) => out.push_str(&format!("[image {}]", image.media_type)),
            ContentItem::BlobRef(blob) => out.push_str(&blob.preview),
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

/// What a finished call shows: an edit keeps its diffs, a command its output as a terminal
/// does, anything else the result's text.
pub(crate) fn result_content(
    call: Option<&ToolCall>,
    text: &str,
    ok: bool,
    cwd: &Path,
) -> Vec<acp::ToolCallContent> {
    let name = call.map_or("", |call| call.name.as_str());
    match (name, ok) {
        ("edit" | "write_file" | "apply_patch", true) => {
            let mut out = call.map(|call| call_content(call, cwd)).unwrap_or_default();
            if out.is_empty() {
                out.push(text_content(text));
            }
            out
        }
        ("run_command", _) => vec![terminal_content(text)],
        _ if text.is_empty() => Vec::new(),
        _ => vec![text_content(text)],
    }
}

/// The status a result ends a call with.
pub(crate) fn result_status(status: ToolResultStatus) -> acp::ToolCallStatus {
    match status {
        ToolResultStatus::Success => acp::ToolCallStatus::Completed,
        ToolResultStatus::Error | ToolResultStatus::Cancelled => acp::ToolCallStatus::Failed,
    }
}

/// `update_plan`'s arguments as a plan.
pub(crate) fn plan(args: &Value) -> Option<acp::Plan> {
    let steps = args.get("plan")?.as_array()?;
    let entries = steps
        .iter()
        .map(|step| {
            let status = match str_arg(step, "status") {
                "completed" => acp::PlanEntryStatus::Completed,
                "in_progress" => acp::PlanEntryStatus::InProgress,
                _ => acp::PlanEntryStatus::Pending,
            };
            acp::PlanEntry::new(str_arg(step, "step"), acp::PlanEntryPriority::Medium, status)
        })
        .collect();
    Some(acp::Plan::new(entries))
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

fn chunk(block: acp::ContentBlock) -> acp::ContentChunk {
    acp::ContentChunk::new(block)
}

fn text_block(text: &str) -> acp::ContentBlock {
    acp::ContentBlock::Text(acp::TextContent::new(text))
}

/// The updates that replay a session log: the person's messages, the model's text and
/// reasoning, each tool call (with its plan, diffs and result).
pub(crate) fn replay<'a>(
    records: impl Iterator<Item = &'a Record>,
    cwd: &Path,
) -> Vec<acp::SessionUpdate> {
    let mut out = Vec::new();
    let mut calls: HashMap<ToolCallId, ToolCall> = HashMap::new();
    for record in records {
        match &record.body {
            RecordBody::UserMessage { message } => {
                for item in &message.items {
                    match item {
                        MessageItem::Text { text } => {
                            out.push(acp::SessionUpdate::UserMessageChunk(chunk(text_block(text))));
                        }
                        MessageItem::Image(image) => {
                            out.push(acp::SessionUpdate::UserMessageChunk(chunk(
                                acp::ContentBlock::Image(acp::ImageContent::new(
                                    image.data_base64.clone(),
                                    image.media_type.clone(),
                                )),
                            )));
                        }
                        MessageItem::Reasoning(_)
                        | MessageItem::ToolCall(_)
                        | MessageItem::ToolResult(_)
                        | MessageItem::BlobRef(_) => {}
                    }
                }
            }
            RecordBody::AssistantMessage { message } => {
                for item in &message.items {
                    match item {
                        MessageItem::Text { text } => {
                            out.push(acp::SessionUpdate::AgentMessageChunk(chunk(text_block(
                                text,
                            ))));
                        }
                        MessageItem::Reasoning(reasoning) if !reasoning.text.is_empty() => {
                            out.push(acp::SessionUpdate::AgentThoughtChunk(chunk(text_block(
                                &reasoning.text,
                            ))));
                        }
                        MessageItem::ToolCall(call) => {
                            if call.name == "update_plan" {
                                if let Some(plan) = plan(&call.args) {
                                    out.push(acp::SessionUpdate::Plan(plan));
                                }
                                continue;
                            }
                            out.push(acp::SessionUpdate::ToolCall(
                                acp::ToolCall::new(call.id.to_string(), title(call))
                                    .kind(tool_kind(&call.name))
                                    .status(acp::ToolCallStatus::InProgress)
                                    .locations(locations(call, cwd))
                                    .content(call_content(call, cwd))
                                    .raw_input(call.args.clone()),
                            ));
                            calls.insert(call.id.clone(), call.clone());
                        }
                        MessageItem::Reasoning(_)
                        | MessageItem::ToolResult(_)
                        | MessageItem::Image(_)
                        | MessageItem::BlobRef(_) => {}
                    }
                }
            }
            RecordBody::ToolResult { result, .. } => {
                let Some(call) = calls.remove(&result.tool_call_id) else { continue };
                let text = result_text(result);
                let ok = result.status == ToolResultStatus::Success;
                let fields = acp::ToolCallUpdateFields::new()
                    .status(result_status(result.status))
                    .content(result_content(Some(&call), &text, ok, cwd));
                out.push(acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(
                    call.id.to_string(),
                    fields,
                )));
            }
            _ => {}
        }
    }
    out
}
