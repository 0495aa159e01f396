//! Spawning an agent: its configuration, its dependencies (the seams), and the handle a client
//! holds (`cmd` sender, `events` receiver, the loop's thread).
//!
//! Invariant: the handle's fields drop in declaration order, `cmd` first, so dropping a handle
//! disconnects `cmd` (the loop treats that as `Shutdown`), then `events`, then joins the loop's
//! thread.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codecoder_protocol::{
    AgentCommand, AgentEvent, AgentEventKind, EventSource, Message, SessionId, StepId, ToolSpec,
    TurnId, UserInput,
};
use codecoder_session::{NewSession, SessionWriter};
use codecoder_stdx::{JoinOnDrop, spawn_named};
use crossbeam_channel::{Receiver, Sender};

use crate::approval::ApprovalPolicy;
use crate::error::Result;
use crate::hooks::Hooks;
use crate::model::ModelClient;
use crate::prompt::PromptBuilder;
use crate::tool::ToolRegistry;
use crate::turn::AgentLoop;

/// How an agent behaves. No `Default`: build it with `AgentConfig::standard` and change fields.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The model id.
    pub model: String,
    /// The provider id (for the session meta).
    pub provider: String,
    /// The working directory (for the session meta).
    pub cwd: String,
    /// Hash of the effective configuration (for the session meta and `context` records).
    pub config_hash: Option<String>,
    /// Extra instructions for this agent (a subagent type's).
    pub agent_instructions: Option<String>,
    /// Steps per turn before the turn fails. Default 100.
    pub max_steps: u32,
    /// Read-only calls of one response run at most this many at once. Default 8.
    pub max_parallel_tools: usize,
    /// The same failing call (name and arguments) this many times in a turn adds a nudge to
    /// its result. Default 3.
    pub repeated_failure_nudge: u32,
    /// After a cancel, how long running tools get to stop before the turn is closed without
    /// them (their threads are joined later, at shutdown). Default 5 s.
    pub cancel_grace: Duration,
    /// Capacity of the events channel. Default 256. The channel allocates and touches every
    /// slot when it is made (an `AgentEvent` is about 600 bytes), for as long as the session
    /// lives, idle or not: 256 slots are 150 KB; a front-end that falls that far behind makes
    /// the loop wait, and deltas queued meanwhile are merged (`coalesce_deltas`).
    pub event_capacity: usize,
    /// Merge text or reasoning deltas that are already queued into one event (fewer, larger
    /// events; no added latency). Default true.
    pub coalesce_deltas: bool,
    /// The shortest time between two `CallProgress` events of one call (a call the model is
    /// still writing, whose tool reads its arguments as they come). Default 500 ms.
    pub progress_interval: Duration,
    /// Subagents.
    pub subagents: SubagentConfig,
    /// What the session may spend on the model; `None`: no limit.
    pub budget: Option<Budget>,
    /// Replaces secrets in tool results before the model, the log and the clients see them
    /// (subagents share it); `None`: tool results are kept as the tools returned them.
    pub redactor: Option<Arc<crate::redact::Redactor>>,
}

/// A spending limit in dollars, with the model's prices. Past the limit no further request is
/// sent: the turn fails with a message that starts with `BUDGET_REACHED`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// The limit, in dollars, for the whole session in this process.
    pub limit_usd: f64,
    /// The model's prices.
    pub prices: Prices,
}

/// A model's prices in dollars per million tokens; the one place usage becomes dollars (the
/// budget, and front-ends' cost figures through the runtime's `Pricing`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prices {
    /// Uncached input tokens.
    pub input: f64,
    /// Cached input tokens.
    pub cached_input: f64,
    /// Output tokens.
    pub output: f64,
}

impl Prices {
    /// Dollars for `usage`.
    pub fn cost(&self, usage: &codecoder_protocol::Usage) -> f64 {
        let fresh = usage.input_tokens.saturating_sub(usage.cached_input_tokens);
        #[allow(clippy::cast_precision_loss)] // token counts stay far below 2^52
        let dollars = fresh as f64 * self.input
            + usage.cached_input_tokens as f64 * self.cached_input
            + usage.output_tokens as f64 * self.output;
        dollars / 1_000_000.0
    }
}

/// How the failure of a turn stopped by its budget begins.
pub const BUDGET_REACHED: &str = "the session reached its budget";

