//! Real `sh` hook scripts: blocking, denying, rewriting, asking, timing out, adding context,
//! running in parallel and once, and the exact JSON they get on stdin.

use std::time::{Duration, Instant};

use codecoder_kernel::HookVerdict;
use codecoder_kernel::PreToolUse;
use codecoder_protocol::Verdict;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::Fixture;

fn hooks(event: &str, matcher: &str, commands: &[&str]) -> Value {
    let handlers: Vec<Value> =
        commands.iter().map(|command| json!({"type": "command", "command": command})).collect();
    json!({event: [{"matcher": matcher, "hooks": handlers}]})
}

fn rm_call(fixture: &Fixture, script: &str) -> PreToolUse {
    let runner = fixture.runner(hooks("PreToolUse", "Bash", &[script]));
    runner.pre_tool_use("run_command", &json!({"command": "rm -rf /"}), "call-1")
}

#[test]
fn exit_2_blocks_and_stderr_comes_back() {
    let fixture = Fixture::new();
    let script = fixture.script(
        "block.sh",
        "cat >/dev/null\necho 'ignored stdout'\necho 'rm is not allowed here' >&2\nexit 2",
    );
    let outcome = rm_call(&fixture, &script);
    assert_eq!(
        outcome.verdict,
        Some(HookVerdict {
            decision: Verdict::Deny,
            reason: Some("rm is not allowed here".to_owned())
        })
    );
    assert_eq!(outcome.report.errors, Vec::<String>::new());
}

#[test]
fn json_deny_and_ask() {
    let fixture = Fixture::new();
    let deny = fixture.script(
        "deny.sh",
        r#"printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"destructive"}}'"#,
    );
    let outcome = rm_call(&fixture, &deny);
    assert_eq!(
        outcome.verdict,
        Some(HookVerdict { decision: Verdict::Deny, reason: Some("destructive".to_owned()) })
    );

    let ask = fixture.script(
        "ask.sh",
        r#"printf '%s\n' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"double-check"}}'"#,
    );
    let outcome = rm_call(&fixture, &ask);
    assert_eq!(
        outcome.verdict,
        Some(HookVerdict { decision: Verdict::Ask, reason: Some("double-check".to_owned()) })
    );
}

#[test]
fn updated_input_rewrites_the_bash_command_into_our_arguments() {
    let fixture = Fixture::new();
    // Rewrites only what it recognises on stdin, as a real script would.
    let script = fixture.script(
        "rewrite.sh",
        r#"if grep -q '"command":"rm -rf /"' ; then
  printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"rm -rf ./build","timeout":5000,"description":"clean"}}}'
fi"#,
    );
    let outcome = rm_call(&fixture, &script);
    assert_eq!(
        outcome.updated_args,
        Some(json!({"command": "rm -rf ./build", "timeout_ms": 5000}))
    );
    assert_eq!(outcome.verdict.map(|d| d.decision), Some(Verdict::Allow));
    assert_eq!(outcome.report.errors, Vec::<String>::new());
}

/// True when `pid` is a live (not zombie) process.
fn alive(pid: u32) -> bool {
    match fs_err::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !matches!(
            stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().as_bytes()[0]),
            Some(b'Z' | b'X')
        ),
        Err(_) => false,
    }
}

#[test]
fn a_hook_past_its_timeout_is_killed_with_its_children_and_is_a_non_blocking_error() {
    let fixture = Fixture::new();
    let pids = fixture.out("pids");
    let script = fixture
        .script("slow.sh", &format!("sleep 30 &\necho \"$$ $!\" > {}\nsleep 30", pids.display()));
    let runner = fixture.runner(
        json!({"PreToolUse": [{"hooks": [{"type": "command", "command": script, "timeout": 1}]}]}),
    );
    let started = Instant::now();
    let outcome = runner.pre_tool_use("run_command", &json!({"command": "ls"}), "call-1");
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(900), "returned before the timeout: {elapsed:?}");
    // One second of timeout plus at most the two-second TERM grace, with slack for a busy box.
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    assert_eq!(outcome.verdict, None);
    assert_eq!(outcome.report.errors.len(), 1, "{:?}", outcome.report.errors);
    let error = &outcome.report.errors[0];
    assert!(
        error.contains(&format!("hook `{script}`")) && error.contains("timed out after 1s"),
        "{error}"
    );
    let pids = fs_err::read_to_string(&pids).unwrap();
    let pids: Vec<u32> = pids.split_whitespace().map(|pid| pid.parse().unwrap()).collect();
    assert_eq!(pids.len(), 2);
    for pid in pids {
        assert!(!alive(pid), "process {pid} outlived its hook");
    }
}

