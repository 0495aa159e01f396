//! The headless run: a session of the runtime driven by the input (one prompt, or stream-json
//! messages and control requests), its events translated into Claude's messages, one `result`
//! per turn.
//!
//! Invariants: every control request of the SDK gets exactly one response; every approval
//! request and question of the agent gets a reply (the SDK's, or a refusal the model reads);
//! messages that arrive during a turn wait for it to end; after the input ends the running
//! turn (and any waiting message) is finished, then the agent is shut down before `run`
//! returns.

use std::collections::VecDeque;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use codecoder_app::{RunningSession, Runtime, SessionRequest, Start};
use codecoder_protocol::{
    AgentCommand, AgentEvent, AgentEventKind, ApprovalDecision, AskUserAnswer, ContentItem, Image,
    ToolError, TurnOutcome, Usage, UserInput,
};
use crossbeam_channel::{Receiver, select};
use serde_json::{Map, Value, json};

use crate::args::{ClaudeMode, HeadlessArgs};
use crate::translate::{Translator, claude_call};
use crate::wire::{Input, Peer};
use crate::{CLAUDE_PROTOCOL_VERSION, Error, Result};

/// What a run ends with: its exit code.
pub(crate) type ExitCode = u8;

/// Everything `initialize` and the command line ask of the session, gathered before it starts.
#[derive(Default)]
struct Setup {
    system_prompt: Option<String>,
    append_system_prompt: Option<String>,
    json_schema: Option<Value>,
    mcp_servers: Vec<codecoder_app::mcp_client::ServerConfig>,
    model: Option<String>,
    mode: Option<ClaudeMode>,
    /// The SDK's hook callbacks (`initialize`'s `hooks`).
    hooks: Vec<codecoder_app::CallbackHook>,
    /// The SDK's subagent types (`initialize`'s `agents`).
    agents: Vec<codecoder_app::AgentType>,
}

/// The turn in progress.
struct Turn {
    /// What was asked, for a retry on the fallback model.
    input: UserInput,
    started: Instant,
    api: Duration,
    step_started: Option<Instant>,
    num_turns: u32,
    usage: Usage,
    errors: Vec<String>,
    final_text: String,
    plan: Option<String>,
    interrupted: bool,
}

impl Turn {
    fn new(input: UserInput) -> Self {
        Turn {
            input,
            started: Instant::now(),
            api: Duration::ZERO,
            step_started: None,
            num_turns: 0,
            usage: Usage::default(),
            errors: Vec::new(),
            final_text: String::new(),
            plan: None,
            interrupted: false,
        }
    }
}

pub(crate) struct Engine {
    args: HeadlessArgs,
    runtime: Runtime,
    peer: Arc<Peer>,
    notice: Arc<dyn Fn(&str) + Send + Sync>,
    setup: Setup,
    session: Option<RunningSession>,
    translator: Option<Translator>,
    turn: Option<Turn>,
    queue: VecDeque<UserInput>,
    input_open: bool,
    /// The session's cost so far, in dollars (every turn of this process).
    cost: f64,
    /// The last result was an error.
    last_error: bool,
    /// Print mode's answer (text or json output).
    answer: Option<Value>,
    priced_note: bool,
    /// `set_model` asked for a switch that waits for the turn to end.
    switch_model: bool,
    /// What the SDK's permission callback shares with the run.
    permissions: crate::sdk::Permissions,
    /// `--fallback-model` has been switched to.
    fallback_used: bool,
    /// Signals to stop on (SIGTERM, SIGHUP, SIGINT: what the SDKs send to end a run).
    stop: Receiver<i32>,
    /// The signal the run is stopping for.
    stopped_by: Option<i32>,
}

impl Engine {
    pub(crate) fn new(
        args: HeadlessArgs,
        runtime: Runtime,
        peer: Arc<Peer>,
        notice: Arc<dyn Fn(&str) + Send + Sync>,
        stop: Receiver<i32>,
    ) -> Result<Self> {
        let mut setup = Setup {
            system_prompt: args.system_prompt.clone(),
            append_system_prompt: args.append_system_prompt.clone(),
            model: args.model.clone(),
            mode: args.permission_mode,
            ..Setup::default()
        };
        if let Some(schema) = &args.json_schema {
            setup.json_schema = Some(json_or_file("--json-schema", schema)?);
        }
        for config in &args.mcp_configs {
            let value = json_or_file("--mcp-config", config)?;
            setup.mcp_servers.extend(mcp_servers(&value, "--mcp-config", &peer)?);
        }
        Ok(Engine {
            args,
            runtime,
            peer,
            notice,
            setup,
            session: None,
            translator: None,
            turn: None,
            queue: VecDeque::new(),
            input_open: true,
            cost: 0.0,
            last_error: false,
            answer: None,
            priced_note: false,
            switch_model: false,
            permissions: crate::sdk::Permissions::default(),
            fallback_used: false,
            stop,
            stopped_by: None,
        })
    }

    /// Runs one prompt (text input) to its result.
    pub(crate) fn run_prompt(mut self, prompt: UserInput) -> Result<(ExitCode, Option<Value>)> {
        self.input_open = false;
        let followed = self.submit(prompt).and_then(|()| self.follow(&crossbeam_channel::never()));
        self.end(followed)
    }

    /// Runs stream-json input until it ends and its turns are done.
    pub(crate) fn run_stream(
        mut self,
        input: &Receiver<Input>,
    ) -> Result<(ExitCode, Option<Value>)> {
        let followed = self.follow(input);
        self.end(followed)
    }

