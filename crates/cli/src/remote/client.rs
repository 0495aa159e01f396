//! The HTTP side of `--remote`: serve's JSON routes called over ureq with the per-run token as a
//! bearer, each failure turned into a sentence that says what to do (no server there, a refused
//! token, the server's own `{"error": …}` message).
//!
//! Invariant: the token goes only into the `Authorization` header (of these requests and of the
//! event stream's upgrade); no message shows it.

use std::fmt;
use std::io::Read;
use std::time::Duration;

use serde_json::Value;

/// How long connecting to the server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one request may take, answer included. Starting a session may start MCP servers.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// The most of an answer read: the server's answers are small JSON documents.
const BODY_LIMIT: u64 = 16 * 1024 * 1024;

/// Where `--remote` points: a `codecoder serve` reached over plain HTTP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerUrl {
    /// The host as written (`127.0.0.1`, `localhost`, `[::1]`, a name).
    pub(crate) host: String,
    /// The port.
    pub(crate) port: u16,
}

impl ServerUrl {
    /// Reads `http://HOST:PORT[/]`. A token in the URL is refused: it would sit in the shell's
    /// history and in every process listing.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let Some(rest) = text.trim().strip_prefix("http://") else {
            return Err(format!(
                "--remote takes the http:// address `codecoder serve` printed (got `{text}`)"
            ));
        };
        let (authority, tail) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
        if tail.contains("token=") {
            return Err("the token does not go on the command line: `--remote` reads it from \
                 $CODECODER_HOME/serve.json, or from the variable --remote-token-env names \
                 (CODECODER_SERVE_TOKEN by default); give the URL without `?token=…`"
                .to_owned());
        }
        if !matches!(tail, "" | "/") {
            return Err(format!(
                "--remote takes the server's address alone, http://HOST:PORT (got `{text}`)"
            ));
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && !port.contains(']') => (host, port),
            _ => return Err(format!("--remote needs a port: http://HOST:PORT (got `{text}`)")),
        };
        let port = port
            .parse::<u16>()
            .ok()
            .filter(|port| *port != 0)
            .ok_or_else(|| format!("`{port}` is not a port (in `{text}`)"))?;
        Ok(Self { host: host.to_ascii_lowercase(), port })
    }

    /// `http://HOST:PORT`.
    pub(crate) fn base(&self) -> String {
        format!("http://{}:{}", self.host, self.port)
    }

    /// Whether the host is this machine's loopback (so its paths are this machine's paths).
    pub(crate) fn is_loopback(&self) -> bool {
        let bare = self.host.trim_start_matches('[').trim_end_matches(']');
        bare == "localhost" || bare.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }

    /// Whether `other` reaches the same server: the same port, and the same host, or both
    /// loopback names (`codecoder serve` answers to 127.0.0.1, localhost and [::1] alike).
    pub(crate) fn same_server(&self, other: &Self) -> bool {
        self.port == other.port
            && (self.host == other.host || (self.is_loopback() && other.is_loopback()))
    }
}

/// The message for a server that is not there.
pub(crate) fn not_running(url: &ServerUrl, err: &dyn fmt::Display) -> String {
    format!(
        "no codecoder serve answers at {} (is it running? start one with `codecoder serve`): \
         {err}",
        url.base()
    )
}

/// A request that did not get a 2xx answer.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    /// The HTTP status, `None` when the server was not reached.
    pub(crate) status: Option<u16>,
    /// What went wrong, for the person.
    pub(crate) message: String,
    /// The files an undo or rewind would overwrite, when that is why it was refused.
    pub(crate) conflicts: Vec<String>,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ApiError {}

/// serve's API at one address, with one token.
pub(crate) struct Client {
    agent: ureq::Agent,
    url: ServerUrl,
    token: String,
    /// Where the token came from, for the message when the server refuses it.
    token_source: String,
}

impl Client {
    pub(crate) fn new(url: ServerUrl, token: String, token_source: String) -> Self {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_global(Some(REQUEST_TIMEOUT))
            .build();
        Self { agent: ureq::Agent::new_with_config(config), url, token, token_source }
    }

    pub(crate) fn url(&self) -> &ServerUrl {
        &self.url
    }

    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    /// `GET path`, read as JSON.
    pub(crate) fn get(&self, path: &str) -> Result<Value, ApiError> {
        let answer = self
            .agent
            .get(format!("{}{path}", self.url.base()))
            .header("Authorization", format!("Bearer {}", self.token))
            .header("Accept", "application/json")
            .call();
        self.read("GET", path, answer)
    }

    /// `POST path` with a JSON body, the answer read as JSON.
    pub(crate) fn post(&self, path: &str, body: &Value) -> Result<Value, ApiError> {
        let answer = self
            .agent
            .post(format!("{}{path}", self.url.base()))
            .header("Authorization", format!("Bearer {}", self.token))
            .header("Accept", "application/json")
            .header("Content-Type", "application/json")
            .send(body.to_string().as_bytes());
        self.read("POST", path, answer)
    }

    fn read(
        &self,
        method: &str,
        path: &str,
        answer: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<Value, ApiError> {
        let response = answer.map_err(|err| ApiError {
            status: None,
            message: not_running(&self.url, &err),
            conflicts: Vec::new(),
        })?;
        let status = response.status().as_u16();
        let mut text = String::new();
        response.into_body().into_reader().take(BODY_LIMIT).read_to_string(&mut text).map_err(
            |err| ApiError {
                status: Some(status),
                message: format!("reading the answer to {method} {path}: {err}"),
                conflicts: Vec::new(),
            },
        )?;
        if (200..300).contains(&status) {
            return serde_json::from_str(&text).map_err(|err| ApiError {
                status: Some(status),
                message: format!("the answer to {method} {path} is not JSON: {err}"),
                conflicts: Vec::new(),
            });
        }
        Err(self.refusal(method, path, status, &text))
    }

    /// The error for a refused request (`status` not 2xx), in the person's terms.
    pub(crate) fn refusal(&self, method: &str, path: &str, status: u16, body: &str) -> ApiError {
        let said = serde_json::from_str::<Value>(body)
            .ok()
            .and_then(|body| body.get("error").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_else(|| body.chars().take(300).collect::<String>().trim().to_owned());
        let base = self.url.base();
        let message = match status {
            401 => format!(
                "the server at {base} refused the token ({}): each run of `codecoder serve` makes \
                 a new one, which it writes to its $CODECODER_HOME/serve.json",
                self.token_source
            ),
            403 => format!("the server at {base} refused the request: {said}"),
            _ => format!("{said} ({method} {path}: {status})"),
        };
        let conflicts = serde_json::from_str::<Value>(body)
            .ok()
            .and_then(|body| body.get("conflicts").and_then(Value::as_array).cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|path| path.as_str().map(str::to_owned))
            .collect();
        ApiError { status: Some(status), message, conflicts }
    }
}
