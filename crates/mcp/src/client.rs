//! The client side of one server connection: what codecoder declares at the handshake and how
//! it answers what the server sends on its own (progress, questions, sampling, log messages,
//! a changed tool list).
//!
//! Invariants: the handler never blocks the runtime: what needs the person or the model goes
//! to the thread of the call in flight (`Interaction`) and is awaited on a oneshot; a server
//! asking with no call of its own in flight is declined; a log line is written whole, one
//! `write` per line, so concurrent servers do not interleave inside a line.

// Sampling and logging are deprecated by the stateless revision, still what legacy servers use.
#![allow(deprecated)]

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use crossbeam_channel::Sender;
use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, ErrorData,
    FormElicitationCapability, Implementation, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::config::ServerConfig;
use crate::manager::Options;

/// What a server asks of the thread running one of its calls.
pub(crate) enum Interaction {
    /// A progress line for the person.
    Progress(String),
    /// A form for the person (`elicitation/create`): `schema` is the requested schema as JSON;
    /// the reply is the `ElicitResult` as JSON.
    Elicit { message: String, schema: Value, reply: oneshot::Sender<Value> },
    /// A sampling request (`sampling/createMessage`) as JSON; the reply is the
    /// `CreateMessageResult` as JSON, or why it was declined.
    Sample { params: Value, reply: oneshot::Sender<Result<Value, String>> },
}

/// What a handler passes on to the runtime's loop.
pub(crate) enum Internal {
    /// The server's tool list changed.
    ToolsChanged { server: String },
}

/// A server's calls in flight: by progress token, newest last.
#[derive(Default)]
pub(crate) struct Calls {
    by_token: HashMap<ProgressToken, Sender<Interaction>>,
    order: Vec<ProgressToken>,
    untracked: u64,
}

impl Calls {
    fn lock(calls: &Mutex<Self>) -> std::sync::MutexGuard<'_, Self> {
        calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn register(calls: &Mutex<Self>, token: ProgressToken, to: Sender<Interaction>) {
        let mut calls = Self::lock(calls);
        calls.order.push(token.clone());
        calls.by_token.insert(token, to);
    }

    /// Registers a call whose progress token the peer chose and did not say (a stateless
    /// connection's `call_tool`): it gets questions as the newest call, and progress of
    /// tokens no call registered. Returns the key to unregister it with.
    pub(crate) fn register_untracked(
        calls: &Mutex<Self>,
        to: Sender<Interaction>,
    ) -> ProgressToken {
        let mut calls = Self::lock(calls);
        calls.untracked += 1;
        let token = ProgressToken(rmcp::model::NumberOrString::String(
            format!("codecoder-untracked-{}", calls.untracked).into(),
        ));
        calls.order.push(token.clone());
        calls.by_token.insert(token.clone(), to);
        token
    }

    pub(crate) fn unregister(calls: &Mutex<Self>, token: &ProgressToken) {
        let mut calls = Self::lock(calls);
        calls.by_token.remove(token);
        calls.order.retain(|t| t != token);
    }

    fn of(calls: &Mutex<Self>, token: &ProgressToken) -> Option<Sender<Interaction>> {
        Self::lock(calls).by_token.get(token).cloned()
    }

    fn newest(calls: &Mutex<Self>) -> Option<Sender<Interaction>> {
        let calls = Self::lock(calls);
        calls.order.last().and_then(|token| calls.by_token.get(token)).cloned()
    }
}

/// Where the servers' log lines go: one file for the session, appended.
#[derive(Clone)]
pub(crate) struct Logger {
    path: Option<Arc<PathBuf>>,
}

impl Logger {
    pub(crate) fn new(path: Option<PathBuf>) -> Self {
        Self { path: path.map(Arc::new) }
    }

    /// Appends `<time> <server> <level>: <text>`; a failure to write is dropped (the log is
    /// for diagnosis; the session goes on without it).
    pub(crate) fn line(&self, server: &str, level: &str, text: &str) {
        let Some(path) = &self.path else { return };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let text = text.replace('\n', "\n    ");
        let line =
            format!("{} mcp[{server}] {level}: {text}\n", codecoder_stdx::format_utc_ms(now));
        let file = fs_err::OpenOptions::new().create(true).append(true).open(path.as_path());
        if let Ok(mut file) = file {
            let _ = file.write_all(line.as_bytes());
        }
    }
}

