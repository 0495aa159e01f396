//! What a session gives hooks that are not commands ([`codecoder_hooks::HookServices`]): one
//! call of the session's model for `prompt` hooks, a read-only subagent for `agent` hooks, and
//! its MCP servers for `mcp_tool` hooks.
//!
//! A `prompt` hook's call has no tools and no history: the system text asks for a JSON verdict
//! `{"ok": true|false, "reason": "…"}` and the hook's prompt (its `$ARGUMENTS` already
//! replaced by the event's input) is the one user message. The hook's `model` field is not
//! mapped to a provider's model: the call uses the session's model.
//!
//! An `agent` hook runs a subagent of its own: the session's model, prompt and approval chain,
//! the session's tools that only read files (no subagents, skills, plan, running commands or
//! MCP tools), no hooks (a hook's agent fires none), a log kept in memory, at most
//! [`AGENT_HOOK_STEPS`] steps. Its task is the hook's prompt and its final message is the
//! verdict; a call the chain would ask about is denied (nobody answers a hook's subagent).
//!
//! Invariant: every wait is bounded by the hook's timeout; nothing here blocks a turn longer.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use codecoder_hooks::{HookPrompt, HookServices};
use codecoder_kernel::{
    AgentConfig, AgentDeps, ApprovalPolicy, ApprovalQuery, ModelClient, ModelRequest, NoHooks,
    PolicyAnswer, PromptBuilder, ResponseEvent, ToolRegistry, spawn_agent,
};
use codecoder_mcp::{McpManager, NoHost};
use codecoder_protocol::{
    AgentCommand, AgentEventKind, Message, MessageItem, Role, SessionId, ToolKind, TurnOutcome,
    UserInput, Verdict,
};
use codecoder_session::{SessionWriter, WriterConfig};
use crossbeam_channel::select;
use serde_json::Value;

/// The system text of a `prompt` hook's model call.
const VERDICT_INSTRUCTIONS: &str = "You are a hook in a coding agent: you check one event of \
the agent's session against the condition in the user's message. Answer with a single JSON \
object and nothing else: {\"ok\": true} when the condition holds or does not apply, \
{\"ok\": false, \"reason\": \"why, in one sentence\"} when it does not hold.";

/// What an `agent` hook's subagent adds to [`VERDICT_INSTRUCTIONS`].
const AGENT_VERDICT_INSTRUCTIONS: &str = "You may read and search the project's files with your \
tools before you answer; you cannot change anything. Your final message is the JSON object.";

/// The steps an `agent` hook's subagent may take (Claude Code's limit of turns).
pub(crate) const AGENT_HOOK_STEPS: u32 = 50;

/// The session's model and MCP servers, for its hooks.
pub(crate) struct SessionHookServices {
    pub(crate) client: Arc<dyn ModelClient>,
    pub(crate) model: String,
    pub(crate) session_id: SessionId,
    pub(crate) mcp: Option<Arc<McpManager>>,
    /// What `agent` hooks' subagents run with; `None`: agent hooks fail, not blocking.
    pub(crate) agent: Option<AgentHookKit>,
}

/// Tools of the session's kind "read-only" that act on the session itself (start a subagent,
/// load a skill, write to or end its running commands, change its plan): not a hook's.
const SESSION_TOOLS: [&str; 6] =
    ["agent", "skill", "write_stdin", "job_output", "job_kill", "update_plan"];

/// The parts of a session an `agent` hook's subagent runs with.
pub(crate) struct AgentHookKit {
    /// The session's agent configuration (its model, cwd, limits).
    pub(crate) config: AgentConfig,
    pub(crate) prompt: Arc<dyn PromptBuilder>,
    /// The session's read-only tools.
    pub(crate) tools: Arc<ToolRegistry>,
    /// The session's approval chain.
    pub(crate) approval: Arc<dyn ApprovalPolicy>,
}

impl AgentHookKit {
    /// The kit over a session's parts: of `registry`, the tools that only read files (not the
    /// [`SESSION_TOOLS`]).
    pub(crate) fn new(
        config: &AgentConfig,
        prompt: Arc<dyn PromptBuilder>,
        registry: &ToolRegistry,
        approval: Arc<dyn ApprovalPolicy>,
    ) -> Self {
        let readers: Vec<String> = registry
            .tools()
            .iter()
            .filter(|tool| tool.kind() == ToolKind::ReadOnly)
            .map(|tool| tool.name().to_owned())
            .filter(|name| !SESSION_TOOLS.contains(&name.as_str()))
            .collect();
        let mut config = config.clone();
        config.agent_instructions =
            Some(format!("{VERDICT_INSTRUCTIONS}\n\n{AGENT_VERDICT_INSTRUCTIONS}"));
        config.max_steps = AGENT_HOOK_STEPS;
        config.subagents.types = Vec::new();
        Self { config, prompt, tools: Arc::new(registry.only(&readers)), approval }
    }
}

/// An `agent` hook's approvals: the chain's allow and deny, and deny for what it would ask.
struct NoAsk(Arc<dyn ApprovalPolicy>);

