//! Session-log records: one JSON object per line, `{"seq":…,"ts":…,"type":…, …}`.
//!
//! The log is the only truth of what the model saw. Field names are camelCase and the `type` tag
//! is snake_case. `seq` starts at 1 and strictly increases; `ts` is Unix time in milliseconds.
//! The first record of a file is `session_meta`. The grammar (which record may follow which) is
//! enforced by `SessionTrace` in the `session` crate; `schema/session-record.schema.json` is the
//! JSON Schema of one line, generated from these types and checked in.
//!
//! Compatibility: a record whose `type` this version does not know is kept and reported by the
//! loader, never dropped, so logs written by a newer codecoder stay readable.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agent::{ApprovalDecision, TurnOutcome};
use crate::ids::{SessionId, StepId, ToolCallId, TurnId};
use crate::message::{Message, ToolResult};
use crate::usage::Usage;

/// The version of the log format this build writes. Bumped only for incompatible changes.
pub const FORMAT_VERSION: u32 = 1;

/// One line of a session log.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Record {
    /// Position in the log: from 1, strictly increasing.
    pub seq: u64,
    /// When it was written: Unix time in milliseconds.
    pub ts: u64,
    /// What it records; serialized inline, tagged by `type`.
    #[serde(flatten)]
    pub body: RecordBody,
}

/// What a record says. The `type` tag names the variant in snake_case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RecordBody {
    /// The first record: what this session is.
    SessionMeta(SessionMeta),
    /// A turn begins (the person submitted input).
    #[serde(rename_all = "camelCase")]
    TurnStart {
        /// Consecutive from 1.
        turn: TurnId,
    },
    /// A turn ends. Only when no step is open.
    #[serde(rename_all = "camelCase")]
    TurnEnd {
        /// The open turn.
        turn: TurnId,
        /// How it ended.
        outcome: TurnOutcome,
        /// Tokens of the whole turn.
        #[serde(default)]
        usage: Usage,
    },
    /// A step begins: one model request and the tool calls it asks for. Only inside a turn.
    #[serde(rename_all = "camelCase")]
    StepStart {
        /// The open turn.
        turn: TurnId,
        /// Consecutive from 1 within the turn.
        step: StepId,
    },
    /// A step ends. Only when no tool call is pending.
    #[serde(rename_all = "camelCase")]
    StepEnd {
        /// The open turn.
        turn: TurnId,
        /// The open step.
        step: StepId,
        /// Tokens of this step's request.
        #[serde(default)]
        usage: Usage,
        /// Why the model stopped, when it answered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_reason: Option<StopReason>,
    },
    /// Input from the person. Inside a turn, outside a step.
    #[serde(rename_all = "camelCase")]
    UserMessage {
        /// The message (role `user`).
        message: Message,
    },
    /// What the model answered: text, reasoning and tool calls, as produced. Inside a step.
    /// Each tool call in it becomes pending until a `tool_result` answers it.
    #[serde(rename_all = "camelCase")]
    AssistantMessage {
        /// The message (role `assistant`).
        message: Message,
    },
    /// A pending tool call started executing (after approval). Repair uses it to tell
    /// "not started" from "outcome unknown".
    #[serde(rename_all = "camelCase")]
    ToolStarted {
        /// The pending call.
        call_id: ToolCallId,
    },
    /// A tool call's result. Answers exactly one pending call.
    #[serde(rename_all = "camelCase")]
    ToolResult {
        /// The result the model sees.
        result: ToolResult,
        /// Set when the harness made this result up instead of the tool (cancel, crash repair).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        synthetic: Option<SyntheticReason>,
    },
    /// An approval decision for a pending call.
    #[serde(rename_all = "camelCase")]
    Approval {
        /// The pending call.
        call_id: ToolCallId,
        /// The keys a session grant covers. An escalation of the call (running it again
        /// outside the sandbox) is a second approval record of the same call whose keys start
        /// with `escalate:`.
        #[serde(default)]
        permission_keys: Vec<String>,
        /// What was decided.
        decision: ApprovalDecision,
        /// Who decided: a `DecidedBy` spelling (`user`, `rule`, `mode`, `hook`,
        /// `policy`, `session-grant`, `cancel`, or for an escalation `call-approval`: the person
        /// approved the call itself this turn). Kept as text so that a log naming a decider this
        /// version does not know still reads.
        decided_by: String,
        /// The arguments a hook rewrote the call's into; the call runs with these.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        updated_args: Option<serde_json::Value>,
    },
    /// The history is replaced from here on (outside a step). Projection starts from the
    /// newest compaction's history and adds what follows it.
    #[serde(rename_all = "camelCase")]
    Compaction {
        /// The replacement history.
        history: Vec<Message>,
        /// A note for people: why, and what it replaced.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// The model-visible context of the requests that follow: system prompt sections, tool
    /// schemas and the parameters that shape a request's body. Written inside a step, before
    /// its request, whenever it differs from the last one logged (normally once per session).
    Context(ContextRecord),
    /// The files a turn changed, with what they held before it: written once per turn that
    /// changed a file, inside the turn, between steps, before `turn_end`. Not model-visible.
    Checkpoint(CheckpointRecord),
    /// Files, the conversation or both were taken back to how they were before a turn began
    /// (`/undo`, `/rewind`, `sessions undo`). Outside any turn.
    Rewind(RewindRecord),
    /// Something failed; for the person and for audits. Not model-visible.
    #[serde(rename_all = "camelCase")]
    Error {
        /// What went wrong.
        message: String,
    },
    /// The session closed cleanly. Nothing may follow.
    SessionEnd,
}

