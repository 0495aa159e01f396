//! `CallEnv`: what a running tool call can reach (cancel token, output deltas, questions to the
//! person). The kernel's `ToolContext` is one; `StandaloneEnv` is another, for running tools
//! without a kernel (tests, benchmarks, the argument fuzzer).
//!
//! Invariant: a tool reaches the outside world of its call only through this trait.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use codecoder_kernel::{Approver, CancelToken, EscalationRequest, Redactor, ToolContext};
use codecoder_protocol::{ApprovalDecision, AskUserAnswer, DecidedBy, OutputStream, ToolError};

/// What a running call can reach.
pub trait CallEnv {
    /// Fires when the call is cancelled.
    fn cancel(&self) -> &CancelToken;
    /// Streams output of the running call to the client (not to the model).
    fn output(&self, stream: OutputStream, chunk: String);
    /// Tells the person something about the call that is not its output (not to the model).
    fn warn(&self, message: String);
    /// Asks the person and blocks for the answer.
    fn ask_user(&self, question: String, options: Vec<String>) -> Result<AskUserAnswer, ToolError>;
    /// Asks for more than the call was approved for (a retry outside the sandbox); blocks for
    /// the decision. See `ToolContext::request_approval` for who decides.
    fn request_approval(&self, request: EscalationRequest) -> ApprovalDecision;
    /// Keeps `path`'s content for undo before the call first writes it (see
    /// `ToolContext::checkpoint`). Default: nothing is kept.
    fn checkpoint(&self, path: &std::path::Path) {
        let _ = path;
    }
    /// Says the call is about to run a command that may change files (see
    /// `ToolContext::before_command`). Default: nothing.
    fn before_command(&self) {}
    /// Ends the turn once this step's results are logged (see `ToolContext::end_turn`).
    /// Default: nothing.
    fn end_turn(&self) {}
    /// A handle that requests approvals for this call from threads of the tool's own (the
    /// managed network's asks; see `ToolContext::approver`). Default: none, so such asks are
    /// refused.
    fn approver(&self) -> Option<Approver> {
        None
    }
    /// The session's secret redactor, for what a call writes outside its result (a spill
    /// file). Default: none.
    fn redactor(&self) -> Option<Arc<Redactor>> {
        None
    }
}

impl CallEnv for ToolContext {
    fn cancel(&self) -> &CancelToken {
        ToolContext::cancel(self)
    }
    fn output(&self, stream: OutputStream, chunk: String) {
        ToolContext::output(self, stream, chunk);
    }
    fn warn(&self, message: String) {
        ToolContext::warn(self, message);
    }
    fn ask_user(&self, question: String, options: Vec<String>) -> Result<AskUserAnswer, ToolError> {
        ToolContext::ask_user(self, question, options)
    }
    fn request_approval(&self, request: EscalationRequest) -> ApprovalDecision {
        ToolContext::request_approval(self, request)
    }
    fn checkpoint(&self, path: &std::path::Path) {
        ToolContext::checkpoint(self, path);
    }
    fn before_command(&self) {
        ToolContext::before_command(self);
    }
    fn end_turn(&self) {
        ToolContext::end_turn(self);
    }
    fn approver(&self) -> Option<Approver> {
        Some(ToolContext::approver(self))
    }
    fn redactor(&self) -> Option<Arc<Redactor>> {
        ToolContext::redactor(self).cloned()
    }
}

/// A `CallEnv` without a kernel: keeps the streamed output (up to a cap), answers questions
/// with a fixed answer, and decides escalations like the kernel does (refused when the mode
/// never asks, allowed when its session grants cover every key, else the fixed answer, whose
/// "for this session" grants the keys).
#[derive(Debug)]
pub struct StandaloneEnv {
    cancel: CancelToken,
    answer: AskUserAnswer,
    approval: ApprovalDecision,
    // Mutexes because `CallEnv` takes `&self`; never held across a channel operation.
    approvals: Mutex<Vec<String>>,
    decisions: Mutex<Vec<(Vec<String>, ApprovalDecision, DecidedBy)>>,
    grants: Mutex<HashSet<String>>,
    output_cap: usize,
    // A Mutex because `output` takes `&self` and tools may stream from a helper thread; it is
    // never held across a channel operation.
    output: Mutex<StreamedOutput>,
    // A Mutex because `warn` takes `&self`; never held across a channel operation.
    warnings: Mutex<Vec<String>>,
    redactor: Option<Arc<Redactor>>,
}

