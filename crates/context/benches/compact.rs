//! Benchmark: the harness side of compacting a 100k-token history (target: under 20 ms): the
//! check that compaction is due, fitting the summary request into the window (the history is
//! larger than the room for a request, so the oldest tool outputs are dropped), and building
//! the replacement history. The model's answer is not part of it.
//!
//! Two figures: "warm", the loop's real situation (the check before the step has counted every
//! message; counts are cached per message), and "cold", a fresh builder counting everything
//! once. Run with `cargo bench -p codecoder-context --bench compact`. Invariant: each run
//! checks its result (compaction due, the summary request trimmed and within the window).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use codecoder_context::{
    AgentsMdLoader, ContextBuilder, ContextCompactor, ContextConfig, Environment,
};
use codecoder_kernel::{Compactor, StepInfo};
use codecoder_protocol::{
    CallKind, CallView, Message, MessageItem, PlanView, Role, SessionId, StepId, ToolCall,
    ToolCallId, ToolResult, ToolResultStatus, TurnId, UserInput,
};
use codecoder_stdx::ManualClock;
use serde_json::json;

const WINDOW: u64 = 100_000;
const RUNS: usize = 11;

/// About 100k tokens: a user message, then 50 exchanges of a read_file call and a ~2k-token
/// result, with an update_plan every ten.
fn history() -> Vec<Message> {
    let mut history = vec![Message::user_text("Refactor the parser; keep the public API.")];
    for index in 0..50 {
        let (name, args) = if index % 10 == 0 {
            (
                "update_plan",
                json!({"plan": [{"step": format!("step {index}"), "status": "in_progress"}]}),
            )
        } else {
            ("read_file", json!({"path": format!("src/file{index}.rs")}))
        };
        let id = ToolCallId::from(format!("call_{index}").as_str());
        history.push(Message::new(
            Role::Assistant,
            vec![
                MessageItem::Text { text: format!("Looking at part {index}.") },
                MessageItem::ToolCall(ToolCall { id: id.clone(), name: name.to_owned(), args }),
            ],
        ));
        let output: String = (0..130)
            .map(|line| {
                format!("    let value_{line} = compute({index}, {line}); // part {index}\n")
            })
            .collect();
        history.push(Message::new(
            Role::Tool,
            vec![MessageItem::ToolResult(ToolResult::text(id, ToolResultStatus::Success, output))],
        ));
    }
    history
}

fn compactor(dir: &std::path::Path) -> ContextCompactor {
    let config = ContextConfig::standard(WINDOW, 8_000, None);
    let environment = Environment::new(dir, None);
    let builder =
        ContextBuilder::new(&config, &environment, &ManualClock::new(0, 0), &AgentsMdLoader::new())
            .unwrap();
    ContextCompactor::new(Arc::new(builder), "bench-model", Vec::new(), None, Arc::new(view))
}

/// The views of the history's calls: a plan update states a plan, a read reads its path.
fn view(name: &str, args: &serde_json::Value) -> CallView {
    match name {
        "update_plan" => CallView {
            kind: CallKind::Plan,
            plan: Some(PlanView::default()),
            ..CallView::default()
        },
        _ => CallView {
            kind: CallKind::Read,
            paths: args
                .get("path")
                .and_then(|path| path.as_str())
                .map(str::to_owned)
                .into_iter()
                .collect(),
            ..CallView::default()
        },
    }
}

/// One compaction's harness work; returns the replacement's size.
fn compact(compactor: &ContextCompactor, session_id: SessionId, history: &[Message]) -> usize {
    let info = StepInfo {
        session_id,
        turn: TurnId::new(1),
        step: StepId::new(2),
        history,
        depth: 0,
        reported: None,
        tools: &[],
    };
    assert!(compactor.should_compact(&info, &[UserInput::text("go on")]));
    let request = compactor.summary_request(session_id, history, None);
    let trimmed = request.trimmed.expect("trimmed to fit");
    assert!(compactor.history_tokens(&trimmed) < WINDOW - 8_000);
    let replacement = compactor.replacement(history, Some("Done: parts 0-49."), "", &[]);
    compactor.history_tokens(&replacement);
    replacement.len()
}

fn report(name: &str, mut times: Vec<Duration>) {
    times.sort();
    println!(
        "{name:<6} median {:>8.2?}  min {:>8.2?}  max {:>8.2?}",
        times[times.len() / 2],
        times[0],
        times[times.len() - 1]
    );
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let history = history();
    let session_id = SessionId::new();
    {
        let compactor = compactor(dir.path());
        let tokens = compactor.history_tokens(&history);
        println!("history: {} messages, ~{tokens} tokens", history.len());
    }
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    for _ in 0..RUNS {
        let compactor = compactor(dir.path());
        let started = Instant::now();
        compact(&compactor, session_id, &history);
        cold.push(started.elapsed());
        let started = Instant::now();
        compact(&compactor, session_id, &history);
        warm.push(started.elapsed());
    }
    report("warm", warm);
    report("cold", cold);
}
