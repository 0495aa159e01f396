//! MCP tools as kernel tools.
//!
//! Invariants: a tool's kind follows its annotations: `readOnlyHint` makes it read-only (runs
//! in parallel, needs no approval by default); anything else is a network tool, the kind whose
//! default the policy also gives tools it does not know (asks under untrusted and on-request).
//! The name is `mcp__<server>__<tool>` (see `names`), so permission rules and hook matchers
//! select MCP tools by it.

use std::sync::Arc;

use codecoder_kernel::{Tool, ToolContext, ToolKind, ToolOutput};
use codecoder_protocol::ToolError;
use serde_json::Value;

use crate::error::Error;
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

/// The kernel tools of every tool the manager's servers offer, named without collisions.
pub fn tools(manager: &Arc<McpManager>) -> Vec<Arc<dyn Tool>> {
    let infos = manager.list_tools();
    let pairs: Vec<(&str, &str)> =
        infos.iter().map(|t| (t.server.as_str(), t.name.as_str())).collect();
    let names = qualified_names(&pairs);
    infos
        .iter()
        .zip(names)
        .map(|(info, qualified)| {
            let description = if info.description.is_empty() {
                format!("Tool `{}` of MCP server `{}`.", info.name, info.server)
            } else {
                info.description.clone()
            };
            Arc::new(McpTool {
                manager: Arc::clone(manager),
                info: info.clone(),
                qualified,
                description,
            }) as Arc<dyn Tool>
        })
        .collect()
}

impl McpTool {
    /// The kind its annotations give it.
    pub fn kind_of(info: &McpToolInfo) -> ToolKind {
        if info.read_only { ToolKind::ReadOnly } else { ToolKind::Network }
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

    fn summary(&self, args: &Value) -> String {
        format!("{} ({} on MCP server {}) {args}", self.qualified, self.info.name, self.info.server)
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
        let outcome = self.manager.call_tool(
            &self.info.server,
            &self.info.name,
            arguments,
            ctx.cancel().signal(),
            self.info.timeout,
        );
        match outcome {
            Ok(result) => Ok(to_tool_output(&result)),
            Err(Error::Cancelled) => Err(ToolError::Cancelled),
            Err(Error::Timeout { .. }) => {
                let limit_ms = u64::try_from(self.info.timeout.as_millis()).unwrap_or(u64::MAX);
                Err(ToolError::TimedOut { limit_ms })
            }
            Err(err) => Err(ToolError::Failed { message: err.to_string() }),
        }
    }
}
