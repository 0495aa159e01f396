//! The `lsp` tool: definition, references, hover, document and workspace symbols,
//! implementation and call hierarchy, asked of the language server of a file.
//!
//! Invariants: positions are 1-based lines and columns (in characters) both ways; a position
//! outside the file, an operation without what it needs, or a server that is missing, exited or
//! slow is an error result for the model, never a hang (every request has a deadline).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codecoder_kernel::{Tool, ToolContext, ToolKind, ToolOutput};
use codecoder_protocol::{CallKind, CallView, ToolError};
use serde_json::{Value, json};

use crate::client::Client;
use crate::{CodeIntel, language_id, shown_path, uri_to_path};

/// Locations listed per answer.
const MAX_LOCATIONS: usize = 50;

const OPERATIONS: [&str; 8] = [
    "definition",
    "references",
    "hover",
    "documentSymbol",
    "workspaceSymbol",
    "implementation",
    "incomingCalls",
    "outgoingCalls",
];

/// The `lsp` tool over a session's [`CodeIntel`].
pub struct LspTool {
    intel: Arc<CodeIntel>,
}

impl LspTool {
    /// The tool; register it only when [`CodeIntel::any_available`].
    pub fn new(intel: Arc<CodeIntel>) -> Self {
        Self { intel }
    }
}

fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::InvalidArguments { message: message.into() }
}

fn failed(message: impl Into<String>) -> ToolError {
    ToolError::Failed { message: message.into() }
}