/// How the failure of a turn stopped by its step limit begins.
pub const STEP_LIMIT_REACHED: &str = "the turn reached its limit";

impl AgentConfig {
    /// The defaults listed on each field.
    pub fn standard(
        model: impl Into<String>,
        provider: impl Into<String>,
        cwd: impl Into<String>,
    ) -> Self {
        Self {
            model: model.into(),
            provider: provider.into(),
            cwd: cwd.into(),
            config_hash: None,
            agent_instructions: None,
            max_steps: 100,
            max_parallel_tools: 8,
            repeated_failure_nudge: 3,
            cancel_grace: Duration::from_secs(5),
            event_capacity: 256,
            coalesce_deltas: true,
            progress_interval: Duration::from_millis(500),
            subagents: SubagentConfig::standard(),
            budget: None,
            redactor: None,
        }
    }
}

/// Limits and types of subagents.
#[derive(Debug, Clone)]
pub struct SubagentConfig {
    /// How deep subagents may nest; the root agent is depth 0. Default 2.
    pub max_depth: u32,
    /// How long one subagent may run. Default 10 minutes.
    pub timeout: Duration,
    /// Subagents one agent runs at once (each subagent has its own allowance for its
    /// children). Default 4.
    pub max_parallel: usize,
    /// Named agent types the `agent` tool offers.
    pub types: Vec<AgentType>,
}

impl SubagentConfig {
    /// The defaults listed on each field, no types.
    pub fn standard() -> Self {
        Self { max_depth: 2, timeout: Duration::from_secs(600), max_parallel: 4, types: Vec::new() }
    }
}

/// A named kind of subagent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentType {
    /// The name the model picks it by.
    pub name: String,
    /// When to use it, for the model.
    pub description: String,
    /// Instructions added to the child's prompt.
    pub instructions: String,
    /// The tools it may use (a subset of the parent's); all of the parent's when `None`.
    pub tools: Option<Vec<String>>,
    /// Its model; the parent's when `None`.
    pub model: Option<String>,
    /// Its steps per turn (`AgentConfig::max_steps`); the parent's when `None`.
    pub max_steps: Option<u32>,
}

/// Makes session writers: the root's, and one per subagent.
pub trait SessionFactory: Send + Sync {
    /// A new session log.
    fn create(&self, new: NewSession) -> codecoder_session::Result<SessionWriter>;
}

impl<F> SessionFactory for F
where
    F: Fn(NewSession) -> codecoder_session::Result<SessionWriter> + Send + Sync,
{
    fn create(&self, new: NewSession) -> codecoder_session::Result<SessionWriter> {
        self(new)
    }
}

/// What a pre-step interceptor sees.
#[derive(Debug, Clone, Copy)]
pub struct StepInfo<'a> {
    /// The session.
    pub session_id: SessionId,
    /// The turn.
    pub turn: TurnId,
    /// The step about to start.
    pub step: StepId,
    /// The history so far.
    pub history: &'a [Message],
    /// 0 for the root agent.
    pub depth: u32,
    /// What the provider reported for this session's last request, when that request's history
    /// is still the start of `history` (no compaction or rewind since): the truth to count the
    /// window from, instead of estimating the whole history.
    pub reported: Option<ReportedInput>,
    /// The tools of the step's request: the registered ones, then those that joined late (an
    /// MCP server ready after the session started); a tool not offered at this step (plan
    /// mode's) may be among them, so an estimate from them errs high. Empty where the caller
    /// has none to say.
    pub tools: &'a [ToolSpec],
}

/// The input tokens a provider reported for a request, and how many messages of the history
/// that request held: the next request's size is these tokens plus what was appended since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportedInput {
    /// Input tokens, cached ones included, as the provider counted them.
    pub input_tokens: u64,
    /// The number of history messages the request held (a prefix of `StepInfo::history`).
    pub history_len: usize,
}

/// A pre-step interceptor's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepVerdict {
    /// Go on (with the input as the interceptor left it).
    Proceed,
    /// Do not run the step; the turn fails with this message.
    Reject {
        /// Why.
        message: String,
    },
}

