//! Unit tests of the MCP client's pure parts: names, results, configuration.

use std::collections::BTreeMap;
use std::path::Path;

use codecoder_protocol::{ContentItem, Image};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{Transport, expand_vars, parse_mcp_json, qualified_names, to_tool_output};

#[test]
fn names_are_qualified_sanitised_and_unique() {
    let long = "x".repeat(80);
    let names = qualified_names(&[
        ("github", "create_issue"),
        ("my server", "do.it"),
        ("my_server", "do_it"),
        ("s", &long),
        ("s", &format!("{long}y")),
    ]);
    assert_eq!(names[0], "mcp__github__create_issue");
    assert_eq!(names[1], "mcp__my_server__do_it");
    assert_ne!(names[2], names[1]);
    for name in &names {
        assert!(name.len() <= 64, "{name}");
        assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'), "{name}");
    }
    assert_ne!(names[3], names[4]);
    assert!(names[3].starts_with("mcp__s__xxx"));
    // Stable from run to run.
    assert_eq!(qualified_names(&[("s", &long)])[0], names[3]);
}

#[test]
fn results_keep_text_images_resources_structured_content_and_errors() {
    let result = json!({
        "content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "iVBOR", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt"},
            {"type": "resource", "resource": {"uri": "demo://r/1", "text": "body"}},
        ],
        "structuredContent": {"temperature": 21},
        "isError": true,
    });
    let output = to_tool_output(&result);
    assert!(output.is_error);
    assert_eq!(
        output.content,
        vec![
            ContentItem::Text { text: "hello".to_owned() },
            ContentItem::Image(Image {
                media_type: "image/png".to_owned(),
                data_base64: "iVBOR".to_owned()
            }),
            ContentItem::Text { text: "[resource] file:///a.txt\nname: a.txt".to_owned() },
            ContentItem::Text { text: "[resource] demo://r/1\nbody".to_owned() },
            ContentItem::Text { text: r#"{"temperature":21}"#.to_owned() },
        ]
    );
    // Structured content already given as text is not repeated.
    let result = json!({
        "content": [{"type": "text", "text": "{\"temperature\": 21}"}],
        "structuredContent": {"temperature": 21},
    });
    assert_eq!(to_tool_output(&result).content.len(), 1);
    assert!(!to_tool_output(&result).is_error);
}

#[test]
fn variables_expand_with_defaults() {
    let lookup = |name: &str| (name == "TOKEN").then(|| "s3cret".to_owned());
    assert_eq!(expand_vars("Bearer ${TOKEN}", &lookup), "Bearer s3cret");
    assert_eq!(expand_vars("${UNSET:-fallback}/x", &lookup), "fallback/x");
    assert_eq!(expand_vars("${UNSET}-$HOME-${open", &lookup), "-$HOME-${open");
}

#[test]
fn mcp_json_reads_stdio_and_http_servers() {
    let text = r#"{
  "mcpServers": {
    "fs": {"command": "npx", "args": ["-y", "server-filesystem", "${ROOT:-/tmp}"], "env": {"K": "${TOKEN}"}},
    "remote": {"type": "http", "url": "https://example.test/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
    "sse": {"type": "sse", "url": "https://example.test/sse"}
  }
}"#;
    let base = BTreeMap::from([("PATH".to_owned(), "/bin".to_owned())]);
    let lookup = |name: &str| (name == "TOKEN").then(|| "t".to_owned());
    let servers = parse_mcp_json(Path::new("/p/.mcp.json"), text, &base, &lookup).unwrap();
    assert_eq!(servers.len(), 3);
    assert_eq!(
        servers[0].transport,
        Transport::Stdio {
            command: "npx".to_owned(),
            args: vec!["-y".to_owned(), "server-filesystem".to_owned(), "/tmp".to_owned()],
            env: BTreeMap::from([
                ("K".to_owned(), "t".to_owned()),
                ("PATH".to_owned(), "/bin".to_owned())
            ]),
            cwd: None,
        }
    );
    assert_eq!(
        servers[1].transport,
        Transport::Http {
            url: "https://example.test/mcp".to_owned(),
            bearer_token: None,
            headers: BTreeMap::from([("Authorization".to_owned(), "Bearer t".to_owned())]),
        }
    );
    assert_eq!(
        servers[2].transport,
        Transport::Sse {
            url: "https://example.test/sse".to_owned(),
            bearer_token: None,
            headers: BTreeMap::new(),
        }
    );
}

#[test]
fn mcp_json_errors_name_file_and_line() {
    let base = BTreeMap::new();
    let lookup = |_: &str| None;
    let err =
        parse_mcp_json(Path::new("/p/.mcp.json"), "{\n  \"mcpServers\": {,}\n}", &base, &lookup)
            .unwrap_err()
            .to_string();
    assert!(err.starts_with("/p/.mcp.json:2:"), "{err}");
    let text = "{\n  \"mcpServers\": {\n    \"bad\": {\"args\": []}\n  }\n}";
    let err =
        parse_mcp_json(Path::new("/p/.mcp.json"), text, &base, &lookup).unwrap_err().to_string();
    assert!(err.starts_with("/p/.mcp.json:3:5: server `bad`"), "{err}");
}

#[test]
fn the_sse_parser_splits_events_across_chunks_and_joins_data_lines() {
    use crate::sse::{Event, Parser};
    let mut parser = Parser::default();
    assert_eq!(parser.feed(b"event: endpoint\r\ndata: /messages?s"), []);
    let events =
        parser.feed(b"essionId=1\r\n\r\n: a comment\n\ndata: {\"a\":\ndata:1}\n\nevent: x\n\n");
    assert_eq!(
        events,
        [
            Event { kind: "endpoint".to_owned(), data: "/messages?sessionId=1".to_owned() },
            Event { kind: "message".to_owned(), data: "{\"a\":\n1}".to_owned() },
        ]
    );
}
