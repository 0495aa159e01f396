//! The messages a person reads when a request fails: each names the server, the model and
//! what to change; and which failures count as a server that cannot stream.

use super::{Error, Server, Unreachable};

fn server(id: &str, name: &str, base_url: &str) -> Server {
    Server { id: id.into(), name: name.into(), base_url: base_url.into() }
}

fn http(status: u16, error_type: Option<&str>, message: &str) -> Error {
    Error::Http {
        status,
        error_type: error_type.map(str::to_owned),
        message: message.into(),
        request_id: None,
        env_key: None,
        url: "http://127.0.0.1:8080/v1/chat/completions".into(),
    }
}

#[test]
fn an_unreachable_ollama_says_how_to_start_it() {
    let error = Error::Unreachable {
        server: Box::new(server("ollama", "Ollama", "http://localhost:11434/v1")),
        reason: Unreachable::Refused,
    };
    assert_eq!(
        error.to_string(),
        "cannot reach Ollama at http://localhost:11434/v1 (connection refused): is the server \
         running? start it with `ollama serve`, or set base_url in [model_providers.ollama]"
    );
    assert!(!error.is_retryable(), "refused on this machine fails at once");
}

#[test]
fn an_unreachable_server_gets_a_hint_by_preset_and_place() {
    let lmstudio = Error::Unreachable {
        server: Box::new(server("lmstudio", "LM Studio", "http://localhost:1234/v1")),
        reason: Unreachable::Refused,
    };
    assert!(lmstudio.to_string().contains("`lms server start`"), "{lmstudio}");
    let local = Error::Unreachable {
        server: Box::new(server("local", "local", "http://127.0.0.1:9/v1")),
        reason: Unreachable::Refused,
    };
    assert_eq!(
        local.to_string(),
        "cannot reach local at http://127.0.0.1:9/v1 (connection refused): is the server \
         running? start it, or set base_url in [model_providers.local]"
    );
    let remote = Error::Unreachable {
        server: Box::new(server("vllm", "vllm", "http://gpu-box.example:8000/v1")),
        reason: Unreachable::HostNotFound,
    };
    assert_eq!(
        remote.to_string(),
        "cannot reach vllm at http://gpu-box.example:8000/v1 (host not found): check the \
         network connection, or set base_url in [model_providers.vllm]"
    );
    assert!(remote.is_retryable(), "a remote host may come back");
    let refused_remote = Error::Unreachable {
        server: Box::new(server("vllm", "vllm", "http://10.0.0.5:8000/v1")),
        reason: Unreachable::Refused,
    };
    assert!(refused_remote.is_retryable());
}

#[test]
fn loopback_hosts_are_recognised() {
    for url in [
        "http://localhost:11434/v1",
        "http://127.0.0.1:9",
        "http://[::1]:8080/v1",
        "https://user@LOCALHOST/v1",
    ] {
        assert!(server("x", "x", url).is_loopback(), "{url}");
    }
    for url in ["https://api.openai.com/v1", "http://10.0.0.5:8000", "http://127.example.com"] {
        assert!(!server("x", "x", url).is_loopback(), "{url}");
    }
}

#[test]
fn a_missing_model_is_named_with_how_to_get_it() {
    let ollama = server("ollama", "Ollama", "http://localhost:11434/v1");
    let error = http(404, Some("api_error"), "model \"qwen3:8b\" not found, try pulling it first")
        .classify(&ollama, "qwen3:8b");
    assert_eq!(
        error.to_string(),
        "Ollama at http://localhost:11434/v1 does not have model `qwen3:8b` (model \"qwen3:8b\" \
         not found, try pulling it first): pull it with `ollama pull qwen3:8b`, or pick a model \
         it serves (`codecoder models --provider ollama` lists them) with --model or `model` in \
         config.toml"
    );
    assert!(!error.is_retryable());
    assert!(!error.may_be_streaming(), "unstreamed it would be missing too");

    let vllm = server("vllm", "vllm", "http://gpu:8000/v1");
    for (status, error_type, message) in [
        (
            404,
            Some("model_not_found"),
            "The model `gpt-9` does not exist or you do not have access to it.",
        ),
        (400, None, "The model `gpt-9` does not exist."),
        (404, Some("not_found_error"), "model: gpt-9"),
    ] {
        let error = http(status, error_type, message).classify(&vllm, "gpt-9");
        assert!(matches!(error, Error::ModelNotFound { .. }), "{message}: {error:?}");
        assert!(error.to_string().contains("`codecoder models --provider vllm`"), "{error}");
    }
    // A wrong path is not a missing model.
    let error = http(404, None, "404 page not found").classify(&vllm, "gpt-9");
    assert!(matches!(error, Error::Http { status: 404, .. }), "{error:?}");
}

