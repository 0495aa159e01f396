//! Tests of the command environment policy: each step alone, their order, and the glob.

use std::collections::BTreeMap;
use std::ffi::OsString;

use super::{CommandEnvironment, EnvPolicy, Inherit, command_environment, glob_match};

fn agent_env() -> Vec<(OsString, OsString)> {
    [
        ("HOME", "/home/me"),
        ("PATH", "/usr/bin:/bin"),
        ("PATTERN_X", "kept"),
        ("LANG", "C.UTF-8"),
        ("LC_ALL", "C"),
        ("TERM", "xterm"),
        ("EDITOR", "vi"),
        ("OPENAI_API_KEY", "sk-secret"),
        ("github_token", "ghp_secret"),
        ("Openai_Api_Key", "sk-mixed"),
        ("AWS_SECRET_ACCESS_KEY", "aws-secret"),
        ("DB_PASSWORD", "hunter2"),
        ("GOOGLE_APPLICATION_CREDENTIALS", "/creds.json"),
        ("MY_PAT", "pat-secret"),
        ("KEYBOARD", "dvorak"),
    ]
    .into_iter()
    .map(|(name, value)| (OsString::from(name), OsString::from(value)))
    .collect()
}

fn run(policy: &EnvPolicy) -> CommandEnvironment {
    command_environment(agent_env(), policy)
}

fn names(env: &CommandEnvironment) -> Vec<String> {
    env.vars.iter().map(|(name, _)| name.to_string_lossy().into_owned()).collect()
}

fn value(env: &CommandEnvironment, name: &str) -> Option<String> {
    env.vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.to_string_lossy().into_owned())
}

#[test]
fn the_default_drops_every_secret_pattern_case_insensitively() {
    let env = run(&EnvPolicy::standard());
    assert_eq!(names(&env), ["EDITOR", "HOME", "LANG", "LC_ALL", "PATH", "PATTERN_X", "TERM"]);
    assert_eq!(
        env.withheld,
        [
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "KEYBOARD",
            "MY_PAT",
            "OPENAI_API_KEY",
            "Openai_Api_Key",
            "github_token",
        ]
    );
    assert_eq!(value(&env, "PATH").as_deref(), Some("/usr/bin:/bin"));
}

#[test]
fn each_default_exclude_alone() {
    for (name, dropped) in [
        ("X_KEY_Y", true),
        ("apikey", true),
        ("client_secret", true),
        ("NPM_TOKEN", true),
        ("Password", true),
        ("MY_CREDENTIALS", true),
        ("GH_PAT", true),
        ("gh_pat", true),
        // `*_PAT` is a suffix: these stay.
        ("PATH", false),
        ("PATTERN_X", false),
        ("MY_PATH", false),
        ("PAT", false),
        ("EDITOR", false),
    ] {
        let env = command_environment(
            [(OsString::from(name), OsString::from("v"))],
            &EnvPolicy::standard(),
        );
        assert_eq!(env.vars.is_empty(), dropped, "{name}");
        assert_eq!(env.withheld.len(), usize::from(dropped), "{name}");
    }
}

#[test]
fn ignore_default_excludes_keeps_them() {
    let policy = EnvPolicy { ignore_default_excludes: true, ..EnvPolicy::standard() };
    let env = run(&policy);
    assert_eq!(env.vars.len(), agent_env().len());
    assert!(env.withheld.is_empty());
    assert_eq!(value(&env, "OPENAI_API_KEY").as_deref(), Some("sk-secret"));
}

#[test]
fn inherit_core_keeps_the_essentials_only() {
    let policy = EnvPolicy { inherit: Inherit::Core, ..EnvPolicy::standard() };
    let env = run(&policy);
    assert_eq!(names(&env), ["HOME", "LANG", "LC_ALL", "PATH", "TERM"]);
    assert!(env.withheld.contains(&"EDITOR".to_owned()));
    assert!(env.withheld.contains(&"OPENAI_API_KEY".to_owned()));
}

#[test]
fn inherit_none_keeps_nothing_but_what_is_set() {
    let mut set = BTreeMap::new();
    set.insert("ONLY".to_owned(), "this".to_owned());
    let policy = EnvPolicy { inherit: Inherit::None, set, ..EnvPolicy::standard() };
    let env = run(&policy);
    assert_eq!(env.vars, [(OsString::from("ONLY"), OsString::from("this"))]);
    assert_eq!(env.withheld.len(), agent_env().len());
}

#[test]
fn exclude_patterns_are_case_insensitive_globs() {
    let policy =
        EnvPolicy { exclude: vec!["lc_*".to_owned(), "?erm".to_owned()], ..EnvPolicy::standard() };
    let env = run(&policy);
    assert_eq!(names(&env), ["EDITOR", "HOME", "LANG", "PATH", "PATTERN_X"]);
}

#[test]
fn set_comes_after_the_excludes_and_replaces() {
    let mut set = BTreeMap::new();
    set.insert("GITHUB_TOKEN".to_owned(), "chosen".to_owned());
    set.insert("EDITOR".to_owned(), "nano".to_owned());
    let policy = EnvPolicy { set, exclude: vec!["*".to_owned()], ..EnvPolicy::standard() };
    let env = run(&policy);
    assert_eq!(
        env.vars,
        [
            (OsString::from("EDITOR"), OsString::from("nano")),
            (OsString::from("GITHUB_TOKEN"), OsString::from("chosen")),
        ]
    );
    // A replaced value is withheld too: the command does not see the agent's.
    assert!(env.withheld.contains(&"EDITOR".to_owned()));
}

#[test]
fn include_only_is_the_last_step_and_applies_to_set() {
    let mut set = BTreeMap::new();
    set.insert("EXTRA".to_owned(), "x".to_owned());
    set.insert("PATH_EXTRA".to_owned(), "y".to_owned());
    let policy = EnvPolicy {
        set,
        include_only: vec!["path*".to_owned(), "HOME".to_owned(), "*_api_key".to_owned()],
        ..EnvPolicy::standard()
    };
    let env = run(&policy);
    // The API keys were dropped before include_only could keep them.
    assert_eq!(names(&env), ["HOME", "PATH", "PATH_EXTRA"]);
}

#[test]
fn globs() {
    let check = |pattern: &str, text: &str| {
        glob_match(&pattern.chars().collect::<Vec<_>>(), &text.chars().collect::<Vec<_>>())
    };
    assert!(check("*", ""));
    assert!(check("*KEY*", "KEY"));
    assert!(check("*KEY*", "A_KEY_B"));
    assert!(check("a*b*c", "aXbYbZc"));
    assert!(check("?", "x"));
    assert!(!check("?", ""));
    assert!(!check("*_PAT", "PATH"));
    assert!(!check("*_PAT", "MY_PATH"));
    assert!(check("*_PAT", "A_PAT_PAT"));
    assert!(!check("abc", "abcd"));
    assert!(!check("a*c", "ab"));
}
