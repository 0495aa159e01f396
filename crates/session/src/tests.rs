//! Unit tests of the session crate: the `SessionTrace` grammar and writer failures.
//!
//! The grammar is tested three ways: a table with one minimal log per violation kind, a proptest
//! that generates valid logs (all accepted, every prefix closable by `closing_records`), and
//! proptests of single mutations of those logs (swap, drop, duplicate, renumber, orphan result,
//! wrong role), each rejected with the violation kind the mutation must cause. Writer failures
//! that need a crate-private constructor (a full disk, a file that cannot sync) live here too,
//! and so do the group-commit tests that read the syncer's test-only counters.

use std::fs::OpenOptions;
use std::sync::Arc;

use codecoder_protocol::{
    ApprovalDecision, ContextRecord, FORMAT_VERSION, Message, MessageId, MessageItem,
    PromptSection, Record, RecordBody, Role, SessionId, SessionMeta, StepId, StopReason,
    SyntheticReason, ToolCall, ToolCallId, ToolResult, ToolResultStatus, ToolSpec, TurnId,
    TurnOutcome, Usage,
};
use codecoder_stdx::ManualClock;
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use proptest::sample::Index as SampleIndex;
use uuid::Uuid;

use crate::lock::LogLock;
use crate::writer::OpenLog;
use crate::{
    CloseReason, Error, FsyncPolicy, NewSession, Projection, SessionStore, SessionTrace,
    SessionWriter, TraceError, WriterConfig, closing_records, load,
};

// ---------------------------------------------------------------------------------------------
// Record builders.

fn meta() -> RecordBody {
    RecordBody::SessionMeta(SessionMeta {
        session_id: SessionId::from(Uuid::from_u128(1)),
        format_version: FORMAT_VERSION,
        cwd: "/work".to_owned(),
        model: "model".to_owned(),
        provider: "fake".to_owned(),
        config_hash: None,
        cli_version: "0.0.0".to_owned(),
        forked_from: None,
        parent: None,
    })
}

fn message(role: Role, items: Vec<MessageItem>) -> Message {
    Message { id: MessageId::from(Uuid::from_u128(7)), role, items }
}

fn user(text: &str) -> RecordBody {
    RecordBody::UserMessage {
        message: message(Role::User, vec![MessageItem::Text { text: text.to_owned() }]),
    }
}

fn assistant(text: Option<&str>, call_ids: &[&str]) -> RecordBody {
    let mut items = Vec::new();
    if let Some(text) = text {
        items.push(MessageItem::Text { text: text.to_owned() });
    }
    for id in call_ids {
        items.push(MessageItem::ToolCall(ToolCall {
            id: ToolCallId::new(*id),
            name: "read_file".to_owned(),
            args: serde_json::json!({ "path": "a.rs" }),
        }));
    }
    RecordBody::AssistantMessage { message: message(Role::Assistant, items) }
}

fn turn_start(turn: u32) -> RecordBody {
    RecordBody::TurnStart { turn: TurnId::new(turn) }
}

fn turn_end(turn: u32) -> RecordBody {
    RecordBody::TurnEnd {
        turn: TurnId::new(turn),
        outcome: TurnOutcome::Completed,
        usage: Usage::default(),
    }
}

fn step_start(turn: u32, step: u32) -> RecordBody {
    RecordBody::StepStart { turn: TurnId::new(turn), step: StepId::new(step) }
}

fn step_end(turn: u32, step: u32) -> RecordBody {
    RecordBody::StepEnd {
        turn: TurnId::new(turn),
        step: StepId::new(step),
        usage: Usage::default(),
        stop_reason: None,
    }
}

fn started(call: &str) -> RecordBody {
    RecordBody::ToolStarted { call_id: ToolCallId::new(call) }
}

fn approval(call: &str) -> RecordBody {
    RecordBody::Approval {
        call_id: ToolCallId::new(call),
        permission_keys: vec!["read".to_owned()],
        decision: ApprovalDecision::AllowOnce,
        decided_by: "user".to_owned(),
        updated_args: None,
    }
}

fn result(call: &str) -> RecordBody {
    RecordBody::ToolResult {
        result: ToolResult::text(ToolCallId::new(call), ToolResultStatus::Success, "ok"),
        synthetic: None,
    }
}

fn compaction() -> RecordBody {
    RecordBody::Compaction { history: vec![message(Role::User, Vec::new())], note: None }
}

fn error_record() -> RecordBody {
    RecordBody::Error { message: "provider hiccup".to_owned() }
}

/// Numbers `bodies` with seq 1, 2, ….
fn numbered(bodies: Vec<RecordBody>) -> Vec<Record> {
    bodies.into_iter().zip(1..).map(|(body, seq)| Record { seq, ts: seq * 1000, body }).collect()
}

/// Feeds `records` to a fresh trace; the index and error of the first refused one.
fn first_violation(records: &[Record]) -> Option<(usize, TraceError)> {
    let mut trace = SessionTrace::new();
    for (index, record) in records.iter().enumerate() {
        match trace.validate(record) {
            Ok(transition) => trace.commit(transition),
            Err(err) => return Some((index, err)),
        }
    }
    None
}

fn violation_kind(records: &[Record]) -> Option<&'static str> {
    first_violation(records).map(|(_, err)| err.kind())
}

/// The trace after `records`, which must all be valid.
fn trace_of(records: &[Record]) -> SessionTrace {
    let mut trace = SessionTrace::new();
    for record in records {
        let transition = trace.validate(record).unwrap();
        trace.commit(transition);
    }
    trace
}

// ---------------------------------------------------------------------------------------------
// One minimal log per violation kind.

#[track_caller]
fn check(bodies: Vec<RecordBody>, expected: Option<(usize, &str)>) {
    let records = numbered(bodies);
    let actual = first_violation(&records).map(|(index, err)| (index, err.kind()));
    assert_eq!(actual, expected);
}

