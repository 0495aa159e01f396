//! Test support: a fixture holding a temp workspace and the built-in tools, run without a
//! kernel; and a scripted model plus harness that run the tools through the real kernel.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use codecoder_kernel::{
    AgentConfig, AgentDeps, AgentHandle, AllowAll, ApprovalPolicy, ModelClient, ModelError,
    ModelRequest, ResponseEvent, ResponseStream, StaticPrompt, ToolOutput, ToolRegistry,
    spawn_agent,
};
use codecoder_protocol::{
    AgentCommand, AgentEvent, AgentEventKind, AskUserAnswer, ContentItem, StopReason, ToolCallId,
    ToolError, Usage, UserInput,
};
use codecoder_session::{FsyncPolicy, SessionStore, WriterConfig};
use codecoder_tools::{Builtin, StandaloneEnv, ToolsConfig, builtin_tools, builtins, run_checked};
use serde_json::Value;

/// Held by tests that allocate megabytes, so the memory test measures only itself.
pub(crate) static HEAVY: Mutex<()> = Mutex::new(());

/// How long a test waits for an event before failing.
pub(crate) const PATIENCE: Duration = Duration::from_secs(30);

/// A temp workspace (`cwd` = `<tmp>/work`, the only writable root) and the tools.
pub(crate) struct Fixture {
    pub(crate) cwd: PathBuf,
    pub(crate) tools: Vec<Arc<dyn Builtin>>,
    pub(crate) env: StandaloneEnv,
    pub(crate) dir: tempfile::TempDir,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        Self::with(|_| {})
    }

    pub(crate) fn with(adjust: impl FnOnce(&mut ToolsConfig)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let cwd = fs_err::canonicalize(dir.path()).unwrap().join("work");
        fs_err::create_dir_all(&cwd).unwrap();
        let mut config = ToolsConfig::standard(&cwd, vec![cwd.clone()]);
        config.kill_grace = Duration::from_millis(300);
        config.shell_args = vec!["-c".to_owned()];
        adjust(&mut config);
        let env = StandaloneEnv::new(AskUserAnswer::Answer { text: "blue".to_owned() }, 1 << 20);
        Self { cwd, tools: builtins(config), env, dir }
    }

    pub(crate) fn tool(&self, name: &str) -> &dyn Builtin {
        self.tools.iter().find(|tool| tool.name() == name).unwrap().as_ref()
    }

    pub(crate) fn call(&self, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
        run_checked(self.tool(name), &self.env, args)
    }

    /// The text of a successful call.
    pub(crate) fn ok(&self, name: &str, args: Value) -> String {
        let output = self.call(name, args.clone()).unwrap_or_else(|err| {
            panic!("{name} {args} failed: {err}");
        });
        assert!(!output.is_error, "{name} {args}: {}", text(&output));
        text(&output)
    }

    /// The message of a failed call.
    pub(crate) fn err(&self, name: &str, args: Value) -> String {
        match self.call(name, args.clone()) {
            Ok(output) => panic!("{name} {args} succeeded: {}", text(&output)),
            Err(err) => err.to_string(),
        }
    }

    pub(crate) fn path(&self, relative: &str) -> PathBuf {
        self.cwd.join(relative)
    }

    pub(crate) fn write(&self, relative: &str, bytes: impl AsRef<[u8]>) {
        let path = self.path(relative);
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent).unwrap();
        }
        fs_err::write(path, bytes).unwrap();
    }

    pub(crate) fn read(&self, relative: &str) -> Vec<u8> {
        fs_err::read(self.path(relative)).unwrap()
    }

    /// The temp dir above the workspace (outside the writable root).
    pub(crate) fn outside(&self) -> PathBuf {
        fs_err::canonicalize(self.dir.path()).unwrap()
    }
}

