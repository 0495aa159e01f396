//! Unit tests of the pure parts: tool mapping, matchers, and the folding of hook answers.

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::{Map, Value, json};

use crate::mapping::{claude_tool_name, covers, from_claude, to_claude};
use crate::outcome::{self, Answer, Ran};
use codecoder_kernel::{HookReport, HookVerdict};
use codecoder_protocol::{ApprovalDecision, Verdict};

use crate::{Event, HookSet, HookSources};

// ---- Events ----

#[test]
fn event_names_round_trip_and_slots_follow_all() {
    for (slot, event) in Event::ALL.into_iter().enumerate() {
        assert_eq!(event.slot(), slot, "{event}");
        assert_eq!(Event::from_name(event.name()), Some(event));
    }
    assert_eq!(Event::from_name("pretooluse"), None);
}

// ---- Tool mapping ----

#[test]
fn covers_knows_every_argument_of_our_mapped_tools() {
    // The arguments of the tools crate's schemas (crates/tools/src/*.rs) at the time of
    // writing; `covers` is what a cross-crate test should check against the live schemas.
    let schemas: [(&str, &[&str]); 7] = [
        ("run_command", &["command", "cwd", "timeout_ms", "env", "background"]),
        ("read_file", &["path", "offset", "limit"]),
        ("write_file", &["path", "content"]),
        ("edit", &["path", "old_string", "new_string", "replace_all"]),
        ("glob", &["pattern", "path", "head_limit"]),
        (
            "grep",
            &[
                "pattern",
                "path",
                "glob",
                "type",
                "case_insensitive",
                "context",
                "output",
                "head_limit",
            ],
        ),
        ("web_fetch", &["url", "max_bytes"]),
    ];
    for (tool, arguments) in schemas {
        for argument in arguments {
            assert!(covers(tool, argument), "{tool}.{argument}");
        }
    }
    assert!(!covers("run_command", "shell"));
    assert!(covers("apply_patch", "anything"));
}

#[test]
fn tool_names_map_to_claude_and_others_stay() {
    // A hook sees Claude's name for every tool of the shared table (`list_dir` is `LS`)…
    for (ours, claude) in codecoder_protocol::CLAUDE_TOOL_NAMES {
        assert_eq!(claude_tool_name(ours), *claude, "{ours}");
    }
    assert_eq!(claude_tool_name("list_dir"), "LS");
    // … and our own name for the others.
    for ours in ["apply_patch", "job_kill", "mcp__memory__store"] {
        assert_eq!(claude_tool_name(ours), ours);
    }
}

#[test]
fn arguments_map_to_claude_names() {
    let cases = [
        (
            "run_command",
            json!({"command": "ls", "timeout_ms": 5000, "background": true, "cwd": "sub", "env": {"A": "1"}}),
            json!({"command": "ls", "timeout": 5000, "run_in_background": true, "cwd": "sub", "env": {"A": "1"}}),
        ),
        (
            "read_file",
            json!({"path": "a.rs", "offset": 3, "limit": 10}),
            json!({"file_path": "a.rs", "offset": 3, "limit": 10}),
        ),
        (
            "write_file",
            json!({"path": "a", "content": "x"}),
            json!({"file_path": "a", "content": "x"}),
        ),
        (
            "edit",
            json!({"path": "a", "old_string": "o", "new_string": "n", "replace_all": true}),
            json!({"file_path": "a", "old_string": "o", "new_string": "n", "replace_all": true}),
        ),
        (
            "glob",
            json!({"pattern": "*.rs", "path": "src", "head_limit": 5}),
            json!({"pattern": "*.rs", "path": "src", "head_limit": 5}),
        ),
        (
            "grep",
            json!({"pattern": "fn", "path": "src", "glob": "*.rs", "type": "rust", "case_insensitive": true, "context": 2, "output": "files", "head_limit": 9}),
            json!({"pattern": "fn", "path": "src", "glob": "*.rs", "type": "rust", "-i": true, "-C": 2, "output_mode": "files_with_matches", "head_limit": 9}),
        ),
        ("grep", json!({"pattern": "fn"}), json!({"pattern": "fn", "output_mode": "content"})),
        (
            "web_fetch",
            json!({"url": "https://x", "max_bytes": 10}),
            json!({"url": "https://x", "max_bytes": 10}),
        ),
        ("apply_patch", json!({"input": "*** Begin Patch"}), json!({"input": "*** Begin Patch"})),
    ];
    for (tool, ours, claude) in cases {
        assert_eq!(to_claude(tool, &ours), claude, "{tool} out");
        let (back, warnings) = from_claude(tool, &claude).unwrap();
        // Grep's output_mode is always sent; coming back it is explicit.
        let expected = match (tool, ours.get("output")) {
            ("grep", None) => {
                let mut with = ours.clone();
                with["output"] = json!("content");
                with
            }
            _ => ours.clone(),
        };
        assert_eq!(back, expected, "{tool} back");
        assert_eq!(warnings, Vec::<String>::new(), "{tool}");
    }
}

