//! The providers crate's error: why a request got no (complete) answer.
//!
//! Invariant: no message here ever contains an API key; `scrub` removes the key from any text
//! that came back from a server before it is put into an error.

use std::fmt;

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
            Self::MissingApiKey { .. } | Self::Protocol { .. } => false,
        }
    }
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