impl RecordBody {
    /// The `type` tag of this record, as written in the log.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::SessionMeta(_) => "session_meta",
            Self::TurnStart { .. } => "turn_start",
            Self::TurnEnd { .. } => "turn_end",
            Self::StepStart { .. } => "step_start",
            Self::StepEnd { .. } => "step_end",
            Self::UserMessage { .. } => "user_message",
            Self::AssistantMessage { .. } => "assistant_message",
            Self::ToolStarted { .. } => "tool_started",
            Self::ToolResult { .. } => "tool_result",
            Self::Approval { .. } => "approval",
            Self::Compaction { .. } => "compaction",
            Self::Context(_) => "context",
            Self::Checkpoint(_) => "checkpoint",
            Self::Rewind(_) => "rewind",
            Self::Error { .. } => "error",
            Self::SessionEnd => "session_end",
        }
    }

    /// Every `type` tag this version knows.
    pub const TYPE_NAMES: &'static [&'static str] = &[
        "session_meta",
        "turn_start",
        "turn_end",
        "step_start",
        "step_end",
        "user_message",
        "assistant_message",
        "tool_started",
        "tool_result",
        "approval",
        "compaction",
        "context",
        "checkpoint",
        "rewind",
        "error",
        "session_end",
    ];
}

/// Why the model stopped producing output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished.
    EndTurn,
    /// It asked for tools.
    ToolUse,
    /// It hit the output-token limit (tool calls of such a response are not run).
    MaxTokens,
    /// A stop sequence or a provider-side filter ended it.
    Other,
}

/// Why the harness wrote a result in place of the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SyntheticReason {
    /// The process stopped before the call started (repair).
    NotStarted,
    /// The process stopped while the call ran: it may or may not have had its effect (repair).
    OutcomeUnknown,
    /// The turn was cancelled.
    Cancelled,
    /// The call was refused before running (unknown tool, bad arguments, denied, cut-off
    /// response).
    Refused,
}

/// The first record of every log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionMeta {
    /// This session.
    pub session_id: SessionId,
    /// The log format version (`FORMAT_VERSION` when written).
    pub format_version: u32,
    /// The working directory the session ran in.
    pub cwd: String,
    /// The model id, as sent to the provider.
    pub model: String,
    /// The provider id (`openai`, `anthropic`, …).
    pub provider: String,
    /// Hash of the effective config, to tell sessions run under different settings apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_hash: Option<String>,
    /// The codecoder version that wrote it.
    pub cli_version: String,
    /// Set on a fork: where it branched off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkOrigin>,
    /// Set on a subagent's log: the parent session and the `agent` call that started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentLink>,
}

/// One named part of the system prompt (base instructions, environment, AGENTS.md, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptSection {
    /// What it is, for people (`base instructions`, `environment`, `AGENTS.md`, …).
    pub name: String,
    /// Its text, exactly as sent.
    pub text: String,
}

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// The JSON Schema of its arguments (an object schema).
    pub schema: serde_json::Value,
}

/// What every request after it shows the model besides the history (the `context` record).
///
/// Invariant: a request's system prompt is the sections' texts joined by a blank line
/// (`"\n\n"`), in order; with the session's id, the projected history and the provider's wire
/// API, these fields determine the request body byte for byte.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextRecord {
    /// The model id, as sent.
    pub model: String,
    /// The provider id (its wire API encodes the body).
    pub provider: String,
    /// The system prompt's sections, in order.
    pub sections: Vec<PromptSection>,
    /// The tools offered, in order.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// The cap on generated tokens, when one is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// The JSON Schema the answer must follow, when one is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
    /// Hash of the effective config the requests were made under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_hash: Option<String>,
    /// The reasoning settings sent, when any.
    #[serde(default, skip_serializing_if = "crate::ReasoningSettings::is_empty")]
    pub reasoning: crate::ReasoningSettings,
}

impl ContextRecord {
    /// The system prompt: the sections' texts joined by a blank line.
    pub fn instructions(&self) -> String {
        join_sections(&self.sections)
    }
}

/// The system prompt made of `sections`: their texts joined by a blank line.
pub fn join_sections(sections: &[PromptSection]) -> String {
    let texts: Vec<&str> = sections.iter().map(|section| section.text.as_str()).collect();
    texts.join("\n\n")
}

