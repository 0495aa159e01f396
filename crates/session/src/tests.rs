//! Unit tests of the session crate: the `SessionTrace` grammar, the `context` record, and
//! writer failures.
//!
//! The grammar is tested three ways: a table here with one minimal log per violation kind, and
//! in `generated` a proptest that generates valid logs (all accepted, every prefix closable by
//! `closing_records`) and proptests of single mutations of those logs (swap, drop, duplicate,
//! renumber, orphan result, wrong role), each rejected with the violation kind the mutation must
//! cause. `writer` holds the writer failures that need a crate-private constructor (a full disk,
//! a file that cannot sync) and the group-commit tests that read the syncer's test-only
//! counters. The record builders below serve all three.

mod generated;
mod writer;

use std::sync::Arc;

use codecoder_protocol::{
    ApprovalDecision, ContextRecord, FORMAT_VERSION, Message, MessageId, MessageItem,
    PromptSection, Record, RecordBody, Role, SessionId, SessionMeta, StepId, StopReason,
    SyntheticReason, ToolCall, ToolCallId, ToolResult, ToolResultStatus, ToolSpec, TurnId,
    TurnOutcome, Usage,
};
use codecoder_stdx::ManualClock;
use pretty_assertions::assert_eq;
use uuid::Uuid;

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

fn new_session() -> NewSession {
    NewSession {
        cwd: "/work".to_owned(),
        model: "model".to_owned(),
        provider: "fake".to_owned(),
        config_hash: None,
        parent: None,
    }
}

fn writer_config(fsync: FsyncPolicy) -> WriterConfig {
    WriterConfig { fsync, blob_threshold: 64, clock: Arc::new(ManualClock::new(1_000, 1)) }
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