#[test]
fn a_cancel_kills_a_running_hook_and_its_children_at_once() {
    let fixture = Fixture::new();
    let pids = fixture.out("pids");
    let ready = fixture.out("ready");
    let script = fixture.script(
        "slow.sh",
        &format!(
            "sleep 30 &\necho \"$$ $!\" > {pids}\nmv {pids} {ready}\nsleep 30",
            pids = pids.display(),
            ready = ready.display()
        ),
    );
    // A timeout far beyond the test: only the cancel can end the hook.
    let runner = fixture.runner(
        json!({"PreToolUse": [{"hooks": [{"type": "command", "command": script, "timeout": 600}]}]}),
    );
    let cancel = codecoder_kernel::CancelToken::new();
    let runner = runner.cancellable(&cancel);
    let waiter = {
        let ready = ready.clone();
        let cancel = cancel.clone();
        std::thread::spawn(move || {
            while !ready.exists() {
                std::thread::sleep(Duration::from_millis(10));
            }
            cancel.cancel();
        })
    };
    let outcome = runner.pre_tool_use("run_command", &json!({"command": "ls"}), "call-1");
    waiter.join().unwrap();
    assert_eq!(outcome.verdict, None);
    assert_eq!(outcome.report.errors.len(), 1, "{:?}", outcome.report.errors);
    assert!(outcome.report.errors[0].contains("cancelled"), "{:?}", outcome.report.errors);
    let pids = fs_err::read_to_string(&ready).unwrap();
    let pids: Vec<u32> = pids.split_whitespace().map(|pid| pid.parse().unwrap()).collect();
    assert_eq!(pids.len(), 2);
    for pid in pids {
        assert!(!alive(pid), "process {pid} outlived the cancel");
    }
}

#[test]
fn a_cancellable_runner_still_answers_normally() {
    let fixture = Fixture::new();
    let script =
        fixture.script("say.sh", r#"cat >/dev/null; printf '%s' '{"systemMessage":"hello"}'"#);
    let runner = fixture.runner(hooks("PreToolUse", "Bash", &[&script]));
    let cancel = codecoder_kernel::CancelToken::new();
    let outcome = runner.cancellable(&cancel).pre_tool_use(
        "run_command",
        &json!({"command": "ls"}),
        "call-1",
    );
    assert_eq!(outcome.report.messages, ["hello"]);
    assert_eq!(outcome.report.errors, Vec::<String>::new());
}

#[test]
fn other_exit_codes_and_bad_json_are_non_blocking_errors() {
    let fixture = Fixture::new();
    let fails = fixture.script("fails.sh", "echo 'lint crashed' >&2\nexit 1");
    let garbled = fixture.script("garbled.sh", "echo '{not json'");
    let runner = fixture.runner(hooks("PreToolUse", "*", &[&fails, &garbled]));
    let outcome = runner.pre_tool_use(
        "edit",
        &json!({"path": "a", "old_string": "x", "new_string": "y"}),
        "c",
    );
    assert_eq!(outcome.verdict, None);
    let errors = &outcome.report.errors;
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].contains(&fails) && errors[0].ends_with("exited with code 1: lint crashed"),
        "{errors:?}"
    );
    assert!(errors[1].contains(&garbled) && errors[1].contains("invalid JSON"), "{errors:?}");
}

