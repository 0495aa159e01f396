//! Unit tests: golden SSE transcripts through each parser (split at every byte, so UTF-8
//! characters and line ends are cut across reads), request bodies from the neutral model.

use codecoder_kernel::{ModelRequest, ResponseEvent, ToolSpec};
use codecoder_protocol::{
    Message, MessageItem, Reasoning, Role, SessionId, StopReason, ToolCall, ToolCallId, ToolResult,
    ToolResultStatus, Usage,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::config::{ProviderConfig, WireApi};
use crate::error::Error;
use crate::sse::SseDecoder;
use crate::{anthropic, chat, client, responses, whole};
use codecoder_protocol::{ReasoningEffort, ReasoningSettings, ReasoningSummary};

/// Runs `sse` through a decoder and a parser in chunks of `chunk` bytes, as the client does.
fn run(api: WireApi, sse: &str, chunk: usize) -> Result<Vec<ResponseEvent>, Error> {
    let mut parser = crate::wire::parser(api);
    let mut decoder = SseDecoder::new();
    let mut out = Vec::new();
    let mut complete = false;
    for piece in sse.as_bytes().chunks(chunk.max(1)) {
        decoder.push(piece, &mut |event| {
            if !complete {
                complete = parser.on_event(event, &mut |e| out.push(e))?;
            }
            Ok(())
        })?;
    }
    if !complete {
        parser.on_eof(&mut |e| out.push(e))?;
    }
    Ok(out)
}

/// Merges consecutive deltas, so results compare equal whatever the chunking.
fn normalize(events: Vec<ResponseEvent>) -> Vec<ResponseEvent> {
    let mut out: Vec<ResponseEvent> = Vec::new();
    for event in events {
        match (out.last_mut(), event) {
            (Some(ResponseEvent::TextDelta(a)), ResponseEvent::TextDelta(b)) => a.push_str(&b),
            (Some(ResponseEvent::ReasoningDelta(a)), ResponseEvent::ReasoningDelta(b)) => {
                a.push_str(&b)
            }
            (
                Some(ResponseEvent::ToolCallArgsDelta { id: a_id, delta: a }),
                ResponseEvent::ToolCallArgsDelta { id: b_id, delta: b },
            ) if *a_id == b_id => a.push_str(&b),
            (_, event) => out.push(event),
        }
    }
    out
}

fn check_every_split(api: WireApi, sse: &str, expected: &[ResponseEvent]) {
    for chunk in [1, 2, 3, 7, 64, usize::MAX] {
        let got = normalize(run(api, sse, chunk.min(sse.len())).unwrap());
        assert_eq!(got, expected, "chunk size {chunk}");
    }
}

fn id(s: &str) -> ToolCallId {
    ToolCallId::new(s)
}

const RESPONSES_SSE: &str = concat!(
    "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\"}}\n\n",
    "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"id\":\"rs_1\",\"type\":\"reasoning\"}}\n\n",
    "event: response.reasoning_summary_text.delta\ndata: {\"type\":\"response.reasoning_summary_text.delta\",\"item_id\":\"rs_1\",\"delta\":\"Thinking \u{e9}\"}\n\n",
    "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"id\":\"rs_1\",\"type\":\"reasoning\",\"encrypted_content\":\"gAAA\"}}\n\n",
    ": keep-alive\n\n",
    "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"id\":\"msg_1\",\"type\":\"message\"}}\n\n",
    "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"delta\":\"Hello \u{1F600}\"}\n\n",
    "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"delta\":\"\"}\n\n",
    "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":2,\"item\":{\"id\":\"fc_1\",\"type\":\"function_call\",\"call_id\":\"call_a\",\"name\":\"read_file\"}}\n\n",
    "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":3,\"item\":{\"id\":\"fc_2\",\"type\":\"function_call\",\"call_id\":\"call_b\",\"name\":\"grep\"}}\n\n",
    "event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_1\",\"delta\":\"{\\\"path\\\":\"}\n\n",
    "event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_2\",\"delta\":\"{\\\"pattern\\\":\\\"x\\\"}\"}\n\n",
    "event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_1\",\"delta\":\"\\\"a.rs\\\"}\"}\n\n",
    "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":2,\"item\":{\"id\":\"fc_1\",\"type\":\"function_call\",\"call_id\":\"call_a\",\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"a.rs\\\"}\"}}\n\n",
    "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":3,\"item\":{\"id\":\"fc_2\",\"type\":\"function_call\",\"call_id\":\"call_b\",\"name\":\"grep\",\"arguments\":\"{\\\"pattern\\\":\\\"x\\\"}\"}}\n\n",
    "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"usage\":{\"input_tokens\":100,\"input_tokens_details\":{\"cached_tokens\":40},\"output_tokens\":20,\"output_tokens_details\":{\"reasoning_tokens\":5}}}}\n\n",
);

#[test]
fn responses_golden_transcript() {
    let expected = vec![
        ResponseEvent::ReasoningDelta("Thinking \u{e9}".into()),
        ResponseEvent::ReasoningDone { signature: None, encrypted_content: Some("gAAA".into()) },
        ResponseEvent::TextDelta("Hello \u{1F600}".into()),
        ResponseEvent::ToolCallStart { id: id("call_a"), name: "read_file".into() },
        ResponseEvent::ToolCallStart { id: id("call_b"), name: "grep".into() },
        ResponseEvent::ToolCallArgsDelta { id: id("call_a"), delta: "{\"path\":".into() },
        ResponseEvent::ToolCallArgsDelta { id: id("call_b"), delta: "{\"pattern\":\"x\"}".into() },
        ResponseEvent::ToolCallArgsDelta { id: id("call_a"), delta: "\"a.rs\"}".into() },
        ResponseEvent::ToolCallDone { id: id("call_a") },
        ResponseEvent::ToolCallDone { id: id("call_b") },
        ResponseEvent::Usage(Usage {
            input_tokens: 100,
            cached_input_tokens: 40,
            output_tokens: 20,
            reasoning_output_tokens: 5,
        }),
        ResponseEvent::Completed { stop_reason: StopReason::ToolUse },
    ];
    check_every_split(WireApi::Responses, RESPONSES_SSE, &expected);
}

#[test]
fn responses_without_completed_is_a_broken_stream() {
    let cut = &RESPONSES_SSE[..RESPONSES_SSE.find("event: response.completed").unwrap()];
    let err = run(WireApi::Responses, cut, 64).unwrap_err();
    assert!(err.is_retryable(), "{err}");
}

#[test]
fn responses_incomplete_and_failed() {
    let sse = "event: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"response\":{\"incomplete_details\":{\"reason\":\"max_output_tokens\"}}}\n\n";
    let got = run(WireApi::Responses, sse, 9).unwrap();
    assert_eq!(got, vec![ResponseEvent::Completed { stop_reason: StopReason::MaxTokens }]);
    let sse = "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n";
    let err = run(WireApi::Responses, sse, 9).unwrap_err();
    assert_eq!(err.to_string(), "the model stream failed: server_error: boom");
}

const CHAT_SSE: &str = concat!(
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"reasoning_content\":\"Let me see\"},\"finish_reason\":null}]}\n\n",
    ": OPENROUTER PROCESSING\n\n",
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Na\u{ef}ve \"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":\"grep\",\"arguments\":\"{\\\"pat\"}}]},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"path\\\":\\\"a.rs\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"tern\\\":\\\"x\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":10,\"prompt_tokens_details\":{\"cached_tokens\":30}}}\n\n",
    "data: [DONE]\n\n",
);

#[test]
fn chat_golden_transcript_with_interleaved_tool_calls() {
    let expected = vec![
        ResponseEvent::ReasoningDelta("Let me see".into()),
        ResponseEvent::ReasoningDone { signature: None, encrypted_content: None },
        ResponseEvent::TextDelta("Na\u{ef}ve ".into()),
        ResponseEvent::ToolCallStart { id: id("call_a"), name: "read_file".into() },
        ResponseEvent::ToolCallStart { id: id("call_b"), name: "grep".into() },
        ResponseEvent::ToolCallArgsDelta { id: id("call_b"), delta: "{\"pat".into() },
        ResponseEvent::ToolCallArgsDelta { id: id("call_a"), delta: "{\"path\":\"a.rs\"}".into() },
        ResponseEvent::ToolCallArgsDelta { id: id("call_b"), delta: "tern\":\"x\"}".into() },
        ResponseEvent::ToolCallDone { id: id("call_a") },
        ResponseEvent::ToolCallDone { id: id("call_b") },
        ResponseEvent::Usage(Usage {
            input_tokens: 50,
            cached_input_tokens: 30,
            output_tokens: 10,
            reasoning_output_tokens: 0,
        }),
        ResponseEvent::Completed { stop_reason: StopReason::ToolUse },
    ];
    check_every_split(WireApi::Chat, CHAT_SSE, &expected);
}

#[test]
fn chat_usage_on_the_finish_chunk_and_no_done() {
    let sse = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"hm\"}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n",
    );
    let got = normalize(run(WireApi::Chat, sse, 5).unwrap());
    assert_eq!(
        got,
        vec![
            ResponseEvent::ReasoningDelta("hm".into()),
            ResponseEvent::ReasoningDone { signature: None, encrypted_content: None },
            ResponseEvent::TextDelta("ok".into()),
            ResponseEvent::Usage(Usage { input_tokens: 3, output_tokens: 2, ..Usage::default() }),
            ResponseEvent::Completed { stop_reason: StopReason::MaxTokens },
        ]
    );
    let broken = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n";
    assert!(run(WireApi::Chat, broken, 5).unwrap_err().is_retryable());
    let malformed = "data: {\"choices\": [\n\n";
    let err = run(WireApi::Chat, malformed, 5).unwrap_err();
    assert!(err.to_string().contains("malformed SSE data"), "{err}");
    assert!(!err.is_retryable());
}

