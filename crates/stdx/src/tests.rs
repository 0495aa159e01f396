//! Tests of the helpers.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::{Clock, ManualClock, codecoder_home, format_utc_ms, spawn_named};

#[test]
fn formats_utc() {
    assert_eq!(format_utc_ms(0), "1970-01-01 00:00:00");
    assert_eq!(format_utc_ms(1_700_000_000_000), "2023-11-14 22:13:20");
    assert_eq!(format_utc_ms(951_782_400_000), "2000-02-29 00:00:00");
}

#[test]
fn manual_clock_advances() {
    let clock = ManualClock::new(10, 5);
    assert_eq!(clock.now_ms(), 10);
    assert_eq!(clock.now_ms(), 15);
}

#[test]
fn home_prefers_codecoder_home() {
    let env = |k: &str| match k {
        "CODECODER_HOME" => Some(OsString::from("/x")),
        "HOME" => Some(OsString::from("/home/u")),
        _ => None,
    };
    assert_eq!(codecoder_home(env), Some(PathBuf::from("/x")));
    let env = |k: &str| (k == "HOME").then(|| OsString::from("/home/u"));
    assert_eq!(codecoder_home(env), Some(PathBuf::from("/home/u/.codecoder")));
    assert_eq!(codecoder_home(|_| None), None);
}

#[test]
fn threads_are_named_and_panics_are_caught_on_join() {
    let handle =
        spawn_named("stdx-test", || std::thread::current().name().map(str::to_owned)).unwrap();
    assert_eq!(handle.join().unwrap().as_deref(), Some("stdx-test"));
    let handle = spawn_named("stdx-panic", || -> () { panic!("boom") }).unwrap();
    assert_eq!(handle.join().unwrap_err(), "boom");
}
