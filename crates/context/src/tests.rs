//! Unit tests of the pieces that need no builder: git status summaries, `HEAD` parsing, the
//! AGENTS.md budget cut, the section policy, token counts and messages.

use std::path::Path;

use pretty_assertions::assert_eq;

use codecoder_protocol::{
    Message, MessageItem, Reasoning, Role, ToolCall, ToolCallId, ToolResult, ToolResultStatus,
};
use codecoder_stdx::ManualClock;

use crate::agents_md::truncate_to_budget;
use crate::base::BASE_INSTRUCTIONS_TOKENS;
use crate::builder::{bytes, message_bound};
use crate::tokens::count_with_encoding;
use crate::{
    AgentsMdLoader, BASE_INSTRUCTIONS, ContextBuilder, ContextConfig, Environment, Error,
    SectionPolicy, Warning, count_tokens, find_project_root, git_tracked_files, read_git_head,
    summarize_git_status,
};

#[test]
fn git_status_clean_when_empty() {
    assert_eq!(summarize_git_status(""), "clean");
    assert_eq!(summarize_git_status("\n"), "clean");
}

#[test]
fn git_status_counts_kinds_and_lists_lines() {
    let porcelain = " M src/lib.rs\nM  src/main.rs\nA  new.rs\n D gone.rs\nR  a.rs -> b.rs\nUU both.rs\nAA added-twice.rs\n?? notes.txt\n?? tmp/\n";
    assert_eq!(
        summarize_git_status(porcelain),
        "2 modified, 1 added, 1 deleted, 1 renamed, 2 conflicted, 2 untracked\n     M src/lib.rs\n    M  src/main.rs\n    A  new.rs\n     D gone.rs\n    R  a.rs -> b.rs\n    UU both.rs\n    AA added-twice.rs\n    ?? notes.txt\n    ?? tmp/"
    );
}

#[test]
fn git_status_lists_at_most_ten_lines() {
    let porcelain: String = (0..13).map(|index| format!("?? file{index}\n")).collect();
    let summary = summarize_git_status(&porcelain);
    assert!(summary.starts_with("13 untracked\n    ?? file0\n"), "{summary}");
    assert!(summary.contains("?? file9"), "{summary}");
    assert!(!summary.contains("?? file10"), "{summary}");
    assert!(summary.ends_with("… and 3 more"), "{summary}");
}

fn write(path: &Path, text: &str) {
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, text).unwrap();
}

/// An index file's header: `DIRC`, `version`, `entries` (the entries themselves are never read).
fn index_header(version: u32, entries: u32) -> Vec<u8> {
    let mut header = b"DIRC".to_vec();
    header.extend(version.to_be_bytes());
    header.extend(entries.to_be_bytes());
    header.extend([0_u8; 62]);
    header
}

#[test]
fn tracked_files_come_from_the_index_header() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    assert_eq!(git_tracked_files(root), None, "no repository");
    write(&root.join(".git/HEAD"), "ref: refs/heads/main\n");
    assert_eq!(git_tracked_files(root), None, "a fresh repository has no index");

    fs_err::write(root.join(".git/index"), index_header(2, 200_000)).unwrap();
    assert_eq!(git_tracked_files(root), Some(200_000));
    fs_err::write(root.join(".git/index"), index_header(4, 7)).unwrap();
    assert_eq!(git_tracked_files(root), Some(7));

    fs_err::write(root.join(".git/index"), index_header(9, 7)).unwrap();
    assert_eq!(git_tracked_files(root), None, "an unknown version");
    fs_err::write(root.join(".git/index"), b"DIRC\0\0").unwrap();
    assert_eq!(git_tracked_files(root), None, "a short file");
    let mut wrong = index_header(2, 7);
    wrong[0] = b'X';
    fs_err::write(root.join(".git/index"), wrong).unwrap();
    assert_eq!(git_tracked_files(root), None, "not an index");

    // A worktree's index lives in the git directory its `.git` file names.
    let worktree = root.join("wt");
    write(&worktree.join(".git"), "gitdir: ../main-git/worktrees/wt\n");
    write(&root.join("main-git/worktrees/wt/HEAD"), "ref: refs/heads/wt\n");
    fs_err::write(root.join("main-git/worktrees/wt/index"), index_header(3, 42)).unwrap();
    assert_eq!(git_tracked_files(&worktree), Some(42));
}