#[test]
fn every_violation_kind_is_detected_at_the_right_record() {
    let open_step = || vec![meta(), turn_start(1), user("hi"), step_start(1, 1)];
    let with = |mut base: Vec<RecordBody>, more: Vec<RecordBody>| {
        base.extend(more);
        base
    };

    // A small but complete log is valid.
    check(
        with(
            open_step(),
            vec![
                assistant(Some("x"), &["a", "b"]),
                approval("b"),
                started("b"),
                result("b"),
                result("a"),
                step_end(1, 1),
                compaction(),
                step_start(1, 2),
                assistant(Some("done"), &[]),
                error_record(),
                step_end(1, 2),
                turn_end(1),
                compaction(),
                turn_start(2),
                turn_end(2),
                RecordBody::SessionEnd,
            ],
        ),
        None,
    );

    check(vec![turn_start(1)], Some((0, "missing_meta")));
    check(vec![meta(), meta()], Some((1, "duplicate_meta")));
    check(vec![meta(), RecordBody::SessionEnd, error_record()], Some((2, "after_session_end")));
    check(vec![meta(), turn_start(1), turn_start(2)], Some((2, "turn_already_open")));
    check(vec![meta(), turn_start(2)], Some((1, "turn_out_of_order")));
    check(vec![meta(), turn_start(1), turn_end(1), turn_start(1)], Some((3, "turn_out_of_order")));
    check(vec![meta(), user("hi")], Some((1, "no_open_turn")));
    check(vec![meta(), step_start(1, 1)], Some((1, "no_open_turn")));
    check(vec![meta(), turn_start(1), turn_end(2)], Some((2, "turn_mismatch")));
    check(vec![meta(), turn_start(1), step_start(2, 1)], Some((2, "turn_mismatch")));
    check(with(open_step(), vec![step_start(1, 2)]), Some((4, "step_already_open")));
    check(vec![meta(), turn_start(1), step_start(1, 2)], Some((2, "step_out_of_order")));
    // Step numbers restart with each turn.
    check(
        vec![
            meta(),
            turn_start(1),
            step_start(1, 1),
            step_end(1, 1),
            turn_end(1),
            turn_start(2),
            step_start(2, 2),
        ],
        Some((6, "step_out_of_order")),
    );
    check(vec![meta(), turn_start(1), assistant(None, &[])], Some((2, "no_open_step")));
    check(vec![meta(), turn_start(1), step_end(1, 1)], Some((2, "no_open_step")));
    check(vec![meta(), turn_start(1), result("a")], Some((2, "no_open_step")));
    check(with(open_step(), vec![step_end(1, 2)]), Some((4, "step_mismatch")));
    check(with(open_step(), vec![user("more")]), Some((4, "step_still_open")));
    check(with(open_step(), vec![turn_end(1)]), Some((4, "step_still_open")));
    check(with(open_step(), vec![compaction()]), Some((4, "step_still_open")));
    check(
        with(open_step(), vec![assistant(None, &["a", "b"]), result("a"), step_end(1, 1)]),
        Some((6, "calls_pending")),
    );
    check(with(open_step(), vec![result("zzz")]), Some((4, "unknown_call")));
    check(with(open_step(), vec![started("zzz")]), Some((4, "unknown_call")));
    check(with(open_step(), vec![approval("zzz")]), Some((4, "unknown_call")));
    check(
        with(open_step(), vec![assistant(None, &["a"]), result("a"), result("a")]),
        Some((6, "unknown_call")),
    );
    check(with(open_step(), vec![assistant(None, &["a", "a"])]), Some((4, "duplicate_call")));
    check(
        with(open_step(), vec![assistant(None, &["a"]), assistant(None, &["a"])]),
        Some((5, "duplicate_call")),
    );
    check(
        with(open_step(), vec![assistant(None, &["a"]), started("a"), started("a")]),
        Some((6, "call_already_started")),
    );
    let wrong_user = RecordBody::UserMessage { message: message(Role::Assistant, Vec::new()) };
    check(vec![meta(), turn_start(1), wrong_user], Some((2, "wrong_role")));
    let wrong_assistant = RecordBody::AssistantMessage { message: message(Role::Tool, Vec::new()) };
    check(with(open_step(), vec![wrong_assistant]), Some((4, "wrong_role")));
    check(vec![meta(), turn_start(1), RecordBody::SessionEnd], Some((2, "turn_still_open")));

    // Seq: strictly increasing, gaps allowed, checked before anything else.
    let mut records = numbered(vec![meta(), turn_start(1), turn_end(1)]);
    records[1].seq = 5;
    records[2].seq = 9;
    assert_eq!(first_violation(&records).map(|(i, e)| (i, e.kind())), None);
    records[2].seq = 5;
    let (index, err) = first_violation(&records).unwrap();
    assert_eq!((index, &err), (2, &TraceError::SeqNotIncreasing { seq: 5, last: 5 }));
    assert_eq!(err.to_string(), "seq 5 does not increase (previous seq is 5)");
    let records = numbered(vec![meta(), RecordBody::SessionEnd]);
    let mut trace = trace_of(&records);
    assert!(trace.is_ended());
    // After the end, even a record with a bad seq reports the end first.
    let late = Record { seq: 1, ts: 0, body: error_record() };
    assert_eq!(trace.validate(&late).unwrap_err().kind(), "after_session_end");
    // A refused record changes nothing: validate is `&self`, and commit only applies transitions.
    let before = trace.clone();
    let _ = trace.validate(&late);
    assert_eq!(trace, before);
    trace = SessionTrace::new();
    assert_eq!(trace.validate_unknown(1).unwrap_err().kind(), "missing_meta");
}

#[test]
fn unknown_records_only_need_an_increasing_seq() {
    let records = numbered(vec![meta(), turn_start(1), user("x"), step_start(1, 1)]);
    let mut trace = trace_of(&records);
    let transition = trace.validate_unknown(5).unwrap();
    trace.commit(transition);
    assert_eq!(trace.last_seq(), 5);
    assert_eq!(trace.open_step(), Some(StepId::new(1)));
    assert_eq!(trace.validate_unknown(5).unwrap_err().kind(), "seq_not_increasing");
}

