//! Loading hooks from every source: merge order, Claude settings files, errors and warnings.

use codecoder_hooks::{Error, Event, HookSet, HookSources};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::Fixture;

fn stop_hook(command: &str) -> String {
    json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}}).to_string()
}

fn sources(fixture: &Fixture, read_claude_settings: bool) -> HookSources {
    HookSources {
        project_dir: fixture.project(),
        home: Some(fixture.dir.path().join("home")),
        config_hooks: Some((
            json!({"Stop": [{"hooks": [{"type": "command", "command": "from-config-toml"}]}]}),
            fixture.dir.path().join("config.toml"),
        )),
        read_claude_settings,
        project_trusted: true,
    }
}

#[test]
fn every_source_is_merged_in_order() {
    let fixture = Fixture::new();
    // A bare `{Event: [...]}` is accepted in hooks.json.
    fixture.write(
        "project/.codecoder/hooks.json",
        &json!({"Stop": [{"hooks": [{"type": "command", "command": "from-hooks-json"}]}]})
            .to_string(),
    );
    fixture.write("project/.claude/settings.local.json", &stop_hook("from-settings-local"));
    // Other settings keys are ignored.
    let settings = json!({
        "permissions": {"allow": ["Bash(ls)"]},
        "model": "x",
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "from-settings"}]}]},
    });
    fixture.write("project/.claude/settings.json", &settings.to_string());
    fixture.write("home/.claude/settings.json", &stop_hook("from-home"));
    let (set, warnings) = HookSet::load(&sources(&fixture, true)).unwrap();
    assert_eq!(warnings, Vec::<String>::new());
    assert_eq!(
        set.commands_for(Event::Stop, ""),
        [
            "from-config-toml",
            "from-hooks-json",
            "from-settings-local",
            "from-settings",
            "from-home"
        ]
    );
    let summary = set.summary();
    assert!(
        summary.contains(&format!(
            "from-home (60s) from {}",
            fixture.dir.path().join("home/.claude/settings.json").display()
        )),
        "{summary}"
    );

    // Without Claude's settings only our own sources count.
    let (set, _) = HookSet::load(&sources(&fixture, false)).unwrap();
    assert_eq!(set.commands_for(Event::Stop, ""), ["from-config-toml", "from-hooks-json"]);
}

#[test]
fn the_first_source_of_a_duplicate_command_sets_its_timeout() {
    let fixture = Fixture::new();
    let with_timeout = json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "same", "timeout": 7}]}]}});
    fixture.write("project/.codecoder/hooks.json", &with_timeout.to_string());
    fixture.write("home/.claude/settings.json", &stop_hook("same"));
    let (set, _) = HookSet::load(&sources(&fixture, true)).unwrap();
    assert_eq!(set.commands_for(Event::Stop, ""), ["from-config-toml", "same"]);
    assert!(set.summary().contains("same (7s) from"), "{}", set.summary());
}