#[test]
fn git_head_branch_detached_worktree_and_missing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    assert_eq!(read_git_head(root), None);

    write(&root.join(".git/HEAD"), "ref: refs/heads/feature/x\n");
    assert_eq!(read_git_head(root).as_deref(), Some("feature/x"));

    write(&root.join(".git/HEAD"), "0123456789abcdef0123456789abcdef01234567\n");
    assert_eq!(read_git_head(root).as_deref(), Some("detached at 0123456"));

    write(&root.join(".git/HEAD"), "garbage\n");
    assert_eq!(read_git_head(root), None);

    // A worktree: `.git` is a file naming the real git directory, relative to the root.
    let worktree = root.join("wt");
    write(&root.join("main-git/worktrees/wt/HEAD"), "ref: refs/heads/wt-branch\n");
    write(&worktree.join(".git"), "gitdir: ../main-git/worktrees/wt\n");
    assert_eq!(read_git_head(&worktree).as_deref(), Some("wt-branch"));
    assert_eq!(find_project_root(&worktree.join("deep/er")), Some(worktree.as_path()));
}

#[test]
fn budget_keeps_short_text_whole() {
    let mut warnings = Vec::new();
    assert_eq!(truncate_to_budget("abc\ndef".to_owned(), 7, &mut warnings), "abc\ndef");
    assert!(warnings.is_empty());
}

#[test]
fn budget_cuts_at_a_line_end_with_a_note() {
    let mut warnings = Vec::new();
    let text = truncate_to_budget("line one\nline two\nline three".to_owned(), 20, &mut warnings);
    assert_eq!(
        text,
        "line one\nline two\n\n[AGENTS.md truncated: 17 of 28 bytes shown (budget 20 bytes); \
         the rest was left out]"
    );
    assert_eq!(
        warnings,
        vec![Warning::AgentsMdTruncated { shown_bytes: 17, total_bytes: 28, budget_bytes: 20 }]
    );
}

#[test]
fn budget_cuts_a_long_line_on_a_character_boundary() {
    let mut warnings = Vec::new();
    // "é" is two bytes: a cut at byte 3 would split the second one.
    let text = truncate_to_budget("éééé".to_owned(), 3, &mut warnings);
    assert!(text.starts_with("é\n\n[AGENTS.md truncated: 2 of 8 bytes"), "{text}");
}