#[test]
fn trace_reports_what_is_open() {
    let records = numbered(vec![
        meta(),
        turn_start(1),
        user("x"),
        step_start(1, 1),
        assistant(None, &["a", "b", "c"]),
        started("b"),
        result("a"),
    ]);
    let trace = trace_of(&records);
    assert_eq!(trace.last_seq(), 7);
    assert_eq!(trace.last_turn(), 1);
    assert_eq!(trace.open_turn(), Some(TurnId::new(1)));
    assert_eq!(trace.open_step(), Some(StepId::new(1)));
    assert_eq!(trace.last_step(), 1);
    let pending: Vec<(&str, bool)> =
        trace.pending_calls().iter().map(|p| (p.call_id.as_str(), p.started)).collect();
    assert_eq!(pending, vec![("b", true), ("c", false)]);
    assert!(trace.needs_repair());

    let crash = closing_records(&trace, CloseReason::Crash);
    let types: Vec<&str> = crash.iter().map(RecordBody::type_name).collect();
    assert_eq!(types, vec!["tool_result", "tool_result", "step_end", "turn_end"]);
    let synthetic: Vec<(String, Option<SyntheticReason>, ToolResultStatus)> = crash
        .iter()
        .filter_map(|body| match body {
            RecordBody::ToolResult { result, synthetic } => {
                Some((result.tool_call_id.to_string(), *synthetic, result.status))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        synthetic,
        vec![
            ("b".to_owned(), Some(SyntheticReason::OutcomeUnknown), ToolResultStatus::Error),
            ("c".to_owned(), Some(SyntheticReason::NotStarted), ToolResultStatus::Error),
        ]
    );
    assert!(matches!(
        crash.last(),
        Some(RecordBody::TurnEnd { outcome: TurnOutcome::Interrupted, .. })
    ));

    let cancel = closing_records(&trace, CloseReason::Cancel);
    assert!(cancel.iter().all(|body| match body {
        RecordBody::ToolResult { result, synthetic } => {
            *synthetic == Some(SyntheticReason::Cancelled)
                && result.status == ToolResultStatus::Cancelled
        }
        RecordBody::StepEnd { .. } => true,
        RecordBody::TurnEnd { outcome, .. } => *outcome == TurnOutcome::Cancelled,
        _ => false,
    }));
    assert_eq!(cancel.len(), 4);

    // Nothing open: nothing to close.
    let closed = trace_of(&numbered(vec![meta(), turn_start(1), turn_end(1)]));
    assert!(!closed.needs_repair());
    assert_eq!(closing_records(&closed, CloseReason::Crash), Vec::<RecordBody>::new());
}

// ---------------------------------------------------------------------------------------------
// Generated logs.

#[derive(Debug, Clone)]
struct CallPlan {
    approve: bool,
    start: bool,
}

#[derive(Debug, Clone)]
struct StepPlan {
    text: bool,
    calls: Vec<CallPlan>,
    /// Picks which call's next event comes next, so results answer calls in any order.
    schedule: Vec<u8>,
    compaction_before: bool,
    /// 0: none, 1: right after step_start, 2: right before step_end.
    error_at: u8,
}

#[derive(Debug, Clone)]
struct TurnPlan {
    user_messages: u8,
    steps: Vec<StepPlan>,
    compaction_after: bool,
    outcome: u8,
}

#[derive(Debug, Clone)]
struct SessionPlan {
    turns: Vec<TurnPlan>,
    error_after_meta: bool,
    end: bool,
    /// Every `k`-th seq is followed by a gap (seqs must increase, not be consecutive).
    gap_every: Option<usize>,
}

fn step_plan() -> impl Strategy<Value = StepPlan> {
    let call =
        (any::<bool>(), any::<bool>()).prop_map(|(approve, start)| CallPlan { approve, start });
    (
        any::<bool>(),
        prop::collection::vec(call, 0..=3),
        prop::collection::vec(any::<u8>(), 9),
        prop::bool::weighted(0.2),
        0u8..3,
    )
        .prop_map(|(text, calls, schedule, compaction_before, error_at)| StepPlan {
            text,
            calls,
            schedule,
            compaction_before,
            error_at,
        })
}

fn turn_plan() -> impl Strategy<Value = TurnPlan> {
    (1u8..=2, prop::collection::vec(step_plan(), 0..=3), prop::bool::weighted(0.2), 0u8..4)
        .prop_map(|(user_messages, steps, compaction_after, outcome)| TurnPlan {
            user_messages,
            steps,
            compaction_after,
            outcome,
        })
}

fn session_plan() -> impl Strategy<Value = SessionPlan> {
    (
        prop::collection::vec(turn_plan(), 0..=4),
        prop::bool::weighted(0.1),
        any::<bool>(),
        prop::option::weighted(0.3, 2usize..6),
    )
        .prop_map(|(turns, error_after_meta, end, gap_every)| SessionPlan {
            turns,
            error_after_meta,
            end,
            gap_every,
        })
}

/// A plan made concrete: a valid log.
fn build(plan: &SessionPlan) -> Vec<Record> {
    let mut records: Vec<Record> = Vec::new();
    let mut next_seq = 1;
    let mut push = |body: RecordBody| {
        records.push(Record { seq: next_seq, ts: next_seq * 10, body });
        let gap = plan.gap_every.is_some_and(|k| records.len().is_multiple_of(k));
        next_seq += if gap { 3 } else { 1 };
    };
    push(meta());
    if plan.error_after_meta {
        push(error_record());
    }
    for (turn_index, turn) in plan.turns.iter().enumerate() {
        let t = u32::try_from(turn_index).unwrap() + 1;
        push(turn_start(t));
        for n in 0..turn.user_messages {
            push(user(&format!("turn {t} input {n}")));
        }
        for (step_index, step) in turn.steps.iter().enumerate() {
            let s = u32::try_from(step_index).unwrap() + 1;
            if step.compaction_before {
                push(compaction());
            }
            push(step_start(t, s));
            if step.error_at == 1 {
                push(error_record());
            }
            let ids: Vec<String> =
                (0..step.calls.len()).map(|i| format!("call_{t}_{s}_{i}")).collect();
            let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            let text = (step.text || ids.is_empty()).then_some("answer");
            push(assistant(text, &id_refs));
            // Each call's events in order; calls interleave as the schedule says.
            let mut queues: Vec<Vec<RecordBody>> = step
                .calls
                .iter()
                .zip(&ids)
                .map(|(call, id)| {
                    let mut events = Vec::new();
                    if call.approve {
                        events.push(approval(id));
                    }
                    if call.start {
                        events.push(started(id));
                    }
                    events.push(result(id));
                    events.reverse();
                    events
                })
                .collect();
            let mut pick = step.schedule.iter().cycle();
            loop {
                let live: Vec<usize> =
                    (0..queues.len()).filter(|&i| !queues[i].is_empty()).collect();
                if live.is_empty() {
                    break;
                }
                let choice = usize::from(*pick.next().unwrap()) % live.len();
                let event = queues[live[choice]].pop().unwrap();
                push(event);
            }
            if step.error_at == 2 {
                push(error_record());
            }
            push(RecordBody::StepEnd {
                turn: TurnId::new(t),
                step: StepId::new(s),
                usage: Usage { input_tokens: 10, output_tokens: 5, ..Usage::default() },
                stop_reason: Some(if ids.is_empty() {
                    StopReason::EndTurn
                } else {
                    StopReason::ToolUse
                }),
            });
        }
        let outcome = match turn.outcome {
            0 => TurnOutcome::Completed,
            1 => TurnOutcome::Cancelled,
            2 => TurnOutcome::Failed { message: "rate limited".to_owned() },
            _ => TurnOutcome::Interrupted,
        };
        push(RecordBody::TurnEnd { turn: TurnId::new(t), outcome, usage: Usage::default() });
        if turn.compaction_after {
            push(compaction());
        }
    }
    if plan.end {
        push(RecordBody::SessionEnd);
    }
    records
}

fn call_of(body: &RecordBody) -> Option<&ToolCallId> {
    match body {
        RecordBody::ToolStarted { call_id } | RecordBody::Approval { call_id, .. } => Some(call_id),
        RecordBody::ToolResult { result, .. } => Some(&result.tool_call_id),
        _ => None,
    }
}

fn has_calls(body: &RecordBody) -> bool {
    matches!(body, RecordBody::AssistantMessage { message } if message.tool_calls().next().is_some())
}

/// What the trace must say when the bodies `a`, `b` of two neighbors trade places (seqs stay
/// where they are). `None`: the swapped log is still valid.
fn swap_expectation(a: &RecordBody, b: &RecordBody) -> Option<&'static str> {
    use RecordBody as R;
    match (a, b) {
        (R::SessionMeta(_), _) => Some("missing_meta"),
        (R::TurnEnd { .. }, R::SessionEnd) => Some("turn_still_open"),
        (_, R::SessionEnd) => Some("after_session_end"),
        (R::Error { .. }, _) | (_, R::Error { .. }) => None,
        (R::TurnStart { .. }, R::UserMessage { .. }) => Some("no_open_turn"),
        (R::UserMessage { .. }, R::UserMessage { .. } | R::Compaction { .. })
        | (R::TurnEnd { .. }, R::Compaction { .. })
        | (R::Compaction { .. }, R::TurnStart { .. } | R::TurnEnd { .. }) => None,
        (R::UserMessage { .. } | R::Compaction { .. }, R::StepStart { .. }) => {
            Some("step_still_open")
        }
        (R::UserMessage { .. }, R::TurnEnd { .. }) => Some("no_open_turn"),
        (R::StepStart { .. }, R::AssistantMessage { .. })
        | (R::AssistantMessage { .. }, R::StepEnd { .. }) => Some("no_open_step"),
        (R::AssistantMessage { .. }, _) if call_of(b).is_some() => Some("unknown_call"),
        (_, _) if call_of(a).is_some() && call_of(b).is_some() => {
            match (a, b) {
                _ if call_of(a) != call_of(b) => None,
                // Approval and start of one call may come in either order.
                (R::Approval { .. }, R::ToolStarted { .. }) => None,
                _ => Some("unknown_call"),
            }
        }
        (R::ToolResult { .. }, R::StepEnd { .. }) => Some("calls_pending"),
        (R::StepEnd { .. }, R::StepStart { .. }) => Some("step_already_open"),
        (R::StepEnd { .. }, R::TurnEnd { .. } | R::UserMessage { .. } | R::Compaction { .. }) => {
            Some("step_still_open")
        }
        (R::TurnEnd { .. }, R::TurnStart { .. }) => Some("turn_already_open"),
        _ => panic!("the generator made an unexpected neighbor pair: {a:?} then {b:?}"),
    }
}

/// What the trace must say when the record at `index` is left out.
fn drop_expectation(records: &[Record], index: usize) -> Option<&'static str> {
    use RecordBody as R;
    let later = || records[index + 1..].iter().map(|r| &r.body);
    let next_not = |skip: fn(&RecordBody) -> bool| later().find(|body| !skip(body));
    match &records[index].body {
        R::SessionMeta(_) => (records.len() > 1).then_some("missing_meta"),
        R::TurnStart { .. } => Some("no_open_turn"),
        R::TurnEnd { .. } => {
            match next_not(|b| matches!(b, R::Error { .. } | R::Compaction { .. })) {
                Some(R::TurnStart { .. }) => Some("turn_already_open"),
                Some(R::SessionEnd) => Some("turn_still_open"),
                None => None,
                Some(other) => panic!("unexpected record after turn_end: {other:?}"),
            }
        }
        R::StepStart { .. } => Some("no_open_step"),
        R::StepEnd { .. } => match next_not(|b| matches!(b, R::Error { .. })) {
            Some(R::StepStart { .. }) => Some("step_already_open"),
            Some(R::TurnEnd { .. } | R::Compaction { .. } | R::UserMessage { .. }) => {
                Some("step_still_open")
            }
            None => None,
            Some(other) => panic!("unexpected record after step_end: {other:?}"),
        },
        body @ R::AssistantMessage { .. } => has_calls(body).then_some("unknown_call"),
        R::ToolResult { .. } => Some("calls_pending"),
        R::UserMessage { .. }
        | R::ToolStarted { .. }
        | R::Approval { .. }
        | R::Compaction { .. }
        | R::Context(_)
        | R::Checkpoint(_)
        | R::Rewind(_)
        | R::Error { .. }
        | R::SessionEnd => None,
    }
}

