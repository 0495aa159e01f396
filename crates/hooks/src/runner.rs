//! Running the hooks of one event: the stdin JSON, the processes, the classification of what
//! they did.
//!
//! Each matching command runs as `sh -c COMMAND` (or, in the exec form, `COMMAND ARGS…`
//! without a shell) in the project directory, through
//! `codecoder_sandbox::output` (its own process group, its output collected), with
//! `CLAUDE_PROJECT_DIR` and `CODECODER_PROJECT_DIR` set and the event's JSON on stdin. Its
//! timeout is the wait's deadline: when it passes, the whole group is terminated (TERM, then
//! KILL after the grace period). A runner made with [`HookRunner::cancellable`] also stops at
//! its cancel token, whose signal is the wait's cancel, so a cancelled turn never waits for a
//! hook and no thread watches either.
//!
//! Invariants:
//! - No matching hook: nothing is encoded, no thread and no process is started.
//! - Several matching hooks run in parallel, one named thread each, all joined before the
//!   method returns; their answers are folded in configuration order, so outcomes do not
//!   depend on timing.
//! - At most `OUTPUT_CAP` bytes of each stream are kept; the rest is read and discarded so
//!   that a chatty hook never blocks on a full pipe.
//! - Handlers of the other types (`http`, `prompt`, `agent`, `mcp_tool`) run in the same
//!   threads and fold the same way (see `handler`); a `once` handler runs the first time it
//!   matches in the runner's session and never again.

use std::convert::Infallible;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codecoder_kernel::{
    CancelToken, HookReport, HookScope, HookVerdict, Hooks, PermissionDeniedHook, PermissionHook,
    PostToolUse, PreToolUse, PromptSubmit, SessionStartHook, StopHook, ToolOutput,
};
use codecoder_policy::{PermissionMode, PermissionSwitch};
use codecoder_protocol::{ContentItem, MessageId, ToolCall, ToolResult, ToolResultStatus, Verdict};
use codecoder_sandbox::{CommandSpec, Outcome, SpawnConfig, Wait, output};
use crossbeam_channel::Receiver;
use serde_json::{Map, Value, json};

use crate::condition::CallSubjects;
use crate::config::{Handler, HookSet};
use crate::event::Event;
use crate::handler::{self, Background, HookServices, Kind, Reachable};
use crate::outcome::{self, Answer, Ran};
use crate::{CLAUDE_PLUGIN_ROOT, CLAUDE_PROJECT_DIR, CODECODER_PROJECT_DIR, mapping};

/// Bytes kept of a hook's stdout and of its stderr.
const OUTPUT_CAP: usize = 1 << 20;
/// Characters of a command shown in messages.
const LABEL_CHARS: usize = 80;

/// The fields every hook input carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommonInput {
    /// The session's id.
    pub session_id: String,
    /// The session log file.
    pub transcript_path: PathBuf,
    /// The session's working directory.
    pub cwd: PathBuf,
    /// Claude's name for the approval mode: `default`, `plan`, `acceptEdits`, `auto`,
    /// `dontAsk` or `bypassPermissions`.
    pub permission_mode: String,
}

/// Runs the hooks of a [`HookSet`], one method per event. Cheap to clone; share it between
/// threads freely (its only mutable state, the async hooks and the current prompt's id, is
/// shared by its clones behind locks).
#[derive(Debug, Clone)]
pub struct HookRunner {
    set: Arc<HookSet>,
    common: CommonInput,
    /// Fires when the hooks should stop at once (the turn was cancelled).
    cancel: Option<Receiver<Infallible>>,
    /// The session's permission mode, read at each event: `plan` and `acceptEdits` replace
    /// `common.permission_mode` while they are on.
    permission: Option<PermissionSwitch>,
    /// Where subagents' logs are (their `agent_transcript_path`).
    sessions_dir: PathBuf,
    /// What a call is, for handlers' `if` conditions (`None`: conditional handlers run).
    subjects: Option<CallSubjects>,
    /// Inside a subagent: its id and type, sent as `agent_id` and `agent_type` with every event.
    agent: Option<(String, String)>,
    /// What `prompt`, `agent`, `mcp_tool` and `http` hooks may use.
    reach: Reachable,
    /// The `async` hooks running, and the answers of those that finished.
    background: Arc<Background>,
    /// The id of the user prompt being answered, sent as `prompt_id`: a fresh one at each root
    /// UserPromptSubmit, shared with the clones that run a subagent's events (they answer the
    /// same prompt). `None` before the first prompt.
    prompt_id: Arc<Mutex<Option<String>>>,
    /// The session's reasoning effort, sent as `effort: {level}` (`None`: not sent).
    effort: Option<String>,
}

