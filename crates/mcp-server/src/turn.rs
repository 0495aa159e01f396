//! One turn of a session, driven for one `tools/call`: the prompt in, the agent's events out as
//! progress notifications, approvals and questions as elicitation requests (when the client
//! declared the capability), the call's cancellation as the agent's `Cancel`, and the end as
//! the call's result.
//!
//! Invariant: the turn is awaited to its `TurnDone` even when the call is cancelled, so the
//! session is idle (its commands killed, its log closed for the turn) before the call ends.
//! Without elicitation nobody can answer: an approval is denied with the reason given to the
//! model, a question declined.

use std::collections::HashMap;

use codecoder_app::Notice;
use codecoder_protocol::{
    AgentCommand, AgentEventKind, ApprovalDecision, ApprovalRequest, AskUserAnswer, AskUserRequest,
    CallView, ToolCall, ToolResultStatus, TurnOutcome, UserInput,
};
use rmcp::model::{
    CallToolResult, ContentBlock, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationSchema, ProgressNotificationParam, ProgressToken, RequestMetaObject,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use serde_json::json;

use crate::server::{Session, tool_error};

/// How a turn ended for its call.
#[derive(Debug)]
pub(crate) enum TurnEnd {
    /// The agent said `TurnDone`; the session can take another turn.
    Done {
        outcome: TurnOutcome,
        /// The last message the model wrote in the turn.
        message: String,
        /// The person cancelled at an approval (elicitation `cancel`).
        stopped_at_approval: bool,
    },
    /// The agent's event stream ended before the turn did.
    AgentStopped,
}

/// Submits `prompt` and follows the turn to its end.
pub(crate) async fn run(
    session: &mut Session,
    prompt: String,
    context: &RequestContext<RoleServer>,
    elicit: bool,
) -> TurnEnd {
    let cmd = session.running.agent.cmd.clone();
    if cmd.send(AgentCommand::Submit(UserInput::text(prompt))).is_err() {
        return TurnEnd::AgentStopped;
    }
    let mut progress =
        Progress { peer: context.peer.clone(), token: context.meta.get_progress_token(), count: 0 };
    let mut cancelled = false;
    let mut stopped_at_approval = false;
    // The text of the root agent's last step that wrote any: the turn's final message.
    let mut message = String::new();
    let mut calls: HashMap<String, String> = HashMap::new();
    loop {
        let event = tokio::select! {
            event = session.events.recv() => event,
            () = context.ct.cancelled(), if !cancelled => {
                cancelled = true;
                let _ = cmd.send(AgentCommand::Cancel);
                continue;
            }
        };
        let Some(event) = event else { return TurnEnd::AgentStopped };
        let root = event.source.subagent_path.is_empty();
        match event.kind {
            AgentEventKind::StepFinished { text, .. } if root && !text.trim().is_empty() => {
                progress.send(format!("message: {}", excerpt(&text))).await;
                message = text;
            }
            AgentEventKind::ToolStarted { call, view, .. } => {
                let what = describe(&call, &view);
                progress.send(format!("started: {what}")).await;
                calls.insert(call.id.to_string(), what);
            }
            AgentEventKind::ToolFinished { call_id, result, .. } => {
                let what =
                    calls.remove(&call_id.to_string()).unwrap_or_else(|| call_id.to_string());
                let line = match result {
                    Ok(result) => match (result.status, result.exit.and_then(|exit| exit.code)) {
                        (ToolResultStatus::Success, Some(code)) => {
                            format!("finished: {what} (exit {code})")
                        }
                        (ToolResultStatus::Success, None) => format!("finished: {what}"),
                        (ToolResultStatus::Error, Some(code)) => {
                            format!("failed: {what} (exit {code})")
                        }
                        (ToolResultStatus::Error, None) => format!("failed: {what}"),
                        (ToolResultStatus::Cancelled, _) => format!("cancelled: {what}"),
                    },
                    Err(err) => format!("failed: {what}: {}", excerpt(&err.to_string())),
                };
                progress.send(line).await;
            }
            AgentEventKind::Warning { message } => {
                progress.send(format!("warning: {message}")).await
            }
            AgentEventKind::HookMessage { event, message } => {
                progress.send(format!("{event} hook: {message}")).await;
            }
            AgentEventKind::ApprovalRequest(request) => {
                let stop = approve(request, context, elicit, cancelled, &cmd).await;
                if stop && !cancelled {
                    cancelled = true;
                    stopped_at_approval = true;
                }
            }
            AgentEventKind::AskUser(request) => ask(request, context, elicit && !cancelled).await,
            AgentEventKind::TurnDone { outcome, .. } if root => {
                return TurnEnd::Done { outcome, message, stopped_at_approval };
            }
            _ => {}
        }
    }
}

/// The call's result for a turn's end.
pub(crate) fn result(session_id: &str, end: &TurnEnd, notices: &[Notice]) -> CallToolResult {
    let structured = |content: &str| json!({ "threadId": session_id, "sessionId": session_id, "content": content });
    let mut result = match end {
        TurnEnd::Done { outcome: TurnOutcome::Completed, message, .. } => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(message.clone())]);
            result.structured_content = Some(structured(message));
            result
        }
        TurnEnd::Done { outcome, message: _, stopped_at_approval } => {
            let text = match (outcome, stopped_at_approval) {
                (TurnOutcome::Failed { message }, _) => format!("the turn failed: {message}"),
                (_, true) => "the turn was stopped at an approval request".to_owned(),
                (_, false) => "the turn was cancelled".to_owned(),
            };
            let mut result = tool_error(&text);
            result.structured_content = Some(structured(&text));
            result
        }
        TurnEnd::AgentStopped => {
            let text = "the session's agent stopped before the turn ended";
            let mut result = tool_error(text);
            result.structured_content = Some(structured(text));
            result
        }
    };
    result.content.extend(notices.iter().map(|notice| ContentBlock::text(notice.to_string())));
    result
}

