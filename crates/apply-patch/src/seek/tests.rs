//! Unit tests of seek.
