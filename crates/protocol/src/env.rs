//! Names of every environment variable codecoder reads, in one place.
//!
//! Invariant: no other crate spells an environment variable name as a string literal.

/// The home directory of codecoder (sessions, blobs, config). Default: `~/.codecoder`.
pub const CODECODER_HOME: &str = "CODECODER_HOME";
/// The user's home directory, used to find the default `CODECODER_HOME`.
pub const HOME: &str = "HOME";
/// When set to `1`, tests rewrite checked-in expected files (schemas, goldens) instead of failing.
pub const UPDATE_EXPECT: &str = "UPDATE_EXPECT";
/// When set, slow tests run too.
pub const SLOW_TESTS: &str = "SLOW_TESTS";
/// Set and non-empty: draw without colours (the no-color.org convention).
pub const NO_COLOR: &str = "NO_COLOR";