/// What one turn changed on disk (the `checkpoint` record).
///
/// Invariant: `before` and `after` name blobs in the session's content-addressed store
/// (SHA-256); `before` is stored before the turn's first write of the path, `after` is the hash
/// of the content the turn left, so an undo can tell a file changed since outside codecoder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointRecord {
    /// The turn.
    pub turn: TurnId,
    /// Each path the turn changed, once, in the order first changed.
    pub files: Vec<FileCheckpoint>,
    /// What could not be captured (a file unreadable before its write, a git snapshot that
    /// failed), for the person.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One path in a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileCheckpoint {
    /// The absolute path.
    pub path: String,
    /// The SHA-256 of the blob holding its content before the turn; `None`: it did not exist.
    pub before: Option<String>,
    /// The SHA-256 of its content when the turn ended; `None`: the turn left it absent.
    pub after: Option<String>,
    /// Who changed it.
    pub by: ChangedBy,
}

/// What changed a checkpointed file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangedBy {
    /// A file tool (`write_file`, `edit`, `apply_patch`).
    Tool,
    /// Something else during the turn (a command), seen by comparing git snapshots of the
    /// work tree taken when the turn began and ended.
    Shell,
}

/// A rewind (the `rewind` record): back to before turn `turn` began.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewindRecord {
    /// The turn rewound to: the state is the one before it began.
    pub turn: TurnId,
    /// The history projects as it was before this turn's first user message; later turns'
    /// messages are no longer model-visible.
    #[serde(default)]
    pub conversation: bool,
    /// The files of this turn and every later one were restored (newest turn first).
    #[serde(default)]
    pub files: bool,
    /// The paths restored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restored: Vec<String>,
    /// The paths left alone (changed outside codecoder since, and not forced).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

/// Where a fork branched off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkOrigin {
    /// The parent session.
    pub session_id: SessionId,
    /// The last parent record the fork includes.
    pub seq: u64,
}

/// The parent of a subagent's session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParentLink {
    /// The parent session.
    pub session_id: SessionId,
    /// The `agent` call that started the subagent.
    pub tool_call_id: ToolCallId,
}

/// `Record` is read in one pass: `seq` and `ts` are taken out of the map as they go by, and the
/// other entries stream straight into `RecordBody`'s own (internally tagged) deserializer. The
/// derived form (`#[serde(flatten)]`) buffered every field twice; this buffers once. Keys may
/// come in any order.
impl<'de> Deserialize<'de> for Record {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(RecordVisitor)
    }
}

struct RecordVisitor;

impl<'de> serde::de::Visitor<'de> for RecordVisitor {
    type Value = Record;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a session-log record (an object with seq, ts and type)")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Record, A::Error> {
        let mut header = HeaderTaker { map, seq: None, ts: None, pending: None };
        let body =
            RecordBody::deserialize(serde::de::value::MapAccessDeserializer::new(&mut header))?;
        // The body may stop reading before the end (it has all it needs); drain the rest so
        // a trailing `seq`/`ts` is still seen.
        while serde::de::MapAccess::next_key::<serde::de::IgnoredAny>(&mut header)?.is_some() {
            serde::de::MapAccess::next_value::<serde::de::IgnoredAny>(&mut header)?;
        }
        let seq = header.seq.ok_or_else(|| serde::de::Error::missing_field("seq"))?;
        let ts = header.ts.ok_or_else(|| serde::de::Error::missing_field("ts"))?;
        Ok(Record { seq, ts, body })
    }
}

/// A map access that hands every entry to the body except `seq` and `ts`, which it keeps.
struct HeaderTaker<A> {
    map: A,
    seq: Option<u64>,
    ts: Option<u64>,
    /// A key read from the map and not yet handed on.
    pending: Option<String>,
}

impl<'de, A: serde::de::MapAccess<'de>> serde::de::MapAccess<'de> for HeaderTaker<A> {
    type Error = A::Error;

    fn next_key_seed<K: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.map.next_key::<KeyName<'de>>()? else { return Ok(None) };
            match key {
                KeyName::Seq => self.seq = Some(self.map.next_value()?),
                KeyName::Ts => self.ts = Some(self.map.next_value()?),
                KeyName::Borrowed(name) => {
                    return seed
                        .deserialize(serde::de::value::BorrowedStrDeserializer::new(name))
                        .map(Some);
                }
                KeyName::Owned(name) => {
                    self.pending = Some(name);
                    let name = self.pending.as_deref().unwrap_or_default();
                    return seed
                        .deserialize(serde::de::value::StrDeserializer::new(name))
                        .map(Some);
                }
            }
        }
    }

    fn next_value_seed<V: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, A::Error> {
        self.pending = None;
        self.map.next_value_seed(seed)
    }
}

/// A map key, borrowed from the input when it can be.
enum KeyName<'de> {
    Seq,
    Ts,
    Borrowed(&'de str),
    Owned(String),
}

impl<'de> Deserialize<'de> for KeyName<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> serde::de::Visitor<'de> for KeyVisitor {
            type Value = KeyName<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a field name")
            }
            fn visit_borrowed_str<E: serde::de::Error>(
                self,
                v: &'de str,
            ) -> Result<Self::Value, E> {
                Ok(match v {
                    "seq" => KeyName::Seq,
                    "ts" => KeyName::Ts,
                    other => KeyName::Borrowed(other),
                })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(match v {
                    "seq" => KeyName::Seq,
                    "ts" => KeyName::Ts,
                    other => KeyName::Owned(other.to_owned()),
                })
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}
