//! Unit tests of `text`.
