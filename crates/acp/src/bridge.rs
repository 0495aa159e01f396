//! One ACP session's bridge: a named thread that owns the running agent and translates both
//! ways — prompts, cancels and permission answers in; `session/update`s, permission requests
//! and the prompt's stop reason out.
//!
//! Invariants:
//! - It never blocks on the client: a permission request's answer comes back as a `Command` on
//!   its own channel (sent from the SDK's response callback), so events keep flowing and a
//!   cancel is acted on while the client is still asked.
//! - One prompt at a time; every prompt is answered exactly once: with the turn's stop reason,
//!   an error, or `cancelled` when the session shuts down first.
//! - Only the root agent's text and tool calls are shown; a subagent's approvals and questions
//!   are asked all the same (someone must answer them).
//! - The model's questions go out as `elicitation/create` forms only to a client that advertised
//!   form elicitation; otherwise the tool hears at once that no one can be asked. The answer
//!   goes straight to the question's one-shot from the response callback (a send that never
//!   blocks); a failed request declines. When the turn ends, the forms still open are withdrawn
//!   (`$/cancel_request`): the tool that asked has stopped waiting (a cancelled turn).

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Instant;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema as acp;
use codecoder_app::AgentHandle;
use codecoder_protocol::{
    AgentCommand, AgentEventKind, ApprovalDecision, ApprovalRequest, AskUserAnswer, AskUserRequest,
    TurnOutcome,
};
use crossbeam_channel::{Receiver, Sender};

use crate::live::Translator;
use crate::translate;

/// What the bridge is told.
pub(crate) enum Command {
    /// `session/prompt`.
    Prompt(Vec<acp::ContentBlock>, Responder<acp::PromptResponse>),
    /// `session/cancel`.
    Cancel,
    /// The client answered a permission request (`None`: the request failed).
    Permission {
        keys: Vec<String>,
        reply: codecoder_protocol::Reply<ApprovalDecision>,
        outcome: Option<acp::RequestPermissionOutcome>,
    },
    /// Stop the agent and end the thread.
    Shutdown,
}

pub(crate) struct Bridge {
    pub(crate) connection: ConnectionTo<Client>,
    pub(crate) session_id: String,
    pub(crate) cwd: PathBuf,
    pub(crate) agent: AgentHandle,
    pub(crate) commands: Receiver<Command>,
    /// A sender of this bridge's own commands, for the SDK's response callbacks.
    pub(crate) own: Sender<Command>,
    /// The client advertised form elicitation: the model's questions are asked as forms.
    pub(crate) questions: bool,
    /// The client displays terminals fed through `_meta.terminal_output`: commands are shown
    /// as terminals (see `live.rs`).
    pub(crate) terminal_output: bool,
}

struct State {
    prompt: Option<Responder<acp::PromptResponse>>,
    /// The root agent's events as updates.
    translator: Translator,
    /// Permission keys the person rejected for the rest of the session.
    rejected: HashSet<String>,
    /// The turn's questions (answered ones too: cancelling those does nothing).
    questions: Vec<agent_client_protocol::RequestCancellationHandle>,
}

impl Bridge {
    /// Runs until `Shutdown` (or the agent stops).
    pub(crate) fn run(self) {
        let mut state = State {
            prompt: None,
            translator: Translator::new(self.cwd.clone()).terminal_output(self.terminal_output),
            rejected: HashSet::new(),
            questions: Vec::new(),
        };
        loop {
            crossbeam_channel::select! {
                recv(self.agent.events) -> event => {
                    let Ok(event) = event else { break };
                    let root = event.source.subagent_path.is_empty();
                    self.event(&mut state, event.kind, root);
                }
                recv(self.commands) -> command => {
                    let Ok(command) = command else { break };
                    if !self.command(&mut state, command) {
                        break;
                    }
                }
            }
        }
        if let Some(prompt) = state.prompt.take() {
            let _ = prompt.respond(acp::PromptResponse::new(acp::StopReason::Cancelled));
        }
        let _ = self.agent.shutdown();
    }

    fn update(&self, update: acp::SessionUpdate) {
        let notification = acp::SessionNotification::new(self.session_id.clone(), update);
        let _ = self.connection.send_notification(notification);
    }

    /// Handles a command; false ends the bridge.
    fn command(&self, state: &mut State, command: Command) -> bool {
        match command {
            Command::Prompt(blocks, responder) => {
                if state.prompt.is_some() {
                    let _ = responder.respond_with_error(agent_client_protocol::Error::new(
                        agent_client_protocol::ErrorCode::INVALID_REQUEST,
                        "a prompt is already running in this session; cancel it first",
                    ));
                    return true;
                }
                let input = translate::user_input(blocks);
                if self.agent.cmd.send(AgentCommand::Submit(input)).is_err() {
                    let _ = responder.respond_with_error(agent_client_protocol::Error::new(
                        agent_client_protocol::ErrorCode::INTERNAL_ERROR,
                        "the agent has stopped",
                    ));
                    return true;
                }
                state.prompt = Some(responder);
            }
            Command::Cancel => {
                let _ = self.agent.cmd.send(AgentCommand::Cancel);
            }
            Command::Permission { keys, reply, outcome } => {
                let decision = match outcome {
                    Some(acp::RequestPermissionOutcome::Selected(selected)) => {
                        match &*selected.option_id.0 {
                            ALLOW_ONCE => ApprovalDecision::AllowOnce,
                            ALLOW_ALWAYS => ApprovalDecision::AllowForSession,
                            REJECT_ALWAYS => {
                                state.rejected.extend(keys);
                                ApprovalDecision::Deny
                            }
                            _ => ApprovalDecision::Deny,
                        }
                    }
                    Some(_) | None => ApprovalDecision::Cancelled,
                };
                reply.send(decision);
            }
            Command::Shutdown => return false,
        }
        true
    }

