//! What a provider's server says about the models it serves: their ids and context windows.
//!
//! Local and self-hosted servers know the window they were started with, which no catalog can:
//! llama.cpp's server (`GET /props` → `default_generation_settings.n_ctx`, and `meta.n_ctx_train`
//! on `/v1/models`), vLLM (`max_model_len` on `/v1/models`), LM Studio (`GET /api/v0/models`,
//! `loaded_context_length` else `max_context_length`) and Ollama (`POST /api/show`, `GET
//! /api/ps`, `GET /api/tags`). The `ollama` and `lmstudio` presets are asked through their own
//! API; any other provider is probed in turn (`/props`, `{base_url}/models`, `/api/v0/models`,
//! `/api/show`) until one says a window. Cloud providers are never asked: their catalog entry is
//! the answer.
//!
//! Ollama's window over its OpenAI-compatible API is not the model's trained length: it is the
//! Modelfile's `num_ctx` when set, else the window the server loaded the model with (`/api/ps`
//! `context_length`, which reflects `OLLAMA_CONTEXT_LENGTH` and the VRAM-based default), else
//! Ollama's documented default for small machines, 4096 tokens; never more than the model's
//! `<arch>.context_length`.
//!
//! Invariants: every request is synchronous, and all the requests of one discovery together
//! take at most the caller's timeout (connect included), carries the provider's own headers (its key included) and never fails a
//! session: `context_window` answers `None` for anything it cannot read. The key never appears
//! in an error (`scrub`).

use std::io::Read;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::client::request_headers;
use crate::config::{ProviderConfig, WireApi};
use crate::error::{Error, scrub};

/// How long one discovery may take, all its requests and connections included.
pub const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(2);
/// How much of a discovery answer is read.
const BODY_LIMIT: u64 = 4 * 1024 * 1024;
/// Ollama's context window when neither the Modelfile nor the loaded model says one: its
/// documented default under 24 GiB of VRAM.
pub const OLLAMA_DEFAULT_CONTEXT: u64 = 4096;

/// The presets whose models the catalog describes; their servers are not asked.
const CLOUD_PRESETS: &[&str] = &["openai", "openai-chat", "anthropic", "deepseek", "openrouter"];

/// A model a server serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedModel {
    /// The id requests name it by.
    pub id: String,
    /// Its context window in tokens, when the listing says it.
    pub context_window: Option<u64>,
}

/// The models a server listed, and the URL that listed them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelList {
    /// The URL asked (`http://localhost:11434/api/tags`).
    pub source: String,
    /// The models, in the server's order.
    pub models: Vec<ServedModel>,
}

/// A context window a server reported, and the URL that reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerWindow {
    /// The window in tokens.
    pub tokens: u64,
    /// The URL whose answer gave it.
    pub source: String,
}

/// Which server software a provider is, as far as discovery needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerKind {
    Ollama,
    LmStudio,
    /// llama.cpp, vLLM or any other OpenAI-compatible server: probed.
    Compatible,
}

/// The hosts of the cloud presets' APIs (and Azure OpenAI's): a provider table pointing at one
/// is a cloud provider whatever its id.
const CLOUD_HOSTS: &[&str] = &[
    "api.openai.com",
    "openai.azure.com",
    "api.anthropic.com",
    "api.deepseek.com",
    "openrouter.ai",
];

