//! Unit tests of `path`.