impl HookRunner {
    /// A runner for `set`, whose hooks all get `common` in their input.
    pub fn new(set: Arc<HookSet>, common: CommonInput) -> HookRunner {
        HookRunner {
            set,
            common,
            cancel: None,
            permission: None,
            sessions_dir: PathBuf::new(),
            subjects: None,
            agent: None,
            reach: Reachable::default(),
            background: Arc::default(),
            prompt_id: Arc::default(),
            effort: None,
        }
    }

    /// This runner, whose hooks get `effort: {level}` (the session's reasoning effort) in their
    /// input.
    pub fn with_effort(self, level: Option<String>) -> HookRunner {
        HookRunner { effort: level, ..self }
    }

    /// The id of the user prompt being answered (`None` before the first prompt).
    pub fn prompt_id(&self) -> Option<String> {
        self.prompt_id.lock().map_or(None, |id| id.clone())
    }

    /// This runner, whose `prompt`, `agent` and `mcp_tool` hooks use `services` (without them
    /// those hooks fail, without blocking).
    pub fn with_services(self, services: Arc<dyn HookServices>) -> HookRunner {
        HookRunner { reach: Reachable { services: Some(services), ..self.reach }, ..self }
    }

    /// This runner, whose `http` hooks may also post to `hosts` (the hosts the network policy
    /// allows), not only to loopback.
    pub fn with_http_hosts(self, hosts: Vec<String>) -> HookRunner {
        let hosts = hosts.into_iter().map(|host| host.to_lowercase()).collect();
        HookRunner { reach: Reachable { allowed_hosts: hosts, ..self.reach }, ..self }
    }

    /// This runner, matching handlers' `if` conditions against calls as `subjects` describes
    /// them (the session's tools: a call's kind and permission keys).
    pub fn with_call_subjects(self, subjects: CallSubjects) -> HookRunner {
        HookRunner { subjects: Some(subjects), ..self }
    }

    /// This runner, whose SubagentStop hooks get `sessions_dir` (where subagents' logs are) as
    /// `agent_transcript_path`.
    pub fn with_sessions_dir(self, sessions_dir: PathBuf) -> HookRunner {
        HookRunner { sessions_dir, ..self }
    }

    /// This runner, whose hooks see `plan` or `acceptEdits` as `permission_mode` while
    /// `permission` is in that mode.
    pub fn with_permission(self, permission: PermissionSwitch) -> HookRunner {
        HookRunner { permission: Some(permission), ..self }
    }

    /// This runner, whose hooks are killed (their whole process group) as soon as `cancel`
    /// fires; a killed hook's answer is a non-blocking failure.
    pub fn cancellable(&self, cancel: &CancelToken) -> HookRunner {
        HookRunner { cancel: Some(cancel.signal().clone()), ..self.clone() }
    }

    /// This runner for the kernel's `scope`: cancellable by its token, and inside a subagent
    /// sending the subagent's id and type with every event.
    fn scoped(&self, scope: &HookScope<'_>) -> HookRunner {
        let agent = scope.agent_id.zip(scope.agent_type);
        HookRunner {
            agent: agent.map(|(id, agent_type)| (id.to_owned(), agent_type.to_owned())),
            ..self.cancellable(scope.cancel)
        }
    }

    /// The hooks this runner runs.
    pub fn set(&self) -> &HookSet {
        &self.set
    }

    /// Before our tool `tool` runs with `args` (call `call_id`). The input carries Claude's
    /// tool and argument names where one maps; `updated_args` comes back in ours.
    pub fn pre_tool_use(&self, tool: &str, args: &Value, call_id: &str) -> PreToolUse {
        let rans =
            self.run_for(Event::PreToolUse, tool, Some(args), || tool_fields(tool, args, call_id));
        outcome::pre_tool_use(tool, &rans)
    }

