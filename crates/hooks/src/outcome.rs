//! What hooks said, per event: the typed outcomes and how the answers of several hooks fold into
//! one.
//!
//! Every hook's result is first classified (by the runner) as JSON output, plain output, a
//! blocking exit 2 with its stderr, or a non-blocking failure. The fold then applies Claude
//! Code's rules:
//! - `continue: false` stops the session whatever else was decided; the first `stopReason`
//!   wins (see [`Report::stop`]).
//! - PreToolUse: deny > ask > allow across hooks; the deprecated top-level
//!   `decision: approve|block` means allow|deny; `permissionDecision` wins over it.
//! - PermissionRequest: deny > allow.
//! - Blocking reasons and contexts of several hooks are kept in configuration order.
//!
//! Invariant: folding never fails; malformed output becomes a message in `Report::errors`
//! that names the hook.

use codecoder_kernel::HookVerdict;
use codecoder_protocol::Verdict;
use serde_json::{Map, Value};

use crate::event::Event;
use crate::mapping;

/// What every event's outcome carries besides its own answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// A hook said `continue: false`: the session should stop after this event. The text is
    /// its `stopReason` (for the user, not the model), or a note naming the hook.
    pub stop: Option<String>,
    /// Messages for the user: `systemMessage`s, and the stderr of a blocking exit where the
    /// event shows it to the user only (Notification, PreCompact, SessionStart, SessionEnd, …).
    pub system_messages: Vec<String>,
    /// Non-blocking problems (exit codes other than 0 and 2, timeouts, bad JSON, dropped keys),
    /// each naming the hook. The event goes on as if the hook had not answered.
    pub errors: Vec<String>,
}

/// The outcome of the PreToolUse hooks of one call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PreToolUse {
    /// The strongest hook's verdict (deny > ask > allow) with the reasons of the hooks that gave
    /// it, joined by newlines (on deny for the model, on allow or ask for the user); `None` when
    /// no hook decided (the approval chain decides).
    pub decision: Option<HookVerdict>,
    /// The arguments to run the tool with instead, in our argument names (from `updatedInput`,
    /// which replaces the whole input as in Claude Code; the first hook in configuration order
    /// that gave one wins). `None`: unchanged, and always `None` when the decision is deny.
    pub updated_args: Option<Value>,
    /// Text to add to the model's context before the tool runs.
    pub additional_context: Vec<String>,
    /// Stop request, user messages and non-blocking errors.
    pub report: Report,
}

/// A PermissionRequest answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionBehavior {
    /// Approve in the user's place.
    Allow,
    /// Refuse in the user's place.
    Deny,
}

/// What the hooks answered in the user's place (deny > allow).
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionVerdict {
    /// Allow or deny.
    pub behavior: PermissionBehavior,
    /// On deny, the message for the model (the stderr of an exit 2, or `message`).
    pub message: Option<String>,
    /// On allow, the arguments to run with instead, in our argument names.
    pub updated_args: Option<Value>,
    /// On deny, a hook asked to interrupt the turn as well.
    pub interrupt: bool,
}

/// The outcome of the PermissionRequest hooks of one call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PermissionRequest {
    /// `None`: no hook answered; ask the user.
    pub verdict: Option<PermissionVerdict>,
    /// Stop request, user messages and non-blocking errors.
    pub report: Report,
}

/// The outcome of PostToolUse or PostToolUseFailure hooks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostToolUse {
    /// Text for the model about the call that ran: the stderr of an exit 2 or the `reason` of
    /// `decision: "block"`, several joined by newlines.
    pub feedback: Option<String>,
    /// Text to add to the model's context.
    pub additional_context: Vec<String>,
    /// Stop request, user messages and non-blocking errors.
    pub report: Report,
}

/// The outcome of the UserPromptSubmit hooks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserPromptSubmit {
    /// The prompt is refused (and erased); the text is for the user only.
    pub blocked: Option<String>,
    /// Text to add to the model's context with the prompt: `additionalContext` and plain
    /// stdout.
    pub additional_context: Vec<String>,
    /// Stop request, user messages and non-blocking errors.
    pub report: Report,
}

/// The outcome of the Stop or SubagentStop hooks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stop {
    /// Do not stop: the text is the model's next instruction. The caller caps how many times
    /// in a row this is honoured (Claude Code ends the turn after 8).
    pub block: Option<String>,
    /// Stop request, user messages and non-blocking errors.
    pub report: Report,
}

