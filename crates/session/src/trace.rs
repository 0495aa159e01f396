//! `SessionTrace`: the grammar of a session log, checked before anything is written (seed L1.3).
//!
//! `validate` looks at a candidate record without changing anything and returns a `Transition`;
//! `commit` applies it. The split lets the writer refuse a record (or fail to write it) without
//! the in-memory state moving. Invariant: a `Transition` is committed only to the trace that
//! produced it, and before any other record is validated.
//!
//! The rules: seq strictly increases; the first record is `session_meta` and there is only one;
//! turns are numbered 1, 2, … and at most one is open; steps are numbered 1, 2, … within their
//! turn, only inside a turn, and at most one is open; user input and compaction come between
//! steps; assistant messages, tool starts, approvals and results come inside a step; `context`
//! comes inside a step before its assistant message (it describes the step's request); a tool
//! result answers a pending call; a step ends only when no call is pending; a turn ends only with
//! no open step; nothing follows `session_end`. A `checkpoint` names the open turn and comes
//! between steps; a `rewind` comes outside any turn and names a turn that began.

use std::fmt;

use codecoder_protocol::{Record, RecordBody, Role, StepId, ToolCallId, TurnId};

/// Why a record does not fit the log at this point.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceError {
    /// `seq` is not greater than the previous one.
    SeqNotIncreasing {
        /// The record's seq.
        seq: u64,
        /// The previous seq.
        last: u64,
    },
    /// The log does not start with `session_meta`.
    MissingMeta {
        /// The type found first.
        found: String,
    },
    /// A second `session_meta`.
    DuplicateMeta,
    /// Something after `session_end`.
    AfterSessionEnd,
    /// `turn_start` while a turn is open.
    TurnAlreadyOpen {
        /// The open turn.
        open: TurnId,
    },
    /// A turn number that is not the next one.
    TurnOutOfOrder {
        /// The number expected.
        expected: TurnId,
        /// The number found.
        found: TurnId,
    },
    /// A record that belongs inside a turn, with none open.
    NoOpenTurn {
        /// The record's type.
        record_type: &'static str,
    },
    /// A record naming a turn other than the open one.
    TurnMismatch {
        /// The open turn.
        open: TurnId,
        /// The turn named.
        found: TurnId,
    },
    /// `step_start` while a step is open.
    StepAlreadyOpen {
        /// The open step.
        open: StepId,
    },
    /// A step number that is not the next one in its turn.
    StepOutOfOrder {
        /// The number expected.
        expected: StepId,
        /// The number found.
        found: StepId,
    },
    /// A record that belongs inside a step, with none open.
    NoOpenStep {
        /// The record's type.
        record_type: &'static str,
    },
    /// A record naming a step other than the open one.
    StepMismatch {
        /// The open step.
        open: StepId,
        /// The step named.
        found: StepId,
    },
    /// A record that belongs between steps, or `turn_end`, while a step is open.
    StepStillOpen {
        /// The record's type.
        record_type: &'static str,
        /// The open step.
        open: StepId,
    },
    /// `step_end` while tool calls are unanswered.
    CallsPending {
        /// How many.
        count: usize,
        /// The first of them.
        first: ToolCallId,
    },
    /// A result, start or approval for a call that is not pending.
    UnknownCall {
        /// The record's type.
        record_type: &'static str,
        /// The call named.
        call_id: ToolCallId,
    },
    /// An assistant message reusing the id of a pending call.
    DuplicateCall {
        /// The call id.
        call_id: ToolCallId,
    },
    /// `tool_started` twice for one call.
    CallAlreadyStarted {
        /// The call id.
        call_id: ToolCallId,
    },
    /// A message record whose message has the wrong role.
    WrongRole {
        /// The record's type.
        record_type: &'static str,
        /// The role found.
        role: Role,
    },
    /// `context` after the open step's response: it must precede the request it describes.
    ContextAfterResponse {
        /// The open step.
        open: StepId,
    },
    /// `session_end` or `rewind` while a turn is open.
    TurnStillOpen {
        /// The open turn.
        open: TurnId,
    },
    /// A `rewind` to a turn the log does not have.
    NoSuchTurn {
        /// The turn named.
        found: TurnId,
    },
}