#[test]
fn user_prompt_submit_and_session_start_add_context() {
    let fixture = Fixture::new();
    let plain = fixture.script("plain.sh", "echo 'Current branch: main'");
    let json_context = fixture.script(
        "json.sh",
        r#"printf '%s' '{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"Ticket ABC-1 is open"}}'"#,
    );
    let runner = fixture.runner(hooks("UserPromptSubmit", "", &[&plain, &json_context]));
    let outcome = runner.user_prompt_submit("fix the bug");
    assert_eq!(outcome.blocked, None);
    assert_eq!(outcome.context, ["Current branch: main", "Ticket ABC-1 is open"]);

    let start_json = fixture.script(
        "start.sh",
        r#"printf '%s' '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"Use pnpm"}}'"#,
    );
    let runner = fixture.runner(hooks("SessionStart", "startup", &[&plain, &start_json]));
    let outcome = runner.session_start("startup");
    assert_eq!(outcome.context, ["Current branch: main", "Use pnpm"]);
    assert_eq!(runner.session_start("resume").context, Vec::<String>::new());
}

#[test]
fn user_prompt_submit_exit_2_blocks_the_prompt() {
    let fixture = Fixture::new();
    let script = fixture.script(
        "secret.sh",
        "grep -q 'password' && { echo 'prompt contains a secret' >&2; exit 2; }\nexit 0",
    );
    let runner = fixture.runner(hooks("UserPromptSubmit", "", &[&script]));
    assert_eq!(
        runner.user_prompt_submit("my password is hunter2").blocked.as_deref(),
        Some("prompt contains a secret")
    );
    assert_eq!(runner.user_prompt_submit("hello").blocked, None);
}

#[test]
fn stop_hooks_block_by_exit_2_or_json() {
    let fixture = Fixture::new();
    let by_exit = fixture.script(
        "exit.sh",
        "grep -q '\"stop_hook_active\":true' && exit 0\necho 'tests are failing; fix them' >&2\nexit 2",
    );
    let runner = fixture.runner(hooks("Stop", "", &[&by_exit]));
    assert_eq!(
        runner.stop(false, Some("done")).instruction.as_deref(),
        Some("tests are failing; fix them")
    );
    assert_eq!(runner.stop(true, Some("done")).instruction, None);

    let by_json = fixture.script(
        "json.sh",
        r#"printf '%s' '{"decision":"block","reason":"also update the changelog"}'"#,
    );
    let runner = fixture.runner(hooks("Stop", "", &[&by_json]));
    assert_eq!(runner.stop(false, None).instruction.as_deref(), Some("also update the changelog"));
}

#[test]
fn continue_false_stops_with_its_reason() {
    let fixture = Fixture::new();
    let script = fixture.script(
        "halt.sh",
        r#"printf '%s' '{"continue":false,"stopReason":"budget exhausted","systemMessage":"stopping"}'"#,
    );
    let runner = fixture.runner(hooks("PostToolUse", "Write", &[&script]));
    let outcome = runner.post_tool_use(
        "write_file",
        &json!({"path": "a", "content": ""}),
        "c",
        &json!({"ok": true}),
        None,
    );
    assert_eq!(outcome.report.stop.as_deref(), Some("budget exhausted"));
    assert_eq!(outcome.report.messages, ["stopping"]);
}

#[test]
fn matching_hooks_run_in_parallel() {
    // Each hook waits until the other has started: run one after the other, the first would
    // give up after its 10 s loop and report an error.
    let fixture = Fixture::new();
    let (a, b) = (fixture.out("a"), fixture.out("b"));
    let meet = |me: &std::path::Path, other: &std::path::Path, name: &str| {
        fixture.script(
            name,
            &format!(
                "touch {me}\ni=0\nwhile [ ! -e {other} ]; do i=$((i+1)); [ $i -gt 200 ] && exit 1; sleep 0.05; done\necho {name}",
                me = me.display(),
                other = other.display()
            ),
        )
    };
    let first = meet(&a, &b, "first");
    let second = meet(&b, &a, "second");
    let runner = fixture.runner(hooks("UserPromptSubmit", "", &[&first, &second]));
    let outcome = runner.user_prompt_submit("go");
    assert_eq!(outcome.report.errors, Vec::<String>::new());
    assert_eq!(outcome.context, ["first", "second"]);
}