#[test]
fn section_policy_refuses_warns_and_accepts() {
    let policy = SectionPolicy { refuse_tokens: 5, warn_tokens: 2 };
    assert_eq!(policy.check("small", "hello").unwrap(), None);
    assert_eq!(
        policy.check("medium", "one two three").unwrap(),
        Some(Warning::LargeSection { section: "medium".to_owned(), tokens: 3, threshold: 2 })
    );
    // More bytes than the limit, but few tokens: accepted.
    policy.refuse("long words", "internationalization").unwrap();

    let err = policy.check("big", "one two three four five six").unwrap_err();
    assert!(
        matches!(&err, Error::SectionTooLarge { section, tokens: 6, limit: 5 } if section == "big"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "the prompt section `big` has ~6 tokens, more than the limit of 5; shorten it"
    );
}

#[test]
fn the_checked_in_base_instructions_count_is_true() {
    // When this fails after an edit of BASE_INSTRUCTIONS, update BASE_INSTRUCTIONS_TOKENS.
    let real = u64::try_from(count_with_encoding(BASE_INSTRUCTIONS)).unwrap();
    assert_eq!(BASE_INSTRUCTIONS_TOKENS, real);
    assert_eq!(count_tokens(BASE_INSTRUCTIONS), real);
}

#[test]
fn byte_bounds_are_never_below_token_counts() {
    let dir = tempfile::tempdir().unwrap();
    let config = ContextConfig::standard(100_000, 1_000, None);
    let environment = Environment::new(dir.path(), None);
    let builder =
        ContextBuilder::new(&config, &environment, &ManualClock::new(0, 0), &AgentsMdLoader::new())
            .unwrap();
    let texts = [
        "",
        "a",
        "hello world",
        "日本語のテキスト",
        "🦀🦀🦀 emoji",
        "    \n\n\t x",
        "fn main() {}",
    ];
    for text in texts {
        let messages = [
            Message::user_text(text),
            Message::new(
                Role::Assistant,
                vec![
                    MessageItem::Reasoning(Reasoning {
                        text: text.to_owned(),
                        ..Reasoning::default()
                    }),
                    MessageItem::ToolCall(ToolCall {
                        id: ToolCallId::new("c"),
                        name: "read_file".to_owned(),
                        args: serde_json::json!({ "path": text }),
                    }),
                ],
            ),
            Message::new(
                Role::Tool,
                vec![MessageItem::ToolResult(ToolResult::text(
                    ToolCallId::new("c"),
                    ToolResultStatus::Success,
                    text,
                ))],
            ),
        ];
        for message in &messages {
            assert!(message_bound(message) >= builder.message_tokens(message), "{message:?}");
        }
        assert!(bytes(text) >= count_tokens(text), "{text:?}");
    }
}

#[test]
fn tokens_are_counted_with_o200k_base() {
    assert_eq!(count_tokens(""), 0);
    assert_eq!(count_tokens("hello world"), 2);
    // A long text is far from the bytes/4 fallback's answer only if the encoding loaded.
    assert_eq!(count_tokens(&" hello".repeat(1000)), 1000);
}

#[test]
fn window_error_says_what_to_do() {
    let err = Error::ContextWindowExceeded {
        model: "gpt-test".to_owned(),
        needed: 130_000,
        context_window: 128_000,
        max_output_tokens: 16_000,
        available: 112_000,
    };
    assert_eq!(
        err.to_string(),
        format!(
            "the conversation needs ~130000 tokens but gpt-test fits 128000 - 16000 = 112000; {}",
            crate::tests::WINDOW_ADVICE
        )
    );
}

#[test]
fn warnings_read_well() {
    let warning =
        Warning::LargeSection { section: "AGENTS.md".to_owned(), tokens: 1500, threshold: 1000 };
    assert_eq!(
        warning.to_string(),
        "the prompt section `AGENTS.md` has ~1500 tokens (more than 1000); it is sent with every \
         request"
    );
}

// ---------------------------------------------------------------------------------------------
// Rebuilding requests from a log.

mod rebuild {
    use std::sync::Arc;

    use codecoder_protocol::{
        BlobRef, ContentItem, ContextRecord, Message, MessageItem, PromptSection, RecordBody, Role,
        StepId, ToolCall, ToolCallId, ToolResult, ToolResultStatus, TurnId, TurnOutcome, Usage,
    };
    use codecoder_session::{FsyncPolicy, NewSession, SessionStore, WriterConfig};
    use pretty_assertions::assert_eq;

    use crate::{Error, rebuild_request, request_count};

    fn context(model: &str) -> ContextRecord {
        ContextRecord {
            model: model.to_owned(),
            provider: "openai".to_owned(),
            sections: vec![
                PromptSection { name: "base".to_owned(), text: "Be brief.".to_owned() },
                PromptSection { name: "environment".to_owned(), text: "# Env".to_owned() },
            ],
            tools: Vec::new(),
            max_output_tokens: Some(100),
            output_schema: None,
            config_hash: None,
            reasoning: Default::default(),
        }
    }

    fn blob() -> BlobRef {
        BlobRef {
            sha256: "cd".repeat(32),
            size: 9,
            media_type: "text/plain; charset=utf-8".to_owned(),
            preview: "long".to_owned(),
        }
    }

    /// Turn 1: a call whose result went to a blob, then (steered input) an answer; a compaction;
    /// turn 2 under another model, and a step whose context was not logged (old writer).
    fn log(dir: &std::path::Path) -> std::path::PathBuf {
        let store = SessionStore::new(dir);
        let new = NewSession {
            cwd: "/w".to_owned(),
            model: "m1".to_owned(),
            provider: "openai".to_owned(),
            config_hash: None,
            parent: None,
        };
        let config = WriterConfig { fsync: FsyncPolicy::Never, ..WriterConfig::standard() };
        let mut w = store.create(new, config).unwrap();
        let (t1, t2) = (TurnId::new(1), TurnId::new(2));
        let step = StepId::new;
        let end = |turn, n| RecordBody::StepEnd {
            turn,
            step: StepId::new(n),
            usage: Usage::default(),
            stop_reason: None,
        };
        let call = ToolCall {
            id: ToolCallId::new("c1"),
            name: "read".to_owned(),
            args: serde_json::json!({}),
        };
        let bodies = vec![
            RecordBody::TurnStart { turn: t1 },
            RecordBody::UserMessage { message: Message::user_text("question") },
            RecordBody::StepStart { turn: t1, step: step(1) },
            RecordBody::Context(context("m1")),
            RecordBody::AssistantMessage {
                message: Message::new(Role::Assistant, vec![MessageItem::ToolCall(call)]),
            },
            RecordBody::ToolResult {
                result: ToolResult {
                    tool_call_id: ToolCallId::new("c1"),
                    content: vec![ContentItem::BlobRef(blob())],
                    status: ToolResultStatus::Success,
                    exit: None,
                },
                synthetic: None,
            },
            end(t1, 1),
            RecordBody::UserMessage { message: Message::user_text("steered") },
            RecordBody::StepStart { turn: t1, step: step(2) },
            RecordBody::AssistantMessage {
                message: Message::new(
                    Role::Assistant,
                    vec![MessageItem::Text { text: "answer".to_owned() }],
                ),
            },
            end(t1, 2),
            RecordBody::TurnEnd {
                turn: t1,
                outcome: TurnOutcome::Completed,
                usage: Usage::default(),
            },
            RecordBody::Compaction { history: vec![Message::user_text("summary")], note: None },
            RecordBody::TurnStart { turn: t2 },
            RecordBody::UserMessage { message: Message::user_text("next") },
            RecordBody::StepStart { turn: t2, step: step(1) },
            RecordBody::Context(context("m2")),
            RecordBody::AssistantMessage {
                message: Message::new(
                    Role::Assistant,
                    vec![MessageItem::Text { text: "fine".to_owned() }],
                ),
            },
            end(t2, 1),
            RecordBody::TurnEnd {
                turn: t2,
                outcome: TurnOutcome::Completed,
                usage: Usage::default(),
            },
        ];
        for body in bodies {
            w.append(body).unwrap();
        }
        w.path().unwrap().to_owned()
    }

    fn texts(history: &[Arc<Message>]) -> Vec<String> {
        history
            .iter()
            .map(|message| match &message.items[0] {
                MessageItem::ToolResult(result) => match &result.content[0] {
                    ContentItem::Text { text } => format!("tool: {text}"),
                    ContentItem::BlobRef(blob) => format!("tool: [blob {}]", blob.preview),
                    ContentItem::Image(_) => "tool: image".to_owned(),
                },
                MessageItem::ToolCall(call) => format!("call {}", call.id),
                _ => message.text(),
            })
            .collect()
    }

    #[test]
    fn each_request_is_rebuilt_from_the_log_as_the_projection_gave_it() {
        let dir = tempfile::tempdir().unwrap();
        let loaded = codecoder_session::load(&log(dir.path())).unwrap();
        assert_eq!(request_count(&loaded), 3);
        let resolve = |blob: &BlobRef| {
            (blob.sha256 == "cd".repeat(32))
                .then(|| ContentItem::Text { text: "long text".to_owned() })
        };

        let first = rebuild_request(&loaded, 1, Some(&resolve)).unwrap();
        assert_eq!(texts(&first.request.history), ["question"]);
        assert_eq!(first.request.model, "m1");
        assert_eq!(first.request.instructions, "Be brief.\n\n# Env");
        assert_eq!(first.request.session_id, loaded.meta.session_id);
        assert_eq!(first.request.max_output_tokens, Some(100));

        // The blob inlined, the steered input in, the step's context from before it.
        let second = rebuild_request(&loaded, 2, Some(&resolve)).unwrap();
        assert_eq!(
            texts(&second.request.history),
            ["question", "call c1", "tool: long text", "steered"]
        );
        assert_eq!(second.context.model, "m1");
        // Without a resolver the reference stays, as a builder without one sends it.
        let unresolved = rebuild_request(&loaded, 2, None).unwrap();
        assert_eq!(texts(&unresolved.request.history)[2], "tool: [blob long]");

        // After the compaction, under the step's own (newer) context.
        let third = rebuild_request(&loaded, 3, Some(&resolve)).unwrap();
        assert_eq!(texts(&third.request.history), ["summary", "next"]);
        assert_eq!(third.request.model, "m2");

        let err = rebuild_request(&loaded, 4, None).unwrap_err();
        assert!(matches!(err, Error::NoSuchRequest { number: 4, count: 3 }), "{err:?}");
        assert_eq!(err.to_string(), "the session has 3 model request(s); there is no request 4");
    }

    #[test]
    fn a_log_without_context_records_cannot_rebuild_its_requests() {
        let dir = tempfile::tempdir().unwrap();
        let path = log(dir.path());
        let text = fs_err::read_to_string(&path).unwrap();
        let old: String = text
            .lines()
            .filter(|line| !line.contains("\"type\":\"context\""))
            .map(|line| format!("{line}\n"))
            .collect();
        fs_err::write(&path, old).unwrap();
        let loaded = codecoder_session::load(&path).unwrap();
        assert_eq!(request_count(&loaded), 3);
        let err = rebuild_request(&loaded, 1, None).unwrap_err();
        assert!(matches!(err, Error::NoContext { number: 1 }), "{err:?}");
    }
}

mod compaction {
    use std::sync::Arc;

    use codecoder_kernel::{Compactor, ReportedInput, StepInfo};
    use codecoder_protocol::{
        CallKind, CallView, Message, MessageItem, PlanView, Role, SessionId, StepId, ToolCall,
        ToolCallId, ToolResult, ToolResultStatus, TurnId, UserInput,
    };
    use codecoder_stdx::ManualClock;
    use serde_json::json;

    use crate::{
        AgentsMdLoader, CARRYOVER_PREFIX, ContextBuilder, ContextCompactor, ContextConfig,
        Environment, SUMMARY_PREFIX, default_limit,
    };

    fn compactor(window: u64, limit: Option<u64>) -> (tempfile::TempDir, ContextCompactor) {
        let dir = tempfile::tempdir().unwrap();
        let config = ContextConfig::standard(window, 1_000, None);
        let environment = Environment::new(dir.path(), None);
        let builder = ContextBuilder::new(
            &config,
            &environment,
            &ManualClock::new(0, 0),
            &AgentsMdLoader::new(),
        )
        .unwrap();
        (dir, ContextCompactor::new(Arc::new(builder), "m", Vec::new(), limit, Arc::new(view)))
    }

    /// The views of the tools these tests call, as far as compaction reads them: the files a
    /// call reads or edits, and the plan it states.
    fn view(name: &str, args: &serde_json::Value) -> CallView {
        let paths = args.get("path").and_then(serde_json::Value::as_str).map(str::to_owned);
        let plan = Some(PlanView::default());
        match name {
            "update_plan" => CallView { kind: CallKind::Plan, plan, ..CallView::default() },
            "exit_plan_mode" => CallView { kind: CallKind::Ask, plan, ..CallView::default() },
            "read_file" => CallView {
                kind: CallKind::Read,
                paths: paths.into_iter().collect(),
                ..CallView::default()
            },
            "edit" => CallView {
                kind: CallKind::Edit,
                paths: paths.into_iter().collect(),
                ..CallView::default()
            },
            _ => CallView::generic(name, args),
        }
    }

    /// A tool call of `name` with `args`, and its result holding `output`.
    fn exchange(id: &str, name: &str, args: serde_json::Value, output: &str) -> [Message; 2] {
        let call = ToolCall { id: ToolCallId::from(id), name: name.to_owned(), args };
        let result =
            ToolResult::text(ToolCallId::from(id), ToolResultStatus::Success, output.to_owned());
        [
            Message::new(Role::Assistant, vec![MessageItem::ToolCall(call)]),
            Message::new(Role::Tool, vec![MessageItem::ToolResult(result)]),
        ]
    }

    fn big(words: usize) -> String {
        (0..words).map(|index| format!("word{index} ")).collect()
    }

    fn history() -> Vec<Message> {
        let mut history = vec![Message::user_text("Never touch the tests. Read the parts.")];
        history.extend(exchange(
            "plan",
            "update_plan",
            json!({"plan": [{"step": "read the parts", "status": "in_progress"}]}),
            "ok",
        ));
        for part in 1..=4 {
            history.extend(exchange(
                &format!("read{part}"),
                "read_file",
                json!({"path": format!("part{part}.txt")}),
                &big(2_000),
            ));
        }
        history.extend(exchange("edit", "edit", json!({"path": "src/lib.rs"}), "edited"));
        history
    }

    #[test]
    fn the_default_limit_is_ninety_percent_of_the_room_for_a_request() {
        let (_dir, compactor) = compactor(20_000, None);
        assert_eq!(compactor.limit(), default_limit(19_000));
        assert_eq!(default_limit(19_000), 17_100);
        let (_dir, capped) = compactor_with(20_000, Some(50_000));
        assert_eq!(capped.limit(), 19_000, "never above the window less the output reserve");
    }

    fn compactor_with(window: u64, limit: Option<u64>) -> (tempfile::TempDir, ContextCompactor) {
        compactor(window, limit)
    }

    #[test]
    fn compaction_is_due_once_the_next_request_passes_the_limit() {
        let (_dir, compactor) = compactor(100_000, Some(5_000));
        let history = history();
        let info = |history: &[Message]| -> bool {
            let info = StepInfo {
                session_id: SessionId::new(),
                turn: TurnId::new(1),
                step: StepId::new(1),
                history,
                depth: 0,
                reported: None,
                tools: &[],
            };
            compactor.should_compact(&info, &[UserInput::text("go on")])
        };
        assert!(info(&history));
        assert!(!info(&history[..3]));
    }

    #[test]
    fn reported_input_tokens_are_the_truth_for_the_due_check() {
        let (_dir, compactor) = compactor(100_000, Some(5_000));
        let history = history();
        let due = |history: &[Message], reported: Option<ReportedInput>| -> bool {
            let info = StepInfo {
                session_id: SessionId::new(),
                turn: TurnId::new(1),
                step: StepId::new(1),
                history,
                depth: 0,
                reported,
                tools: &[],
            };
            compactor.should_compact(&info, &[UserInput::text("go on")])
        };
        // By the estimate, three messages are far from the limit; the provider counted more.
        assert!(!due(&history[..3], None));
        let big = ReportedInput { input_tokens: 6_000, history_len: 2 };
        assert!(due(&history[..3], Some(big)));
        // And the other way: the whole history passes by the estimate, but the provider counted
        // its first messages as few tokens, and what was appended since is small.
        assert!(due(&history, None));
        let last = history.len() - 1;
        let appended = compactor.history_tokens(&history[last..]);
        assert!(appended < 4_000, "{appended}");
        let small = ReportedInput { input_tokens: 1_000, history_len: last };
        assert!(!due(&history, Some(small)));
        // A report for a longer history than this one (a compaction replaced it) is ignored.
        let stale = ReportedInput { input_tokens: 1_000, history_len: history.len() + 1 };
        assert!(due(&history, Some(stale)));
    }

    #[test]
    fn the_summary_request_drops_the_oldest_tool_outputs_first_and_keeps_the_pairs() {
        let (_dir, compactor) = compactor(14_000, None);
        let history = history();
        let request = compactor.summary_request(SessionId::new(), &history, Some("the parts"));
        assert!(request.prompt.ends_with("Focus the summary on: the parts"));
        let trimmed = request.trimmed.expect("the history does not fit as it is");
        assert_eq!(trimmed.len(), history.len(), "messages are stubbed, not removed");
        let outputs: Vec<bool> = trimmed
            .iter()
            .flat_map(|message| &message.items)
            .filter_map(|item| match item {
                MessageItem::ToolResult(result) => Some(
                    format!("{:?}", result.content).contains("dropped to fit the summary request"),
                ),
                _ => None,
            })
            .collect();
        // The plan's result and the first reads are dropped; the newest read stays.
        assert_eq!(outputs, [true, true, true, false, false, false]);
        for (before, after) in history.iter().zip(&trimmed) {
            assert_eq!(before.role, after.role);
            assert_eq!(before.tool_calls().count(), after.tool_calls().count());
            if before.items != after.items {
                assert_ne!(before.id, after.id, "a changed message gets a new id");
            }
        }
        assert!(compactor.history_tokens(&trimmed) < 13_000);
        let (_roomy_dir, roomy) = compactor_with(100_000, None);
        assert_eq!(roomy.summary_request(SessionId::new(), &history, None).trimmed, None);
    }

    #[test]
    fn a_plan_presented_in_plan_mode_is_carried_over() {
        let (_dir, compactor) = compactor(100_000, None);
        let mut history = history();
        history.extend(exchange(
            "present",
            "exit_plan_mode",
            json!({"plan": "1. Split the parser\n2. Test it"}),
            "The user approved the plan.",
        ));
        let replacement = compactor.replacement(&history, Some("Done."), "", &[]);
        let carried = replacement
            .iter()
            .find_map(|message| match &message.items[..] {
                [MessageItem::Text { text }] if text.starts_with(CARRYOVER_PREFIX) => Some(text),
                _ => None,
            })
            .expect("a carried-over message");
        assert!(carried.contains("Split the parser"), "{carried}");
        assert!(!carried.contains("read the parts"), "the newest plan wins: {carried}");
    }

    #[test]
    fn the_files_carried_over_are_those_the_calls_views_name() {
        // A tool compaction knows nothing of: its view says it edits (moves) two files and
        // reads none; a search names a path but reads no file.
        let mut history = vec![Message::user_text("Rename the notes.")];
        history.extend(exchange("move", "relabel_files", json!({"from": "a.md"}), "moved"));
        history.extend(exchange("find", "glob", json!({"path": "docs"}), "docs/x.md"));
        let viewer = |name: &str, args: &serde_json::Value| match name {
            "relabel_files" => CallView {
                kind: CallKind::Edit,
                paths: vec!["a.md".to_owned(), "b.md".to_owned()],
                ..CallView::default()
            },
            "glob" => CallView {
                kind: CallKind::Search,
                paths: vec!["docs".to_owned()],
                ..CallView::default()
            },
            _ => view(name, args),
        };
        let carried =
            crate::compact::carryover(&history, &[], &viewer).expect("a carried-over context");
        assert!(carried.contains("\nFiles edited:\n- b.md\n- a.md\n"), "{carried}");
        assert!(!carried.contains("Files read:"), "{carried}");
        assert!(!carried.contains("docs"), "{carried}");
        // Without views naming files, nothing is carried over.
        let generic = |name: &str, args: &serde_json::Value| CallView::generic(name, args);
        assert_eq!(crate::compact::carryover(&history, &[], &generic), None);
    }

    #[test]
    fn the_replacement_keeps_user_messages_plan_and_files_verbatim() {
        let (_dir, compactor) = compactor(100_000, None);
        let history = history();
        let replacement =
            compactor.replacement(&history, Some("Done: parts 1-4."), "", &["hook says hi".into()]);
        assert!(replacement.iter().all(|message| message.role == Role::User));
        let texts: Vec<String> = replacement
            .iter()
            .map(|message| match &message.items[..] {
                [MessageItem::Text { text }] => text.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(texts.len(), 3, "{texts:#?}");
        assert_eq!(texts[0], "Never touch the tests. Read the parts.");
        assert!(texts[1].starts_with(CARRYOVER_PREFIX));
        for kept in [
            "read the parts",
            "in_progress",
            "part1.txt",
            "part4.txt",
            "src/lib.rs",
            "hook says hi",
        ] {
            assert!(texts[1].contains(kept), "{kept}: {}", texts[1]);
        }
        assert_eq!(texts[2], format!("{SUMMARY_PREFIX}\n\nDone: parts 1-4."));

        // Compacting again: the earlier summary and carried-over context are not user
        // messages; the files carry on; without a summary the earlier one stays.
        let mut again = replacement.clone();
        again.push(Message::user_text("now the tests"));
        let trimmed = compactor.replacement(&again, None, "the summary request failed", &[]);
        let texts: Vec<String> = trimmed
            .iter()
            .map(|message| match &message.items[..] {
                [MessageItem::Text { text }] => text.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(texts.len(), 5, "{texts:#?}");
        assert!(texts[0].ends_with("Done: parts 1-4."));
        assert_eq!(texts[1], "Never touch the tests. Read the parts.");
        assert_eq!(texts[2], "now the tests");
        assert!(texts[3].contains("part4.txt") && texts[3].contains("src/lib.rs"), "{}", texts[3]);
        assert!(texts[4].contains("No summary: the summary request failed"), "{}", texts[4]);
    }

    #[test]
    fn recent_user_messages_stay_within_their_budget() {
        let (_dir, compactor) = compactor(8_000, None);
        let history: Vec<Message> =
            (0..10).map(|index| Message::user_text(format!("{index} {}", big(300)))).collect();
        let replacement = compactor.replacement(&history, Some("s"), "", &[]);
        let kept = compactor.history_tokens(&replacement[..replacement.len() - 1]);
        assert!(kept <= 2_000 + 50, "{kept}");
        let last = &replacement[replacement.len() - 2];
        assert!(format!("{:?}", last.items).contains("9 word0"), "the newest is kept");
    }
}

#[test]
fn an_added_section_follows_the_others_and_precedes_agent_instructions() {
    use codecoder_kernel::{PromptBuilder, PromptInput};
    use codecoder_protocol::{SessionId, StepId, TurnId};
    let dir = tempfile::tempdir().unwrap();
    let config = ContextConfig::standard(100_000, 1_000, None);
    let environment = Environment::new(dir.path(), None);
    let builder =
        ContextBuilder::new(&config, &environment, &ManualClock::new(0, 0), &AgentsMdLoader::new())
            .unwrap()
            .with_section("skills", "# Skills\n\n- `a`: does a".to_owned())
            .unwrap()
            .with_section("empty", "  ".to_owned())
            .unwrap();
    let names: Vec<&str> = builder.sections().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["base instructions", "environment", "skills"]);
    let request = builder.build(&PromptInput {
        session_id: SessionId::new(),
        model: "m",
        agent_instructions: Some("CHILD"),
        history: &[],
        tools: &[],
        turn: TurnId::new(1),
        step: StepId::new(1),
    });
    assert!(request.instructions.ends_with("- `a`: does a\n\n# Agent instructions\n\nCHILD"));
    let names: Vec<&str> = request.sections.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["base instructions", "environment", "skills", "agent instructions"]);
}

/// Samples of what goes into requests: code, prose, JSON, command output.
fn calibration_samples() -> Vec<(&'static str, String)> {
    let listing: String = (0..300)
        .map(|i| {
            format!(
                "-rw-r--r-- 1 user user {:>6} Nov {:>2} 12:{:02} src/module_{i}/file_{i}.rs\n",
                i * 37,
                i % 28 + 1,
                i % 60
            )
        })
        .collect();
    vec![
        ("code (Rust)", include_str!("builder.rs").to_owned()),
        ("code (Rust, tools)", include_str!("../../tools/src/shell.rs").to_owned()),
        ("prose (Markdown)", include_str!("../../../ARCHITECTURE.md").to_owned()),
        ("JSON (schema)", include_str!("../../config/schema/config.schema.json").to_owned()),
        ("command output (ls -l)", listing),
        ("CJK", "日本語のテキストを数える。これは見積もりです。".repeat(20)),
        (
            "numbered lines",
            (0..450)
                .map(|line| format!("file 3 line {line:04}: the quick brown fox {}\n", line * 7))
                .collect(),
        ),
        (
            "JSON-escaped tool output",
            serde_json::to_string(&(0..300).map(|n| format!("line {n:05}\n")).collect::<String>())
                .unwrap(),
        ),
    ]
}

#[test]
fn estimator_error_against_o200k() {
    for (name, text) in calibration_samples() {
        let exact = count_with_encoding(&text) as f64;
        let estimate = crate::estimate_tokens(&text) as f64;
        let error = (estimate - exact) / exact;
        println!(
            "{name:<24} bytes {:>7} o200k {exact:>6} estimate {estimate:>6} error {:+.1}%",
            text.len(),
            error * 100.0
        );
        assert!(error.abs() < 0.15, "{name}: {error}");
        assert!(crate::estimate_tokens(&text) <= bytes(&text));
    }
}

#[test]
fn a_large_section_s_warning_is_decided_by_the_estimate() {
    let policy = SectionPolicy::standard();
    let text = "word ".repeat(1_100);
    let estimate = crate::tokens::estimate_tokens(&text);
    assert!(estimate > policy.warn_tokens, "{estimate}");
    let warning = policy.check("AGENTS.md", &text).unwrap();
    assert_eq!(
        warning,
        Some(Warning::LargeSection {
            section: "AGENTS.md".to_owned(),
            tokens: estimate,
            threshold: policy.warn_tokens
        })
    );
    assert_eq!(policy.check("AGENTS.md", &"word ".repeat(100)).unwrap(), None);
}

/// What the window error advises, after its figures.
pub(crate) const WINDOW_ADVICE: &str = "compact it (`/compact`, `codecoder sessions compact`) or start a new session, and if even a first request does not fit, give the model a larger window (a local server's context size, `model_context_window`) or a smaller `model_max_output_tokens`";
