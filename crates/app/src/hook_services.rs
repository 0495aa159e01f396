//! What a session gives hooks that are not commands ([`codecoder_hooks::HookServices`]): one
//! call of the session's model for `prompt` hooks, and its MCP servers for `mcp_tool` hooks.
//!
//! A `prompt` hook's call has no tools and no history: the system text asks for a JSON verdict
//! `{"ok": true|false, "reason": "…"}` and the hook's prompt (its `$ARGUMENTS` already
//! replaced by the event's input) is the one user message. The hook's `model` field is not
//! mapped to a provider's model: the call uses the session's model.
//!
//! `agent` hooks (a subagent with read-only tools) are not offered: they fail without
//! blocking, and the message says so.
//!
//! Invariant: every wait is bounded by the hook's timeout; nothing here blocks a turn longer.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use codecoder_hooks::{HookPrompt, HookServices};
use codecoder_kernel::{ModelClient, ModelRequest, ResponseEvent};
use codecoder_mcp::{McpManager, NoHost};
use codecoder_protocol::{Message, MessageItem, Role, SessionId};
use crossbeam_channel::select;
use serde_json::Value;

/// The system text of a `prompt` hook's model call.
const VERDICT_INSTRUCTIONS: &str = "You are a hook in a coding agent: you check one event of \
the agent's session against the condition in the user's message. Answer with a single JSON \
object and nothing else: {\"ok\": true} when the condition holds or does not apply, \
{\"ok\": false, \"reason\": \"why, in one sentence\"} when it does not hold.";

/// The session's model and MCP servers, for its hooks.
pub(crate) struct SessionHookServices {
    pub(crate) client: Arc<dyn ModelClient>,
    pub(crate) model: String,
    pub(crate) session_id: SessionId,
    pub(crate) mcp: Option<Arc<McpManager>>,
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

    fn agent(&self, _request: &HookPrompt) -> Result<String, String> {
        Err("agent hooks (a subagent with read-only tools) are not offered by codecoder yet; \
             use a prompt hook"
            .to_owned())
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