impl Tool for LspTool {
    fn name(&self) -> &str {
        "lsp"
    }
    fn description(&self) -> &str {
        "Asks the project's language server (code intelligence, more precise than grep): \
         `definition`, `references`, `implementation`, `hover`, `incomingCalls` and \
         `outgoingCalls` (call hierarchy) at a position given by `path`, `line` and `column` \
         (1-based: the first line is 1 and the first character of a line is column 1), or at \
         the definition of `symbol` when no position is given; `documentSymbol` lists the \
         symbols of `path`; `workspaceSymbol` searches symbols by the name `symbol`. Answers are \
         `path:line:column` with the line's text."
    }
    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "operation": { "type": "string", "enum": OPERATIONS, "description": "What to ask." },
                "path": { "type": "string", "description": "The file, absolute or relative to the working directory." },
                "line": { "type": "integer", "minimum": 1, "description": "1-based line number." },
                "column": { "type": "integer", "minimum": 1, "description": "1-based column (characters from the line's start, the first being 1)." },
                "symbol": { "type": "string", "description": "A symbol's name: the query of workspaceSymbol, or where to ask when no position is given." }
            },
            "required": ["operation"],
            "additionalProperties": false
        })
    }
    fn kind(&self) -> ToolKind {
        ToolKind::ReadOnly
    }
    fn summary(&self, args: &Value) -> String {
        let operation = args.get("operation").and_then(Value::as_str).unwrap_or("");
        let target = target_text(args);
        format!("lsp {operation} {target}")
    }
    fn view(&self, args: &Value) -> CallView {
        let operation = args.get("operation").and_then(Value::as_str).unwrap_or("");
        let path = args.get("path").and_then(Value::as_str).unwrap_or("");
        CallView {
            kind: CallKind::Search,
            title: format!("LSP {operation} {}", target_text(args)),
            detail: target_text(args),
            paths: if path.is_empty() { Vec::new() } else { vec![path.to_owned()] },
            read_only: true,
            ..CallView::default()
        }
    }
    fn check(&self, args: &Value) -> Result<(), String> {
        let operation = args.get("operation").and_then(Value::as_str).unwrap_or("");
        let has = |key: &str| args.get(key).is_some();
        let symbol =
            args.get("symbol").and_then(Value::as_str).is_some_and(|s| !s.trim().is_empty());
        match operation {
            "workspaceSymbol" if !symbol => {
                Err("workspaceSymbol needs `symbol` (the name to search for)".to_owned())
            }
            "documentSymbol" if !has("path") => Err("documentSymbol needs `path`".to_owned()),
            _ if has("line") != has("column") => {
                Err("give `line` and `column` together".to_owned())
            }
            "workspaceSymbol" | "documentSymbol" => Ok(()),
            _ if has("line") && !has("path") => {
                Err("a position needs `path` with `line` and `column`".to_owned())
            }
            _ if !has("line") && !symbol => {
                Err(format!("{operation} needs `path`, `line` and `column`, or `symbol`"))
            }
            _ => Ok(()),
        }
    }
    fn execute(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let _ = ctx;
        codecoder_kernel::validate_schema(&self.schema(), &args).map_err(invalid)?;
        self.check(&args).map_err(invalid)?;
        let operation = args.get("operation").and_then(Value::as_str).unwrap_or("").to_owned();
        let cwd = self.intel.config.cwd.clone();
        let path = args.get("path").and_then(Value::as_str).map(|path| cwd.join(path));
        if let Some(path) = &path
            && !path.is_file()
        {
            return Err(invalid(format!("`{}` is not a file", shown_path(&cwd, path))));
        }
        let symbol = args.get("symbol").and_then(Value::as_str).unwrap_or("").trim().to_owned();
        let client = self.intel.client_for_tool(path.as_deref()).map_err(failed)?;
        let timeout = self.intel.config.request_timeout;
        let ask = |method: &str, params: Value| {
            client.request(method, params, timeout).map_err(|err| failed(err.to_string()))
        };
        if operation == "workspaceSymbol" {
            let answer = ask("workspace/symbol", json!({ "query": symbol }))?;
            return Ok(ToolOutput::text(render_symbols(&cwd, &answer, &symbol)));
        }
        if operation == "documentSymbol" {
            let Some(path) = &path else { return Err(invalid("documentSymbol needs `path`")) };
            open(&client, path)?;
            let uri = crate::path_to_uri(path);
            let answer =
                ask("textDocument/documentSymbol", json!({ "textDocument": { "uri": uri } }))?;
            let mut lines = Vec::new();
            document_symbols(&answer, 0, &mut lines);
            let shown = shown_path(&cwd, path);
            if lines.is_empty() {
                return Ok(ToolOutput::text(format!("No symbols in {shown}.")));
            }
            return Ok(ToolOutput::text(format!("Symbols of {shown}:\n{}", lines.join("\n"))));
        }
        // A position: the one given, or the definition of `symbol`.
        let (path, position) = match (
            &path,
            args.get("line").and_then(Value::as_u64),
            args.get("column").and_then(Value::as_u64),
        ) {
            (Some(path), Some(line), Some(column)) => {
                let position = to_wire(path, line, column)?;
                (path.clone(), position)
            }
            _ => {
                let answer = ask("workspace/symbol", json!({ "query": symbol }))?;
                let found = answer.as_array().and_then(|symbols| {
                    symbols
                        .iter()
                        .find(|s| s.get("name").and_then(Value::as_str) == Some(symbol.as_str()))
                        .or_else(|| symbols.first())
                        .cloned()
                });
                let Some(found) = found else {
                    return Err(failed(format!(
                        "no symbol named `{symbol}` found in the workspace"
                    )));
                };
                let Some(location) = found.get("location") else {
                    return Err(failed(format!("the server gave no location for `{symbol}`")));
                };
                let Some(found_path) =
                    location.get("uri").and_then(Value::as_str).and_then(uri_to_path)
                else {
                    return Err(failed(format!("the server gave no file for `{symbol}`")));
                };
                let mut start = location
                    .pointer("/range/start")
                    .cloned()
                    .unwrap_or(json!({ "line": 0, "character": 0 }));
                // A symbol's range may start at a keyword (`def`, `fn`): ask at its name.
                if let Some(at) = name_position(&found_path, &start, &symbol) {
                    start = at;
                }
                (found_path, start)
            }
        };
        open(&client, &path)?;
        let uri = crate::path_to_uri(&path);
        let at = json!({ "textDocument": { "uri": uri }, "position": position });
        let text = match operation.as_str() {
            "definition" => {
                render_locations(&cwd, &ask("textDocument/definition", at)?, "definition")
            }
            "implementation" => {
                render_locations(&cwd, &ask("textDocument/implementation", at)?, "implementation")
            }
            "references" => {
                let mut params = at;
                params["context"] = json!({ "includeDeclaration": true });
                render_locations(&cwd, &ask("textDocument/references", params)?, "reference")
            }
            "hover" => render_hover(&ask("textDocument/hover", at)?),
            "incomingCalls" | "outgoingCalls" => {
                let items = ask("textDocument/prepareCallHierarchy", at)?;
                let Some(item) = items.as_array().and_then(|items| items.first()).cloned() else {
                    return Ok(ToolOutput::text("No callable symbol at that position."));
                };
                let method = if operation == "incomingCalls" {
                    "callHierarchy/incomingCalls"
                } else {
                    "callHierarchy/outgoingCalls"
                };
                let calls = ask(method, json!({ "item": item }))?;
                render_calls(&cwd, &calls, operation == "incomingCalls")
            }
            other => return Err(invalid(format!("unknown operation `{other}`"))),
        };
        Ok(ToolOutput::text(text))
    }
}

