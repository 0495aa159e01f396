//! A stored thread's earlier turns, read back from its session log for `thread/resume` and
//! `thread/fork`: the person's messages, the model's text and reasoning, tool calls with their
//! results, compactions, and how each turn ended.
//!
//! Invariant: only reads the log. Item ids are `log_item_N`, distinct from the live worker's
//! `item_N`; a turn's id is its number in the log.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use codecoder_protocol::record::RecordBody;
use codecoder_protocol::{ApprovalDecision, MessageItem, ToolCallId, TurnOutcome};

use crate::thread::{OpenTool, finish, tool_item, turn};
use crate::types::{ItemStatus, ThreadItem, Turn, TurnError, TurnStatus, UserInput};

/// The turns of the log at `path`, oldest first; none when it cannot be read.
pub(crate) fn turns(path: &Path, cwd: &str) -> Vec<Turn> {
    let Ok(loaded) = codecoder_session::load(path) else { return Vec::new() };
    let mut turns = Vec::new();
    let mut current: Option<Turn> = None;
    let mut next_item = 0_u64;
    let mut item_id = || {
        let id = format!("log_item_{next_item}");
        next_item += 1;
        id
    };
    let mut open: HashMap<ToolCallId, OpenTool> = HashMap::new();
    let mut declined: HashSet<ToolCallId> = HashSet::new();
    for record in loaded.records() {
        match &record.body {
            RecordBody::TurnStart { turn: number } => {
                current = Some(turn(number.to_string(), TurnStatus::InProgress, None));
            }
            RecordBody::UserMessage { message } => {
                let content: Vec<UserInput> = message
                    .items
                    .iter()
                    .filter_map(|item| match item {
                        MessageItem::Text { text } => Some(UserInput::Text { text: text.clone() }),
                        MessageItem::Image(image) => Some(UserInput::Image {
                            url: format!("data:{};base64,{}", image.media_type, image.data_base64),
                        }),
                        MessageItem::BlobRef(blob) => {
                            Some(UserInput::Text { text: blob.preview.clone() })
                        }
                        MessageItem::Reasoning(_)
                        | MessageItem::ToolCall(_)
                        | MessageItem::ToolResult(_) => None,
                    })
                    .collect();
                if let Some(turn) = &mut current
                    && !content.is_empty()
                {
                    turn.items.push(ThreadItem::UserMessage { id: item_id(), content });
                }
            }
            RecordBody::AssistantMessage { message } => {
                for item in &message.items {
                    let thread_item = match item {
                        MessageItem::Text { text } if !text.trim().is_empty() => {
                            ThreadItem::AgentMessage { id: item_id(), text: text.clone() }
                        }
                        MessageItem::Reasoning(reasoning) if !reasoning.text.is_empty() => {
                            ThreadItem::Reasoning {
                                id: item_id(),
                                summary: Vec::new(),
                                content: vec![reasoning.text.clone()],
                            }
                        }
                        MessageItem::ToolCall(call) => {
                            let item = tool_item(item_id(), call, cwd);
                            open.insert(
                                call.id.clone(),
                                OpenTool { item, started_at_ms: 0, started: None, asked: false },
                            );
                            continue;
                        }
                        _ => continue,
                    };
                    if let Some(turn) = &mut current {
                        turn.items.push(thread_item);
                    }
                }
            }
            RecordBody::Approval { call_id, decision, decided_by, .. } => {
                if decided_by == "user"
                    && matches!(
                        decision,
                        ApprovalDecision::Deny | ApprovalDecision::DenyWithFeedback { .. }
                    )
                {
                    declined.insert(call_id.clone());
                }
            }
            RecordBody::ToolResult { result, .. } => {
                let Some(tool) = open.remove(&result.tool_call_id) else { continue };
                let mut item = finish(tool, &Ok(result.clone()));
                if declined.contains(&result.tool_call_id) {
                    set_status(&mut item, ItemStatus::Declined);
                }
                if let Some(turn) = &mut current {
                    turn.items.push(item);
                }
            }
            RecordBody::Compaction { .. } => {
                if let Some(turn) = &mut current {
                    turn.items.push(ThreadItem::ContextCompaction { id: item_id() });
                }
            }
            RecordBody::TurnEnd { outcome, .. } => {
                let Some(mut turn) = current.take() else { continue };
                let (status, error) = match outcome {
                    TurnOutcome::Completed => (TurnStatus::Completed, None),
                    TurnOutcome::Cancelled | TurnOutcome::Interrupted => {
                        (TurnStatus::Interrupted, None)
                    }
                    TurnOutcome::Failed { message } => {
                        (TurnStatus::Failed, Some(TurnError { message: message.clone() }))
                    }
                };
                turn.status = status;
                turn.error = error;
                turns.push(turn);
            }
            RecordBody::Rewind(rewind) if rewind.conversation => {
                // The conversation went back to before this turn: it and later ones are gone.
                let gone = rewind.turn.to_string();
                if let Some(at) = turns.iter().position(|turn: &Turn| turn.id == gone) {
                    turns.truncate(at);
                }
            }
            RecordBody::Rewind(_)
            | RecordBody::Checkpoint(_)
            | RecordBody::SessionMeta(_)
            | RecordBody::StepStart { .. }
            | RecordBody::StepEnd { .. }
            | RecordBody::ToolStarted { .. }
            | RecordBody::Context(_)
            | RecordBody::Error { .. }
            | RecordBody::SessionEnd => {}
        }
    }
    turns.extend(current);
    turns
}

fn set_status(item: &mut ThreadItem, declined: ItemStatus) {
    match item {
        ThreadItem::CommandExecution { status, .. }
        | ThreadItem::FileChange { status, .. }
        | ThreadItem::DynamicToolCall { status, .. } => *status = declined,
        ThreadItem::UserMessage { .. }
        | ThreadItem::AgentMessage { .. }
        | ThreadItem::Reasoning { .. }
        | ThreadItem::ContextCompaction { .. } => {}
    }
}
