//! Integration tests of `codecoder-session`, through its public API only.
//!
//! Every test works in its own temporary directory (never `$HOME`) and stamps records with a
//! `ManualClock`. Modules: `crash` (cut logs at many byte offsets, load and repair them),
//! `golden` (the checked-in JSONL files of the format), `writer`, `store` (resume, fork, find,
//! remove, projection), `lock` (one writer per log) and `index` (the SQLite cache).

// Helpers of a test binary are test code, but clippy's allow-unwrap-in-tests only covers `#[test]`
// functions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod crash;
mod golden;
mod index;
mod lock;
mod store;
mod writer;

use std::path::Path;
use std::sync::Arc;

use codecoder_protocol::{
    ApprovalDecision, Message, MessageItem, RecordBody, Role, StepId, StopReason, ToolCall,
    ToolCallId, ToolResult, ToolResultStatus, TurnId, TurnOutcome, Usage,
};
use codecoder_session::{FsyncPolicy, NewSession, SessionStore, WriterConfig};
use codecoder_stdx::ManualClock;

/// A fresh store in a temporary directory, kept alive by the returned guard.
pub(crate) fn temp_store() -> (tempfile::TempDir, SessionStore) {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    (home, store)
}

pub(crate) fn new_session(cwd: &str) -> NewSession {
    NewSession {
        cwd: cwd.to_owned(),
        model: "test-model".to_owned(),
        provider: "fake".to_owned(),
        config_hash: Some("cfg".to_owned()),
        parent: None,
    }
}

/// No fsync (tests need no durability), a small blob threshold, a clock from `start_ms`.
pub(crate) fn config(start_ms: u64) -> WriterConfig {
    WriterConfig {
        fsync: FsyncPolicy::Never,
        blob_threshold: 256,
        clock: Arc::new(ManualClock::new(start_ms, 1)),
    }
}

pub(crate) fn turn_start(turn: u32) -> RecordBody {
    RecordBody::TurnStart { turn: TurnId::new(turn) }
}

pub(crate) fn turn_end(turn: u32) -> RecordBody {
    RecordBody::TurnEnd {
        turn: TurnId::new(turn),
        outcome: TurnOutcome::Completed,
        usage: Usage::default(),
    }
}

pub(crate) fn step_start(turn: u32, step: u32) -> RecordBody {
    RecordBody::StepStart { turn: TurnId::new(turn), step: StepId::new(step) }
}

pub(crate) fn step_end(turn: u32, step: u32) -> RecordBody {
    RecordBody::StepEnd {
        turn: TurnId::new(turn),
        step: StepId::new(step),
        usage: Usage { input_tokens: 100, output_tokens: 20, ..Usage::default() },
        stop_reason: Some(StopReason::EndTurn),
    }
}

pub(crate) fn user(text: &str) -> RecordBody {
    RecordBody::UserMessage { message: Message::user_text(text) }
}

pub(crate) fn assistant(text: &str, call_ids: &[&str]) -> RecordBody {
    let mut items = vec![MessageItem::Text { text: text.to_owned() }];
    for id in call_ids {
        items.push(MessageItem::ToolCall(ToolCall {
            id: ToolCallId::new(*id),
            name: "shell".to_owned(),
            args: serde_json::json!({ "command": format!("echo {id}") }),
        }));
    }
    RecordBody::AssistantMessage { message: Message::new(Role::Assistant, items) }
}

pub(crate) fn started(call: &str) -> RecordBody {
    RecordBody::ToolStarted { call_id: ToolCallId::new(call) }
}

pub(crate) fn approval(call: &str) -> RecordBody {
    RecordBody::Approval {
        call_id: ToolCallId::new(call),
        permission_keys: vec!["shell:echo".to_owned()],
        decision: ApprovalDecision::AllowOnce,
        decided_by: "user".to_owned(),
        updated_args: None,
    }
}

pub(crate) fn result(call: &str, text: &str) -> RecordBody {
    RecordBody::ToolResult {
        result: ToolResult::text(ToolCallId::new(call), ToolResultStatus::Success, text),
        synthetic: None,
    }
}

pub(crate) fn file_len(path: &Path) -> u64 {
    fs_err::metadata(path).unwrap().len()
}

/// A small deterministic random number generator (SplitMix64), so runs are reproducible.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True with probability `percent`/100.
    pub(crate) fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}