const ANTHROPIC_SSE: &str = concat!(
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude\",\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":100,\"cache_creation_input_tokens\":5,\"output_tokens\":1}}}\n\n",
    "event: ping\ndata: {\"type\":\"ping\"}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Consider \u{2203}x\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQBCg\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"I'll read it.\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"read_file\",\"input\":{}}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"a.rs\\\"}\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":42}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

#[test]
fn anthropic_golden_transcript() {
    let expected = vec![
        ResponseEvent::ReasoningDelta("Consider \u{2203}x".into()),
        ResponseEvent::ReasoningDone { signature: Some("EqQBCg".into()), encrypted_content: None },
        ResponseEvent::TextDelta("I'll read it.".into()),
        ResponseEvent::ToolCallStart { id: id("toolu_1"), name: "read_file".into() },
        ResponseEvent::ToolCallArgsDelta {
            id: id("toolu_1"),
            delta: "{\"path\": \"a.rs\"}".into(),
        },
        ResponseEvent::ToolCallDone { id: id("toolu_1") },
        ResponseEvent::Usage(Usage {
            input_tokens: 115,
            cached_input_tokens: 100,
            output_tokens: 42,
            reasoning_output_tokens: 0,
        }),
        ResponseEvent::Completed { stop_reason: StopReason::ToolUse },
    ];
    check_every_split(WireApi::Anthropic, ANTHROPIC_SSE, &expected);
}

#[test]
fn anthropic_error_event_mid_stream() {
    let cut = &ANTHROPIC_SSE[..ANTHROPIC_SSE.find("event: content_block_start").unwrap()];
    let sse = format!(
        "{cut}event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}}}\n\n"
    );
    let err = run(WireApi::Anthropic, &sse, 11).unwrap_err();
    assert_eq!(err.to_string(), "the model stream failed: overloaded_error: Overloaded");
    assert!(err.is_retryable());
}

/// A three-step conversation: user → assistant (reasoning, text, tool call) → tool result →
/// assistant text → user again.
fn conversation() -> ModelRequest {
    let call =
        ToolCall { id: id("call_1"), name: "read_file".into(), args: json!({"path": "a.rs"}) };
    ModelRequest {
        session_id: SessionId::new(),
        model: "m".into(),
        instructions: "be brief".into(),
        sections: Vec::new(),
        history: [
            Message::user_text("read a.rs"),
            Message::new(
                Role::Assistant,
                vec![
                    MessageItem::Reasoning(Reasoning {
                        text: "need file".into(),
                        signature: Some("sig".into()),
                        encrypted_content: Some("enc".into()),
                    }),
                    MessageItem::Text { text: "Reading.".into() },
                    MessageItem::ToolCall(call),
                ],
            ),
            Message::new(
                Role::Tool,
                vec![MessageItem::ToolResult(ToolResult::text(
                    id("call_1"),
                    ToolResultStatus::Error,
                    "no such file",
                ))],
            ),
            Message::new(
                Role::Assistant,
                vec![MessageItem::Text { text: "It is missing.".into() }],
            ),
            Message::user_text("create it"),
        ]
        .into_iter()
        .map(std::sync::Arc::new)
        .collect(),
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file".into(),
            schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }],
        max_output_tokens: Some(1000),
        output_schema: None,
        reasoning: Default::default(),
    }
}

