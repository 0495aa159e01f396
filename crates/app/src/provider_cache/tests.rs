//! The provider cache: remembered entries survive into the next open, two writers keep both
//! entries, a corrupt file is ignored with a warning and replaced, and `consult` false reads
//! nothing.
#![allow(clippy::unwrap_used, clippy::disallowed_methods)]

use codecoder_providers::{ProviderMemory, ServerKey};

use super::{PROVIDER_CACHE, ProviderCache};

fn key<'a>(model: &'a str) -> ServerKey<'a> {
    ServerKey { provider: "local", base_url: "http://127.0.0.1:8080/v1", model }
}

#[test]
fn a_remembered_server_is_known_to_the_next_session_and_only_that_server() {
    let home = tempfile::tempdir().unwrap();
    let (cache, warning) = ProviderCache::open(home.path(), true);
    assert_eq!(warning, None, "no file is no warning");
    assert!(!cache.unstreamed_tools(&key("smollm2")));
    cache.remember_unstreamed_tools(&key("smollm2")).unwrap();
    assert!(cache.unstreamed_tools(&key("smollm2")), "known at once in this session");
    assert_eq!(cache.location(), home.path().join(PROVIDER_CACHE).display().to_string());

    let (next, _) = ProviderCache::open(home.path(), true);
    assert!(next.unstreamed_tools(&key("smollm2")));
    assert!(!next.unstreamed_tools(&key("other")), "another model is another entry");
    let moved = ServerKey { base_url: "http://127.0.0.1:9090/v1", ..key("smollm2") };
    assert!(!next.unstreamed_tools(&moved), "another base URL is another server");

    let (forced, _) = ProviderCache::open(home.path(), false);
    assert!(!forced.unstreamed_tools(&key("smollm2")), "stream = true tries streaming first");

    let text = std::fs::read_to_string(home.path().join(PROVIDER_CACHE)).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        value,
        serde_json::json!({"unstreamed_tools": [
            {"provider": "local", "base_url": "http://127.0.0.1:8080/v1", "model": "smollm2"}
        ]})
    );
    assert_eq!(
        ProviderCache::describe(home.path()),
        ["local (http://127.0.0.1:8080/v1), model smollm2"]
    );
}

#[test]
fn two_sessions_writing_keep_both_entries() {
    let home = tempfile::tempdir().unwrap();
    let (first, _) = ProviderCache::open(home.path(), true);
    let (second, _) = ProviderCache::open(home.path(), true);
    std::thread::scope(|scope| {
        scope.spawn(|| first.remember_unstreamed_tools(&key("a")).unwrap());
        scope.spawn(|| second.remember_unstreamed_tools(&key("b")).unwrap());
    });
    first.remember_unstreamed_tools(&key("a")).unwrap();
    let (next, warning) = ProviderCache::open(home.path(), true);
    assert_eq!(warning, None);
    assert!(next.unstreamed_tools(&key("a")) && next.unstreamed_tools(&key("b")));
    assert_eq!(ProviderCache::describe(home.path()).len(), 2, "no duplicate entry");
}

#[test]
fn a_corrupt_cache_is_ignored_with_a_warning_and_replaced() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join(PROVIDER_CACHE);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "{\"unstreamed_tools\": [ not json").unwrap();
    let (cache, warning) = ProviderCache::open(home.path(), true);
    let warning = warning.unwrap();
    assert!(
        warning.contains(&path.display().to_string()) && warning.contains("deleting it is safe"),
        "{warning}"
    );
    assert!(!cache.unstreamed_tools(&key("smollm2")));
    cache.remember_unstreamed_tools(&key("smollm2")).unwrap();
    let (next, warning) = ProviderCache::open(home.path(), true);
    assert_eq!(warning, None, "the next write replaced it");
    assert!(next.unstreamed_tools(&key("smollm2")));
}
