//! The providers crate's error: why a request got no (complete) answer.
//!
//! `Display` is the one place the messages are written. The errors a person can act on name the
//! server (provider name and base URL), the model, and what to change: a server that is not
//! running (`Unreachable`), a model it does not have (`ModelNotFound`), a request larger than the
//! model's context in the server's own words (`ContextOverflow`); `classify` turns a server's
//! error answer into those by its status and wording.
//!
//! Invariant: no message here ever contains an API key; `scrub` removes the key from any text
//! that came back from a server before it is put into an error.

use std::fmt;

#[cfg(test)]
mod tests;

/// A failed request, after retries.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The provider needs a key and the variable that should hold it is empty or unset.
    MissingApiKey {
        /// The provider id.
        provider: String,
        /// The variable.
        env_key: String,
    },
    /// The server answered with an error status.
    Http {
        /// The HTTP status.
        status: u16,
        /// The provider's error type (`rate_limit_error`, `invalid_request_error`, …).
        error_type: Option<String>,
        /// The provider's message.
        message: String,
        /// The request id the provider gave, for support tickets.
        request_id: Option<String>,
        /// For 401/403: the variable the key came from.
        env_key: Option<String>,
        /// The endpoint, named for a 404 (a wrong base URL or path); boxed to keep the error
        /// small.
        url: Box<str>,
    },
    /// The connection failed or broke.
    Connection {
        /// What happened.
        message: String,
    },
    /// The stream produced nothing for the idle timeout.
    IdleTimeout {
        /// The timeout in milliseconds.
        timeout_ms: u64,
    },
    /// The stream broke the wire format.
    Protocol {
        /// What was wrong.
        message: String,
    },
    /// The provider sent an error event mid-stream.
    Stream {
        /// The provider's error type.
        error_type: Option<String>,
        /// The provider's message.
        message: String,
    },
    /// No connection could be made to the server (refused, unknown host, connect timeout).
    Unreachable {
        /// The server.
        server: Box<Server>,
        /// Why.
        reason: Unreachable,
    },
    /// The server does not have the model the request names.
    ModelNotFound {
        /// The server.
        server: Box<Server>,
        /// The model asked for.
        model: String,
        /// The server's own words.
        message: String,
    },
    /// The request is larger than the context the server gives the model.
    ContextOverflow {
        /// The server.
        server: Box<Server>,
        /// The model asked for.
        model: String,
        /// The server's own words.
        message: String,
    },
    /// A streamed request with tools failed before any content arrived, and the same request
    /// sent again without streaming failed too.
    UnstreamedAlsoFailed {
        /// The streamed request's failure.
        streamed: Box<Error>,
        /// The unstreamed request's failure.
        unstreamed: Box<Error>,
    },
}

/// The server a request went to, as errors name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// The provider id (`ollama`, `local`): the key of its `[model_providers.ID]` table.
    pub id: String,
    /// Its display name (`Ollama`).
    pub name: String,
    /// Its API root.
    pub base_url: String,
}

/// Why no connection could be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreachable {
    /// Nothing listens at the address.
    Refused,
    /// The host name does not resolve.
    HostNotFound,
    /// The connect timed out.
    Timeout,
}

impl Server {
    /// Whether the base URL names this machine (`localhost`, `127.x`, `::1`).
    pub fn is_loopback(&self) -> bool {
        let rest = self.base_url.split_once("://").map_or(self.base_url.as_str(), |(_, r)| r);
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
        let host = match authority.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => authority.split(':').next().unwrap_or(""),
        };
        let host = host.to_ascii_lowercase();
        host == "localhost"
            || host.ends_with(".localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback() || ip.is_unspecified())
    }
}

