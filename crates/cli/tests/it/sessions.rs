//! `codecoder sessions …` on logs written by the session library.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codecoder_protocol::{
    ContentItem, Message, MessageItem, RecordBody, Role, StepId, ToolCall, ToolCallId, ToolResult,
    ToolResultStatus, TurnId, TurnOutcome,
};
use codecoder_session::{FsyncPolicy, NewSession, SessionStore, SessionWriter, WriterConfig};
use codecoder_stdx::ManualClock;

use crate::{codecoder, stderr, stdout};

fn config() -> WriterConfig {
    WriterConfig {
        fsync: FsyncPolicy::Never,
        blob_threshold: 16 * 1024,
        clock: Arc::new(ManualClock::new(1_764_000_000_000, 1000)),
    }
}

fn new_session(store: &SessionStore, cwd: &str) -> SessionWriter {
    store
        .create(
            NewSession {
                cwd: cwd.to_owned(),
                model: "test-model".into(),
                provider: "fake".into(),
                config_hash: None,
                parent: None,
            },
            config(),
        )
        .unwrap()
}

/// One complete turn: a question, a tool call and its result, an answer.
fn complete_turn(writer: &mut SessionWriter, turn: u32, question: &str) {
    let turn = TurnId::new(turn);
    let call_id = ToolCallId::new(format!("call_{turn}"));
    let steps = [StepId::new(1), StepId::new(2)];
    writer.append(RecordBody::TurnStart { turn }).unwrap();
    writer.append(RecordBody::UserMessage { message: Message::user_text(question) }).unwrap();
    writer.append(RecordBody::StepStart { turn, step: steps[0] }).unwrap();
    let call = ToolCall {
        id: call_id.clone(),
        name: "read_file".into(),
        args: serde_json::json!({"path": "src/main.rs"}),
    };
    writer
        .append(RecordBody::AssistantMessage {
            message: Message::new(Role::Assistant, vec![MessageItem::ToolCall(call)]),
        })
        .unwrap();
    writer.append(RecordBody::ToolStarted { call_id: call_id.clone() }).unwrap();
    writer
        .append(RecordBody::ToolResult {
            result: ToolResult {
                tool_call_id: call_id,
                content: vec![ContentItem::Text { text: "fn main() {}".into() }],
                status: ToolResultStatus::Success,
                exit: None,
            },
            synthetic: None,
        })
        .unwrap();
    writer
        .append(RecordBody::StepEnd {
            turn,
            step: steps[0],
            usage: Default::default(),
            stop_reason: None,
        })
        .unwrap();
    writer.append(RecordBody::StepStart { turn, step: steps[1] }).unwrap();
    writer
        .append(RecordBody::AssistantMessage {
            message: Message::new(
                Role::Assistant,
                vec![MessageItem::Text { text: "It is empty.".into() }],
            ),
        })
        .unwrap();
    writer
        .append(RecordBody::StepEnd {
            turn,
            step: steps[1],
            usage: Default::default(),
            stop_reason: None,
        })
        .unwrap();
    writer
        .append(RecordBody::TurnEnd {
            turn,
            outcome: TurnOutcome::Completed,
            usage: Default::default(),
        })
        .unwrap();
}

fn write_session(store: &SessionStore, cwd: &str, question: &str) -> (String, PathBuf) {
    let mut writer = new_session(store, cwd);
    complete_turn(&mut writer, 1, question);
    (writer.session_id().to_string(), writer.path().unwrap().to_owned())
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().map(str::to_owned).collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn validate_accepts_a_good_log_and_summarizes() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let (id, path) = write_session(&store, "/work/a", "what is in main?");
    for query in [id.as_str(), &id[..8], path.to_str().unwrap()] {
        let out = codecoder(home.path(), &["sessions", "validate", query]);
        assert!(out.status.success(), "{query}: {}{}", stdout(&out), stderr(&out));
        assert!(stdout(&out).starts_with("valid: "), "{}", stdout(&out));
        assert!(stdout(&out).contains("12 record(s), 1 turn(s)"), "{}", stdout(&out));
    }
}

