//! The crate's single integration test binary.
