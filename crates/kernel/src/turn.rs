//! The AgentLoop: one thread owns the session writer and runs turns (design.md "A turn").
//!
//! Idle, the loop blocks on `cmd`. A turn: `turn_start`, then steps until the model stops asking
//! for tools and no steered input waits. A step: queued input is injected (`user_message`, in
//! arrival order) after the pre-step interceptors ran on it, `step_start`, the request is built
//! from the log's projection, the stream is read (deltas → events), the assistant message is
//! logged, tool calls run (`exec.rs`), `step_end` with the step's usage. Then `turn_end` and
//! `TurnDone`. Reading the stream is `stream.rs`; compaction, a step of its own, `compact.rs`.
//! A step whose request the server refuses as larger than the window (`ModelError`'s
//! `context_overflow`) ends without an answer; the turn compacts and sends it again, once per
//! turn, when the history holds something besides user messages.
//!
//! Each piece of state has one owner: the session's (writer, queued input, grants, tool
//! workers) is `AgentLoop`, for the thread's life; the turn's (approved calls, failures, usage,
//! final text, retired streams) is `TurnState`, made by `run_turn` and dropped once `TurnDone` is
//! out; the step's (usage, an `end_turn` request, quiet) is `StepState`, held by its turn and
//! made anew for each step and each retry. What runs a turn borrows the turn's state.
//!
//! Invariants:
//! - Model-visible ⟺ logged: the request is built from `writer.history()` only (shared
//!   through `shared_history`, which mirrors it message for message), after every record of the
//!   previous step was appended; what else it shows the model (system prompt sections, tool
//!   schemas, model and body parameters) is in the newest `context` record, appended before the
//!   request is sent whenever it changed.
//! - Whatever stops a turn (completion, cancel, failure), `close_turn` appends what closes the
//!   open step and turn (synthetic results for pending calls first), so the log validates, and
//!   `TurnDone` is sent exactly once per `TurnStarted`.
//! - While a turn runs, every blocking wait also selects on `cmd`: Cancel is seen at once; Submit
//!   and Steer are queued, never lost: injected at the next step boundary, or, when the turn is
//!   cancelled first, starting the next turn. Only `Shutdown` drops what is still queued.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use codecoder_protocol::{
    AgentCommand, AgentEvent, AgentEventKind, AgentStatus, ContentItem, ContextRecord, Message,
    MessageId, MessageItem, PromptSection, RecordBody, RewindRecord, Role, StepId, StopReason,
    ToolCall, ToolCallId, ToolResult, TurnId, TurnOutcome, Usage, UserInput, join_sections,
};
use codecoder_session::{CloseReason, SessionWriter, closing_records};
use crossbeam_channel::{Receiver, RecvError, Sender, TryRecvError, select};

use crate::agent::{
    AgentEnv, BUDGET_REACHED, ReportedInput, STEP_LIMIT_REACHED, StepInfo, StepVerdict,
};
use crate::cancel::CancelToken;
use crate::compact::CompactTrigger;
use crate::exec::StepCall;
use crate::hooks::{HookReport, HookScope, Hooks};
use crate::model::{ModelRequest, ResponseStream, ToolSpec};
use crate::pool::WorkerPool;
use crate::prompt::PromptInput;
use crate::stream::{Assembly, StreamEnd};

/// What a finished turn reports to whoever waits for it (the `agent` tool of a parent).
#[derive(Debug, Clone)]
pub(crate) struct TurnSummary {
    pub(crate) outcome: TurnOutcome,
    pub(crate) final_text: String,
}

/// Why a turn stops before completing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stop {
    Cancelled,
    Failed(String),
}

impl Stop {
    fn message(self) -> String {
        match self {
            Self::Cancelled => "cancelled".to_owned(),
            Self::Failed(message) => message,
        }
    }
}

/// What a completed step asks of the turn.
struct StepOutcome {
    wants_more: bool,
    /// The server refused the step's request as larger than the window; the step ended
    /// without an answer and the turn compacts before sending it again.
    overflowed: bool,
    usage: Usage,
    text: String,
}

/// What a turn does.
enum TurnWork {
    /// Steps until the model is done, starting with this input.
    Input(UserInput),
    /// A compaction the person asked for, with its focus.
    Compact(Option<String>),
}

/// How often a step whose stream broke is run again before the turn fails.
const MAX_STREAM_RETRIES: u32 = 2;

