//! A stored thread's earlier turns for `thread/resume` and `thread/fork`: the runtime's replay of
//! its session log (`codecoder_app::history`) fed through the same translation the live thread
//! uses (`translate.rs`), its items collected into turns. So a resumed thread shows what the live
//! run showed: the person's messages, the model's text and reasoning, tool calls by their views
//! with their results, compactions, and how each turn ended.
//!
//! Invariants: only reads the log. Item ids are `log_item_N`, distinct from the live worker's
//! `item_N`; a turn's id is its number in the log. A turn's items are in the order they started;
//! each is as it completed. Turns a conversation rewind took back are left out, as the model no
//! longer sees them either.

use std::path::Path;

use codecoder_app::history::{self, Detail, HistoryEvent, ReplayConfig, Rewound, Viewer};
use codecoder_protocol::{AgentEvent, AgentEventKind, ContentItem};

use crate::thread::Internal;
use crate::translate::{Output, Translator};
use crate::types::{ServerNotification, Turn, UserInput};

/// Who answers an approval the person gave (the log's `decided_by`).
const DECIDED_BY_PERSON: &str = "user";

/// The turns of the log at `path`, oldest first; none when it cannot be read. `viewer` describes
/// each call as the session's tools do.
pub(crate) fn turns(path: &Path, thread_id: &str, cwd: &str, viewer: &dyn Viewer) -> Vec<Turn> {
    let Ok(loaded) = history::load(path) else { return Vec::new() };
    let config = ReplayConfig { viewer, detail: Detail::Conversation, rewound: Rewound::Skip };
    let mut translator = Translator::new(thread_id.to_owned(), cwd.to_owned(), 0, "log_item_");
    let mut turns = Turns::default();
    // The person's input logged before its turn began.
    let mut pending: Vec<UserInput> = Vec::new();
    history::replay(&loaded, &config, &mut |replayed| {
        match replayed.event {
            HistoryEvent::Agent(kind) => {
                if let AgentEventKind::TurnStarted { turn } = &kind {
                    translator.begin_turn(turn.to_string(), std::mem::take(&mut pending));
                }
                translator.event(AgentEvent { source: replayed.source, kind });
            }
            HistoryEvent::User(input) => {
                let content = user_input(&input.content);
                if translator.in_turn() {
                    translator.user_message(content);
                } else {
                    pending.extend(content);
                }
            }
            HistoryEvent::Approval(approval) => {
                if approval.decided_by == DECIDED_BY_PERSON {
                    translator.asked(&approval.call_id);
                }
            }
            HistoryEvent::Rewind(_) | HistoryEvent::Log(_) => {}
        }
        for output in translator.take_output() {
            turns.push(output);
        }
    });
    turns.finish()
}

/// Turns as the translation's outputs build them.
#[derive(Default)]
struct Turns {
    done: Vec<Turn>,
    current: Option<Turn>,
}

impl Turns {
    fn push(&mut self, output: Output) {
        match output {
            Output::Notify(ServerNotification::TurnStarted(notification)) => {
                self.done.extend(self.current.replace(notification.turn));
            }
            Output::Notify(ServerNotification::ItemStarted(notification)) => {
                if let Some(turn) = &mut self.current {
                    turn.items.push(notification.item);
                }
            }
            Output::Notify(ServerNotification::ItemCompleted(notification)) => {
                let Some(turn) = &mut self.current else { return };
                let item = notification.item;
                match turn.items.iter_mut().find(|started| started.id() == item.id()) {
                    Some(started) => *started = item,
                    None => turn.items.push(item),
                }
            }
            Output::Internal(Internal::TurnEnded { turn: ended, .. }) => {
                let Some(mut turn) = self.current.take() else { return };
                turn.status = ended.status;
                turn.error = ended.error;
                self.done.push(turn);
            }
            Output::Notify(_) | Output::Internal(_) => {}
        }
    }

    /// Every turn, a last one the log left open included.
    fn finish(mut self) -> Vec<Turn> {
        self.done.extend(self.current.take());
        self.done
    }
}

/// The person's input as the protocol's input items (a stored blob as its preview).
fn user_input(content: &[ContentItem]) -> Vec<UserInput> {
    content
        .iter()
        .map(|item| match item {
            ContentItem::Text { text } => UserInput::Text { text: text.clone() },
            ContentItem::Image(image) => UserInput::Image {
                url: format!("data:{};base64,{}", image.media_type, image.data_base64),
            },
            ContentItem::BlobRef(blob) => UserInput::Text { text: blob.preview.clone() },
        })
        .collect()
}