    /// When the user would be asked to approve `tool` with `args`.
    pub fn permission_request(&self, tool: &str, args: &Value, call_id: &str) -> PermissionHook {
        let rans = self.run_for(Event::PermissionRequest, tool, Some(args), || {
            tool_fields(tool, args, call_id)
        });
        outcome::permission_request(tool, &rans)
    }

    /// After `tool` ran and succeeded; `response` is its result (`tool_response`),
    /// `duration_ms` how long it ran, when known.
    pub fn post_tool_use(
        &self,
        tool: &str,
        args: &Value,
        call_id: &str,
        response: &Value,
        duration_ms: Option<u64>,
    ) -> PostToolUse {
        let rans = self.run_for(Event::PostToolUse, tool, Some(args), || {
            let mut fields = tool_fields(tool, args, call_id);
            fields.insert("tool_response".to_owned(), response.clone());
            if let Some(duration_ms) = duration_ms {
                fields.insert("duration_ms".to_owned(), json!(duration_ms));
            }
            fields
        });
        outcome::post_tool_use(Event::PostToolUse, &rans)
    }

    /// After `tool` ran and failed with `error`; `duration_ms` is how long it ran, when known.
    /// `is_interrupt` is always false: a call the person interrupted runs no hook.
    pub fn post_tool_use_failure(
        &self,
        tool: &str,
        args: &Value,
        call_id: &str,
        error: &str,
        duration_ms: Option<u64>,
    ) -> PostToolUse {
        let rans = self.run_for(Event::PostToolUseFailure, tool, Some(args), || {
            let mut fields = tool_fields(tool, args, call_id);
            fields.insert("error".to_owned(), Value::String(error.to_owned()));
            fields.insert("is_interrupt".to_owned(), Value::Bool(false));
            if let Some(duration_ms) = duration_ms {
                fields.insert("duration_ms".to_owned(), json!(duration_ms));
            }
            fields
        });
        outcome::post_tool_use(Event::PostToolUseFailure, &rans)
    }

    /// When the user submits `prompt`.
    /// A root runner starts a new prompt here: this event and the ones after it carry a fresh
    /// `prompt_id`.
    pub fn user_prompt_submit(&self, prompt: &str) -> PromptSubmit {
        if self.agent.is_none()
            && let Ok(mut id) = self.prompt_id.lock()
        {
            *id = Some(MessageId::new().to_string());
        }
        let rans = self.run(Event::UserPromptSubmit, "", || fields([("prompt", json!(prompt))]));
        outcome::user_prompt_submit(&rans)
    }

    /// When the model ends its turn. `stop_hook_active`: the turn is already going on because
    /// of a Stop hook.
    pub fn stop(&self, stop_hook_active: bool, last_assistant_message: Option<&str>) -> StopHook {
        let rans = self.run(Event::Stop, "", || {
            let mut fields = fields([("stop_hook_active", json!(stop_hook_active))]);
            if let Some(message) = last_assistant_message {
                fields.insert("last_assistant_message".to_owned(), json!(message));
            }
            fields
        });
        outcome::stop(&rans)
    }

    /// When a subagent (`agent_id`, of type `agent_type`) starts. Matchers see `agent_type`.
    /// The hooks' context for the child is not kept: our subagent tool takes none.
    pub fn subagent_start(&self, agent_id: &str, agent_type: &str) -> HookReport {
        let rans = self.run(Event::SubagentStart, agent_type, || {
            fields([("agent_id", json!(agent_id)), ("agent_type", json!(agent_type))])
        });
        outcome::context_only(Event::SubagentStart, &rans).1
    }