/// Runs before each step, with the user input about to be added; may rewrite it or reject the
/// step (hooks, context checks).
pub trait StepInterceptor: Send + Sync {
    /// Looks at (and may change) the input of the step.
    fn before_step(&self, info: &StepInfo<'_>, input: &mut Vec<UserInput>) -> StepVerdict;
}

/// The seams an agent runs on. Cheap to clone (all shared).
#[derive(Clone)]
pub struct AgentDeps {
    /// The model provider.
    pub model: Arc<dyn ModelClient>,
    /// Builds requests.
    pub prompt: Arc<dyn PromptBuilder>,
    /// The tools.
    pub tools: Arc<ToolRegistry>,
    /// Decides approvals.
    pub approval: Arc<dyn ApprovalPolicy>,
    /// Lifecycle hooks (`NoHooks` for none).
    pub hooks: Arc<dyn Hooks>,
    /// Makes session logs (the root's and the subagents').
    pub sessions: Arc<dyn SessionFactory>,
    /// Pre-step interceptors, run in order.
    pub interceptors: Vec<Arc<dyn StepInterceptor>>,
    /// Compacts the root agent's history when it nears the window (and on `/compact`);
    /// `None`: never (a request that does not fit fails its turn).
    pub compactor: Option<Arc<dyn crate::compact::Compactor>>,
    /// Keeps what the root agent's turns change on disk, for undo; `None`: nothing is kept.
    pub checkpoints: Option<Arc<dyn crate::checkpoint::Checkpoints>>,
}

impl std::fmt::Debug for AgentDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentDeps").field("tools", &self.tools).finish_non_exhaustive()
    }
}

/// Slots bounding the subagents one agent runs at once: a bounded channel used as a semaphore
/// (send to take a slot, receive to give it back). Each agent has its own: slots shared by a whole
/// tree could deadlock, with every slot held by a parent waiting for a slot for its child.
#[derive(Debug, Clone)]
pub(crate) struct Slots {
    pub(crate) take: Sender<()>,
    pub(crate) give_back: Receiver<()>,
}

impl Slots {
    pub(crate) fn new(count: usize) -> Self {
        let (take, give_back) = crossbeam_channel::bounded(count.max(1));
        Self { take, give_back }
    }
}

/// What an agent's tool calls can reach beyond their own call (used by `AgentTool`).
pub(crate) struct AgentEnv {
    pub(crate) config: AgentConfig,
    pub(crate) deps: AgentDeps,
    pub(crate) depth: u32,
    pub(crate) source: EventSource,
    pub(crate) events: Sender<AgentEvent>,
    pub(crate) slots: Slots,
    /// A subagent's type (`general-purpose` when the call named none); `None` for the root.
    pub(crate) agent_type: Option<String>,
}

impl AgentEnv {
    /// A subagent's id (the call that started it, last on its path); `None` for the root.
    pub(crate) fn agent_id(&self) -> Option<&str> {
        self.source.subagent_path.last().map(codecoder_protocol::ToolCallId::as_str)
    }
}

/// How long `AgentHandle::shutdown` waits for `ShutdownComplete` before it joins anyway.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// What a front-end says about how a session began and ends, for its hooks: the SessionStart
/// `source` of its first turn when it has no history (`startup` unless set) and the SessionEnd
/// `reason` (`other` unless set). Shared by the handle and its loop.
#[derive(Debug, Default)]
pub(crate) struct Lifecycle {
    pub(crate) start_source: Mutex<Option<&'static str>>,
    pub(crate) end_reason: Mutex<Option<&'static str>>,
}

impl Lifecycle {
    pub(crate) fn start_source(&self) -> &'static str {
        self.start_source.lock().ok().and_then(|source| *source).unwrap_or("startup")
    }

    pub(crate) fn end_reason(&self) -> &'static str {
        self.end_reason.lock().ok().and_then(|reason| *reason).unwrap_or("other")
    }
}

/// A running agent.
#[derive(Debug)]
pub struct AgentHandle {
    /// Client intent: submit, steer, cancel, shutdown. Dropping it shuts the agent down.
    pub cmd: Sender<AgentCommand>,
    /// Everything the agent does, in order (subagents' events too, marked by
    /// `EventSource.subagent_path`). Drain it continuously: it is bounded, a full channel pauses
    /// the loop (backpressure), and a paused loop sees a `Cancel` only once it can send again.
    pub events: Receiver<AgentEvent>,
    session_id: SessionId,
    session_path: Option<PathBuf>,
    thread: JoinOnDrop<()>,
    lifecycle: Arc<Lifecycle>,
}