impl TraceError {
    /// A stable, short name of the kind of violation (for tests and machine output).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::SeqNotIncreasing { .. } => "seq_not_increasing",
            Self::MissingMeta { .. } => "missing_meta",
            Self::DuplicateMeta => "duplicate_meta",
            Self::AfterSessionEnd => "after_session_end",
            Self::TurnAlreadyOpen { .. } => "turn_already_open",
            Self::TurnOutOfOrder { .. } => "turn_out_of_order",
            Self::NoOpenTurn { .. } => "no_open_turn",
            Self::TurnMismatch { .. } => "turn_mismatch",
            Self::StepAlreadyOpen { .. } => "step_already_open",
            Self::StepOutOfOrder { .. } => "step_out_of_order",
            Self::NoOpenStep { .. } => "no_open_step",
            Self::StepMismatch { .. } => "step_mismatch",
            Self::StepStillOpen { .. } => "step_still_open",
            Self::CallsPending { .. } => "calls_pending",
            Self::UnknownCall { .. } => "unknown_call",
            Self::DuplicateCall { .. } => "duplicate_call",
            Self::CallAlreadyStarted { .. } => "call_already_started",
            Self::WrongRole { .. } => "wrong_role",
            Self::ContextAfterResponse { .. } => "context_after_response",
            Self::TurnStillOpen { .. } => "turn_still_open",
            Self::NoSuchTurn { .. } => "no_such_turn",
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SeqNotIncreasing { seq, last } => {
                write!(f, "seq {seq} does not increase (previous seq is {last})")
            }
            Self::MissingMeta { found } => {
                write!(f, "the log must start with session_meta, found {found}")
            }
            Self::DuplicateMeta => f.write_str("a second session_meta"),
            Self::AfterSessionEnd => f.write_str("a record after session_end"),
            Self::TurnAlreadyOpen { open } => write!(f, "turn_start while turn {open} is open"),
            Self::TurnOutOfOrder { expected, found } => {
                write!(f, "turn {found} out of order (expected turn {expected})")
            }
            Self::NoOpenTurn { record_type } => write!(f, "{record_type} outside any turn"),
            Self::TurnMismatch { open, found } => {
                write!(f, "names turn {found} but turn {open} is open")
            }
            Self::StepAlreadyOpen { open } => write!(f, "step_start while step {open} is open"),
            Self::StepOutOfOrder { expected, found } => {
                write!(f, "step {found} out of order (expected step {expected})")
            }
            Self::NoOpenStep { record_type } => write!(f, "{record_type} outside any step"),
            Self::StepMismatch { open, found } => {
                write!(f, "names step {found} but step {open} is open")
            }
            Self::StepStillOpen { record_type, open } => {
                write!(f, "{record_type} while step {open} is open")
            }
            Self::CallsPending { count, first } => {
                write!(f, "step_end with {count} tool call(s) unanswered, first `{first}`")
            }
            Self::UnknownCall { record_type, call_id } => {
                write!(f, "{record_type} for `{call_id}`, which is not a pending tool call")
            }
            Self::DuplicateCall { call_id } => {
                write!(f, "tool call id `{call_id}` is already pending")
            }
            Self::CallAlreadyStarted { call_id } => {
                write!(f, "tool call `{call_id}` was already started")
            }
            Self::WrongRole { record_type, role } => {
                write!(f, "{record_type} holds a message with role {role:?}")
            }
            Self::ContextAfterResponse { open } => {
                write!(f, "context after the response of step {open}")
            }
            Self::TurnStillOpen { open } => {
                write!(f, "session_end or rewind while turn {open} is open")
            }
            Self::NoSuchTurn { found } => write!(f, "rewind to turn {found}, which never began"),
        }
    }
}

impl std::error::Error for TraceError {}

/// A tool call the model asked for that has no result yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingCall {
    /// The call's id.
    pub call_id: ToolCallId,
    /// The tool's name.
    pub name: String,
    /// Whether a `tool_started` record was written for it.
    pub started: bool,
}

/// The state of a log after the records so far: what is open and pending.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionTrace {
    last_seq: u64,
    has_meta: bool,
    ended: bool,
    last_turn: u32,
    open_turn: Option<TurnId>,
    last_step: u32,
    open_step: Option<StepId>,
    /// Whether the open step has its assistant message.
    answered: bool,
    pending: Vec<PendingCall>,
}

/// A validated change to a `SessionTrace`, applied by `commit`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a transition does nothing until committed"]
pub struct Transition {
    seq: u64,
    change: Change,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Change {
    SeqOnly,
    Meta,
    TurnStart(TurnId),
    TurnEnd,
    StepStart(StepId),
    StepEnd,
    Answer(Vec<(ToolCallId, String)>),
    StartCall(usize),
    ResolveCall(usize),
    End,
}

impl SessionTrace {
    /// An empty trace: nothing written yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The seq of the last committed record (0 when none).
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// The number of the last turn started (0 when none).
    pub fn last_turn(&self) -> u32 {
        self.last_turn
    }