/// The session: what lives as long as the loop's thread. The loop owns it; a turn's and a
/// step's state are `TurnState` and `StepState`, owned by the turn being run and passed down by
/// reference to what needs them.
pub(crate) struct AgentLoop {
    pub(crate) env: Arc<AgentEnv>,
    pub(crate) writer: SessionWriter,
    pub(crate) cmd: Receiver<AgentCommand>,
    done: Option<Sender<TurnSummary>>,
    specs: Vec<ToolSpec>,
    /// The registry's generation `specs` was taken at (late tools join between steps).
    tools_generation: usize,
    pub(crate) queued: VecDeque<UserInput>,
    /// The session's grants: permission keys the person allowed "for this session" (the
    /// calls' keys and the escalations' `escalate:` keys).
    pub(crate) grants: HashSet<String>,
    pub(crate) shutdown: bool,
    /// Whether the SessionStart hooks ran (on the first turn of this process).
    session_started: bool,
    /// The tool workers; joined at shutdown.
    pub(crate) pool: WorkerPool,
    /// The last request's reported input tokens, its history length and its last message id
    /// (to check that the history still starts with what that request held).
    reported_input: Option<(ReportedInput, Option<MessageId>)>,
    /// A compaction the person asked for during a turn, run at the next step boundary.
    pending_compact: Option<Option<String>>,
    /// The projection as shared messages, for requests; kept in step with `writer.history()`.
    pub(crate) shared_history: Vec<Arc<Message>>,
    /// What the model cost in this process, over every turn (for `AgentConfig::budget`).
    spent: Usage,
    /// The plan as the last successful plan update stated it (TaskCreated and TaskCompleted
    /// hooks fire on what changed).
    pub(crate) plan: Vec<codecoder_protocol::PlanStep>,
    /// How the front-end began and ends the session (the SessionStart source, the SessionEnd
    /// reason); a subagent's is its own default and unused.
    lifecycle: Arc<crate::agent::Lifecycle>,
}

/// The turn being run, from its `turn_start` to its `turn_end`; `run_turn` owns it.
pub(crate) struct TurnState {
    pub(crate) id: TurnId,
    /// Calls of this turn the person was asked about and allowed.
    pub(crate) approved_calls: HashSet<ToolCallId>,
    /// Failed calls of this turn by (name, arguments), for the repeated-failure nudge.
    pub(crate) failures: HashMap<(String, String), u32>,
    /// Aborted model streams whose threads are joined once the turn's `TurnDone` is sent (when
    /// the turn state is dropped).
    pub(crate) retired: Vec<ResponseStream>,
    /// The usage of the turn's steps so far.
    pub(crate) usage: Usage,
    /// The text of the last step that had any: the turn's final message.
    final_text: String,
    /// The step being run (or the last one run).
    pub(crate) step: StepState,
    /// Whether a context overflow already made this turn compact: a second one fails the turn.
    overflow_compacted: bool,
}

impl TurnState {
    fn new(id: TurnId) -> Self {
        Self {
            id,
            approved_calls: HashSet::new(),
            failures: HashMap::new(),
            retired: Vec::new(),
            usage: Usage::default(),
            final_text: String::new(),
            step: StepState::new(StepId::new(0), false),
            overflow_compacted: false,
        }
    }
}

/// The step being run, from its `step_start` to its `step_end`; its turn owns it.
pub(crate) struct StepState {
    pub(crate) id: StepId,
    pub(crate) usage: Usage,
    /// The provider reported `usage` (not an adapter's estimate).
    pub(crate) usage_reported: bool,
    /// A call of this step asked to end the turn once its results are logged
    /// (`ToolContext::end_turn`).
    pub(crate) ends_turn: bool,
    /// Deltas are not sent to the client (the summary step of a compaction).
    pub(crate) quiet: bool,
}

impl StepState {
    pub(crate) fn new(id: StepId, quiet: bool) -> Self {
        Self { id, usage: Usage::default(), usage_reported: false, ends_turn: false, quiet }
    }
}

impl AgentLoop {
    pub(crate) fn new(
        env: Arc<AgentEnv>,
        writer: SessionWriter,
        cmd: Receiver<AgentCommand>,
        done: Option<Sender<TurnSummary>>,
    ) -> Self {
        let specs = env.deps.tools.specs();
        let tools_generation = env.deps.tools.generation();
        Self {
            env,
            writer,
            cmd,
            done,
            specs,
            tools_generation,
            queued: VecDeque::new(),
            grants: HashSet::new(),
            session_started: false,
            shutdown: false,
            pool: WorkerPool::new(),
            reported_input: None,
            pending_compact: None,
            shared_history: Vec::new(),
            spent: Usage::default(),
            plan: Vec::new(),
            lifecycle: Arc::default(),
        }
    }

    /// This loop, reading its SessionStart source and SessionEnd reason from `lifecycle`.
    pub(crate) fn with_lifecycle(self, lifecycle: Arc<crate::agent::Lifecycle>) -> Self {
        Self { lifecycle, ..self }
    }

    pub(crate) fn emit(&self, kind: AgentEventKind) {
        // A client that dropped its receiver is gone; `cmd` disconnects too and ends the loop.
        let _ = self.env.events.send(AgentEvent { source: self.env.source.clone(), kind });
    }

    /// Appends a record; a refused or failed write fails the turn.
    pub(crate) fn append(&mut self, body: RecordBody) -> Result<u64, Stop> {
        self.writer.append(body).map_err(|err| Stop::Failed(format!("session log: {err}")))
    }

    /// Handles a command that arrived mid-turn. `Some` when the turn must stop.
    pub(crate) fn handle_cmd(&mut self, cmd: Result<AgentCommand, RecvError>) -> Option<Stop> {
        match cmd {
            Ok(AgentCommand::Submit(input) | AgentCommand::Steer(input)) => {
                self.queued.push_back(input);
                None
            }
            Ok(AgentCommand::Compact { focus }) => {
                self.pending_compact = Some(focus);
                None
            }
            Ok(AgentCommand::Rewind(_)) => {
                let message = "a rewind cannot be logged while a turn runs; ignored".to_owned();
                self.emit(AgentEventKind::Warning { message });
                None
            }
            Ok(AgentCommand::Cancel) => Some(Stop::Cancelled),
            Ok(AgentCommand::Shutdown) | Err(RecvError) => {
                self.shutdown = true;
                Some(Stop::Cancelled)
            }
        }
    }