/// What the trace must say when the record at `index` appears twice in a row, the copy with a
/// fresh seq.
fn duplicate_expectation(body: &RecordBody) -> Option<&'static str> {
    use RecordBody as R;
    match body {
        R::SessionMeta(_) => Some("duplicate_meta"),
        R::TurnStart { .. } => Some("turn_already_open"),
        R::TurnEnd { .. } => Some("no_open_turn"),
        R::StepStart { .. } => Some("step_already_open"),
        R::StepEnd { .. } => Some("no_open_step"),
        R::AssistantMessage { .. } => has_calls(body).then_some("duplicate_call"),
        R::ToolStarted { .. } => Some("call_already_started"),
        R::ToolResult { .. } => Some("unknown_call"),
        R::SessionEnd => Some("after_session_end"),
        R::UserMessage { .. }
        | R::Approval { .. }
        | R::Compaction { .. }
        | R::Context(_)
        | R::Checkpoint(_)
        | R::Rewind(_)
        | R::Error { .. } => None,
    }
}

/// `records` with `extra` inserted at `index`, seqs from `index` on moved up by one.
fn insert_reseq(records: &[Record], index: usize, extra: RecordBody) -> Vec<Record> {
    let mut out = records[..index].to_vec();
    let seq = out.last().map_or(1, |r| r.seq + 1);
    out.push(Record { seq, ts: 0, body: extra });
    out.extend(records[index..].iter().map(|r| Record { seq: r.seq + 1, ..r.clone() }));
    out
}