/// Answers an approval request: by elicitation when the client can ask its user, else a
/// denial whose reason the model reads. Returns true when the user chose to stop the turn: the
/// agent is then told to cancel before it hears the denial, so it cannot go on to the next
/// model request in between.
async fn approve(
    request: ApprovalRequest,
    context: &RequestContext<RoleServer>,
    elicit: bool,
    cancelled: bool,
    cmd: &crossbeam_channel::Sender<AgentCommand>,
) -> bool {
    if cancelled {
        request.reply.send(ApprovalDecision::Cancelled);
        return false;
    }
    let why = request.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
    if !elicit {
        request.reply.send(ApprovalDecision::DenyWithFeedback {
            feedback: format!(
                "codecoder runs as an MCP server whose client cannot ask its user (no elicitation capability), so nothing that needs approval runs{why}; do without it"
            ),
        });
        return false;
    }
    let schema = json!({
        "type": "object",
        "properties": {
            "remember": {
                "type": "boolean",
                "title": "Also allow the like of it for the rest of this session",
                "default": false
            }
        }
    });
    let Ok(requested_schema) = serde_json::from_value::<ElicitationSchema>(schema) else {
        request.reply.send(ApprovalDecision::DenyWithFeedback {
            feedback: "the approval form could not be built".to_owned(),
        });
        return false;
    };
    // The call itself, for a client that shows more than the message.
    let meta = serde_json::from_value::<RequestMetaObject>(json!({
        "codecoder/approval": {
            "tool": request.call.name,
            "arguments": request.call.args,
            "permissionKeys": request.permission_keys,
            "reason": request.reason,
        }
    }))
    .ok();
    let params = ElicitRequestParams::FormElicitationParams {
        meta,
        message: format!("codecoder wants to {}{why}. Allow it?", request.summary),
        requested_schema,
    };
    let answer = tokio::select! {
        answer = context.peer.create_elicitation(params) => answer,
        () = context.ct.cancelled() => {
            request.reply.send(ApprovalDecision::Cancelled);
            return false;
        }
    };
    match answer {
        Ok(ElicitResult { action: ElicitationAction::Accept, content, .. }) => {
            let remember = content
                .as_ref()
                .and_then(|c| c.get("remember"))
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false);
            request.reply.send(if remember {
                ApprovalDecision::AllowForSession
            } else {
                ApprovalDecision::AllowOnce
            });
            false
        }
        Ok(ElicitResult { action: ElicitationAction::Decline, .. }) => {
            request.reply.send(ApprovalDecision::DenyWithFeedback {
                feedback: "the user declined this".to_owned(),
            });
            false
        }
        Ok(ElicitResult { action: ElicitationAction::Cancel, .. }) => {
            let _ = cmd.send(AgentCommand::Cancel);
            request.reply.send(ApprovalDecision::Deny);
            true
        }
        Ok(_) => {
            request.reply.send(ApprovalDecision::Deny);
            false
        }
        Err(err) => {
            request.reply.send(ApprovalDecision::DenyWithFeedback {
                feedback: format!("the approval could not be asked ({err}); do without it"),
            });
            false
        }
    }
}

/// Answers the model's question: a one-field form when the client can ask, else declined.
async fn ask(request: AskUserRequest, context: &RequestContext<RoleServer>, elicit: bool) {
    if !elicit {
        request.reply.send(AskUserAnswer::Unavailable {
            reason: "the MCP client cannot show questions (it offers no elicitation)".to_owned(),
        });
        return;
    }
    let mut answer = json!({ "type": "string", "title": "Your answer" });
    if !request.options.is_empty() {
        answer["description"] = json!(format!("Suggested: {}", request.options.join(" | ")));
    }
    let schema =
        json!({ "type": "object", "properties": { "answer": answer }, "required": ["answer"] });
    let Ok(requested_schema) = serde_json::from_value::<ElicitationSchema>(schema) else {
        request.reply.send(AskUserAnswer::Declined);
        return;
    };
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: request.question.clone(),
        requested_schema,
    };
    let answer = tokio::select! {
        answer = context.peer.create_elicitation(params) => answer.ok(),
        () = context.ct.cancelled() => None,
    };
    let text = answer
        .filter(|answer| answer.action == ElicitationAction::Accept)
        .and_then(|answer| answer.content)
        .and_then(|content| content.get("answer").and_then(|a| a.as_str()).map(str::to_owned));
    request.reply.send(match text {
        Some(text) => AskUserAnswer::Answer { text },
        None => AskUserAnswer::Declined,
    });
}

/// `notifications/progress` for a call that asked for them (a `progressToken`).
struct Progress {
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    count: u32,
}

impl Progress {
    async fn send(&mut self, message: String) {
        let Some(token) = &self.token else { return };
        self.count += 1;
        let param = ProgressNotificationParam::new(token.clone(), f64::from(self.count))
            .with_message(message);
        let _ = self.peer.notify_progress(param).await;
    }
}

/// One line for a tool call: its command, else its name and the first file it names, else
/// its name.
fn describe(call: &ToolCall, view: &CallView) -> String {
    match (&view.command, view.paths.first()) {
        (Some(command), _) => format!("command `{}`", excerpt(command)),
        (None, Some(path)) => format!("{} {path}", call.name),
        (None, None) => call.name.clone(),
    }
}

/// The first line of `text`, at most 200 characters.
fn excerpt(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or_default();
    let mut cut: String = line.chars().take(200).collect();
    if cut.len() < line.len() || text.trim().lines().nth(1).is_some() {
        cut.push('…');
    }
    cut
}