    /// Handles every command already queued, without blocking.
    pub(crate) fn poll_cmd(&mut self) -> Result<(), Stop> {
        loop {
            let cmd = match self.cmd.try_recv() {
                Ok(cmd) => Ok(cmd),
                Err(TryRecvError::Empty) => return Ok(()),
                Err(TryRecvError::Disconnected) => Err(RecvError),
            };
            if let Some(stop) = self.handle_cmd(cmd) {
                return Err(stop);
            }
        }
    }

    /// Runs until `Shutdown` (or until `cmd` disconnects), then closes the log and joins.
    pub(crate) fn run(mut self) {
        while !self.shutdown {
            if let Some(focus) = self.pending_compact.take() {
                self.run_turn(TurnWork::Compact(focus));
                continue;
            }
            let input = match self.queued.pop_front() {
                Some(input) => input,
                None => match self.cmd.recv() {
                    Ok(AgentCommand::Submit(input) | AgentCommand::Steer(input)) => input,
                    Ok(AgentCommand::Compact { focus }) => {
                        self.run_turn(TurnWork::Compact(focus));
                        continue;
                    }
                    Ok(AgentCommand::Rewind(rewind)) => {
                        self.rewind(rewind);
                        continue;
                    }
                    // Nothing runs: nothing to cancel.
                    Ok(AgentCommand::Cancel) => continue,
                    Ok(AgentCommand::Shutdown) | Err(RecvError) => break,
                },
            };
            self.run_turn(TurnWork::Input(input));
        }
        // A subagent's log is finished when it stops. The root's stays open to `exec resume`
        // and friends: `session_end` admits nothing after it, so the root never writes it.
        if self.done.is_some()
            && let Err(stop) = self.append(RecordBody::SessionEnd)
        {
            self.emit(AgentEventKind::Warning { message: stop.message() });
        }
        if let Err(err) = self.writer.sync() {
            self.emit(AgentEventKind::Warning { message: format!("session log: {err}") });
        }
        if self.done.is_none() {
            let report = self.env.deps.hooks.session_end(self.lifecycle.end_reason());
            // Nothing is left to stop.
            let _ = self.show_hook_report("SessionEnd", report);
        }
        // Joins every tool worker, including one still running a tool that ignored a cancel.
        self.pool = WorkerPool::new();
        // A subagent's shutdown is its parent's business, not the client's.
        if self.done.is_none() {
            self.emit(AgentEventKind::ShutdownComplete);
        }
    }

    fn run_turn(&mut self, work: TurnWork) {
        let turn = TurnId::new(self.writer.trace().last_turn()).next();
        if let Err(stop) = self.append(RecordBody::TurnStart { turn }) {
            // Nothing was opened: the turn never started, and the client hears why.
            let message = stop.message();
            self.emit(AgentEventKind::Warning { message: message.clone() });
            if let Some(done) = &self.done {
                let _ = done.try_send(TurnSummary {
                    outcome: TurnOutcome::Failed { message },
                    final_text: String::new(),
                });
            }
            return;
        }
        if self.env.depth == 0
            && let Some(checkpoints) = &self.env.deps.checkpoints
        {
            checkpoints.turn_started(turn);
        }
        self.emit(AgentEventKind::TurnStarted { turn });
        let mut turn_state = TurnState::new(turn);
        let body = match work {
            TurnWork::Input(input) => {
                self.queued.push_front(input);
                self.turn_body(&mut turn_state)
            }
            TurnWork::Compact(focus) => self.compact(
                &mut turn_state,
                StepId::new(1),
                CompactTrigger::Manual,
                focus.as_deref(),
            ),
        };
        let outcome = match body {
            Ok(()) => TurnOutcome::Completed,
            Err(Stop::Cancelled) => TurnOutcome::Cancelled,
            Err(Stop::Failed(message)) => TurnOutcome::Failed { message },
        };
        if let TurnOutcome::Failed { message } = &outcome
            && self.env.depth == 0
            && let Some(error) = model_error_class(message)
        {
            let last: &str = &turn_state.final_text;
            // The turn ends whatever the hooks say; a cancel meanwhile only cuts them short.
            if let Ok(report) =
                self.call_hooks(|hooks, scope| hooks.stop_failure(scope, error, message, last))
            {
                let _ = self.show_hook_report("StopFailure", report);
            }
        }
        self.close_turn(&turn_state, &outcome);
        let cancelled = outcome == TurnOutcome::Cancelled;
        let usage = turn_state.usage;
        self.emit(AgentEventKind::TurnDone { turn, cancelled, outcome: outcome.clone(), usage });
        self.emit(AgentEventKind::Status(AgentStatus::Idle));
        let final_text = std::mem::take(&mut turn_state.final_text);
        // Joins the turn's retired streams, now that `TurnDone` is out.
        drop(turn_state);
        if let Some(done) = &self.done {
            let _ = done.try_send(TurnSummary { outcome, final_text });
        }
    }

    /// Logs a rewind a front-end carried out; the history of the next request follows it.
    fn rewind(&mut self, rewind: RewindRecord) {
        match self.append(RecordBody::Rewind(rewind)) {
            Ok(_) => self.sync_shared_history(),
            Err(stop) => self.emit(AgentEventKind::Warning { message: stop.message() }),
        }
    }

