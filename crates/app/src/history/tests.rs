//! The replay's pieces that need no session: reading a compaction's note back, and the result
//! a logged tool result stands for.

use codecoder_protocol::{
    AgentEventKind, SyntheticReason, ToolError, ToolResult, ToolResultStatus, TurnId,
};

use super::{compacted, finished};

#[test]
fn a_compaction_note_gives_its_trigger_and_token_estimates() {
    let AgentEventKind::Compacted {
        trigger, summarized, tokens_before, tokens_after, message, ..
    } = compacted(TurnId::new(2), "context compacted (manual): ~1200 → ~300 tokens")
    else {
        panic!("not a compaction");
    };
    assert_eq!(
        (trigger.as_str(), summarized, tokens_before, tokens_after),
        ("manual", true, 1200, 300)
    );
    assert_eq!(message, "context compacted (manual): ~1200 → ~300 tokens");

    let note = "context trimmed without a summary (auto; the summary request failed: 500): ~90 → ~40 tokens";
    let AgentEventKind::Compacted { trigger, summarized, tokens_before, tokens_after, .. } =
        compacted(TurnId::new(1), note)
    else {
        panic!("not a compaction");
    };
    assert_eq!(
        (trigger.as_str(), summarized, tokens_before, tokens_after),
        ("auto", false, 90, 40)
    );
}

#[test]
fn a_note_that_says_nothing_of_tokens_gives_zero() {
    let AgentEventKind::Compacted { tokens_before, tokens_after, .. } =
        compacted(TurnId::new(1), "something else")
    else {
        panic!("not a compaction");
    };
    assert_eq!((tokens_before, tokens_after), (0, 0));
}

#[test]
fn harness_written_results_stand_for_the_errors_they_were() {
    let id = codecoder_protocol::ToolCallId::new("call_1");
    let text = |status, text: &str| ToolResult::text(id.clone(), status, text);
    let mut denied = text(ToolResultStatus::Error, "permission denied: the user denied this call");
    let by_person =
        Err(ToolError::PermissionDenied { reason: "the user denied this call".to_owned() });
    assert_eq!(finished(&denied, Some(SyntheticReason::Refused)), by_person);
    // The nudge the kernel adds after repeated failures is no part of the reason.
    denied
        .content
        .push(codecoder_protocol::ContentItem::Text { text: "Do not repeat it.".to_owned() });
    assert_eq!(finished(&denied, Some(SyntheticReason::Refused)), by_person);
    // A tool's own denial (a protected path) is one too.
    let protected = text(ToolResultStatus::Error, "permission denied: `.git` is protected");
    assert_eq!(
        finished(&protected, None),
        Err(ToolError::PermissionDenied { reason: "`.git` is protected".to_owned() })
    );
    let unknown = text(ToolResultStatus::Error, "unknown tool `nope`");
    assert_eq!(
        finished(&unknown, Some(SyntheticReason::Refused)),
        Err(ToolError::Failed { message: "unknown tool `nope`".to_owned() })
    );
    let cancelled = text(ToolResultStatus::Cancelled, "cancelled");
    assert_eq!(finished(&cancelled, Some(SyntheticReason::Cancelled)), Err(ToolError::Cancelled));
    assert_eq!(finished(&cancelled, None), Err(ToolError::Cancelled));
    let failed = text(ToolResultStatus::Error, "exit 1");
    assert_eq!(finished(&failed, None), Ok(failed.clone()));
    let crashed = text(ToolResultStatus::Error, "not started: codecoder stopped");
    assert_eq!(
        finished(&crashed, Some(SyntheticReason::NotStarted)),
        Err(ToolError::Failed { message: "not started: codecoder stopped".to_owned() })
    );
}

/// A live session with the fake model, and its log replayed: the events of both, reduced to
/// what a front-end shows, are the same.
mod live {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use codecoder_kernel::ToolRegistry;
    use codecoder_protocol::{
        AgentCommand, AgentEvent, AgentEventKind, ApprovalDecision, CallView, RewindRecord, StepId,
        ToolCall, ToolError, ToolResultStatus, TurnId, TurnOutcome, Usage, UserInput,
    };
    use codecoder_test_support::{FakeModelServer, Reply, Script};
    use serde_json::json;