#[test]
fn identical_commands_run_once() {
    let fixture = Fixture::new();
    let counter = fixture.out("count");
    let script = fixture.script("count.sh", &format!("echo run >> {}", counter.display()));
    let runner = fixture.runner(json!({"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": script}, {"type": "command", "command": script}]},
        {"matcher": "*", "hooks": [{"type": "command", "command": script}]},
    ]}));
    runner.pre_tool_use("run_command", &json!({"command": "ls"}), "c");
    assert_eq!(fs_err::read_to_string(&counter).unwrap(), "run\n");
}

#[test]
fn no_matching_hook_runs_nothing() {
    let fixture = Fixture::new();
    let counter = fixture.out("count");
    let script = fixture.script("count.sh", &format!("echo run >> {}", counter.display()));
    let runner = fixture.runner(hooks("PreToolUse", "Edit|Write", &[&script]));
    let outcome = runner.pre_tool_use("run_command", &json!({"command": "ls"}), "c");
    assert_eq!(outcome, PreToolUse::default());
    assert!(!counter.exists());
}

/// Copies stdin, the working directory and the project variables for each event to a file.
fn recorder(fixture: &Fixture) -> String {
    let out = fixture.out("");
    fixture.script(
        "record.sh",
        &format!(
            "cat > {out}/$1.json\necho \"$(pwd)|$CLAUDE_PROJECT_DIR|$CODECODER_PROJECT_DIR\" > {out}/$1.env",
            out = out.display()
        ),
    )
}