#[test]
fn missing_files_and_settings_without_hooks_are_fine() {
    let fixture = Fixture::new();
    fixture.write("project/.claude/settings.json", r#"{"model": "opus"}"#);
    let sources = HookSources { config_hooks: None, ..sources(&fixture, true) };
    let (set, warnings) = HookSet::load(&sources).unwrap();
    assert!(set.is_empty());
    assert_eq!(warnings, Vec::<String>::new());
}

#[test]
fn the_project_being_home_reads_the_settings_once() {
    let fixture = Fixture::new();
    fixture.write("project/.claude/settings.json", &stop_hook("once"));
    let sources = HookSources {
        home: Some(fixture.project()),
        config_hooks: None,
        ..sources(&fixture, true)
    };
    let (set, _) = HookSet::load(&sources).unwrap();
    assert_eq!(set.commands_for(Event::Stop, ""), ["once"]);
    assert_eq!(set.summary().lines().count(), 1, "{}", set.summary());
}

#[test]
fn bad_json_is_an_error_naming_file_and_line() {
    let fixture = Fixture::new();
    let path = fixture.write(
        "project/.claude/settings.local.json",
        "{\n  \"hooks\": {\n    \"Stop\": [,]\n  }\n}\n",
    );
    let err = HookSet::load(&sources(&fixture, true)).unwrap_err();
    match &err {
        Error::Json { path: at, line, column, .. } => {
            assert_eq!((at, *line, *column), (&path, 3, 14));
        }
        other => panic!("expected a JSON error, got {other:?}"),
    }
    let message = err.to_string();
    assert!(message.starts_with(&format!("{}:3:14: invalid JSON: ", path.display())), "{message}");
    assert!(!message.contains("at line"), "{message}");
}

#[test]
fn a_malformed_entry_names_the_file() {
    let fixture = Fixture::new();
    let path = fixture.write(
        "project/.codecoder/hooks.json",
        r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": "x"}]}}"#,
    );
    let message = HookSet::load(&sources(&fixture, false)).unwrap_err().to_string();
    assert!(
        message.starts_with(&format!(
            "{}: `hooks.PreToolUse[0].hooks`: expected a list",
            path.display()
        )),
        "{message}"
    );
}

#[test]
fn unknown_events_in_claude_settings_are_warnings() {
    let fixture = Fixture::new();
    let settings = json!({"hooks": {
        "FileChanged": [{"hooks": [{"type": "command", "command": "x"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "kept"}]}],
    }});
    let path = fixture.write("home/.claude/settings.json", &settings.to_string());
    let (set, warnings) =
        HookSet::load(&HookSources { config_hooks: None, ..sources(&fixture, true) }).unwrap();
    assert_eq!(set.commands_for(Event::Stop, ""), ["kept"]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with(&format!("{}: `hooks.FileChanged`", path.display())),
        "{warnings:?}"
    );
}

#[test]
fn an_untrusted_project_runs_none_of_its_own_hooks() {
    let fixture = Fixture::new();
    let hooks_json = fixture.write("project/.codecoder/hooks.json", &stop_hook("from-hooks-json"));
    let settings = fixture.write("project/.claude/settings.json", &stop_hook("from-settings"));
    // A settings file without hooks, even a broken one, is not worth a warning.
    fixture.write("project/.claude/settings.local.json", "{broken");
    fixture.write("home/.claude/settings.json", &stop_hook("from-home"));
    let sources = HookSources { project_trusted: false, ..sources(&fixture, true) };
    let (set, warnings) = HookSet::load(&sources).unwrap();
    assert_eq!(set.commands_for(Event::Stop, ""), ["from-config-toml", "from-home"]);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].starts_with(&format!("ignoring the hooks in {}", hooks_json.display())),
        "{warnings:?}"
    );
    assert!(
        warnings[1].starts_with(&format!("ignoring the hooks in {}", settings.display())),
        "{warnings:?}"
    );
    assert!(warnings[1].contains("codecoder trust"), "{warnings:?}");
}

#[test]
fn a_plugins_hooks_json_is_added_with_its_root_expanded() {
    let fixture = Fixture::new();
    let root = fixture.dir.path().join("plugin");
    fixture.write(
        "plugin/hooks/hooks.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "python3 ${CLAUDE_PLUGIN_ROOT}/hooks/check.py"}
        ]}]}})
        .to_string(),
    );
    let (mut set, mut warnings) =
        HookSet::load(&HookSources { config_hooks: None, ..sources(&fixture, false) }).unwrap();
    set.add_plugin(&root, &mut warnings).unwrap();
    // A plugin without hooks adds nothing.
    set.add_plugin(&fixture.dir.path().join("empty-plugin"), &mut warnings).unwrap();
    assert_eq!(warnings, Vec::<String>::new());
    assert_eq!(
        set.commands_for(Event::PreToolUse, "run_command"),
        [format!("python3 {}/hooks/check.py", root.display())]
    );
}

#[test]
fn a_malformed_plugin_hooks_file_adds_nothing() {
    let fixture = Fixture::new();
    fixture.write(
        "plugin/hooks/hooks.json",
        &json!({"Stop": [{"hooks": [{"type": "command", "command": "ok"}]}], "PreToolUse": 3})
            .to_string(),
    );
    let (mut set, mut warnings) =
        HookSet::load(&HookSources { config_hooks: None, ..sources(&fixture, false) }).unwrap();
    let err = set.add_plugin(&fixture.dir.path().join("plugin"), &mut warnings).unwrap_err();
    assert!(err.to_string().contains("hooks.json"), "{err}");
    assert!(set.is_empty());
}