/// A typed request body as a JSON value, for assertions.
fn to_value(body: impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(body).unwrap()
}

#[test]
fn responses_request_body() {
    let request = conversation();
    let body = to_value(responses::request_body(&request));
    assert_eq!(body["model"], "m");
    assert_eq!(body["instructions"], "be brief");
    assert_eq!(body["stream"], true);
    assert_eq!(body["store"], false);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["prompt_cache_key"], request.session_id.to_string());
    assert_eq!(body["max_output_tokens"], 1000);
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "name": "read_file", "description": "Read a file", "parameters": request.tools[0].schema, "strict": false})
    );
    assert_eq!(
        body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "read a.rs"}]},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "need file"}], "encrypted_content": "enc"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]},
            {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": "{\"path\":\"a.rs\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "no such file"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is missing."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "create it"}]},
        ])
    );
}

#[test]
fn chat_request_body() {
    let body = to_value(chat::request_body(&conversation(), true));
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], 1000);
    assert_eq!(body["tools"][0]["function"]["name"], "read_file");
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "read a.rs"},
            {"role": "assistant", "content": "Reading.", "reasoning_content": "need file", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.rs\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "no such file"},
            {"role": "assistant", "content": "It is missing."},
            {"role": "user", "content": "create it"},
        ])
    );
    let without = to_value(chat::request_body(&conversation(), false));
    assert!(without["messages"][2].get("reasoning_content").is_none());
}

