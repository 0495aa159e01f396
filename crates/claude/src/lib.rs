//! Claude Code's headless protocol.

pub mod args;
