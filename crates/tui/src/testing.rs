//! Test fixtures: an `App` on a fake command channel, fixed ids, events and requests, and calls
//! described by the real tools' views (the built-ins, `agent`, the test-only tool) as the kernel
//! sends them.

use std::path::PathBuf;
use std::sync::Arc;

use codecoder_app::testing::{TestOnlyTool, Tool};
use codecoder_protocol::{
    AgentCommand, AgentEvent, AgentEventKind, ApprovalDecision, ApprovalRequest, AskUserAnswer,
    AskUserRequest, CallView, EventSource, Reply, RequestId, SessionId, StepId, ToolCall,
    ToolCallId, TurnId,
};
use crossbeam_channel::{Receiver, Sender};

use crate::app::App;
use crate::{Pricing, SessionInfo};

pub(crate) const SESSION: &str = "01a22c1c-a0e3-7083-96c3-3d72ff6db7c2";

pub(crate) fn session_id() -> SessionId {
    SESSION.parse().unwrap()
}

pub(crate) fn info() -> SessionInfo {
    SessionInfo {
        session_id: session_id(),
        model: "gpt-5".to_owned(),
        provider: "openai".to_owned(),
        context_window: 400_000,
        cwd: PathBuf::from("/work/project"),
        pricing: Pricing { input: Some(1.25), cached_input: Some(0.125), output: Some(10.0) },
    }
}

/// An app and the other end of its command channel.
pub(crate) fn app() -> (App, Receiver<AgentCommand>) {
    let (tx, rx): (Sender<AgentCommand>, Receiver<AgentCommand>) = crossbeam_channel::unbounded();
    let mut app = App::new(info(), "on-request".to_owned(), tx);
    app.files = crate::complete::FileIndex::fixed(vec![
        "src/main.rs".to_owned(),
        "src/lib.rs".to_owned(),
        "README.md".to_owned(),
    ]);
    (app, rx)
}

pub(crate) fn event(kind: AgentEventKind) -> AgentEvent {
    AgentEvent { source: EventSource { session_id: session_id(), subagent_path: Vec::new() }, kind }
}

pub(crate) fn sub_event(parent: &str, kind: AgentEventKind) -> AgentEvent {
    AgentEvent {
        source: EventSource {
            session_id: session_id(),
            subagent_path: vec![ToolCallId::new(parent)],
        },
        kind,
    }
}

pub(crate) fn turn() -> TurnId {
    TurnId::FIRST
}

pub(crate) fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall { id: ToolCallId::new(id), name: name.to_owned(), args }
}

/// A session's tool of that name: a built-in, `agent` or the test-only tool.
pub(crate) fn tool(name: &str) -> Option<Arc<dyn Tool>> {
    let config = codecoder_tools::ToolsConfig::standard("/work/project", Vec::new());
    let mut tools = codecoder_tools::builtin_tools(config);
    tools.push(Arc::new(codecoder_kernel::AgentTool::new(&[])));
    tools.push(Arc::new(TestOnlyTool));
    tools.into_iter().find(|tool| tool.name() == name)
}

/// The view of `call` as the kernel sends it: its tool's, or the generic view for a name no
/// tool has.
pub(crate) fn view(call: &ToolCall) -> CallView {
    match tool(&call.name) {
        Some(tool) => tool.view(&call.args),
        None => CallView::generic(&call.name, &call.args),
    }
}

/// `ToolStarted` of `call`, with its view.
pub(crate) fn started(call: &ToolCall) -> AgentEvent {
    event(AgentEventKind::ToolStarted {
        turn: turn(),
        step: StepId::FIRST,
        call: call.clone(),
        view: view(call),
    })
}

/// `ToolFinished` of `call` with `result`, with its view.
pub(crate) fn finished(
    call: &ToolCall,
    result: Result<codecoder_protocol::ToolResult, codecoder_protocol::ToolError>,
) -> AgentEvent {
    event(AgentEventKind::ToolFinished {
        turn: turn(),
        step: StepId::FIRST,
        call_id: call.id.clone(),
        call: call.clone(),
        view: view(call),
        result,
        mcp_result: None,
    })
}

pub(crate) fn approval(
    call: ToolCall,
    summary: &str,
    reason: Option<&str>,
) -> (AgentEvent, Receiver<ApprovalDecision>) {
    let (reply, rx) = Reply::pair();
    let view = view(&call);
    let keys = match &view.command {
        Some(command) => vec![format!("shell:{command}")],
        None => vec!["edit:src/**".to_owned()],
    };
    let request = ApprovalRequest {
        id: RequestId::new(),
        turn: turn(),
        step: StepId::FIRST,
        call,
        view,
        summary: summary.to_owned(),
        permission_keys: keys,
        reason: reason.map(str::to_owned),
        reply,
    };
    (event(AgentEventKind::ApprovalRequest(request)), rx)
}

pub(crate) fn ask(question: &str, options: &[&str]) -> (AgentEvent, Receiver<AskUserAnswer>) {
    let (reply, rx) = Reply::pair();
    let request = AskUserRequest {
        id: RequestId::new(),
        call_id: ToolCallId::new("call_ask"),
        question: question.to_owned(),
        options: options.iter().map(|s| (*s).to_owned()).collect(),
        reply,
    };
    (event(AgentEventKind::AskUser(request)), rx)
}

pub(crate) fn text(delta: &str) -> AgentEvent {
    event(AgentEventKind::TextDelta { turn: turn(), step: StepId::FIRST, delta: delta.to_owned() })
}

pub(crate) fn turn_started() -> AgentEvent {
    event(AgentEventKind::TurnStarted { turn: turn() })
}
