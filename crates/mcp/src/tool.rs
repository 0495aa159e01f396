//! MCP tools as kernel tools.
//!
//! Invariants: a tool's kind follows its annotations: `readOnlyHint` makes it read-only (runs
//! in parallel, needs no approval by default); `destructiveHint: true` makes it `Other` (asks
//! under untrusted and on-request, refused under never); anything else is a network tool (asks
//! under untrusted and on-request, runs under never). The session's first request waits for the
//! servers to settle (`McpToolSource::wait_ready`, cut short by the turn's cancel); tools that
//! arrive later join at a step boundary.
//! The name is `mcp__<server>__<tool>` (see `names`), so permission rules and hook matchers
//! select MCP tools by it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use codecoder_kernel::{
    CancelToken, LateTools, Tool, ToolContext, ToolKind, ToolOutput, ToolSource,
};
use codecoder_protocol::{AskUserAnswer, CallKind, CallView, OutputStream, ToolError};
use serde_json::Value;

use crate::error::Error;
use crate::interact::CallHost;
use crate::manager::{McpManager, McpToolInfo};
use crate::names::qualified_names;
use crate::result::to_tool_output;

/// One tool of one server.
pub struct McpTool {
    manager: Arc<McpManager>,
    info: McpToolInfo,
    qualified: String,
    description: String,
}

/// The kernel tools of every tool the manager's ready servers offer now, named without
/// collisions.
pub fn tools(manager: &Arc<McpManager>) -> Vec<Arc<dyn Tool>> {
    let infos = manager.list_tools();
    let pairs: Vec<(&str, &str)> =
        infos.iter().map(|t| (t.server.as_str(), t.name.as_str())).collect();
    let names = qualified_names(&pairs);
    infos
        .iter()
        .zip(names)
        .map(|(info, qualified)| McpTool::shared(manager, info, qualified))
        .collect()
}

/// The servers' tools as they arrive, for a `LateTools`: a server's tools join once it is
/// ready, a server's new tools once it announced a changed list; the servers' start failures
/// become notices.
///
/// Invariant: a tool is offered once, under the name it first got (names are given in arrival
/// order, so a newcomer never renames an earlier tool); a tool a server dropped stays listed and
/// its calls are refused.
pub struct McpToolSource {
    manager: Arc<McpManager>,
    // Written only by `poll`, on an agent's thread; a lock because the kernel may poll from
    // the threads of subagents sharing the registry.
    offered: Mutex<Vec<(String, String)>>,
    /// Whether the first poll (before the session's first request) has waited for the servers.
    settled: AtomicBool,
}

impl McpToolSource {
    /// A source over `manager`'s servers.
    pub fn new(manager: Arc<McpManager>) -> Self {
        Self { manager, offered: Mutex::new(Vec::new()), settled: AtomicBool::new(false) }
    }
}

impl ToolSource for McpToolSource {
    /// The first poll, before the session's first request, waits until every server is ready,
    /// failed or past its startup timeout, so that the first request offers the servers' tools
    /// (as codex and Claude Code do) and a server that did not start is reported before it.
    /// The servers start in parallel with the rest of the session, so in the interactive UI,
    /// where a person types the first prompt, they are usually ready by then.
    fn is_ready(&self) -> bool {
        self.settled.load(Ordering::Acquire) || self.manager.all_started()
    }

    /// The wait of the first poll, cut short by `cancel` (a cancelled turn); the next turn's
    /// first step waits again for what is still starting.
    fn wait_ready(&self, cancel: &CancelToken) {
        if self.manager.wait_started_or(cancel.signal()).is_ok() {
            self.settled.store(true, Ordering::Release);
        }
    }

    fn poll(&self, late: &LateTools) {
        if !self.settled.swap(true, Ordering::AcqRel) {
            self.manager.wait_started();
        }
        for notice in self.manager.take_notices() {
            late.notify(notice);
        }
        let mut offered = self.offered.lock().unwrap_or_else(PoisonError::into_inner);
        let known = offered.len();
        let arrived: Vec<McpToolInfo> = self
            .manager
            .tools_in_arrival_order()
            .into_iter()
            .filter(|t| !offered.iter().any(|(s, n)| *s == t.server && *n == t.name))
            .collect();
        if arrived.is_empty() {
            return;
        }
        offered.extend(arrived.iter().map(|t| (t.server.clone(), t.name.clone())));
        let pairs: Vec<(&str, &str)> =
            offered.iter().map(|(s, n)| (s.as_str(), n.as_str())).collect();
        let names = qualified_names(&pairs);
        for (info, qualified) in arrived.iter().zip(names.into_iter().skip(known)) {
            late.add(McpTool::shared(&self.manager, info, qualified));
        }
    }
}

