//! The kernel's `Hooks` seam, served by a [`HookRunner`]: the kernel's calls become hook events,
//! and the typed outcomes become what the kernel acts on.
//!
//! Mapping choices: `continue: false` (a `Report::stop`) of any event becomes the kernel's
//! `HookReport::stop`, which stops the turn (Claude Code's "stop after the hooks"); on
//! PreToolUse it also denies the call, so nothing runs even if a caller ignored the stop. A
//! hook's `systemMessage`s become `HookReport::messages`, its non-blocking errors
//! `HookReport::errors`. Every event runs with the scope's cancel token: a cancelled turn kills
//! its running hooks.

use std::path::PathBuf;

use codecoder_kernel::{
    HookReport, HookScope, HookVerdict, Hooks, PermissionAnswer, PermissionHook,
    PostToolUse as KernelPost, PreToolUse as KernelPre, PromptSubmit, SessionStartHook, StopHook,
};
use codecoder_protocol::{ApprovalDecision, ContentItem, ToolCall, Verdict};
use serde_json::json;

use crate::event::Event;
use crate::outcome::{PermissionBehavior, Report};
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

fn report(report: Report) -> HookReport {
    HookReport { stop: report.stop, messages: report.system_messages, errors: report.errors }
}

impl Hooks for KernelHooks {
    fn is_empty(&self) -> bool {
        self.runner.set().is_empty()
    }

    fn pre_tool_use(&self, scope: HookScope<'_>, call: &ToolCall) -> KernelPre {
        let runner = self.runner.cancellable(scope.cancel);
        let outcome = runner.pre_tool_use(&call.name, &call.args, call.id.as_str());
        let stop = outcome.report.stop.clone();
        let mut verdict = outcome.decision;
        if let Some(reason) = stop {
            verdict = Some(HookVerdict { decision: Verdict::Deny, reason: Some(reason) });
        }
        KernelPre {
            verdict,
            updated_args: outcome.updated_args,
            context: outcome.additional_context,
            report: report(outcome.report),
        }
    }

    fn permission_request(
        &self,
        scope: HookScope<'_>,
        call: &ToolCall,
        _reason: Option<&str>,
    ) -> PermissionHook {
        let runner = self.runner.cancellable(scope.cancel);
        let outcome = runner.permission_request(&call.name, &call.args, call.id.as_str());
        let answer = outcome.verdict.map(|verdict| {
            let decision = match verdict.behavior {
                PermissionBehavior::Allow => ApprovalDecision::AllowOnce,
                PermissionBehavior::Deny => match verdict.message {
                    Some(feedback) => ApprovalDecision::DenyWithFeedback { feedback },
                    None => ApprovalDecision::Deny,
                },
            };
            PermissionAnswer { decision, updated_args: verdict.updated_args }
        });
        PermissionHook { answer, report: report(outcome.report) }
    }

    fn post_tool_use(
        &self,
        scope: HookScope<'_>,
        call: &ToolCall,
        response: &[ContentItem],
        failed: bool,
    ) -> KernelPost {
        let event = if failed { Event::PostToolUseFailure } else { Event::PostToolUse };
        // The response's text is joined only when some hook listens.
        if !self.runner.set().has(event) {
            return KernelPost::default();
        }
        let runner = self.runner.cancellable(scope.cancel);
        let response = ContentItem::joined_text(response);
        let response = response.as_str();
        let outcome = if failed {
            runner.post_tool_use_failure(&call.name, &call.args, call.id.as_str(), response)
        } else {
            let mut value = json!({ "output": response, "success": true });
            if let Some(path) = call.args.get("path").and_then(|p| p.as_str()) {
                value["filePath"] = json!(path);
            }
            runner.post_tool_use(&call.name, &call.args, call.id.as_str(), &value)
        };
        KernelPost {
            feedback: outcome.feedback,
            context: outcome.additional_context,
            report: report(outcome.report),
        }
    }

    fn user_prompt_submit(&self, scope: HookScope<'_>, prompt: &str) -> PromptSubmit {
        let outcome = self.runner.cancellable(scope.cancel).user_prompt_submit(prompt);
        PromptSubmit {
            blocked: outcome.blocked,
            context: outcome.additional_context,
            report: report(outcome.report),
        }
    }

    fn stop(&self, scope: HookScope<'_>, active: bool, last_message: &str) -> StopHook {
        let last = (!last_message.is_empty()).then_some(last_message);
        let outcome = self.runner.cancellable(scope.cancel).stop(active, last);
        StopHook { instruction: outcome.block, report: report(outcome.report) }
    }

    fn subagent_start(&self, scope: HookScope<'_>, agent_id: &str) -> HookReport {
        let runner = self.runner.cancellable(scope.cancel);
        let outcome =
            runner.subagent_start(agent_id, scope.agent_type.unwrap_or("general-purpose"));
        // Our subagent tool takes no extra context for the child.
        report(outcome.report)
    }

    fn subagent_stop(
        &self,
        scope: HookScope<'_>,
        agent_id: &str,
        last_message: &str,
    ) -> HookReport {
        let last = (!last_message.is_empty()).then_some(last_message);
        let outcome = self.runner.cancellable(scope.cancel).subagent_stop(
            agent_id,
            scope.agent_type.unwrap_or("general-purpose"),
            &self.sessions_dir,
            false,
            last,
        );
        report(outcome.report)
    }

    fn session_start(&self, scope: HookScope<'_>, source: &str) -> SessionStartHook {
        let outcome = self.runner.cancellable(scope.cancel).session_start(source);
        SessionStartHook { context: outcome.additional_context, report: report(outcome.report) }
    }

    fn pre_compact(
        &self,
        scope: HookScope<'_>,
        trigger: &str,
        custom_instructions: Option<&str>,
    ) -> HookReport {
        report(
            self.runner
                .cancellable(scope.cancel)
                .pre_compact(trigger, custom_instructions.unwrap_or("")),
        )
    }

    fn session_end(&self, reason: &str) -> HookReport {
        report(self.runner.session_end(reason))
    }

    fn notification(&self, scope: HookScope<'_>, message: &str, kind: &str) -> HookReport {
        report(self.runner.cancellable(scope.cancel).notification(message, kind))
    }
}
