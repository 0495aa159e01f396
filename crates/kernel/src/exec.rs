//! Tool orchestration for one step (design.md "A turn", seed L3): validation, approval, parallel
//! or serial execution on worker threads, results in call order.
//!
//! The calls of one response are cut into segments: a run of consecutive calls whose tools run
//! in parallel (read-only ones) is one segment, run at most `max_parallel_tools` at once; every
//! other call is a segment of its own. Segments run in order, so a read after an edit sees the
//! edit. Within a segment, every call is checked and approved (in call order) before any runs.
//!
//! Invariants:
//! - Results are logged and sent in call order, each exactly once: real when the tool finished,
//!   synthetic otherwise (`refused` before running, `cancelled` after a cancel).
//! - `tool_started` is logged before a worker starts; approvals are logged as decided.
//! - A worker runs its tool under `catch_unwind` and sends exactly one message; a panic becomes
//!   `ToolError::Panicked`.
//! - After a cancel, workers get `cancel_grace` to stop; a call whose tool does not stop gets a
//!   synthetic result now, and its worker (in the pool) is joined at shutdown.

use std::collections::{HashSet, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Instant;

use codecoder_protocol::{
    AgentEventKind, AgentStatus, ApprovalDecision, ApprovalRequest, CallView, ContentItem,
    DecidedBy, RecordBody, Reply, RequestId, SyntheticReason, ToolCall, ToolError, ToolResult,
    ToolResultStatus, Verdict,
};
use crossbeam_channel::select;

use crate::approval::{ApprovalQuery, PolicyAnswer};
use crate::cancel::CancelToken;
use crate::hooks::{HookReport, HookScope, HookVerdict};
use crate::schema;
use crate::tool::{PendingEscalation, Tool, ToolContext, ToolOutput};
use crate::turn::{AgentLoop, Stop, TurnState, hook_stop};

/// A call of the step and what it is, as its tool describes it. The view is built once, when
/// the call is taken from the assembled message, and again only when a hook rewrites the
/// arguments; the approval query, `ToolStarted` and `ToolFinished` all carry that one view.
pub(crate) struct StepCall {
    pub(crate) call: ToolCall,
    pub(crate) view: CallView,
}

impl StepCall {
    pub(crate) fn new(agent: &AgentLoop, call: ToolCall) -> Self {
        let view = agent.env.deps.tools.view(&call.name, &call.args);
        Self { call, view }
    }
}

/// A call's result, ready to be logged.
struct Finished {
    result: ToolResult,
    synthetic: Option<SyntheticReason>,
    /// What the client is told.
    event: Result<ToolResult, ToolError>,
    /// The MCP result the tool reported for clients (`ToolContext::report_mcp_result`).
    mcp_result: Option<serde_json::Value>,
}

enum Prepared {
    /// Run it; the strings are PreToolUse hook context for the model, added to its result.
    Run(Arc<dyn Tool>, Vec<String>),
    Refused(ToolError),
}

/// A worker's message: one per call that ran.
struct WorkerDone {
    index: usize,
    outcome: Result<ToolOutput, ToolError>,
    /// A hook's request to stop the turn.
    halt: Option<String>,
    /// Whether the call asked to end the turn after this step.
    ends_turn: bool,
    /// The MCP result the tool reported for clients.
    mcp_result: Option<serde_json::Value>,
}

/// A call cleared to run: its index, its tool, and hook context for its result.
type Runnable = (usize, Arc<dyn Tool>, Vec<String>);

impl AgentLoop {
    /// Runs the calls of one response and logs their results in order.
    pub(crate) fn run_tools(
        &mut self,
        turn_state: &mut TurnState,
        mut calls: Vec<StepCall>,
    ) -> Result<(), Stop> {
        self.emit(AgentEventKind::Status(AgentStatus::RunningTools));
        let mut done: Vec<Option<Finished>> = calls.iter().map(|_| None).collect();
        let mut logged = 0;
        let token = CancelToken::new();
        let mut start = 0;
        while start < calls.len() {
            let parallel = self.runs_in_parallel(&calls[start].call);
            let mut end = start + 1;
            if parallel {
                while end < calls.len() && self.runs_in_parallel(&calls[end].call) {
                    end += 1;
                }
            }
            let mut runnable = Vec::new();
            for index in start..end {
                match self.prepare(turn_state, &mut calls[index]) {
                    Ok(Prepared::Run(tool, context)) => runnable.push((index, tool, context)),
                    Ok(Prepared::Refused(err)) => {
                        done[index] = Some(refused(&calls[index].call, err, self))
                    }
                    Err(stop) => {
                        return Err(self.abandon(turn_state, &calls, &mut done, logged, stop));
                    }
                }
            }
            self.flush(turn_state, &calls, &mut done, &mut logged)?;
            let limit = if parallel { self.env.config.max_parallel_tools.max(1) } else { 1 };
            if let Err(stop) =
                self.execute(turn_state, &calls, runnable, limit, &token, &mut done, &mut logged)
            {
                return Err(self.abandon(turn_state, &calls, &mut done, logged, stop));
            }
            start = end;
        }
        Ok(())
    }

    /// Cut-off response: no call runs; each gets a refused result telling the model why.
    pub(crate) fn refuse_cut_off(
        &mut self,
        turn_state: &TurnState,
        calls: &[StepCall],
    ) -> Result<(), Stop> {
        let (turn, step) = (turn_state.id, turn_state.step.id);
        for StepCall { call, view } in calls {
            let message = "not run: your response was cut off by the output-token limit, so this call may be \
                           incomplete. Send it again, shorter if needed."
                .to_owned();
            let result =
                ToolResult::text(call.id.clone(), ToolResultStatus::Error, message.clone());
            self.append(RecordBody::ToolResult {
                result,
                synthetic: Some(SyntheticReason::Refused),
            })?;
            self.emit(AgentEventKind::ToolFinished {
                turn,
                step,
                call_id: call.id.clone(),
                call: call.clone(),
                view: view.clone(),
                result: Err(ToolError::Failed { message }),
                mcp_result: None,
            });
        }
        Ok(())
    }

    fn runs_in_parallel(&self, call: &ToolCall) -> bool {
        self.env.deps.tools.find(&call.name).is_some_and(|tool| tool.runs_in_parallel())
    }

    /// Looks the tool up, checks the arguments, runs the PreToolUse hooks (which may rewrite
    /// them: `call.args` is then the rewritten arguments), and gets an approval decision (asking
    /// the person when the policy says so). `Err` only when a command stops the turn meanwhile.
    fn prepare(
        &mut self,
        turn_state: &mut TurnState,
        step_call: &mut StepCall,
    ) -> Result<Prepared, Stop> {
        let StepCall { call, view } = step_call;
        let Some(tool) = self.env.deps.tools.find(&call.name) else {
            return Ok(Prepared::Refused(ToolError::UnknownTool { name: call.name.clone() }));
        };
        if let Err(message) = checked(&*tool, &call.args) {
            return Ok(Prepared::Refused(ToolError::InvalidArguments { message }));
        }
        let pre = {
            let call: &ToolCall = call;
            self.call_hooks(|hooks, scope| hooks.pre_tool_use(scope, call))?
        };
        if let Some(reason) = self.show_hook_report("PreToolUse", pre.report) {
            return Err(hook_stop("PreToolUse", &reason));
        }
        let mut rewritten = None;
        if let Some(args) = pre.updated_args {
            if let Err(message) = checked(&*tool, &args) {
                return Ok(Prepared::Refused(ToolError::InvalidArguments {
                    message: format!("a PreToolUse hook rewrote the arguments: {message}"),
                }));
            }
            call.args = args.clone();
            *view = self.env.deps.tools.view(&call.name, &call.args);
            rewritten = Some(args);
        }
        let context = pre.context;
        let keys = tool.permission_keys(&call.args);
        let granted = !keys.is_empty() && keys.iter().all(|key| self.grants.contains(key));
        let query = ApprovalQuery {
            call,
            view,
            kind: tool.kind(),
            permission_keys: &keys,
            depth: self.env.depth,
            agent_type: self.env.agent_type.as_deref(),
            hook: pre.verdict.as_ref(),
            granted,
        };
        let mut answer = self.env.deps.approval.decide(&query);
        // Deny wins: a hook's deny stands whatever the policy thinks of the call.
        if let Some(HookVerdict { decision: Verdict::Deny, reason }) = &pre.verdict
            && answer.decision != Verdict::Deny
        {
            answer = PolicyAnswer {
                decision: Verdict::Deny,
                decided_by: DecidedBy::Hook,
                reason: Some(match reason {
                    Some(reason) => format!("a PreToolUse hook denied this call: {reason}"),
                    None => "a PreToolUse hook denied this call".to_owned(),
                }),
            };
        }
        let by = answer.decided_by;
        match answer.decision {
            Verdict::Allow => {
                self.log_approval(call, &keys, ApprovalDecision::AllowOnce, by, rewritten)?;
                Ok(Prepared::Run(tool, context))
            }
            Verdict::Deny => {
                self.log_approval(call, &keys, ApprovalDecision::Deny, by, rewritten)?;
                let reason = answer
                    .reason
                    .unwrap_or_else(|| "the approval policy denied this call".to_owned());
                let denied = {
                    let call: &ToolCall = call;
                    let reason = reason.as_str();
                    self.call_hooks(|hooks, scope| hooks.permission_denied(scope, call, reason))?
                };
                if let Some(stop) = self.show_hook_report("PermissionDenied", denied.report) {
                    return Err(hook_stop("PermissionDenied", &stop));
                }
                let reason = if denied.retry {
                    format!("{reason}. A PermissionDenied hook says you may try this call again.")
                } else {
                    reason
                };
                Ok(Prepared::Refused(ToolError::PermissionDenied { reason }))
            }
            Verdict::Ask => {
                if granted {
                    self.log_approval(
                        call,
                        &keys,
                        ApprovalDecision::AllowForSession,
                        DecidedBy::SessionGrant,
                        rewritten,
                    )?;
                    return Ok(Prepared::Run(tool, context));
                }
                let explanation = answer.reason;
                let permission = {
                    let call: &ToolCall = call;
                    self.call_hooks(|hooks, scope| hooks.permission_request(scope, call))?
                };
                if let Some(reason) = self.show_hook_report("PermissionRequest", permission.report)
                {
                    return Err(hook_stop("PermissionRequest", &reason));
                }
                let (decision, decided_by) = match permission.answer {
                    Some(hook_answer) => {
                        if let Some(args) = hook_answer.updated_args {
                            if let Err(message) = checked(&*tool, &args) {
                                return Ok(Prepared::Refused(ToolError::InvalidArguments {
                                    message: format!(
                                        "a PermissionRequest hook rewrote the arguments: {message}"
                                    ),
                                }));
                            }
                            call.args = args.clone();
                            *view = self.env.deps.tools.view(&call.name, &call.args);
                            rewritten = Some(args);
                        }
                        (hook_answer.decision, DecidedBy::Hook)
                    }
                    None => {
                        self.notify_permission_prompt(&call.name)?;
                        let summary = tool.summary(&call.args);
                        let decision = self.ask_approval(
                            turn_state,
                            call,
                            view,
                            summary,
                            &keys,
                            explanation,
                            &crossbeam_channel::never(),
                        )?;
                        if matches!(
                            decision,
                            ApprovalDecision::AllowOnce | ApprovalDecision::AllowForSession
                        ) {
                            turn_state.approved_calls.insert(call.id.clone());
                        }
                        (decision, DecidedBy::User)
                    }
                };
                self.log_approval(call, &keys, decision.clone(), decided_by, rewritten)?;
                Ok(match decision {
                    ApprovalDecision::AllowOnce => Prepared::Run(tool, context),
                    ApprovalDecision::AllowForSession => {
                        self.grants.extend(keys);
                        Prepared::Run(tool, context)
                    }
                    ApprovalDecision::Deny => Prepared::Refused(ToolError::PermissionDenied {
                        reason: format!("the {decided_by} denied this call"),
                    }),
                    ApprovalDecision::DenyWithFeedback { feedback } => {
                        Prepared::Refused(ToolError::PermissionDenied {
                            reason: format!("the {decided_by} denied this call: {feedback}"),
                        })
                    }
                    ApprovalDecision::Cancelled => Prepared::Refused(ToolError::Cancelled),
                })
            }
        }
    }

    /// Runs the Notification hooks for a permission prompt about to be shown.
    fn notify_permission_prompt(&mut self, tool: &str) -> Result<(), Stop> {
        let message = format!("codecoder needs your permission to use {tool}");
        let report = self
            .call_hooks(|hooks, scope| hooks.notification(scope, &message, "permission_prompt"))?;
        match self.show_hook_report("Notification", report) {
            Some(reason) => Err(hook_stop("Notification", &reason)),
            None => Ok(()),
        }
    }

    /// Decides a tool's escalation request (see `ToolContext::request_approval`), logs it as an
    /// `approval` record of the call, and answers the tool.
    fn escalation(
        &mut self,
        turn_state: &mut TurnState,
        calls: &[StepCall],
        pending: PendingEscalation,
    ) -> Result<(), Stop> {
        let PendingEscalation { call_id, request, reply, withdrawn } = pending;
        let Some(StepCall { call, view }) = calls.iter().find(|it| it.call.id == call_id) else {
            let _ = reply.send(ApprovalDecision::Cancelled);
            return Ok(());
        };
        let keys = request.permission_keys;
        let granted = !keys.is_empty() && keys.iter().all(|key| self.grants.contains(key));
        let (decision, decided_by) = if !request.may_ask {
            (ApprovalDecision::Deny, DecidedBy::Mode)
        } else if request.covered_by_call_approval && turn_state.approved_calls.contains(&call_id) {
            // The person was asked about this very call in this turn and allowed it: the
            // retry it needs is covered (codex does not ask again either).
            (ApprovalDecision::AllowOnce, DecidedBy::CallApproval)
        } else if granted {
            (ApprovalDecision::AllowForSession, DecidedBy::SessionGrant)
        } else {
            self.notify_permission_prompt(&call.name)?;
            let decision = self.ask_approval(
                turn_state,
                call,
                view,
                request.summary,
                &keys,
                request.reason,
                &withdrawn,
            )?;
            if decision == ApprovalDecision::AllowForSession {
                self.grants.extend(keys.iter().cloned());
            }
            // Only a withdrawn question ends without the person's answer.
            let by = if decision == ApprovalDecision::Cancelled {
                DecidedBy::Cancel
            } else {
                DecidedBy::User
            };
            (decision, by)
        };
        self.log_approval(call, &keys, decision.clone(), decided_by, None)?;
        let _ = reply.send(decision);
        Ok(())
    }

    /// Sends an approval request and blocks for the answer, still handling `cmd`. A request
    /// dropped unanswered counts as `Cancelled`.
    #[allow(clippy::too_many_arguments)] // The question's parts, passed down rather than stored.
    fn ask_approval(
        &mut self,
        turn_state: &TurnState,
        call: &ToolCall,
        view: &CallView,
        summary: String,
        keys: &[String],
        reason: Option<String>,
        withdrawn: &crossbeam_channel::Receiver<()>,
    ) -> Result<ApprovalDecision, Stop> {
        let (turn, step) = (turn_state.id, turn_state.step.id);
        let (reply, answer) = Reply::pair();
        self.emit(AgentEventKind::ApprovalRequest(ApprovalRequest {
            id: RequestId::new(),
            turn,
            step,
            call: call.clone(),
            view: view.clone(),
            summary,
            permission_keys: keys.to_vec(),
            reason,
            reply,
        }));
        self.emit(AgentEventKind::Status(AgentStatus::WaitingForUser));
        let decision = loop {
            select! {
                recv(answer) -> decision => break decision.unwrap_or(ApprovalDecision::Cancelled),
                // The requester stopped waiting (its command ended): the turn goes on.
                recv(withdrawn) -> _ => break ApprovalDecision::Cancelled,
                recv(self.cmd) -> cmd => {
                    if let Some(stop) = self.handle_cmd(cmd) {
                        // The request is withdrawn: dropping `answer` makes the client's
                        // `Reply::send` return false.
                        drop(answer);
                        self.log_approval(call, keys, ApprovalDecision::Cancelled, DecidedBy::Cancel, None)?;
                        return Err(stop);
                    }
                }
            }
        };
        self.emit(AgentEventKind::Status(AgentStatus::RunningTools));
        Ok(decision)
    }

    fn log_approval(
        &mut self,
        call: &ToolCall,
        keys: &[String],
        decision: ApprovalDecision,
        by: DecidedBy,
        updated_args: Option<serde_json::Value>,
    ) -> Result<(), Stop> {
        // A key quotes the call (`shell:COMMAND`): the log keeps it with its secrets replaced.
        let mut permission_keys = keys.to_vec();
        let mut updated_args = updated_args;
        if let Some(redactor) = &self.env.config.redactor {
            for key in &mut permission_keys {
                if let std::borrow::Cow::Owned(redacted) = redactor.redact(key).0 {
                    *key = redacted;
                }
            }
            if let Some(args) = &mut updated_args {
                redactor.redact_json(args);
            }
        }
        self.append(RecordBody::Approval {
            call_id: call.id.clone(),
            permission_keys,
            decision,
            decided_by: by.to_string(),
            updated_args,
        })?;
        Ok(())
    }

    /// Runs `runnable` at most `limit` at once until all finished, or a command stops the turn.
    #[allow(clippy::too_many_arguments)] // The step's state, passed down rather than stored.
    fn execute(
        &mut self,
        turn_state: &mut TurnState,
        calls: &[StepCall],
        runnable: Vec<Runnable>,
        limit: usize,
        token: &CancelToken,
        done: &mut [Option<Finished>],
        logged: &mut usize,
    ) -> Result<(), Stop> {
        let (turn, step) = (turn_state.id, turn_state.step.id);
        // Each worker sends exactly one message, so this capacity never blocks a worker.
        let (done_tx, done_rx) = crossbeam_channel::bounded::<WorkerDone>(runnable.len().max(1));
        // A worker has at most one escalation outstanding (it waits for the answer).
        let (escalation_tx, escalation_rx) =
            crossbeam_channel::bounded::<PendingEscalation>(runnable.len().max(1));
        let mut queue: VecDeque<Runnable> = runnable.into();
        let mut running: HashSet<usize> = HashSet::new();
        // A hook asked to stop the turn: no further call starts, and the turn stops once the
        // running ones finished.
        let mut halted: Option<String> = None;
        loop {
            while running.len() < limit {
                let Some((index, tool, context)) = queue.pop_front() else { break };
                let StepCall { call, view } = &calls[index];
                self.append(RecordBody::ToolStarted { call_id: call.id.clone() })?;
                let view = view.clone();
                self.emit(AgentEventKind::ToolStarted { turn, step, call: call.clone(), view });
                let ctx = ToolContext {
                    call_id: call.id.clone(),
                    turn,
                    step,
                    cancel: token.clone(),
                    source: self.env.source.clone(),
                    events: self.env.events.clone(),
                    env: Arc::clone(&self.env),
                    escalations: escalation_tx.clone(),
                    halt: std::sync::OnceLock::new(),
                    ends_turn: std::sync::atomic::AtomicBool::new(false),
                    mcp_result: std::sync::OnceLock::new(),
                    held_output: std::sync::Mutex::new(Vec::new()),
                };
                let worker_call = call.clone();
                let done_tx = done_tx.clone();
                let job = Box::new(move || {
                    let call = worker_call;
                    let args = call.args.clone();
                    let started = Instant::now();
                    let outcome = catch_unwind(AssertUnwindSafe(|| tool.execute(&ctx, args)));
                    let result = outcome.unwrap_or_else(|payload| {
                        Err(ToolError::Panicked {
                            message: codecoder_stdx::thread::panic_message(&*payload),
                        })
                    });
                    ctx.flush_output();
                    let result = after_tool(&ctx, &call, result, context, started.elapsed());
                    let _ = done_tx.send(WorkerDone {
                        index,
                        outcome: result,
                        halt: ctx.halt.into_inner(),
                        ends_turn: ctx.ends_turn.into_inner(),
                        mcp_result: ctx.mcp_result.into_inner(),
                    });
                });
                match self.pool.run(job) {
                    Ok(()) => {
                        running.insert(index);
                    }
                    Err(err) => {
                        let failed = Err(ToolError::Failed {
                            message: format!("could not start the tool: {err}"),
                        });
                        done[index] = Some(self.finished(call, failed, None));
                        self.flush(turn_state, calls, done, logged)?;
                    }
                }
            }
            if running.is_empty() {
                return match halted {
                    Some(message) => Err(Stop::Failed(message)),
                    None => Ok(()),
                };
            }
            let stop = select! {
                recv(done_rx) -> message => {
                    // `done_tx` is held here, so the channel cannot disconnect.
                    let Ok(WorkerDone { index, outcome, halt, ends_turn, mcp_result }) = message
                    else {
                        continue;
                    };
                    running.remove(&index);
                    turn_state.step.ends_turn |= ends_turn;
                    done[index] = Some(self.finished(&calls[index].call, outcome, mcp_result));
                    self.flush(turn_state, calls, done, logged)?;
                    if let Some(reason) = halt && halted.is_none() {
                        halted = Some(reason);
                        queue.clear();
                    }
                    continue;
                }
                recv(escalation_rx) -> pending => {
                    // `escalation_tx` is held here, so the channel cannot disconnect.
                    let Ok(pending) = pending else { continue };
                    match self.escalation(turn_state, calls, pending) {
                        Ok(()) => continue,
                        Err(stop) => stop,
                    }
                }
                recv(self.cmd) -> cmd => {
                    let Some(stop) = self.handle_cmd(cmd) else { continue };
                    stop
                }
            };
            token.cancel();
            let deadline = Instant::now() + self.env.config.cancel_grace;
            while !running.is_empty() {
                let Ok(WorkerDone { index, outcome, mcp_result, .. }) =
                    done_rx.recv_deadline(deadline)
                else {
                    break;
                };
                running.remove(&index);
                done[index] = Some(self.finished(&calls[index].call, outcome, mcp_result));
            }
            if !running.is_empty() {
                self.emit(AgentEventKind::Warning {
                    message: format!(
                        "{} tool(s) did not stop within the cancel grace period",
                        running.len()
                    ),
                });
            }
            return Err(stop);
        }
    }

    /// The result of a call whose tool returned, its secrets redacted (the one place every
    /// tool's output passes before the model, the log and the clients see it).
    fn finished(
        &self,
        call: &ToolCall,
        outcome: Result<ToolOutput, ToolError>,
        mut mcp_result: Option<serde_json::Value>,
    ) -> Finished {
        if let (Some(redactor), Some(sent)) = (&self.env.config.redactor, &mut mcp_result) {
            redactor.redact_json(sent);
        }
        match outcome {
            Ok(output) => {
                let status = if output.is_error {
                    ToolResultStatus::Error
                } else {
                    ToolResultStatus::Success
                };
                let mut result = ToolResult {
                    tool_call_id: call.id.clone(),
                    content: output.content,
                    status,
                    exit: output.exit,
                };
                self.redact(&mut result);
                Finished { event: Ok(result.clone()), result, synthetic: None, mcp_result }
            }
            Err(mut err) => {
                let status = if err == ToolError::Cancelled {
                    ToolResultStatus::Cancelled
                } else {
                    ToolResultStatus::Error
                };
                // The error the clients are told, and the result built from it, without secrets.
                let count =
                    self.env.config.redactor.as_ref().map_or(0, |r| r.redact_error(&mut err));
                let mut result = ToolResult::text(call.id.clone(), status, err.to_string());
                if count > 0 {
                    result
                        .content
                        .push(ContentItem::Text { text: crate::redact::redaction_note(count) });
                }
                Finished { result, synthetic: None, event: Err(err), mcp_result }
            }
        }
    }

    /// Replaces the secrets in `result`'s text and, when there were any, says how many in a
    /// note of its own at the end, so the model knows the text it reads was changed.
    fn redact(&self, result: &mut ToolResult) {
        let Some(redactor) = &self.env.config.redactor else { return };
        let count = redactor.redact_content(&mut result.content);
        if count > 0 {
            result.content.push(ContentItem::Text { text: crate::redact::redaction_note(count) });
        }
    }

    /// Logs and sends the results that are next in call order.
    fn flush(
        &mut self,
        turn_state: &mut TurnState,
        calls: &[StepCall],
        done: &mut [Option<Finished>],
        logged: &mut usize,
    ) -> Result<(), Stop> {
        while *logged < calls.len() {
            let Some(finished) = done[*logged].take() else { return Ok(()) };
            self.log_result(turn_state, &calls[*logged], finished)?;
            *logged += 1;
        }
        Ok(())
    }

    fn log_result(
        &mut self,
        turn_state: &mut TurnState,
        step_call: &StepCall,
        finished: Finished,
    ) -> Result<(), Stop> {
        let (turn, step) = (turn_state.id, turn_state.step.id);
        let StepCall { call, view } = step_call;
        let Finished { mut result, synthetic, event, mcp_result } = finished;
        if result.status == ToolResultStatus::Error {
            let key = (call.name.clone(), call.args.to_string());
            let count = turn_state.failures.entry(key).or_insert(0);
            *count += 1;
            let count = *count;
            if count >= self.env.config.repeated_failure_nudge {
                result.content.push(ContentItem::Text {
                    text: format!(
                        "This exact call has now failed {count} times in this turn. Do not repeat it: \
                         change the arguments or take a different approach."
                    ),
                });
            }
        }
        if result.status == ToolResultStatus::Success
            && let Some(plan) = &view.plan
        {
            let notes = self.plan_hooks(&plan.steps)?;
            result.content.extend(notes.into_iter().map(|text| ContentItem::Text { text }));
        }
        self.append(RecordBody::ToolResult { result, synthetic })?;
        self.emit(AgentEventKind::ToolFinished {
            turn,
            step,
            call_id: call.id.clone(),
            call: call.clone(),
            view: view.clone(),
            result: event,
            mcp_result,
        });
        Ok(())
    }

    /// Runs the TaskCreated hooks for each step of `steps` the held plan lacks (by its text) and
    /// the TaskCompleted hooks for each step completed now and not before, then holds `steps`
    /// as the plan. Returns what the hooks said for the model, to join the update's result.
    fn plan_hooks(&mut self, steps: &[codecoder_protocol::PlanStep]) -> Result<Vec<String>, Stop> {
        let held = std::mem::replace(&mut self.plan, steps.to_vec());
        if self.env.deps.hooks.runs_inline() {
            return Ok(Vec::new());
        }
        let mut notes = Vec::new();
        for (index, step) in steps.iter().enumerate() {
            let before = held.iter().find(|old| old.text == step.text);
            let created = before.is_none();
            let completed =
                step.status == "completed" && before.is_none_or(|old| old.status != "completed");
            let task_id = (index + 1).to_string();
            let (task_id, subject) = (task_id.as_str(), step.text.as_str());
            for (created_event, fires) in [(true, created), (false, completed)] {
                if !fires {
                    continue;
                }
                let event = if created_event { "TaskCreated" } else { "TaskCompleted" };
                let said = self.call_hooks(|hooks, scope| {
                    if created_event {
                        hooks.task_created(scope, task_id, subject)
                    } else {
                        hooks.task_completed(scope, task_id, subject)
                    }
                })?;
                if let Some(reason) = self.show_hook_report(event, said.report) {
                    return Err(hook_stop(event, &reason));
                }
                notes.extend(
                    said.context
                        .into_iter()
                        .map(|t| format!("<hook-context>\n{t}\n</hook-context>")),
                );
                notes.extend(
                    said.feedback.map(|t| format!("<hook-feedback>\n{t}\n</hook-feedback>")),
                );
            }
        }
        Ok(notes)
    }

    /// A command stopped the turn mid-step: logs the remaining results in call order (real ones
    /// that finished, synthetic `cancelled` for the rest) and hands the stop back.
    fn abandon(
        &mut self,
        turn_state: &mut TurnState,
        calls: &[StepCall],
        done: &mut [Option<Finished>],
        logged: usize,
        stop: Stop,
    ) -> Stop {
        if self.writer.trace().open_step().is_none() {
            return stop;
        }
        for index in logged..calls.len() {
            let call = &calls[index];
            let finished = done[index].take().unwrap_or_else(|| {
                let result = ToolResult::text(
                    call.call.id.clone(),
                    ToolResultStatus::Cancelled,
                    "cancelled before it finished",
                );
                Finished {
                    result,
                    synthetic: Some(SyntheticReason::Cancelled),
                    event: Err(ToolError::Cancelled),
                    mcp_result: None,
                }
            });
            if let Err(err) = self.log_result(turn_state, call, finished) {
                // The log is failing; `close_turn` will try what it can.
                return err;
            }
        }
        stop
    }
}

/// The result of a call refused before running, with a message the model can act on.
fn refused(call: &ToolCall, err: ToolError, agent: &AgentLoop) -> Finished {
    let (status, synthetic) = match err {
        ToolError::Cancelled => (ToolResultStatus::Cancelled, SyntheticReason::Cancelled),
        _ => (ToolResultStatus::Error, SyntheticReason::Refused),
    };
    let text = match &err {
        ToolError::UnknownTool { .. } => {
            // The tools offered now (plan mode's `exit_plan_mode` only while it is on).
            let all = agent.env.deps.tools.all();
            let names: Vec<&str> =
                all.iter().filter(|tool| tool.offered()).map(|tool| tool.name()).collect();
            format!("{err}. The available tools are: {}.", names.join(", "))
        }
        ToolError::InvalidArguments { .. } => {
            format!("{err}. Fix the arguments to match the tool's schema and call it again.")
        }
        _ => err.to_string(),
    };
    let result = ToolResult::text(call.id.clone(), status, text);
    Finished { result, synthetic: Some(synthetic), event: Err(err), mcp_result: None }
}

/// Runs the PostToolUse (or PostToolUseFailure) hooks on a worker's result (`duration`: how
/// long the tool ran) and adds what they
/// and the PreToolUse hooks said for the model to it. A cancelled call runs no hook.
fn after_tool(
    ctx: &ToolContext,
    call: &ToolCall,
    result: Result<ToolOutput, ToolError>,
    pre_context: Vec<String>,
    duration: std::time::Duration,
) -> Result<ToolOutput, ToolError> {
    if matches!(result, Err(ToolError::Cancelled)) || ctx.cancel.is_cancelled() {
        return result;
    }
    let scope = HookScope {
        depth: ctx.env.depth,
        agent_type: ctx.env.agent_type.as_deref(),
        agent_id: ctx.env.agent_id(),
        cancel: &ctx.cancel,
    };
    let hooks = &ctx.env.deps.hooks;
    let post = match &result {
        Ok(output) => hooks.post_tool_use(scope, call, output, duration),
        Err(err) => hooks.post_tool_use(scope, call, &ToolOutput::error(err.to_string()), duration),
    };
    let event = if post_failed(&result) { "PostToolUseFailure" } else { "PostToolUse" };
    show_report(ctx, event, post.report);
    let notes: Vec<String> = pre_context
        .into_iter()
        .chain(post.context)
        .map(|text| format!("<hook-context>\n{text}\n</hook-context>"))
        .chain(post.feedback.map(|text| format!("<hook-feedback>\n{text}\n</hook-feedback>")))
        .collect();
    if notes.is_empty() {
        return result;
    }
    let mut output = match result {
        Ok(output) => output,
        // The hooks have something to say about a failure: it becomes an error output, so
        // their words reach the model with it.
        Err(err) => ToolOutput::error(err.to_string()),
    };
    output.content.extend(notes.into_iter().map(|text| ContentItem::Text { text }));
    Ok(output)
}

fn post_failed(result: &Result<ToolOutput, ToolError>) -> bool {
    match result {
        Ok(output) => output.is_error,
        Err(_) => true,
    }
}

/// `AgentLoop::show_hook_report` for a worker: messages and problems go to the person, a stop
/// request to the loop (through the call's context).
pub(crate) fn show_report(ctx: &ToolContext, event: &str, report: HookReport) {
    let send = |kind| {
        let _ =
            ctx.events.send(codecoder_protocol::AgentEvent { source: ctx.source.clone(), kind });
    };
    for message in report.messages {
        send(AgentEventKind::HookMessage { event: event.to_owned(), message });
    }
    for message in report.errors {
        send(AgentEventKind::Warning { message });
    }
    if let Some(reason) = report.stop {
        ctx.stop_turn(event, &reason);
    }
}

/// The arguments checked against the tool's schema, then by the tool itself (`Tool::check`).
fn checked(tool: &dyn Tool, args: &serde_json::Value) -> std::result::Result<(), String> {
    schema::validate(&tool.schema(), args)?;
    tool.check(args)
}