/// A call's host over the kernel's tool context: progress as output of the call, questions
/// through the ask-user flow.
struct ContextHost<'a>(&'a ToolContext);

impl CallHost for ContextHost<'_> {
    fn progress(&self, line: &str) {
        self.0.output(OutputStream::Stdout, format!("{line}\n"));
    }

    fn ask(&self, question: &str, options: Vec<String>) -> Option<String> {
        match self.0.ask_user(question, options) {
            Ok(AskUserAnswer::Answer { text }) => Some(text),
            Ok(AskUserAnswer::Declined | AskUserAnswer::Unavailable { .. }) | Err(_) => None,
        }
    }
}

impl McpTool {
    fn shared(manager: &Arc<McpManager>, info: &McpToolInfo, qualified: String) -> Arc<dyn Tool> {
        let description = if info.description.is_empty() {
            format!("Tool `{}` of MCP server `{}`.", info.name, info.server)
        } else {
            info.description.clone()
        };
        Arc::new(Self { manager: Arc::clone(manager), info: info.clone(), qualified, description })
    }

    /// The kind its annotations give it: read-only (`readOnlyHint`); `Other` when its server
    /// marks it destructive outright (`destructiveHint: true`), which the approval chain never
    /// runs without a person; else `Network` (it runs outside the sandbox, as the server's own
    /// code, and may reach anything).
    pub fn kind_of(info: &McpToolInfo) -> ToolKind {
        if info.read_only {
            ToolKind::ReadOnly
        } else if info.destructive == Some(true) {
            ToolKind::Other
        } else {
            ToolKind::Network
        }
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.qualified
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn schema(&self) -> Value {
        let mut schema = self.info.input_schema.clone();
        // Providers want an object schema with properties.
        if let Some(object) = schema.as_object_mut() {
            object.entry("type").or_insert_with(|| Value::String("object".to_owned()));
            object.entry("properties").or_insert_with(|| Value::Object(Default::default()));
        }
        schema
    }

    fn kind(&self) -> ToolKind {
        Self::kind_of(&self.info)
    }

    fn mcp_origin(&self) -> Option<(&str, &str)> {
        Some((&self.info.server, &self.info.name))
    }

    fn summary(&self, args: &Value) -> String {
        format!("{} ({} on MCP server {}) {args}", self.qualified, self.info.name, self.info.server)
    }

    /// An MCP call of this server and tool; read-only and destructive as its annotations say.
    fn view(&self, args: &Value) -> CallView {
        CallView {
            kind: CallKind::Mcp { server: self.info.server.clone(), tool: self.info.name.clone() },
            read_only: self.info.read_only,
            destructive: self.info.destructive == Some(true),
            ..CallView::generic(&self.qualified, args)
        }
    }

    fn execute(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let arguments = match args {
            Value::Object(map) => map,
            Value::Null => Default::default(),
            other => {
                return Err(ToolError::InvalidArguments {
                    message: format!("expected an object, got {other}"),
                });
            }
        };
        if !self.manager.offers(&self.info.server, &self.info.name) {
            return Err(ToolError::Failed {
                message: format!(
                    "MCP server `{}` no longer offers the tool `{}` (it changed its tool list); do without it",
                    self.info.server, self.info.name
                ),
            });
        }
        let outcome = self.manager.call_tool(
            &self.info.server,
            &self.info.name,
            arguments,
            ctx.cancel().signal(),
            self.info.timeout,
            &ContextHost(ctx),
        );
        match outcome {
            Ok(result) => {
                let output = to_tool_output(&result);
                ctx.report_mcp_result(result);
                Ok(output)
            }
            Err(Error::Cancelled) => Err(ToolError::Cancelled),
            Err(Error::Timeout { .. }) => {
                let limit_ms = u64::try_from(self.info.timeout.as_millis()).unwrap_or(u64::MAX);
                Err(ToolError::TimedOut { limit_ms })
            }
            Err(err) => Err(ToolError::Failed { message: err.to_string() }),
        }
    }
}
