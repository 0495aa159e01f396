//! The session table: a named thread that owns every ACP session of the connection and serves
//! the client's requests in order — `initialize`, `session/new`, `session/load`,
//! `session/prompt`, `session/cancel`, `session/set_mode` — starting sessions through the
//! runtime (`codecoder_app`) and handing each to its bridge thread.
//!
//! Invariants: the connection's handlers only forward to this thread, so the SDK's dispatch
//! loop never waits on a session start; every request is answered (an unknown session is an
//! `invalid_params` error); when the connection ends every session is shut down and its
//! bridge joined.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::{Client, Error as AcpError, ErrorCode};
use codecoder_app::history::{self, Detail, LoadedSession, ReplayConfig, Rewound, Viewer};
use codecoder_app::mcp_client::{ServerConfig, Transport};
use codecoder_app::{Overrides, Runtime, SessionControls, SessionRequest, Start};
use codecoder_protocol::ApprovalMode;
use codecoder_stdx::JoinOnDrop;
use crossbeam_channel::{Receiver, Sender};

use crate::bridge::{Bridge, Command};
use crate::files::ClientFiles;
use crate::{ServeConfig, live, translate};

/// A client request, forwarded by the connection's handlers.
pub(crate) enum Op {
    Initialize(Box<acp::InitializeRequest>, Responder<acp::InitializeResponse>),
    NewSession(acp::NewSessionRequest, Responder<acp::NewSessionResponse>, ConnectionTo<Client>),
    LoadSession(acp::LoadSessionRequest, Responder<acp::LoadSessionResponse>, ConnectionTo<Client>),
    Prompt(acp::PromptRequest, Responder<acp::PromptResponse>),
    Cancel(acp::CancelNotification),
    SetMode(acp::SetSessionModeRequest, Responder<acp::SetSessionModeResponse>),
    Authenticate(Responder<acp::AuthenticateResponse>),
}

struct Session {
    // Declared before `thread`: the bridge is told to stop before it is joined.
    commands: Sender<Command>,
    controls: SessionControls,
    thread: JoinOnDrop<()>,
}

impl Session {
    fn shut_down(self) {
        let Self { commands, thread, .. } = self;
        let _ = commands.send(Command::Shutdown);
        let _ = thread.join();
    }
}

pub(crate) struct Server {
    config: ServeConfig,
    fs: acp::FileSystemCapabilities,
    /// The client takes form elicitations (`elicitation.form`): questions are asked.
    questions: bool,
    /// The client advertised `_meta.terminal_output` (Zed's terminal extension): commands are
    /// shown as terminals.
    terminal_output: bool,
    sessions: HashMap<String, Session>,
}

fn error(code: ErrorCode, message: impl Into<String>) -> AcpError {
    AcpError::new(code, message)
}

impl Server {
    pub(crate) fn new(config: ServeConfig) -> Self {
        Self {
            config,
            fs: acp::FileSystemCapabilities::new(),
            questions: false,
            terminal_output: false,
            sessions: HashMap::new(),
        }
    }

    /// Serves ops until the connection's handlers are gone, then shuts every session down.
    pub(crate) fn run(mut self, ops: &Receiver<Op>) {
        for op in ops {
            self.op(op);
        }
        for (_, session) in self.sessions.drain() {
            session.shut_down();
        }
    }

