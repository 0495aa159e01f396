//! `codecoder models`: what a provider serves, written into the writer the cli passes.
//!
//! A local or self-hosted provider is asked (its listing endpoint, with the provider's headers,
//! within `DISCOVERY_TIMEOUT`); a cloud preset is answered from the catalog without a request,
//! and the output says which. Each model shows the context window a session of it would use
//! where that is known (the configured one, else the listing's; for the configured model, what
//! the server reports for it), and the configured model is marked.

use std::io::Write;

use codecoder_providers::{DISCOVERY_TIMEOUT, ProviderConfig, ServedModel, WireApi};

use crate::Runtime;
use crate::error::{Error, Result};
use crate::session::{DEFAULT_MODEL, DEFAULT_PROVIDER};

/// Where a listing came from.
enum Source {
    Catalog,
    Server(String),
}

impl Runtime {
    /// Writes the models `provider` (default: the configured provider) serves, as lines or, with
    /// `json`, one JSON object.
    ///
    /// # Errors
    /// `Usage` for an unknown provider or a missing key; `ModelList` when the server does not
    /// answer or has no listing.
    pub fn write_models(
        &self,
        provider: Option<&str>,
        json: bool,
        out: &mut dyn Write,
    ) -> Result<()> {
        let config = &self.loaded.config;
        let provider_id = provider
            .map(str::to_owned)
            .or_else(|| self.overrides.provider.clone())
            .or_else(|| config.model_provider.clone())
            .unwrap_or_else(|| DEFAULT_PROVIDER.to_owned());
        let provider = crate::provider::resolve_provider(&provider_id, config)?;
        let model = self
            .overrides
            .model
            .clone()
            .or_else(|| config.model.clone())
            .unwrap_or_else(|| DEFAULT_MODEL.to_owned());
        let (source, mut models) = if codecoder_providers::is_cloud(&provider) {
            (Source::Catalog, catalog_listing(&provider))
        } else {
            let lookup =
                crate::provider::key_lookup(&self.home, &provider_id, provider.env_key.clone());
            let listed = codecoder_providers::list_models(&provider, &lookup, DISCOVERY_TIMEOUT)
                .map_err(|err| match err {
                    err @ codecoder_providers::Error::MissingApiKey { .. } => Error::usage(
                        format!("{err} (or run `codecoder login --provider {provider_id}`)"),
                    ),
                    source => Error::ModelList {
                        provider: provider_id.clone(),
                        url: listing_url(&provider),
                        cause: Box::new(source),
                    },
                })?;
            let mut models = listed.models;
            // The listing rarely says the configured model's window; its server may.
            if let Some(entry) =
                models.iter_mut().find(|entry| entry.id == model && entry.context_window.is_none())
            {
                entry.context_window = codecoder_providers::context_window(
                    &provider,
                    &lookup,
                    &model,
                    DISCOVERY_TIMEOUT,
                )
                .map(|window| window.tokens);
            }
            (Source::Server(listed.source), models)
        };
        for entry in &mut models {
            let own = config.models.get(&entry.id).and_then(|m| m.context_window);
            let general = config.model_context_window.filter(|_| entry.id == model);
            if let Some(window) = own.or(general) {
                entry.context_window = Some(window);
            }
        }
        if json {
            let listed: Vec<serde_json::Value> = models
                .iter()
                .map(|entry| {
                    serde_json::json!({
                        "id": entry.id,
                        "context_window": entry.context_window,
                        "default": entry.id == model,
                    })
                })
                .collect();
            let source = match &source {
                Source::Catalog => serde_json::Value::from("catalog"),
                Source::Server(url) => serde_json::Value::from(url.as_str()),
            };
            let document = serde_json::json!({
                "provider": provider_id,
                "source": source,
                "model": model,
                "models": listed,
            });
            writeln!(out, "{document}")?;
            return Ok(());
        }
        let from = match &source {
            Source::Catalog => "from the catalog (not asked over the network)".to_owned(),
            Source::Server(url) => format!("from {url}"),
        };
        writeln!(out, "models of provider `{provider_id}` ({}), {from}:", provider.name)?;
        if models.is_empty() {
            writeln!(out, "  (none)")?;
        }
        let width = models.iter().map(|entry| entry.id.len()).max().unwrap_or(0);
        for entry in &models {
            let marker = if entry.id == model { "*" } else { " " };
            let window = match entry.context_window {
                Some(tokens) => format!("context {tokens}"),
                None => "context unknown".to_owned(),
            };
            writeln!(out, "{marker} {:<width$}  {window}", entry.id)?;
        }
        if models.iter().any(|entry| entry.id == model) {
            writeln!(out, "* the configured model")?;
        } else if matches!(source, Source::Server(_)) {
            writeln!(
                out,
                "the configured model `{model}` is not among them: set `model` in config.toml or pass -m"
            )?;
        }
        // Some servers (llama-cpp-python) say no window at all; the session then assumes one.
        if matches!(source, Source::Server(_))
            && models.iter().any(|entry| entry.context_window.is_none())
        {
            writeln!(
                out,
                "a window the server does not report: set model_context_window (or [models.\"ID\"] context_window) in config.toml to the server's context size (llama-cpp-python: --n_ctx)"
            )?;
        }
        Ok(())
    }
}

