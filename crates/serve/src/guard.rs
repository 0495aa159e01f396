//! The checks every request passes before it reaches a route, as pure decisions over a parsed
//! request: the `Host` allowlist (DNS rebinding), the `Origin` allowlist on state-changing
//! requests and WebSocket upgrades (cross-site requests), the per-run token or the session
//! cookie it was exchanged for, and JSON-only bodies on mutations (a form or `text/plain` post,
//! which a browser sends cross-site without asking, is refused).
//!
//! Invariants: the checks run in that order, so a foreign `Host` learns nothing else; secrets
//! are compared in constant time; the cookie is `HttpOnly; SameSite=Strict` and is a secret of
//! its own, not the token.

use crate::http::{Request, Response};

/// What the guard decided.
#[derive(Debug)]
pub(crate) enum Access {
    /// Go on to the route.
    Allowed,
    /// `GET /?token=T` with the right token: set the cookie and send the browser to `/`
    /// without the token in its address bar.
    Exchange(Response),
    /// Refused with this answer.
    Refused(Response),
}

/// The secrets and names a request is checked against.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    /// The per-run token (URL, `Authorization: Bearer`).
    token: String,
    /// The session cookie's name (it holds the port: cookies do not tell ports apart).
    cookie_name: String,
    /// The session cookie's value, a secret of its own.
    cookie_value: String,
    /// The `Host` values accepted, lower-case (`127.0.0.1:PORT`, `localhost:PORT`, …).
    hosts: Vec<String>,
}

impl Guard {
    pub(crate) fn new(token: String, cookie_value: String, port: u16, hosts: Vec<String>) -> Self {
        Self {
            token,
            cookie_name: format!("codecoder_session_{port}"),
            cookie_value,
            hosts: hosts.into_iter().map(|host| host.to_ascii_lowercase()).collect(),
        }
    }

    /// Checks `request`.
    pub(crate) fn check(&self, request: &Request) -> Access {
        let host = request.header("host").unwrap_or_default().to_ascii_lowercase();
        if !self.hosts.contains(&host) {
            return Access::Refused(Response::error(
                403,
                "this Host is not one this server answers to (add it with --allow-host)",
            ));
        }
        let mutating = !matches!(request.method.as_str(), "GET" | "HEAD");
        let upgrade = request
            .header("upgrade")
            .is_some_and(|value| value.trim().eq_ignore_ascii_case("websocket"));
        if (mutating || upgrade)
            && let Some(origin) = request.header("origin")
            && !self.own_origin(origin)
        {
            return Access::Refused(Response::error(403, "cross-origin request refused"));
        }
        // The token in the address is traded for the cookie even when the browser has one, so
        // the address bar never keeps it.
        let exchange = request.method == "GET"
            && request.path == "/"
            && request.query_param("token").is_some_and(|token| same(&token, &self.token));
        if !exchange && (self.bearer_ok(request) || self.cookie_ok(request)) {
            if mutating && !is_json(request.header("content-type")) {
                return Access::Refused(Response::error(
                    415,
                    "state-changing requests take a JSON body (Content-Type: application/json)",
                ));
            }
            return Access::Allowed;
        }
        if exchange {
            return Access::Exchange(Response {
                status: 303,
                headers: vec![
                    ("Location", "/".to_owned()),
                    (
                        "Set-Cookie",
                        format!(
                            "{}={}; HttpOnly; SameSite=Strict; Path=/",
                            self.cookie_name, self.cookie_value
                        ),
                    ),
                ],
                body: Vec::new(),
            });
        }
        Access::Refused(Response::error(
            401,
            "a token is required: open the URL `codecoder serve` printed, or send \
             `Authorization: Bearer TOKEN` (the token is in $CODECODER_HOME/serve.json)",
        ))
    }

    /// Whether `origin` is this server's own: `http://` and one of the accepted hosts.
    fn own_origin(&self, origin: &str) -> bool {
        let origin = origin.trim().to_ascii_lowercase();
        origin.strip_prefix("http://").is_some_and(|host| self.hosts.iter().any(|h| h == host))
    }

    fn bearer_ok(&self, request: &Request) -> bool {
        request
            .header("authorization")
            .and_then(|value| value.trim().strip_prefix("Bearer "))
            .is_some_and(|token| same(token.trim(), &self.token))
    }

    fn cookie_ok(&self, request: &Request) -> bool {
        request
            .headers
            .iter()
            .filter(|(key, _)| key == "cookie")
            .flat_map(|(_, value)| value.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(name, value)| name == self.cookie_name && same(value, &self.cookie_value))
    }
}

/// Whether a `Content-Type` is JSON (`application/json`, parameters allowed).
fn is_json(content_type: Option<&str>) -> bool {
    content_type
        .and_then(|value| value.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// Equal strings, compared in time that depends only on their lengths.
pub(crate) fn same(given: &str, secret: &str) -> bool {
    let (given, secret) = (given.as_bytes(), secret.as_bytes());
    if given.len() != secret.len() {
        return false;
    }
    given.iter().zip(secret).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// A fresh secret of 32 bytes (256 bits) from the OS's random source, in hex.
pub(crate) fn fresh_secret() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}