    /// The open turn.
    pub fn open_turn(&self) -> Option<TurnId> {
        self.open_turn
    }

    /// The open step.
    pub fn open_step(&self) -> Option<StepId> {
        self.open_step
    }

    /// The number of the last step started in the open (or last) turn (0 when none).
    pub fn last_step(&self) -> u32 {
        self.last_step
    }

    /// Tool calls without a result, in the order the model asked for them.
    pub fn pending_calls(&self) -> &[PendingCall] {
        &self.pending
    }

    /// Whether `session_end` was written.
    pub fn is_ended(&self) -> bool {
        self.ended
    }

    /// Whether a crash left something open that `repair` would close.
    pub fn needs_repair(&self) -> bool {
        self.open_turn.is_some() || self.open_step.is_some() || !self.pending.is_empty()
    }

    /// Checks a record of a type this version does not know: only its seq is checked.
    pub fn validate_unknown(&self, seq: u64) -> Result<Transition, TraceError> {
        self.check_common(seq)?;
        if !self.has_meta {
            return Err(TraceError::MissingMeta { found: "an unknown record type".to_owned() });
        }
        Ok(Transition { seq, change: Change::SeqOnly })
    }

    /// Checks `record` against the log so far. Changes nothing.
    pub fn validate(&self, record: &Record) -> Result<Transition, TraceError> {
        self.check_common(record.seq)?;
        let record_type = record.body.type_name();
        if !self.has_meta && !matches!(record.body, RecordBody::SessionMeta(_)) {
            return Err(TraceError::MissingMeta { found: record_type.to_owned() });
        }
        let change = match &record.body {
            RecordBody::SessionMeta(_) => {
                if self.has_meta {
                    return Err(TraceError::DuplicateMeta);
                }
                Change::Meta
            }
            RecordBody::TurnStart { turn } => {
                if let Some(open) = self.open_turn {
                    return Err(TraceError::TurnAlreadyOpen { open });
                }
                let expected = TurnId::new(self.last_turn).next();
                if *turn != expected {
                    return Err(TraceError::TurnOutOfOrder { expected, found: *turn });
                }
                Change::TurnStart(*turn)
            }
            RecordBody::TurnEnd { turn, .. } => {
                self.check_turn(record_type, *turn)?;
                self.check_between_steps(record_type)?;
                Change::TurnEnd
            }
            RecordBody::StepStart { turn, step } => {
                self.check_turn(record_type, *turn)?;
                if let Some(open) = self.open_step {
                    return Err(TraceError::StepAlreadyOpen { open });
                }
                let expected = StepId::new(self.last_step).next();
                if *step != expected {
                    return Err(TraceError::StepOutOfOrder { expected, found: *step });
                }
                Change::StepStart(*step)
            }
            RecordBody::StepEnd { turn, step, .. } => {
                self.check_turn(record_type, *turn)?;
                self.check_step(record_type, *step)?;
                if let Some(first) = self.pending.first() {
                    return Err(TraceError::CallsPending {
                        count: self.pending.len(),
                        first: first.call_id.clone(),
                    });
                }
                Change::StepEnd
            }
            RecordBody::UserMessage { message } => {
                self.check_in_turn(record_type)?;
                self.check_between_steps(record_type)?;
                if message.role != Role::User {
                    return Err(TraceError::WrongRole { record_type, role: message.role });
                }
                Change::SeqOnly
            }
            RecordBody::AssistantMessage { message } => {
                self.check_in_step(record_type)?;
                if message.role != Role::Assistant {
                    return Err(TraceError::WrongRole { record_type, role: message.role });
                }
                let mut calls: Vec<(ToolCallId, String)> = Vec::new();
                for call in message.tool_calls() {
                    let duplicate = self.pending.iter().any(|p| p.call_id == call.id)
                        || calls.iter().any(|(id, _)| *id == call.id);
                    if duplicate {
                        return Err(TraceError::DuplicateCall { call_id: call.id.clone() });
                    }
                    calls.push((call.id.clone(), call.name.clone()));
                }
                Change::Answer(calls)
            }
            RecordBody::ToolStarted { call_id } => {
                self.check_in_step(record_type)?;
                let index = self.pending_index(record_type, call_id)?;
                if self.pending[index].started {
                    return Err(TraceError::CallAlreadyStarted { call_id: call_id.clone() });
                }
                Change::StartCall(index)
            }
            RecordBody::ToolResult { result, .. } => {
                self.check_in_step(record_type)?;
                Change::ResolveCall(self.pending_index(record_type, &result.tool_call_id)?)
            }
            RecordBody::Approval { call_id, .. } => {
                self.check_in_step(record_type)?;
                self.pending_index(record_type, call_id)?;
                Change::SeqOnly
            }
            RecordBody::Compaction { .. } => {
                self.check_between_steps(record_type)?;
                Change::SeqOnly
            }
            RecordBody::Context(_) => {
                let open = self.check_in_step(record_type)?;
                if self.answered {
                    return Err(TraceError::ContextAfterResponse { open });
                }
                Change::SeqOnly
            }
            RecordBody::Checkpoint(checkpoint) => {
                self.check_turn(record_type, checkpoint.turn)?;
                self.check_between_steps(record_type)?;
                Change::SeqOnly
            }
            RecordBody::Rewind(rewind) => {
                if let Some(open) = self.open_turn {
                    return Err(TraceError::TurnStillOpen { open });
                }
                if rewind.turn.get() == 0 || rewind.turn.get() > self.last_turn {
                    return Err(TraceError::NoSuchTurn { found: rewind.turn });
                }
                Change::SeqOnly
            }
            RecordBody::Error { .. } => Change::SeqOnly,
            RecordBody::SessionEnd => {
                if let Some(open) = self.open_turn {
                    return Err(TraceError::TurnStillOpen { open });
                }
                Change::End
            }
        };
        Ok(Transition { seq: record.seq, change })
    }

