//! What hooks said, per event: the typed outcomes and how the answers of several hooks fold into
//! one.
//!
//! Every hook's result is first classified (by the runner) as JSON output, plain output, a
//! blocking exit 2 with its stderr, or a non-blocking failure. The fold then applies Claude
//! Code's rules:
//! - `continue: false` stops the session whatever else was decided; the first `stopReason`
//!   wins (see `HookReport::stop`).
//! - PreToolUse: deny > ask > allow across hooks; the deprecated top-level
//!   `decision: approve|block` means allow|deny; `permissionDecision` wins over it.
//! - PermissionRequest: deny > allow.
//! - Blocking reasons and contexts of several hooks are kept in configuration order.
//!
//! The outcomes are the kernel's own types (`codecoder_kernel::PreToolUse` and the rest): what
//! the hooks said is folded straight into what the kernel acts on.
//!
//! Invariant: folding never fails; malformed output becomes a message in `HookReport::errors`
//! that names the hook.

use codecoder_kernel::{
    HookReport, HookVerdict, PermissionAnswer, PermissionDeniedHook, PermissionHook, PostToolUse,
    PreToolUse, PromptSubmit, StopHook,
};
use codecoder_protocol::{ApprovalDecision, Verdict};
use serde_json::{Map, Value};

use crate::event::Event;
use crate::mapping;

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
fn common<'a>(ran: &'a Ran, report: &mut HookReport) -> Option<&'a Map<String, Value>> {
    let json = match &ran.answer {
        Answer::Json(json) => json,
        Answer::Failed(message) => {
            report.errors.push(message.clone());
            return None;
        }
        Answer::Text(_) | Answer::Blocked(_) => return None,
    };
    if let Some(Value::String(message)) = json.get("systemMessage") {
        report.messages.push(message.clone());
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
    report: &mut HookReport,
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
    report: &mut HookReport,
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
fn updated_args(ran: &Ran, tool: &str, input: &Value, report: &mut HookReport) -> Option<Value> {
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
        push_context(ran, specific, &mut outcome.context, &mut outcome.report);
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
        outcome.verdict = Some(HookVerdict { decision: kind, reason: join(reasons) });
    }
    if outcome.verdict.as_ref().is_some_and(|verdict| verdict.decision == Verdict::Deny) {
        // A denied call does not run, so there is nothing to rewrite.
        outcome.updated_args = None;
    }
    outcome
}

pub(crate) fn permission_request(tool: &str, rans: &[Ran]) -> PermissionHook {
    let mut outcome = PermissionHook::default();
    let mut allow: Option<PermissionAnswer> = None;
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
                // Rules added for the session (`updatedPermissions`) allow the call's kind from
                // now on: a session grant.
                let for_session = decision
                    .get("updatedPermissions")
                    .and_then(Value::as_array)
                    .is_some_and(|updates| updates.iter().any(grants_for_session));
                allow = Some(PermissionAnswer {
                    decision: if for_session {
                        ApprovalDecision::AllowForSession
                    } else {
                        ApprovalDecision::AllowOnce
                    },
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
    outcome.answer = match join(denials) {
        Some(feedback) => Some(PermissionAnswer {
            decision: ApprovalDecision::DenyWithFeedback { feedback },
            updated_args: None,
            interrupt,
        }),
        None => allow,
    };
    outcome
}

/// An `updatedPermissions` entry that adds allow rules for the session.
fn grants_for_session(update: &Value) -> bool {
    update.get("type").and_then(Value::as_str) == Some("addRules")
        && update.get("behavior").and_then(Value::as_str) == Some("allow")
        && update.get("destination").and_then(Value::as_str).is_none_or(|d| d == "session")
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
        push_context(ran, specific, &mut outcome.context, &mut outcome.report);
    }
    outcome.feedback = join(feedback);
    outcome
}

pub(crate) fn user_prompt_submit(rans: &[Ran]) -> PromptSubmit {
    let mut outcome = PromptSubmit::default();
    let mut blocked = Vec::new();
    for ran in rans {
        match &ran.answer {
            Answer::Blocked(stderr) => blocked.push(ran.blocked_text(stderr)),
            Answer::Text(text) if !text.is_empty() => outcome.context.push(text.clone()),
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
        push_context(ran, specific, &mut outcome.context, &mut outcome.report);
    }
    outcome.blocked = join(blocked);
    outcome
}

pub(crate) fn stop(rans: &[Ran]) -> StopHook {
    let mut outcome = StopHook::default();
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
    outcome.instruction = join(block);
    outcome
}

/// SessionStart and SubagentStart: context only; plain stdout counts for SessionStart.
pub(crate) fn context_only(event: Event, rans: &[Ran]) -> (Vec<String>, HookReport) {
    let mut report = HookReport::default();
    let mut context = Vec::new();
    for ran in rans {
        match &ran.answer {
            Answer::Text(text) if !text.is_empty() && event == Event::SessionStart => {
                context.push(text.clone());
            }
            Answer::Blocked(stderr) => report.messages.push(ran.blocked_text(stderr)),
            Answer::Text(_) | Answer::Json(_) | Answer::Failed(_) => {}
        }
        let Some(json) = common(ran, &mut report) else { continue };
        let specific = specific(ran, json, event, &mut report);
        push_context(ran, specific, &mut context, &mut report);
    }
    (context, report)
}

/// PermissionDenied: `hookSpecificOutput.retry: true` tells the model it may try again; exit 2
/// shows stderr to the person (the call is refused already).
pub(crate) fn permission_denied(rans: &[Ran]) -> PermissionDeniedHook {
    let mut outcome = PermissionDeniedHook::default();
    for ran in rans {
        if let Answer::Blocked(stderr) = &ran.answer {
            outcome.report.messages.push(ran.blocked_text(stderr));
        }
        let Some(json) = common(ran, &mut outcome.report) else { continue };
        let Some(specific) = specific(ran, json, Event::PermissionDenied, &mut outcome.report)
        else {
            continue;
        };
        match specific.get("retry") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(retry)) => outcome.retry |= retry,
            Some(_) => outcome
                .report
                .errors
                .push(format!("{}: `retry` is not a boolean; ignored", ran.hook)),
        }
    }
    outcome
}

/// Events whose hooks cannot change anything: exit 2 shows stderr to the user.
pub(crate) fn report_only(rans: &[Ran]) -> HookReport {
    let mut report = HookReport::default();
    for ran in rans {
        if let Answer::Blocked(stderr) = &ran.answer {
            report.messages.push(ran.blocked_text(stderr));
        }
        common(ran, &mut report);
    }
    report
}
