//! Unit tests of `shell`.