fn config() -> ProptestConfig {
    ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(config())]

    /// Generated logs are accepted, and so is every prefix once `closing_records` closes it.
    #[test]
    fn generated_logs_are_valid(plan in session_plan(), cut in any::<SampleIndex>()) {
        let records = build(&plan);
        prop_assert_eq!(first_violation(&records).map(|(i, e)| (i, e.kind())), None);
        let trace = trace_of(&records);
        prop_assert!(!trace.needs_repair());
        prop_assert_eq!(trace.is_ended(), plan.end);
        prop_assert_eq!(trace.last_seq(), records.last().unwrap().seq);

        // A crash may stop the log after any record; closing what is open makes it whole.
        let prefix = &records[..=cut.index(records.len())];
        let trace = trace_of(prefix);
        for reason in [CloseReason::Crash, CloseReason::Cancel] {
            let mut closed = trace.clone();
            let first_seq = closed.last_seq() + 1;
            for (body, seq) in closing_records(&trace, reason).into_iter().zip(first_seq..) {
                if let (CloseReason::Crash, RecordBody::ToolResult { result, synthetic }) =
                    (reason, &body)
                {
                    let was_started = prefix.iter().any(|r| matches!(&r.body,
                        RecordBody::ToolStarted { call_id } if *call_id == result.tool_call_id));
                    let expected = if was_started {
                        SyntheticReason::OutcomeUnknown
                    } else {
                        SyntheticReason::NotStarted
                    };
                    prop_assert_eq!(*synthetic, Some(expected));
                }
                let transition = closed.validate(&Record { seq, ts: 0, body });
                prop_assert!(transition.is_ok(), "{:?}", transition);
                closed.commit(transition.unwrap());
            }
            prop_assert!(!closed.needs_repair());
        }
    }

    /// Resuming only to write on (`resume_writer`, which folds each record into the history as
    /// it is read and keeps none) leaves the same writer and the same file as `resume`: the
    /// history, the context, what is open, and the repair appended after a crash.
    #[test]
    fn resuming_without_keeping_records_matches_resume(
        plan in session_plan(),
        cut in any::<SampleIndex>(),
        torn in any::<bool>(),
    ) {
        let records = build(&plan);
        let mut text = String::new();
        for record in &records[..=cut.index(records.len())] {
            text.push_str(&serde_json::to_string(record).unwrap());
            text.push('\n');
        }
        if torn {
            text.push_str("{\"seq\":");
        }
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        fs_err::create_dir_all(store.sessions_dir()).unwrap();
        let [kept_path, folded_path] = ["kept", "folded"].map(|name| {
            let path = store.sessions_dir().join(format!("{name}.jsonl"));
            fs_err::write(&path, &text).unwrap();
            path
        });
        let (loaded, kept) = store.resume(&kept_path, writer_config(FsyncPolicy::Never)).unwrap();
        let folded = store.resume_writer(&folded_path, writer_config(FsyncPolicy::Never)).unwrap();
        prop_assert_eq!(loaded.entries.len(), cut.index(records.len()) + 1);
        prop_assert_eq!(kept.history(), folded.history());
        prop_assert_eq!(kept.context(), folded.context());
        prop_assert_eq!(kept.trace(), folded.trace());
        drop((kept, folded));
        prop_assert_eq!(fs_err::read(&kept_path).unwrap(), fs_err::read(&folded_path).unwrap());
    }

    /// Two neighbors trade places (their seqs stay in order).
    #[test]
    fn swapped_neighbors_are_rejected(plan in session_plan(), at in any::<SampleIndex>()) {
        let mut records = build(&plan);
        prop_assume!(records.len() >= 2);
        let i = at.index(records.len() - 1);
        let expected = swap_expectation(&records[i].body, &records[i + 1].body);
        let body = records[i].body.clone();
        records[i].body = std::mem::replace(&mut records[i + 1].body, body);
        prop_assert_eq!(violation_kind(&records), expected);
    }

    /// Whole records trade places, seqs included: the seq check catches it first.
    #[test]
    fn swapped_records_break_the_seq(plan in session_plan(), at in any::<SampleIndex>()) {
        let mut records = build(&plan);
        prop_assume!(records.len() >= 3);
        let i = 1 + at.index(records.len() - 2);
        records.swap(i, i + 1);
        let (index, err) = first_violation(&records).unwrap();
        // The later record, now first, may itself break a rule; if not, the seq goes back
        // (unless the later record was the end, after which nothing at all may come).
        if index == i + 1 {
            let expected = match records[i].body {
                RecordBody::SessionEnd => "after_session_end",
                _ => "seq_not_increasing",
            };
            prop_assert_eq!(err.kind(), expected);
        } else {
            prop_assert_eq!(index, i);
        }
    }

    /// One record left out.
    #[test]
    fn dropped_records_are_rejected(plan in session_plan(), at in any::<SampleIndex>()) {
        let mut records = build(&plan);
        let i = at.index(records.len());
        let expected = drop_expectation(&records, i);
        records.remove(i);
        prop_assert_eq!(violation_kind(&records), expected);
    }

    /// One record written twice: with the same seq, and with a fresh one.
    #[test]
    fn duplicated_records_are_rejected(plan in session_plan(), at in any::<SampleIndex>()) {
        let records = build(&plan);
        let i = at.index(records.len());
        let mut same_seq = records.clone();
        same_seq.insert(i + 1, records[i].clone());
        let expected = match records[i].body {
            RecordBody::SessionEnd => "after_session_end",
            _ => "seq_not_increasing",
        };
        prop_assert_eq!(first_violation(&same_seq).map(|(i, e)| (i, e.kind())), Some((i + 1, expected)));

        let reseq = insert_reseq(&records, i + 1, records[i].body.clone());
        let expected = duplicate_expectation(&records[i].body);
        let actual = first_violation(&reseq);
        prop_assert_eq!(actual.as_ref().map(|(_, e)| e.kind()), expected);
        if let Some((index, _)) = actual {
            prop_assert_eq!(index, i + 1);
        }
    }

    /// Seq, turn and step numbers changed on one record.
    #[test]
    fn renumbered_records_are_rejected(
        plan in session_plan(),
        at in any::<SampleIndex>(),
        back in any::<SampleIndex>(),
        skip in 1u32..4,
    ) {
        let records = build(&plan);
        prop_assume!(records.len() >= 2);
        // A seq that does not increase.
        let i = 1 + at.index(records.len() - 1);
        let mut mutated = records.clone();
        mutated[i].seq = back.index(usize::try_from(records[i - 1].seq).unwrap() + 1) as u64;
        prop_assert_eq!(first_violation(&mutated).map(|(i, e)| (i, e.kind())), Some((i, "seq_not_increasing")));

        // A turn or step number that skips, or that names another turn or step.
        let numbered_at: Vec<usize> = (0..records.len())
            .filter(|&i| matches!(records[i].body,
                RecordBody::TurnStart { .. } | RecordBody::TurnEnd { .. }
                | RecordBody::StepStart { .. } | RecordBody::StepEnd { .. }))
            .collect();
        prop_assume!(!numbered_at.is_empty());
        let i = numbered_at[at.index(numbered_at.len())];
        let bump = |id: u32| id + skip;
        let mut mutated = records.clone();
        let expected = match &mut mutated[i].body {
            RecordBody::TurnStart { turn } => {
                *turn = TurnId::new(bump(turn.get()));
                "turn_out_of_order"
            }
            RecordBody::TurnEnd { turn, .. } => {
                *turn = TurnId::new(bump(turn.get()));
                "turn_mismatch"
            }
            RecordBody::StepStart { step, .. } if skip % 2 == 1 => {
                *step = StepId::new(bump(step.get()));
                "step_out_of_order"
            }
            RecordBody::StepStart { turn, .. } => {
                *turn = TurnId::new(bump(turn.get()));
                "turn_mismatch"
            }
            RecordBody::StepEnd { step, .. } => {
                *step = StepId::new(bump(step.get()));
                "step_mismatch"
            }
            _ => unreachable!(),
        };
        prop_assert_eq!(first_violation(&mutated).map(|(i, e)| (i, e.kind())), Some((i, expected)));
    }

    /// A result for a call nobody made, inserted anywhere after the meta.
    #[test]
    fn orphan_results_are_rejected(plan in session_plan(), at in any::<SampleIndex>()) {
        let records = build(&plan);
        let i = 1 + at.index(records.len());
        let before = &records[..i];
        let open_steps = before.iter().filter(|r| matches!(r.body, RecordBody::StepStart { .. })).count()
            - before.iter().filter(|r| matches!(r.body, RecordBody::StepEnd { .. })).count();
        let expected = if before.iter().any(|r| r.body == RecordBody::SessionEnd) {
            "after_session_end"
        } else if open_steps == 1 {
            "unknown_call"
        } else {
            "no_open_step"
        };
        let mutated = insert_reseq(&records, i, result("orphan"));
        prop_assert_eq!(first_violation(&mutated).map(|(i, e)| (i, e.kind())), Some((i, expected)));
    }

    /// A user or assistant message with the other role.
    #[test]
    fn messages_with_the_wrong_role_are_rejected(plan in session_plan(), at in any::<SampleIndex>()) {
        let records = build(&plan);
        let messages: Vec<usize> = (0..records.len())
            .filter(|&i| matches!(records[i].body,
                RecordBody::UserMessage { .. } | RecordBody::AssistantMessage { .. }))
            .collect();
        prop_assume!(!messages.is_empty());
        let i = messages[at.index(messages.len())];
        let mut mutated = records.clone();
        match &mut mutated[i].body {
            RecordBody::UserMessage { message } => message.role = Role::Assistant,
            RecordBody::AssistantMessage { message } => message.role = Role::User,
            _ => unreachable!(),
        }
        prop_assert_eq!(first_violation(&mutated).map(|(i, e)| (i, e.kind())), Some((i, "wrong_role")));
    }
}

