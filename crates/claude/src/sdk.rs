//! What an Agent SDK brings to the session through the control protocol: hook callbacks
//! (`hook_callback`), asked where the session's hooks run and honoured as a command hook's
//! JSON output is.

use std::sync::Arc;
use std::time::Duration;

use codecoder_app::CallbackHook;
use serde_json::{Map, Value, json};

use crate::wire::Peer;

/// One hook callback of the SDK.
struct SdkHook {
    peer: Arc<Peer>,
    callback_id: String,
    /// `onFailure: "block"`: a callback that fails blocks what it guards.
    block_on_failure: bool,
}

impl codecoder_hooks::HookCallback for SdkHook {
    fn call(&self, input: &Value, timeout: Duration) -> Result<Value, String> {
        let request = json!({
            "subtype": "hook_callback",
            "callback_id": self.callback_id,
            "input": input,
            "tool_use_id": input.get("tool_use_id").cloned().unwrap_or(Value::Null),
        });
        let answer = match self.peer.request(request, Some(timeout)) {
            Ok(answer) => answer,
            Err(err) if self.block_on_failure => {
                return Ok(json!({
                    "decision": "block",
                    "reason": format!("the SDK's hook {} failed, and it blocks on failure: {err}", self.callback_id),
                }));
            }
            Err(err) => return Err(err),
        };
        match answer {
            // An asynchronous hook says nothing about this call.
            Value::Object(answer) if answer.get("async") == Some(&Value::Bool(true)) => {
                Ok(json!({}))
            }
            Value::Null => Ok(json!({})),
            answer => Ok(answer),
        }
    }
}

/// The hooks of `initialize` (`{"PreToolUse": [{"matcher", "hookCallbackIds", "timeout"}]}`).
///
/// # Errors
/// An event codecoder does not know, or a matcher that does not compile: the `initialize`
/// response is then an error naming it.
pub(crate) fn hooks(
    table: &Map<String, Value>,
    peer: &Arc<Peer>,
) -> Result<Vec<CallbackHook>, String> {
    let mut hooks = Vec::new();
    for (event_name, groups) in table {
        let event = codecoder_hooks::Event::from_name(event_name)
            .ok_or_else(|| format!("initialize: unknown hook event `{event_name}`"))?;
        for group in groups.as_array().map(Vec::as_slice).unwrap_or_default() {
            let matcher = group.get("matcher").and_then(Value::as_str).map(str::to_owned);
            let timeout = group
                .get("timeout")
                .and_then(Value::as_f64)
                .filter(|t| t.is_finite() && *t > 0.0)
                .map(Duration::from_secs_f64);
            let block_on_failure = group.get("onFailure").and_then(Value::as_str) == Some("block");
            let ids = group
                .get("hookCallbackIds")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            for id in ids.iter().filter_map(Value::as_str) {
                hooks.push(CallbackHook {
                    event,
                    matcher: matcher.clone(),
                    label: format!("SDK callback {id}"),
                    timeout,
                    callback: Arc::new(SdkHook {
                        peer: Arc::clone(peer),
                        callback_id: id.to_owned(),
                        block_on_failure,
                    }),
                });
            }
        }
    }
    Ok(hooks)
}

/// An in-process MCP server of the SDK: its JSON-RPC goes over `mcp_message` control requests.
struct SdkServer {
    peer: Arc<Peer>,
    name: String,
}

/// How long one message to an in-process server may wait for its answer (a tool call's own
/// timeout is the MCP client's).
const SDK_MCP_TIMEOUT: Duration = Duration::from_secs(60);

impl codecoder_app::mcp_client::McpBridge for SdkServer {
    fn send(&self, message: Value) -> Result<Option<Value>, String> {
        let is_request = message.get("id").is_some_and(|id| !id.is_null());
        let request =
            json!({"subtype": "mcp_message", "server_name": self.name, "message": message});
        let answer = self.peer.request(request, Some(SDK_MCP_TIMEOUT));
        if !is_request {
            // A notification: the SDK's acknowledgement carries nothing for the client.
            return answer.map(|_| None);
        }
        let answer = answer.map_err(|err| format!("SDK MCP server `{}`: {err}", self.name))?;
        match answer.get("mcp_response") {
            Some(response) if response.is_object() => Ok(Some(response.clone())),
            _ => Err(format!(
                "SDK MCP server `{}` answered without an mcp_response: {answer}",
                self.name
            )),
        }
    }
}