#[test]
fn validate_pinpoints_a_corrupt_line_in_the_middle() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let (_, path) = write_session(&store, "/work/a", "q");
    let mut log = lines(&path);
    log[4] = "{\"seq\": 5, this is not json".to_owned();
    write_lines(&path, &log);
    let out = codecoder(home.path(), &["sessions", "validate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.starts_with("invalid: "), "{text}");
    assert!(text.contains(&format!("{}:5:", path.display())), "{text}");
}

#[test]
fn validate_pinpoints_a_grammar_violation() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let (_, path) = write_session(&store, "/work/a", "q");
    let mut log = lines(&path);
    // Drop the tool result (line 7): step 1 then ends with its call pending.
    log.remove(6);
    write_lines(&path, &log);
    let out = codecoder(home.path(), &["sessions", "validate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains(&format!("{}:7:", path.display())), "{text}");
    assert!(text.contains("unanswered"), "{text}");
}

#[test]
fn validate_accepts_a_crashed_log_and_says_what_repair_closes() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let (_, path) = write_session(&store, "/work/a", "q");
    let mut log = lines(&path);
    // Keep up to the tool_started record (line 6), then a torn half line.
    log.truncate(6);
    let torn = "{\"seq\":7,\"ts\":1,\"type\":\"tool_re";
    std::fs::write(&path, log.join("\n") + "\n" + torn).unwrap();
    let out = codecoder(home.path(), &["sessions", "validate", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains("line 7 is torn"), "{text}");
    assert!(text.contains("tool_result for `call_1` (OutcomeUnknown)"), "{text}");
    assert!(text.contains("step_end (step 1)"), "{text}");
    assert!(text.contains("turn_end (turn 1, interrupted)"), "{text}");
    // Validation never writes.
    assert!(std::fs::read_to_string(&path).unwrap().ends_with(torn));
}

#[test]
fn validate_keeps_and_reports_unknown_record_types() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let (_, path) = write_session(&store, "/work/a", "q");
    let mut log = lines(&path);
    let seq = log.len() + 1;
    log.push(format!("{{\"seq\":{seq},\"ts\":5,\"type\":\"from_the_future\",\"x\":1}}"));
    write_lines(&path, &log);
    let out = codecoder(home.path(), &["sessions", "validate", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(stdout(&out).contains("`from_the_future` is unknown"), "{}", stdout(&out));
}

#[test]
fn list_filters_by_cwd_and_prints_json() {
    let home = tempfile::tempdir().unwrap();
    let dir_a = tempfile::tempdir().unwrap();
    let dir_b = tempfile::tempdir().unwrap();
    let cwd_a = std::fs::canonicalize(dir_a.path()).unwrap().to_string_lossy().into_owned();
    let cwd_b = std::fs::canonicalize(dir_b.path()).unwrap().to_string_lossy().into_owned();
    let store = SessionStore::new(home.path());
    let (id_a, _) = write_session(&store, &cwd_a, "fix the parser\nsecond line");
    let (id_b, _) = write_session(&store, &cwd_b, "add a test");
    let out = codecoder(home.path(), &["sessions", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(&id_a) && text.contains(&id_b), "{text}");
    assert!(text.contains("fix the parser") && !text.contains("second line"), "{text}");

    let out = codecoder(home.path(), &["sessions", "list", "--json", "--cwd", &cwd_a]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["id"], id_a);
    assert_eq!(rows[0]["title"], "fix the parser");
    assert_eq!(rows[0]["recordCount"], 12);
}

#[test]
fn show_prints_a_transcript_and_json() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let (id, _) = write_session(&store, "/work/a", "what is in main?");
    let out = codecoder(home.path(), &["sessions", "show", &id]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for expected in [
        "user: what is in main?",
        "→ read_file",
        "fn main() {}",
        "It is empty.",
        "end of turn 1: completed",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    let out = codecoder(home.path(), &["sessions", "show", &id, "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["records"].as_array().unwrap().len(), 12);
    assert_eq!(doc["needsRepair"], false);
}

#[test]
fn fork_at_a_seq_leaves_the_parent_untouched() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let (id, path) = write_session(&store, "/work/a", "q");
    let before = std::fs::read(&path).unwrap();
    let out = codecoder(home.path(), &["sessions", "fork", &id, "--at", "6"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let child = stdout(&out).trim().to_owned();
    assert_ne!(child, id);
    assert_eq!(std::fs::read(&path).unwrap(), before, "the parent must not change");
    let out = codecoder(home.path(), &["sessions", "validate", &child]);
    assert!(out.status.success(), "{}", stdout(&out));
    let out = codecoder(home.path(), &["sessions", "show", &child, "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let meta = &doc["records"][0];
    assert_eq!(meta["forkedFrom"]["sessionId"], id);
    assert_eq!(meta["forkedFrom"]["seq"], 6);
    assert_eq!(doc["needsRepair"], false);
    let out = codecoder(home.path(), &["sessions", "fork", &id, "--at", "999"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no record with seq 999"), "{}", stderr(&out));
}

#[test]
fn rm_and_reindex() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let (id_a, path_a) = write_session(&store, "/work/a", "first");
    let (id_b, _) = write_session(&store, "/work/a", "second");
    let out = codecoder(home.path(), &["sessions", "list"]);
    assert!(stdout(&out).contains(&id_a));
    let out = codecoder(home.path(), &["sessions", "rm", &id_a]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!path_a.exists());
    let out = codecoder(home.path(), &["sessions", "list"]);
    assert!(!stdout(&out).contains(&id_a) && stdout(&out).contains(&id_b), "{}", stdout(&out));
    std::fs::write(store.index_path(), b"this is not sqlite").unwrap();
    let out = codecoder(home.path(), &["sessions", "reindex"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "indexed 1 session(s)");
    let out = codecoder(home.path(), &["sessions", "rm", "ffffffff"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no session matches"), "{}", stderr(&out));
}