fn recorded(fixture: &Fixture, event: &str) -> Value {
    let text = fs_err::read_to_string(fixture.out(&format!("{event}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn stdin_carries_the_documented_fields_with_claude_names() {
    let fixture = Fixture::new();
    let record = recorder(&fixture);
    let events = [
        "PreToolUse",
        "PermissionRequest",
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
        "Stop",
        "SubagentStart",
        "SubagentStop",
        "SessionStart",
        "SessionEnd",
        "PreCompact",
        "PostCompact",
        "Notification",
        "PermissionDenied",
        "PostToolBatch",
        "StopFailure",
        "InstructionsLoaded",
    ];
    let mut config = serde_json::Map::new();
    for event in events {
        config.insert(
            event.to_owned(),
            json!([{"hooks": [{"type": "command", "command": format!("{record} {event}")}]}]),
        );
    }
    let runner = fixture.runner(Value::Object(config)).with_effort(Some("high".to_owned()));
    let args = json!({"command": "cargo test", "timeout_ms": 9000, "background": false});
    runner.pre_tool_use("run_command", &args, "call-7");
    runner.permission_request("write_file", &json!({"path": "src/a.rs", "content": "x"}), "call-8");
    runner.post_tool_use(
        "edit",
        &json!({"path": "a.rs", "old_string": "a", "new_string": "b"}),
        "call-9",
        &json!({"filePath": "a.rs", "success": true}),
        Some(42),
    );
    runner.post_tool_use_failure(
        "read_file",
        &json!({"path": "gone.rs"}),
        "call-10",
        "no such file",
        Some(7),
    );
    runner.user_prompt_submit("add tests");
    runner.stop(true, Some("All done."));
    runner.subagent_start("agent-1", "explore");
    runner.subagent_stop(
        "agent-1",
        "explore",
        &fixture.project().join("agent-1.jsonl"),
        false,
        None,
    );
    runner.session_start("resume");
    runner.session_end("prompt_input_exit");
    runner.pre_compact("manual", "keep the API notes");
    runner.post_compact("auto", "We added tests.");
    runner.notification("Approval needed", "permission_prompt");
    runner.permission_denied("run_command", &json!({"command": "rm -rf /"}), "call-11", "a rule");
    let call = |id: &str, name: &str, args: Value| codecoder_protocol::ToolCall {
        id: codecoder_protocol::ToolCallId::new(id),
        name: name.to_owned(),
        args,
    };
    let result = |id: &str, status, text: &str| {
        codecoder_protocol::ToolResult::text(
            codecoder_protocol::ToolCallId::new(id),
            status,
            text.to_owned(),
        )
    };
    runner.post_tool_batch(&[
        (
            call("call-12", "read_file", json!({"path": "a.rs"})),
            result("call-12", codecoder_protocol::ToolResultStatus::Success, "fn a() {}"),
        ),
        (
            call("call-13", "read_file", json!({"path": "gone.rs"})),
            result("call-13", codecoder_protocol::ToolResultStatus::Error, "no such file"),
        ),
    ]);
    runner.stop_failure("rate_limit", "model error: 429 slow down", Some("Working on it"));
    runner.instructions_loaded(&fixture.project().join("AGENTS.md"), "Project", "session_start");

    let project = fixture.project();
    let common = |event: &str| {
        json!({
            "session_id": "sess-1",
            "transcript_path": project.join("session.jsonl"),
            "cwd": project,
            "permission_mode": "default",
            "hook_event_name": event,
            "effort": {"level": "high"},
        })
    };
    let with = |event: &str, fields: Value| {
        let mut all = common(event);
        all.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
        all
    };
    let expected = [
        with(
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_input": {"command": "cargo test", "timeout": 9000, "run_in_background": false}, "tool_use_id": "call-7"}),
        ),
        with(
            "PermissionRequest",
            json!({"tool_name": "Write", "tool_input": {"file_path": "src/a.rs", "content": "x"}, "tool_use_id": "call-8"}),
        ),
        with(
            "PostToolUse",
            json!({"tool_name": "Edit", "tool_input": {"file_path": "a.rs", "old_string": "a", "new_string": "b"}, "tool_use_id": "call-9", "tool_response": {"filePath": "a.rs", "success": true}, "duration_ms": 42}),
        ),
        with(
            "PostToolUseFailure",
            json!({"tool_name": "Read", "tool_input": {"file_path": "gone.rs"}, "tool_use_id": "call-10", "error": "no such file", "is_interrupt": false, "duration_ms": 7}),
        ),
        with("UserPromptSubmit", json!({"prompt": "add tests"})),
        with("Stop", json!({"stop_hook_active": true, "last_assistant_message": "All done."})),
        with("SubagentStart", json!({"agent_id": "agent-1", "agent_type": "explore"})),
        with(
            "SubagentStop",
            json!({"stop_hook_active": false, "agent_id": "agent-1", "agent_type": "explore", "agent_transcript_path": project.join("agent-1.jsonl")}),
        ),
        with("SessionStart", json!({"source": "resume"})),
        with("SessionEnd", json!({"reason": "prompt_input_exit"})),
        with(
            "PreCompact",
            json!({"trigger": "manual", "custom_instructions": "keep the API notes"}),
        ),
        with("PostCompact", json!({"trigger": "auto", "compact_summary": "We added tests."})),
        with(
            "Notification",
            json!({"message": "Approval needed", "notification_type": "permission_prompt"}),
        ),
        with(
            "PermissionDenied",
            json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}, "tool_use_id": "call-11", "reason": "a rule"}),
        ),
        with(
            "PostToolBatch",
            json!({"tool_calls": [
                {"tool_name": "Read", "tool_input": {"file_path": "a.rs"}, "tool_use_id": "call-12", "tool_response": "fn a() {}"},
                {"tool_name": "Read", "tool_input": {"file_path": "gone.rs"}, "tool_use_id": "call-13", "error": "no such file"},
            ]}),
        ),
        with(
            "StopFailure",
            json!({"error": "rate_limit", "error_details": "model error: 429 slow down", "last_assistant_message": "Working on it"}),
        ),
        with(
            "InstructionsLoaded",
            json!({"file_path": project.join("AGENTS.md"), "memory_type": "Project", "load_reason": "session_start"}),
        ),
    ];
    // The events from the first UserPromptSubmit on carry the id of that prompt.
    let prompt_id = runner.prompt_id().unwrap();
    let submitted = events.iter().position(|event| *event == "UserPromptSubmit").unwrap();
    for (index, (event, mut expected)) in events.iter().zip(expected).enumerate() {
        if index >= submitted {
            expected["prompt_id"] = json!(prompt_id);
        }
        assert_eq!(recorded(&fixture, event), expected, "{event}");
    }
    let env = fs_err::read_to_string(fixture.out("PreToolUse.env")).unwrap();
    let project = project.display();
    assert_eq!(env, format!("{project}|{project}|{project}\n"));
}