/// The session's server for the SDK's in-process server `name`.
pub(crate) fn server(name: &str, peer: &Arc<Peer>) -> codecoder_app::mcp_client::ServerConfig {
    let bridge = SdkServer { peer: Arc::clone(peer), name: name.to_owned() };
    codecoder_app::mcp_client::ServerConfig::new(
        name,
        codecoder_app::mcp_client::Transport::InProcess(codecoder_app::mcp_client::Bridge(
            Arc::new(bridge),
        )),
    )
}

/// What the SDK's permission callback shares with the run: the calls it denied (for the
/// turn's `permission_denials`) and the agent to interrupt when it asks to.
#[derive(Clone, Default)]
pub(crate) struct Permissions {
    pub(crate) denials: Arc<std::sync::Mutex<Vec<Value>>>,
    pub(crate) agent:
        Arc<std::sync::Mutex<Option<crossbeam_channel::Sender<codecoder_protocol::AgentCommand>>>>,
    /// The mode is `dontAsk`: the callback refuses without asking.
    pub(crate) dont_ask: Arc<std::sync::atomic::AtomicBool>,
    /// The session's working directory (its project's settings files are found from it).
    pub(crate) cwd: Arc<std::sync::Mutex<Option<std::path::PathBuf>>>,
    /// The session's controls, where granted rules go.
    pub(crate) controls: Arc<std::sync::Mutex<Option<codecoder_app::SessionControls>>>,
    /// Asks the run to announce a call (`tool_use`) before the SDK is asked about it; the
    /// run acknowledges once the frame is out.
    pub(crate) announce: Option<crossbeam_channel::Sender<Announce>>,
}

/// A call to announce: its id, Claude's name and input, and where to acknowledge.
pub(crate) struct Announce {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) input: Value,
    pub(crate) done: crossbeam_channel::Sender<()>,
}

/// How long the permission callback waits for its call to be announced.
const ANNOUNCE_WAIT: Duration = Duration::from_secs(5);

/// The allow rules of `updatedPermissions` (`addRules` with behavior `allow`), in Claude
/// Code's rule syntax, each with its destination (`session`, `localSettings`, …).
fn granted_rules(updates: &Value) -> Vec<(String, String)> {
    let mut rules = Vec::new();
    for update in updates.as_array().map(Vec::as_slice).unwrap_or_default() {
        if update.get("type").and_then(Value::as_str) != Some("addRules")
            || update.get("behavior").and_then(Value::as_str) != Some("allow")
        {
            continue;
        }
        let destination =
            update.get("destination").and_then(Value::as_str).unwrap_or("session").to_owned();
        let listed = update.get("rules").and_then(Value::as_array);
        for rule in listed.map(Vec::as_slice).unwrap_or_default() {
            let Some(tool) = rule.get("toolName").and_then(Value::as_str) else { continue };
            match rule.get("ruleContent").and_then(Value::as_str) {
                Some(content) if !content.is_empty() => {
                    rules.push((destination.clone(), format!("{tool}({content})")));
                }
                _ => rules.push((destination.clone(), tool.to_owned())),
            }
        }
    }
    rules
}

/// `can_use_tool`: the SDK's permission callback, asked where a person would be (a
/// PermissionRequest hook of the session), its answer given back as such a hook's output so
/// that `updatedInput`, `updatedPermissions`, the deny message and `interrupt` mean what they
/// mean there.
struct CanUseTool {
    peer: Arc<Peer>,
    shared: Permissions,
}