// ---------------------------------------------------------------------------------------------
// Writer failures that need a crate-private sink.

fn new_session() -> NewSession {
    NewSession {
        cwd: "/work".to_owned(),
        model: "model".to_owned(),
        provider: "fake".to_owned(),
        config_hash: None,
        parent: None,
    }
}

/// A lock on a temporary file, for a writer over a device file (`/dev/full`, `/dev/null`) whose
/// own sidecar could not be written beside it.
fn stand_in_lock() -> (tempfile::TempDir, LogLock) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stand-in.jsonl");
    let file = OpenOptions::new().append(true).create(true).open(&path).unwrap();
    let lock = LogLock::acquire(&file, &path).unwrap();
    (dir, lock)
}

fn writer_config(fsync: FsyncPolicy) -> WriterConfig {
    WriterConfig { fsync, blob_threshold: 64, clock: Arc::new(ManualClock::new(1_000, 1)) }
}

/// A full disk: the append is a typed IO error, and neither trace nor projection advance.
#[test]
fn failed_append_leaves_trace_and_projection_alone() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let mut writer = store.create(new_session(), writer_config(FsyncPolicy::Turn)).unwrap();
    writer.append(turn_start(1)).unwrap();
    writer.append(user("first")).unwrap();
    let path = writer.path().unwrap().to_owned();
    drop(writer);
    let loaded = load(&path).unwrap();
    let file_len = fs_err::metadata(&path).unwrap().len();

    let full = OpenOptions::new().append(true).open("/dev/full").unwrap();
    let full = fs_err::File::from_parts(full, "/dev/full");
    let (_lock_dir, lock) = stand_in_lock();
    let mut writer = SessionWriter::from_parts(
        loaded.meta.session_id,
        Some(OpenLog { file: full, len: file_len, lock }),
        Some(store.blobs()),
        loaded.trace.clone(),
        loaded.projection(),
        writer_config(FsyncPolicy::Always),
    )
    .unwrap();
    let history_before = writer.history().to_vec();
    assert_eq!(history_before.len(), 1);
    for body in [user("second"), step_start(1, 1), turn_end(1)] {
        let err = writer.append(body).unwrap_err();
        assert!(matches!(err, Error::Io(_)), "{err:?}");
        assert!(err.to_string().contains("/dev/full"), "{err}");
        assert_eq!(writer.trace(), &loaded.trace);
        assert_eq!(writer.history(), history_before.as_slice());
    }
    // The trace is still usable: a refused record is still refused as such.
    let err = writer.append(step_end(1, 1)).unwrap_err();
    assert!(matches!(err, Error::Trace(TraceError::NoOpenStep { .. })), "{err:?}");
    drop(writer);
    // The real log was never touched.
    assert_eq!(fs_err::metadata(&path).unwrap().len(), file_len);
}

