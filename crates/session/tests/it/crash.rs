//! Crash consistency: a log cut at any byte offset of its last records loads, and repair makes
//! it whole without losing or rewriting a complete record.
//!
//! Random sessions (some closed, some stopped mid-turn with calls pending) are written with a
//! real `SessionWriter`; then, for byte offsets inside their last few lines, the file is
//! truncated there, loaded and resumed. The expectations come from the written bytes and from
//! an independent model of what is left open, not from the loader itself. By default every
//! fourth offset is cut (and both sides of every line end), over 1,000 cuts in all; with
//! `SLOW_TESTS` set, every offset.

use std::path::PathBuf;

use codecoder_protocol::env::SLOW_TESTS;
use codecoder_protocol::{
    Message, Record, RecordBody, StepId, SyntheticReason, ToolCallId, ToolResultStatus, TurnId,
    TurnOutcome, Usage,
};
use codecoder_session::{Projection, SessionStore, load};
use pretty_assertions::assert_eq;

use crate::{
    Rng, approval, assistant, config, new_session, result, started, step_end, step_start,
    temp_store, turn_end, turn_start, user,
};

/// How many trailing lines of each log are cut at every byte.
const TAIL_LINES: usize = 4;
const SESSIONS: u64 = 8;

struct Written {
    path: PathBuf,
    bytes: Vec<u8>,
    /// The records, parsed straight from the lines.
    records: Vec<Record>,
    /// The offset just past each line's newline.
    line_ends: Vec<usize>,
    /// The writer's history after the first `k` records.
    histories: Vec<Vec<Message>>,
}

/// The bodies of a random session; the second value is where its last turn starts.
fn random_bodies(rng: &mut Rng) -> (Vec<RecordBody>, usize) {
    let mut bodies = Vec::new();
    let mut last_turn_start = 0;
    let turns = 2 + rng.below(3);
    for t in 1..=u32::try_from(turns).unwrap() {
        last_turn_start = bodies.len();
        bodies.push(turn_start(t));
        bodies.push(user(&format!("turn {t}: please fix the failing test\nsecond line")));
        for s in 1..=u32::try_from(1 + rng.below(3)).unwrap() {
            if rng.chance(15) {
                bodies.push(RecordBody::Compaction {
                    history: vec![Message::user_text(format!("summary before {t}.{s}"))],
                    note: Some("context full".to_owned()),
                });
            }
            bodies.push(step_start(t, s));
            let ids: Vec<String> = (0..rng.below(4)).map(|i| format!("call_{t}_{s}_{i}")).collect();
            let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            bodies.push(assistant("let me look", &id_refs));
            let mut queues: Vec<Vec<RecordBody>> = ids
                .iter()
                .map(|id| {
                    let size = usize::try_from(20 + rng.below(300)).unwrap();
                    let mut events = Vec::new();
                    if rng.chance(40) {
                        events.push(approval(id));
                    }
                    if rng.chance(70) {
                        events.push(started(id));
                    }
                    events.push(result(id, &"o".repeat(size)));
                    events.reverse();
                    events
                })
                .collect();
            loop {
                let live: Vec<usize> =
                    (0..queues.len()).filter(|&i| !queues[i].is_empty()).collect();
                if live.is_empty() {
                    break;
                }
                let pick = live[usize::try_from(rng.below(live.len() as u64)).unwrap()];
                bodies.push(queues[pick].pop().unwrap());
            }
            if rng.chance(10) {
                bodies.push(RecordBody::Error { message: "provider retry".to_owned() });
            }
            bodies.push(step_end(t, s));
        }
        bodies.push(turn_end(t));
    }
    (bodies, last_turn_start)
}