#[test]
fn updated_input_drops_unknown_keys_with_a_warning_and_claude_only_keys_quietly() {
    let (args, warnings) = from_claude(
        "run_command",
        &json!({"command": "ls", "description": "list", "sandbox": false}),
    )
    .unwrap();
    assert_eq!(args, json!({"command": "ls"}));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("`updatedInput.sandbox`"), "{warnings:?}");
    assert!(from_claude("edit", &json!("not an object")).unwrap_err().contains("a string"));
    // Unmapped tools take the input as it is.
    let (args, warnings) = from_claude("mcp__x__y", &json!({"anything": 1})).unwrap();
    assert_eq!((args, warnings.len()), (json!({"anything": 1}), 0));
}

// ---- Matchers ----

fn set(hooks: Value) -> (HookSet, Vec<String>) {
    let sources = HookSources {
        project_dir: PathBuf::from("/nonexistent-project"),
        home: None,
        config_hooks: Some((hooks, PathBuf::from("/etc/config.toml"))),
        read_claude_settings: false,
        project_trusted: true,
    };
    HookSet::load(&sources).unwrap()
}

fn group(matcher: &str, command: &str) -> Value {
    json!({"matcher": matcher, "hooks": [{"type": "command", "command": command}]})
}

#[test]
fn tool_matchers_follow_claude_rules() {
    let (set, warnings) = set(json!({"PreToolUse": [
        group("Bash", "bash"),
        group("Edit|Write", "edit-or-write"),
        group("*", "star"),
        group("", "empty"),
        {"hooks": [{"type": "command", "command": "missing"}]},
        group("mcp__.*", "mcp"),
        group("Notebook.*", "notebook"),
        group("run_command", "ours"),
        group("bash", "lowercase"),
        group("Ed", "prefix"),
    ]}));
    assert_eq!(warnings, Vec::<String>::new());
    let all = ["star", "empty", "missing"];
    let check = |tool: &str, extra: &[&str]| {
        let mut expected: Vec<&str> = extra.to_vec();
        expected.extend(all);
        let mut got = set.commands_for(Event::PreToolUse, tool);
        got.sort_unstable();
        expected.sort_unstable();
        assert_eq!(got, expected, "{tool}");
    };
    check("run_command", &["bash", "ours"]);
    check("Bash", &["bash"]);
    check("edit", &["edit-or-write"]);
    check("write_file", &["edit-or-write"]);
    check("read_file", &[]);
    check("mcp__memory__store", &["mcp"]);
    check("NotebookEdit", &["notebook"]);
    // Regexes are searched unanchored, like JavaScript's `RegExp.test`.
    check("MyNotebookEdit", &["notebook"]);
}

#[test]
fn other_events_match_their_value_and_some_ignore_the_matcher() {
    let (set, warnings) = set(json!({
        "SessionStart": [group("startup|resume", "start"), group("compact", "compact")],
        "PreCompact": [group("auto", "auto")],
        "Notification": [group("idle_prompt", "idle")],
        "SubagentStop": [group("review.*", "review")],
        "UserPromptSubmit": [group("whatever", "prompt")],
        "Stop": [group("whatever", "stop")],
        "PostToolBatch": [group("whatever", "batch")],
        "StopFailure": [group("rate_limit", "limited")],
        "PermissionDenied": [group("Bash", "denied")],
    }));
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(warnings.iter().all(|w| w.contains("is ignored")), "{warnings:?}");
    assert_eq!(set.commands_for(Event::SessionStart, "resume"), ["start"]);
    assert_eq!(set.commands_for(Event::SessionStart, "compact"), ["compact"]);
    assert_eq!(set.commands_for(Event::SessionStart, "clear"), Vec::<&str>::new());
    assert_eq!(set.commands_for(Event::PreCompact, "manual"), Vec::<&str>::new());
    assert_eq!(set.commands_for(Event::PreCompact, "auto"), ["auto"]);
    assert_eq!(set.commands_for(Event::Notification, "idle_prompt"), ["idle"]);
    assert_eq!(set.commands_for(Event::SubagentStop, "reviewer"), ["review"]);
    assert_eq!(set.commands_for(Event::SubagentStop, "explore"), Vec::<&str>::new());
    assert_eq!(set.commands_for(Event::UserPromptSubmit, ""), ["prompt"]);
    assert_eq!(set.commands_for(Event::Stop, ""), ["stop"]);
    assert_eq!(set.commands_for(Event::PostToolBatch, ""), ["batch"]);
    assert_eq!(set.commands_for(Event::StopFailure, "rate_limit"), ["limited"]);
    assert_eq!(set.commands_for(Event::StopFailure, "server_error"), Vec::<&str>::new());
    assert_eq!(set.commands_for(Event::PermissionDenied, "run_command"), ["denied"]);
    assert_eq!(set.commands_for(Event::PermissionDenied, "read_file"), Vec::<&str>::new());
}

