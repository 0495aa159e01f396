//! A tool that exists only for tests (the `testing` feature): no front-end knows its name, so a
//! front-end that presents its calls correctly reads them from the call's view alone.
//!
//! `relabel_files` moves files under new names (`{"moves": [{"from": "a", "to": "b"}]}`); its
//! view is an edit whose changes are moves, titled by the tool. It never touches the disk.

pub use codecoder_kernel::Tool;
use codecoder_kernel::{ToolContext, ToolKind, ToolOutput};
use codecoder_protocol::{CallKind, CallView, ChangeKind, FileChange, ToolError};
use serde_json::Value;

/// The test-only tool's name.
pub const TEST_ONLY_TOOL: &str = "relabel_files";

/// A tool no front-end names: moves files (in its view only).
#[derive(Debug, Default)]
pub struct TestOnlyTool;

/// The `(from, to)` pairs of a call's arguments; wrong-shaped entries are skipped.
fn moves(args: &Value) -> Vec<(String, String)> {
    let Some(moves) = args.get("moves").and_then(Value::as_array) else { return Vec::new() };
    moves
        .iter()
        .filter_map(|entry| {
            let from = entry.get("from")?.as_str()?;
            let to = entry.get("to")?.as_str()?;
            Some((from.to_owned(), to.to_owned()))
        })
        .collect()
}

impl Tool for TestOnlyTool {
    fn name(&self) -> &str {
        TEST_ONLY_TOOL
    }

    fn description(&self) -> &str {
        "Renames files (a test-only tool)."
    }

    fn schema(&self) -> Value {
        serde_json::json!({
            "type": "object",
            "properties": {"moves": {"type": "array", "items": {"type": "object"}}},
            "required": ["moves"],
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn view(&self, args: &Value) -> CallView {
        let moves = moves(args);
        let changes: Vec<FileChange> = moves
            .iter()
            .map(|(from, to)| FileChange {
                path: from.clone(),
                kind: ChangeKind::Update { move_to: Some(to.clone()) },
                diff: String::new(),
                header: String::new(),
                edits: Vec::new(),
            })
            .collect();
        let mut paths = Vec::new();
        for (from, to) in &moves {
            paths.push(from.clone());
            paths.push(to.clone());
        }
        CallView {
            kind: CallKind::Edit,
            title: format!("Relabel {} file(s)", moves.len()),
            detail: moves.first().map(|(from, to)| format!("{from} → {to}")).unwrap_or_default(),
            paths,
            changes,
            ..CallView::default()
        }
    }

    fn execute(&self, _ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("relabelled {} file(s)", moves(&args).len())))
    }
}