/// An in-memory writer validates and projects like a file writer.
#[test]
fn in_memory_writer_validates_and_projects() {
    let mut writer =
        SessionWriter::in_memory(new_session(), writer_config(FsyncPolicy::Never)).unwrap();
    assert_eq!(writer.path(), None);
    assert!(writer.blobs().is_none());
    assert_eq!(writer.trace().last_seq(), 1);
    assert_eq!(writer.append(turn_start(1)).unwrap(), 2);
    // Large content stays inline without a blob store.
    let big = "x".repeat(1000);
    writer.append(user(&big)).unwrap();
    assert_eq!(writer.history()[0].text(), big);
    let err = writer.append(turn_start(2)).unwrap_err();
    assert!(matches!(err, Error::Trace(TraceError::TurnAlreadyOpen { .. })), "{err:?}");
    assert_eq!(writer.trace().last_seq(), 3);
    writer.sync().unwrap();
}

// ---------------------------------------------------------------------------------------------
// Group commit under `FsyncPolicy::Turn`.

/// Appends one complete turn (`turn_start` … `turn_end`) of five records.
fn append_turn(writer: &mut SessionWriter, turn: u32) {
    for body in
        [turn_start(turn), user("go"), step_start(turn, 1), step_end(turn, 1), turn_end(turn)]
    {
        writer.append(body).unwrap();
    }
}

/// `sync()` returns only once the syncer's synced generation has caught up with the written one,
/// also for records after the last turn boundary.
#[test]
fn turn_sync_waits_until_everything_written_is_synced() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let mut writer = store.create(new_session(), writer_config(FsyncPolicy::Turn)).unwrap();
    for turn in 1..=3 {
        append_turn(&mut writer, turn);
    }
    writer.sync().unwrap();
    let counts = writer.sync_counts().unwrap();
    assert_eq!(counts.written, 16);
    assert_eq!(counts.synced, counts.written);
    // An open turn has asked for no sync; `sync()` still covers it.
    writer.append(turn_start(4)).unwrap();
    writer.append(user("unfinished")).unwrap();
    assert_eq!(writer.sync_counts().unwrap().written, 18);
    writer.sync().unwrap();
    let counts = writer.sync_counts().unwrap();
    assert_eq!(counts.synced, 18);
    // Nothing new: no sync.
    writer.sync().unwrap();
    assert_eq!(writer.sync_counts().unwrap().syncs, counts.syncs);
    // Other policies and in-memory writers have no syncer.
    let never = store.create(new_session(), writer_config(FsyncPolicy::Never)).unwrap();
    assert_eq!(never.sync_counts(), None);
    let in_memory =
        SessionWriter::in_memory(new_session(), writer_config(FsyncPolicy::Turn)).unwrap();
    assert_eq!(in_memory.sync_counts(), None);
}

/// Turn boundaries that arrive while a sync is pending share one sync: the syncer is held at
/// its gate while 100 turns are appended, so at most one request is in flight and one queued.
#[test]
fn turn_syncs_coalesce() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let mut writer = store.create(new_session(), writer_config(FsyncPolicy::Turn)).unwrap();
    writer.sync().unwrap();
    let before = writer.sync_counts().unwrap();
    assert_eq!(before.syncs, 1, "{before:?}");
    {
        let shared = writer.sync_shared().unwrap();
        let _gate = shared.gate.lock().unwrap();
        for turn in 1..=100 {
            append_turn(&mut writer, turn);
        }
    }
    writer.sync().unwrap();
    let after = writer.sync_counts().unwrap();
    assert_eq!(after.written, 501);
    assert_eq!(after.synced, after.written);
    // The one in flight, the one queued, and at most one more for `sync()` itself.
    assert!(after.syncs - before.syncs <= 3, "{after:?}");
    let path = writer.path().unwrap().to_owned();
    drop(writer);
    assert_eq!(load(&path).unwrap().trace.last_turn(), 100);
}

/// A background sync that fails (`/dev/null` takes writes but cannot sync) is sticky: `sync()`
/// and every later `append` return it as `Error::Io`, and the refused appends write nothing.
#[test]
fn failed_turn_sync_is_sticky() {
    let null = OpenOptions::new().append(true).open("/dev/null").unwrap();
    let null = fs_err::File::from_parts(null, "/dev/null");
    let (_lock_dir, lock) = stand_in_lock();
    let mut writer = SessionWriter::from_parts(
        SessionId::from(Uuid::from_u128(1)),
        Some(OpenLog { file: null, len: 0, lock }),
        None,
        SessionTrace::new(),
        Projection::new(),
        writer_config(FsyncPolicy::Turn),
    )
    .unwrap();
    // The records themselves are written; the failure comes later, on the syncer thread (held
    // at its gate here so that it cannot fail before the turn is complete).
    {
        let shared = writer.sync_shared().unwrap();
        let _gate = shared.gate.lock().unwrap();
        writer.append(meta()).unwrap();
        append_turn(&mut writer, 1);
    }
    let trace = writer.trace().clone();
    for _ in 0..2 {
        let err = writer.sync().unwrap_err();
        assert!(matches!(err, Error::Io(_)), "{err:?}");
        assert!(err.to_string().contains("/dev/null"), "{err}");
        assert!(err.to_string().contains("turn-boundary sync failed"), "{err}");
        let err = writer.append(turn_start(2)).unwrap_err();
        assert!(matches!(err, Error::Io(_)), "{err:?}");
        assert_eq!(writer.trace(), &trace);
    }
    assert_eq!(writer.sync_counts().unwrap().written, 6);
    // Dropping a failed writer neither hangs nor panics.
    drop(writer);
}

