//! A `tools/call` result, as the model sees it.
//!
//! Invariants: text stays text; images become image items; audio, resource links and embedded
//! resources become text naming their URI (an embedded text resource keeps its text);
//! `structuredContent` not already present as a text item is appended as JSON text; `isError`
//! makes the output an error the model sees. Nothing the server sent is dropped silently.

use codecoder_kernel::ToolOutput;
use codecoder_protocol::{ContentItem, Image};
use serde_json::Value;

/// The output for a `CallToolResult`, given as its JSON.
pub fn to_tool_output(result: &Value) -> ToolOutput {
    let mut content = Vec::new();
    let items = result.get("content").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    for item in items {
        content.push(content_item(item));
    }
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        let already = content.iter().any(|item| match item {
            ContentItem::Text { text } => {
                serde_json::from_str::<Value>(text).ok().as_ref() == Some(structured)
            }
            _ => false,
        });
        if !already {
            content.push(ContentItem::Text { text: structured.to_string() });
        }
    }
    if content.is_empty() {
        content.push(ContentItem::Text { text: String::new() });
    }
    let is_error = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
    ToolOutput { content, is_error, exit: None }
}

fn content_item(item: &Value) -> ContentItem {
    let field = |name: &str| item.get(name).and_then(Value::as_str).unwrap_or("");
    let text = match field("type") {
        "text" => field("text").to_owned(),
        "image" => {
            return ContentItem::Image(Image {
                media_type: field("mimeType").to_owned(),
                data_base64: field("data").to_owned(),
            });
        }
        "audio" => format!("[audio ({}), not shown]", field("mimeType")),
        "resource_link" => {
            let mut line = format!("[resource] {}", field("uri"));
            for key in ["name", "mimeType", "description"] {
                if !field(key).is_empty() {
                    line.push_str(&format!("\n{key}: {}", field(key)));
                }
            }
            line
        }
        "resource" => {
            let resource = item.get("resource").unwrap_or(&Value::Null);
            let get = |name: &str| resource.get(name).and_then(Value::as_str);
            let uri = get("uri").unwrap_or("");
            match (get("text"), get("blob")) {
                (Some(text), _) => format!("[resource] {uri}\n{text}"),
                (None, Some(blob)) => format!(
                    "[resource] {uri} ({}, {} bytes base64, not shown)",
                    get("mimeType").unwrap_or("binary"),
                    blob.len()
                ),
                (None, None) => format!("[resource] {uri}"),
            }
        }
        _ => item.to_string(),
    };
    ContentItem::Text { text }
}
