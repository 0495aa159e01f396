//! The kernel's `Hooks` seam, served by a [`HookRunner`]: the kernel's calls become hook events,
//! and the typed outcomes become what the kernel acts on.
//!
//! Mapping choices: `continue: false` (a `Report::stop`) on PreToolUse denies the call with the
//! stop reason; elsewhere it is passed on to the person as a message (the kernel has no "halt
//! the session" command). A hook's `systemMessage`s and non-blocking errors reach the person as
//! warnings where the kernel seam carries messages (tool and prompt events) and are dropped on
//! the others (session start and end, subagents, notifications), which have no one to show them
//! to at that moment.

use std::path::PathBuf;

use codecoder_kernel::{
    HookDecision, HookScope, HookVerdict, Hooks, PermissionAnswer, PostToolUse as KernelPost,
    PreToolUse as KernelPre, PromptSubmit,
};
use codecoder_protocol::{ApprovalDecision, ContentItem, ToolCall};
use serde_json::json;

use crate::event::Event;
use crate::outcome::{DecisionKind, PermissionBehavior, Report};
use crate::runner::HookRunner;

/// A [`HookRunner`] behind the kernel's `Hooks` trait.
#[derive(Debug, Clone)]
pub struct KernelHooks {
    runner: HookRunner,
    /// Where subagents' logs are (passed as `agent_transcript_path`).
    sessions_dir: PathBuf,
}

impl KernelHooks {
    /// Serves the kernel with `runner`; `sessions_dir` is where subagent logs live.
    pub fn new(runner: HookRunner, sessions_dir: PathBuf) -> Self {
        Self { runner, sessions_dir }
    }
}

fn messages(report: Report) -> Vec<String> {
    let mut out = report.system_messages;
    out.extend(report.errors);
    if let Some(reason) = report.stop {
        out.push(format!("a hook asked to stop: {reason}"));
    }
    out
}

impl Hooks for KernelHooks {
    fn pre_tool_use(&self, _scope: HookScope<'_>, call: &ToolCall) -> KernelPre {
        let outcome = self.runner.pre_tool_use(&call.name, &call.args, call.id.as_str());
        let stop = outcome.report.stop.clone();
        let mut verdict = outcome.decision.map(|decision| HookVerdict {
            decision: match decision.kind {
                DecisionKind::Allow => HookDecision::Allow,
                DecisionKind::Ask => HookDecision::Ask,
                DecisionKind::Deny => HookDecision::Deny,
            },
            reason: decision.reason,
        });
        if let Some(reason) = stop {
            verdict = Some(HookVerdict { decision: HookDecision::Deny, reason: Some(reason) });
        }
        KernelPre {
            verdict,
            updated_args: outcome.updated_args,
            context: outcome.additional_context,
            messages: messages(outcome.report),
        }
    }

    fn permission_request(
        &self,
        _scope: HookScope<'_>,
        call: &ToolCall,
        _reason: Option<&str>,
    ) -> Option<PermissionAnswer> {
        let outcome = self.runner.permission_request(&call.name, &call.args, call.id.as_str());
        let verdict = outcome.verdict?;
        let decision = match verdict.behavior {
            PermissionBehavior::Allow => ApprovalDecision::AllowOnce,
            PermissionBehavior::Deny => match verdict.message {
                Some(feedback) => ApprovalDecision::DenyWithFeedback { feedback },
                None => ApprovalDecision::Deny,
            },
        };
        Some(PermissionAnswer { decision, updated_args: verdict.updated_args })
    }

    fn post_tool_use(
        &self,
        _scope: HookScope<'_>,
        call: &ToolCall,
        response: &[ContentItem],
        failed: bool,
    ) -> KernelPost {
        let event = if failed { Event::PostToolUseFailure } else { Event::PostToolUse };
        // The response's text is joined only when some hook listens.
        if !self.runner.set().has(event) {
            return KernelPost::default();
        }
        let response = ContentItem::joined_text(response);
        let response = response.as_str();
        let outcome = if failed {
            self.runner.post_tool_use_failure(&call.name, &call.args, call.id.as_str(), response)
        } else {
            let mut value = json!({ "output": response, "success": true });
            if let Some(path) = call.args.get("path").and_then(|p| p.as_str()) {
                value["filePath"] = json!(path);
            }
            self.runner.post_tool_use(&call.name, &call.args, call.id.as_str(), &value)
        };
        KernelPost {
            feedback: outcome.feedback,
            context: outcome.additional_context,
            messages: messages(outcome.report),
        }
    }

    fn user_prompt_submit(&self, _scope: HookScope<'_>, prompt: &str) -> PromptSubmit {
        let outcome = self.runner.user_prompt_submit(prompt);
        PromptSubmit {
            blocked: outcome.blocked,
            context: outcome.additional_context,
            messages: messages(outcome.report),
        }
    }

    fn stop(&self, _scope: HookScope<'_>, active: bool, last_message: &str) -> Option<String> {
        let last = (!last_message.is_empty()).then_some(last_message);
        self.runner.stop(active, last).block
    }

    fn subagent_start(&self, scope: HookScope<'_>, agent_id: &str) {
        let _ = self.runner.subagent_start(agent_id, scope.agent_type.unwrap_or("general-purpose"));
    }

    fn subagent_stop(&self, scope: HookScope<'_>, agent_id: &str, last_message: &str) {
        let last = (!last_message.is_empty()).then_some(last_message);
        let _ = self.runner.subagent_stop(
            agent_id,
            scope.agent_type.unwrap_or("general-purpose"),
            &self.sessions_dir,
            false,
            last,
        );
    }

    fn session_start(&self, source: &str) -> Vec<String> {
        self.runner.session_start(source).additional_context
    }

    fn session_end(&self, reason: &str) {
        let _ = self.runner.session_end(reason);
    }

    fn notification(&self, message: &str, kind: &str) {
        let _ = self.runner.notification(message, kind);
    }
}
