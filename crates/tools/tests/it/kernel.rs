//! The tools through the real kernel, as the model calls them: a scripted model asks for
//! calls, the AgentLoop validates, runs and logs them, and the session log is checked after.

use std::time::{Duration, Instant};

use codecoder_protocol::{
    AgentCommand, AgentEventKind, MessageItem, OutputStream, ToolResultStatus, TurnOutcome,
};
use codecoder_tools::ToolsConfig;
use serde_json::json;

use crate::support::*;

fn workspace() -> (tempfile::TempDir, ToolsConfig) {
    let dir = tempfile::tempdir().unwrap();
    let cwd = fs_err::canonicalize(dir.path()).unwrap();
    let mut config = ToolsConfig::standard(&cwd, vec![cwd.clone()]);
    config.kill_grace = Duration::from_millis(300);
    // Not a login shell: the machine's profile files must not slow or break the tests.
    config.shell_args = vec!["-c".to_owned()];
    (dir, config)
}

/// The tool results of the log, in order: (status, text).
fn results(log: &codecoder_session::LoadedSession) -> Vec<(ToolResultStatus, String)> {
    let mut out = Vec::new();
    for message in log.projection().into_history() {
        for item in &message.items {
            if let MessageItem::ToolResult(result) = item {
                let text = result
                    .content
                    .iter()
                    .map(|item| match item {
                        codecoder_protocol::ContentItem::Text { text } => text.clone(),
                        codecoder_protocol::ContentItem::BlobRef(blob) => {
                            format!("[blob {}] {}", blob.size, blob.preview)
                        }
                        codecoder_protocol::ContentItem::Image(_) => "[image]".to_owned(),
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                out.push((result.status, text));
            }
        }
    }
    out
}

#[test]
fn a_turn_that_writes_reads_edits_searches_and_runs() {
    let (dir, config) = workspace();
    let model = ScriptedModel::new(vec![
        calls(&[(
            "c1",
            "write_file",
            json!({ "path": "src/app.py", "content": "print('hello')\n" }),
        )]),
        calls(&[
            ("c2", "read_file", json!({ "path": "src/app.py" })),
            ("c3", "grep", json!({ "pattern": "hello", "output": "files" })),
            ("c4", "glob", json!({ "pattern": "*.py" })),
        ]),
        calls(&[(
            "c5",
            "edit",
            json!({ "path": "src/app.py", "old_string": "hello", "new_string": "bye" }),
        )]),
        calls(&[(
            "c6",
            "run_command",
            json!({ "command": "cat src/app.py; echo oops >&2; exit 2" }),
        )]),
        calls(&[(
            "c7",
            "update_plan",
            json!({ "plan": [{ "step": "done", "status": "completed" }] }),
        )]),
        answer("all done"),
    ]);
    let harness = Harness::start(model.clone(), config);
    harness.submit("go");
    let events = harness.turn("unused");
    let deltas: String = events
        .iter()
        .filter_map(|event| match &event.kind {
            AgentEventKind::ToolOutputDelta { call_id, stream, chunk }
                if call_id.as_str() == "c6" =>
            {
                Some(format!("{stream:?}:{chunk}"))
            }
            _ => None,
        })
        .collect();
    assert!(deltas.contains("Stdout:print('bye')") && deltas.contains("Stderr:oops"), "{deltas}");
    let Some(AgentEventKind::TurnDone { outcome, .. }) = events.last().map(|event| &event.kind)
    else {
        panic!()
    };
    assert_eq!(*outcome, TurnOutcome::Completed);
    let log = harness.shutdown();
    let results = results(&log);
    assert_eq!(results.len(), 7);
    assert!(results[0].1.starts_with("Created `src/app.py`"), "{:?}", results[0]);
    assert_eq!(results[1].1, "     1\tprint('hello')\n");
    assert!(results[2].1.starts_with("src/app.py\n"), "{:?}", results[2]);
    assert_eq!(results[3].1, "src/app.py\n");
    assert!(results[4].1.starts_with("Edited"), "{:?}", results[4]);
    assert_eq!(results[5].0, ToolResultStatus::Error);
    assert!(
        results[5].1.contains("print('bye')") && results[5].1.contains("[exit code 2;"),
        "{:?}",
        results[5]
    );
    assert!(results[6].1.contains("[x] done"), "{:?}", results[6]);
    assert_eq!(fs_err::read_to_string(dir.path().join("src/app.py")).unwrap(), "print('bye')\n");
    // The model saw the tool schemas.
    let names: Vec<String> =
        model.requests()[0].tools.iter().map(|spec| spec.name.clone()).collect();
    assert_eq!(
        names,
        [
            "read_file",
            "write_file",
            "edit",
            "apply_patch",
            "list_dir",
            "glob",
            "grep",
            "run_command",
            "job_output",
            "job_kill",
            "exec_command",
            "write_stdin",
            "update_plan",
            "ask_user",
            "web_fetch"
        ]
    );
}

#[test]
fn bad_arguments_and_refused_paths_come_back_as_errors_the_model_can_act_on() {
    let (_dir, config) = workspace();
    let model = ScriptedModel::new(vec![
        calls(&[
            ("c1", "read_file", json!({ "path": 42 })),
            ("c2", "write_file", json!({ "path": "/etc/codecoder-test", "content": "x" })),
            (
                "c3",
                "edit",
                json!({ "path": "nope.txt", "old_string": "a", "new_string": "b", "extra": 1 }),
            ),
            ("c4", "read_file", json!("not an object")),
        ]),
        answer("ok"),
    ]);
    let harness = Harness::start(model, config.clone());
    harness.submit("go");
    harness.turn("unused");
    let log = harness.shutdown();
    let results = results(&log);
    assert!(results.iter().all(|(status, _)| *status == ToolResultStatus::Error), "{results:?}");
    assert!(results[0].1.contains("`args.path` must be string"), "{:?}", results[0]);
    assert!(
        results[1].1.contains("outside the writable roots")
            && results[1].1.contains(&config.cwd.display().to_string()),
        "{:?}",
        results[1]
    );
    assert!(results[2].1.contains("not a known property"), "{:?}", results[2]);
    assert!(results[3].1.contains("must be object"), "{:?}", results[3]);
}

#[test]
fn ask_user_goes_through_the_reply_oneshot() {
    let (_dir, config) = workspace();
    let model = ScriptedModel::new(vec![
        calls(&[(
            "c1",
            "ask_user",
            json!({ "question": "Tabs or spaces?", "options": ["tabs", "spaces"] }),
        )]),
        answer("ok"),
    ]);
    let harness = Harness::start(model, config);
    harness.submit("go");
    let events = harness.turn("spaces");
    assert!(events.iter().any(|event| matches!(&event.kind, AgentEventKind::Warning { message } if message == "asked: Tabs or spaces? [\"tabs\", \"spaces\"]")));
    let log = harness.shutdown();
    assert_eq!(results(&log)[0].1, "The user answered: spaces");
}

#[test]
fn cancel_mid_command_through_the_kernel() {
    let (_dir, config) = workspace();
    let model = ScriptedModel::new(vec![calls(&[(
        "c1",
        "run_command",
        json!({ "command": "trap '' TERM; echo pid=$$; sleep 30 & while :; do sleep 1; done" }),
    )])]);
    let harness = Harness::start(model, config);
    harness.submit("go");
    let pid = loop {
        let event = harness.next();
        if let AgentEventKind::ToolOutputDelta { stream: OutputStream::Stdout, chunk, .. } =
            &event.kind
        {
            break chunk.trim().trim_start_matches("pid=").parse::<u32>().unwrap();
        }
    };
    let cancelled_at = Instant::now();
    harness.handle.cmd.send(AgentCommand::Cancel).unwrap();
    loop {
        let event = harness.next();
        if let AgentEventKind::TurnDone { cancelled, .. } = event.kind {
            assert!(cancelled);
            break;
        }
    }
    // SIGTERM is ignored: SIGKILL after the 300 ms grace.
    assert!(cancelled_at.elapsed() < Duration::from_secs(5), "{:?}", cancelled_at.elapsed());
    assert_eq!(live(pid), Vec::<u32>::new());
    let log = harness.shutdown();
    assert_eq!(results(&log)[0].0, ToolResultStatus::Cancelled);
}

#[test]
fn background_jobs_die_with_the_agent() {
    let (_dir, config) = workspace();
    let model = ScriptedModel::new(vec![
        calls(&[(
            "c1",
            "run_command",
            json!({ "command": "echo pid=$$; exec sleep 60", "background": true }),
        )]),
        answer("started"),
    ]);
    let harness = Harness::start(model, config.clone());
    harness.submit("go");
    harness.turn("unused");
    // Read the pid with a second tool set? No: the job belongs to the agent's set; find it in
    // /proc by its command line instead.
    let pid = find_sleep_60(&config.cwd);
    assert!(!live(pid).is_empty());
    harness.shutdown();
    assert_eq!(live(pid), Vec::<u32>::new());
}

/// The pid of a `sleep 60` whose cwd is `cwd`.
fn find_sleep_60(cwd: &std::path::Path) -> u32 {
    let started = Instant::now();
    loop {
        for entry in fs_err::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
            let Ok(cmdline) = fs_err::read(entry.path().join("cmdline")) else { continue };
            let Ok(dir) = fs_err::read_link(entry.path().join("cwd")) else { continue };
            if cmdline == b"sleep\x0060\x00" && dir == cwd {
                return pid;
            }
        }
        assert!(started.elapsed() < PATIENCE, "no sleep 60 found");
        std::thread::sleep(Duration::from_millis(20));
    }
}
