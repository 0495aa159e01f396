//! Crate-level unit tests.