    /// When a subagent ends its turn. Matchers see `agent_type`. `block` makes it go on.
    pub fn subagent_stop(
        &self,
        agent_id: &str,
        agent_type: &str,
        agent_transcript_path: &Path,
        stop_hook_active: bool,
        last_assistant_message: Option<&str>,
    ) -> StopHook {
        let rans = self.run(Event::SubagentStop, agent_type, || {
            let mut fields = fields([
                ("stop_hook_active", json!(stop_hook_active)),
                ("agent_id", json!(agent_id)),
                ("agent_type", json!(agent_type)),
                ("agent_transcript_path", json!(agent_transcript_path)),
            ]);
            if let Some(message) = last_assistant_message {
                fields.insert("last_assistant_message".to_owned(), json!(message));
            }
            fields
        });
        outcome::stop(&rans)
    }

    /// When the session starts; `source` is `startup`, `resume`, `clear` or `compact` (what
    /// matchers see). Plain stdout counts as context.
    pub fn session_start(&self, source: &str) -> SessionStartHook {
        let rans = self.run(Event::SessionStart, source, || fields([("source", json!(source))]));
        let (context, report) = outcome::context_only(Event::SessionStart, &rans);
        SessionStartHook { context, report }
    }

    /// When the session ends; `reason` is `clear`, `logout`, `prompt_input_exit` or `other`.
    /// Matchers see the reason (Claude's reference does not say; this is the natural reading).
    pub fn session_end(&self, reason: &str) -> HookReport {
        let rans = self.run(Event::SessionEnd, reason, || fields([("reason", json!(reason))]));
        outcome::report_only(&rans)
    }

    /// Before compaction; `trigger` is `manual` or `auto` (what matchers see).
    pub fn pre_compact(&self, trigger: &str, custom_instructions: &str) -> HookReport {
        let rans = self.run(Event::PreCompact, trigger, || {
            fields([
                ("trigger", json!(trigger)),
                ("custom_instructions", json!(custom_instructions)),
            ])
        });
        outcome::report_only(&rans)
    }

    /// After compaction; `trigger` is `manual` or `auto` (what matchers see), `compact_summary`
    /// the summary the model wrote (empty when the history was trimmed without one).
    pub fn post_compact(&self, trigger: &str, compact_summary: &str) -> HookReport {
        let rans = self.run(Event::PostCompact, trigger, || {
            fields([("trigger", json!(trigger)), ("compact_summary", json!(compact_summary))])
        });
        outcome::report_only(&rans)
    }

    /// After the approval policy refused `tool` with `args` (call `call_id`) for `reason`.
    /// Matchers see the tool's name, as for PreToolUse.
    pub fn permission_denied(
        &self,
        tool: &str,
        args: &Value,
        call_id: &str,
        reason: &str,
    ) -> PermissionDeniedHook {
        let rans = self.run_for(Event::PermissionDenied, tool, Some(args), || {
            let mut fields = tool_fields(tool, args, call_id);
            fields.insert("reason".to_owned(), json!(reason));
            fields
        });
        outcome::permission_denied(&rans)
    }

    /// After every call of a model response ran: `tool_calls` holds each call (Claude's names,
    /// as PreToolUse shows them) with its result's text (`tool_response`) and, for a failed
    /// call, `error`. The matcher is ignored. `decision: "block"` (or exit 2) stops the turn;
    /// `additionalContext` goes to the model with the next request.
    pub fn post_tool_batch(&self, batch: &[(ToolCall, ToolResult)]) -> PostToolUse {
        let rans = self.run(Event::PostToolBatch, "", || {
            let calls = batch
                .iter()
                .map(|(call, result)| {
                    let mut fields = tool_fields(&call.name, &call.args, call.id.as_str());
                    let text = ContentItem::joined_text(&result.content);
                    match result.status {
                        ToolResultStatus::Success => {
                            fields.insert("tool_response".to_owned(), json!(text));
                        }
                        ToolResultStatus::Error | ToolResultStatus::Cancelled => {
                            fields.insert("error".to_owned(), json!(text));
                        }
                    }
                    Value::Object(fields)
                })
                .collect();
            fields([("tool_calls", Value::Array(calls))])
        });
        outcome::post_tool_use(Event::PostToolBatch, &rans)
    }