/// Lists the threads of the process that started it (cut to 15 bytes by the kernel) once the
/// last thread the sandbox starts for it (its stderr reader) is there.
const THREADS_WHILE_RUNNING: &str = "while ! grep -qs ^sandbox-err /proc/$PPID/task/*/comm; do \
     sleep 0.01; done; sleep 0.1; cat /proc/$PPID/task/*/comm";

#[test]
fn a_cancellable_hook_is_waited_for_without_a_watcher_thread() {
    let fixture = Fixture::new();
    let runner = fixture.runner(hooks("UserPromptSubmit", "", &[THREADS_WHILE_RUNNING]));
    let cancel = codecoder_kernel::CancelToken::new();
    let outcome = runner.cancellable(&cancel).user_prompt_submit("hello");
    assert_eq!(outcome.report.errors, Vec::<String>::new());
    let threads: Vec<&str> = outcome.context.iter().flat_map(|t| t.lines()).collect();
    assert!(threads.iter().any(|name| name.starts_with("sandbox-wait-")), "{threads:?}");
    assert!(!threads.iter().any(|name| name.contains("watch")), "{threads:?}");
}

#[test]
fn permission_mode_follows_the_session_switch() {
    use codecoder_policy::{PermissionMode, PermissionSwitch};
    let fixture = Fixture::new();
    let record = recorder(&fixture);
    let mut config = serde_json::Map::new();
    config.insert(
        "UserPromptSubmit".to_owned(),
        json!([{"hooks": [{"type": "command", "command": format!("{record} UserPromptSubmit")}]}]),
    );
    let switch = PermissionSwitch::new(PermissionMode::Plan);
    let runner = fixture.runner(Value::Object(config)).with_permission(switch.clone());
    for (mode, expected) in [
        (PermissionMode::Plan, "plan"),
        (PermissionMode::AcceptEdits, "acceptEdits"),
        (PermissionMode::Default, "default"),
    ] {
        switch.set(mode);
        runner.user_prompt_submit("go");
        let input = recorded(&fixture, "UserPromptSubmit");
        assert_eq!(input["permission_mode"], expected, "{mode}");
    }
}

#[test]
fn each_user_prompt_gets_a_fresh_prompt_id_that_the_following_events_carry() {
    let fixture = Fixture::new();
    let record = recorder(&fixture);
    let runner = fixture.runner(json!({
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": format!("{record} UserPromptSubmit")}]}],
        "Stop": [{"hooks": [{"type": "command", "command": format!("{record} Stop")}]}],
    }));
    assert_eq!(runner.prompt_id(), None);
    runner.stop(false, None);
    assert_eq!(recorded(&fixture, "Stop").get("prompt_id"), None);
    assert_eq!(recorded(&fixture, "Stop").get("effort"), None);

    runner.user_prompt_submit("first");
    let first = recorded(&fixture, "UserPromptSubmit")["prompt_id"].clone();
    runner.stop(false, None);
    assert_eq!(recorded(&fixture, "Stop")["prompt_id"], first);

    // A clone (as a subagent's events use) shares the prompt.
    runner.clone().user_prompt_submit("second");
    let second = recorded(&fixture, "UserPromptSubmit")["prompt_id"].clone();
    assert!(second.is_string() && first.is_string());
    assert_ne!(first, second);
    runner.stop(false, None);
    assert_eq!(recorded(&fixture, "Stop")["prompt_id"], second);
}