    /// Appends what closes the open step and turn: synthetic results for pending calls, the
    /// step's end with its usage so far, the turn's end with its outcome and usage.
    fn close_turn(&mut self, turn_state: &TurnState, outcome: &TurnOutcome) {
        let records = closing_records(self.writer.trace(), CloseReason::Cancel);
        for mut record in records {
            match &mut record {
                RecordBody::StepEnd { usage: step_usage, .. } => {
                    *step_usage = turn_state.step.usage;
                }
                RecordBody::TurnEnd { turn, outcome: end_outcome, usage: turn_usage } => {
                    *end_outcome = outcome.clone();
                    *turn_usage = turn_state.usage;
                    let checkpoint = match &self.env.deps.checkpoints {
                        Some(checkpoints) if self.env.depth == 0 => checkpoints.turn_ended(*turn),
                        Some(_) | None => None,
                    };
                    if let Some(checkpoint) = checkpoint
                        && let Err(stop) = self.append(RecordBody::Checkpoint(checkpoint))
                    {
                        self.emit(AgentEventKind::Warning { message: stop.message() });
                    }
                }
                _ => {}
            }
            if let Err(stop) = self.append(record) {
                self.emit(AgentEventKind::Warning { message: stop.message() });
                return;
            }
        }
    }

    fn turn_body(&mut self, turn_state: &mut TurnState) -> Result<(), Stop> {
        let turn = turn_state.id;
        let mut step = StepId::new(0);
        // Consecutive Stop-hook blocks; the turn ends anyway after `MAX_STOP_BLOCKS`.
        let mut stop_blocks = 0;
        let mut continuation: Option<UserInput> = None;
        // Summary steps of compactions, and steps the server refused as too large, do not count
        // against the step limit.
        let mut compaction_steps = 0;
        // The last step overflowed the window: the next one compacts first.
        let mut overflowed = false;
        loop {
            self.poll_cmd()?;
            step = step.next();
            if let Some(focus) = self.pending_compact.take() {
                self.compact(turn_state, step, CompactTrigger::Manual, focus.as_deref())?;
                compaction_steps += 1;
                step = step.next();
            }
            let max_steps = self.env.config.max_steps;
            if step.get() - compaction_steps > max_steps {
                return Err(Stop::Failed(format!("{STEP_LIMIT_REACHED} of {max_steps} steps")));
            }
            let mut inputs = self.submitted_inputs(step)?;
            inputs.extend(continuation.take());
            // Tools that joined since the last step are offered from this one on, and the window
            // checks below count them.
            self.refresh_tools()?;
            if std::mem::take(&mut overflowed) || self.needs_compaction(turn, step, &inputs) {
                self.compact(turn_state, step, CompactTrigger::Auto, None)?;
                compaction_steps += 1;
                step = step.next();
            }
            let info = StepInfo {
                session_id: self.writer.session_id(),
                turn,
                step,
                history: self.writer.history(),
                depth: self.env.depth,
                reported: self.reported_input(),
                tools: &self.specs,
            };
            for interceptor in &self.env.deps.interceptors {
                if let StepVerdict::Reject { message } = interceptor.before_step(&info, &mut inputs)
                {
                    return Err(Stop::Failed(message));
                }
            }
            for input in inputs {
                let message =
                    Message::new(Role::User, input.content.into_iter().map(user_item).collect());
                self.append(RecordBody::UserMessage { message })?;
            }
            self.append(RecordBody::StepStart { turn, step })?;
            self.emit(AgentEventKind::StepStarted { turn, step });
            self.emit(AgentEventKind::Status(AgentStatus::Thinking));
            let outcome = self.run_step(turn_state, step)?;
            if outcome.overflowed {
                compaction_steps += 1;
                overflowed = true;
            }
            turn_state.usage += outcome.usage;
            self.spent += outcome.usage;
            self.emit(AgentEventKind::Usage { turn, turn_total: turn_state.usage });
            if let Some(budget) = &self.env.config.budget
                && outcome.wants_more
                && budget.prices.cost(&self.spent) >= budget.limit_usd
            {
                return Err(Stop::Failed(format!(
                    "{BUDGET_REACHED} of ${} (spent ${:.4})",
                    budget.limit_usd,
                    budget.prices.cost(&self.spent)
                )));
            }
            if !outcome.text.is_empty() {
                turn_state.final_text = outcome.text;
            }
            self.poll_cmd()?;
            if outcome.wants_more && !outcome.overflowed {
                continuation = self.post_tool_batch()?;
            }
            if !outcome.wants_more && self.queued.is_empty() {
                if self.env.depth == 0 && stop_blocks < MAX_STOP_BLOCKS {
                    let active = stop_blocks > 0;
                    let last: &str = &turn_state.final_text;
                    let verdict =
                        self.call_hooks(|hooks, scope| hooks.stop(scope, active, last))?;
                    // `continue: false` wins over a block; the turn was ending anyway.
                    if let Some(reason) = self.show_hook_report("Stop", verdict.report) {
                        self.emit(AgentEventKind::HookMessage {
                            event: "Stop".to_owned(),
                            message: format!("a Stop hook stopped the turn: {reason}"),
                        });
                        return Ok(());
                    }
                    if let Some(instruction) = verdict.instruction {
                        stop_blocks += 1;
                        continuation = Some(UserInput::text(format!(
                            "<stop-hook>\nA Stop hook kept the turn going: {instruction}\n</stop-hook>"
                        )));
                        continue;
                    }
                }
                return Ok(());
            }
        }
    }