#[test]
fn a_context_overflow_keeps_the_servers_words_and_says_what_to_change() {
    let local = server("local", "llama.cpp", "http://127.0.0.1:8080/v1");
    let error = http(
        400,
        Some("exceed_context_size_error"),
        "the request exceeds the available context size, try increasing it",
    )
    .classify(&local, "smollm2");
    assert_eq!(
        error.to_string(),
        "the request does not fit the context of model `smollm2` at llama.cpp \
         (http://127.0.0.1:8080/v1): the request exceeds the available context size, try \
         increasing it; raise the server's context size (llama.cpp: -c/--ctx-size; \
         llama-cpp-python: --n_ctx; vLLM: --max-model-len), or set context_window in \
         [models.\"smollm2\"] so compaction starts earlier, or compact the session (/compact, \
         `codecoder sessions compact`)"
    );
    assert!(error.is_context_overflow());
    assert!(!error.is_retryable(), "the same request overflows again");
    // An OpenAI-style message ends with a period; the advice does not follow it with a colon.
    let openai_words = http(
        400,
        Some("invalid_request_error"),
        "This model's maximum context length is 4096 tokens. However, your messages resulted in \
         5000 tokens.",
    )
    .classify(&local, "smollm2");
    assert!(
        openai_words.to_string().contains("resulted in 5000 tokens; raise the server's"),
        "{openai_words}"
    );
    assert!(!error.may_be_streaming());

    let ollama = server("ollama", "Ollama", "http://localhost:11434/v1");
    let anthropic = server("anthropic", "Anthropic", "https://api.anthropic.com");
    for (server, status, error_type, message) in [
        (&local, 400, None, "Requested tokens (5000) exceed context window of 2048"),
        (&local, 500, None, "Requested tokens (5000) exceed context window of 2048"),
        (
            &local,
            400,
            Some("context_length_exceeded"),
            "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.",
        ),
        (&ollama, 400, None, "the input length exceeds the context length"),
        (
            &anthropic,
            400,
            Some("invalid_request_error"),
            "prompt is too long: 210000 tokens > 200000 maximum",
        ),
    ] {
        let error = http(status, error_type, message).classify(server, "m");
        assert!(error.is_context_overflow(), "{message}: {error:?}");
        let text = error.to_string();
        assert!(text.contains(message.trim_end_matches('.')) && text.contains("`m`"), "{text}");
    }
    let text = http(400, None, "the input length exceeds the context length")
        .classify(&ollama, "m")
        .to_string();
    assert!(text.contains("OLLAMA_CONTEXT_LENGTH"), "{text}");
    let text = http(400, None, "prompt is too long: 210000 tokens > 200000 maximum")
        .classify(&anthropic, "m")
        .to_string();
    assert!(!text.contains("ctx-size"), "a hosted server's context cannot be raised: {text}");

    // In a stream's error event too.
    let error = Error::Stream {
        error_type: Some("invalid_request_error".into()),
        message: "prompt is too long: 300000 tokens > 200000 maximum".into(),
    }
    .classify(&anthropic, "claude-sonnet-4-5");
    assert!(error.is_context_overflow(), "{error:?}");
}

#[test]
fn rate_limits_and_auth_are_not_reclassified() {
    let local = server("local", "local", "http://127.0.0.1:8080/v1");
    let error =
        http(429, None, "too many tokens per minute for this context window").classify(&local, "m");
    assert!(matches!(error, Error::Http { status: 429, .. }), "{error:?}");
    let error =
        http(401, None, "model access denied: model not found for this key").classify(&local, "m");
    assert!(matches!(error, Error::Http { status: 401, .. }), "{error:?}");
}

#[test]
fn which_failures_may_be_a_server_that_cannot_stream() {
    for status in [400, 405, 422, 500, 501, 503] {
        assert!(http(status, None, "anything at all").may_be_streaming(), "{status}");
    }
    for status in [401, 403, 404, 429] {
        assert!(!http(status, None, "anything at all").may_be_streaming(), "{status}");
    }
    assert!(
        Error::Connection { message: "the stream ended before [DONE]".into() }.may_be_streaming()
    );
    assert!(Error::Stream { error_type: None, message: "boom".into() }.may_be_streaming());
    let unreachable = Error::Unreachable {
        server: Box::new(server("local", "local", "http://127.0.0.1:9")),
        reason: Unreachable::Refused,
    };
    assert!(!unreachable.may_be_streaming());
}

#[test]
fn a_failed_fallback_names_both_failures() {
    let error = Error::UnstreamedAlsoFailed {
        streamed: Box::new(http(500, None, "stream broke")),
        unstreamed: Box::new(http(500, None, "still broken")),
    };
    assert_eq!(
        error.to_string(),
        "HTTP 500: stream broke; sent again without streaming, it failed too: HTTP 500: still \
         broken"
    );
    assert!(error.is_retryable(), "the streamed form's retry policy applies");
}