/// The outcome of the SessionStart hooks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionStart {
    /// Text to add to the model's context: `additionalContext` and plain stdout.
    pub additional_context: Vec<String>,
    /// Stop request, user messages and non-blocking errors.
    pub report: Report,
}

/// The outcome of the SubagentStart hooks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubagentStart {
    /// Text to add to the subagent's context.
    pub additional_context: Vec<String>,
    /// Stop request, user messages and non-blocking errors.
    pub report: Report,
}

/// One hook's result, classified by the runner.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// Exit 0, stdout a JSON object.
    Json(Map<String, Value>),
    /// Exit 0, stdout not JSON (possibly empty), trimmed.
    Text(String),
    /// Exit 2: the trimmed stderr.
    Blocked(String),
    /// Anything else; the message names the hook.
    Failed(String),
}

/// One hook that ran: its label (for messages) and answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ran {
    pub(crate) hook: String,
    pub(crate) answer: Answer,
}

impl Ran {
    /// The stderr of an exit 2, or a note when the hook said nothing.
    fn blocked_text(&self, stderr: &str) -> String {
        if stderr.is_empty() {
            format!("{} exited with code 2 (blocking) without a message", self.hook)
        } else {
            stderr.to_owned()
        }
    }
}

/// Folds the fields every event shares and returns the JSON object, if any, for the
/// event-specific part. Failures go to `report.errors`.
fn common<'a>(ran: &'a Ran, report: &mut Report) -> Option<&'a Map<String, Value>> {
    let json = match &ran.answer {
        Answer::Json(json) => json,
        Answer::Failed(message) => {
            report.errors.push(message.clone());
            return None;
        }
        Answer::Text(_) | Answer::Blocked(_) => return None,
    };
    if let Some(Value::String(message)) = json.get("systemMessage") {
        report.system_messages.push(message.clone());
    }
    if json.get("continue") == Some(&Value::Bool(false)) && report.stop.is_none() {
        report.stop = Some(match json.get("stopReason") {
            Some(Value::String(reason)) if !reason.is_empty() => reason.clone(),
            _ => format!("{} asked to stop (`continue: false`)", ran.hook),
        });
    }
    Some(json)
}

/// `hookSpecificOutput` when present and meant for `event`.
fn specific<'a>(
    ran: &Ran,
    json: &'a Map<String, Value>,
    event: Event,
    report: &mut Report,
) -> Option<&'a Map<String, Value>> {
    let specific = match json.get("hookSpecificOutput")? {
        Value::Object(specific) => specific,
        _ => {
            report
                .errors
                .push(format!("{}: `hookSpecificOutput` is not an object; ignored", ran.hook));
            return None;
        }
    };
    match specific.get("hookEventName") {
        None => Some(specific),
        Some(Value::String(name)) if name == event.name() => Some(specific),
        Some(other) => {
            report.errors.push(format!(
                "{}: `hookSpecificOutput.hookEventName` is {other}, not \"{event}\"; ignored",
                ran.hook
            ));
            None
        }
    }
}

fn push_context(
    ran: &Ran,
    specific: Option<&Map<String, Value>>,
    out: &mut Vec<String>,
    report: &mut Report,
) {
    match specific.and_then(|specific| specific.get("additionalContext")) {
        None | Some(Value::Null) => {}
        Some(Value::String(context)) => out.push(context.clone()),
        Some(_) => report
            .errors
            .push(format!("{}: `additionalContext` is not a string; ignored", ran.hook)),
    }
}