    /// Ends the run whether it went well or not: a failed run (its output gone, say) still
    /// shuts its agent down, which cancels the turn and kills its processes, so nothing is left
    /// running and the session's lock is released.
    fn end(self, followed: Result<()>) -> Result<(ExitCode, Option<Value>)> {
        match followed {
            Ok(()) => self.finish(),
            Err(err) => {
                self.peer.withdraw_all("the run is ending");
                drop(self.finish());
                Err(err)
            }
        }
    }

    fn finish(self) -> Result<(ExitCode, Option<Value>)> {
        if let Some(session) = self.session {
            let _ = session.agent.shutdown();
        }
        // Stopped by a signal: the shell's code for it (128 + the signal).
        let code = match self.stopped_by {
            Some(signal) => u8::try_from(128 + signal).unwrap_or(u8::MAX),
            None => u8::from(self.last_error),
        };
        Ok((code, self.answer))
    }

    /// The loop: input and agent events until the input is done and no turn runs.
    fn follow(&mut self, input: &Receiver<Input>) -> Result<()> {
        let mut input = input.clone();
        let (announce, announcements) = crossbeam_channel::unbounded();
        self.permissions.announce = Some(announce);
        loop {
            if !self.input_open && self.turn.is_none() && self.queue.is_empty() {
                return Ok(());
            }
            let events = self
                .session
                .as_ref()
                .map_or_else(crossbeam_channel::never, |session| session.agent.events.clone());
            let stop = self.stop.clone();
            select! {
                recv(stop) -> signal => {
                    if let Ok(signal) = signal {
                        self.stop_for(signal);
                        input = crossbeam_channel::never();
                    }
                },
                recv(input) -> item => match item {
                    Ok(item) => self.input(item)?,
                    Err(_) => {
                        self.input_open = false;
                        input = crossbeam_channel::never();
                    }
                },
                recv(announcements) -> call => {
                    if let Ok(call) = call {
                        self.announce(call)?;
                    }
                },
                recv(events) -> event => match event {
                    Ok(event) => self.event(event)?,
                    Err(_) => {
                        // The agent stopped: a turn in progress ends without an outcome.
                        if self.turn.is_some() {
                            self.turn_done(None)?;
                        }
                        self.session = None;
                        if !self.queue.is_empty() {
                            self.queue.clear();
                        }
                    }
                },
            }
        }
    }

    /// A signal: the running turn is cancelled (its processes killed, its end logged) and
    /// nothing more is read; the run ends when the turn has.
    fn stop_for(&mut self, signal: i32) {
        self.stopped_by.get_or_insert(signal);
        self.input_open = false;
        self.queue.clear();
        if let (Some(session), Some(turn)) = (&self.session, &mut self.turn) {
            turn.interrupted = true;
            let _ = session.agent.cmd.send(AgentCommand::Cancel);
        }
    }

    fn input(&mut self, item: Input) -> Result<()> {
        match item {
            Input::Message(message) => self.message(&message),
            Input::Control { request_id, request } => {
                let answer = self.control(&request);
                self.peer.respond(&request_id, answer);
                Ok(())
            }
            Input::Bad { line, error } => {
                let error = format!("stdin line {line}: {error}");
                (self.notice)(&format!("codecoder: {error}; the line was skipped"));
                self.refuse(error)
            }
            Input::End(error) => {
                if let Some(error) = error {
                    (self.notice)(&format!("codecoder: reading stdin failed: {error}"));
                }
                self.input_open = false;
                Ok(())
            }
        }
    }

    /// A message on stdin: a user message is run (or waits for the turn in progress).
    fn message(&mut self, message: &Value) -> Result<()> {
        let kind = message.get("type").and_then(Value::as_str).unwrap_or_default();
        if kind != "user" {
            let what = if kind.is_empty() {
                "a message without a type".to_owned()
            } else {
                format!("a `{kind}` message")
            };
            (self.notice)(&format!("codecoder: stdin: {what} is not understood; it was skipped"));
            return self.refuse(format!("stdin: {what} is not understood"));
        }
        let input = match user_input(message.get("message").unwrap_or(&Value::Null)) {
            Ok(input) => input,
            Err(error) => {
                (self.notice)(&format!("codecoder: stdin: {error}"));
                return self.refuse(format!("stdin: {error}"));
            }
        };
        if self.args.replay_user_messages {
            // The echo carries the session's id: the session starts first if it has not.
            if self.session.is_none() {
                self.start_session(&ContentItem::joined_text(&input.content))?;
            }
            let mut echoed = message.clone();
            if let Some(object) = echoed.as_object_mut() {
                object.insert("session_id".to_owned(), json!(self.session_id()));
                object.insert("isReplay".to_owned(), json!(true));
                object.entry("parent_tool_use_id").or_insert(Value::Null);
            }
            self.peer.frame(&echoed).map_err(Error::Output)?;
        }
        if self.turn.is_some() {
            self.queue.push_back(input);
            return Ok(());
        }
        self.submit(input)
    }

    fn session_id(&self) -> String {
        self.session.as_ref().map(|s| s.agent.session_id().to_string()).unwrap_or_default()
    }

