//! A project's hooks and their approval: which hooks count as the project's, what a digest
//! covers, and the store of approved digests.

use std::collections::BTreeSet;

use codecoder_hooks::{Event, HookSet, HookSources, approve_hooks, approved_hooks};
use serde_json::json;

use crate::Fixture;

fn sources(fixture: &Fixture) -> HookSources {
    HookSources {
        project_dir: fixture.project(),
        home: Some(fixture.dir.path().join("home")),
        config_hooks: Some((
            json!({"Stop": [{"hooks": [{"type": "command", "command": "from-config"}]}]}),
            fixture.dir.path().join("config.toml"),
        )),
        read_claude_settings: true,
        project_trusted: true,
    }
}

fn settings(command: &str, matcher: &str) -> String {
    json!({"hooks": {"PreToolUse": [{"matcher": matcher, "hooks": [
        {"type": "command", "command": command, "timeout": 5}
    ]}]}})
    .to_string()
}

#[test]
fn only_the_projects_files_wait_for_approval() {
    let fixture = Fixture::new();
    fixture.write("project/.claude/settings.json", &settings("from-project", "Bash"));
    fixture.write("project/.codecoder/hooks.json", &settings("from-hooks-json", "Edit"));
    fixture.write("home/.claude/settings.json", &settings("from-user", "Bash"));
    let (mut set, _) = HookSet::load(&sources(&fixture)).unwrap();
    let project: Vec<String> =
        set.entries().into_iter().filter(|e| e.project).map(|e| e.command).collect();
    assert_eq!(project, ["from-hooks-json", "from-project"]);

    let skipped = set.retain_approved(&BTreeSet::new());
    assert_eq!(skipped.len(), 2);
    assert!(skipped.iter().all(|hook| hook.event == Event::PreToolUse && hook.project));
    assert_eq!(set.commands_for(Event::PreToolUse, "Bash"), ["from-user"]);
    assert_eq!(set.commands_for(Event::Stop, ""), ["from-config"]);
}

#[test]
fn a_digest_covers_event_matcher_and_handler_but_not_key_order() {
    let fixture = Fixture::new();
    let digest_of = |text: &str| {
        fixture.write("project/.claude/settings.json", text);
        let (set, _) = HookSet::load(&sources(&fixture)).unwrap();
        let entries: Vec<_> = set.entries().into_iter().filter(|e| e.project).collect();
        assert_eq!(entries.len(), 1, "{text}");
        entries[0].digest.clone()
    };
    let base = digest_of(&settings("check.sh", "Bash"));
    assert_eq!(base.len(), 64);
    let reordered = r#"{"hooks":{"PreToolUse":[{"hooks":[{"timeout":5,"command":"check.sh","type":"command"}],"matcher":"Bash"}]}}"#;
    assert_eq!(digest_of(reordered), base);
    assert_ne!(digest_of(&settings("check.sh --now", "Bash")), base);
    assert_ne!(digest_of(&settings("check.sh", "Bash|Edit")), base);
    let longer = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "check.sh", "timeout": 50}
    ]}]}});
    assert_ne!(digest_of(&longer.to_string()), base);
    let other_event = json!({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "check.sh", "timeout": 5}
    ]}]}});
    fixture.write("project/.claude/settings.json", &other_event.to_string());
    let (set, _) = HookSet::load(&sources(&fixture)).unwrap();
    let entry = set.entries().into_iter().find(|e| e.project).unwrap();
    assert_ne!(entry.digest, base);
}

#[test]
fn approvals_are_kept_per_project_and_let_the_hook_run() {
    let fixture = Fixture::new();
    fixture.write("project/.claude/settings.json", &settings("from-project", "Bash"));
    let store = fixture.dir.path().join("codecoder-home");
    let (mut set, _) = HookSet::load(&sources(&fixture)).unwrap();
    let digest = set.entries().into_iter().find(|e| e.project).unwrap().digest;
    assert!(approved_hooks(&store, &fixture.project()).is_empty());
    approve_hooks(&store, &fixture.project(), std::slice::from_ref(&digest)).unwrap();
    // Approving again keeps one entry; another project has none.
    approve_hooks(&store, &fixture.project(), std::slice::from_ref(&digest)).unwrap();
    let approved = approved_hooks(&store, &fixture.project());
    assert_eq!(approved, BTreeSet::from([digest]));
    assert!(approved_hooks(&store, fixture.dir.path()).is_empty());
    assert!(set.retain_approved(&approved).is_empty());
    assert_eq!(set.commands_for(Event::PreToolUse, "Bash"), ["from-project"]);
}

#[test]
fn a_broken_store_is_not_overwritten() {
    let fixture = Fixture::new();
    let store = fixture.dir.path().join("codecoder-home");
    fixture.write("codecoder-home/trusted-hooks.json", "{ not json");
    assert!(approved_hooks(&store, &fixture.project()).is_empty());
    assert!(approve_hooks(&store, &fixture.project(), &["x".to_owned()]).is_err());
    let text = fs_err::read_to_string(store.join("trusted-hooks.json")).unwrap();
    assert_eq!(text, "{ not json");
}