#[test]
fn anthropic_request_body_with_cache_breakpoints() {
    let body = to_value(anthropic::request_body(&conversation()));
    assert_eq!(body["max_tokens"], 1000);
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(body["tools"][0]["input_schema"]["required"], json!(["path"]));
    assert_eq!(body["tools"][0]["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "read a.rs"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "need file", "signature": "sig"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "call_1", "name": "read_file", "input": {"path": "a.rs"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": [{"type": "text", "text": "no such file"}], "is_error": true},
            ]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "It is missing.", "cache_control": {"type": "ephemeral"}},
            ]},
            {"role": "user", "content": [
                {"type": "text", "text": "create it", "cache_control": {"type": "ephemeral"}},
            ]},
        ])
    );
}

#[test]
fn presets_honour_base_url_variables() {
    let env = |key: &str| match key {
        "OPENAI_BASE_URL" => Some("http://127.0.0.1:9/v1/".to_owned()),
        "ANTHROPIC_BASE_URL" => Some("http://127.0.0.1:8".to_owned()),
        _ => None,
    };
    let openai = ProviderConfig::preset("openai", &env).unwrap();
    assert_eq!(openai.endpoint(), "http://127.0.0.1:9/v1/responses");
    assert_eq!(openai.env_key.as_deref(), Some("OPENAI_API_KEY"));
    let chat = ProviderConfig::preset("openai-chat", &env).unwrap();
    assert_eq!(chat.endpoint(), "http://127.0.0.1:9/v1/chat/completions");
    let anthropic = ProviderConfig::preset("anthropic", &env).unwrap();
    assert_eq!(anthropic.endpoint(), "http://127.0.0.1:8/v1/messages");
    let ollama = ProviderConfig::preset("ollama", &|_| None).unwrap();
    assert_eq!(ollama.endpoint(), "http://localhost:11434/v1/chat/completions");
    assert_eq!(ollama.env_key, None);
    for id in crate::PRESET_IDS {
        assert!(ProviderConfig::preset(id, &|_| None).is_some(), "{id}");
    }
    assert!(ProviderConfig::preset("nope", &|_| None).is_none());
    let mut azure = ProviderConfig::new(
        "azure",
        "https://x.example/openai",
        WireApi::Responses,
        Some("AZURE_KEY"),
    );
    azure.query_params.insert("api-version".into(), "2025-04-01 preview".into());
    assert_eq!(
        azure.endpoint(),
        "https://x.example/openai/responses?api-version=2025-04-01%20preview"
    );
}

