//! Subagents (seed L4.1): the `agent` tool runs a child AgentLoop on its own thread, with its own
//! history and session log (`meta.parent` names the parent session and the call).
//!
//! The parent's worker thread blocks on the child's result channel, selecting also on the
//! parent's cancel token and the timeout. Children share the parent's event stream: their
//! events (approval requests included) reach the client with `EventSource.subagent_path` set,
//! so nothing a child asks is dropped.
//!
//! Invariants: depth is bounded (`max_depth`), children running at once in one tree are bounded
//! (`max_parallel` per agent), a child's thread is always joined before
//! the call returns, and a child's panic or timeout is an error result for the parent.

use std::sync::Arc;

use codecoder_protocol::{
    AgentCommand, CallKind, CallView, EventSource, ParentLink, ToolError, TurnOutcome, UserInput,
    first_line,
};
use codecoder_session::NewSession;
use codecoder_stdx::spawn_named;
use crossbeam_channel::{after, select};
use serde_json::{Value, json};

use crate::agent::{AgentDeps, AgentEnv, AgentType, Slots};
use crate::exec::show_report;
use crate::hooks::HookScope;
use crate::tool::{Tool, ToolContext, ToolKind, ToolOutput, ToolRegistry};
use crate::turn::{AgentLoop, TurnSummary};

/// The `agent` tool: delegate a task to a subagent.
#[derive(Debug, Clone)]
pub struct AgentTool {
    description: String,
    type_names: Vec<String>,
}

impl AgentTool {
    /// The tool, offering `types` (from `SubagentConfig::types`) by name.
    pub fn new(types: &[AgentType]) -> Self {
        let mut description = "Delegate a self-contained task to a subagent that works with its own \
                               context and tools, and get its final answer back. Several calls in one \
                               response run in parallel."
            .to_owned();
        for agent_type in types {
            description.push_str(&format!("\n- `{}`: {}", agent_type.name, agent_type.description));
        }
        Self { description, type_names: types.iter().map(|t| t.name.clone()).collect() }
    }
}

/// Gives a subagent slot back on drop.
struct SlotGuard<'a>(&'a Slots);

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        let _ = self.0.give_back.try_recv();
    }
}