    use crate::history::{Detail, HistoryEvent, ReplayConfig, Replayed, Rewound, events, load};
    use crate::{ApprovalMode, Overrides, Runtime, SessionRequest};

    /// An agent event as a front-end shows it: deltas of one step joined, results as their
    /// status and text, what the log does not keep left out.
    #[derive(Debug, Clone, PartialEq)]
    enum Seen {
        TurnStarted(TurnId),
        StepStarted(TurnId, StepId),
        Text(StepId, String),
        Message(StepId, String),
        Reasoning(StepId, String),
        ToolStarted(ToolCall, CallView),
        ToolFinished(ToolCall, CallView, &'static str, String),
        StepFinished(StepId, Usage, String),
        Usage(Usage),
        Compacted(String, bool, u64, u64, String),
        TurnDone(TurnId, bool, TurnOutcome, Usage),
    }

    fn reduce<'a>(kinds: impl IntoIterator<Item = &'a AgentEventKind>) -> Vec<Seen> {
        let mut out: Vec<Seen> = Vec::new();
        for kind in kinds {
            let seen = match kind {
                AgentEventKind::TurnStarted { turn } => Seen::TurnStarted(*turn),
                AgentEventKind::StepStarted { turn, step } => Seen::StepStarted(*turn, *step),
                AgentEventKind::TextDelta { step, delta, .. } => {
                    if let Some(Seen::Text(at, text)) = out.last_mut()
                        && at == step
                    {
                        text.push_str(delta);
                        continue;
                    }
                    Seen::Text(*step, delta.clone())
                }
                AgentEventKind::AgentMessage { step, text, .. } => {
                    Seen::Message(*step, text.clone())
                }
                AgentEventKind::ReasoningDelta { step, delta, .. } => {
                    if let Some(Seen::Reasoning(at, text)) = out.last_mut()
                        && at == step
                    {
                        text.push_str(delta);
                        continue;
                    }
                    Seen::Reasoning(*step, delta.clone())
                }
                AgentEventKind::ToolStarted { call, view, .. } => {
                    Seen::ToolStarted(call.clone(), view.clone())
                }
                AgentEventKind::ToolFinished { call, view, result, .. } => {
                    let (status, text) = match result {
                        Ok(result) => (
                            match result.status {
                                ToolResultStatus::Success => "success",
                                ToolResultStatus::Error => "error",
                                ToolResultStatus::Cancelled => "cancelled",
                            },
                            crate::result_text(result),
                        ),
                        Err(err @ ToolError::PermissionDenied { .. }) => {
                            ("denied", err.to_string())
                        }
                        Err(err @ ToolError::Cancelled) => ("cancelled", err.to_string()),
                        Err(err) => ("error", err.to_string()),
                    };
                    Seen::ToolFinished(call.clone(), view.clone(), status, text)
                }
                AgentEventKind::StepFinished { step, usage, text, .. } => {
                    Seen::StepFinished(*step, *usage, text.clone())
                }
                AgentEventKind::Usage { turn_total, .. } => Seen::Usage(*turn_total),
                AgentEventKind::Compacted {
                    trigger,
                    summarized,
                    tokens_before,
                    tokens_after,
                    message,
                    ..
                } => Seen::Compacted(
                    trigger.clone(),
                    *summarized,
                    *tokens_before,
                    *tokens_after,
                    message.clone(),
                ),
                AgentEventKind::TurnDone { turn, cancelled, outcome, usage } => {
                    Seen::TurnDone(*turn, *cancelled, outcome.clone(), *usage)
                }
                // Shown live only, never logged.
                AgentEventKind::CallProgress { .. }
                | AgentEventKind::ToolOutputDelta { .. }
                | AgentEventKind::StepRetried { .. }
                | AgentEventKind::Status(_)
                | AgentEventKind::ApprovalRequest(_)
                | AgentEventKind::AskUser(_)
                | AgentEventKind::Warning { .. }
                | AgentEventKind::HookMessage { .. }
                | AgentEventKind::ShutdownComplete
                | AgentEventKind::UserPrompt { .. } => continue,
            };
            out.push(seen);
        }
        out
    }

