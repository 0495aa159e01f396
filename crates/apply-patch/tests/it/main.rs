//! The crate's single integration test binary: the conformance scenarios and the property tests.
// Test helpers outside `#[test]` functions unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod fuzz;
mod scenarios;
