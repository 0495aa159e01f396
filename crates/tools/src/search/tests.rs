//! Unit tests of `search`.
