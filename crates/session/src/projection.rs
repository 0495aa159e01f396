//! `Projection`: the history the model sees, rebuilt from log records.
//!
//! User messages, assistant messages and tool results are history, in log order (each tool
//! result becomes a `tool` message whose id derives from its seq). A `compaction` record replaces everything before it with its
//! replacement history. The newest `context` record is kept beside the history: together they
//! are everything a request shows the model. A `rewind` record with `conversation` cuts the
//! history back to its length when the named turn began (a turn begun before the newest
//! compaction cannot be found and leaves the history as it is; front-ends refuse it first). Invariant: the projection is a pure function of the records; the same
//! log always projects to the same history.

use std::borrow::Cow;

use codecoder_protocol::{
    ContextRecord, Message, MessageId, MessageItem, Record, RecordBody, Role, TurnId,
};
use uuid::Uuid;

/// The high half of the ids of tool messages the projection makes: ASCII `codecode`.
const TOOL_MESSAGE_ID_HIGH: u64 = 0x636f_6465_636f_6465;

/// The model-visible history, built record by record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Projection {
    history: Vec<Message>,
    /// The newest `context` record's content.
    context: Option<ContextRecord>,
    /// The history's length when each turn since the newest compaction began.
    turn_marks: Vec<(TurnId, usize)>,
}

impl Projection {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one more record into account.
    pub fn apply(&mut self, record: &Record) {
        self.apply_body(record.seq, Cow::Borrowed(&record.body));
    }

    /// Takes one more record into account, moving what the history keeps out of it.
    pub fn apply_owned(&mut self, record: Record) {
        self.apply_body(record.seq, Cow::Owned(record.body));
    }

    fn apply_body(&mut self, seq: u64, body: Cow<'_, RecordBody>) {
        match &*body {
            RecordBody::TurnStart { turn } => {
                self.turn_marks.push((*turn, self.history.len()));
                return;
            }
            RecordBody::Rewind(rewind) => {
                if rewind.conversation
                    && let Some(index) =
                        self.turn_marks.iter().position(|(turn, _)| *turn == rewind.turn)
                {
                    let (_, len) = self.turn_marks[index];
                    self.history.truncate(len);
                    self.turn_marks.truncate(index);
                }
                return;
            }
            RecordBody::UserMessage { .. }
            | RecordBody::AssistantMessage { .. }
            | RecordBody::ToolResult { .. }
            | RecordBody::Compaction { .. }
            | RecordBody::Context(_) => {}
            RecordBody::SessionMeta(_)
            | RecordBody::TurnEnd { .. }
            | RecordBody::StepStart { .. }
            | RecordBody::StepEnd { .. }
            | RecordBody::ToolStarted { .. }
            | RecordBody::Approval { .. }
            | RecordBody::Checkpoint(_)
            | RecordBody::Error { .. }
            | RecordBody::SessionEnd => return,
        }
        // What is left keeps part of the record: owned (or cloned, when borrowed) from here.
        match body.into_owned() {
            RecordBody::UserMessage { message } | RecordBody::AssistantMessage { message } => {
                self.history.push(message);
            }
            RecordBody::ToolResult { result, .. } => {
                // The id derives from the seq, so that projecting twice gives equal histories.
                self.history.push(Message {
                    id: MessageId::from(Uuid::from_u64_pair(TOOL_MESSAGE_ID_HIGH, seq)),
                    role: Role::Tool,
                    items: vec![MessageItem::ToolResult(result)],
                });
            }
            RecordBody::Compaction { history, .. } => {
                self.history = history;
                self.turn_marks.clear();
            }
            RecordBody::Context(context) => self.context = Some(context),
            _ => {}
        }
    }

    /// The history so far.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// The model-visible context of the next request: the newest `context` record's content
    /// (`None` before the first, and in logs written before the record existed).
    pub fn context(&self) -> Option<&ContextRecord> {
        self.context.as_ref()
    }

    /// Whether a `rewind` of the conversation to `turn` would find where it began (false for
    /// a turn begun before the newest compaction, or one never begun).
    pub fn can_rewind_to(&self, turn: TurnId) -> bool {
        self.turn_marks.iter().any(|(marked, _)| *marked == turn)
    }

    /// The history, owned.
    pub fn into_history(self) -> Vec<Message> {
        self.history
    }
}
