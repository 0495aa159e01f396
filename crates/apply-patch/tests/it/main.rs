//! The crate's single integration test binary: the conformance scenarios and the property tests.

mod fuzz;
mod scenarios;
