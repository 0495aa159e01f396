//! Unit tests of `web`.