#[test]
fn a_missing_key_names_the_variable() {
    let config = ProviderConfig::preset("anthropic", &|_| None).unwrap();
    let err = client::HttpModelClient::new(config, &|_| Some("  ".into())).unwrap_err();
    assert_eq!(err.to_string(), "no API key for provider `anthropic`: set ANTHROPIC_API_KEY");
}

#[test]
fn catalog_lookup_by_prefix() {
    let gpt5 = crate::model_info("gpt-5-2025-08-07");
    assert!(gpt5.known && gpt5.reasoning);
    assert_eq!(gpt5.context_window, 400_000);
    assert_eq!(crate::model_info("gpt-5-mini").input_price, Some(0.25));
    let sonnet = crate::model_info("anthropic/claude-sonnet-4.5");
    assert!(sonnet.known);
    assert_eq!(sonnet.max_output_tokens, 64_000);
    assert_eq!(crate::model_info("gpt-4o-mini-2024-07-18").output_price, Some(0.60));
    let unknown = crate::model_info("llama3.2:3b");
    assert_eq!(unknown, crate::UNKNOWN_MODEL);
    let cost = gpt5
        .cost(&Usage {
            input_tokens: 1_000_000,
            cached_input_tokens: 500_000,
            output_tokens: 100_000,
            reasoning_output_tokens: 0,
        })
        .unwrap();
    assert!((cost - (0.625 + 0.0625 + 1.0)).abs() < 1e-9, "{cost}");
    assert_eq!(unknown.cost(&Usage::default()), None);
}

#[test]
fn token_estimates() {
    assert_eq!(codecoder_context::count_tokens(""), 0);
    let n = codecoder_context::count_tokens("The quick brown fox jumps over the lazy dog.");
    assert!((8..=12).contains(&n), "{n}");
}

#[test]
fn output_schema_goes_where_each_api_takes_it() {
    let schema =
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
    let mut request = conversation();
    request.output_schema = Some(schema.clone());
    let body = to_value(responses::request_body(&request));
    assert_eq!(
        body["text"]["format"],
        json!({"type": "json_schema", "name": "output", "schema": schema, "strict": false})
    );
    let body = to_value(chat::request_body(&request, false));
    assert_eq!(body["response_format"]["json_schema"]["schema"], schema);
    let body = to_value(anthropic::request_body(&request));
    assert!(body.get("response_format").is_none() && body.get("text").is_none());
    let plain = to_value(responses::request_body(&conversation()));
    assert!(plain.get("text").is_none());
}

fn effort(effort: ReasoningEffort) -> ReasoningSettings {
    ReasoningSettings { effort: Some(effort), ..ReasoningSettings::default() }
}

fn with(reasoning: ReasoningSettings) -> ModelRequest {
    ModelRequest { reasoning, ..conversation() }
}

#[test]
fn responses_body_carries_effort_and_summary() {
    let body = to_value(responses::request_body(&with(effort(ReasoningEffort::High))));
    assert_eq!(body["reasoning"], json!({"effort": "high", "summary": "auto"}));
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    let detailed = ReasoningSettings {
        summary: Some(ReasoningSummary::Detailed),
        ..effort(ReasoningEffort::Minimal)
    };
    let body = to_value(responses::request_body(&with(detailed)));
    assert_eq!(body["reasoning"], json!({"effort": "minimal", "summary": "detailed"}));
    let quiet =
        ReasoningSettings { summary: Some(ReasoningSummary::None), ..effort(ReasoningEffort::Low) };
    assert_eq!(
        to_value(responses::request_body(&with(quiet)))["reasoning"],
        json!({"effort": "low"})
    );
    let none = to_value(responses::request_body(&conversation()));
    assert!(none.get("reasoning").is_none());
}