fn target_text(args: &Value) -> String {
    let path = args.get("path").and_then(Value::as_str).unwrap_or("");
    let symbol = args.get("symbol").and_then(Value::as_str).unwrap_or("");
    match (args.get("line").and_then(Value::as_u64), args.get("column").and_then(Value::as_u64)) {
        (Some(line), Some(column)) => format!("{path}:{line}:{column}"),
        _ if !symbol.is_empty() => symbol.to_owned(),
        _ => path.to_owned(),
    }
}

/// Makes sure the server has the file open, with its text on disk.
fn open(client: &Client, path: &Path) -> Result<(), ToolError> {
    if client.is_open(path) {
        return Ok(());
    }
    let text = fs_err::read_to_string(path).map_err(|err| failed(err.to_string()))?;
    client.sync(path, language_id(path), &text);
    Ok(())
}

/// A 1-based line and column (characters) as the wire's 0-based UTF-16 position.
fn to_wire(path: &Path, line: u64, column: u64) -> Result<Value, ToolError> {
    let text = fs_err::read_to_string(path).map_err(|err| failed(err.to_string()))?;
    let index = usize::try_from(line.saturating_sub(1)).unwrap_or(usize::MAX);
    let lines: Vec<&str> = text.lines().collect();
    let Some(content) = lines.get(index) else {
        return Err(invalid(format!(
            "line {line} is past the end of the file ({} lines)",
            lines.len()
        )));
    };
    let chars = usize::try_from(column.saturating_sub(1)).unwrap_or(usize::MAX);
    let count = content.chars().count();
    if chars > count {
        return Err(invalid(format!(
            "column {column} is past the end of line {line} ({count} characters)"
        )));
    }
    let utf16: usize = content.chars().take(chars).map(char::len_utf16).sum();
    Ok(json!({ "line": index, "character": utf16 }))
}

/// The wire position of `symbol`'s name on the line `start` names, at or after `start`.
fn name_position(path: &Path, start: &Value, symbol: &str) -> Option<Value> {
    let line = usize::try_from(start.get("line")?.as_u64()?).ok()?;
    let text = fs_err::read_to_string(path).ok()?;
    let content = text.lines().nth(line)?;
    let byte = content.find(symbol)?;
    let utf16: usize = content[..byte].chars().map(char::len_utf16).sum();
    Some(json!({ "line": line, "character": utf16 }))
}

/// A wire position as 1-based line and column (characters) in `path`, with the line's text.
fn from_wire(path: &Path, position: &Value) -> (u64, u64, String) {
    let line = position.get("line").and_then(Value::as_u64).unwrap_or(0);
    let utf16 = position.get("character").and_then(Value::as_u64).unwrap_or(0);
    let content = fs_err::read_to_string(path)
        .ok()
        .and_then(|text| {
            text.lines().nth(usize::try_from(line).unwrap_or(usize::MAX)).map(str::to_owned)
        })
        .unwrap_or_default();
    let mut units = 0;
    let mut column = 0;
    for c in content.chars() {
        if units >= utf16 {
            break;
        }
        units += c.len_utf16() as u64;
        column += 1;
    }
    (line + 1, column + 1, content.trim().to_owned())
}

fn location_line(cwd: &Path, location: &Value) -> Option<String> {
    // A Location has `uri` and `range`; a LocationLink `targetUri` and `targetSelectionRange`.
    let uri = location.get("uri").or_else(|| location.get("targetUri"))?.as_str()?;
    let range = location.get("range").or_else(|| location.get("targetSelectionRange"))?;
    let path: PathBuf = uri_to_path(uri)?;
    let (line, column, text) = from_wire(&path, range.get("start")?);
    Some(format!("{}:{line}:{column}: {text}", shown_path(cwd, &path)))
}