impl codecoder_hooks::HookCallback for CanUseTool {
    fn call(&self, input: &Value, _timeout: Duration) -> Result<Value, String> {
        if self.shared.dont_ask.load(std::sync::atomic::Ordering::SeqCst) {
            let decision = json!({
                "behavior": "deny",
                "message": "permission mode dontAsk: only what a rule allows runs",
            });
            return Ok(json!({"hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": decision,
            }}));
        }
        let tool_name = input.get("tool_name").cloned().unwrap_or(Value::Null);
        let tool_input = input.get("tool_input").cloned().unwrap_or_else(|| json!({}));
        let tool_use_id = input.get("tool_use_id").cloned().unwrap_or(Value::Null);
        let request = json!({
            "subtype": "can_use_tool",
            "tool_name": tool_name,
            "input": tool_input,
            "tool_use_id": tool_use_id,
            "permission_suggestions": [{
                "type": "addRules",
                "rules": [{"toolName": tool_name}],
                "behavior": "allow",
                "destination": "session",
            }],
        });
        // The SDK sees the call before it is asked about it, as Claude Code shows it.
        if let (Some(announce), Some(id), Some(name)) =
            (&self.shared.announce, tool_use_id.as_str(), tool_name.as_str())
        {
            let (done, announced) = crossbeam_channel::bounded(1);
            let call = Announce {
                id: id.to_owned(),
                name: name.to_owned(),
                input: tool_input.clone(),
                done,
            };
            if announce.send(call).is_ok() {
                let _ = announced.recv_timeout(ANNOUNCE_WAIT);
            }
        }
        // A person may be deciding: no time limit while the SDK's input is open.
        let answer = self.peer.request(request, None);
        let denial =
            json!({"tool_name": tool_name, "tool_use_id": tool_use_id, "tool_input": tool_input});
        let decision = match answer {
            Ok(answer) => match answer.get("behavior").and_then(Value::as_str) {
                Some("allow") => {
                    let mut decision = json!({"behavior": "allow"});
                    if let Some(updated) = answer.get("updatedInput").filter(|u| u.is_object()) {
                        decision["updatedInput"] = updated.clone();
                    }
                    if let Some(updates) = answer.get("updatedPermissions") {
                        self.grant(&granted_rules(updates))?;
                    }
                    decision
                }
                Some("deny") => {
                    let message = answer
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("denied by the SDK's permission callback");
                    if answer.get("interrupt") == Some(&Value::Bool(true))
                        && let Some(agent) = self
                            .shared
                            .agent
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .as_ref()
                    {
                        let _ = agent.send(codecoder_protocol::AgentCommand::Cancel);
                    }
                    json!({"behavior": "deny", "message": message})
                }
                _ => {
                    json!({"behavior": "deny", "message": format!("the SDK's permission answer has no behavior allow or deny: {answer}")})
                }
            },
            Err(error) => json!({"behavior": "deny", "message": error}),
        };
        if decision["behavior"] == "deny" {
            self.shared
                .denials
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(denial);
        }
        Ok(
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}),
        )
    }
}

impl CanUseTool {
    /// Allows `rules` for the rest of the session, and writes those given a settings file as
    /// their destination there, as Claude Code does ("always allow").
    fn grant(&self, rules: &[(String, String)]) -> Result<(), String> {
        if rules.is_empty() {
            return Ok(());
        }
        let all: Vec<String> = rules.iter().map(|(_, rule)| rule.clone()).collect();
        let controls =
            self.shared.controls.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(controls) = controls.as_ref() {
            controls.allow_rules(&all).map_err(|err| format!("updatedPermissions: {err}"))?;
        }
        let cwd = self.shared.cwd.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let Some(cwd) = cwd else { return Ok(()) };
        let mut destinations: Vec<&str> = rules.iter().map(|(d, _)| d.as_str()).collect();
        destinations.dedup();
        for destination in destinations {
            let kept: Vec<String> =
                rules.iter().filter(|(d, _)| d == destination).map(|(_, r)| r.clone()).collect();
            codecoder_app::persist_allow_rules(destination, &cwd, &kept)
                .map_err(|err| format!("updatedPermissions ({destination}): {err}"))?;
        }
        Ok(())
    }
}

/// The PermissionRequest hook that asks the SDK (`--permission-prompt-tool stdio`).
pub(crate) fn can_use_tool(peer: &Arc<Peer>, shared: &Permissions) -> CallbackHook {
    CallbackHook {
        event: codecoder_hooks::Event::PermissionRequest,
        matcher: None,
        label: "the SDK's permission callback (can_use_tool)".to_owned(),
        // The hook's own limit: the callback waits for the SDK while its input is open.
        timeout: Some(Duration::from_secs(24 * 60 * 60)),
        callback: Arc::new(CanUseTool { peer: Arc::clone(peer), shared: shared.clone() }),
    }
}
