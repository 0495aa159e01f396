//! Unit tests of `read`.