    /// The inputs queued for this step, after the UserPromptSubmit hooks (a blocked prompt is
    /// dropped with a warning; a turn whose every prompt is blocked fails) and, on the first
    /// turn of the root agent, the SessionStart hooks' context.
    fn submitted_inputs(&mut self, step: StepId) -> Result<Vec<UserInput>, Stop> {
        let queued: Vec<UserInput> = self.queued.drain(..).collect();
        let mut inputs = Vec::with_capacity(queued.len());
        let mut blocked = None;
        for mut input in queued {
            let prompt = ContentItem::joined_text(&input.content);
            let verdict =
                self.call_hooks(|hooks, scope| hooks.user_prompt_submit(scope, &prompt))?;
            if let Some(reason) = self.show_hook_report("UserPromptSubmit", verdict.report) {
                return Err(hook_stop("UserPromptSubmit", &reason));
            }
            if let Some(reason) = verdict.blocked {
                self.emit(AgentEventKind::Warning {
                    message: format!("a UserPromptSubmit hook blocked the prompt: {reason}"),
                });
                blocked = Some(reason);
                continue;
            }
            input.content.extend(verdict.context.into_iter().map(|text| ContentItem::Text {
                text: format!("<hook-context>\n{text}\n</hook-context>"),
            }));
            inputs.push(input);
        }
        if step.get() == 1
            && inputs.is_empty()
            && let Some(reason) = blocked
        {
            return Err(Stop::Failed(format!(
                "a UserPromptSubmit hook blocked the prompt: {reason}"
            )));
        }
        if !self.session_started && self.env.depth == 0 {
            self.session_started = true;
            let source = if self.writer.history().is_empty() {
                self.lifecycle.start_source()
            } else {
                "resume"
            };
            let started = self.call_hooks(|hooks, scope| hooks.session_start(scope, source))?;
            if let Some(reason) = self.show_hook_report("SessionStart", started.report) {
                return Err(hook_stop("SessionStart", &reason));
            }
            if let Some(first) = inputs.first_mut() {
                first.content.extend(started.context.into_iter().map(|text| ContentItem::Text {
                    text: format!("<session-start-hook>\n{text}\n</session-start-hook>"),
                }));
            }
        }
        Ok(inputs)
    }

    /// Whether the root agent's next request (the history and `inputs`) passes the
    /// auto-compaction limit.
    fn needs_compaction(&self, turn: TurnId, step: StepId, inputs: &[UserInput]) -> bool {
        let Some(compactor) = &self.env.deps.compactor else {
            return false;
        };
        if self.env.depth != 0 || self.writer.history().is_empty() {
            return false;
        }
        let info = StepInfo {
            session_id: self.writer.session_id(),
            turn,
            step,
            history: self.writer.history(),
            depth: self.env.depth,
            reported: self.reported_input(),
            tools: &self.specs,
        };
        compactor.should_compact(&info, inputs)
    }

    /// The last request's reported input, while the history still starts with what that
    /// request held.
    fn reported_input(&self) -> Option<ReportedInput> {
        let (reported, last_id) = self.reported_input?;
        let history = self.writer.history();
        let holds = match (reported.history_len.checked_sub(1), last_id) {
            (None, None) => true,
            (Some(last), Some(id)) => history.get(last).is_some_and(|m| m.id == id),
            (None, Some(_)) | (Some(_), None) => false,
        };
        holds.then_some(reported)
    }

    /// Runs the PostToolBatch hooks on the calls of the step that just ran and their logged
    /// results. A blocking hook stops the turn before the next request; the hooks' context is
    /// the next step's input. Hooks that run inline (a session's own: skills, plan mode) do not
    /// listen to this event, so the batch is copied out of the history only for hooks that run
    /// processes.
    fn post_tool_batch(&mut self) -> Result<Option<UserInput>, Stop> {
        if self.env.deps.hooks.runs_inline() {
            return Ok(None);
        }
        let batch = last_batch(self.writer.history());
        if batch.is_empty() {
            return Ok(None);
        }
        let post = self.call_hooks(|hooks, scope| hooks.post_tool_batch(scope, &batch))?;
        if let Some(reason) = self.show_hook_report("PostToolBatch", post.report) {
            return Err(hook_stop("PostToolBatch", &reason));
        }
        if let Some(reason) = post.feedback {
            return Err(hook_stop("PostToolBatch", &reason));
        }
        if post.context.is_empty() {
            return Ok(None);
        }
        let context: Vec<String> = post
            .context
            .into_iter()
            .map(|text| format!("<hook-context>\n{text}\n</hook-context>"))
            .collect();
        Ok(Some(UserInput::text(context.join("\n"))))
    }