    /// Applies a transition returned by `validate` on this trace.
    pub fn commit(&mut self, transition: Transition) {
        self.last_seq = transition.seq;
        match transition.change {
            Change::SeqOnly => {}
            Change::Meta => self.has_meta = true,
            Change::TurnStart(turn) => {
                self.last_turn = turn.get();
                self.open_turn = Some(turn);
                self.last_step = 0;
            }
            Change::TurnEnd => self.open_turn = None,
            Change::StepStart(step) => {
                self.last_step = step.get();
                self.open_step = Some(step);
                self.answered = false;
            }
            Change::StepEnd => self.open_step = None,
            Change::Answer(calls) => {
                self.answered = true;
                self.pending.extend(calls.into_iter().map(|(call_id, name)| PendingCall {
                    call_id,
                    name,
                    started: false,
                }))
            }
            Change::StartCall(index) => self.pending[index].started = true,
            Change::ResolveCall(index) => {
                self.pending.remove(index);
            }
            Change::End => self.ended = true,
        }
    }

    fn check_common(&self, seq: u64) -> Result<(), TraceError> {
        if self.ended {
            return Err(TraceError::AfterSessionEnd);
        }
        if seq <= self.last_seq {
            return Err(TraceError::SeqNotIncreasing { seq, last: self.last_seq });
        }
        Ok(())
    }

    fn check_in_turn(&self, record_type: &'static str) -> Result<TurnId, TraceError> {
        self.open_turn.ok_or(TraceError::NoOpenTurn { record_type })
    }

    fn check_turn(&self, record_type: &'static str, turn: TurnId) -> Result<(), TraceError> {
        let open = self.check_in_turn(record_type)?;
        if open != turn {
            return Err(TraceError::TurnMismatch { open, found: turn });
        }
        Ok(())
    }

    fn check_in_step(&self, record_type: &'static str) -> Result<StepId, TraceError> {
        self.open_step.ok_or(TraceError::NoOpenStep { record_type })
    }

    fn check_step(&self, record_type: &'static str, step: StepId) -> Result<(), TraceError> {
        let open = self.check_in_step(record_type)?;
        if open != step {
            return Err(TraceError::StepMismatch { open, found: step });
        }
        Ok(())
    }

    fn check_between_steps(&self, record_type: &'static str) -> Result<(), TraceError> {
        match self.open_step {
            Some(open) => Err(TraceError::StepStillOpen { record_type, open }),
            None => Ok(()),
        }
    }

    fn pending_index(
        &self,
        record_type: &'static str,
        call_id: &ToolCallId,
    ) -> Result<usize, TraceError> {
        self.pending
            .iter()
            .position(|p| p.call_id == *call_id)
            .ok_or_else(|| TraceError::UnknownCall { record_type, call_id: call_id.clone() })
    }
}
