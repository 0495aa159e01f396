//! `async: true` command hooks: they run in a thread of their own while the session goes on,
//! and what they said joins the answers of the next event that runs hooks.
//!
//! An async hook cannot block or decide anything (the moment has passed): of its JSON output
//! only `systemMessage` and `hookSpecificOutput.additionalContext` are kept, the context
//! re-addressed to the event it joins (so it reaches the model where that event's context
//! does); an exit 2 is reported as a non-blocking error.
//!
//! Invariants: every thread is owned (joined when it is seen finished, or when the last clone
//! of the runner is dropped, at the latest after the hook's timeout); a background hook is not
//! killed by a turn's cancel token, only by its timeout.

use std::sync::Mutex;

use codecoder_stdx::JoinOnDrop;
use crossbeam_channel::{Receiver, Sender};
use serde_json::{Map, Value, json};

use crate::event::Event;
use crate::outcome::{Answer, Ran};

/// The running async hooks of a runner and the answers of those that finished.
#[derive(Debug)]
pub(crate) struct Background {
    done_tx: Sender<Ran>,
    done_rx: Receiver<Ran>,
    /// Shared by the runner's clones, which start hooks from several threads; held only to
    /// push or prune a handle, never across a channel operation.
    threads: Mutex<Vec<JoinOnDrop<()>>>,
}

impl Default for Background {
    fn default() -> Self {
        // Unbounded: a finished hook must never wait for the session to read it, and there
        // are at most as many answers as hooks started.
        let (done_tx, done_rx) = crossbeam_channel::unbounded();
        Background { done_tx, done_rx, threads: Mutex::new(Vec::new()) }
    }
}

impl Background {
    /// Starts `run` in a thread named `name`; its answer waits for [`Background::finished`].
    pub(crate) fn start(&self, name: String, run: impl FnOnce() -> Ran + Send + 'static) {
        let done_tx = self.done_tx.clone();
        let started = codecoder_stdx::spawn_named(name, move || {
            let _ = done_tx.send(run());
        });
        let thread = match started {
            Ok(thread) => thread,
            Err(err) => {
                let _ = self.done_tx.send(Ran {
                    hook: "an async hook".to_owned(),
                    answer: Answer::Failed(format!("an async hook could not start: {err}")),
                });
                return;
            }
        };
        let Ok(mut threads) = self.threads.lock() else { return };
        // Dropping a finished thread's handle joins it at once.
        threads.retain(|thread| !thread.is_finished());
        threads.push(thread);
    }

    /// The answers of the async hooks that finished since the last call, as they join `event`.
    pub(crate) fn finished(&self, event: Event) -> Vec<Ran> {
        self.done_rx.try_iter().filter_map(|ran| joined(ran, event)).collect()
    }
}

/// What of an async hook's answer joins `event`: its message and context, its failure.
fn joined(ran: Ran, event: Event) -> Option<Ran> {
    let hook = format!("{} (async)", ran.hook);
    let answer = match ran.answer {
        Answer::Json(json) => {
            let mut kept = Map::new();
            if let Some(message @ Value::String(_)) = json.get("systemMessage") {
                kept.insert("systemMessage".to_owned(), message.clone());
            }
            let context = json
                .get("hookSpecificOutput")
                .and_then(|specific| specific.get("additionalContext"))
                .filter(|context| context.is_string());
            if let Some(context) = context {
                kept.insert(
                    "hookSpecificOutput".to_owned(),
                    json!({"hookEventName": event.name(), "additionalContext": context}),
                );
            }
            if kept.is_empty() {
                return None;
            }
            Answer::Json(kept)
        }
        Answer::Text(_) => return None,
        Answer::Blocked(stderr) => Answer::Failed(format!(
            "{hook} exited with code 2, but an async hook cannot block: {stderr}"
        )),
        Answer::Failed(message) => Answer::Failed(message),
    };
    Some(Ran { hook, answer })
}