/// Whether `config` is a cloud provider (a cloud preset, the Anthropic API, or a table whose
/// base URL is a cloud preset's host), whose models come from the catalog without a request.
pub fn is_cloud(config: &ProviderConfig) -> bool {
    let host = config
        .base_url
        .split_once("://")
        .map_or(config.base_url.as_str(), |(_, rest)| rest)
        .split(['/', ':'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    CLOUD_PRESETS.contains(&config.id.as_str())
        || config.wire_api == WireApi::Anthropic
        || CLOUD_HOSTS.iter().any(|cloud| host == *cloud || host.ends_with(&format!(".{cloud}")))
}

fn kind(config: &ProviderConfig) -> ServerKind {
    match config.id.as_str() {
        "ollama" => ServerKind::Ollama,
        "lmstudio" => ServerKind::LmStudio,
        _ => ServerKind::Compatible,
    }
}

/// The server's root: the base URL without a trailing `/v1` (llama.cpp's `/props` and Ollama's
/// `/api/*` live there).
pub fn server_root(base_url: &str) -> &str {
    let base = base_url.trim_end_matches('/');
    base.strip_suffix("/v1").unwrap_or(base)
}

/// A synchronous client for one provider's discovery endpoints.
struct Prober {
    agent: ureq::Agent,
    headers: Vec<(String, String)>,
    api_key: Option<String>,
    base: String,
    root: String,
    /// Set once a connection failed: the later requests of the same discovery fail at once,
    /// so a server that is not there costs one timeout, not one per endpoint.
    unreachable: std::cell::Cell<bool>,
    /// When the discovery's time is up: each request gets what is left.
    deadline: Instant,
}

impl Prober {
    fn new(
        config: &ProviderConfig,
        env: &dyn Fn(&str) -> Option<String>,
        timeout: Duration,
    ) -> Result<Self, Error> {
        let (headers, api_key) = request_headers(config, env)?;
        let agent_config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(timeout))
            .timeout_global(Some(timeout))
            .build();
        let base = config.base_url.trim_end_matches('/').to_owned();
        Ok(Self {
            agent: ureq::Agent::new_with_config(agent_config),
            headers,
            api_key,
            root: server_root(&base).to_owned(),
            base,
            unreachable: std::cell::Cell::new(false),
            deadline: Instant::now() + timeout,
        })
    }

    /// `GET url` (or `POST` with `body`) read as JSON; a status other than 2xx is an error.
    fn json(&self, url: &str, body: Option<&Value>) -> Result<Value, Error> {
        let scrubbed = |text: &str| scrub(text, self.api_key.as_deref());
        let left = self.deadline.saturating_duration_since(Instant::now());
        if self.unreachable.get() || left.is_zero() {
            return Err(Error::Connection {
                message: format!("{} did not answer in time", scrubbed(url)),
            });
        }
        let response = match body {
            Some(body) => {
                let mut builder = self.agent.post(url).config().timeout_global(Some(left)).build();
                for (name, value) in &self.headers {
                    builder = builder.header(name.as_str(), value.as_str());
                }
                builder.header("accept", "application/json").send(body.to_string().as_bytes())
            }
            None => {
                let mut builder = self.agent.get(url).config().timeout_global(Some(left)).build();
                for (name, value) in &self.headers {
                    if name != "content-type" {
                        builder = builder.header(name.as_str(), value.as_str());
                    }
                }
                builder.header("accept", "application/json").call()
            }
        };
        let response = response.map_err(|err| {
            self.unreachable.set(true);
            Error::Connection { message: scrubbed(&err.to_string()) }
        })?;
        let status = response.status().as_u16();
        let mut text = String::new();
        response
            .into_body()
            .into_reader()
            .take(BODY_LIMIT)
            .read_to_string(&mut text)
            .map_err(|err| Error::Connection { message: scrubbed(&err.to_string()) })?;
        if !(200..300).contains(&status) {
            let message: String = text.chars().take(300).collect();
            return Err(Error::Http {
                status,
                error_type: None,
                message: scrubbed(message.trim()),
                request_id: None,
                env_key: None,
                url: scrubbed(url).into(),
            });
        }
        serde_json::from_str(&text).map_err(|err| Error::Protocol {
            message: format!("{} did not answer JSON: {err}", scrubbed(url)),
        })
    }

    fn window_from(
        &self,
        url: String,
        body: Option<&Value>,
        read: impl Fn(&Value) -> Option<u64>,
    ) -> Option<ServerWindow> {
        let answer = self.json(&url, body).ok()?;
        read(&answer)
            .filter(|tokens| *tokens > 0)
            .map(|tokens| ServerWindow { tokens, source: url })
    }

    fn ollama_window(&self, model: &str) -> Option<ServerWindow> {
        let url = format!("{}/api/show", self.root);
        let show = self.json(&url, Some(&serde_json::json!({ "model": model }))).ok()?;
        let ps_url = format!("{}/api/ps", self.root);
        let loaded = match ollama_num_ctx(&show) {
            Some(_) => None,
            None => self.json(&ps_url, None).ok().and_then(|ps| ollama_loaded_context(&ps, model)),
        };
        let source = if loaded.is_some() { ps_url } else { url };
        let tokens = ollama_window(&show, loaded);
        Some(ServerWindow { tokens, source })
    }

    fn lmstudio_window(&self, model: &str) -> Option<ServerWindow> {
        self.window_from(format!("{}/api/v0/models", self.root), None, |answer| {
            parse_model_list(answer).into_iter().find(|m| m.id == model)?.context_window
        })
    }

    fn compatible_window(&self, model: &str) -> Option<ServerWindow> {
        self.window_from(format!("{}/props", self.root), None, parse_props)
            .or_else(|| {
                self.window_from(format!("{}/models", self.base), None, |answer| {
                    parse_model_list(answer).into_iter().find(|m| m.id == model)?.context_window
                })
            })
            .or_else(|| self.lmstudio_window(model))
            // Ollama under an id of its own: its own API says what its `/v1` does not.
            .or_else(|| self.ollama_window(model))
    }
}

/// The context window the server of `config` reports for `model`, or `None` when it is a cloud
/// preset, does not answer within `timeout`, or does not say. Never an error: a session runs on
/// the catalog's window without it.
pub fn context_window(
    config: &ProviderConfig,
    env: &dyn Fn(&str) -> Option<String>,
    model: &str,
    timeout: Duration,
) -> Option<ServerWindow> {
    if is_cloud(config) {
        return None;
    }
    let prober = Prober::new(config, env, timeout).ok()?;
    match kind(config) {
        ServerKind::Ollama => prober.ollama_window(model),
        ServerKind::LmStudio => {
            prober.lmstudio_window(model).or_else(|| prober.compatible_window(model))
        }
        ServerKind::Compatible => prober.compatible_window(model),
    }
}

/// The models the server of `config` serves (Ollama: `/api/tags`; LM Studio: `/api/v0/models`;
/// others: `{base_url}/models`, with llama.cpp's `/props` window on its one model). Cloud
/// presets are not asked: the caller lists the catalog.
pub fn list_models(
    config: &ProviderConfig,
    env: &dyn Fn(&str) -> Option<String>,
    timeout: Duration,
) -> Result<ModelList, Error> {
    let prober = Prober::new(config, env, timeout)?;
    match kind(config) {
        ServerKind::Ollama => {
            let source = format!("{}/api/tags", prober.root);
            let answer = prober.json(&source, None)?;
            Ok(ModelList { models: parse_ollama_tags(&answer), source })
        }
        ServerKind::LmStudio => {
            let source = format!("{}/api/v0/models", prober.root);
            match prober.json(&source, None) {
                Ok(answer) => Ok(ModelList { models: parse_model_list(&answer), source }),
                Err(_) => compatible_list(&prober),
            }
        }
        ServerKind::Compatible => compatible_list(&prober),
    }
}

fn compatible_list(prober: &Prober) -> Result<ModelList, Error> {
    let source = format!("{}/models", prober.base);
    let answer = prober.json(&source, None)?;
    let mut models = parse_model_list(&answer);
    // llama.cpp's server serves one model, whose running window `/props` says (the listing's
    // `n_ctx_train` is what it was trained with, which the server may not have allocated).
    if let [only] = models.as_mut_slice()
        && let Some(window) =
            prober.window_from(format!("{}/props", prober.root), None, parse_props)
    {
        only.context_window = Some(window.tokens);
    }
    Ok(ModelList { models, source })
}

fn as_tokens(value: Option<&Value>) -> Option<u64> {
    let value = value?;
    value.as_u64().or_else(|| value.as_f64().filter(|v| *v >= 1.0).map(|v| v as u64))
}

/// llama.cpp's `GET /props`: `default_generation_settings.n_ctx` (older builds: a top-level
/// `n_ctx`).
pub(crate) fn parse_props(answer: &Value) -> Option<u64> {
    as_tokens(answer.pointer("/default_generation_settings/n_ctx"))
        .or_else(|| as_tokens(answer.get("n_ctx")))
        .filter(|n| *n > 0)
}

/// An OpenAI-shaped listing (`{"data": [{"id": …}]}`, or LM Studio's and Ollama's own
/// `models`/`data` arrays) with whatever window each entry says: vLLM's `max_model_len`, LM
/// Studio's `loaded_context_length` then `max_context_length`, a `context_length`, llama.cpp's
/// `meta.n_ctx_train`.
pub(crate) fn parse_model_list(answer: &Value) -> Vec<ServedModel> {
    let entries = answer
        .get("data")
        .or_else(|| answer.get("models"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    entries
        .iter()
        .filter_map(|entry| {
            let id = entry.get("id").or_else(|| entry.get("model"))?.as_str()?.to_owned();
            let context_window = [
                "/max_model_len",
                "/loaded_context_length",
                "/max_context_length",
                "/context_length",
                "/meta/n_ctx",
                "/meta/n_ctx_train",
            ]
            .iter()
            .find_map(|pointer| as_tokens(entry.pointer(pointer)).filter(|n| *n > 0));
            Some(ServedModel { id, context_window })
        })
        .collect()
}

/// Ollama's `GET /api/tags`: `{"models": [{"name": …, "model": …}]}`; no windows.
pub(crate) fn parse_ollama_tags(answer: &Value) -> Vec<ServedModel> {
    answer
        .get("models")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|entry| {
            let id = entry.get("name").or_else(|| entry.get("model"))?.as_str()?;
            Some(ServedModel { id: id.to_owned(), context_window: None })
        })
        .collect()
}

/// The Modelfile's `num_ctx` in Ollama's `/api/show` answer (`parameters` is text, one
/// `name value` a line).
pub(crate) fn ollama_num_ctx(show: &Value) -> Option<u64> {
    let parameters = show.get("parameters")?.as_str()?;
    parameters.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next()? == "num_ctx").then_some(())?;
        words.next()?.trim_matches('"').parse().ok()
    })
}