#[test]
fn a_bad_regex_is_a_warning_and_matches_nothing() {
    let (set, warnings) =
        set(json!({"PreToolUse": [group("(?=Bash)", "lookahead"), group("[", "open")]}));
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains("/etc/config.toml: `hooks.PreToolUse[0].matcher`"),
        "{warnings:?}"
    );
    assert_eq!(set.commands_for(Event::PreToolUse, "Bash"), Vec::<&str>::new());
    assert!(set.summary().contains("invalid, matches nothing"), "{}", set.summary());
}

#[test]
fn identical_commands_are_listed_once_with_the_first_timeout() {
    let (set, _) = set(json!({"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "same", "timeout": 5}]},
        {"hooks": [{"type": "command", "command": "same", "timeout": 9}, {"type": "command", "command": "other"}]},
    ]}));
    assert_eq!(set.commands_for(Event::PreToolUse, "run_command"), ["same", "other"]);
    let handlers = set.matching(Event::PreToolUse, "run_command");
    assert_eq!(handlers[0].timeout, std::time::Duration::from_secs(5));
}

#[test]
fn every_handler_type_loads_and_unknown_types_and_events_are_warnings() {
    let (set, warnings) = set(json!({
        "PreToolUse": [{"hooks": [
            {"type": "http", "url": "http://localhost"},
            {"type": "prompt", "prompt": "$ARGUMENTS"},
            {"type": "agent", "prompt": "check $ARGUMENTS"},
            {"type": "mcp_tool", "server": "s", "tool": "t"},
            {"type": "command", "command": "kept", "async": true, "once": true, "args": ["a"]},
            {"type": "webhook", "url": "x"},
        ]}],
        "TeammateIdle": [group("", "x")],
        "PreToolUze": [group("", "y")],
    }));
    assert_eq!(
        set.commands_for(Event::PreToolUse, "Bash"),
        [
            "POST http://localhost",
            "prompt $ARGUMENTS",
            "agent check $ARGUMENTS",
            "mcp_tool s/t",
            "kept"
        ]
    );
    let joined = warnings.join("\n");
    assert!(joined.contains("is a `webhook` hook, not a type codecoder knows"), "{joined}");
    assert!(
        joined.contains("`hooks.TeammateIdle` is a Claude Code event codecoder does not emit"),
        "{joined}"
    );
    assert!(joined.contains("`hooks.PreToolUze` is not a hook event"), "{joined}");
    assert_eq!(warnings.len(), 3, "{joined}");
}

