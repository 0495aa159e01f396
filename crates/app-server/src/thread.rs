//! One loaded thread's worker: it owns the session's agent, feeds its events to the thread's
//! translation (`translate.rs`) and sends what that gives: notifications straight to the writer,
//! approval requests and questions to the dispatcher (which owns the request ids and the
//! answers). A translation only: the turns run in the kernel's agent loop, as in every
//! front-end.
//!
//! Invariants: a turn's notifications go out in the agent's order; every turn that starts ends
//! with exactly one `Internal::TurnEnded`, which the dispatcher turns into `turn/completed`
//! after it settled the turn's open requests; when the worker ends, its agent is shut down and
//! joined before `Internal::Closed` is sent.

use codecoder_app::AgentHandle;
use codecoder_protocol::{AgentCommand, AskUserAnswer};
use crossbeam_channel::{Receiver, Sender, select};

use crate::translate::{Output, Translator};
use crate::types::{ServerRequest, Turn, TurnStatus, UserInput};
use crate::writer::WriterMsg;

/// Dispatcher → worker.
pub(crate) enum Control {
    /// Start a turn with this id and input.
    Start {
        /// The id the client was given.
        turn_id: String,
        /// The input for the agent.
        input: codecoder_protocol::UserInput,
        /// The input as the client sent it, for the `userMessage` item.
        items: Vec<UserInput>,
    },
    /// Add input to the running turn.
    Steer {
        /// The input for the agent.
        input: codecoder_protocol::UserInput,
        /// The input as the client sent it, for its `userMessage` item.
        items: Vec<UserInput>,
    },
    /// Compact the conversation now, as a turn with this id.
    Compact {
        /// The id the turn will have.
        turn_id: String,
    },
    /// Shut the agent down and end.
    Shutdown,
}

/// Worker → dispatcher.
pub(crate) enum Internal {
    /// Ask the client; answer through `reply`.
    Approval {
        /// The thread.
        thread_id: String,
        /// The request (its method and params).
        request: ServerRequest,
        /// Where the answer goes.
        reply: codecoder_protocol::Reply<codecoder_protocol::ApprovalDecision>,
    },
    /// Ask the client a question (if it takes questions); answer through `reply`.
    Question {
        /// The thread.
        thread_id: String,
        /// The `item/tool/requestUserInput` request, with one question.
        request: ServerRequest,
        /// The id of that question, the key of its answer.
        question_id: String,
        /// Where the answer goes.
        reply: codecoder_protocol::Reply<AskUserAnswer>,
    },
    /// A turn ended.
    TurnEnded {
        /// The thread.
        thread_id: String,
        /// The turn, with its final status.
        turn: Turn,
    },
    /// The agent stopped (shut down, or died): the thread is no longer loaded.
    Closed {
        /// The thread.
        thread_id: String,
        /// Which load of the thread the worker served.
        generation: u64,
    },
}

/// The worker of one loaded thread: its translation and where the translation goes.
pub(crate) struct Worker {
    translator: Translator,
    generation: u64,
    out: Sender<WriterMsg>,
    internal: Sender<Internal>,
}

impl Worker {
    pub(crate) fn new(
        thread_id: String,
        generation: u64,
        cwd: String,
        context_window: u64,
        out: Sender<WriterMsg>,
        internal: Sender<Internal>,
    ) -> Self {
        let translator = Translator::new(thread_id, cwd, context_window, "item_");
        Self { translator, generation, out, internal }
    }

    /// Runs until the dispatcher says `Shutdown` (or is gone) or the agent stops.
    pub(crate) fn run(mut self, agent: AgentHandle, control: &Receiver<Control>) {
        loop {
            select! {
                recv(control) -> message => match message {
                    Ok(Control::Start { turn_id, input, items }) => {
                        self.translator.begin_turn(turn_id, items);
                        if agent.cmd.send(AgentCommand::Submit(input)).is_err() {
                            self.translator
                                .end_turn(TurnStatus::Failed, Some("the agent stopped".into()));
                        }
                    }
                    Ok(Control::Steer { input, items }) => {
                        self.translator.user_message(items);
                        let _ = agent.cmd.send(AgentCommand::Steer(input));
                    }
                    Ok(Control::Compact { turn_id }) => {
                        self.translator.begin_turn(turn_id, Vec::new());
                        if agent.cmd.send(AgentCommand::Compact { focus: None }).is_err() {
                            self.translator
                                .end_turn(TurnStatus::Failed, Some("the agent stopped".into()));
                        }
                    }
                    Ok(Control::Shutdown) | Err(_) => break,
                },
                recv(agent.events) -> event => match event {
                    Ok(event) => self.translator.event(event),
                    Err(_) => {
                        if self.translator.in_turn() {
                            self.translator
                                .end_turn(TurnStatus::Failed, Some("the agent stopped".into()));
                        }
                        self.send();
                        break;
                    }
                },
            }
            self.send();
        }
        // Cancels whatever runs (its processes are killed), closes the log and joins the agent;
        // requests that arrive meanwhile are dropped unanswered, which cancels them.
        let _ = agent.shutdown();
        let closed = Internal::Closed {
            thread_id: self.thread_id().to_owned(),
            generation: self.generation,
        };
        let _ = self.internal.send(closed);
    }

    fn thread_id(&self) -> &str {
        self.translator.thread_id()
    }

    /// Sends what the translation gave: notifications to the writer, the rest to the
    /// dispatcher.
    fn send(&mut self) {
        for output in self.translator.take_output() {
            match output {
                Output::Notify(notification) => {
                    let _ = self.out.send(WriterMsg::Notification(notification));
                }
                Output::Internal(internal) => {
                    let _ = self.internal.send(internal);
                }
            }
        }
    }
}
