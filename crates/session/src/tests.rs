//! Unit tests of the session crate.