#[test]
fn malformed_entries_are_errors_naming_file_and_place() {
    let cases = [
        (json!({"PreToolUse": {"matcher": "Bash"}}), "`hooks.PreToolUse`: expected a list"),
        (
            json!({"PreToolUse": [{"matcher": "Bash"}]}),
            "`hooks.PreToolUse[0].hooks`: expected a list",
        ),
        (json!({"Stop": [{"hooks": [{"type": "command"}]}]}), "`hooks.Stop[0].hooks[0].command`"),
        (
            json!({"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}),
            "`hooks.Stop[0].hooks[0].timeout`: expected a positive number",
        ),
        (json!({"Stop": [{"hooks": [{"command": "x"}]}]}), "`hooks.Stop[0].hooks[0].type`"),
        (
            json!({"Stop": [{"matcher": 3, "hooks": []}]}),
            "`hooks.Stop[0].matcher`: expected a string",
        ),
        (json!(["not", "a", "table"]), "`hooks`: expected an object"),
    ];
    for (hooks, expected) in cases {
        let sources = HookSources {
            project_dir: PathBuf::from("/nonexistent-project"),
            home: None,
            config_hooks: Some((hooks, PathBuf::from("/etc/config.toml"))),
            read_claude_settings: false,
            project_trusted: true,
        };
        let err = HookSet::load(&sources).unwrap_err().to_string();
        assert!(err.starts_with("/etc/config.toml: "), "{err}");
        assert!(err.contains(expected), "{err} should contain {expected}");
    }
}

#[test]
fn summary_lists_every_hook() {
    let (set, _) =
        set(json!({"PreToolUse": [group("Bash", "./check.sh")], "Stop": [group("", "./stop.sh")]}));
    assert!(!set.is_empty());
    assert_eq!(
        set.summary(),
        "PreToolUse [Bash] ./check.sh (60s) from /etc/config.toml\nStop [*] ./stop.sh (60s) from /etc/config.toml\n"
    );
    let empty = HookSet::empty(Path::new("/p").to_owned());
    assert!(empty.is_empty());
    assert_eq!(empty.summary(), "no hooks configured\n");
}

// ---- Folding ----

fn json_ran(hook: &str, value: Value) -> Ran {
    let Value::Object(map) = value else { panic!("not an object") };
    Ran { hook: hook.to_owned(), answer: Answer::Json(map) }
}

fn ran(hook: &str, answer: Answer) -> Ran {
    Ran { hook: hook.to_owned(), answer }
}

fn decision(hook: &str, kind: &str, reason: &str) -> Ran {
    json_ran(
        hook,
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": kind, "permissionDecisionReason": reason}}),
    )
}

#[test]
fn pre_tool_use_deny_beats_ask_beats_allow() {
    let outcome = outcome::pre_tool_use(
        "run_command",
        &[
            decision("a", "allow", "fine"),
            decision("b", "ask", "check"),
            decision("c", "allow", "ok"),
        ],
    );
    assert_eq!(
        outcome.verdict,
        Some(HookVerdict { decision: Verdict::Ask, reason: Some("check".into()) })
    );
    let outcome = outcome::pre_tool_use(
        "run_command",
        &[
            decision("a", "ask", "check"),
            ran("b", Answer::Blocked("no rm".into())),
            decision("c", "deny", "never"),
        ],
    );
    assert_eq!(
        outcome.verdict,
        Some(HookVerdict { decision: Verdict::Deny, reason: Some("no rm\nnever".into()) })
    );
    let outcome = outcome::pre_tool_use("run_command", &[decision("a", "allow", "fine")]);
    assert_eq!(outcome.verdict.map(|d| d.decision), Some(Verdict::Allow));
    // A denied call has nothing to rewrite.
    let outcome = outcome::pre_tool_use(
        "run_command",
        &[
            json_ran(
                "a",
                json!({"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": "ls"}}}),
            ),
            ran("b", Answer::Blocked("no".into())),
        ],
    );
    assert_eq!(
        (outcome.verdict.map(|d| d.decision), outcome.updated_args),
        (Some(Verdict::Deny), None)
    );
}

#[test]
fn pre_tool_use_deprecated_decision_and_continue_false() {
    let outcome = outcome::pre_tool_use(
        "edit",
        &[
            json_ran("a", json!({"decision": "approve", "reason": "trusted"})),
            json_ran(
                "b",
                json!({"continue": false, "stopReason": "enough", "systemMessage": "heads up"}),
            ),
            json_ran("c", json!({"continue": false, "stopReason": "second"})),
        ],
    );
    assert_eq!(
        outcome.verdict,
        Some(HookVerdict { decision: Verdict::Allow, reason: Some("trusted".into()) })
    );
    assert_eq!(outcome.report.stop.as_deref(), Some("enough"));
    assert_eq!(outcome.report.messages, ["heads up"]);
    let outcome = outcome::pre_tool_use(
        "edit",
        &[json_ran("a", json!({"decision": "block", "reason": "nope"}))],
    );
    assert_eq!(
        outcome.verdict,
        Some(HookVerdict { decision: Verdict::Deny, reason: Some("nope".into()) })
    );
}

#[test]
fn pre_tool_use_first_rewrite_wins_and_bad_output_is_an_error_naming_the_hook() {
    let rewrite = |hook: &str, command: &str| {
        json_ran(
            hook,
            json!({"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": command}}}),
        )
    };
    let outcome = outcome::pre_tool_use(
        "run_command",
        &[
            rewrite("hook one", "ls -a"),
            rewrite("hook two", "ls -b"),
            json_ran(
                "hook three",
                json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": "deny"}}),
            ),
            json_ran("hook four", json!({"hookSpecificOutput": {"permissionDecision": "defer"}})),
            ran("hook five", Answer::Failed("hook five: exited with code 1".into())),
        ],
    );
    assert_eq!(outcome.updated_args, Some(json!({"command": "ls -a"})));
    assert_eq!(outcome.verdict.map(|d| d.decision), Some(Verdict::Allow));
    let errors = outcome.report.errors;
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert!(errors[0].starts_with("hook two: `updatedInput` ignored; hook one"), "{errors:?}");
    assert!(errors[1].starts_with("hook three: `hookSpecificOutput.hookEventName`"), "{errors:?}");
    assert!(errors[2].starts_with("hook four: decision \"defer\""), "{errors:?}");
    assert_eq!(errors[3], "hook five: exited with code 1");
}