    /// A plan update added step `task_id` (its 1-based position) whose text is `task_subject`.
    /// The matcher is ignored. Exit 2 or `decision: "block"` gives the model that feedback with
    /// the update's result; `additionalContext` joins it.
    pub fn task_created(&self, task_id: &str, task_subject: &str) -> PostToolUse {
        let rans = self.run(Event::TaskCreated, "", || {
            fields([("task_id", json!(task_id)), ("task_subject", json!(task_subject))])
        });
        outcome::post_tool_use(Event::TaskCreated, &rans)
    }

    /// A plan update marked step `task_id` completed (as [`HookRunner::task_created`]).
    pub fn task_completed(&self, task_id: &str, task_subject: &str) -> PostToolUse {
        let rans = self.run(Event::TaskCompleted, "", || {
            fields([("task_id", json!(task_id)), ("task_subject", json!(task_subject))])
        });
        outcome::post_tool_use(Event::TaskCompleted, &rans)
    }

    /// When a turn ends on a model error: `error` (what matchers see) is `rate_limit`,
    /// `authentication_failed`, `invalid_request`, `server_error` or `unknown`. Output and exit
    /// codes change nothing; a hook's messages still reach the person.
    pub fn stop_failure(
        &self,
        error: &str,
        error_details: &str,
        last_assistant_message: Option<&str>,
    ) -> HookReport {
        let rans = self.run(Event::StopFailure, error, || {
            let mut fields =
                fields([("error", json!(error)), ("error_details", json!(error_details))]);
            if let Some(message) = last_assistant_message {
                fields.insert("last_assistant_message".to_owned(), json!(message));
            }
            fields
        });
        let mut report = outcome::report_only(&rans);
        // The turn has ended: nothing is left for `continue: false` to stop.
        report.stop = None;
        report
    }

    /// When the user is notified; `notification_type` (what matchers see) is
    /// `permission_prompt`, `idle_prompt`, `auth_success` or `elicitation_dialog`.
    pub fn notification(&self, message: &str, notification_type: &str) -> HookReport {
        let rans = self.run(Event::Notification, notification_type, || {
            fields([("message", json!(message)), ("notification_type", json!(notification_type))])
        });
        outcome::report_only(&rans)
    }

    /// When the instruction file `file_path` was loaded into the session's prompt.
    /// `memory_type` is `User` (from the user's home) or `Project`; `load_reason` (what matchers
    /// see) is `session_start`. Only the hooks' messages and errors come back.
    pub fn instructions_loaded(
        &self,
        file_path: &Path,
        memory_type: &str,
        load_reason: &str,
    ) -> HookReport {
        let rans = self.run(Event::InstructionsLoaded, load_reason, || {
            fields([
                ("file_path", json!(file_path)),
                ("memory_type", json!(memory_type)),
                ("load_reason", json!(load_reason)),
            ])
        });
        outcome::report_only(&rans)
    }

    /// Runs the hooks of `event` matching `subject`; `event_fields` builds the event's own
    /// input fields, only when something runs.
    fn run(
        &self,
        event: Event,
        subject: &str,
        event_fields: impl FnOnce() -> Map<String, Value>,
    ) -> Vec<Ran> {
        self.run_for(event, subject, None, event_fields)
    }

