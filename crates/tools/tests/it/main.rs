//! The tools' integration tests: each tool with its edge cases (run without a kernel through
//! `run_checked` and a `StandaloneEnv`, the same code path as the kernel's `execute`), a few
//! turns driven through the real kernel with a scripted model, and a fuzzer over the argument
//! handling of every tool. Hermetic: temp dirs and loopback only.
// Test helpers unwrap: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod escalate;
mod file_access;
mod files;
mod fuzz;
mod kernel;
mod misc;
mod search;
mod shell;
mod snapshot;
mod support;
mod view;