#[test]
fn permission_request_deny_beats_allow() {
    let allow = json_ran(
        "a",
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow", "updatedInput": {"file_path": "b.txt", "content": ""}}}}),
    );
    let outcome = outcome::permission_request("write_file", std::slice::from_ref(&allow));
    let verdict = outcome.answer.unwrap();
    assert_eq!(verdict.decision, ApprovalDecision::AllowOnce);
    assert_eq!(verdict.updated_args, Some(json!({"path": "b.txt", "content": ""})));
    let deny = json_ran(
        "b",
        json!({"hookSpecificOutput": {"decision": {"behavior": "deny", "message": "not there", "interrupt": true}}}),
    );
    let outcome = outcome::permission_request("write_file", &[allow, deny]);
    let verdict = outcome.answer.unwrap();
    assert_eq!(
        verdict.decision,
        ApprovalDecision::DenyWithFeedback { feedback: "not there".to_owned() }
    );
    assert!(verdict.interrupt);
    let outcome =
        outcome::permission_request("write_file", &[ran("c", Answer::Blocked(String::new()))]);
    let decision = outcome.answer.unwrap().decision;
    let feedback = "c exited with code 2 (blocking) without a message".to_owned();
    assert_eq!(decision, ApprovalDecision::DenyWithFeedback { feedback });
}

#[test]
fn post_tool_use_feedback_from_exit_2_and_block() {
    let outcome = outcome::post_tool_use(
        Event::PostToolUse,
        &[
            ran("a", Answer::Blocked("lint failed".into())),
            json_ran(
                "b",
                json!({"decision": "block", "reason": "fix the tests", "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "ctx"}}),
            ),
            ran("c", Answer::Text("verbose only".into())),
        ],
    );
    assert_eq!(outcome.feedback.as_deref(), Some("lint failed\nfix the tests"));
    assert_eq!(outcome.context, ["ctx"]);
    assert_eq!(outcome.report, HookReport::default());
}

#[test]
fn stop_block_needs_a_reason() {
    let outcome = outcome::stop(&[json_ran("a", json!({"decision": "block"}))]);
    assert!(outcome.instruction.is_some());
    assert_eq!(outcome.report.errors.len(), 1);
    let outcome = outcome::stop(&[ran("a", Answer::Text("ignored".into()))]);
    assert_eq!(outcome.instruction, None);
}

#[test]
fn report_only_events_show_exit_2_to_the_user() {
    let report = outcome::report_only(&[ran("a", Answer::Blocked("careful".into()))]);
    assert_eq!(report.messages, ["careful"]);
    let empty: Map<String, Value> = Map::new();
    let report = outcome::report_only(&[ran("b", Answer::Json(empty))]);
    assert_eq!(report, HookReport::default());
}

#[test]
fn permission_denied_retry_is_any_hooks_and_a_bad_value_is_an_error() {
    let retry = |hook: &str, value: Value| {
        json_ran(
            hook,
            json!({"hookSpecificOutput": {"hookEventName": "PermissionDenied", "retry": value}}),
        )
    };
    let outcome = outcome::permission_denied(&[retry("a", json!(false)), retry("b", json!(true))]);
    assert!(outcome.retry);
    assert_eq!(outcome.report, HookReport::default());
    let outcome = outcome::permission_denied(&[retry("a", json!("yes"))]);
    assert!(!outcome.retry);
    assert_eq!(outcome.report.errors, ["a: `retry` is not a boolean; ignored"]);
    let outcome = outcome::permission_denied(&[ran("c", Answer::Blocked("noted".into()))]);
    assert!(!outcome.retry);
    assert_eq!(outcome.report.messages, ["noted"]);
}

#[test]
fn post_tool_batch_block_is_feedback_and_context_is_kept() {
    let outcome = outcome::post_tool_use(
        Event::PostToolBatch,
        &[
            json_ran(
                "a",
                json!({"hookSpecificOutput": {"hookEventName": "PostToolBatch", "additionalContext": "tests ran"}}),
            ),
            json_ran("b", json!({"decision": "block", "reason": "lint failed"})),
        ],
    );
    assert_eq!(outcome.context, ["tests ran"]);
    assert_eq!(outcome.feedback.as_deref(), Some("lint failed"));
}