    /// A runtime in `home` and `cwd` whose model is `server`, deciding approvals itself
    /// (`never`: what would ask is denied), with a rule that denies writing `c.txt`.
    fn runtime(home: &Path, cwd: &Path, server: &FakeModelServer) -> Runtime {
        fs_err::write(
            home.join("config.toml"),
            format!(
                "model = \"local-model\"\nmodel_provider = \"local\"\n[model_providers.local]\nbase_url = \"{}/v1\"\nwire_api = \"chat\"\n[shell]\nsnapshot = false\n[permissions]\ndeny = [\"write_file(c.txt)\"]\n",
                server.base_url()
            ),
        )
        .unwrap();
        let cwd = fs_err::canonicalize(cwd).unwrap();
        let loaded = codecoder_config::load(&codecoder_config::LoadOptions {
            system_path: home.join("no-system.toml"),
            home: Some(home.to_owned()),
            cwd: cwd.clone(),
            profile: None,
            overrides: Vec::new(),
        })
        .unwrap();
        Runtime {
            overrides: Overrides { approval: Some(ApprovalMode::Never), ..Overrides::default() },
            home: home.to_owned(),
            cwd,
            loaded,
            agents_md: codecoder_context::AgentsMdLoader::new(),
        }
    }

    /// The events of one turn, up to its `TurnDone`; `on_text` runs at its first text delta.
    fn turn(
        events: &crossbeam_channel::Receiver<AgentEvent>,
        mut on_text: impl FnMut(),
    ) -> Vec<AgentEventKind> {
        let mut out = Vec::new();
        let mut texted = false;
        loop {
            let event = events.recv_timeout(std::time::Duration::from_secs(20)).unwrap();
            let done = matches!(event.kind, AgentEventKind::TurnDone { .. });
            if !texted && matches!(event.kind, AgentEventKind::TextDelta { .. }) {
                texted = true;
                on_text();
            }
            out.push(event.kind);
            if done {
                return out;
            }
        }
    }

    /// A session of three turns (tools run and denied, a manual compaction, a cancelled
    /// answer) and a conversation rewind; its live events, log and tools.
    pub(super) struct Run {
        live: Vec<AgentEventKind>,
        pub(super) log: PathBuf,
        tools: Arc<ToolRegistry>,
        denied: PathBuf,
        _dirs: [tempfile::TempDir; 2],
        _server: FakeModelServer,
    }

    fn run() -> Run {
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let (home, cwd) = (dirs[0].path(), dirs[1].path());
        let denied = cwd.join("c.txt");
        fs_err::write(cwd.join("a.txt"), "one\ntwo\n").unwrap();
        let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+three\n*** Add File: d.txt\n+new\n*** End Patch\n";
        let server = FakeModelServer::start(
            Script::new()
                .reply(
                    Reply::tool_call("call_1", "read_file", json!({"path": "a.txt"}))
                        .and_tool_call(
                            "call_2",
                            "write_file",
                            json!({"path": "b.txt", "content": "b\n"}),
                        )
                        .and_tool_call(
                            "call_3",
                            "write_file",
                            json!({"path": "c.txt", "content": "c\n"}),
                        )
                        .with_text("Looking first.")
                        .reasoning("the file may be short")
                        .chunks(3)
                        .usage(codecoder_test_support::Usage::tokens(120, 30).cached(100)),
                )
                .reply(
                    Reply::tool_call("call_4", "apply_patch", json!({"input": patch}))
                        .usage(codecoder_test_support::Usage::tokens(200, 40)),
                )
                .reply(
                    Reply::text("Done: a.txt says three now.")
                        .chunks(4)
                        .usage(codecoder_test_support::Usage::tokens(260, 12)),
                )
                .reply(
                    Reply::text("The person fixed a.txt with a patch.")
                        .usage(codecoder_test_support::Usage::tokens(300, 20)),
                )
                .reply(Reply::endless_text()),
        )
        .unwrap();
        let runtime = runtime(home, cwd, &server);
        let session = runtime.start(&SessionRequest::new()).unwrap();
        let tools = Arc::clone(&session.tools);
        let agent = session.agent;
        let log = agent.session_path().unwrap().to_owned();
        let mut live = Vec::new();
        agent.cmd.send(AgentCommand::Submit(UserInput::text("fix a.txt"))).unwrap();
        live.extend(turn(&agent.events, || {}));
        agent.cmd.send(AgentCommand::Compact { focus: None }).unwrap();
        live.extend(turn(&agent.events, || {}));
        agent.cmd.send(AgentCommand::Submit(UserInput::text("go on"))).unwrap();
        let cmd = agent.cmd.clone();
        live.extend(turn(&agent.events, || cmd.send(AgentCommand::Cancel).unwrap()));
        agent
            .cmd
            .send(AgentCommand::Rewind(RewindRecord {
                turn: TurnId::new(3),
                conversation: true,
                files: false,
                restored: Vec::new(),
                skipped: Vec::new(),
            }))
            .unwrap();
        agent.shutdown().unwrap();
        Run { live, log, tools, denied, _dirs: dirs, _server: server }
    }