impl Error {
    /// Whether sending the same request again may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Http { status, .. } => matches!(status, 408 | 409 | 429 | 500..=599),
            Self::Connection { .. } | Self::IdleTimeout { .. } => true,
            Self::Stream { error_type, .. } => matches!(
                error_type.as_deref(),
                Some("overloaded_error" | "api_error" | "rate_limit_error" | "server_error")
            ),
            // Refused on this machine: no server is listening, and waiting will not start one.
            Self::Unreachable { server, reason } => {
                !(*reason == Unreachable::Refused && server.is_loopback())
            }
            Self::UnstreamedAlsoFailed { streamed, .. } => streamed.is_retryable(),
            Self::MissingApiKey { .. }
            | Self::Protocol { .. }
            | Self::ModelNotFound { .. }
            | Self::ContextOverflow { .. } => false,
        }
    }

    /// Whether the server said the request is larger than the model's context.
    pub fn is_context_overflow(&self) -> bool {
        match self {
            Self::ContextOverflow { .. } => true,
            Self::UnstreamedAlsoFailed { streamed, unstreamed } => {
                streamed.is_context_overflow() || unstreamed.is_context_overflow()
            }
            _ => false,
        }
    }

    /// Whether the server said what is wrong with the request itself (a model it does not
    /// have, a context overflow): sent again, streamed or not, it fails the same way.
    pub(crate) fn is_definitive(&self) -> bool {
        matches!(self, Self::ModelNotFound { .. } | Self::ContextOverflow { .. })
    }

    /// Whether a streamed request that offers tools, failing this way before any content
    /// arrived, may succeed sent without streaming: a server that cannot stream tool calls
    /// answers with any error status, ends the stream early or sends an error event. Not for
    /// what an unstreamed request would meet the same: no connection, a key refused (401,
    /// 403), a wrong URL (404), a rate limit (429), a model the server does not have, a context
    /// overflow.
    pub(crate) fn may_be_streaming(&self) -> bool {
        match self {
            Self::Http { status, .. } => !matches!(status, 401 | 403 | 404 | 429),
            Self::Connection { .. }
            | Self::IdleTimeout { .. }
            | Self::Protocol { .. }
            | Self::Stream { .. } => true,
            Self::MissingApiKey { .. }
            | Self::Unreachable { .. }
            | Self::ModelNotFound { .. }
            | Self::ContextOverflow { .. }
            | Self::UnstreamedAlsoFailed { .. } => false,
        }
    }

    /// `self` as a person can act on it: an error answer (`Http`, `Stream`) that says the
    /// model is missing or the context overflowed becomes `ModelNotFound` or
    /// `ContextOverflow`, naming `server` and `model`; anything else stays as it is.
    pub(crate) fn classify(self, server: &Server, model: &str) -> Self {
        let (status, error_type, message) = match &self {
            Self::Http { status, error_type, message, .. } => {
                (Some(*status), error_type.as_deref(), message.as_str())
            }
            Self::Stream { error_type, message } => (None, error_type.as_deref(), message.as_str()),
            _ => return self,
        };
        if matches!(status, Some(401 | 403 | 429)) {
            return self;
        }
        let server = Box::new(server.clone());
        let model = model.to_owned();
        if says_context_overflow(error_type, message) {
            return Self::ContextOverflow { server, model, message: message.to_owned() };
        }
        if matches!(status, None | Some(400 | 404 | 422)) && says_model_missing(error_type, message)
        {
            return Self::ModelNotFound { server, model, message: message.to_owned() };
        }
        self
    }
}

/// The wordings of a context overflow: llama.cpp (`exceed_context_size_error`, "the request
/// exceeds the available context size"), llama-cpp-python ("Requested tokens (N) exceed context
/// window of M"), OpenAI and vLLM ("maximum context length is N tokens",
/// `context_length_exceeded`), Ollama and LM Studio ("context length"), Anthropic ("prompt is
/// too long").
fn says_context_overflow(error_type: Option<&str>, message: &str) -> bool {
    let error_type = error_type.unwrap_or("").to_ascii_lowercase();
    let message = message.to_ascii_lowercase();
    error_type.contains("context_length_exceeded")
        || error_type.contains("exceed_context_size")
        || [
            "context_length_exceeded",
            "exceed context window",
            "exceeds the available context size",
            "exceeds the context",
            "maximum context length",
            "context length",
            "context window",
            "context size",
            "prompt is too long",
        ]
        .iter()
        .any(|words| message.contains(words))
}

