//! Unit tests of `mcp add`'s forms: what each becomes in config.toml, and what is refused.

use crate::{McpAddFlags, McpTransport, mcp_server_from_flags, mcp_server_from_json};

#[test]
fn flags_with_a_command_make_a_stdio_server_with_its_variables() {
    let server = mcp_server_from_flags(McpAddFlags {
        env: vec!["TOKEN=abc".to_owned(), "MODE=ro".to_owned()],
        command: vec!["npx".to_owned(), "-y".to_owned(), "srv".to_owned()],
        ..McpAddFlags::default()
    })
    .unwrap();
    assert_eq!(server.command.as_deref(), Some("npx"));
    assert_eq!(server.args, ["-y", "srv"]);
    assert_eq!(server.env.get("TOKEN").map(String::as_str), Some("abc"));
    assert_eq!(server.url, None);
}

#[test]
fn a_bearer_header_from_a_variable_becomes_bearer_token_env_var() {
    let server = mcp_server_from_flags(McpAddFlags {
        transport: Some(McpTransport::Sse),
        positional_url: Some("https://example.test/sse".to_owned()),
        headers: vec!["Authorization: Bearer ${API_TOKEN}".to_owned(), "X-Team: blue".to_owned()],
        ..McpAddFlags::default()
    })
    .unwrap();
    assert_eq!(server.bearer_token_env_var.as_deref(), Some("API_TOKEN"));
    assert!(!server.http_headers.contains_key("Authorization"));
    assert_eq!(server.http_headers.get("X-Team").map(String::as_str), Some("blue"));
    assert_eq!(crate::describe_mcp_server(&server), "sse: https://example.test/sse");
}

#[test]
fn refused_forms_name_the_problem() {
    let refused = |flags: McpAddFlags| mcp_server_from_flags(flags).unwrap_err().to_string();
    let both = refused(McpAddFlags {
        url: Some("https://a.test".to_owned()),
        command: vec!["srv".to_owned()],
        ..McpAddFlags::default()
    });
    assert!(both.contains("not both"), "{both}");
    let twice = refused(McpAddFlags {
        positional_url: Some("https://a.test".to_owned()),
        url: Some("https://b.test".to_owned()),
        ..McpAddFlags::default()
    });
    assert!(twice.contains("given twice"), "{twice}");
    let header = refused(McpAddFlags {
        headers: vec!["X-Key: k".to_owned()],
        command: vec!["srv".to_owned()],
        ..McpAddFlags::default()
    });
    assert!(header.contains("cannot go to a stdio server"), "{header}");
    assert!(mcp_server_from_flags(McpAddFlags::default()).unwrap_err().is_usage());
}

#[test]
fn json_form_takes_claude_codes_entry_and_refuses_unexpanded_variables() {
    let server =
        mcp_server_from_json("fs", r#"{"command":"srv","args":["/tmp"],"env":{"A":"1"}}"#, true)
            .unwrap();
    assert_eq!(server.command.as_deref(), Some("srv"));
    assert_eq!(server.args, ["/tmp"]);
    assert_eq!(server.sampling, Some(true));
    let err = mcp_server_from_json("fs", r#"{"command":"${HOME}/srv"}"#, false).unwrap_err();
    assert!(err.is_usage());
    assert!(err.to_string().starts_with("the server JSON for `fs`: `command` uses"), "{err}");
    let err = mcp_server_from_json("api", r#"{"type":"ws","url":"x"}"#, false).unwrap_err();
    assert!(err.to_string().contains("unknown type `ws`"), "{err}");
}
