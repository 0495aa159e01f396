//! Secret redaction at the kernel's seam: with a redactor configured, a tool's result, its
//! streamed output (even a secret cut across two chunks), and the MCP result it reports are
//! redacted before the model, the log and the client see them, and the result says how many
//! secrets it hid; without one, results are kept as the tools returned them.

use std::sync::Arc;

use codecoder_kernel::{AllowAll, Redactor, Secret, Tool, ToolContext, ToolKind, ToolOutput};
use codecoder_protocol::{AgentEvent, AgentEventKind, OutputStream, ToolError};
use serde_json::{Value, json};

use crate::support::{Harness, Response, ScriptedModel, answer, calls, config};

/// The fake token, assembled at run time (no secret scanner flags the source).
fn token() -> String {
    ["ghp_", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"].concat()
}

const VALUE: &str = "known-secret-value-42";

/// Streams its `chunks` as stdout, reports an MCP result holding the token, and returns the
/// chunks joined. The chunks are the tool's own, so the model's arguments never hold them.
struct StreamTool {
    chunks: Vec<String>,
}

impl Tool for StreamTool {
    fn name(&self) -> &str {
        "stream"
    }
    fn description(&self) -> &str {
        "Streams."
    }
    fn schema(&self) -> Value {
        json!({ "type": "object", "properties": {} })
    }
    fn kind(&self) -> ToolKind {
        ToolKind::ReadOnly
    }
    fn execute(&self, ctx: &ToolContext, _args: Value) -> Result<ToolOutput, ToolError> {
        for chunk in &self.chunks {
            ctx.output(OutputStream::Stdout, chunk.clone());
        }
        ctx.report_mcp_result(json!({ "content": [{ "type": "text", "text": token() }] }));
        Ok(ToolOutput::text(self.chunks.concat()))
    }
}

/// One turn calling `stream` with `chunks`; the events, the second request's debug text and
/// the log's.
fn run(chunks: &[String], redact: bool) -> (Vec<AgentEvent>, String, String) {
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "stream", json!({}))])),
        Response::Events(answer("ok")),
    ]);
    let mut config = config();
    if redact {
        let secret = Secret { name: "DEPLOY_TOKEN".into(), value: VALUE.into() };
        config.redactor = Some(Arc::new(Redactor::new([secret]).unwrap()));
    }
    let tool = Arc::new(StreamTool { chunks: chunks.to_vec() });
    let harness = Harness::with(model.clone(), vec![tool], Arc::new(AllowAll), config, |_| {});
    harness.submit("go");
    let events = harness.turn();
    let logs = harness.shutdown();
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    (events, format!("{:?}", requests[1]), format!("{:?}", logs.root))
}

fn streamed(events: &[AgentEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match &event.kind {
            AgentEventKind::ToolOutputDelta { chunk, .. } => Some(chunk.as_str()),
            _ => None,
        })
        .collect()
}

fn finished(events: &[AgentEvent]) -> (String, String) {
    events
        .iter()
        .find_map(|event| match &event.kind {
            AgentEventKind::ToolFinished { result, mcp_result, .. } => Some((
                codecoder_protocol::ContentItem::joined_text(&result.as_ref().unwrap().content),
                mcp_result.as_ref().unwrap().to_string(),
            )),
            _ => None,
        })
        .unwrap()
}

#[test]
fn results_streams_and_mcp_results_are_redacted_everywhere() {
    let token = token();
    // The token is cut in two across chunks, and the last line has no end.
    let chunks = vec![
        format!("one {}", &token[..10]),
        format!("{} two\n", &token[10..]),
        format!("v={VALUE}"),
    ];
    let (events, request, log) = run(&chunks, true);

    let streamed = streamed(&events);
    assert_eq!(streamed, format!("one [REDACTED:github-token] two\nv=[REDACTED:env:DEPLOY_TOKEN]"));
    let (result, mcp_result) = finished(&events);
    assert_eq!(
        result,
        "one [REDACTED:github-token] two\nv=[REDACTED:env:DEPLOY_TOKEN]\n(2 secrets redacted)"
    );
    assert!(mcp_result.contains("[REDACTED:github-token]"), "{mcp_result}");
    for (what, text) in
        [("the request", &request), ("the log", &log), ("the MCP result", &mcp_result)]
    {
        assert!(!text.contains(&token), "{what}: {text}");
        assert!(!text.contains(VALUE), "{what}: {text}");
    }
    assert!(request.contains("(2 secrets redacted)"), "{request}");
    assert!(log.contains("(2 secrets redacted)"), "{log}");
}

#[test]
fn a_private_key_block_streamed_line_by_line_is_held_until_it_ends() {
    let begin = ["-----BEGIN ", "PRIVATE KEY-----\n"].concat();
    let chunks = vec![
        format!("key:\n{begin}"),
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n".to_owned(),
        "-----END PRIVATE KEY-----\nafter\n".to_owned(),
    ];
    let (events, _, _) = run(&chunks, true);
    assert_eq!(streamed(&events), "key:\n[REDACTED:private-key]\nafter\n");
}

#[test]
fn without_a_redactor_output_is_kept_as_it_was() {
    let chunks = vec![format!("t={}\n", token())];
    let (events, request, _) = run(&chunks, false);
    assert_eq!(streamed(&events), chunks[0]);
    assert_eq!(finished(&events).0, chunks[0]);
    assert!(request.contains(&token()), "{request}");
}

/// Fails with the token in its message.
struct FailTool;

impl Tool for FailTool {
    fn name(&self) -> &str {
        "fail"
    }
    fn description(&self) -> &str {
        "Fails."
    }
    fn schema(&self) -> Value {
        json!({ "type": "object", "properties": {} })
    }
    fn kind(&self) -> ToolKind {
        ToolKind::ReadOnly
    }
    fn execute(&self, _ctx: &ToolContext, _args: Value) -> Result<ToolOutput, ToolError> {
        Err(ToolError::Failed { message: format!("could not log in with {}", token()) })
    }
}

#[test]
fn a_failing_tools_message_is_redacted_for_the_model_the_log_and_the_client() {
    let model = ScriptedModel::queue(vec![
        Response::Events(calls(&[("c1", "fail", json!({}))])),
        Response::Events(answer("ok")),
    ]);
    let mut config = config();
    config.redactor = Some(Arc::new(Redactor::new([]).unwrap()));
    let harness =
        Harness::with(model.clone(), vec![Arc::new(FailTool)], Arc::new(AllowAll), config, |_| {});
    harness.submit("go");
    let events = harness.turn();
    let log = format!("{:?}", harness.shutdown().root);
    let request = format!("{:?}", model.requests()[1]);
    let error = events
        .iter()
        .find_map(|event| match &event.kind {
            AgentEventKind::ToolFinished { result: Err(err), .. } => Some(err.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        error,
        ToolError::Failed { message: "could not log in with [REDACTED:github-token]".into() }
    );
    for (what, text) in [("the request", &request), ("the log", &log)] {
        assert!(!text.contains(&token()), "{what}: {text}");
        assert!(text.contains("(1 secret redacted)"), "{what}: {text}");
    }
}
