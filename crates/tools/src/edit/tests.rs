//! Unit tests of `edit`.