    /// Starts the session if needed, says `system/init`, and starts a turn.
    fn submit(&mut self, input: UserInput) -> Result<()> {
        if self.session.is_none() {
            let first = ContentItem::joined_text(&input.content);
            self.start_session(&first)?;
        }
        let Some(session) = &self.session else { return Ok(()) };
        // The first request waits for the MCP servers anyway; `init` then says how they are. A
        // signal during the wait stops the run before the turn starts.
        match session.wait_for_mcp_or(&self.stop) {
            Ok(()) => {}
            Err(Some(signal)) => {
                self.stop_for(signal);
                return Ok(());
            }
            Err(None) => session.wait_for_mcp(),
        }
        let Some(session) = &self.session else { return Ok(()) };
        let uuid = self.translator.as_mut().map_or_else(String::new, Translator::uuid);
        let init = self.init_frame(session, uuid);
        self.peer.frame(&init).map_err(Error::Output)?;
        self.turn = Some(Turn::new(input.clone()));
        if session.agent.cmd.send(AgentCommand::Submit(input)).is_err() {
            self.turn_done(None)?;
        }
        Ok(())
    }

    fn start_session(&mut self, first_prompt: &str) -> Result<()> {
        let args = &self.args;
        let start = match (&args.resume, args.continue_session, args.fork_session) {
            (Some(id), _, false) => Start::Resume(Some(id.clone())),
            (Some(id), _, true) => Start::Fork(id.clone()),
            (None, true, false) => Start::Resume(None),
            (None, true, true) => Start::Fork(self.newest_session()?),
            (None, false, _) => Start::New,
        };
        let session_id = match (&args.session_id, &start) {
            (None, _) => None,
            (Some(id), Start::New) => Some(
                id.parse()
                    .map_err(|_| Error::Usage(format!("--session-id: `{id}` is not a UUID")))?,
            ),
            (Some(_), _) => {
                return Err(Error::Usage(
                    "--session-id names a new session: it cannot go with --resume, --continue or --fork-session".to_owned(),
                ));
            }
        };
        let request = SessionRequest { start, session_id, ..self.session_request(first_prompt) };
        self.open(&request)
    }

    /// What every start of the session asks for (a new session by default).
    fn session_request(&self, first_prompt: &str) -> SessionRequest {
        let args = &self.args;
        SessionRequest {
            model: self.setup.model.clone(),
            ephemeral: args.no_persistence,
            output_schema: self.setup.json_schema.clone(),
            interactive: self.asks_sdk(),
            first_prompt: Some(first_prompt.to_owned()),
            mcp_servers: self.setup.mcp_servers.clone(),
            system_prompt: self.setup.system_prompt.clone().filter(|p| !p.trim().is_empty()),
            append_system_prompt: self.setup.append_system_prompt.clone(),
            max_steps: args.max_turns,
            strict_mcp_servers: args.strict_mcp_config,
            builtin_tools: args.tools.clone(),
            // A bare tool name in --disallowedTools takes the tool away, as in Claude Code.
            hidden_tools: args
                .disallowed_tools
                .iter()
                .filter(|rule| !rule.contains('('))
                .cloned()
                .collect(),
            max_budget_usd: args.max_budget_usd,
            hooks: codecoder_app::FrontendHooks(self.hooks()),
            agents: self.setup.agents.clone(),
            ..SessionRequest::new()
        }
    }

    /// The SDK's hook callbacks, and its permission callback when it answers permissions.
    fn hooks(&self) -> Vec<codecoder_app::CallbackHook> {
        let mut hooks = self.setup.hooks.clone();
        // Installed with the prompt tool even in dontAsk: the mode may change while the session
        // runs, and the callback refuses unasked while it is dontAsk.
        if self.prompt_tool() {
            hooks.push(crate::sdk::can_use_tool(&self.peer, &self.permissions));
        }
        hooks
    }

    /// Starts the agent `request` asks for and makes it this run's session.
    fn open(&mut self, request: &SessionRequest) -> Result<()> {
        let session = self.runtime.start(request).map_err(Error::Runtime)?;
        for notice in &session.notices {
            (self.notice)(&notice.to_string());
        }
        if let Some(mode) = self.setup.mode {
            apply_mode(&session, mode, self.prompt_tool(), &self.permissions);
        }
        if self.args.max_budget_usd.is_some() && session.pricing.input.is_none() {
            (self.notice)(&format!(
                "warning: no prices are known for model `{}`: --max-budget-usd cannot be enforced (set [models.\"{}\"] input_price and output_price in config.toml)",
                session.model, session.model
            ));
        }
        self.translator = Some(Translator::new(
            session.agent.session_id().to_string(),
            session.model.clone(),
            self.args.include_partial_messages,
        ));
        *self.permissions.agent.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(session.agent.cmd.clone());
        *self.permissions.controls.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(session.controls.clone());
        *self.permissions.cwd.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(session.cwd.clone());
        self.session = Some(session);
        Ok(())
    }

    /// Restarts the agent on the same session with the model `set_model` chose.
    fn restart(&mut self) -> Result<()> {
        self.switch_model = false;
        let Some(session) = self.session.take() else { return Ok(()) };
        let id = session.agent.session_id().to_string();
        let _ = session.agent.shutdown();
        let request = SessionRequest {
            start: Start::Resume(Some(id)),
            model: self.setup.model.clone(),
            ..self.session_request("")
        };
        self.open(&request)
    }

    fn newest_session(&self) -> Result<String> {
        let cwd = self.runtime.cwd().to_string_lossy().into_owned();
        let mut notices = Vec::new();
        let listed =
            codecoder_app::list_sessions(self.runtime.home(), Some(&cwd), None, &mut notices)
                .map_err(Error::Runtime)?;
        listed
            .sessions
            .into_iter()
            .find(|s| s.problem.is_none())
            .map(|s| s.id.to_string())
            .ok_or_else(|| Error::Usage(format!("--continue: no session to continue in {cwd}")))
    }