    /// Calls the hooks with this loop's scope. Unless they run inline, the call runs on a
    /// helper thread while the loop keeps handling `cmd`: a cancel fires the scope's token, the
    /// hooks implementation kills what it runs, and the turn stops once the call returned.
    pub(crate) fn call_hooks<T: Send>(
        &mut self,
        call: impl FnOnce(&dyn Hooks, HookScope<'_>) -> T + Send,
    ) -> Result<T, Stop> {
        let hooks = Arc::clone(&self.env.deps.hooks);
        let token = CancelToken::new();
        // The scope borrows its own handle on the environment: the loop below needs `self`.
        let env = Arc::clone(&self.env);
        let scope = HookScope {
            depth: env.depth,
            agent_type: env.agent_type.as_deref(),
            agent_id: env.agent_id(),
            cancel: &token,
        };
        if hooks.runs_inline() {
            return Ok(call(hooks.as_ref(), scope));
        }
        let hooks: &dyn Hooks = hooks.as_ref();
        std::thread::scope(|threads| {
            // The helper sends exactly one message.
            let (done_tx, done_rx) = crossbeam_channel::bounded(1);
            let helper = std::thread::Builder::new()
                .name("hook-call".to_owned())
                .spawn_scoped(threads, move || {
                    let _ = done_tx.send(call(hooks, scope));
                })
                .map_err(|err| {
                    Stop::Failed(format!("could not start a thread for hooks: {err}"))
                })?;
            loop {
                select! {
                    recv(done_rx) -> answer => {
                        return match (answer, helper.join()) {
                            (Ok(answer), Ok(())) => Ok(answer),
                            _ => Err(Stop::Failed("a hook implementation panicked".to_owned())),
                        };
                    }
                    recv(self.cmd) -> cmd => {
                        if let Some(stop) = self.handle_cmd(cmd) {
                            token.cancel();
                            // The implementation stops at the token; what it said is void.
                            let _ = helper.join();
                            return Err(stop);
                        }
                    }
                }
            }
        })
    }

    /// Shows a hook report to the person (messages as `HookMessage`, problems as warnings) and
    /// returns its stop reason, if a hook asked to stop.
    pub(crate) fn show_hook_report(&self, event: &str, report: HookReport) -> Option<String> {
        for message in report.messages {
            self.emit(AgentEventKind::HookMessage { event: event.to_owned(), message });
        }
        for message in report.errors {
            self.emit(AgentEventKind::Warning { message });
        }
        report.stop
    }

    /// Brings `shared_history` up to `writer.history()`: new messages are appended (cloned
    /// once); when the projection changed otherwise (a compaction replaced it), it is rebuilt.
    pub(crate) fn sync_shared_history(&mut self) {
        let history = self.writer.history();
        let known = self.shared_history.len();
        let extends = known <= history.len()
            && self.shared_history.last().is_none_or(|last| last.id == history[known - 1].id);
        if !extends {
            self.shared_history.clear();
        }
        let from = self.shared_history.len();
        self.shared_history.extend(history[from..].iter().cloned().map(Arc::new));
    }

    /// Takes in the tools that joined since the last step (appended after the others, so the
    /// request's prefix stays the same) and shows the notices that came with them.
    /// A source that is not ready yet (MCP servers still starting before the first request) is
    /// waited for first, while the loop keeps handling `cmd`, so a cancel ends the wait at once.
    fn refresh_tools(&mut self) -> Result<(), Stop> {
        let Some(late) = self.env.deps.tools.late().cloned() else { return Ok(()) };
        if !late.is_ready() {
            self.wait_beside_cmd("tool-source-wait", |cancel| late.wait_ready(cancel))?;
        }
        late.poll();
        for message in late.take_notices() {
            self.emit(AgentEventKind::Warning { message });
        }
        let generation = self.env.deps.tools.generation();
        if generation != self.tools_generation {
            self.specs = self.env.deps.tools.specs();
            self.tools_generation = generation;
        }
        Ok(())
    }

    /// Runs `wait` on a helper thread while the loop keeps handling `cmd`: a command that stops
    /// the turn (a cancel) fires the token `wait` is given, waits for it to return, and stops.
    fn wait_beside_cmd(
        &mut self,
        thread_name: &str,
        wait: impl FnOnce(&CancelToken) + Send,
    ) -> Result<(), Stop> {
        let token = CancelToken::new();
        let scoped_token = &token;
        std::thread::scope(|threads| {
            // The helper sends exactly one message.
            let (done_tx, done_rx) = crossbeam_channel::bounded(1);
            let helper = std::thread::Builder::new()
                .name(thread_name.to_owned())
                .spawn_scoped(threads, move || {
                    wait(scoped_token);
                    let _ = done_tx.send(());
                })
                .map_err(|err| Stop::Failed(format!("could not start a thread: {err}")))?;
            loop {
                select! {
                    recv(done_rx) -> done => {
                        return match (done, helper.join()) {
                            (Ok(()), Ok(())) => Ok(()),
                            _ => Err(Stop::Failed(format!("{thread_name} panicked"))),
                        };
                    }
                    recv(self.cmd) -> cmd => {
                        if let Some(stop) = self.handle_cmd(cmd) {
                            token.cancel();
                            let _ = helper.join();
                            return Err(stop);
                        }
                    }
                }
            }
        })
    }

    fn run_step(&mut self, turn_state: &mut TurnState, step: StepId) -> Result<StepOutcome, Stop> {
        let turn = turn_state.id;
        turn_state.step = StepState::new(step, false);
        self.sync_shared_history();
        let request_history_len = self.shared_history.len();
        let request_last_id = self.shared_history.last().map(|m| m.id);
        let mut attempt = 0;
        let (assembly, stop_reason) = loop {
            let specs = self.env.deps.tools.offered(&self.specs);
            let request = self.env.deps.prompt.build(&PromptInput {
                session_id: self.writer.session_id(),
                model: &self.env.config.model,
                agent_instructions: self.env.config.agent_instructions.as_deref(),
                history: &self.shared_history,
                tools: &specs,
                turn,
                step,
            });
            self.log_context(&request)?;
            let stream = match self.env.deps.model.stream(request) {
                Ok(stream) => stream,
                Err(err) => {
                    let message = format!("model request failed: {err}");
                    self.append(RecordBody::Error { message: message.clone() })?;
                    return Err(Stop::Failed(message));
                }
            };
            let mut assembly = Assembly::default();
            let mut stream = stream;
            let end = self.read_stream(turn, &mut turn_state.step, &stream, &mut assembly);
            match end {
                StreamEnd::Completed(stop_reason) => {
                    // Finished: its thread is ending, so the join in drop is immediate.
                    drop(stream);
                    break (assembly, stop_reason);
                }
                StreamEnd::Broken(message) if attempt < MAX_STREAM_RETRIES => {
                    // Nothing of the broken response was logged: the same request goes again,
                    // rebuilt from the log, and the client is told why the text restarts.
                    attempt += 1;
                    stream.abort();
                    turn_state.retired.push(stream);
                    turn_state.step = StepState::new(step, false);
                    self.emit(AgentEventKind::StepRetried {
                        turn,
                        step,
                        reason: format!(
                            "the model stream broke ({message}); running step {step} again"
                        ),
                    });
                }
                StreamEnd::Broken(message) => {
                    stream.abort();
                    turn_state.retired.push(stream);
                    let message = format!("model error: {message}");
                    self.append(RecordBody::Error { message: message.clone() })?;
                    return Err(Stop::Failed(message));
                }
                StreamEnd::Overflow(message) => {
                    stream.abort();
                    turn_state.retired.push(stream);
                    let message = format!("model error: {message}");
                    self.append(RecordBody::Error { message: message.clone() })?;
                    // A summary can only shrink what the model said or tools returned; a
                    // history of user messages alone (a first request whose prompt and tools
                    // overflow) would come back no smaller.
                    let can_compact = self.env.deps.compactor.is_some()
                        && self.writer.history().iter().any(|message| message.role != Role::User);
                    if turn_state.overflow_compacted || !can_compact {
                        return Err(Stop::Failed(message));
                    }
                    // The step ends without an answer; the turn compacts, then sends the same
                    // request again from the compacted history (once per turn).
                    turn_state.overflow_compacted = true;
                    let usage = turn_state.step.usage;
                    self.append(RecordBody::StepEnd { turn, step, usage, stop_reason: None })?;
                    self.emit(AgentEventKind::Warning {
                        message: format!(
                            "{message}; compacting the conversation and sending it again"
                        ),
                    });
                    self.emit(AgentEventKind::StepFinished {
                        turn,
                        step,
                        usage,
                        text: String::new(),
                    });
                    return Ok(StepOutcome {
                        wants_more: true,
                        overflowed: true,
                        usage,
                        text: String::new(),
                    });
                }
                StreamEnd::Stopped(stop) => {
                    // Abort at once; the join waits until `TurnDone` is out, so a producer thread
                    // that is slow to be scheduled does not delay the cancel.
                    stream.abort();
                    turn_state.retired.push(stream);
                    // What the person saw streamed is kept (text and reasoning, not half-made
                    // calls): the model sees next time what it had said before the interruption.
                    let items = assembly.finish(false);
                    if !items.is_empty() {
                        self.append(RecordBody::AssistantMessage {
                            message: Message::new(Role::Assistant, items),
                        })?;
                    }
                    if let Stop::Failed(message) = &stop {
                        self.append(RecordBody::Error { message: message.clone() })?;
                    }
                    return Err(stop);
                }
            }
        };
        if turn_state.step.usage_reported && turn_state.step.usage.input_tokens > 0 {
            // A fake or broken server may report zeros; no real request has no input.
            self.reported_input = Some((
                ReportedInput {
                    input_tokens: turn_state.step.usage.input_tokens,
                    history_len: request_history_len,
                },
                request_last_id,
            ));
        }
        let text = assembly.text();
        let mut message = Message::new(Role::Assistant, assembly.finish(true));
        let calls: Vec<StepCall> =
            message.tool_calls().map(|call| StepCall::new(self, call.clone())).collect();
        // The calls run with what the model wrote; the log (and so the history the model is
        // sent next) keeps it with its secrets replaced.
        if let Some(redactor) = &self.env.config.redactor {
            redactor.redact_message(&mut message);
        }
        if !message.items.is_empty() {
            self.append(RecordBody::AssistantMessage { message })?;
        }
        if !text.is_empty() && !turn_state.step.quiet {
            self.emit(AgentEventKind::AgentMessage { turn, step, text: text.clone() });
        }
        let has_calls = !calls.is_empty();
        if has_calls {
            if stop_reason == StopReason::MaxTokens {
                self.refuse_cut_off(turn_state, &calls)?;
            } else {
                self.run_tools(turn_state, calls)?;
            }
        }
        let usage = turn_state.step.usage;
        self.append(RecordBody::StepEnd { turn, step, usage, stop_reason: Some(stop_reason) })?;
        self.emit(AgentEventKind::StepFinished { turn, step, usage, text: text.clone() });
        // A call that ended the turn: its result is logged, and no request follows it.
        let ended = turn_state.step.ends_turn;
        Ok(StepOutcome { wants_more: has_calls && !ended, overflowed: false, usage, text })
    }

    /// Appends a `context` record for `request` unless the newest one logged already says the
    /// same: what the request shows the model besides the history is in the log before it is
    /// sent. Sections that do not join to the instructions are logged as one section.
    pub(crate) fn log_context(&mut self, request: &ModelRequest) -> Result<(), Stop> {
        // The common case, every step after the first: compared in place, nothing copied.
        if let Some(last) = self.writer.context()
            && last.model == request.model
            && last.provider == self.env.config.provider
            && last.max_output_tokens == request.max_output_tokens
            && last.config_hash == self.env.config.config_hash
            && last.output_schema == request.output_schema
            && last.reasoning == request.reasoning
            && last.tools == request.tools
            && ((last.sections == request.sections
                && joins_to(&request.sections, &request.instructions))
                || matches!(last.sections.as_slice(), [only] if only.name == "instructions"
                    && only.text == request.instructions))
        {
            return Ok(());
        }
        let sections = if join_sections(&request.sections) == request.instructions {
            request.sections.clone()
        } else {
            vec![PromptSection {
                name: "instructions".to_owned(),
                text: request.instructions.clone(),
            }]
        };
        let context = ContextRecord {
            model: request.model.clone(),
            provider: self.env.config.provider.clone(),
            sections,
            tools: request.tools.clone(),
            max_output_tokens: request.max_output_tokens,
            output_schema: request.output_schema.clone(),
            config_hash: self.env.config.config_hash.clone(),
            reasoning: request.reasoning,
        };
        if self.writer.context() == Some(&context) {
            return Ok(());
        }
        self.append(RecordBody::Context(context))?;
        Ok(())
    }
}

/// The calls of the history's last assistant message, each with its logged result, in call
/// order (a call without a result is left out).
fn last_batch(history: &[Message]) -> Vec<(ToolCall, ToolResult)> {
    let Some(at) = history.iter().rposition(|message| message.role == Role::Assistant) else {
        return Vec::new();
    };
    let results: Vec<&ToolResult> = history[at + 1..]
        .iter()
        .flat_map(|message| &message.items)
        .filter_map(|item| match item {
            MessageItem::ToolResult(result) => Some(result),
            MessageItem::Text { .. }
            | MessageItem::Reasoning(_)
            | MessageItem::ToolCall(_)
            | MessageItem::Image(_)
            | MessageItem::BlobRef(_) => None,
        })
        .collect();
    history[at]
        .tool_calls()
        .filter_map(|call| {
            let result = results.iter().find(|result| result.tool_call_id == call.id)?;
            Some((call.clone(), (*result).clone()))
        })
        .collect()
}

/// The StopFailure class of a turn's failure, when a model error ended it (the messages
/// `run_step` and the stream reader make: `model request failed: …`, `model error: …`); `None`
/// for any other failure.
fn model_error_class(message: &str) -> Option<&'static str> {
    let details = message
        .strip_prefix("model error: ")
        .or_else(|| message.strip_prefix("model request failed: "))?
        .to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|word| details.contains(word));
    Some(if has(&["429", "rate limit", "rate_limit", "too many requests"]) {
        "rate_limit"
    } else if has(&["401", "403", "unauthorized", "forbidden", "authentication", "api key"]) {
        "authentication_failed"
    } else if has(&["context", "too long", "400", "invalid"]) {
        "invalid_request"
    } else if has(&["500", "502", "503", "504", "529", "overloaded", "server error"]) {
        "server_error"
    } else {
        "unknown"
    })
}

