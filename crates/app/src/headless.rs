//! A turn followed headless, as `codecoder exec` runs one: nobody is there to answer, so an
//! approval request is declined with the reason the model reads, a question is unavailable, and
//! a plan presented for approval (plan mode, `exit_plan_mode`) is declined and becomes the
//! turn's answer.
//!
//! Invariants: every request gets its reply, so the agent never waits on this side; the final
//! message is the text of the root agent's last step that wrote any (`StepFinished { text }`, as
//! logged: a retried step's void text is not in it); the agent is shut down before the turn's
//! end is returned.

use std::path::Path;

use codecoder_protocol::{
    AgentCommand, AgentEvent, AgentEventKind, ApprovalDecision, AskUserAnswer, TurnOutcome,
};

use crate::error::{Error, Result};
use crate::{AgentHandle, PLAN_APPROVE, PLAN_KEEP_PLANNING};

/// What a headless turn has to show, in order.
#[derive(Debug)]
pub enum Shown<'a> {
    /// An event of the agent (of its subagents too). Approval requests and questions are not
    /// shown: a `Note` says what became of them.
    Event(&'a AgentEvent),
    /// A remark of the runtime's own: a request declined, a question not asked.
    Note(String),
    /// The plan the model presented (plan mode), which nobody approves headless: the turn's
    /// answer, shown right before the turn's end.
    Plan(&'a str),
}

/// How a headless turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadlessEnd {
    /// The root turn's outcome; `None` when the agent stopped before the turn ended.
    pub outcome: Option<TurnOutcome>,
    /// The turn's final message (empty: none).
    pub final_message: String,
    /// The last plan the model presented, which is then the turn's answer.
    pub plan: Option<String>,
}

impl crate::Runtime {
    /// `sessions compact`: resumes the session `query` and has its agent compact it now (with
    /// `focus` for the summary). The caller shows the session's notices and follows the turn
    /// (`follow_headless_turn`).
    ///
    /// # Errors
    /// When the session cannot be resumed.
    pub fn start_compaction(
        &self,
        query: &str,
        focus: Option<String>,
    ) -> Result<crate::RunningSession> {
        let session = self.start(&crate::SessionRequest {
            start: crate::Start::Resume(Some(query.to_owned())),
            ..crate::SessionRequest::new()
        })?;
        // An agent that stopped at once shows as a turn that never ended.
        let _ = session.agent.cmd.send(AgentCommand::Compact { focus });
        Ok(session)
    }
}