    fn event(&self, state: &mut State, kind: AgentEventKind, root: bool) {
        match kind {
            AgentEventKind::ApprovalRequest(request) => self.ask_permission(state, request, root),
            AgentEventKind::AskUser(request) => self.ask(state, request),
            _ if !root => {}
            AgentEventKind::TurnDone { outcome, .. } => {
                for question in state.questions.drain(..) {
                    let _ = question.cancel();
                }
                let Some(prompt) = state.prompt.take() else { return };
                let _ = match outcome {
                    TurnOutcome::Completed => {
                        prompt.respond(acp::PromptResponse::new(acp::StopReason::EndTurn))
                    }
                    TurnOutcome::Cancelled | TurnOutcome::Interrupted => {
                        prompt.respond(acp::PromptResponse::new(acp::StopReason::Cancelled))
                    }
                    TurnOutcome::Failed { message } if message.contains("step limit") => {
                        prompt.respond(acp::PromptResponse::new(acp::StopReason::MaxTurnRequests))
                    }
                    TurnOutcome::Failed { message } => {
                        prompt.respond_with_error(agent_client_protocol::Error::new(
                            agent_client_protocol::ErrorCode::INTERNAL_ERROR,
                            format!("the turn failed: {message}"),
                        ))
                    }
                };
            }
            kind => {
                for update in state.translator.event(&kind, Instant::now()) {
                    self.update(update);
                }
            }
        }
    }

    /// Asks the model's question as an `elicitation/create` form tied to the asking call, or
    /// tells the tool no one can be asked.
    fn ask(&self, state: &mut State, request: AskUserRequest) {
        let AskUserRequest { call_id, question, options, reply, .. } = request;
        if !self.questions {
            reply.send(AskUserAnswer::Unavailable { reason: translate::NO_QUESTIONS.to_owned() });
            return;
        }
        let scope = acp::ElicitationSessionScope::new(self.session_id.clone())
            .tool_call_id(acp::ToolCallId::new(call_id.to_string()));
        let form = acp::ElicitationFormMode::new(scope, translate::question_form(&options));
        let elicitation = acp::CreateElicitationRequest::new(form, question);
        // As for permissions: if the SDK drops the callback (the connection is gone), the reply
        // drops with it and the tool reads "cancelled".
        let sent = self.connection.send_request(elicitation);
        state.questions.push(sent.cancellation_handle());
        let _ = sent.on_receiving_result(move |result| {
            reply.send(translate::question_answer(result.ok()));
            futures::future::ready(Ok(()))
        });
    }

    fn ask_permission(&self, state: &mut State, request: ApprovalRequest, root: bool) {
        let ApprovalRequest { call, view, summary, permission_keys, reason, reply, .. } = request;
        if !permission_keys.is_empty() && permission_keys.iter().all(|k| state.rejected.contains(k))
        {
            reply.send(ApprovalDecision::DenyWithFeedback {
                feedback: "the person rejected this for the rest of the session".to_owned(),
            });
            return;
        }
        let (updates, tool_call) = state.translator.approval(
            &call.id,
            &view,
            &call.args,
            &summary,
            reason.as_deref(),
            root,
        );
        for update in updates {
            self.update(update);
        }
        let options = vec![
            acp::PermissionOption::new(ALLOW_ONCE, "Allow", acp::PermissionOptionKind::AllowOnce),
            acp::PermissionOption::new(
                ALLOW_ALWAYS,
                "Always allow",
                acp::PermissionOptionKind::AllowAlways,
            ),
            acp::PermissionOption::new(
                REJECT_ONCE,
                "Reject",
                acp::PermissionOptionKind::RejectOnce,
            ),
            acp::PermissionOption::new(
                REJECT_ALWAYS,
                "Always reject",
                acp::PermissionOptionKind::RejectAlways,
            ),
        ];
        let permission =
            acp::RequestPermissionRequest::new(self.session_id.clone(), tool_call, options);
        let own = self.own.clone();
        // The reply travels with the callback; if the SDK drops it (the connection is gone), the
        // reply is dropped with it, which the agent reads as "cancelled".
        let _ = self.connection.send_request(permission).on_receiving_result(move |result| {
            let outcome = result.ok().map(|response| response.outcome);
            // Unbounded: the send never blocks the connection's dispatch loop.
            let _ = own.send(Command::Permission { keys: permission_keys, reply, outcome });
            futures::future::ready(Ok(()))
        });
    }
}

const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT_ONCE: &str = "reject_once";
const REJECT_ALWAYS: &str = "reject_always";
