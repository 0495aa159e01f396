//! `http` hooks: the event's JSON posted to a URL, the reply read as a command's output.
//!
//! Headers may name environment variables (`$NAME` or `${NAME}`); only those listed in
//! `allowedEnvVars` are replaced, the others become empty, so a settings file cannot send an
//! arbitrary secret of the user's environment anywhere.
//!
//! Invariants: the request goes to a loopback host (`localhost`, `127.0.0.0/8`, `::1`) or to a
//! host the runner was told the network policy allows, never through a proxy from the
//! environment; a reply's body is read up to `BODY_CAP` bytes.

use std::io::Read as _;
use std::net::IpAddr;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::handler::stdout_answer;
use crate::outcome::Answer;

/// Bytes of a reply's body kept.
const BODY_CAP: u64 = 1 << 20;

/// A parsed `http` handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Http {
    url: String,
    /// The host part of `url`, lowercased, without brackets.
    host: String,
    headers: Vec<(String, String)>,
    allowed_env_vars: Vec<String>,
}

impl Http {
    /// Parses `url`, `headers` and `allowedEnvVars`; `shape(key, message)` makes the error
    /// for a malformed key.
    pub(crate) fn parse(
        url: &str,
        handler: &Map<String, Value>,
        shape: impl Fn(&str, &str) -> crate::Error,
    ) -> crate::Result<Http> {
        let host = url
            .parse::<ureq::http::Uri>()
            .ok()
            .filter(|uri| matches!(uri.scheme_str(), Some("http" | "https")))
            .and_then(|uri| uri.host().map(|host| host.trim_matches(['[', ']']).to_lowercase()))
            .ok_or_else(|| shape("url", "expected an http:// or https:// URL"))?;
        let headers = match handler.get("headers") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(headers)) => headers
                .iter()
                .map(|(name, value)| match value {
                    Value::String(value) => Ok((name.clone(), value.clone())),
                    _ => Err(shape("headers", "expected an object of strings")),
                })
                .collect::<crate::Result<_>>()?,
            Some(_) => return Err(shape("headers", "expected an object of strings")),
        };
        let allowed_env_vars = match handler.get("allowedEnvVars") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(names)) => names
                .iter()
                .map(|name| match name {
                    Value::String(name) => Ok(name.clone()),
                    _ => Err(shape("allowedEnvVars", "expected a list of variable names")),
                })
                .collect::<crate::Result<_>>()?,
            Some(_) => return Err(shape("allowedEnvVars", "expected a list of variable names")),
        };
        Ok(Http { url: url.to_owned(), host, headers, allowed_env_vars })
    }

    /// Posts `input` and classifies the reply.
    pub(crate) fn post(
        &self,
        input: &[u8],
        timeout: Duration,
        hook: &str,
        allowed_hosts: &[String],
    ) -> Answer {
        if !is_loopback(&self.host) && !allowed_hosts.iter().any(|host| host == &self.host) {
            return Answer::Failed(format!(
                "{hook}: {} is not a loopback host and the network policy does not allow it; \
                 the hook did not run",
                self.host
            ));
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .proxy(None)
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent("codecoder-hook")
            .build()
            .into();
        let mut request = agent.post(&self.url).header("Content-Type", "application/json");
        for (name, value) in &self.headers {
            request = request.header(name, self.interpolate(value));
        }
        let mut response = match request.send(input) {
            Ok(response) => response,
            Err(err) => return Answer::Failed(format!("{hook}: the request failed: {err}")),
        };
        let status = response.status().as_u16();
        let mut body = String::new();
        let read = response.body_mut().as_reader().take(BODY_CAP).read_to_string(&mut body);
        if let Err(err) = read {
            return Answer::Failed(format!("{hook}: reading the reply failed: {err}"));
        }
        if !(200..300).contains(&status) {
            let shown: String = body.trim().chars().take(200).collect();
            return Answer::Failed(format!("{hook}: the server answered {status}: {shown}"));
        }
        stdout_answer(body.trim(), hook)
    }

    /// `value` with `$NAME` and `${NAME}` replaced: by the variable's value when `NAME` is in
    /// `allowedEnvVars`, by nothing otherwise.
    fn interpolate(&self, value: &str) -> String {
        let mut out = String::new();
        let mut rest = value;
        while let Some(start) = rest.find('$') {
            out.push_str(&rest[..start]);
            let after = &rest[start + 1..];
            let (name, consumed) = match after.strip_prefix('{') {
                Some(braced) => match braced.find('}') {
                    Some(end) => (&braced[..end], end + 2),
                    None => ("", 0),
                },
                None => {
                    let end = after
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(after.len());
                    (&after[..end], end)
                }
            };
            if name.is_empty() {
                out.push('$');
                rest = after;
                continue;
            }
            if self.allowed_env_vars.iter().any(|allowed| allowed == name)
                && let Some(value) = std::env::var_os(name)
            {
                out.push_str(&value.to_string_lossy());
            }
            rest = &after[consumed..];
        }
        out.push_str(rest);
        out
    }
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}