/// The wordings of a missing model: OpenAI (`model_not_found`, "The model `x` does not exist"),
/// Ollama (`model "x" not found, try pulling it first`), vLLM and LM Studio alike, Anthropic
/// (`not_found_error` "model: x").
fn says_model_missing(error_type: Option<&str>, message: &str) -> bool {
    let error_type = error_type.unwrap_or("").to_ascii_lowercase();
    let message = message.to_ascii_lowercase();
    error_type == "model_not_found"
        || (error_type == "not_found_error" && message.starts_with("model"))
        || (message.contains("model")
            && (message.contains("not found") || message.contains("does not exist")))
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingApiKey { provider, env_key } => {
                write!(f, "no API key for provider `{provider}`: set {env_key}")
            }
            Self::Http { status, error_type, message, request_id, env_key, url } => {
                write!(f, "HTTP {status}")?;
                if *status == 404 {
                    write!(f, " from {url}")?;
                }
                if let Some(error_type) = error_type {
                    write!(f, " {error_type}")?;
                }
                if !message.is_empty() {
                    write!(f, ": {message}")?;
                }
                if let Some(request_id) = request_id {
                    write!(f, " (request id {request_id})")?;
                }
                if let (Some(env_key), 401 | 403) = (env_key, status) {
                    write!(f, "; check the API key in {env_key}")?;
                }
                if *status == 404 {
                    write!(f, "; check the provider's base URL and the model name")?;
                }
                Ok(())
            }
            Self::Connection { message } => write!(f, "connection failed: {message}"),
            Self::IdleTimeout { timeout_ms } => {
                write!(f, "the stream sent nothing for {} s", timeout_ms / 1000)
            }
            Self::Protocol { message } => write!(f, "unexpected response: {message}"),
            Self::Stream { error_type, message } => match error_type {
                Some(error_type) => write!(f, "the model stream failed: {error_type}: {message}"),
                None => write!(f, "the model stream failed: {message}"),
            },
            Self::Unreachable { server, reason } => {
                let Server { id, name, base_url } = server.as_ref();
                let reason = match reason {
                    Unreachable::Refused => "connection refused",
                    Unreachable::HostNotFound => "host not found",
                    Unreachable::Timeout => "connection timed out",
                };
                write!(f, "cannot reach {name} at {base_url} ({reason}): ")?;
                match id.as_str() {
                    "ollama" => write!(f, "is the server running? start it with `ollama serve`")?,
                    "lmstudio" => write!(
                        f,
                        "is the server running? start it with `lms server start` (or from LM Studio's Developer tab)"
                    )?,
                    _ if server.is_loopback() => write!(f, "is the server running? start it")?,
                    _ => write!(f, "check the network connection")?,
                }
                write!(f, ", or set base_url in [model_providers.{id}]")
            }
            Self::ModelNotFound { server, model, message } => {
                let Server { id, name, base_url } = server.as_ref();
                write!(f, "{name} at {base_url} does not have model `{model}` ({message}): ")?;
                match id.as_str() {
                    "ollama" => write!(f, "pull it with `ollama pull {model}`, or ")?,
                    "lmstudio" => write!(f, "load it with `lms load {model}`, or ")?,
                    _ => {}
                }
                write!(
                    f,
                    "pick a model it serves (`codecoder models --provider {id}` lists them) with --model or `model` in config.toml"
                )
            }
            Self::ContextOverflow { server, model, message } => {
                let Server { id, name, base_url } = server.as_ref();
                // The server's words end a sentence of their own; what to change follows.
                let message = message.trim_end().trim_end_matches('.');
                write!(
                    f,
                    "the request does not fit the context of model `{model}` at {name} ({base_url}): {message}; "
                )?;
                match id.as_str() {
                    "ollama" => write!(
                        f,
                        "raise the server's context size (Ollama: `num_ctx` in the model's parameters, or OLLAMA_CONTEXT_LENGTH), or "
                    )?,
                    "lmstudio" => write!(
                        f,
                        "load the model with a larger context length (LM Studio: `lms load {model} --context-length N`), or "
                    )?,
                    _ if server.is_loopback() => write!(
                        f,
                        "raise the server's context size (llama.cpp: -c/--ctx-size; llama-cpp-python: --n_ctx; vLLM: --max-model-len), or "
                    )?,
                    _ => {}
                }
                write!(
                    f,
                    "set context_window in [models.\"{model}\"] so compaction starts earlier, or compact the session (/compact, `codecoder sessions compact`)"
                )
            }
            Self::UnstreamedAlsoFailed { streamed, unstreamed } => {
                write!(f, "{streamed}; sent again without streaming, it failed too: {unstreamed}")
            }
        }
    }
}

impl std::error::Error for Error {}

/// `text` with every occurrence of `secret` masked.
pub(crate) fn scrub(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(secret) if secret.len() >= 4 => text.replace(secret, "[redacted]"),
        _ => text.to_owned(),
    }
}
