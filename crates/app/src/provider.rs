//! The model provider of a session: a preset and/or `[model_providers.<id>]` of config.toml.

use codecoder_providers::{ProviderConfig, ReasoningEffort, ReasoningSettings, WireApi};

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

/// How a provider's key and header variables are read: the environment first; the provider's
/// key variable then falls back to the key stored by `codecoder login` and, for the OpenAI
/// presets, `CODEX_API_KEY`.
pub(crate) fn key_lookup(
    home: &std::path::Path,
    provider_id: &str,
    env_key: Option<String>,
) -> impl Fn(&str) -> Option<String> {
    let home = home.to_owned();
    let provider_id = provider_id.to_owned();
    move |key: &str| {
        let non_empty = |key: &str| std::env::var(key).ok().filter(|v| !v.trim().is_empty());
        non_empty(key).or_else(|| {
            if Some(key) != env_key.as_deref() {
                return None;
            }
            codecoder_config::load_credential(&home, &provider_id).or_else(|| {
                // codex's SDK hands `codex exec` its key in CODEX_API_KEY.
                (key == codecoder_protocol::env::OPENAI_API_KEY && is_openai_preset(&provider_id))
                    .then(|| non_empty(codecoder_protocol::env::CODEX_API_KEY))
                    .flatten()
            })
        })
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
            provider.wire_api = wire_api;
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
        if let Some(stream) = table.stream {
            provider.stream = stream;
        }
        if let Some(format) = table.tool_call_format {
            provider.tool_call_format = format;
        }
    }
    Ok(provider)
}

/// The presets that take OpenAI's key and `openai_base_url`.
pub(crate) fn is_openai_preset(id: &str) -> bool {
    matches!(id, "openai" | "openai-chat")
}

/// The reasoning settings of `model`'s requests from config (`model_reasoning_effort`,
/// `model_reasoning_summary`, `model_reasoning_budget_tokens`), with `effort` (a front-end's
/// choice) over config's, and a warning for the person when there is one. Settings for a model
/// the catalog (or `[models.X] reasoning`) says does not reason are left out, and the warning
/// says so; a model the catalog does not know gets them as set (the person knows their server).
///
/// # Errors
/// `Usage` when `effort` is not an effort's name.
pub(crate) fn reasoning_settings(
    config: &codecoder_config::ConfigToml,
    model: &str,
    effort: Option<&str>,
) -> Result<(ReasoningSettings, Option<String>)> {
    let effort = match effort {
        Some(name) => Some(name.parse::<ReasoningEffort>().map_err(Error::usage)?),
        None => config.model_reasoning_effort,
    };
    let settings = ReasoningSettings {
        effort,
        summary: config.model_reasoning_summary,
        budget_tokens: config.model_reasoning_budget_tokens,
    };
    if settings.is_empty() {
        return Ok((settings, None));
    }
    let info = codecoder_providers::model_info(model);
    let reasons =
        config.models.get(model).and_then(|m| m.reasoning).unwrap_or(info.reasoning || !info.known);
    if !reasons {
        return Ok((
            ReasoningSettings::default(),
            Some(format!(
                "model `{model}` does not reason: the reasoning settings (model_reasoning_*) are not sent (set [models.\"{model}\"] reasoning = true if it does)"
            )),
        ));
    }
    Ok((settings, None))
}
