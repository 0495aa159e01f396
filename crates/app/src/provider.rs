//! The model provider of a session: a preset and/or `[model_providers.<id>]` of config.toml.

use codecoder_providers::{ProviderConfig, WireApi};

use crate::Runtime;
use crate::error::{Error, Result};

impl Runtime {
    /// The provider `id` as the configuration in effect here describes it (for encoding a
    /// logged request the way it was sent).
    ///
    /// # Errors
    /// `Usage` when no preset or `[model_providers.<id>]` defines it.
    pub fn provider_config(&self, id: &str) -> Result<ProviderConfig> {
        resolve_provider(id, &self.loaded.config)
    }
}

/// A provider from its preset and/or `[model_providers.<id>]`.
pub(crate) fn resolve_provider(
    id: &str,
    config: &codecoder_config::ConfigToml,
) -> Result<ProviderConfig> {
    let env = |key: &str| std::env::var(key).ok();
    let preset = ProviderConfig::preset(id, &env);
    let table = config.model_providers.get(id);
    let mut provider = match (preset, table) {
        (Some(mut preset), _) => {
            if let Some(url) = config.openai_base_url.as_ref().filter(|_| is_openai_preset(id)) {
                preset.base_url.clone_from(url);
            }
            preset
        }
        (None, Some(table)) => {
            let Some(base_url) = &table.base_url else {
                return Err(Error::usage(format!("[model_providers.{id}] needs base_url")));
            };
            ProviderConfig::new(id, base_url.clone(), WireApi::Chat, None)
        }
        (None, None) => {
            let mut known: Vec<String> =
                codecoder_providers::PRESET_IDS.iter().map(|s| (*s).to_owned()).collect();
            known.extend(config.model_providers.keys().cloned());
            return Err(Error::usage(format!(
                "unknown provider `{id}` (known: {})",
                known.join(", ")
            )));
        }
    };
    if let Some(table) = table {
        if let Some(name) = &table.name {
            provider.name.clone_from(name);
        }
        if let Some(base_url) = &table.base_url {
            provider.base_url.clone_from(base_url);
        }
        if let Some(wire_api) = table.wire_api {
            provider.wire_api = match wire_api {
                codecoder_config::WireApiToml::Responses => WireApi::Responses,
                codecoder_config::WireApiToml::Chat => WireApi::Chat,
                codecoder_config::WireApiToml::Anthropic => WireApi::Anthropic,
            };
        }
        if let Some(env_key) = &table.env_key {
            provider.env_key = Some(env_key.clone());
        }
        provider.http_headers.extend(table.http_headers.clone());
        provider.env_http_headers.extend(table.env_http_headers.clone());
        provider.query_params.extend(table.query_params.clone());
        if let Some(n) = table.request_max_retries {
            provider.request_max_retries = n;
        }
        if let Some(ms) = table.stream_idle_timeout_ms {
            provider.stream_idle_timeout_ms = ms;
        }
        if let Some(send) = table.send_reasoning_content {
            provider.send_reasoning_content = send;
        }
    }
    Ok(provider)
}

/// The presets that take OpenAI's key and `openai_base_url`.
pub(crate) fn is_openai_preset(id: &str) -> bool {
    matches!(id, "openai" | "openai-chat")
}
