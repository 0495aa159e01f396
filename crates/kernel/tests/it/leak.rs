//! No thread leak: after `Shutdown` and join, the process has the threads it had before.
//!
//! The test holds the write side of `SERIAL`, so no other test's agent runs meanwhile; test
//! harness threads (named after their test, with `::`) are not counted.

use std::sync::{Arc, PoisonError};

use codecoder_kernel::{AgentTool, AllowAll};
use codecoder_protocol::AgentEventKind;
use crossbeam_channel::bounded;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::*;

fn kernel_threads() -> Vec<String> {
    fs_err::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|entry| fs_err::read_to_string(entry.unwrap().path().join("comm")).ok())
        .filter(|comm| !comm.contains("::"))
        .map(|comm| comm.trim().to_owned())
        .collect()
}

fn kernel_thread_count() -> usize {
    kernel_threads().len()
}

#[test]
fn threads_return_to_baseline_after_shutdown() {
    let _exclusive = SERIAL.write().unwrap_or_else(PoisonError::into_inner);
    let baseline = kernel_thread_count();
    let (pgids_tx, pgids) = bounded(4);
    let model = ScriptedModel::new(|request| {
        let first = request.history.len() == 1;
        match first_user_text(request).as_str() {
            "root" if first => Response::Events(calls(&[
                ("e1", "echo", json!({ "text": "a", "sleep_ms": 10 })),
                ("e2", "echo", json!({ "text": "b" })),
                ("a1", "agent", json!({ "task": "child" })),
                ("r1", "run", json!({ "argv": ["sh", "-c", "echo hi"] })),
            ])),
            "child" if first => {
                Response::Events(calls(&[("r2", "run", json!({ "argv": ["sleep", "100"] }))]))
            }
            _ => Response::Events(answer("done")),
        }
    });
    let harness = Harness::unserialized(
        model,
        vec![
            Arc::new(EchoTool),
            Arc::new(AgentTool::new(&[])),
            Arc::new(CommandTool { pgids: pgids_tx }),
        ],
        Arc::new(AllowAll),
        config(),
        |_| {},
        None,
    );
    harness.submit("root");
    // While the child's `sleep` runs, the count is above the baseline (the measure can fail).
    let _ = pgids.recv_timeout(PATIENCE).unwrap();
    assert!(kernel_thread_count() > baseline);
    harness.handle.cmd.send(codecoder_protocol::AgentCommand::Cancel).unwrap();
    let events = harness.turn();
    assert!(matches!(
        events.last().unwrap().kind,
        AgentEventKind::TurnDone { cancelled: true, .. }
    ));
    harness.shutdown();
    // A thread that was joined is gone; the kernel may still be reaping one that ended a moment
    // ago on a loaded machine, but a leaked thread stays: wait a little, then name them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while kernel_thread_count() > baseline && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(kernel_thread_count(), baseline, "threads left: {:?}", kernel_threads());
}