/// The handler of one server's connection.
pub(crate) struct Client {
    server: String,
    info: ClientConfig,
    sampling: bool,
    logger: Logger,
    calls: Arc<Mutex<Calls>>,
    internal: mpsc::UnboundedSender<Internal>,
}

impl Client {
    pub(crate) fn new(
        config: &ServerConfig,
        options: &Options,
        logger: Logger,
        calls: Arc<Mutex<Calls>>,
        internal: mpsc::UnboundedSender<Internal>,
    ) -> Self {
        let sampling = config.sampling && options.sampler.is_some();
        let mut capabilities = ClientCapabilities::default();
        if options.elicitation {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        }
        if sampling {
            capabilities.sampling = Some(Default::default());
        }
        let mut info = ClientConfig::default();
        info.capabilities = capabilities;
        info.client_info = Implementation::new("codecoder", env!("CARGO_PKG_VERSION"));
        Self { server: config.name.clone(), info, sampling, logger, calls, internal }
    }

    fn sampling_off(&self) -> String {
        let server = &self.server;
        format!(
            "codecoder declined the sampling request: sampling is off for MCP server `{server}` (set `sampling = true` in [mcp_servers.{server}] to let it use the session's model)"
        )
    }
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        let to = Calls::of(&self.calls, &params.progress_token).or_else(|| {
            // On a stateless connection the peer chose the call's token: the newest call.
            crate::manager::is_stateless(&context.peer)
                .then(|| Calls::newest(&self.calls))
                .flatten()
        });
        let Some(to) = to else { return };
        let mut line = match params.total {
            Some(total) => format!("progress {}/{total}", params.progress),
            None => format!("progress {}", params.progress),
        };
        if let Some(message) = params.message.filter(|m| !m.is_empty()) {
            line.push_str(": ");
            line.push_str(&message);
        }
        let _ = to.send(Interaction::Progress(line));
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let level = serde_json::to_value(params.level)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "info".to_owned());
        let data = match &params.data {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let text = match &params.logger {
            Some(logger) => format!("{logger}: {data}"),
            None => data,
        };
        self.logger.line(&self.server, &level, &text);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.internal.send(Internal::ToolsChanged { server: self.server.clone() });
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let decline = Ok(ElicitResult::new(ElicitationAction::Decline));
        if self.info.capabilities.elicitation.is_none() {
            self.logger.line(&self.server, "info", "declined a question: no one to ask");
            return decline;
        }
        let (message, schema) = match request {
            ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } => {
                (message, serde_json::to_value(&requested_schema).unwrap_or(Value::Null))
            }
            // Only forms are declared.
            _ => return decline,
        };
        let Some(to) = Calls::newest(&self.calls) else {
            self.logger.line(&self.server, "info", "declined a question asked outside a call");
            return decline;
        };
        let (reply, answer) = oneshot::channel();
        if to.send(Interaction::Elicit { message, schema, reply }).is_err() {
            return decline;
        }
        match answer.await {
            Ok(result) => serde_json::from_value(result)
                .map_err(|err| ErrorData::internal_error(err.to_string(), None)),
            Err(_) => Ok(ElicitResult::new(ElicitationAction::Cancel)),
        }
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let declined = |message: String| ErrorData::invalid_request(message, None);
        if !self.sampling {
            let message = self.sampling_off();
            self.logger.line(&self.server, "info", &message);
            return Err(declined(message));
        }
        let Some(to) = Calls::newest(&self.calls) else {
            return Err(declined(
                "codecoder declined the sampling request: it answers sampling only during a call of one of the server's tools".to_owned(),
            ));
        };
        let params = serde_json::to_value(&params)
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
        let (reply, answer) = oneshot::channel();
        if to.send(Interaction::Sample { params, reply }).is_err() {
            return Err(declined(
                "codecoder declined the sampling request: the call ended".to_owned(),
            ));
        }
        match answer.await {
            Ok(Ok(result)) => serde_json::from_value(result)
                .map_err(|err| ErrorData::internal_error(err.to_string(), None)),
            Ok(Err(message)) => {
                self.logger.line(&self.server, "error", &message);
                Err(declined(message))
            }
            Err(_) => {
                Err(declined("codecoder declined the sampling request: the call ended".to_owned()))
            }
        }
    }
}