/// Follows the turn `agent` is running (its input already submitted) to the root turn's end,
/// showing what happens through `show`, then shuts the agent down.
///
/// # Errors
/// When `show` fails; the agent is shut down first.
pub fn follow_headless_turn(
    agent: AgentHandle,
    show: &mut dyn FnMut(Shown<'_>) -> std::io::Result<()>,
) -> std::io::Result<HeadlessEnd> {
    let followed = follow(&agent, show);
    let _ = agent.shutdown();
    followed
}

fn follow(
    agent: &AgentHandle,
    show: &mut dyn FnMut(Shown<'_>) -> std::io::Result<()>,
) -> std::io::Result<HeadlessEnd> {
    let mut outcome = None;
    let mut final_message = String::new();
    // The last plan the model presented for approval.
    let mut plan: Option<String> = None;
    for event in agent.events.iter() {
        let root = event.source.subagent_path.is_empty();
        match &event.kind {
            AgentEventKind::ApprovalRequest(_) | AgentEventKind::AskUser(_) => {}
            AgentEventKind::TurnDone { .. } if root => {
                // The plan is the turn's answer: its last message, before the turn's end.
                if let Some(plan) = &plan {
                    show(Shown::Plan(plan))?;
                }
                show(Shown::Event(&event))?;
            }
            _ => show(Shown::Event(&event))?,
        }
        match event.kind {
            AgentEventKind::ApprovalRequest(request) => {
                show(Shown::Note(format!(
                    "declined (no one to ask in exec): {}",
                    request.summary
                )))?;
                // The model hears why it would have been asked (a protected path, say).
                let why = request.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
                request.reply.send(ApprovalDecision::DenyWithFeedback {
                    feedback: format!(
                        "codecoder exec runs without a person to approve this{why}; do without it"
                    ),
                });
            }
            AgentEventKind::AskUser(request) => {
                if is_plan_review(&request.options) {
                    plan = Some(request.question.clone());
                    request.reply.send(AskUserAnswer::Declined);
                } else {
                    show(Shown::Note(format!("question not asked (exec): {}", request.question)))?;
                    request.reply.send(AskUserAnswer::Unavailable {
                        reason: "codecoder exec runs without a person to answer".to_owned(),
                    });
                }
            }
            AgentEventKind::StepFinished { text, .. } if root && !text.trim().is_empty() => {
                final_message = text;
            }
            AgentEventKind::TurnDone { outcome: turn_outcome, .. } if root => {
                outcome = Some(turn_outcome);
                break;
            }
            _ => {}
        }
    }
    Ok(HeadlessEnd { outcome, final_message, plan })
}

/// True for the question `exit_plan_mode` asks: its suggested answers are exactly approve and
/// keep planning.
fn is_plan_review(options: &[String]) -> bool {
    matches!(options, [approve, keep] if approve == PLAN_APPROVE && keep == PLAN_KEEP_PLANNING)
}

/// A headless run's prompt: the argument; stdin when the argument is absent or `-`; or both, the
/// piped input appended as a `<stdin>` block. A terminal on stdin is never read.
///
/// # Errors
/// `Usage` when there is no prompt (none given and stdin a terminal, or stdin empty); `Io` when
/// stdin cannot be read.
pub fn headless_prompt(
    arg: Option<&str>,
    stdin: &mut dyn std::io::Read,
    stdin_is_terminal: bool,
) -> Result<String> {
    let mut read = |what: &str| -> Result<String> {
        let mut text = String::new();
        stdin.read_to_string(&mut text).map_err(|source| Error::Io {
            context: format!("reading {what} from stdin"),
            source,
        })?;
        Ok(text)
    };
    match arg {
        None | Some("-") => {
            if stdin_is_terminal {
                return Err(Error::usage("no prompt: give it as an argument or on stdin"));
            }
            let text = read("the prompt")?;
            if text.trim().is_empty() {
                return Err(Error::usage("no prompt: stdin was empty"));
            }
            Ok(text)
        }
        Some(prompt) if stdin_is_terminal => Ok(prompt.to_owned()),
        Some(prompt) => {
            let piped = read("piped input")?;
            if piped.trim().is_empty() {
                return Ok(prompt.to_owned());
            }
            Ok(format!("{prompt}\n\n<stdin>\n{}\n</stdin>", piped.trim_end()))
        }
    }
}

/// The JSON Schema in `path` that a turn's final message must follow (`--output-schema`).
///
/// # Errors
/// `Usage` when the file cannot be read or is not JSON.
pub fn read_output_schema(path: &Path) -> Result<serde_json::Value> {
    let text = fs_err::read_to_string(path).map_err(|err| Error::usage(err.to_string()))?;
    serde_json::from_str(&text)
        .map_err(|err| Error::usage(format!("{}: not a JSON Schema: {err}", path.display())))
}

/// Checks that `final_message` is JSON that follows `schema`; `Err` says how it does not.
///
/// # Errors
/// When the message is not JSON, or breaks the schema.
pub fn check_final_message(
    schema: &serde_json::Value,
    final_message: &str,
) -> std::result::Result<(), String> {
    let value: serde_json::Value = serde_json::from_str(final_message.trim())
        .map_err(|err| format!("the final message is not JSON as --output-schema asks: {err}"))?;
    crate::validate_schema(schema, &value)
        .map_err(|err| format!("the final message does not follow --output-schema: {err}"))
}

#[cfg(test)]
mod tests;
