//! Unit tests of the command line's reports: each written into a buffer and compared whole.

use std::path::PathBuf;

use codecoder_protocol::{
    AgentEvent, AgentEventKind, EventSource, RecordBody, SessionId, ToolCallId, ToolKind, TurnId,
    Verdict,
};
use codecoder_session::SessionSummary;

use crate::{
    ApprovalMode, McpListing, McpServerEntry, Modes, PermissionCheck, Plugin, SandboxMode,
    SessionList, Shown, ValidLog,
};

fn text(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut out = Vec::new();
    write(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn summary(id: &str, title: &str, problem: Option<&str>) -> SessionSummary {
    SessionSummary {
        id: id.to_owned(),
        path: PathBuf::from(format!("/home/sessions/{id}.jsonl")),
        cwd: "/work".to_owned(),
        title: title.to_owned(),
        model: "gpt-test".to_owned(),
        provider: "fake".to_owned(),
        created_ms: 1_700_000_000_000,
        updated_ms: 1_700_000_061_999,
        parent: None,
        record_count: 12,
        problem: problem.map(str::to_owned),
    }
}

#[test]
fn session_list_is_a_table_with_placeholders_for_untitled_and_unreadable_logs() {
    let list = SessionList {
        sessions: vec![
            summary("a", "fix the bug", None),
            summary("b", "", None),
            summary("c", "", Some("line 3: bad json")),
        ],
        total: 3,
        dir: PathBuf::from("/home/sessions"),
    };
    let table = text(|out| crate::write_session_list(&list, false, out, &mut Vec::new()));
    let pad = " ".repeat(35);
    assert_eq!(
        table,
        format!(
            "ID{}  UPDATED (UTC)        RECORDS  MODEL             TITLE\n\
             a{pad}  2023-11-14 22:14:21       12  gpt-test          fix the bug\n\
             b{pad}  2023-11-14 22:14:21       12  gpt-test          (no input yet)\n\
             c{pad}  2023-11-14 22:14:21       12  gpt-test          [unreadable: line 3: bad json]\n",
            " ".repeat(34)
        )
    );
    let empty = SessionList { sessions: vec![], total: 0, dir: PathBuf::from("/home/sessions") };
    assert_eq!(
        text(|out| crate::write_session_list(&empty, false, out, &mut Vec::new())),
        "no sessions in /home/sessions\n"
    );
    assert_eq!(text(|out| crate::write_session_list(&empty, true, out, &mut Vec::new())), "[]\n");
    let json: serde_json::Value = serde_json::from_str(&text(|out| {
        crate::write_session_list(&list, true, out, &mut Vec::new())
    }))
    .unwrap();
    assert_eq!(
        json[0],
        serde_json::json!({
            "id": "a", "path": "/home/sessions/a.jsonl", "cwd": "/work", "title": "fix the bug",
            "model": "gpt-test", "provider": "fake", "createdAt": 1_700_000_000,
            "updatedAt": 1_700_000_061, "parent": null, "recordCount": 12, "problem": null,
        })
    );
}

#[test]
fn validation_report_notes_unknown_records_a_torn_tail_and_the_repair_plan() {
    let log = ValidLog {
        path: PathBuf::from("/s/x.jsonl"),
        record_count: 7,
        last_turn: 2,
        last_seq: 9,
        ended: false,
        unknown: vec![(4, "future_thing".to_owned())],
        torn_tail: Some((8, 17)),
        repair_plan: vec![RecordBody::TurnEnd {
            turn: TurnId::new(2),
            outcome: codecoder_protocol::TurnOutcome::Interrupted,
            usage: codecoder_protocol::Usage::default(),
        }],
    };
    assert_eq!(
        text(|out| log.write_report(out)),
        "valid: /s/x.jsonl — 7 record(s), 2 turn(s), last seq 9\n\
         note: line 4: record type `future_thing` is unknown to this version; kept\n\
         note: line 8 is torn (17 bytes, cut by a crash); repair drops it\n\
         note: the log stops mid-turn; repair will append:\n\
         \x20 - turn_end (turn 2, interrupted)\n"
    );
    let mut out = Vec::new();
    let invalid = crate::Validation::Invalid("line 2: seq goes back".to_owned());
    assert!(!invalid.write_report(&mut out).unwrap());
    assert_eq!(String::from_utf8(out).unwrap(), "invalid: line 2: seq goes back\n");
    assert!(crate::Validation::Valid(log.clone()).write_report(&mut Vec::new()).unwrap());
    let ended =
        ValidLog { ended: true, unknown: vec![], torn_tail: None, repair_plan: vec![], ..log };
    assert_eq!(
        text(|out| ended.write_report(out)),
        "valid: /s/x.jsonl — 7 record(s), 2 turn(s), last seq 9, ended\n"
    );
}

#[test]
fn permission_check_report_names_the_tool_keys_and_modes_and_gives_the_verdicts_exit_code() {
    let check = |verdict| PermissionCheck {
        decision: codecoder_policy::Decision {
            verdict,
            source: codecoder_policy::Source::Hook,
            reason: "hook: said so".to_owned(),
        },
        tool: "write_file".to_owned(),
        kind: ToolKind::Edit,
        keys: vec!["write_file(a.txt)".to_owned(), "Write(a.txt)".to_owned()],
        modes: Modes {
            sandbox: SandboxMode::WorkspaceWrite,
            approval: ApprovalMode::OnRequest,
            bypass: true,
        },
    };
    let mut out = Vec::new();
    assert_eq!(check(Verdict::Ask).write_report(&mut out).unwrap(), 3);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        format!(
            "{}\n  tool: write_file (Edit)\n  keys: write_file(a.txt), Write(a.txt)\n  \
             modes: sandbox workspace-write, approvals on-request, bypass\n  (PreToolUse hooks \
             and session grants come first in a session; not run here)\n",
            check(Verdict::Ask).decision
        )
    );
    assert_eq!(check(Verdict::Allow).write_report(&mut Vec::new()).unwrap(), 0);
    assert_eq!(check(Verdict::Deny).write_report(&mut Vec::new()).unwrap(), 1);
}

#[test]
fn mcp_listing_lists_and_gets_servers_by_name_with_header_names_only() {
    let server = codecoder_config::McpServerToml {
        url: Some("https://mcp.example/x".to_owned()),
        http_headers: [("Authorization".to_owned(), crate::MCP_SECRET_MASK.to_owned())].into(),
        env: [("TOKEN".to_owned(), crate::MCP_SECRET_MASK.to_owned())].into(),
        cwd: Some("/srv".to_owned()),
        bearer_token_env_var: Some("API_TOKEN".to_owned()),
        sampling: Some(true),
        enabled: Some(false),
        ..Default::default()
    };
    let how = crate::describe_mcp_server(&server);
    let listing = McpListing {
        configured: [("web".to_owned(), server)].into(),
        elsewhere: vec![McpServerEntry {
            name: "docs".to_owned(),
            how: "stdio: docs-server".to_owned(),
            origin: "/repo/.mcp.json".to_owned(),
        }],
    };
    assert_eq!(
        text(|out| listing.write_list(false, out)),
        format!(
            "web  {how} (headers: Authorization) (disabled)\n\
             docs  stdio: docs-server  (from /repo/.mcp.json)\n"
        )
    );
    let mask = crate::MCP_SECRET_MASK;
    assert_eq!(
        text(|out| listing.write_server("web", false, out).map(|found| assert!(found))),
        format!(
            "web\n  {how}\n  env: TOKEN={mask}\n  headers: Authorization={mask}\n  cwd: /srv\n  \
             bearer token from: $API_TOKEN\n  sampling: allowed (it may ask the session's model)\n"
        )
    );
    assert_eq!(
        text(|out| listing.write_server("docs", false, out).map(|found| assert!(found))),
        "docs\n  stdio: docs-server\n  from: /repo/.mcp.json\n"
    );
    let json: serde_json::Value = serde_json::from_str(&text(|out| {
        listing.write_server("docs", true, out).map(|found| assert!(found))
    }))
    .unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "name": "docs", "how": "stdio: docs-server", "origin": "/repo/.mcp.json",
        })
    );
    let mut out = Vec::new();
    assert!(!listing.write_server("nope", false, &mut out).unwrap());
    assert!(out.is_empty());
    let none = McpListing { configured: [].into(), elsewhere: vec![] };
    assert_eq!(
        text(|out| none.write_list(false, out)),
        "no MCP servers configured (codecoder mcp add NAME -- CMD ARGS…)\n"
    );
}