/// The text items of an output, joined.
pub(crate) fn text(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .filter_map(|item| match item {
            ContentItem::Text { text } => Some(text.as_str()),
            ContentItem::Image(_) | ContentItem::BlobRef(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The number of lines of `text` that start with `prefix`.
pub(crate) fn count_prefixed(text: &str, prefix: &str) -> usize {
    text.lines().filter(|line| line.starts_with(prefix)).count()
}

/// Live members of a process group, from /proc.
pub(crate) fn live(pgid: u32) -> Vec<u32> {
    codecoder_sandbox::live_group_members(pgid)
}

pub(crate) fn exists(path: &Path) -> bool {
    fs_err::metadata(path).is_ok()
}

// ---------------------------------------------------------------------------------------------
// The kernel.

/// A model that answers requests with scripted responses in order, then with a short text.
pub(crate) struct ScriptedModel {
    queue: Mutex<VecDeque<Vec<ResponseEvent>>>,
    requests: Mutex<Vec<ModelRequest>>,
}

impl ScriptedModel {
    pub(crate) fn new(responses: Vec<Vec<ResponseEvent>>) -> Arc<Self> {
        Arc::new(Self { queue: Mutex::new(responses.into()), requests: Mutex::new(Vec::new()) })
    }

    pub(crate) fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl ModelClient for ScriptedModel {
    fn stream(&self, request: ModelRequest) -> Result<ResponseStream, ModelError> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner).push(request);
        let events = self
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
            .unwrap_or_else(|| answer("done"));
        ResponseStream::spawn("model-script", 1024, move |tx| {
            for event in events {
                if tx.send(event).is_err() {
                    return;
                }
            }
        })
        .map_err(|err| ModelError::new(err.to_string()))
    }
}

/// A response asking for these calls: `(id, name, args)`.
pub(crate) fn calls(list: &[(&str, &str, Value)]) -> Vec<ResponseEvent> {
    let mut events = Vec::new();
    for (id, name, args) in list {
        let args = args.to_string();
        let (first, second) = args.split_at(args.len() / 2);
        events.push(ResponseEvent::ToolCallStart {
            id: ToolCallId::new(*id),
            name: (*name).to_owned(),
        });
        events.push(ResponseEvent::ToolCallArgsDelta {
            id: ToolCallId::new(*id),
            delta: first.to_owned(),
        });
        events.push(ResponseEvent::ToolCallArgsDelta {
            id: ToolCallId::new(*id),
            delta: second.to_owned(),
        });
        events.push(ResponseEvent::ToolCallDone { id: ToolCallId::new(*id) });
    }
    events.push(ResponseEvent::Usage(Usage {
        input_tokens: 10,
        output_tokens: 10,
        ..Usage::default()
    }));
    events.push(ResponseEvent::Completed { stop_reason: StopReason::ToolUse });
    events
}

/// A text answer that ends the turn.
pub(crate) fn answer(text: &str) -> Vec<ResponseEvent> {
    vec![
        ResponseEvent::TextDelta(text.to_owned()),
        ResponseEvent::Usage(Usage { input_tokens: 10, output_tokens: 1, ..Usage::default() }),
        ResponseEvent::Completed { stop_reason: StopReason::EndTurn },
    ]
}

/// An agent running the built-in tools on a session store in a temp dir.
pub(crate) struct Harness {
    pub(crate) handle: AgentHandle,
    pub(crate) store: SessionStore,
    _home: tempfile::TempDir,
}

impl Harness {
    pub(crate) fn start(model: Arc<dyn ModelClient>, config: ToolsConfig) -> Self {
        Self::with_policy(model, config, Arc::new(AllowAll))
    }

    pub(crate) fn with_policy(
        model: Arc<dyn ModelClient>,
        config: ToolsConfig,
        approval: Arc<dyn ApprovalPolicy>,
    ) -> Self {
        let home = tempfile::tempdir().unwrap();
        let store = SessionStore::new(home.path());
        let mut registry = ToolRegistry::new();
        for tool in builtin_tools(config.clone()) {
            registry.register(tool).unwrap();
        }
        let sessions_store = SessionStore::new(home.path());
        let deps = AgentDeps {
            model,
            prompt: Arc::new(StaticPrompt {
                instructions: "You are a test.".to_owned(),
                max_output_tokens: None,
            }),
            tools: Arc::new(registry),
            approval,
            hooks: Arc::new(codecoder_kernel::NoHooks),
            sessions: Arc::new(move |new| {
                let writer = WriterConfig { fsync: FsyncPolicy::Never, ..WriterConfig::standard() };
                sessions_store.create(new, writer)
            }),
            interceptors: Vec::new(),
            compactor: None,
            checkpoints: None,
        };
        let mut agent =
            AgentConfig::standard("test-model", "scripted", config.cwd.display().to_string());
        agent.cancel_grace = Duration::from_secs(10);
        let handle = spawn_agent(agent, deps).unwrap();
        Self { handle, store, _home: home }
    }

    pub(crate) fn submit(&self, text: &str) {
        self.handle.cmd.send(AgentCommand::Submit(UserInput::text(text))).unwrap();
    }

    pub(crate) fn next(&self) -> AgentEvent {
        match self.handle.events.recv_timeout(PATIENCE) {
            Ok(event) => event,
            Err(err) => panic!("no event within {PATIENCE:?}: {err}"),
        }
    }

    /// Events until `TurnDone` (included), answering questions with `answer`.
    pub(crate) fn turn(&self, answer: &str) -> Vec<AgentEvent> {
        let mut events = Vec::new();
        loop {
            let event = self.next();
            let event = match event.kind {
                AgentEventKind::AskUser(request) => {
                    let question = request.question.clone();
                    let options = request.options.clone();
                    request.reply.send(AskUserAnswer::Answer { text: answer.to_owned() });
                    AgentEvent {
                        source: event.source,
                        kind: AgentEventKind::Warning {
                            message: format!("asked: {question} {options:?}"),
                        },
                    }
                }
                kind => AgentEvent { source: event.source, kind },
            };
            let done = matches!(event.kind, AgentEventKind::TurnDone { .. });
            events.push(event);
            if done {
                return events;
            }
        }
    }

    /// Shuts down and returns the loaded root log (checked closed and valid).
    pub(crate) fn shutdown(self) -> codecoder_session::LoadedSession {
        let id = self.handle.session_id();
        self.handle.cmd.send(AgentCommand::Shutdown).unwrap();
        loop {
            if matches!(self.next().kind, AgentEventKind::ShutdownComplete) {
                break;
            }
        }
        let Self { handle, store, _home } = self;
        handle.join().unwrap();
        let path = store.path_of(id);
        let loaded = codecoder_session::load(&path).unwrap();
        assert!(!loaded.trace.needs_repair());
        loaded
    }
}

/// The id `run_command {background: true}` gives its job (one numbering with `exec_command`'s
/// sessions, shared by every tool set of the process, so tests running at once never agree).
pub(crate) fn job_id(text: &str) -> u64 {
    let rest = text.split("Started background job ").nth(1).unwrap_or_else(|| panic!("{text}"));
    rest.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}