#[derive(Debug, Default)]
struct StreamedOutput {
    text: String,
    bytes: usize,
    deltas: usize,
}

impl StandaloneEnv {
    /// An env that keeps up to `output_cap` bytes of streamed output and answers every question
    /// with `answer`.
    pub fn new(answer: AskUserAnswer, output_cap: usize) -> Self {
        Self {
            cancel: CancelToken::new(),
            answer,
            approval: ApprovalDecision::Deny,
            approvals: Mutex::new(Vec::new()),
            decisions: Mutex::new(Vec::new()),
            grants: Mutex::new(HashSet::new()),
            output_cap,
            output: Mutex::new(StreamedOutput::default()),
            warnings: Mutex::new(Vec::new()),
            redactor: None,
        }
    }

    /// Gives the calls `redactor` as the session's (see `CallEnv::redactor`).
    pub fn with_redactor(mut self, redactor: Arc<Redactor>) -> Self {
        self.redactor = Some(redactor);
        self
    }

    /// The warnings the calls gave so far.
    pub fn warnings(&self) -> Vec<String> {
        self.warnings.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Answers approval requests with `decision` from now on (default: deny).
    pub fn with_approval(mut self, decision: ApprovalDecision) -> Self {
        self.approval = decision;
        self
    }

    /// The summaries of the approval requests made so far.
    pub fn approval_requests(&self) -> Vec<String> {
        self.approvals.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Every escalation decided so far: its keys, the decision, and who decided (`mode`,
    /// `session-grant`, `user`), as the kernel logs them.
    pub fn decisions(&self) -> Vec<(Vec<String>, ApprovalDecision, DecidedBy)> {
        self.decisions.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The streamed output kept so far.
    pub fn streamed(&self) -> String {
        self.output.lock().unwrap_or_else(PoisonError::into_inner).text.clone()
    }

    /// Bytes streamed in all, and in how many deltas.
    pub fn streamed_totals(&self) -> (usize, usize) {
        let output = self.output.lock().unwrap_or_else(PoisonError::into_inner);
        (output.bytes, output.deltas)
    }

    /// The token `cancel()` returns; cancel it to cancel the call.
    pub fn cancel_token(&self) -> &CancelToken {
        &self.cancel
    }
}

impl CallEnv for StandaloneEnv {
    fn cancel(&self) -> &CancelToken {
        &self.cancel
    }
    fn output(&self, _stream: OutputStream, chunk: String) {
        let mut output = self.output.lock().unwrap_or_else(PoisonError::into_inner);
        output.bytes += chunk.len();
        output.deltas += 1;
        if output.text.len() + chunk.len() <= self.output_cap {
            output.text.push_str(&chunk);
        }
    }
    fn warn(&self, message: String) {
        self.warnings.lock().unwrap_or_else(PoisonError::into_inner).push(message);
    }
    fn redactor(&self) -> Option<Arc<Redactor>> {
        self.redactor.clone()
    }
    fn ask_user(
        &self,
        _question: String,
        _options: Vec<String>,
    ) -> Result<AskUserAnswer, ToolError> {
        Ok(self.answer.clone())
    }
    fn request_approval(&self, request: EscalationRequest) -> ApprovalDecision {
        let keys = request.permission_keys;
        let granted = {
            let grants = self.grants.lock().unwrap_or_else(PoisonError::into_inner);
            !keys.is_empty() && keys.iter().all(|key| grants.contains(key))
        };
        let (decision, decided_by) = if !request.may_ask {
            (ApprovalDecision::Deny, DecidedBy::Mode)
        } else if granted {
            (ApprovalDecision::AllowForSession, DecidedBy::SessionGrant)
        } else {
            self.approvals.lock().unwrap_or_else(PoisonError::into_inner).push(request.summary);
            if self.approval == ApprovalDecision::AllowForSession {
                self.grants.lock().unwrap_or_else(PoisonError::into_inner).extend(keys.clone());
            }
            (self.approval.clone(), DecidedBy::User)
        };
        let mut decisions = self.decisions.lock().unwrap_or_else(PoisonError::into_inner);
        decisions.push((keys, decision.clone(), decided_by));
        decision
    }
}