#[test]
fn chat_body_carries_reasoning_effort() {
    let body = to_value(chat::request_body(&with(effort(ReasoningEffort::Medium)), false));
    assert_eq!(body["reasoning_effort"], "medium");
    let none = to_value(chat::request_body(&conversation(), false));
    assert!(none.get("reasoning_effort").is_none());
}

#[test]
fn anthropic_body_carries_a_thinking_budget_above_max_tokens() {
    let mut request = with(effort(ReasoningEffort::Medium));
    request.model = "claude-sonnet-4-5".into();
    request.max_output_tokens = Some(64_000);
    let body = to_value(anthropic::request_body(&request));
    assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 10_000}));
    assert_eq!(body["max_tokens"], 64_000);
    // A budget that does not fit under the cap raises max_tokens above it.
    request.max_output_tokens = Some(1000);
    request.reasoning =
        ReasoningSettings { budget_tokens: Some(5000), ..ReasoningSettings::default() };
    let body = to_value(anthropic::request_body(&request));
    assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 5000}));
    assert!(body["max_tokens"].as_u64().unwrap() > 5000);
    // Effort none sends no thinking.
    request.reasoning = effort(ReasoningEffort::None);
    let body = to_value(anthropic::request_body(&request));
    assert!(body.get("thinking").is_none());
    assert_eq!(body["max_tokens"], 1000);
}

#[test]
fn anthropic_body_uses_adaptive_thinking_where_the_model_has_it() {
    let mut request = with(effort(ReasoningEffort::XHigh));
    request.model = "claude-opus-4-6".into();
    let body = to_value(anthropic::request_body(&request));
    assert_eq!(body["thinking"], json!({"type": "adaptive"}));
    assert_eq!(body["output_config"], json!({"effort": "max"}));
    assert!(crate::adaptive_thinking("anthropic/claude-sonnet-4.6"));
    assert!(!crate::adaptive_thinking("claude-sonnet-4-5-20250929"));
}

#[test]
fn a_non_streaming_body_asks_for_no_stream() {
    let mut config = ProviderConfig::new("p", "http://x", WireApi::Chat, None);
    config.stream = false;
    let body: serde_json::Value =
        serde_json::from_slice(&client::encode_request(&config, &conversation()).unwrap()).unwrap();
    assert_eq!(body["stream"], false);
    assert!(body.get("stream_options").is_none());
}

fn whole_events(api: WireApi, answer: serde_json::Value) -> Vec<ResponseEvent> {
    let mut events = Vec::new();
    whole::parse(api, &answer.to_string(), &mut |event| events.push(event)).unwrap();
    events
}