impl AgentHandle {
    /// A handle over a loop run elsewhere (a session another process hosts): `thread` pumps
    /// `cmd` to it and its events into `events`, ends with `ShutdownComplete` after `Shutdown`,
    /// and is joined by `shutdown` and `join` as the kernel's own loop is.
    pub fn from_parts(
        cmd: Sender<AgentCommand>,
        events: Receiver<AgentEvent>,
        session_id: SessionId,
        session_path: Option<PathBuf>,
        thread: JoinOnDrop<()>,
    ) -> Self {
        Self { cmd, events, session_id, session_path, thread, lifecycle: Arc::default() }
    }

    /// Marks a new session as the one that replaced a cleared session (`/new` in the TUI): its
    /// first turn's SessionStart hooks see `source: "clear"` instead of `startup`.
    pub fn starts_after_clear(&self) {
        if let Ok(mut source) = self.lifecycle.start_source.lock() {
            *source = Some("clear");
        }
    }

    /// Why the session ends, as its SessionEnd hooks see it when it shuts down: `clear` (the
    /// person started a new session in its place) or `prompt_input_exit` (they left the
    /// prompt); `other` unless said.
    pub fn ends_because(&self, reason: &'static str) {
        if let Ok(mut end) = self.lifecycle.end_reason.lock() {
            *end = Some(reason);
        }
    }

    /// The root session.
    pub fn session_id(&self) -> SessionId {
        self.session_id
    }

    /// The root session's log file (`None` for an in-memory session).
    pub fn session_path(&self) -> Option<&std::path::Path> {
        self.session_path.as_deref()
    }

    /// Ends the agent the one way every front-end does: sends `Shutdown` (whatever runs is
    /// cancelled, its processes killed, the log closed), drains the events until
    /// `ShutdownComplete` (requests that arrive meanwhile are dropped unanswered, which means
    /// cancelled), then joins the loop's thread. Waits at most `SHUTDOWN_WAIT` for
    /// `ShutdownComplete` before joining anyway (dropping the channels ends a loop that did not
    /// answer). `Err` holds a panic message of the loop.
    pub fn shutdown(self) -> std::result::Result<(), String> {
        let _ = self.cmd.send(AgentCommand::Shutdown);
        let deadline = Instant::now() + SHUTDOWN_WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(event) if matches!(event.kind, AgentEventKind::ShutdownComplete) => break,
                Ok(_) => {}
                Err(_) => break,
            }
        }
        self.join()
    }

    /// Waits for the loop's thread (after `Shutdown`). `Err` holds a panic message.
    pub fn join(self) -> std::result::Result<(), String> {
        let Self { cmd, events, thread, .. } = self;
        drop(cmd);
        drop(events);
        thread.join()
    }
}

/// Starts an agent on a new session made by `deps.sessions`.
pub fn spawn_agent(config: AgentConfig, deps: AgentDeps) -> Result<AgentHandle> {
    let writer = deps.sessions.create(NewSession {
        cwd: config.cwd.clone(),
        model: config.model.clone(),
        provider: config.provider.clone(),
        config_hash: config.config_hash.clone(),
        parent: None,
    })?;
    spawn_agent_on(config, deps, writer)
}

/// Starts an agent on an existing session writer (resume). The writer's log must have nothing
/// open (`trace().needs_repair()` false: repair it first), or the first turn fails to start.
pub fn spawn_agent_on(
    config: AgentConfig,
    deps: AgentDeps,
    writer: SessionWriter,
) -> Result<AgentHandle> {
    // Low volume (the person's intent); 64 is far more than anyone types ahead.
    let (cmd_tx, cmd_rx) = crossbeam_channel::bounded(64);
    let (events_tx, events_rx) = crossbeam_channel::bounded(config.event_capacity.max(1));
    let session_id = writer.session_id();
    let session_path = writer.path().map(std::path::Path::to_path_buf);
    let slots = Slots::new(config.subagents.max_parallel);
    let env = Arc::new(AgentEnv {
        config,
        deps,
        depth: 0,
        source: EventSource { session_id, subagent_path: Vec::new() },
        events: events_tx,
        slots,
        agent_type: None,
    });
    let lifecycle = Arc::new(Lifecycle::default());
    let agent_loop =
        AgentLoop::new(env, writer, cmd_rx, None).with_lifecycle(Arc::clone(&lifecycle));
    let thread = spawn_named("agent-loop", move || agent_loop.run())?;
    Ok(AgentHandle { cmd: cmd_tx, events: events_rx, session_id, session_path, thread, lifecycle })
}