#[test]
fn plugin_list_shows_version_state_and_description() {
    let plugins = [
        Plugin {
            name: "lint".to_owned(),
            dir: PathBuf::from("/p/lint"),
            enabled: true,
            description: Some("Lints on save".to_owned()),
            version: Some("1.2.0".to_owned()),
        },
        Plugin {
            name: "old".to_owned(),
            dir: PathBuf::from("/p/old"),
            enabled: false,
            description: None,
            version: None,
        },
    ];
    assert_eq!(
        text(|out| crate::write_plugins(&plugins, out)),
        "lint 1.2.0  /p/lint  (enabled)\n  Lints on save\nold  /p/old  (disabled)\n"
    );
    assert_eq!(
        text(|out| crate::write_plugins(&[], out)),
        "no plugins (codecoder plugin add DIR)\n"
    );
}

fn event(subagent_path: Vec<ToolCallId>, kind: AgentEventKind) -> AgentEvent {
    AgentEvent { source: EventSource { session_id: SessionId::new(), subagent_path }, kind }
}

#[test]
fn compaction_shows_its_message_on_out_and_warnings_and_hook_messages_on_err() {
    let compacted = || AgentEventKind::Compacted {
        turn: TurnId::FIRST,
        trigger: "manual".to_owned(),
        summarized: true,
        tokens_before: 900,
        tokens_after: 100,
        message: "compacted: 900 → 100 tokens".to_owned(),
    };
    let events = [
        event(vec![], compacted()),
        event(vec![ToolCallId::new("sub")], compacted()),
        event(vec![], AgentEventKind::Warning { message: "slow".to_owned() }),
        event(
            vec![],
            AgentEventKind::HookMessage {
                event: "PreCompact".to_owned(),
                message: "hi".to_owned(),
            },
        ),
    ];
    let (mut out, mut err) = (Vec::new(), Vec::new());
    for event in &events {
        crate::write_compaction(Shown::Event(event), &mut out, &mut err).unwrap();
    }
    crate::write_compaction(Shown::Note("declined".to_owned()), &mut out, &mut err).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "compacted: 900 → 100 tokens\n");
    assert_eq!(String::from_utf8(err).unwrap(), "warning: slow\nPreCompact hook: hi\n");
}
