//! The sandbox crate's integration tests: one binary, a module per subject.

mod escape;