    /// `run`, keeping only the handlers whose `if` condition applies to `call` (tool, args).
    fn run_for(
        &self,
        event: Event,
        subject: &str,
        call: Option<&Value>,
        event_fields: impl FnOnce() -> Map<String, Value>,
    ) -> Vec<Ran> {
        let mut handlers = self.set.matching(event, subject);
        if let Some(args) = call {
            handlers.retain(|handler| {
                handler.condition.as_deref().is_none_or(|condition| {
                    crate::condition::applies(
                        condition,
                        subject,
                        args,
                        &self.common.cwd,
                        self.subjects.as_ref(),
                    )
                })
            });
        }
        // A `once` handler runs the first time it matches; marking it here, before it runs,
        // keeps two parallel events from both running it.
        handlers.retain(|handler| handler.once.as_ref().is_none_or(handler::Once::first));
        // What async hooks said since the last event joins this one's answers.
        let mut rans = self.background.finished(event);
        if handlers.is_empty() {
            return rans;
        }
        let mut input = Map::new();
        input.insert("session_id".to_owned(), json!(self.common.session_id));
        input.insert("transcript_path".to_owned(), json!(self.common.transcript_path));
        input.insert("cwd".to_owned(), json!(self.common.cwd));
        let permission_mode = match self.permission.as_ref().map(PermissionSwitch::get) {
            Some(mode @ (PermissionMode::Plan | PermissionMode::AcceptEdits)) => mode.as_str(),
            Some(PermissionMode::Default) | None => self.common.permission_mode.as_str(),
        };
        input.insert("permission_mode".to_owned(), json!(permission_mode));
        input.insert("hook_event_name".to_owned(), json!(event.name()));
        if let Some(prompt_id) = self.prompt_id() {
            input.insert("prompt_id".to_owned(), json!(prompt_id));
        }
        if let Some(level) = &self.effort {
            input.insert("effort".to_owned(), json!({ "level": level }));
        }
        if let Some((agent_id, agent_type)) = &self.agent {
            input.insert("agent_id".to_owned(), json!(agent_id));
            input.insert("agent_type".to_owned(), json!(agent_type));
        }
        input.extend(event_fields());
        // Serializing a `Value` cannot fail (its keys are strings).
        let input = Arc::new(serde_json::to_vec(&Value::Object(input)).unwrap_or_default());
        let project_dir = self.set.project_dir();
        let cancel = self.cancel.as_ref();
        let reach = &self.reach;
        let (background, handlers): (Vec<&Handler>, Vec<&Handler>) =
            handlers.into_iter().partition(|handler| handler.background);
        for (handler_idx, handler) in background.into_iter().enumerate() {
            let (owned, project_dir) = (handler.clone(), project_dir.to_owned());
            let (input, reach) = (Arc::clone(&input), reach.clone());
            self.background.start(format!("hook-async-{event}-{handler_idx}"), move || {
                run_handler(&owned, &project_dir, &input, None, &reach)
            });
        }
        if let [handler] = handlers.as_slice() {
            rans.push(run_handler(handler, project_dir, &input, cancel, reach));
            return rans;
        }
        let mut threads = Vec::with_capacity(handlers.len());
        for (handler_idx, handler) in handlers.iter().enumerate() {
            let owned = (*handler).clone();
            let project_dir = project_dir.to_owned();
            let input = Arc::clone(&input);
            let cancel = self.cancel.clone();
            let reach = self.reach.clone();
            let thread =
                codecoder_stdx::spawn_named(format!("hook-{event}-{handler_idx}"), move || {
                    run_handler(&owned, &project_dir, &input, cancel.as_ref(), &reach)
                });
            threads.push((handler, thread));
        }
        let ran = threads.into_iter().map(|(handler, thread)| match thread {
            Ok(thread) => thread.join().unwrap_or_else(|panic| Ran {
                hook: label(handler),
                answer: Answer::Failed(format!("{}: its thread panicked: {panic}", label(handler))),
            }),
            // Out of threads: run it here rather than skip a hook that may guard something.
            Err(_) => run_handler(handler, project_dir, &input, cancel, reach),
        });
        rans.extend(ran);
        rans
    }
}

/// The kernel's seam, served by the runner: each call becomes the event's hooks, run with the
/// scope's cancel token (a cancelled turn kills its running hooks).
///
/// `continue: false` of any event stops the turn (the kernel acts on `HookReport::stop`); on
/// PreToolUse it also denies the call, so nothing runs even if a caller ignored the stop.
impl Hooks for HookRunner {
    fn runs_inline(&self) -> bool {
        self.set.is_empty()
    }

    fn pre_tool_use(&self, scope: HookScope<'_>, call: &ToolCall) -> PreToolUse {
        let runner = self.scoped(&scope);
        let mut outcome = runner.pre_tool_use(&call.name, &call.args, call.id.as_str());
        if let Some(reason) = outcome.report.stop.clone() {
            outcome.verdict = Some(HookVerdict { decision: Verdict::Deny, reason: Some(reason) });
        }
        outcome
    }

    fn permission_request(&self, scope: HookScope<'_>, call: &ToolCall) -> PermissionHook {
        self.scoped(&scope).permission_request(&call.name, &call.args, call.id.as_str())
    }

