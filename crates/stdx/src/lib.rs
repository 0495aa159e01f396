//! Small helpers every codecoder crate may use: owned threads, an injectable clock, time
//! formatting, the codecoder home directory.
//!
//! Invariant: no dependency beyond std, so that every crate can use it for free.

pub mod clock;
pub mod thread;

pub use clock::{Clock, ManualClock, SystemClock, format_utc_ms};
pub use thread::{JoinOnDrop, spawn_named};

use std::path::PathBuf;

/// The codecoder home directory: `$CODECODER_HOME`, else `~/.codecoder`. `None` when neither
/// variable is set.
pub fn codecoder_home(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    if let Some(home) = env(codecoder_protocol::env::CODECODER_HOME).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(home));
    }
    env(codecoder_protocol::env::HOME)
        .filter(|v| !v.is_empty())
        .map(|home| PathBuf::from(home).join(".codecoder"))
}

#[cfg(test)]
mod tests;