impl Tool for AgentTool {
    fn name(&self) -> &str {
        "agent"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn schema(&self) -> Value {
        let mut agent_type = json!({ "type": "string", "description": "The kind of subagent." });
        if !self.type_names.is_empty() {
            agent_type["enum"] = json!(self.type_names);
        }
        json!({
            "type": "object",
            "properties": {
                "task": { "type": "string", "description": "What the subagent must do, completely stated." },
                "agent_type": agent_type,
                "tools": { "type": "array", "items": { "type": "string" }, "description": "Only these tools." },
                "model": { "type": "string", "description": "Another model for the subagent." }
            },
            "required": ["task"],
            "additionalProperties": false
        })
    }

    // The call itself changes nothing: every tool the child runs goes through the child's own
    // approval chain, whose requests reach the person.
    fn kind(&self) -> ToolKind {
        ToolKind::ReadOnly
    }

    fn runs_in_parallel(&self) -> bool {
        true
    }

    fn summary(&self, args: &Value) -> String {
        format!("subagent: {}", args["task"].as_str().unwrap_or_default())
    }

    fn view(&self, args: &Value) -> CallView {
        CallView {
            kind: CallKind::Agent,
            title: "agent".to_owned(),
            detail: first_line(args["task"].as_str().unwrap_or_default(), 120),
            read_only: true,
            ..CallView::default()
        }
    }

    fn execute(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let env = &ctx.env;
        let limits = &env.config.subagents;
        let depth = env.depth + 1;
        if depth > limits.max_depth {
            return Err(ToolError::Failed {
                message: format!(
                    "subagents may nest at most {} deep and this agent is at depth {}: do the task yourself",
                    limits.max_depth, env.depth
                ),
            });
        }
        let task = args["task"].as_str().unwrap_or_default().to_owned();
        let agent_type = match args["agent_type"].as_str() {
            Some(name) => match limits.types.iter().find(|t| t.name == name) {
                Some(agent_type) => Some(agent_type.clone()),
                None => {
                    return Err(ToolError::InvalidArguments {
                        message: format!("no agent type named `{name}`"),
                    });
                }
            },
            None => None,
        };
        let requested_tools: Option<Vec<String>> = args["tools"]
            .as_array()
            .map(|names| names.iter().filter_map(Value::as_str).map(str::to_owned).collect());
        let model = args["model"]
            .as_str()
            .map(str::to_owned)
            .or_else(|| agent_type.as_ref().and_then(|t| t.model.clone()))
            .unwrap_or_else(|| env.config.model.clone());

        let mut tools: ToolRegistry = (*env.deps.tools).clone();
        if let Some(allowed) = agent_type.as_ref().and_then(|t| t.tools.as_ref()) {
            tools = tools.only(allowed);
        }
        if let Some(requested) = &requested_tools {
            tools = tools.only(requested);
        }

        // Wait for a slot, or for the cancel.
        select! {
            send(env.slots.take, ()) -> sent => {
                if sent.is_err() {
                    return Err(ToolError::Failed { message: "subagent slots are gone".to_owned() });
                }
            }
            recv(ctx.cancel.signal()) -> _ => return Err(ToolError::Cancelled),
        }
        let _slot = SlotGuard(&env.slots);

        let mut config = env.config.clone();
        config.model = model.clone();
        config.agent_instructions = agent_type.as_ref().map(|t| t.instructions.clone());
        if let Some(max) = agent_type.as_ref().and_then(|t| t.max_steps) {
            config.max_steps = max;
        }
        let deps = AgentDeps { tools: Arc::new(tools), ..env.deps.clone() };
        let writer = deps
            .sessions
            .create(NewSession {
                cwd: config.cwd.clone(),
                model,
                provider: config.provider.clone(),
                config_hash: config.config_hash.clone(),
                parent: Some(ParentLink {
                    session_id: env.source.session_id,
                    tool_call_id: ctx.call_id.clone(),
                }),
            })
            .map_err(|err| ToolError::Failed {
                message: format!("could not create the subagent's session: {err}"),
            })?;
        let mut subagent_path = env.source.subagent_path.clone();
        subagent_path.push(ctx.call_id.clone());
        let timeout = limits.timeout;
        let type_name = agent_type.as_ref().map_or("general-purpose", |t| t.name.as_str());
        let child_env = Arc::new(AgentEnv {
            config,
            deps,
            depth,
            source: EventSource { session_id: writer.session_id(), subagent_path },
            events: env.events.clone(),
            slots: Slots::new(limits.max_parallel),
            agent_type: Some(type_name.to_owned()),
        });
        // Low volume: one Submit, maybe a Cancel, one Shutdown.
        let (cmd_tx, cmd_rx) = crossbeam_channel::bounded(4);
        // The child runs one turn and reports it once.
        let (done_tx, done_rx) = crossbeam_channel::bounded::<TurnSummary>(1);
        let child = AgentLoop::new(child_env, writer, cmd_rx, Some(done_tx));
        let thread =
            spawn_named(format!("subagent-{depth}"), move || child.run()).map_err(|err| {
                ToolError::Failed { message: format!("could not start the subagent: {err}") }
            })?;
        let hooks = Arc::clone(&env.deps.hooks);
        let agent_id = ctx.call_id.to_string();
        let scope = HookScope {
            depth,
            agent_type: Some(type_name),
            agent_id: Some(&agent_id),
            cancel: &ctx.cancel,
        };
        let started = hooks.subagent_start(scope, &agent_id);
        let stop = started.stop.clone();
        show_report(ctx, "SubagentStart", started);
        if let Some(reason) = stop {
            // `continue: false`: the child never starts its task, and the parent's turn stops
            // after this call.
            let _ = cmd_tx.send(AgentCommand::Shutdown);
            drop(cmd_tx);
            let _ = thread.join();
            return Err(ToolError::Failed {
                message: format!("a SubagentStart hook stopped the turn: {reason}"),
            });
        }
        let _ = cmd_tx.send(AgentCommand::Submit(UserInput::text(task)));

        enum Ended {
            Answered(TurnSummary),
            Crashed,
            Cancelled,
            TimedOut,
        }
        let ended = select! {
            recv(done_rx) -> summary => summary.map_or(Ended::Crashed, Ended::Answered),
            recv(ctx.cancel.signal()) -> _ => {
                let _ = cmd_tx.send(AgentCommand::Cancel);
                let _ = done_rx.recv();
                Ended::Cancelled
            }
            recv(after(timeout)) -> _ => {
                let _ = cmd_tx.send(AgentCommand::Cancel);
                let _ = done_rx.recv();
                Ended::TimedOut
            }
        };
        let _ = cmd_tx.send(AgentCommand::Shutdown);
        drop(cmd_tx);
        let joined = thread.join();
        if let Err(panic) = joined {
            return Err(ToolError::Panicked { message: format!("the subagent crashed: {panic}") });
        }
        let last_message = match &ended {
            Ended::Answered(summary) => summary.final_text.as_str(),
            _ => "",
        };
        let stopped = hooks.subagent_stop(scope, &agent_id, last_message);
        show_report(ctx, "SubagentStop", stopped);
        match ended {
            Ended::Answered(summary) => match summary.outcome {
                TurnOutcome::Completed if summary.final_text.is_empty() => {
                    Ok(ToolOutput::text("(the subagent finished without a final answer)"))
                }
                TurnOutcome::Completed => Ok(ToolOutput::text(summary.final_text)),
                TurnOutcome::Failed { message } => {
                    Err(ToolError::Failed { message: format!("the subagent failed: {message}") })
                }
                TurnOutcome::Cancelled | TurnOutcome::Interrupted => Err(ToolError::Cancelled),
            },
            Ended::Crashed => Err(ToolError::Failed {
                message: "the subagent stopped without answering".to_owned(),
            }),
            Ended::Cancelled => Err(ToolError::Cancelled),
            Ended::TimedOut => Err(ToolError::TimedOut {
                limit_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            }),
        }
    }
}
