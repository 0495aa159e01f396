//! Provider configuration (`[model_providers.<id>]` in config.toml) and the built-in presets.
//!
//! A provider is a base URL, a wire API, and how to authenticate. Presets cover OpenAI
//! (Responses and Chat Completions), Anthropic, DeepSeek, OpenRouter, Ollama and LM Studio; any
//! OpenAI-compatible server works as `wire_api = "chat"`. The environment is passed in as a
//! function so tests never touch the process environment. Invariant: a `ProviderConfig` holds
//! the *name* of the variable that holds the key, never the key.

use std::collections::BTreeMap;

use codecoder_protocol::env;

pub use codecoder_protocol::{ToolCallFormat, WireApi};

/// One configured model provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    /// The id it is selected by (`openai`, `anthropic`, `my-vllm`).
    pub id: String,
    /// A display name.
    pub name: String,
    /// The API root, without the endpoint path (`https://api.openai.com/v1`,
    /// `https://api.anthropic.com`).
    pub base_url: String,
    /// The wire format.
    pub wire_api: WireApi,
    /// The environment variable holding the API key; `None` for servers without keys.
    pub env_key: Option<String>,
    /// Extra headers sent as they are.
    pub http_headers: BTreeMap<String, String>,
    /// Extra headers whose values come from environment variables (header → variable).
    pub env_http_headers: BTreeMap<String, String>,
    /// Extra query parameters (e.g. `api-version` for Azure).
    pub query_params: BTreeMap<String, String>,
    /// Retries after the first attempt, for 408/409/429/5xx/529 and connection failures.
    pub request_max_retries: u32,
    /// How long a stream may go without a byte before it counts as broken.
    pub stream_idle_timeout_ms: u64,
    /// Chat Completions only: send earlier reasoning back as `reasoning_content`.
    pub send_reasoning_content: bool,
    /// Stream responses (`"stream": true`). `false` sends one request and reads one JSON
    /// answer, for servers that cannot stream (or cannot stream tool calls).
    pub stream: bool,
    /// Chat Completions only: the form in which the model writes tool calls into its text, for
    /// servers that pass them on as text; `Off` reads text as text. The Responses and Anthropic
    /// APIs carry tool calls as their own items and ignore it.
    pub tool_call_format: ToolCallFormat,
}

/// The default number of retries.
pub const DEFAULT_MAX_RETRIES: u32 = 4;
/// The default idle timeout of a stream: 300 s.
pub const DEFAULT_STREAM_IDLE_TIMEOUT_MS: u64 = 300_000;

/// The ids of the built-in presets.
pub const PRESET_IDS: &[&str] =
    &["openai", "openai-chat", "anthropic", "deepseek", "openrouter", "ollama", "lmstudio"];

impl ProviderConfig {
    /// A provider with default retry and timeout settings and no extra headers.
    pub fn new(
        id: impl Into<String>,
        base_url: impl Into<String>,
        wire_api: WireApi,
        env_key: Option<&str>,
    ) -> Self {
        let id = id.into();
        Self {
            name: id.clone(),
            id,
            base_url: base_url.into(),
            wire_api,
            env_key: env_key.map(str::to_owned),
            http_headers: BTreeMap::new(),
            env_http_headers: BTreeMap::new(),
            query_params: BTreeMap::new(),
            request_max_retries: DEFAULT_MAX_RETRIES,
            stream_idle_timeout_ms: DEFAULT_STREAM_IDLE_TIMEOUT_MS,
            send_reasoning_content: false,
            stream: true,
            tool_call_format: ToolCallFormat::Off,
        }
    }

    /// A built-in preset, with `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` honoured.
    pub fn preset(id: &str, env: &dyn Fn(&str) -> Option<String>) -> Option<Self> {
        let non_empty = |key: &str| env(key).filter(|v| !v.trim().is_empty());
        let openai_base = || {
            non_empty(env::OPENAI_BASE_URL).unwrap_or_else(|| "https://api.openai.com/v1".into())
        };
        let mut config = match id {
            "openai" => Self::new(id, openai_base(), WireApi::Responses, Some(env::OPENAI_API_KEY)),
            "openai-chat" => Self::new(id, openai_base(), WireApi::Chat, Some(env::OPENAI_API_KEY)),
            "anthropic" => Self::new(
                id,
                non_empty(env::ANTHROPIC_BASE_URL)
                    .unwrap_or_else(|| "https://api.anthropic.com".into()),
                WireApi::Anthropic,
                Some(env::ANTHROPIC_API_KEY),
            ),
            "deepseek" => {
                let mut c = Self::new(
                    id,
                    "https://api.deepseek.com/v1",
                    WireApi::Chat,
                    Some(env::DEEPSEEK_API_KEY),
                );
                // DeepSeek's thinking-with-tools mode wants reasoning back within a turn.
                c.send_reasoning_content = true;
                c
            }
            "openrouter" => Self::new(
                id,
                "https://openrouter.ai/api/v1",
                WireApi::Chat,
                Some(env::OPENROUTER_API_KEY),
            ),
            "ollama" => Self::new(id, "http://localhost:11434/v1", WireApi::Chat, None),
            "lmstudio" => Self::new(id, "http://localhost:1234/v1", WireApi::Chat, None),
            _ => return None,
        };
        config.name = match id {
            "openai" => "OpenAI",
            "openai-chat" => "OpenAI (Chat Completions)",
            "anthropic" => "Anthropic",
            "deepseek" => "DeepSeek",
            "openrouter" => "OpenRouter",
            "ollama" => "Ollama",
            _ => "LM Studio",
        }
        .to_owned();
        Some(config)
    }

    /// The full URL of the streaming endpoint, with query parameters.
    pub fn endpoint(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        let path = match self.wire_api {
            WireApi::Responses => "/responses",
            WireApi::Chat => "/chat/completions",
            WireApi::Anthropic => "/v1/messages",
        };
        let mut url = format!("{base}{path}");
        for (i, (key, value)) in self.query_params.iter().enumerate() {
            url.push(if i == 0 && !url.contains('?') { '?' } else { '&' });
            url.push_str(&percent_encode(key));
            url.push('=');
            url.push_str(&percent_encode(value));
        }
        url
    }
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
