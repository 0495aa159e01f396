//! Unit tests of `jobs`.
