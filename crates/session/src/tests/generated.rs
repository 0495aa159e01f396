//! Generated logs: a proptest that builds valid logs from a plan of turns, steps and calls
//! (every one accepted, every prefix closable by `closing_records`), and proptests of single
//! mutations of them, each rejected with the violation kind the mutation must cause.

use proptest::prelude::*;
use proptest::sample::Index as SampleIndex;

use super::*;

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