/// The most times in a row a Stop hook may keep a turn going (Claude Code's cap).
const MAX_STOP_BLOCKS: u32 = 8;

/// How a hook's `continue: false` ends a turn: it fails with the hook's stop reason, which the
/// front-ends show (and the log keeps in `turn_end`).
pub(crate) fn hook_stop(event: &str, reason: &str) -> Stop {
    Stop::Failed(format!("a {event} hook stopped the turn: {reason}"))
}

/// User input as message items. Blob references (large attachments) show as their preview.
fn user_item(item: ContentItem) -> MessageItem {
    match item {
        ContentItem::Text { text } => MessageItem::Text { text },
        ContentItem::Image(image) => MessageItem::Image(image),
        ContentItem::BlobRef(blob) => MessageItem::Text {
            text: format!(
                "[attachment sha256:{} ({} bytes)]\n{}",
                blob.sha256, blob.size, blob.preview
            ),
        },
    }
}

/// Whether `text` is `sections` joined as `join_sections` joins them (a blank line between),
/// checked without building the joined text.
fn joins_to(sections: &[PromptSection], text: &str) -> bool {
    let mut rest = text;
    for (index, section) in sections.iter().enumerate() {
        if index > 0 {
            let Some(after) = rest.strip_prefix("\n\n") else { return false };
            rest = after;
        }
        let Some(after) = rest.strip_prefix(section.text.as_str()) else { return false };
        rest = after;
    }
    rest.is_empty()
}