fn string_field(json: &Map<String, Value>, key: &str) -> Option<String> {
    json.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn join(texts: Vec<String>) -> Option<String> {
    if texts.is_empty() { None } else { Some(texts.join("\n")) }
}

/// Maps `updatedInput` back to our argument names, reporting dropped keys.
fn updated_args(ran: &Ran, tool: &str, input: &Value, report: &mut Report) -> Option<Value> {
    match mapping::from_claude(tool, input) {
        Ok((args, warnings)) => {
            report
                .errors
                .extend(warnings.into_iter().map(|warning| format!("{}: {warning}", ran.hook)));
            Some(args)
        }
        Err(message) => {
            report.errors.push(format!("{}: {message}; ignored", ran.hook));
            None
        }
    }
}

pub(crate) fn pre_tool_use(tool: &str, rans: &[Ran]) -> PreToolUse {
    let mut outcome = PreToolUse::default();
    let mut decisions: Vec<(Verdict, Option<String>)> = Vec::new();
    let mut rewritten_by: Option<&str> = None;
    for ran in rans {
        if let Answer::Blocked(stderr) = &ran.answer {
            decisions.push((Verdict::Deny, Some(ran.blocked_text(stderr))));
        }
        let Some(json) = common(ran, &mut outcome.report) else { continue };
        let specific = specific(ran, json, Event::PreToolUse, &mut outcome.report);
        let reason = specific
            .and_then(|specific| string_field(specific, "permissionDecisionReason"))
            .or_else(|| string_field(json, "reason"));
        let decided = specific.and_then(|specific| specific.get("permissionDecision"));
        let kind = match decided.or_else(|| json.get("decision")) {
            None | Some(Value::Null) => None,
            Some(Value::String(kind)) => match kind.as_str() {
                "allow" | "approve" => Some(Verdict::Allow),
                "ask" => Some(Verdict::Ask),
                "deny" | "block" => Some(Verdict::Deny),
                other => {
                    outcome.report.errors.push(format!(
                        "{}: decision \"{other}\" is not allow, deny or ask; ignored",
                        ran.hook
                    ));
                    None
                }
            },
            Some(other) => {
                outcome
                    .report
                    .errors
                    .push(format!("{}: decision {other} is not a string; ignored", ran.hook));
                None
            }
        };
        if let Some(kind) = kind {
            decisions.push((kind, reason));
        }
        push_context(ran, specific, &mut outcome.additional_context, &mut outcome.report);
        let Some(input) = specific.and_then(|specific| specific.get("updatedInput")) else {
            continue;
        };
        match rewritten_by {
            Some(first) => outcome.report.errors.push(format!(
                "{}: `updatedInput` ignored; {first} already rewrote the input",
                ran.hook
            )),
            None => {
                outcome.updated_args = updated_args(ran, tool, input, &mut outcome.report);
                if outcome.updated_args.is_some() {
                    rewritten_by = Some(&ran.hook);
                }
            }
        }
    }
    if let Some(kind) = decisions.iter().map(|(kind, _)| *kind).max() {
        let reasons =
            decisions.into_iter().filter(|(k, _)| *k == kind).filter_map(|(_, r)| r).collect();
        outcome.decision = Some(HookVerdict { decision: kind, reason: join(reasons) });
    }
    if outcome.decision.as_ref().is_some_and(|verdict| verdict.decision == Verdict::Deny) {
        // A denied call does not run, so there is nothing to rewrite.
        outcome.updated_args = None;
    }
    outcome
}

pub(crate) fn permission_request(tool: &str, rans: &[Ran]) -> PermissionRequest {
    let mut outcome = PermissionRequest::default();
    let mut allow: Option<PermissionVerdict> = None;
    let mut denials: Vec<String> = Vec::new();
    let mut interrupt = false;
    for ran in rans {
        if let Answer::Blocked(stderr) = &ran.answer {
            denials.push(ran.blocked_text(stderr));
        }
        let Some(json) = common(ran, &mut outcome.report) else { continue };
        let Some(specific) = specific(ran, json, Event::PermissionRequest, &mut outcome.report)
        else {
            continue;
        };
        let decision = match specific.get("decision") {
            None | Some(Value::Null) => continue,
            Some(Value::Object(decision)) => decision,
            Some(_) => {
                outcome
                    .report
                    .errors
                    .push(format!("{}: `decision` is not an object; ignored", ran.hook));
                continue;
            }
        };
        match decision.get("behavior").and_then(Value::as_str) {
            Some("allow") => {
                if allow.is_some() {
                    continue;
                }
                let updated = decision
                    .get("updatedInput")
                    .and_then(|input| updated_args(ran, tool, input, &mut outcome.report));
                allow = Some(PermissionVerdict {
                    behavior: PermissionBehavior::Allow,
                    message: None,
                    updated_args: updated,
                    interrupt: false,
                });
            }
            Some("deny") => {
                denials.push(
                    string_field(decision, "message")
                        .unwrap_or_else(|| format!("{} denied the request", ran.hook)),
                );
                interrupt |= decision.get("interrupt") == Some(&Value::Bool(true));
            }
            _ => outcome.report.errors.push(format!(
                "{}: `decision.behavior` must be \"allow\" or \"deny\"; ignored",
                ran.hook
            )),
        }
    }
    outcome.verdict = match join(denials) {
        Some(message) => Some(PermissionVerdict {
            behavior: PermissionBehavior::Deny,
            message: Some(message),
            updated_args: None,
            interrupt,
        }),
        None => allow,
    };
    outcome
}

pub(crate) fn post_tool_use(event: Event, rans: &[Ran]) -> PostToolUse {
    let mut outcome = PostToolUse::default();
    let mut feedback = Vec::new();
    for ran in rans {
        if let Answer::Blocked(stderr) = &ran.answer {
            feedback.push(ran.blocked_text(stderr));
        }
        let Some(json) = common(ran, &mut outcome.report) else { continue };
        if json.get("decision").and_then(Value::as_str) == Some("block") {
            feedback.push(
                string_field(json, "reason").unwrap_or_else(|| format!("{} blocked", ran.hook)),
            );
        }
        let specific = specific(ran, json, event, &mut outcome.report);
        push_context(ran, specific, &mut outcome.additional_context, &mut outcome.report);
    }
    outcome.feedback = join(feedback);
    outcome
}

pub(crate) fn user_prompt_submit(rans: &[Ran]) -> UserPromptSubmit {
    let mut outcome = UserPromptSubmit::default();
    let mut blocked = Vec::new();
    for ran in rans {
        match &ran.answer {
            Answer::Blocked(stderr) => blocked.push(ran.blocked_text(stderr)),
            Answer::Text(text) if !text.is_empty() => outcome.additional_context.push(text.clone()),
            Answer::Text(_) | Answer::Json(_) | Answer::Failed(_) => {}
        }
        let Some(json) = common(ran, &mut outcome.report) else { continue };
        if json.get("decision").and_then(Value::as_str) == Some("block") {
            blocked.push(
                string_field(json, "reason")
                    .unwrap_or_else(|| format!("{} blocked the prompt", ran.hook)),
            );
        }
        let specific = specific(ran, json, Event::UserPromptSubmit, &mut outcome.report);
        push_context(ran, specific, &mut outcome.additional_context, &mut outcome.report);
    }
    outcome.blocked = join(blocked);
    outcome
}

pub(crate) fn stop(rans: &[Ran]) -> Stop {
    let mut outcome = Stop::default();
    let mut block = Vec::new();
    for ran in rans {
        if let Answer::Blocked(stderr) = &ran.answer {
            block.push(ran.blocked_text(stderr));
        }
        let Some(json) = common(ran, &mut outcome.report) else { continue };
        if json.get("decision").and_then(Value::as_str) == Some("block") {
            match string_field(json, "reason") {
                Some(reason) => block.push(reason),
                None => {
                    outcome.report.errors.push(format!(
                        "{}: `decision: \"block\"` needs a `reason` (the model's next instruction)",
                        ran.hook
                    ));
                    block.push("A stop hook asked you to continue.".to_owned());
                }
            }
        }
    }
    outcome.block = join(block);
    outcome
}

/// SessionStart and SubagentStart: context only; plain stdout counts for SessionStart.
pub(crate) fn context_only(event: Event, rans: &[Ran]) -> (Vec<String>, Report) {
    let mut report = Report::default();
    let mut context = Vec::new();
    for ran in rans {
        match &ran.answer {
            Answer::Text(text) if !text.is_empty() && event == Event::SessionStart => {
                context.push(text.clone());
            }
            Answer::Blocked(stderr) => report.system_messages.push(ran.blocked_text(stderr)),
            Answer::Text(_) | Answer::Json(_) | Answer::Failed(_) => {}
        }
        let Some(json) = common(ran, &mut report) else { continue };
        let specific = specific(ran, json, event, &mut report);
        push_context(ran, specific, &mut context, &mut report);
    }
    (context, report)
}

/// Events whose hooks cannot change anything: exit 2 shows stderr to the user.
pub(crate) fn report_only(rans: &[Ran]) -> Report {
    let mut report = Report::default();
    for ran in rans {
        if let Answer::Blocked(stderr) = &ran.answer {
            report.system_messages.push(ran.blocked_text(stderr));
        }
        common(ran, &mut report);
    }
    report
}