fn write_session(store: &SessionStore, rng: &mut Rng) -> Written {
    let (mut bodies, last_turn_start) = random_bodies(rng);
    if rng.chance(70) {
        // The process dies somewhere in the last turn.
        let in_turn = (bodies.len() - last_turn_start - 1) as u64;
        bodies.truncate(last_turn_start + 1 + usize::try_from(rng.below(in_turn)).unwrap());
    } else if rng.chance(50) {
        bodies.push(RecordBody::SessionEnd);
    }
    let mut writer = store.create(new_session("/work/crash"), config(1_000_000)).unwrap();
    let mut histories = vec![Vec::new(), writer.history().to_vec()];
    for body in bodies {
        writer.append(body).unwrap();
        histories.push(writer.history().to_vec());
    }
    let path = writer.path().unwrap().to_owned();
    drop(writer);
    let bytes = fs_err::read(&path).unwrap();
    let mut records = Vec::new();
    let mut line_ends = Vec::new();
    let mut start = 0;
    for (i, byte) in bytes.iter().enumerate() {
        if *byte == b'\n' {
            records.push(serde_json::from_slice::<Record>(&bytes[start..i]).unwrap());
            line_ends.push(i + 1);
            start = i + 1;
        }
    }
    assert_eq!(start, bytes.len(), "the writer leaves no partial line");
    assert_eq!(histories.len(), records.len() + 1);
    Written { path, bytes, records, line_ends, histories }
}

/// One record that closes something, as the repair must write it.
#[derive(Debug, PartialEq)]
enum Closing {
    Result(ToolCallId, SyntheticReason),
    StepEnd(TurnId, StepId),
    TurnEnd(TurnId),
}

/// What the repair must append after `records`, from a model of what they leave open.
fn expected_closing(records: &[Record]) -> Vec<Closing> {
    let mut open_turn = None;
    let mut open_step = None;
    let mut pending: Vec<(ToolCallId, bool)> = Vec::new();
    for record in records {
        match &record.body {
            RecordBody::TurnStart { turn } => open_turn = Some(*turn),
            RecordBody::TurnEnd { .. } => open_turn = None,
            RecordBody::StepStart { turn, step } => open_step = Some((*turn, *step)),
            RecordBody::StepEnd { .. } => open_step = None,
            RecordBody::AssistantMessage { message } => {
                pending.extend(message.tool_calls().map(|call| (call.id.clone(), false)));
            }
            RecordBody::ToolStarted { call_id } => {
                pending.iter_mut().filter(|(id, _)| id == call_id).for_each(|p| p.1 = true);
            }
            RecordBody::ToolResult { result, .. } => {
                pending.retain(|(id, _)| *id != result.tool_call_id);
            }
            _ => {}
        }
    }
    let mut out: Vec<Closing> = pending
        .into_iter()
        .map(|(id, was_started)| {
            let reason = if was_started {
                SyntheticReason::OutcomeUnknown
            } else {
                SyntheticReason::NotStarted
            };
            Closing::Result(id, reason)
        })
        .collect();
    out.extend(open_step.map(|(turn, step)| Closing::StepEnd(turn, step)));
    out.extend(open_turn.map(Closing::TurnEnd));
    out
}

/// What a record the repair appended closes; panics on anything a repair must not write.
fn closing_of(body: &RecordBody) -> Closing {
    match body {
        RecordBody::ToolResult { result, synthetic: Some(reason) } => {
            assert_eq!(result.status, ToolResultStatus::Error);
            assert!(!result.content.is_empty());
            Closing::Result(result.tool_call_id.clone(), *reason)
        }
        RecordBody::StepEnd { turn, step, usage, stop_reason: None } => {
            assert_eq!(*usage, Usage::default());
            Closing::StepEnd(*turn, *step)
        }
        RecordBody::TurnEnd { turn, outcome: TurnOutcome::Interrupted, .. } => {
            Closing::TurnEnd(*turn)
        }
        other => panic!("repair appended {other:?}"),
    }
}