/// The model's trained length in Ollama's `/api/show` answer: `model_info["<arch>.context_length"]`,
/// the architecture named by `general.architecture`.
pub(crate) fn ollama_trained_context(show: &Value) -> Option<u64> {
    let info = show.get("model_info")?.as_object()?;
    let arch = info.get("general.architecture").and_then(Value::as_str);
    match arch {
        Some(arch) => as_tokens(info.get(&format!("{arch}.context_length"))),
        None => info
            .iter()
            .find(|(key, _)| key.ends_with(".context_length"))
            .and_then(|(_, value)| as_tokens(Some(value))),
    }
}

/// The window a loaded model runs with, from Ollama's `GET /api/ps`.
pub(crate) fn ollama_loaded_context(ps: &Value, model: &str) -> Option<u64> {
    let models = ps.get("models")?.as_array()?;
    let entry = models.iter().find(|entry| {
        ["name", "model"].iter().any(|key| entry.get(key).and_then(Value::as_str) == Some(model))
    })?;
    as_tokens(entry.get("context_length")).filter(|n| *n > 0)
}

/// Ollama's effective window for a model: the Modelfile's `num_ctx`, else the loaded window,
/// else `OLLAMA_DEFAULT_CONTEXT`; at most the trained length.
pub(crate) fn ollama_window(show: &Value, loaded: Option<u64>) -> u64 {
    let window = ollama_num_ctx(show).or(loaded).unwrap_or(OLLAMA_DEFAULT_CONTEXT);
    match ollama_trained_context(show) {
        Some(trained) => window.min(trained),
        None => window,
    }
}

#[cfg(test)]
mod tests;