    fn post_tool_use(
        &self,
        scope: HookScope,
        call: &ToolCall,
        output: &ToolOutput,
        duration: Duration,
    ) -> PostToolUse {
        let duration_ms = Some(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX));
        let failed = output.is_error;
        let event = if failed { Event::PostToolUseFailure } else { Event::PostToolUse };
        // The response's text is joined only when some hook listens.
        if !self.set.has(event) {
            return PostToolUse::default();
        }
        let runner = self.scoped(&scope);
        let response = ContentItem::joined_text(&output.content);
        let response = response.as_str();
        if failed {
            return runner.post_tool_use_failure(
                &call.name,
                &call.args,
                call.id.as_str(),
                response,
                duration_ms,
            );
        }
        let mut value = json!({ "output": response, "success": true });
        if let Some(path) = call.args.get("path").and_then(|p| p.as_str()) {
            value["filePath"] = json!(path);
        }
        runner.post_tool_use(&call.name, &call.args, call.id.as_str(), &value, duration_ms)
    }

    fn user_prompt_submit(&self, scope: HookScope<'_>, prompt: &str) -> PromptSubmit {
        self.scoped(&scope).user_prompt_submit(prompt)
    }

    fn stop(&self, scope: HookScope<'_>, active: bool, last_message: &str) -> StopHook {
        let last = (!last_message.is_empty()).then_some(last_message);
        self.scoped(&scope).stop(active, last)
    }

    fn subagent_start(&self, scope: HookScope<'_>, agent_id: &str) -> HookReport {
        let agent_type = scope.agent_type.unwrap_or("general-purpose");
        self.scoped(&scope).subagent_start(agent_id, agent_type)
    }

    fn subagent_stop(&self, scope: HookScope<'_>, agent_id: &str, last: &str) -> HookReport {
        let last = (!last.is_empty()).then_some(last);
        let agent_type = scope.agent_type.unwrap_or("general-purpose");
        let runner = self.scoped(&scope);
        runner.subagent_stop(agent_id, agent_type, &self.sessions_dir, false, last).report
    }

    fn session_start(&self, scope: HookScope<'_>, source: &str) -> SessionStartHook {
        self.scoped(&scope).session_start(source)
    }

    fn pre_compact(&self, scope: HookScope<'_>, trigger: &str, focus: Option<&str>) -> HookReport {
        self.scoped(&scope).pre_compact(trigger, focus.unwrap_or(""))
    }

    fn session_end(&self, reason: &str) -> HookReport {
        HookRunner::session_end(self, reason)
    }

    fn notification(&self, scope: HookScope<'_>, message: &str, kind: &str) -> HookReport {
        self.scoped(&scope).notification(message, kind)
    }

    fn permission_denied(
        &self,
        scope: HookScope<'_>,
        call: &ToolCall,
        reason: &str,
    ) -> PermissionDeniedHook {
        let runner = self.scoped(&scope);
        runner.permission_denied(&call.name, &call.args, call.id.as_str(), reason)
    }

    fn post_tool_batch(
        &self,
        scope: HookScope<'_>,
        batch: &[(ToolCall, ToolResult)],
    ) -> PostToolUse {
        self.scoped(&scope).post_tool_batch(batch)
    }

    fn stop_failure(
        &self,
        scope: HookScope<'_>,
        error: &str,
        details: &str,
        last_message: &str,
    ) -> HookReport {
        let last = (!last_message.is_empty()).then_some(last_message);
        self.scoped(&scope).stop_failure(error, details, last)
    }

    fn post_compact(&self, scope: HookScope<'_>, trigger: &str, summary: &str) -> HookReport {
        self.scoped(&scope).post_compact(trigger, summary)
    }

    fn task_created(&self, scope: HookScope<'_>, task_id: &str, subject: &str) -> PostToolUse {
        self.scoped(&scope).task_created(task_id, subject)
    }

    fn task_completed(&self, scope: HookScope<'_>, task_id: &str, subject: &str) -> PostToolUse {
        self.scoped(&scope).task_completed(task_id, subject)
    }
}

fn fields<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(key, value)| (key.to_owned(), value)).collect()
}