fn check_cut(store: &SessionStore, written: &Written, cut: usize) {
    let context = format!("cut at byte {cut} of {}", written.bytes.len());
    let path = &written.path;
    fs_err::write(path, &written.bytes[..cut]).unwrap();
    let kept_lines = written.line_ends.iter().filter(|&&end| end <= cut).count();
    let boundary = written.line_ends[kept_lines - 1];
    let kept = &written.records[..kept_lines];

    let loaded = load(path).unwrap();
    let records: Vec<Record> = loaded.records().cloned().collect();
    assert_eq!(records.as_slice(), kept, "{context}");
    assert_eq!(loaded.unknown().count(), 0, "{context}");
    match loaded.torn_tail {
        None => assert_eq!(cut, boundary, "{context}: a torn tail went unreported"),
        Some(torn) => {
            assert!(cut > boundary, "{context}: {torn:?}");
            assert_eq!(torn.offset, boundary as u64, "{context}");
            assert_eq!(torn.len, (cut - boundary) as u64, "{context}");
            assert_eq!(torn.line, kept_lines + 1, "{context}");
            assert_eq!(loaded.valid_len(cut as u64), boundary as u64, "{context}");
        }
    }

    // The projection is a pure function of the complete records.
    let projection = loaded.projection();
    assert_eq!(projection, loaded.projection(), "{context}");
    let mut direct = Projection::new();
    for record in kept {
        direct.apply(record);
    }
    assert_eq!(projection, direct, "{context}");
    assert_eq!(projection.history(), written.histories[kept_lines].as_slice(), "{context}");

    let expected = expected_closing(kept);
    assert_eq!(loaded.trace.needs_repair(), !expected.is_empty(), "{context}");
    let (resumed, writer) = store.resume(path, config(9_000_000)).unwrap();
    assert_eq!(resumed.records().count(), kept_lines, "{context}");
    assert!(!writer.trace().needs_repair(), "{context}");
    drop(writer);

    let repaired = load(path).unwrap();
    assert!(repaired.torn_tail.is_none(), "{context}");
    assert!(!repaired.trace.needs_repair(), "{context}");
    let records: Vec<Record> = repaired.records().cloned().collect();
    assert_eq!(&records[..kept_lines], kept, "{context}: a complete record changed");
    let appended = &records[kept_lines..];
    let closing: Vec<Closing> = appended.iter().map(|r| closing_of(&r.body)).collect();
    assert_eq!(closing, expected, "{context}");
    for (record, seq) in appended.iter().zip(kept[kept_lines - 1].seq + 1..) {
        assert_eq!(record.seq, seq, "{context}");
    }
    let bytes = fs_err::read(path).unwrap();
    assert_eq!(&bytes[..boundary], &written.bytes[..boundary], "{context}: bytes rewritten");

    // Repaired history: what the model saw, plus one tool message per synthetic result.
    let history = repaired.projection();
    assert_eq!(history, repaired.projection(), "{context}");
    let seen = written.histories[kept_lines].len();
    assert_eq!(&history.history()[..seen], written.histories[kept_lines].as_slice());
    let synthetic = expected.iter().filter(|c| matches!(c, Closing::Result(..))).count();
    assert_eq!(history.history().len(), seen + synthetic, "{context}");

    // A repaired log needs nothing more: resuming it again appends nothing.
    if cut.is_multiple_of(8) {
        let len = bytes.len();
        let (again, writer) = store.resume(path, config(9_000_000)).unwrap();
        assert!(again.repair_plan().is_empty(), "{context}");
        drop(writer);
        assert_eq!(fs_err::read(path).unwrap().len(), len, "{context}");
    }
}

#[test]
fn cut_logs_load_and_repair_to_valid_logs() {
    // Every byte with SLOW_TESTS set; else every fourth, and both sides of each line end.
    let stride = if std::env::var_os(SLOW_TESTS).is_some() { 1 } else { 4 };
    let (_home, store) = temp_store();
    let mut cuts = 0;
    let mut torn = 0;
    let mut repaired = 0;
    for seed in 0..SESSIONS {
        let mut rng = Rng::new(0xc0de_c0de ^ seed);
        let written = write_session(&store, &mut rng);
        let lines = written.line_ends.len();
        assert!(lines > TAIL_LINES + 1, "session {seed} is too short");
        // From the end of the line before the tail (nothing torn) to the full file.
        let first = written.line_ends[lines - TAIL_LINES - 1];
        let near_boundary = |cut: usize| written.line_ends.iter().any(|end| end.abs_diff(cut) <= 1);
        for cut in first..=written.bytes.len() {
            if !(cut - first).is_multiple_of(stride) && !near_boundary(cut) {
                continue;
            }
            check_cut(&store, &written, cut);
            cuts += 1;
            if !written.line_ends.contains(&cut) {
                torn += 1;
            }
        }
        if !expected_closing(&written.records).is_empty() {
            repaired += 1;
        }
    }
    assert!(cuts >= 1_000, "only {cuts} cuts");
    assert!(torn > cuts / 2, "{torn} torn of {cuts}");
    assert!(repaired >= 2, "only {repaired} sessions stopped mid-turn");
}