fn render_locations(cwd: &Path, answer: &Value, what: &str) -> String {
    let locations: Vec<Value> = match answer {
        Value::Array(items) => items.clone(),
        Value::Null => Vec::new(),
        single => vec![single.clone()],
    };
    if locations.is_empty() {
        return format!("No {what} found.");
    }
    let mut lines: Vec<String> =
        locations.iter().filter_map(|location| location_line(cwd, location)).collect();
    lines.dedup();
    let total = lines.len();
    let mut text = format!("{total} {what}(s):");
    for line in lines.iter().take(MAX_LOCATIONS) {
        text.push_str(&format!("\n{line}"));
    }
    if total > MAX_LOCATIONS {
        text.push_str(&format!("\n… and {} more", total - MAX_LOCATIONS));
    }
    text
}

fn render_hover(answer: &Value) -> String {
    let contents = answer.get("contents").cloned().unwrap_or(Value::Null);
    let part = |value: &Value| -> String {
        match value {
            Value::String(text) => text.clone(),
            Value::Object(object) => {
                object.get("value").and_then(Value::as_str).unwrap_or("").to_owned()
            }
            _ => String::new(),
        }
    };
    let text = match &contents {
        Value::Array(parts) => parts.iter().map(part).collect::<Vec<_>>().join("\n\n"),
        other => part(other),
    };
    if text.trim().is_empty() { "No hover information at that position.".to_owned() } else { text }
}

/// LSP's `SymbolKind` numbers' names.
fn kind_name(kind: u64) -> &'static str {
    match kind {
        1 => "file",
        2 => "module",
        3 => "namespace",
        4 => "package",
        5 => "class",
        6 => "method",
        7 => "property",
        8 => "field",
        9 => "constructor",
        10 => "enum",
        11 => "interface",
        12 => "function",
        13 => "variable",
        14 => "constant",
        22 => "enum member",
        23 => "struct",
        26 => "type parameter",
        _ => "symbol",
    }
}

fn document_symbols(answer: &Value, depth: usize, lines: &mut Vec<String>) {
    let Some(symbols) = answer.as_array() else { return };
    for symbol in symbols {
        let name = symbol.get("name").and_then(Value::as_str).unwrap_or("?");
        let kind = kind_name(symbol.get("kind").and_then(Value::as_u64).unwrap_or(0));
        let start = symbol
            .pointer("/selectionRange/start/line")
            .or_else(|| symbol.pointer("/location/range/start/line"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        lines.push(format!("{}{kind} {name} (line {})", "  ".repeat(depth), start + 1));
        if let Some(children) = symbol.get("children") {
            document_symbols(children, depth + 1, lines);
        }
    }
}

fn render_symbols(cwd: &Path, answer: &Value, query: &str) -> String {
    let Some(symbols) = answer.as_array().filter(|symbols| !symbols.is_empty()) else {
        return format!("No symbol matches `{query}`.");
    };
    let mut text = format!("{} symbol(s) match `{query}`:", symbols.len());
    for symbol in symbols.iter().take(MAX_LOCATIONS) {
        let name = symbol.get("name").and_then(Value::as_str).unwrap_or("?");
        let kind = kind_name(symbol.get("kind").and_then(Value::as_u64).unwrap_or(0));
        let place = symbol
            .get("location")
            .and_then(|location| location_line(cwd, location))
            .unwrap_or_default();
        text.push_str(&format!("\n{kind} {name}: {place}"));
    }
    if symbols.len() > MAX_LOCATIONS {
        text.push_str(&format!("\n… and {} more", symbols.len() - MAX_LOCATIONS));
    }
    text
}

fn render_calls(cwd: &Path, calls: &Value, incoming: bool) -> String {
    let Some(calls) = calls.as_array().filter(|calls| !calls.is_empty()) else {
        return if incoming {
            "No callers found.".to_owned()
        } else {
            "No calls found.".to_owned()
        };
    };
    let key = if incoming { "from" } else { "to" };
    let mut text = format!("{} {}:", calls.len(), if incoming { "caller(s)" } else { "callee(s)" });
    for call in calls.iter().take(MAX_LOCATIONS) {
        let Some(item) = call.get(key) else { continue };
        let name = item.get("name").and_then(Value::as_str).unwrap_or("?");
        let place = item
            .get("uri")
            .and_then(Value::as_str)
            .and_then(uri_to_path)
            .zip(item.pointer("/selectionRange/start"))
            .map(|(path, start)| {
                let (line, column, content) = from_wire(&path, start);
                format!("{}:{line}:{column}: {content}", shown_path(cwd, &path))
            })
            .unwrap_or_default();
        text.push_str(&format!("\n{name}: {place}"));
    }
    text
}