/// The catalog's model families a cloud preset serves, with their windows.
fn catalog_listing(provider: &ProviderConfig) -> Vec<ServedModel> {
    let serves = |family: &str| match provider.id.as_str() {
        "anthropic" => family.starts_with("claude"),
        "deepseek" => family.starts_with("deepseek"),
        "openrouter" => true,
        _ if provider.wire_api == WireApi::Anthropic => family.starts_with("claude"),
        _ => !family.starts_with("claude") && !family.starts_with("deepseek"),
    };
    codecoder_providers::catalog_models()
        .filter(|family| serves(family))
        .map(|family| ServedModel {
            id: family.to_owned(),
            context_window: Some(codecoder_providers::model_info(family).context_window),
        })
        .collect()
}

/// The URL a provider's models are listed at, for errors.
fn listing_url(provider: &ProviderConfig) -> String {
    let root = codecoder_providers::server_root(&provider.base_url);
    match provider.id.as_str() {
        "ollama" => format!("{root}/api/tags"),
        "lmstudio" => format!("{root}/api/v0/models"),
        _ => format!("{}/models", provider.base_url.trim_end_matches('/')),
    }
}

/// A model a front-end's picker offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoice {
    /// The id sessions take (`SessionRequest::model`).
    pub id: String,
    /// Its context window, where known.
    pub context_window: Option<u64>,
    /// Whether it takes a reasoning effort.
    pub reasoning: bool,
}

/// What a picker shows without asking a server: the configured model and effort, and the
/// models of the configured provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoices {
    /// The provider id.
    pub provider: String,
    /// The model a session that names none runs with.
    pub model: String,
    /// The configured reasoning effort, if any.
    pub reasoning_effort: Option<String>,
    /// The configured model first, then the catalog's models of the provider (a cloud preset's;
    /// a local server is not asked, so only the configured model is offered for it).
    pub models: Vec<ModelChoice>,
}

impl Runtime {
    /// The models a front-end's picker offers (`model/list`), from the configuration and the
    /// catalog only: no request is sent.
    pub fn model_choices(&self) -> ModelChoices {
        let config = &self.loaded.config;
        let provider_id = self
            .overrides
            .provider
            .clone()
            .or_else(|| config.model_provider.clone())
            .unwrap_or_else(|| DEFAULT_PROVIDER.to_owned());
        let model = self
            .overrides
            .model
            .clone()
            .or_else(|| config.model.clone())
            .unwrap_or_else(|| DEFAULT_MODEL.to_owned());
        let choice = |id: &str| {
            let info = codecoder_providers::model_info(id);
            let own = config.models.get(id).and_then(|m| m.context_window);
            ModelChoice {
                id: id.to_owned(),
                context_window: own.or(info.known.then_some(info.context_window)),
                reasoning: info.reasoning,
            }
        };
        let mut models = vec![choice(&model)];
        if let Ok(provider) = crate::provider::resolve_provider(&provider_id, config)
            && codecoder_providers::is_cloud(&provider)
        {
            models.extend(
                catalog_listing(&provider)
                    .iter()
                    .filter(|entry| entry.id != model)
                    .map(|entry| choice(&entry.id)),
            );
        }
        ModelChoices {
            provider: provider_id,
            model,
            reasoning_effort: config.model_reasoning_effort.map(|e| e.as_str().to_owned()),
            models,
        }
    }
}