    /// The SDK answers permissions (`--permission-prompt-tool stdio`), except in `dontAsk`,
    /// where what no rule allows is refused unasked.
    fn asks_sdk(&self) -> bool {
        self.prompt_tool() && self.setup.mode != Some(ClaudeMode::DontAsk)
    }

    /// `--permission-prompt-tool stdio` was given.
    fn prompt_tool(&self) -> bool {
        self.args.permission_prompt_tool.as_deref() == Some("stdio")
    }

    fn init_frame(&self, session: &RunningSession, uuid: String) -> Value {
        let names = |items: &[(String, String)]| -> Vec<String> {
            items.iter().map(|(name, _)| name.clone()).collect()
        };
        // The MCP servers' tools too (they have settled: `submit` waited for them).
        if let Some(late) = session.tools.late() {
            late.poll();
        }
        let tools: Vec<String> = session
            .tools
            .all()
            .iter()
            .map(|tool| codecoder_protocol::claude_tool_name(tool.name()).to_owned())
            .collect();
        let mcp: Vec<Value> = session
            .mcp_statuses()
            .into_iter()
            .map(|(name, status)| json!({"name": name, "status": status}))
            .collect();
        json!({
            "type": "system",
            "subtype": "init",
            "session_id": session.agent.session_id().to_string(),
            "cwd": session.cwd,
            "tools": tools,
            "mcp_servers": mcp,
            "model": session.model,
            "permissionMode": self.mode_now(session).as_str(),
            "apiKeySource": api_key_source(session),
            "slash_commands": names(&session.catalog.commands),
            "output_style": "default",
            "agents": names(&session.catalog.agents),
            "skills": names(&session.catalog.skills),
            "plugins": [],
            "claude_code_version": CLAUDE_PROTOCOL_VERSION,
            "codecoder_version": env!("CARGO_PKG_VERSION"),
            "uuid": uuid,
        })
    }

    fn mode_now(&self, session: &RunningSession) -> ClaudeMode {
        match self.setup.mode {
            Some(mode @ (ClaudeMode::BypassPermissions | ClaudeMode::DontAsk)) => mode,
            _ => match session.controls.permission_mode() {
                codecoder_app::PermissionMode::Default => ClaudeMode::Default,
                codecoder_app::PermissionMode::AcceptEdits => ClaudeMode::AcceptEdits,
                codecoder_app::PermissionMode::Plan => ClaudeMode::Plan,
            },
        }
    }

    /// A control request of the SDK; the answer is its response.
    fn control(&mut self, request: &Value) -> std::result::Result<Value, String> {
        let subtype = request.get("subtype").and_then(Value::as_str).unwrap_or_default();
        match subtype {
            "initialize" => self.initialize(request),
            "interrupt" => {
                if let (Some(session), Some(turn)) = (&self.session, &mut self.turn) {
                    turn.interrupted = true;
                    let _ = session.agent.cmd.send(AgentCommand::Cancel);
                    // What the turn still waits for from the SDK is withdrawn, as Claude Code
                    // does: the call it is about is not approved.
                    self.peer.withdraw_all("the turn was interrupted");
                }
                Ok(json!({}))
            }
            "set_permission_mode" => {
                let text = request.get("mode").and_then(Value::as_str).unwrap_or_default();
                let mode = ClaudeMode::parse(text)
                    .ok_or_else(|| format!("set_permission_mode: unknown mode `{text}`"))?;
                if let Some(session) = &self.session {
                    if matches!(mode, ClaudeMode::BypassPermissions) {
                        return Err("set_permission_mode: bypassPermissions can only be chosen at start (--permission-mode), since it also leaves the sandbox".to_owned());
                    }
                    apply_mode(session, mode, self.prompt_tool(), &self.permissions);
                }
                self.setup.mode = Some(mode);
                Ok(json!({"mode": mode.as_str()}))
            }
            "set_model" => {
                // `null`: the configured model.
                let model = request.get("model").and_then(Value::as_str).map(str::to_owned);
                let model = model.or_else(|| self.args.model.clone());
                self.setup.model = model;
                if self.session.is_some() {
                    if self.args.no_persistence {
                        return Err("set_model: a session without persistence cannot switch models (its agent restarts on the session's log)".to_owned());
                    }
                    // Between turns at once; during one, when it ends.
                    self.switch_model = true;
                    if self.turn.is_none() {
                        self.restart().map_err(|err| format!("set_model: {err}"))?;
                    }
                }
                Ok(json!({}))
            }
            "mcp_status" => {
                let list: Vec<Value> = match &self.session {
                    Some(session) => session
                        .mcp_statuses()
                        .into_iter()
                        .map(|(name, status)| json!({"name": name, "status": status}))
                        .collect(),
                    None => {
                        let (servers, _) = self.runtime.mcp_servers();
                        let names = servers.iter().map(|s| s.name.clone());
                        names
                            .chain(self.setup.mcp_servers.iter().map(|s| s.name.clone()))
                            .map(|name| json!({"name": name, "status": "pending"}))
                            .collect()
                    }
                };
                Ok(json!({"mcpServers": list}))
            }
            // Thinking budgets are the model's configuration (`model_reasoning_effort`).
            "set_max_thinking_tokens" => Ok(json!({})),
            "" => Err("a control request without a subtype".to_owned()),
            other => Err(format!("unsupported control request subtype: {other}")),
        }
    }