fn tool_fields(tool: &str, args: &Value, call_id: &str) -> Map<String, Value> {
    fields([
        ("tool_name", json!(mapping::claude_tool_name(tool))),
        ("tool_input", mapping::to_claude(tool, args)),
        ("tool_use_id", json!(call_id)),
    ])
}

/// How a hook is named in messages: "hook `COMMAND` (from FILE)".
fn label(handler: &Handler) -> String {
    let mut command: String = handler.command.chars().take(LABEL_CHARS).collect();
    if command.len() < handler.command.len() {
        command.push('…');
    }
    format!("hook `{command}` (from {})", handler.source.display())
}

fn run_handler(
    handler: &Handler,
    project_dir: &Path,
    input: &[u8],
    cancel: Option<&Receiver<Infallible>>,
    reach: &Reachable,
) -> Ran {
    let hook = label(handler);
    let answer = match &handler.kind {
        Kind::Command { .. } => execute(handler, project_dir, input, &hook, cancel),
        kind => handler::run(kind, input, handler.timeout, &hook, reach),
    };
    Ran { hook, answer }
}

fn execute(
    handler: &Handler,
    project_dir: &Path,
    input: &[u8],
    hook: &str,
    cancel: Option<&Receiver<Infallible>>,
) -> Answer {
    if let Some(callback) = &handler.callback {
        let input = serde_json::from_slice::<Value>(input).unwrap_or(Value::Null);
        return match callback.0.call(&input, handler.timeout) {
            Ok(Value::Object(json)) => Answer::Json(json),
            Ok(other) => Answer::Failed(format!("{hook}: answered {other}, not a JSON object")),
            Err(err) => Answer::Failed(format!("{hook}: {err}")),
        };
    }
    let mut env = vec![
        (OsString::from(CLAUDE_PROJECT_DIR), project_dir.as_os_str().to_owned()),
        (OsString::from(CODECODER_PROJECT_DIR), project_dir.as_os_str().to_owned()),
    ];
    if let Some(root) = &handler.plugin_root {
        env.push((OsString::from(CLAUDE_PLUGIN_ROOT), root.as_os_str().to_owned()));
    }
    // The exec form runs the program itself, its arguments passed as they are: no shell reads
    // them, so nothing in them is expanded or split.
    let (program, args) = match &handler.kind {
        Kind::Command { args: Some(args) } => {
            (OsString::from(&handler.command), args.iter().map(OsString::from).collect())
        }
        _ => (OsString::from("sh"), vec![OsString::from("-c"), OsString::from(&handler.command)]),
    };
    let spec = CommandSpec {
        program,
        args,
        cwd: Some(project_dir.to_owned()),
        env,
        stdin: Some(input.to_vec()),
    };
    let wait = Wait { cancel, ..Wait::within(handler.timeout) };
    let collected = match output(&spec, &SpawnConfig::standard(), &wait, OUTPUT_CAP) {
        Ok(collected) => collected,
        Err(err) => return Answer::Failed(format!("{hook}: {err}")),
    };
    let stdout = String::from_utf8_lossy(&collected.stdout).trim().to_owned();
    let stderr = String::from_utf8_lossy(&collected.stderr).trim().to_owned();
    let status = match collected.outcome {
        Outcome::Exited(status) => status,
        Outcome::Cancelled => {
            return Answer::Failed(format!("{hook}: cancelled; its process group was killed"));
        }
        Outcome::TimedOut => {
            return Answer::Failed(format!(
                "{hook}: timed out after {}s and was killed",
                handler.timeout.as_secs_f64()
            ));
        }
        // A hook's wait has no kill signal.
        Outcome::Killed => {
            return Answer::Failed(format!("{hook}: was killed; its process group with it"));
        }
    };
    match status.code() {
        Some(0) => handler::stdout_answer(&stdout, hook),
        Some(2) => Answer::Blocked(stderr),
        Some(code) => {
            Answer::Failed(with_stderr(format!("{hook}: exited with code {code}"), &stderr))
        }
        None => Answer::Failed(with_stderr(format!("{hook}: was killed by a signal"), &stderr)),
    }
}

fn with_stderr(message: String, stderr: &str) -> String {
    if stderr.is_empty() { message } else { format!("{message}: {stderr}") }
}
