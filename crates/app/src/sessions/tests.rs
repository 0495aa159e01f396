//! Unit tests of the session logs as front-ends see them: listing through the one index,
//! removal and forking keeping it current, validation, unknown names.

use codecoder_session::{NewSession, SessionStore, WriterConfig};

use crate::{SessionLog, Validation};

/// A new session log in `home`, run in `cwd`; returns its id.
fn create(home: &std::path::Path, cwd: &str) -> String {
    let new = NewSession {
        cwd: cwd.to_owned(),
        model: "m".to_owned(),
        provider: "p".to_owned(),
        config_hash: None,
        parent: None,
    };
    let writer = SessionStore::new(home).create(new, WriterConfig::standard()).unwrap();
    writer.session_id().to_string()
}

#[test]
fn listing_counts_what_the_limit_leaves_out_and_follows_removals_and_forks() {
    let home = tempfile::tempdir().unwrap();
    let first = create(home.path(), "/work/a");
    create(home.path(), "/work/a");
    create(home.path(), "/work/b");
    let mut warnings = Vec::new();

    let listed =
        crate::list_sessions(home.path(), Some("/work/a"), Some(1), &mut warnings).unwrap();
    assert_eq!((listed.sessions.len(), listed.total), (1, 2));
    assert_eq!(listed.dir, home.path().join("sessions"));
    let all = crate::list_sessions(home.path(), None, None, &mut warnings).unwrap();
    assert_eq!((all.sessions.len(), all.total), (3, 3));

    let forked = crate::fork_session(home.path(), &first, None, &mut warnings).unwrap();
    assert!(forked.path.as_ref().is_some_and(|path| path.is_file()));
    let all = crate::list_sessions(home.path(), None, None, &mut warnings).unwrap();
    assert!(all.sessions.iter().any(|s| s.id == forked.id.to_string()), "the fork is listed");

    let removed = crate::remove_session(home.path(), &first, &mut warnings).unwrap();
    assert!(!removed.exists());
    let all = crate::list_sessions(home.path(), None, None, &mut warnings).unwrap();
    assert!(all.sessions.iter().all(|s| s.id != first), "the removed log is gone from the index");
    assert_eq!(crate::reindex_sessions(home.path(), &mut warnings).unwrap(), 3);
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn a_log_is_found_by_prefix_validated_and_an_unknown_name_is_told_apart() {
    let home = tempfile::tempdir().unwrap();
    let id = create(home.path(), "/work");
    let log = SessionLog::open(home.path(), &id[..20]).unwrap();
    let json = log.to_json().unwrap();
    assert_eq!(json["sessionId"], serde_json::json!(id));
    assert_eq!(json["needsRepair"], serde_json::json!(false));
    match crate::validate_session(home.path(), &id).unwrap() {
        Validation::Valid(valid) => {
            assert_eq!(valid.record_count, 1);
            assert!(valid.repair_plan.is_empty() && valid.torn_tail.is_none());
        }
        Validation::Invalid(why) => panic!("invalid: {why}"),
    }
    let err = SessionLog::open(home.path(), "no-such-session").unwrap_err();
    assert!(err.is_unknown_session(), "{err}");
    assert!(!err.is_usage());
}