    fn op(&mut self, op: Op) {
        match op {
            Op::Initialize(request, responder) => {
                self.fs = request.client_capabilities.fs.clone();
                self.terminal_output = request
                    .client_capabilities
                    .meta
                    .as_ref()
                    .and_then(|meta| meta.get("terminal_output"))
                    .and_then(serde_json::Value::as_bool)
                    .unwrap_or(false);
                self.questions = request
                    .client_capabilities
                    .elicitation
                    .as_ref()
                    .is_some_and(|elicitation| elicitation.form.is_some());
                let capabilities = acp::AgentCapabilities::new()
                    .load_session(true)
                    .prompt_capabilities(
                        acp::PromptCapabilities::new().image(true).embedded_context(true),
                    )
                    .mcp_capabilities(acp::McpCapabilities::new().http(true).sse(true));
                let info = acp::Implementation::new("codecoder", env!("CARGO_PKG_VERSION"))
                    .title("codecoder".to_owned());
                let response = acp::InitializeResponse::new(
                    agent_client_protocol::schema::ProtocolVersion::V1,
                )
                .agent_capabilities(capabilities)
                .agent_info(info);
                let _ = responder.respond(response);
            }
            Op::Authenticate(responder) => {
                let _ = responder.respond(acp::AuthenticateResponse::new());
            }
            Op::NewSession(request, responder, connection) => {
                let started = self.start(
                    &request.cwd,
                    &request.mcp_servers,
                    Start::New,
                    connection,
                    |_, _, _| {},
                );
                let _ = match started {
                    Ok((id, approval)) => responder.respond(
                        acp::NewSessionResponse::new(id).modes(translate::modes(approval)),
                    ),
                    Err(err) => responder.respond_with_error(err),
                };
            }
            Op::LoadSession(request, responder, connection) => {
                let id = request.session_id.0.to_string();
                // A session open here is closed first (its log has one writer); the mode the
                // editor set on it carries over.
                let kept_mode = self.sessions.remove(&id).map(|session| {
                    let mode = session.controls.modes().approval;
                    session.shut_down();
                    mode
                });
                let replay = |loaded: &LoadedSession,
                              viewer: &dyn Viewer,
                              connection: &ConnectionTo<Client>| {
                    let config = ReplayConfig {
                        viewer,
                        detail: Detail::Conversation,
                        rewound: Rewound::Skip,
                    };
                    let events = history::events(loaded, &config);
                    for update in live::replay(events, PathBuf::from(&loaded.meta.cwd)) {
                        let notification = acp::SessionNotification::new(id.clone(), update);
                        let _ = connection.send_notification(notification);
                    }
                };
                let started = self.start(
                    &request.cwd,
                    &request.mcp_servers,
                    Start::Resume(Some(id.clone())),
                    connection,
                    replay,
                );
                let _ = match started {
                    Ok((_, mut approval)) => {
                        if let (Some(mode), Some(session)) = (kept_mode, self.sessions.get(&id)) {
                            session.controls.set_approval(mode);
                            approval = mode;
                        }
                        responder.respond(
                            acp::LoadSessionResponse::new().modes(translate::modes(approval)),
                        )
                    }
                    Err(err) => responder.respond_with_error(err),
                };
            }
            Op::Prompt(request, responder) => match self.sessions.get(&*request.session_id.0) {
                Some(session) => {
                    let _ = session.commands.send(Command::Prompt(request.prompt, responder));
                }
                None => {
                    let _ = responder.respond_with_error(unknown(&request.session_id));
                }
            },
            Op::Cancel(notification) => {
                if let Some(session) = self.sessions.get(&*notification.session_id.0) {
                    let _ = session.commands.send(Command::Cancel);
                }
            }
            Op::SetMode(request, responder) => {
                let Some(session) = self.sessions.get(&*request.session_id.0) else {
                    let _ = responder.respond_with_error(unknown(&request.session_id));
                    return;
                };
                match request.mode_id.0.parse::<ApprovalMode>() {
                    Ok(mode) => {
                        session.controls.set_approval(mode);
                        let _ = responder.respond(acp::SetSessionModeResponse::new());
                    }
                    Err(err) => {
                        let _ = responder
                            .respond_with_error(error(ErrorCode::INVALID_PARAMS, err.to_string()));
                    }
                }
            }
        }
    }