#[test]
fn whole_answers_become_the_events_of_a_stream() {
    let chat = whole_events(
        WireApi::Chat,
        json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Reading.", "reasoning_content": "hmm",
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}}]
        }}], "usage": {"prompt_tokens": 10, "completion_tokens": 3}}),
    );
    assert_eq!(
        chat,
        vec![
            ResponseEvent::ReasoningDelta("hmm".into()),
            ResponseEvent::ReasoningDone { signature: None, encrypted_content: None },
            ResponseEvent::TextDelta("Reading.".into()),
            ResponseEvent::ToolCallStart { id: id("call_1"), name: "read_file".into() },
            ResponseEvent::ToolCallArgsDelta { id: id("call_1"), delta: r#"{"path":"a"}"#.into() },
            ResponseEvent::ToolCallDone { id: id("call_1") },
            ResponseEvent::Usage(Usage { input_tokens: 10, output_tokens: 3, ..Usage::default() }),
            ResponseEvent::Completed { stop_reason: StopReason::ToolUse },
        ]
    );
    let anthropic = whole_events(
        WireApi::Anthropic,
        json!({"type": "message", "stop_reason": "end_turn", "content": [
            {"type": "thinking", "thinking": "t", "signature": "SIG"},
            {"type": "redacted_thinking", "data": "RED"},
            {"type": "text", "text": "hi"}
        ], "usage": {"input_tokens": 5, "output_tokens": 2}}),
    );
    assert_eq!(anthropic[0], ResponseEvent::ReasoningDelta("t".into()));
    assert_eq!(
        anthropic[1],
        ResponseEvent::ReasoningDone { signature: Some("SIG".into()), encrypted_content: None }
    );
    assert_eq!(
        anthropic[2],
        ResponseEvent::ReasoningDone { signature: None, encrypted_content: Some("RED".into()) }
    );
    assert_eq!(anthropic[3], ResponseEvent::TextDelta("hi".into()));
    assert_eq!(
        anthropic.last(),
        Some(&ResponseEvent::Completed { stop_reason: StopReason::EndTurn })
    );
    let responses = whole_events(
        WireApi::Responses,
        json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": [
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}], "encrypted_content": "ENC"},
            {"type": "message", "content": [{"type": "output_text", "text": "part"}]}
        ]}),
    );
    assert_eq!(
        responses,
        vec![
            ResponseEvent::ReasoningDelta("plan".into()),
            ResponseEvent::ReasoningDone { signature: None, encrypted_content: Some("ENC".into()) },
            ResponseEvent::TextDelta("part".into()),
            ResponseEvent::Completed { stop_reason: StopReason::MaxTokens },
        ]
    );
    let failed = whole::parse(
        WireApi::Responses,
        &json!({"status": "failed", "error": {"code": "server_error", "message": "boom"}})
            .to_string(),
        &mut |_| {},
    );
    assert!(matches!(failed, Err(Error::Stream { .. })));
}

/// Two calls in one step, the first answered with an image: the image goes to the model after
/// both results, never between them.
fn images_between_results() -> ModelRequest {
    let call = |n: &str| ToolCall { id: id(n), name: "read_file".into(), args: json!({}) };
    let image =
        codecoder_protocol::Image { media_type: "image/png".into(), data_base64: "iVBO".into() };
    let with_image = ToolResult {
        tool_call_id: id("c1"),
        content: vec![
            codecoder_protocol::ContentItem::Text { text: "a picture".into() },
            codecoder_protocol::ContentItem::Image(image),
        ],
        status: ToolResultStatus::Success,
        exit: None,
    };
    ModelRequest {
        history: [
            Message::user_text("look"),
            Message::new(
                Role::Assistant,
                vec![MessageItem::ToolCall(call("c1")), MessageItem::ToolCall(call("c2"))],
            ),
            Message::new(Role::Tool, vec![MessageItem::ToolResult(with_image)]),
            Message::new(
                Role::Tool,
                vec![MessageItem::ToolResult(ToolResult::text(
                    id("c2"),
                    ToolResultStatus::Success,
                    "text",
                ))],
            ),
        ]
        .into_iter()
        .map(std::sync::Arc::new)
        .collect(),
        ..conversation()
    }
}

#[test]
fn a_tool_results_image_follows_every_result_of_its_step() {
    let chat = to_value(chat::request_body(&images_between_results(), false));
    let roles: Vec<&str> =
        chat["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "tool", "user"]);
    assert_eq!(chat["messages"][5]["content"][0]["type"], "image_url");
    assert_eq!(chat["messages"][5]["content"][0]["image_url"]["url"], "data:image/png;base64,iVBO");

    let responses = to_value(responses::request_body(&images_between_results()));
    let kinds: Vec<String> = responses["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let kind = item["type"].as_str().unwrap();
            item["role"].as_str().map_or(kind.to_owned(), |role| format!("{kind}:{role}"))
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "message:user",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output",
            "message:user"
        ]
    );
    assert_eq!(responses["input"][5]["content"][0]["type"], "input_image");
}

#[test]
fn a_404_names_the_endpoint_and_what_to_check() {
    let error = Error::Http {
        status: 404,
        error_type: None,
        message: "Not Found".into(),
        request_id: None,
        env_key: Some("OPENAI_API_KEY".into()),
        url: "http://127.0.0.1:9/v2/chat/completions".into(),
    };
    assert_eq!(
        error.to_string(),
        "HTTP 404 from http://127.0.0.1:9/v2/chat/completions: Not Found; check the provider's \
         base URL and the model name"
    );
}