    /// The run, and beside its log the same log cut right after its first call started (as a
    /// crash leaves it) and that cut with a torn last line.
    pub(super) fn run_and_crashes() -> (Run, PathBuf, PathBuf) {
        let run = run();
        let text = fs_err::read_to_string(&run.log).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let started =
            lines.iter().position(|line| line.contains("\"type\":\"tool_started\"")).unwrap();
        let crashed = run.log.with_file_name("crashed.jsonl");
        fs_err::write(&crashed, lines[..=started].join("\n") + "\n").unwrap();
        let torn = run.log.with_file_name("torn.jsonl");
        fs_err::write(&torn, lines[..=started].join("\n") + "\n{\"seq\":").unwrap();
        (run, crashed, torn)
    }

    fn replayed(log: &Path, tools: &ToolRegistry, rewound: Rewound) -> Vec<Replayed> {
        let loaded = load(log).unwrap();
        events(&loaded, &ReplayConfig { viewer: tools, detail: Detail::Conversation, rewound })
    }

    fn agent_kinds(replayed: &[Replayed]) -> Vec<&AgentEventKind> {
        replayed
            .iter()
            .filter_map(|replayed| match &replayed.event {
                HistoryEvent::Agent(kind) => Some(kind),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_replay_shows_what_the_live_run_showed() {
        let run = run();
        let live = reduce(&run.live);
        let replayed = replayed(&run.log, &run.tools, Rewound::Show);
        let replay = reduce(agent_kinds(&replayed));
        assert_eq!(replay, live);

        // What the run did is all there: views of each call, the denial, the compaction and the
        // cancelled turn.
        let finished: Vec<(&str, &'static str)> = live
            .iter()
            .filter_map(|seen| match seen {
                Seen::ToolFinished(call, _, status, _) => Some((call.name.as_str(), *status)),
                _ => None,
            })
            .collect();
        assert_eq!(
            finished,
            [
                ("read_file", "success"),
                ("write_file", "success"),
                ("write_file", "denied"),
                ("apply_patch", "success")
            ]
        );
        let patched = live.iter().find_map(|seen| match seen {
            Seen::ToolStarted(call, view) if call.name == "apply_patch" => Some(view),
            _ => None,
        });
        let paths: Vec<&str> =
            patched.unwrap().changes.iter().map(|change| change.path.as_str()).collect();
        assert_eq!(paths, ["a.txt", "d.txt"]);
        assert!(live.iter().any(
            |seen| matches!(seen, Seen::Compacted(trigger, true, _, _, _) if trigger == "manual")
        ));
        let outcomes: Vec<&TurnOutcome> = live
            .iter()
            .filter_map(|seen| match seen {
                Seen::TurnDone(_, _, outcome, _) => Some(outcome),
                _ => None,
            })
            .collect();
        assert_eq!(
            outcomes,
            [&TurnOutcome::Completed, &TurnOutcome::Completed, &TurnOutcome::Cancelled]
        );
        assert!(!run.denied.exists(), "the denied write did not run");
        let first_turn = live.iter().find_map(|seen| match seen {
            Seen::TurnDone(_, _, _, usage) => Some(*usage),
            _ => None,
        });
        assert_eq!(
            first_turn.map(|usage| (usage.input_tokens, usage.output_tokens)),
            Some((580, 82))
        );
    }

    #[test]
    fn a_replay_gives_the_persons_messages_approvals_and_rewinds_that_the_live_stream_lacks() {
        let run = run();
        let replayed = replayed(&run.log, &run.tools, Rewound::Show);
        let users: Vec<&UserInput> = replayed
            .iter()
            .filter_map(|replayed| match &replayed.event {
                HistoryEvent::User(input) => Some(input),
                _ => None,
            })
            .collect();
        // The compaction's summary request is no message of the person's.
        assert_eq!(users, [&UserInput::text("fix a.txt"), &UserInput::text("go on")]);
        let denied: Vec<&str> = replayed
            .iter()
            .filter_map(|replayed| match &replayed.event {
                HistoryEvent::Approval(approval) if approval.decision == ApprovalDecision::Deny => {
                    Some(approval.call_id.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(denied, ["call_3"]);
        assert!(matches!(
            replayed.last().map(|replayed| &replayed.event),
            Some(HistoryEvent::Rewind(rewind)) if rewind.turn == TurnId::new(3) && rewind.conversation
        ));

        // Skipping what the rewind took back leaves the turns before it whole.
        let kept = self::replayed(&run.log, &run.tools, Rewound::Skip);
        let kept_seen = reduce(agent_kinds(&kept));
        let live = reduce(&run.live);
        let third =
            live.iter().position(|seen| *seen == Seen::TurnStarted(TurnId::new(3))).unwrap();
        assert_eq!(kept_seen, live[..third]);
        assert!(!kept.iter().any(|replayed| matches!(&replayed.event, HistoryEvent::User(input) if *input == UserInput::text("go on"))));
    }

    #[test]
    fn a_subagents_log_replays_as_its_events_reached_the_parent() {
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let (home, cwd) = (dirs[0].path(), dirs[1].path());
        fs_err::write(cwd.join("a.txt"), "one\n").unwrap();
        let server = FakeModelServer::start(
            Script::new()
                .reply(Reply::tool_call("call_a", "agent", json!({"task": "read a.txt"})))
                .reply(Reply::tool_call("call_c", "read_file", json!({"path": "a.txt"})))
                .reply(Reply::text("a.txt says one.").chunks(2))
                .reply(Reply::text("The subagent read it.")),
        )
        .unwrap();
        let runtime = runtime(home, cwd, &server);
        let session = runtime.start(&SessionRequest::new()).unwrap();
        let tools = Arc::clone(&session.tools);
        let agent = session.agent;
        let root = agent.session_id();
        let log = agent.session_path().unwrap().to_owned();
        agent.cmd.send(AgentCommand::Submit(UserInput::text("ask a subagent"))).unwrap();
        let mut child_live = Vec::new();
        loop {
            let event = agent.events.recv_timeout(std::time::Duration::from_secs(20)).unwrap();
            if event.source.session_id != root {
                child_live.push(event);
                continue;
            }
            if matches!(event.kind, AgentEventKind::TurnDone { .. }) {
                break;
            }
        }
        agent.shutdown().unwrap();

        let child_log = fs_err::read_dir(log.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .find(|path| {
                path.extension().is_some_and(|ext| ext == "jsonl")
                    && load(path).unwrap().meta.parent.is_some()
            })
            .unwrap();
        let replayed = replayed(&child_log, &tools, Rewound::Show);
        let source = &child_live[0].source;
        assert_eq!(source.subagent_path, [codecoder_protocol::ToolCallId::new("call_a")]);
        assert!(replayed.iter().all(|replayed| replayed.source == *source));
        let live = reduce(child_live.iter().map(|event| &event.kind));
        assert_eq!(reduce(agent_kinds(&replayed)), live);
        assert!(live.iter().any(|seen| matches!(seen, Seen::ToolFinished(call, _, "success", _) if call.name == "read_file")));
    }

    #[test]
    fn a_crash_repaired_log_replays_its_open_calls_as_failed_and_its_turn_as_interrupted() {
        let (run, crashed, _) = run_and_crashes();
        let store =
            codecoder_session::SessionStore::new(run.log.parent().unwrap().parent().unwrap());
        drop(store.resume_writer(&crashed, codecoder_session::WriterConfig::standard()).unwrap());

        let replayed = replayed(&crashed, &run.tools, Rewound::Show);
        let replay = reduce(agent_kinds(&replayed));
        let live = reduce(&run.live);
        let first_start =
            live.iter().position(|seen| matches!(seen, Seen::ToolStarted(..))).unwrap();
        assert_eq!(replay[..=first_start], live[..=first_start]);
        let tail: Vec<String> = replay[first_start + 1..]
            .iter()
            .map(|seen| match seen {
                Seen::ToolFinished(call, _, status, text) => {
                    format!("{} {status} {}", call.id.as_str(), text.split(':').next().unwrap())
                }
                Seen::TurnDone(_, cancelled, outcome, _) => format!("done {cancelled} {outcome:?}"),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            tail,
            [
                "call_1 error outcome unknown",
                "call_2 error not started",
                "call_3 error not started",
                "done false Interrupted",
            ]
        );
    }
}

/// `sessions show` writes the log through the replay: every record's block, in order.
#[test]
fn a_transcript_shows_each_record_of_a_session_in_order() {
    let (run, crashed, torn) = live::run_and_crashes();
    let transcript = |log: &std::path::Path| {
        let loaded = codecoder_session::load(log).unwrap();
        let home = log.parent().unwrap().parent().unwrap();
        let blobs = codecoder_session::SessionStore::new(home).blobs();
        let mut out = Vec::new();
        crate::write_transcript(&blobs, &loaded, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    };
    let text = transcript(&run.log);
    let mut rest = text.as_str();
    // Arguments print in their map's order, which serde_json's features decide (the workspace
    // build keeps insertion order, a build of this crate alone sorts the keys).
    let denied_write = format!(
        "    → write_file {} [call_3]",
        serde_json::json!({"path": "c.txt", "content": "c\n"})
    );
    for expected in [
        "  started ",
        "── turn 1 · ",
        "user: fix a.txt",
        "  · step 1",
        "  [context: local-model (local) · sections: base instructions, environment",
        "  (reasoning) the file may be short",
        "assistant: Looking first.",
        "    → read_file {\"path\":\"a.txt\"} [call_1]",
        denied_write.as_str(),
        "    approval for call_1: AllowOnce (by mode)",
        "    ▶ running call_1",
        "    ← call_1 Success",
        "           1\tone",
        "    approval for call_3: Deny (by rule)",
        "    ← call_3 Error (written by codecoder)",
        "      permission denied: ",
        "  · step 2",
        "    ▶ running call_4",
        "  · step 3",
        "assistant: Done: a.txt says three now.",
        "  [checkpoint of turn 1: 3 file(s)]",
        "── end of turn 1: completed · 580 in (100 cached) / 82 out ──",
        "── turn 2 · ",
        "user: You are performing a context checkpoint.",
        "  · step 1",
        "assistant: The person fixed a.txt with a patch.",
        "  [compaction: history replaced by 3 message(s): context compacted (manual): ~",
        "── end of turn 2: completed · 300 in (0 cached) / 20 out ──",
        "── turn 3 · ",
        "user: go on",
        "assistant: tick",
        "── end of turn 3: cancelled · ",
        "── rewound conversation to before turn 3 · ",
    ] {
        let Some(at) = rest.find(expected) else {
            panic!("missing {expected:?} after what came before in\n{text}");
        };
        rest = &rest[at + expected.len()..];
    }
    assert!(!text.contains("the log stops mid-turn"), "{text}");

    let text = transcript(&crashed);
    assert!(
        text.ends_with(
            "    ▶ running call_1\n  [the log stops mid-turn; it is closed on resume]\n"
        ),
        "{text}"
    );
    let text = transcript(&torn);
    assert!(text.contains("  [line 9: torn by a crash (7 bytes), dropped]\n"), "{text}");
}