    /// Starts (or resumes) a session in `cwd` with the client's MCP servers, calls `before`
    /// with its log and its tools' viewer (for a replay) before the bridge runs, and returns
    /// its id and approval mode.
    fn start(
        &mut self,
        cwd: &Path,
        mcp_servers: &[acp::McpServer],
        start: Start,
        connection: ConnectionTo<Client>,
        before: impl FnOnce(&LoadedSession, &dyn Viewer, &ConnectionTo<Client>),
    ) -> Result<(String, ApprovalMode), AcpError> {
        if !cwd.is_absolute() {
            return Err(error(
                ErrorCode::INVALID_PARAMS,
                format!("cwd must be an absolute path: {}", cwd.display()),
            ));
        }
        let overrides = Overrides { cwd: Some(cwd.to_owned()), ..self.config.overrides.clone() };
        let runtime = Runtime::load(overrides).map_err(|err| failure(&err))?;
        for notice in runtime.notices() {
            (self.config.notice)(&notice.to_string());
        }
        let files = (self.fs.read_text_file || self.fs.write_text_file).then(|| {
            Arc::new(ClientFiles {
                connection: connection.clone(),
                session_id: OnceLock::new(),
                read: self.fs.read_text_file,
                write: self.fs.write_text_file,
            })
        });
        let resumed = matches!(start, Start::Resume(_));
        let request = SessionRequest {
            start,
            interactive: true,
            file_access: files.clone().map(|files| files as Arc<dyn codecoder_app::FileAccess>),
            mcp_servers: mcp_configs(mcp_servers, &mut |text| (self.config.notice)(text)),
            ..SessionRequest::new()
        };
        let session = runtime.start(&request).map_err(|err| failure(&err))?;
        for notice in &session.notices {
            (self.config.notice)(&notice.to_string());
        }
        let id = session.agent.session_id().to_string();
        if let Some(files) = &files {
            let _ = files.session_id.set(id.clone());
        }
        if resumed && let Some(path) = session.agent.session_path() {
            match history::load(path) {
                Ok(loaded) => before(&loaded, &*session.tools, &connection),
                Err(err) => (self.config.notice)(&format!("warning: replaying {id}: {err}")),
            }
        }
        let approval = session.controls.modes().approval;
        let (commands, receiver) = crossbeam_channel::unbounded();
        let bridge = Bridge {
            connection,
            session_id: id.clone(),
            cwd: session.cwd.clone(),
            agent: session.agent,
            commands: receiver,
            own: commands.clone(),
            questions: self.questions,
            terminal_output: self.terminal_output,
        };
        let thread =
            codecoder_stdx::spawn_named(format!("acp-session-{}", short(&id)), move || {
                bridge.run();
            })
            .map_err(|err| {
                error(ErrorCode::INTERNAL_ERROR, format!("starting the session: {err}"))
            })?;
        let controls = session.controls;
        self.sessions.insert(id.clone(), Session { commands, controls, thread });
        Ok((id, approval))
    }
}

fn short(id: &str) -> &str {
    id.get(id.len().saturating_sub(8)..).unwrap_or(id)
}

fn unknown(id: &acp::SessionId) -> AcpError {
    error(ErrorCode::INVALID_PARAMS, format!("no session {} in this connection", id.0))
}

fn failure(err: &codecoder_app::Error) -> AcpError {
    let code = if err.is_usage() { ErrorCode::INVALID_PARAMS } else { ErrorCode::INTERNAL_ERROR };
    error(code, err.to_string())
}

/// The client's MCP servers as ours: stdio with the base environment plus theirs, HTTP
/// (streamable) and SSE (the older HTTP+SSE transport) with their headers.
pub(crate) fn mcp_configs(
    servers: &[acp::McpServer],
    notice: &mut dyn FnMut(&str),
) -> Vec<ServerConfig> {
    let lookup = |name: &str| std::env::var_os(name);
    let base = codecoder_app::mcp_client::base_env(&lookup);
    let mut out = Vec::new();
    for server in servers {
        match server {
            acp::McpServer::Stdio(stdio) => {
                let mut env = base.clone();
                env.extend(stdio.env.iter().map(|var| (var.name.clone(), var.value.clone())));
                out.push(ServerConfig::new(
                    stdio.name.clone(),
                    Transport::Stdio {
                        command: stdio.command.to_string_lossy().into_owned(),
                        args: stdio.args.clone(),
                        env,
                        cwd: None,
                    },
                ));
            }
            acp::McpServer::Http(http) => out.push(ServerConfig::new(
                http.name.clone(),
                Transport::Http {
                    url: http.url.clone(),
                    bearer_token: None,
                    headers: http
                        .headers
                        .iter()
                        .map(|header| (header.name.clone(), header.value.clone()))
                        .collect(),
                },
            )),
            acp::McpServer::Sse(sse) => out.push(ServerConfig::new(
                sse.name.clone(),
                Transport::Sse {
                    url: sse.url.clone(),
                    bearer_token: None,
                    headers: sse
                        .headers
                        .iter()
                        .map(|header| (header.name.clone(), header.value.clone()))
                        .collect(),
                },
            )),
            _ => notice("warning: an MCP server of an unknown transport was left out"),
        }
    }
    out
}