// ---------------------------------------------------------------------------------------------
// The `context` record.

fn context(model: &str) -> RecordBody {
    RecordBody::Context(ContextRecord {
        model: model.to_owned(),
        provider: "fake".to_owned(),
        sections: vec![PromptSection { name: "base".to_owned(), text: "Be brief.".to_owned() }],
        tools: vec![ToolSpec {
            name: "read_file".to_owned(),
            description: "Reads a file.".to_owned(),
            schema: serde_json::json!({"type": "object"}),
        }],
        max_output_tokens: Some(1000),
        output_schema: None,
        config_hash: Some("sha256:00".to_owned()),
        reasoning: Default::default(),
    })
}

#[test]
fn context_comes_inside_a_step_before_its_response() {
    let open_step = || vec![meta(), turn_start(1), user("hi"), step_start(1, 1)];
    let with = |mut base: Vec<RecordBody>, more: Vec<RecordBody>| {
        base.extend(more);
        base
    };
    // Before the request, once or again (a later one replaces it); in a later step too.
    check(
        with(
            open_step(),
            vec![
                context("a"),
                context("b"),
                assistant(None, &["c1"]),
                result("c1"),
                step_end(1, 1),
                step_start(1, 2),
                context("c"),
                assistant(Some("done"), &[]),
                step_end(1, 2),
                turn_end(1),
            ],
        ),
        None,
    );
    // Not outside a step, and not after the step's response.
    check(vec![meta(), context("a")], Some((1, "no_open_step")));
    check(vec![meta(), turn_start(1), context("a")], Some((2, "no_open_step")));
    check(
        with(open_step(), vec![assistant(Some("x"), &[]), context("a")]),
        Some((5, "context_after_response")),
    );
    check(
        with(open_step(), vec![assistant(None, &["c1"]), result("c1"), context("a")]),
        Some((6, "context_after_response")),
    );
    let err = first_violation(&numbered(with(
        open_step(),
        vec![assistant(Some("x"), &[]), context("a")],
    )))
    .unwrap()
    .1;
    assert_eq!(err.to_string(), "context after the response of step 1");
}

#[test]
fn the_projection_keeps_the_newest_context_beside_the_history() {
    let records = numbered(vec![
        meta(),
        turn_start(1),
        user("hi"),
        step_start(1, 1),
        context("a"),
        assistant(Some("x"), &[]),
        step_end(1, 1),
        turn_end(1),
        turn_start(2),
        user("again"),
        step_start(2, 1),
        context("b"),
    ]);
    let mut projection = Projection::new();
    for record in &records[..5] {
        projection.apply(record);
    }
    assert_eq!(projection.context().map(|c| c.model.as_str()), Some("a"));
    for record in &records[5..] {
        projection.apply(record);
    }
    assert_eq!(projection.context().map(|c| c.model.as_str()), Some("b"));
    // The context is not history.
    assert_eq!(projection.history().len(), 3);
}

#[test]
fn a_context_record_round_trips_through_a_log_and_old_logs_load_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(dir.path());
    let mut writer = store.create(new_session(), writer_config(FsyncPolicy::Never)).unwrap();
    writer.append(turn_start(1)).unwrap();
    writer.append(user("hi")).unwrap();
    writer.append(step_start(1, 1)).unwrap();
    writer.append(context("a")).unwrap();
    assert_eq!(writer.context().map(|c| c.model.as_str()), Some("a"));
    writer.append(assistant(Some("x"), &[])).unwrap();
    writer.append(step_end(1, 1)).unwrap();
    writer.append(turn_end(1)).unwrap();
    let path = writer.path().unwrap().to_owned();
    drop(writer);
    let loaded = load(&path).unwrap();
    let RecordBody::Context(expected) = context("a") else { unreachable!() };
    assert_eq!(loaded.projection().context(), Some(&expected));
    // Resuming keeps it: the next request compares against it.
    let (_, resumed) = store.resume(&path, writer_config(FsyncPolicy::Never)).unwrap();
    assert_eq!(resumed.context(), Some(&expected));
    drop(resumed);

    // A log written before the record existed loads, projects and resumes, with no context.
    let text = fs_err::read_to_string(&path).unwrap();
    let old: String = text
        .lines()
        .filter(|line| !line.contains("\"type\":\"context\""))
        .map(|l| format!("{l}\n"))
        .collect();
    fs_err::write(&path, old).unwrap();
    let loaded = load(&path).unwrap();
    assert!(loaded.unknown().next().is_none());
    assert_eq!(loaded.projection().context(), None);
    assert_eq!(loaded.projection().history().len(), 2);
    let (_, mut resumed) = store.resume(&path, writer_config(FsyncPolicy::Never)).unwrap();
    assert_eq!(resumed.context(), None);
    resumed.append(turn_start(2)).unwrap();
}

#[test]
fn threads_storing_the_same_blob_at_once_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = crate::BlobStore::new(dir.path().join("blobs"));
    let bytes = vec![b'x'; 256 * 1024];
    let shas: Vec<String> = std::thread::scope(|scope| {
        let puts: Vec<_> = (0..8).map(|_| scope.spawn(|| blobs.put(&bytes).unwrap())).collect();
        puts.into_iter().map(|put| put.join().unwrap()).collect()
    });
    assert!(shas.iter().all(|sha| *sha == shas[0]));
    assert_eq!(blobs.get_verified(&shas[0]).unwrap(), bytes);
    let left: Vec<_> = fs_err::read_dir(blobs.path_of(&shas[0]).parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "no temporary file left: {left:?}");
}