impl ApprovalPolicy for NoAsk {
    fn decide(&self, query: &ApprovalQuery<'_>) -> PolicyAnswer {
        let answer = self.0.decide(query);
        if answer.decision == Verdict::Ask {
            return PolicyAnswer::deny(
                "an agent hook's subagent runs what is allowed without asking",
            );
        }
        answer
    }
}

impl HookServices for SessionHookServices {
    fn prompt(&self, request: &HookPrompt) -> Result<String, String> {
        let message =
            Message::new(Role::User, vec![MessageItem::Text { text: request.prompt.clone() }]);
        let model_request = ModelRequest {
            session_id: self.session_id,
            model: self.model.clone(),
            instructions: VERDICT_INSTRUCTIONS.to_owned(),
            sections: Vec::new(),
            history: vec![Arc::new(message)],
            tools: Vec::new(),
            max_output_tokens: Some(1024),
            output_schema: None,
            reasoning: codecoder_protocol::ReasoningSettings::default(),
        };
        let stream = self
            .client
            .stream(model_request)
            .map_err(|err| format!("the session's model could not be asked: {err}"))?;
        let deadline = crossbeam_channel::after(request.timeout);
        let mut text = String::new();
        loop {
            select! {
                recv(stream.events()) -> event => match event {
                    Ok(ResponseEvent::TextDelta(delta)) => text.push_str(&delta),
                    Ok(ResponseEvent::Completed { .. }) => return Ok(text),
                    Ok(ResponseEvent::Error(err)) => {
                        return Err(format!("the session's model failed: {err}"));
                    }
                    Ok(_) => {}
                    Err(_) => return Err("the session's model stream ended early".to_owned()),
                },
                recv(deadline) -> _ => {
                    return Err(format!(
                        "the model did not answer within {}s",
                        request.timeout.as_secs_f64()
                    ));
                }
            }
        }
    }

    fn agent(&self, request: &HookPrompt) -> Result<String, String> {
        let Some(kit) = &self.agent else {
            return Err("agent hooks are not offered in this session".to_owned());
        };
        let deps = AgentDeps {
            model: Arc::clone(&self.client),
            prompt: Arc::clone(&kit.prompt),
            tools: Arc::clone(&kit.tools),
            approval: Arc::new(NoAsk(Arc::clone(&kit.approval))),
            hooks: Arc::new(NoHooks),
            sessions: Arc::new(|new| SessionWriter::in_memory(new, WriterConfig::standard())),
            interceptors: Vec::new(),
            compactor: None,
            checkpoints: None,
        };
        let handle = spawn_agent(kit.config.clone(), deps)
            .map_err(|err| format!("the agent hook's subagent did not start: {err}"))?;
        if handle.cmd.send(AgentCommand::Submit(UserInput::text(request.prompt.clone()))).is_err() {
            let _ = handle.shutdown();
            return Err("the agent hook's subagent stopped before its task".to_owned());
        }
        let deadline = crossbeam_channel::after(request.timeout);
        let mut last = String::new();
        let answer = loop {
            select! {
                recv(handle.events) -> event => match event.map(|event| event.kind) {
                    Ok(AgentEventKind::StepFinished { text, .. }) if !text.trim().is_empty() => {
                        last = text;
                    }
                    Ok(AgentEventKind::TurnDone { outcome: TurnOutcome::Completed, .. }) => {
                        break Ok(last);
                    }
                    Ok(AgentEventKind::TurnDone { outcome, .. }) => {
                        break Err(format!("the agent hook's subagent did not finish: {outcome:?}"));
                    }
                    Ok(_) => {}
                    Err(_) => break Err("the agent hook's subagent stopped early".to_owned()),
                },
                recv(deadline) -> _ => {
                    let _ = handle.cmd.send(AgentCommand::Cancel);
                    break Err(format!(
                        "the agent hook's subagent did not answer within {}s",
                        request.timeout.as_secs_f64()
                    ));
                }
            }
        };
        let _ = handle.shutdown();
        answer
    }

    fn mcp_tool(
        &self,
        server: &str,
        tool: &str,
        input: &Value,
        timeout: Duration,
    ) -> Result<String, String> {
        let Some(mcp) = &self.mcp else {
            return Err(format!("no MCP server `{server}` is configured for this session"));
        };
        let arguments = match input {
            Value::Object(arguments) => arguments.clone(),
            _ => serde_json::Map::new(),
        };
        // Servers start behind the session's first request: a hook at the first prompt waits
        // for them, within its timeout.
        if !mcp.all_started() {
            let _ = mcp.wait_started_or(&crossbeam_channel::after(timeout));
        }
        // The hook's own timeout bounds the call; no turn cancels it.
        let (_never_tx, never) = crossbeam_channel::bounded::<Infallible>(0);
        let result = mcp
            .call_tool(server, tool, arguments, &never, timeout, &NoHost)
            .map_err(|err| format!("{server}/{tool}: {err}"))?;
        let text = result
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        if result.get("isError") == Some(&Value::Bool(true)) {
            return Err(format!("{server}/{tool} reported an error: {text}"));
        }
        Ok(text)
    }
}