    fn initialize(&mut self, request: &Value) -> std::result::Result<Value, String> {
        if self.session.is_some() {
            return Err("initialize must come before the first message".to_owned());
        }
        let text = |value: &Value| match value {
            Value::String(text) => Some(text.clone()),
            Value::Array(parts) => {
                Some(parts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n"))
            }
            _ => None,
        };
        if let Some(prompt) = request.get("systemPrompt").and_then(text) {
            self.setup.system_prompt = Some(prompt);
        }
        if let Some(append) = request.get("appendSystemPrompt").and_then(text) {
            self.setup.append_system_prompt = Some(append).filter(|a| !a.is_empty());
        }
        if let Some(schema) = request.get("jsonSchema").filter(|s| !s.is_null()) {
            self.setup.json_schema = Some(schema.clone());
        }
        let sdk_servers = request.get("sdkMcpServers").and_then(Value::as_array);
        for name in
            sdk_servers.map(Vec::as_slice).unwrap_or_default().iter().filter_map(Value::as_str)
        {
            self.setup.mcp_servers.retain(|s| s.name != name);
            self.setup.mcp_servers.push(crate::sdk::server(name, &self.peer));
        }
        if let Some(hooks) = request.get("hooks").and_then(Value::as_object) {
            self.setup.hooks = crate::sdk::hooks(hooks, &self.peer)?;
        }
        let mut response = json!({
            "commands": [],
            "agents": [],
            "output_style": "default",
            "available_output_styles": ["default"],
            "models": [{"value": self.setup.model.clone().or_else(|| self.runtime.loaded().config.model.clone()).unwrap_or_default(), "displayName": "default", "description": "the configured model"}],
            "account": {},
            "claude_code_version": CLAUDE_PROTOCOL_VERSION,
            "codecoder_version": env!("CARGO_PKG_VERSION"),
            "hook_on_failure_supported": true,
        });
        if let Some(servers) = request.get("mcpServers").filter(|s| !s.is_null()) {
            let servers = mcp_servers(&json!({"mcpServers": servers}), "initialize", &self.peer)
                .map_err(|err| err.to_string())?;
            self.setup.mcp_servers.extend(servers);
            response["mcp_servers_applied"] = json!(true);
        }
        // Settings and denied tools shape the session's rules and hooks: the runtime is
        // loaded again with them before the session starts.
        let settings = request.get("settings").filter(|s| !s.is_null());
        let disallowed = request.get("disallowedTools").and_then(Value::as_array);
        if settings.is_some() || disallowed.is_some() {
            let mut args = self.args.clone();
            match settings {
                Some(Value::String(text)) => args.settings = Some(text.clone()),
                Some(value) => args.settings = Some(value.to_string()),
                None => {}
            }
            if let Some(denied) = disallowed {
                args.disallowed_tools
                    .extend(denied.iter().filter_map(Value::as_str).map(str::to_owned));
            }
            let overrides = crate::overrides(&args).map_err(|err| format!("initialize: {err}"))?;
            self.runtime = Runtime::load(overrides).map_err(|err| format!("initialize: {err}"))?;
            if settings.is_some() {
                response["settings_applied"] = json!(true);
            }
            if disallowed.is_some() {
                response["disallowed_tools_applied"] = json!(true);
            }
        }
        // Everything the session needs is known: it starts now, so its MCP servers connect
        // (and the SDK's in-process ones are asked) before the first message.
        if let Some(agents) = request.get("agents").and_then(Value::as_object) {
            self.setup.agents =
                agents.iter().map(|(name, agent)| agent_type(name, agent)).collect();
        }
        self.start_session("").map_err(|err| format!("starting the session: {err}"))?;
        if let Some(session) = &self.session {
            let catalog = &session.catalog;
            let named = |items: &[(String, String)]| -> Vec<Value> {
                items
                    .iter()
                    .map(|(name, description)| json!({"name": name, "description": description}))
                    .collect()
            };
            let mut commands = named(&catalog.commands);
            for command in &mut commands {
                command["argumentHint"] = json!("");
            }
            response["commands"] = json!(commands);
            response["agents"] = json!(named(&catalog.agents));
            response["models"] = json!([{"value": session.model, "displayName": session.model, "description": format!("{} (provider {})", session.model, session.provider_id)}]);
        }
        Ok(response)
    }

    fn event(&mut self, event: AgentEvent) -> Result<()> {
        let root = event.source.subagent_path.is_empty();
        if let Some(translator) = &mut self.translator {
            for frame in translator.event(&event) {
                self.peer.frame(&frame).map_err(Error::Output)?;
            }
        }
        match event.kind {
            AgentEventKind::StepStarted { .. } => {
                if let Some(turn) = &mut self.turn {
                    turn.step_started = Some(Instant::now());
                    if root {
                        turn.num_turns += 1;
                    }
                }
            }
            AgentEventKind::AgentMessage { .. } => self.stream_done(),
            AgentEventKind::StepFinished { usage, text, .. } => {
                self.stream_done();
                self.add_usage(usage);
                if root
                    && !text.trim().is_empty()
                    && let Some(turn) = &mut self.turn
                {
                    turn.final_text = text;
                }
            }
            AgentEventKind::Warning { message } => {
                (self.notice)(&format!("warning: {message}"));
                if let Some(turn) = &mut self.turn {
                    turn.errors.push(message);
                }
            }
            AgentEventKind::ToolFinished {
                call,
                result: Err(ToolError::PermissionDenied { .. }),
                ..
            } => {
                let (name, input) = claude_call(&call.name, &call.args);
                let denial = json!({"tool_name": name, "tool_use_id": call.id.to_string(), "tool_input": input});
                let mut denials =
                    self.permissions.denials.lock().unwrap_or_else(PoisonError::into_inner);
                if !denials.iter().any(|d| d["tool_use_id"] == denial["tool_use_id"]) {
                    denials.push(denial);
                }
            }
            AgentEventKind::ApprovalRequest(request) => {
                let parent = event
                    .source
                    .subagent_path
                    .last()
                    .map_or(Value::Null, |id| json!(id.to_string()));
                if let Some(frame) =
                    self.translator.as_mut().and_then(|t| t.announce(parent, &request.call))
                {
                    self.peer.frame(&frame).map_err(Error::Output)?;
                }
                self.approval(request);
            }
            AgentEventKind::AskUser(request) => {
                if request.options.len() == 2
                    && request.options[0] == codecoder_app::PLAN_APPROVE
                    && request.options[1] == codecoder_app::PLAN_KEEP_PLANNING
                {
                    if let Some(turn) = &mut self.turn {
                        turn.plan = Some(request.question.clone());
                    }
                    request.reply.send(AskUserAnswer::Declined);
                } else {
                    request.reply.send(AskUserAnswer::Unavailable {
                        reason: "running headless: no one can answer a question; decide yourself"
                            .to_owned(),
                    });
                }
            }
            AgentEventKind::TurnDone { outcome, .. } if root => self.turn_done(Some(outcome))?,
            _ => {}
        }
        Ok(())
    }

    fn stream_done(&mut self) {
        if let Some(turn) = &mut self.turn
            && let Some(started) = turn.step_started.take()
        {
            turn.api += started.elapsed();
        }
    }

    fn add_usage(&mut self, usage: Usage) {
        let Some(session) = &self.session else { return };
        let cost = session.pricing.cost(&usage).unwrap_or(0.0);
        self.cost += cost;
        let Some(turn) = &mut self.turn else { return };
        turn.usage += usage;
    }

    /// Announces a call the SDK's permission callback is about to be asked about.
    fn announce(&mut self, call: crate::sdk::Announce) -> Result<()> {
        let id = codecoder_protocol::ToolCallId::new(call.id);
        if let Some(frame) = self
            .translator
            .as_mut()
            .and_then(|t| t.announce_claude(Value::Null, &id, &call.name, call.input))
        {
            self.peer.frame(&frame).map_err(Error::Output)?;
        }
        let _ = call.done.send(());
        Ok(())
    }

    /// A permission request that no hook answered: with the SDK's permission callback, it
    /// failed to answer (the hook's error says why); without one, nobody can. Refused, with the
    /// reason the model reads.
    fn approval(&mut self, request: codecoder_protocol::ApprovalRequest) {
        let (name, input) = claude_call(&request.call.name, &request.call.args);
        let denial = json!({"tool_name": name, "tool_use_id": request.call.id.to_string(), "tool_input": input});
        self.permissions.denials.lock().unwrap_or_else(PoisonError::into_inner).push(denial);
        let why = request.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
        let feedback = if self.asks_sdk() {
            format!("the SDK's permission callback gave no answer, so this was not approved{why}")
        } else {
            format!(
                "running headless without a permission prompt tool, nothing that needs approval can run{why}; do without it"
            )
        };
        request.reply.send(ApprovalDecision::DenyWithFeedback { feedback });
    }

    /// The end of the root turn: its `result`, then the next waiting message.
    fn turn_done(&mut self, outcome: Option<TurnOutcome>) -> Result<()> {
        let Some(turn) = self.turn.take() else { return Ok(()) };
        // The model failed and a fallback model was given: the turn is asked again of it, once.
        if let (Some(TurnOutcome::Failed { message }), Some(fallback)) =
            (&outcome, self.args.fallback_model.clone())
            && message.starts_with("model error")
            && !self.fallback_used
            && !self.args.no_persistence
        {
            self.fallback_used = true;
            (self.notice)(&format!(
                "codecoder: the model failed ({message}); asking the fallback model `{fallback}`"
            ));
            self.setup.model = Some(fallback);
            self.restart()?;
            return self.submit(turn.input);
        }
        let interrupted = turn.interrupted;
        let result = self.result(turn, outcome);
        // An interrupt is the caller's own doing: its result says so, the exit status does not.
        self.last_error = result["is_error"] == json!(true) && !interrupted;
        self.peer.frame(&result).map_err(Error::Output)?;
        self.answer = Some(result);
        if self.switch_model
            && let Err(err) = self.restart()
        {
            (self.notice)(&format!("codecoder: set_model: {err}"));
        }
        if let Some(next) = self.queue.pop_front() {
            self.submit(next)?;
        }
        Ok(())
    }

    fn result(&mut self, turn: Turn, outcome: Option<TurnOutcome>) -> Value {
        let session_id = self.session_id();
        let model = self.session.as_ref().map(|s| s.model.clone()).unwrap_or_default();
        let pricing = self.session.as_ref().map(|s| s.pricing).unwrap_or_default();
        let window = self.session.as_ref().map_or(0, |s| s.context_window);
        let turn_cost = pricing.cost(&turn.usage).unwrap_or(0.0);
        if pricing.input.is_none() && !self.priced_note {
            self.priced_note = true;
            (self.notice)(&format!(
                "note: no prices are known for model `{model}`; total_cost_usd is 0"
            ));
        }
        let usage = json!({
            "input_tokens": turn.usage.input_tokens.saturating_sub(turn.usage.cached_input_tokens),
            "output_tokens": turn.usage.output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": turn.usage.cached_input_tokens,
        });
        let Value::Object(mut object) = json!({
            "type": "result",
            "duration_ms": u64::try_from(turn.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            "duration_api_ms": u64::try_from(turn.api.as_millis()).unwrap_or(u64::MAX),
            "num_turns": turn.num_turns,
            "session_id": session_id,
            "total_cost_usd": self.cost,
            "usage": usage,
            "modelUsage": {model.clone(): {
                "inputTokens": turn.usage.input_tokens.saturating_sub(turn.usage.cached_input_tokens),
                "outputTokens": turn.usage.output_tokens,
                "cacheReadInputTokens": turn.usage.cached_input_tokens,
                "cacheCreationInputTokens": 0,
                "costUSD": turn_cost,
                "contextWindow": window,
            }},
            "permission_denials": std::mem::take(&mut *self.permissions.denials.lock().unwrap_or_else(PoisonError::into_inner)),
            "uuid": self.translator.as_mut().map_or_else(String::new, Translator::uuid),
        }) else {
            return Value::Null;
        };
        let object = &mut object;
        let error = |object: &mut Map<String, Value>, subtype: &str, errors: Vec<String>| {
            object.insert("subtype".to_owned(), json!(subtype));
            object.insert("is_error".to_owned(), json!(true));
            object.insert("stop_reason".to_owned(), Value::Null);
            object.insert("errors".to_owned(), json!(errors));
        };
        match outcome {
            Some(TurnOutcome::Failed { message })
                if message.starts_with(codecoder_app::BUDGET_REACHED) =>
            {
                let budget = self.args.max_budget_usd.unwrap_or_default();
                error(
                    object,
                    "error_max_budget_usd",
                    vec![format!("Reached maximum budget (${budget}): {message}")],
                );
            }
            Some(TurnOutcome::Completed) => {
                let text = turn.plan.clone().unwrap_or(turn.final_text);
                object.insert("subtype".to_owned(), json!("success"));
                object.insert("is_error".to_owned(), json!(false));
                object.insert("stop_reason".to_owned(), json!("end_turn"));
                if let Some(schema) = &self.setup.json_schema {
                    match serde_json::from_str::<Value>(text.trim()) {
                        Ok(value) if codecoder_app::validate_schema(schema, &value).is_ok() => {
                            object.insert("structured_output".to_owned(), value);
                        }
                        _ => {
                            let why = codecoder_app::check_final_message(schema, &text)
                                .err()
                                .unwrap_or_default();
                            error(object, "error_max_structured_output_retries", vec![why]);
                            return Value::Object(std::mem::take(object));
                        }
                    }
                }
                object.insert("result".to_owned(), json!(text));
            }
            Some(TurnOutcome::Failed { message })
                if self.args.max_turns.is_some_and(|max| turn.num_turns >= max)
                    && message.starts_with(codecoder_app::STEP_LIMIT_REACHED) =>
            {
                let max = self.args.max_turns.unwrap_or_default();
                error(
                    object,
                    "error_max_turns",
                    vec![format!("Reached maximum number of turns ({max})")],
                );
            }
            Some(TurnOutcome::Failed { message }) => {
                // A failure of the model's API: Claude's `success` with `is_error`.
                object.insert("subtype".to_owned(), json!("success"));
                object.insert("is_error".to_owned(), json!(true));
                object.insert("stop_reason".to_owned(), Value::Null);
                object.insert("result".to_owned(), json!(message));
            }
            Some(TurnOutcome::Cancelled | TurnOutcome::Interrupted) => {
                let mut errors = turn.errors;
                errors.push(if turn.interrupted {
                    "the turn was interrupted".to_owned()
                } else {
                    "the turn was cancelled".to_owned()
                });
                error(object, "error_during_execution", errors);
            }
            None => {
                let mut errors = turn.errors;
                errors.push("the agent stopped before the turn ended".to_owned());
                error(object, "error_during_execution", errors);
            }
        }
        Value::Object(std::mem::take(object))
    }

    /// Input that could not be used: during a turn it joins the turn's errors (one `result` per
    /// turn: the SDKs end a turn at the first); between turns its own error `result` answers it.
    fn refuse(&mut self, error: String) -> Result<()> {
        match &mut self.turn {
            Some(turn) => {
                turn.errors.push(error);
                Ok(())
            }
            None => self.error_result(vec![error]),
        }
    }

    /// A `result` for input that could not be run.
    fn error_result(&mut self, errors: Vec<String>) -> Result<()> {
        let result = json!({
            "type": "result",
            "subtype": "error_during_execution",
            "is_error": true,
            "duration_ms": 0,
            "duration_api_ms": 0,
            "num_turns": 0,
            "session_id": self.session_id(),
            "total_cost_usd": self.cost,
            "usage": {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
            "modelUsage": {},
            "permission_denials": [],
            "errors": errors,
            "uuid": self.translator.as_mut().map_or_else(String::new, Translator::uuid),
        });
        self.peer.frame(&result).map_err(Error::Output)
    }
}

/// Sets a Claude mode on a running session.
/// Sets a Claude mode on a running session. `prompt_tool`: the SDK answers permissions. The
/// approval mode follows: `untrusted` where someone decides what is not read-only (the SDK; in
/// `dontAsk` the refusal), `never` where nobody does (the sandbox bounds what runs).
fn apply_mode(
    session: &RunningSession,
    mode: ClaudeMode,
    prompt_tool: bool,
    permissions: &crate::sdk::Permissions,
) {
    use codecoder_app::{ApprovalMode, PermissionMode};
    let controls = &session.controls;
    let dont_ask = mode == ClaudeMode::DontAsk;
    permissions.dont_ask.store(dont_ask, std::sync::atomic::Ordering::SeqCst);
    let permission = match mode {
        ClaudeMode::AcceptEdits => PermissionMode::AcceptEdits,
        ClaudeMode::Plan => PermissionMode::Plan,
        ClaudeMode::Default | ClaudeMode::DontAsk => PermissionMode::Default,
        // Chosen at start only (it leaves the sandbox): the overrides carry it.
        ClaudeMode::BypassPermissions => return,
    };
    controls.set_permission_mode(permission);
    controls.set_approval(if dont_ask || prompt_tool {
        ApprovalMode::Untrusted
    } else {
        ApprovalMode::Never
    });
}

/// A subagent type of the SDK's `agents` (`{description, prompt, tools?, model?}`); Claude's
/// model aliases (`sonnet`, `opus`, `haiku`, `inherit`) keep the session's model.
fn agent_type(name: &str, agent: &Value) -> codecoder_app::AgentType {
    let text = |key: &str| agent.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    let tools = agent.get("tools").and_then(Value::as_array).map(|tools| {
        tools
            .iter()
            .filter_map(Value::as_str)
            .map(|tool| codecoder_protocol::our_tool_name(tool).to_owned())
            .collect()
    });
    let model = agent
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !matches!(*m, "sonnet" | "opus" | "haiku" | "inherit" | ""))
        .map(str::to_owned);
    codecoder_app::AgentType {
        name: name.to_owned(),
        description: text("description"),
        instructions: text("prompt"),
        tools,
        model,
        max_steps: None,
    }
}

/// Where the session's API key comes from, as Claude Code reports it: the environment
/// variable that holds it, or `none` (a local server, a key from `codecoder login`).
fn api_key_source(session: &RunningSession) -> String {
    let provider = session.config.model_providers.get(&session.provider_id);
    let var =
        provider.and_then(|p| p.env_key.clone()).or_else(|| match session.provider_id.as_str() {
            "anthropic" => Some("ANTHROPIC_API_KEY".to_owned()),
            "openai" => Some("OPENAI_API_KEY".to_owned()),
            _ => None,
        });
    var.filter(|var| std::env::var_os(var).is_some()).unwrap_or_else(|| "none".to_owned())
}

/// A flag's JSON: the text itself, or the file it names.
pub(crate) fn json_or_file(flag: &str, text: &str) -> Result<Value> {
    let trimmed = text.trim_start();
    let (source, body) = if trimmed.starts_with('{') || trimmed.starts_with('[') {
        (flag.to_owned(), text.to_owned())
    } else {
        let body =
            fs_err::read_to_string(text).map_err(|err| Error::Usage(format!("{flag}: {err}")))?;
        (format!("{flag} {text}"), body)
    };
    serde_json::from_str(&body).map_err(|err| Error::Usage(format!("{source}: not JSON: {err}")))
}

/// The servers of an `{"mcpServers": {...}}` object; an in-process SDK server (`"type":
/// "sdk"`) is reached over `mcp_message` through `peer`.
fn mcp_servers(
    value: &Value,
    source: &str,
    peer: &Arc<Peer>,
) -> Result<Vec<codecoder_app::mcp_client::ServerConfig>> {
    let Some(servers) = value.get("mcpServers").and_then(Value::as_object) else {
        return Err(Error::Usage(format!("{source}: expected {{\"mcpServers\": {{…}}}}")));
    };
    let lookup = |name: &str| std::env::var_os(name);
    let mut out = Vec::new();
    for (name, server) in servers {
        if server.get("type").and_then(Value::as_str) == Some("sdk") {
            out.push(crate::sdk::server(name, peer));
            continue;
        }
        out.push(codecoder_app::mcp_server_config(name, server, &lookup).map_err(Error::Runtime)?);
    }
    Ok(out)
}

/// A stdin `message` (a Messages-API user message) as the agent's input.
fn user_input(message: &Value) -> std::result::Result<UserInput, String> {
    let content = match message.get("content") {
        Some(Value::String(text)) => vec![ContentItem::Text { text: text.clone() }],
        Some(Value::Array(blocks)) => {
            let mut items = Vec::new();
            for block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => items.push(ContentItem::Text {
                        text: block
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    }),
                    Some("image") => {
                        let source = block.get("source").unwrap_or(&Value::Null);
                        match (
                            source.get("type").and_then(Value::as_str),
                            source.get("data").and_then(Value::as_str),
                        ) {
                            (Some("base64"), Some(data)) => items.push(ContentItem::Image(Image {
                                media_type: source
                                    .get("media_type")
                                    .and_then(Value::as_str)
                                    .unwrap_or("image/png")
                                    .to_owned(),
                                data_base64: data.to_owned(),
                            })),
                            _ => return Err("an image block needs a base64 source".to_owned()),
                        }
                    }
                    Some("tool_result") => {
                        let text = match block.get("content") {
                            Some(Value::String(text)) => text.clone(),
                            Some(other) => other.to_string(),
                            None => String::new(),
                        };
                        items.push(ContentItem::Text { text });
                    }
                    Some(other) => {
                        return Err(format!(
                            "a user message block of type `{other}` is not supported"
                        ));
                    }
                    None => return Err("a user message block without a type".to_owned()),
                }
            }
            items
        }
        _ => {
            return Err(
                "a user message needs `message.content`, a string or a list of blocks".to_owned()
            );
        }
    };
    if content.is_empty() {
        return Err("an empty user message".to_owned());
    }
    Ok(UserInput { content })
}
