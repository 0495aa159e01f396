//! `web_fetch {url, max_bytes?}`: an HTTP(S) GET with `ureq` (blocking, no async runtime), HTML
//! turned into Markdown with `htmd`, kind `Network` so approvals can gate it.
//!
//! Why `htmd`: it converts to Markdown (headings, links, lists, code blocks, tables) the way
//! turndown.js does, which is what a model reads best, and it only depends on html5ever;
//! `html2text` renders for a terminal width (wrapped plain text), which loses link targets
//! and code fences.
//!
//! Invariants:
//! - At most `max_bytes` of the body are read (the rest is not downloaded) and at most
//!   `max_bytes` of text are returned, each with a note when cut.
//! - Only `http` and `https` URLs are fetched; a cancel is seen between body chunks (the connect
//!   and the headers are bounded by the request timeout).

use std::io::Read as _;
use std::sync::Arc;

use codecoder_kernel::{ToolKind, ToolOutput};
use codecoder_protocol::{CallKind, CallView, ToolError};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::env::CallEnv;
use crate::{Builtin, Shared, failed, invalid, parse_args, str_arg};

/// The largest `max_bytes` a call may ask for.
const MAX_BYTES_CEILING: usize = 10 * 1024 * 1024;

pub(crate) struct WebFetch(pub(crate) Arc<Shared>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    url: String,
    max_bytes: Option<usize>,
}

impl Builtin for WebFetch {
    fn name(&self) -> &'static str {
        "web_fetch"
    }
    fn description(&self) -> &'static str {
        "Fetches a URL (http or https, GET) and returns its content: HTML converted to Markdown, \
         other text as it is. At most `max_bytes` are downloaded and returned (default 1 MiB, up \
         to 10 MiB)."
    }
    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": { "type": "string", "minLength": 1, "description": "The URL, starting with http:// or https://." },
                "max_bytes": { "type": "integer", "minimum": 1, "maximum": MAX_BYTES_CEILING, "description": "Download and output cap in bytes. Default 1048576." }
            },
            "required": ["url"],
            "additionalProperties": false
        })
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Network
    }
    fn permission_keys(&self, args: &Value) -> Vec<String> {
        vec![format!("web_fetch:{}", host_of(str_arg(args, "url")))]
    }
    fn summary(&self, args: &Value) -> String {
        format!("fetch {}", str_arg(args, "url"))
    }
    fn view(&self, args: &Value) -> CallView {
        let url = str_arg(args, "url");
        CallView {
            kind: CallKind::Fetch,
            title: format!("Fetch {url}"),
            detail: url.to_owned(),
            ..CallView::default()
        }
    }
    fn run(&self, env: &dyn CallEnv, args: Value) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(args)?;
        let config = &self.0.config;
        let url = args.url.trim();
        let lower = url.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Err(invalid("`url` must start with http:// or https://"));
        }
        if host_of(url).is_empty() {
            return Err(invalid("`url` has no host"));
        }
        let max_bytes = args.max_bytes.unwrap_or(config.web_max_bytes).clamp(1, MAX_BYTES_CEILING);
        if env.cancel().is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        // Under a managed network the fetch goes through the session's proxy, whose policy
        // (and questions) the commands' requests meet too.
        let network = crate::network::for_fetch(config, env, url)?;
        let proxy = match &network {
            Some(network) => Some(
                ureq::Proxy::new(&network.proxy_url())
                    .map_err(|err| failed(format!("the managed network's proxy: {err}")))?,
            ),
            None => None,
        };
        let refused = |message: String| match network.as_ref().and_then(|it| it.note()) {
            Some(note) => failed(format!("{message}\n{note}")),
            None => failed(message),
        };
        // Under an inspecting proxy the roots are the system's bundle plus the session CA (the
        // variables' bundle), not ureq's built-in ones, which know nothing of the CA.
        let tls = match network.as_ref().and_then(|it| it.ca_bundle()) {
            None => ureq::tls::TlsConfig::default(),
            Some(bundle) => {
                let pem = fs_err::read(bundle)
                    .map_err(|err| failed(format!("the managed network's CA: {err}")))?;
                let roots: Vec<ureq::tls::Certificate<'static>> = ureq::tls::parse_pem(&pem)
                    .filter_map(|item| match item {
                        Ok(ureq::tls::PemItem::Certificate(certificate)) => Some(certificate),
                        _ => None,
                    })
                    .collect();
                ureq::tls::TlsConfig::builder().root_certs(roots.into()).build()
            }
        };
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .proxy(proxy)
            .tls_config(tls)
            .timeout_global(Some(config.web_timeout))
            .http_status_as_error(false)
            .max_redirects(10)
            .user_agent("codecoder-web-fetch")
            .build()
            .into();
        let mut response = agent
            .get(url)
            .header("Accept", "text/html, text/markdown, text/plain, application/json, */*;q=0.5")
            .call()
            .map_err(|err| refused(format!("fetching {url} failed: {err}")))?;
        let status = response.status();
        let mime = response.body().mime_type().unwrap_or("").to_ascii_lowercase();
        let mut reader = response.body_mut().as_reader();
        let mut body = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        let mut truncated = false;
        loop {
            if env.cancel().is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            let n = match reader.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => n,
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(failed(format!("reading the body of {url} failed: {err}"))),
            };
            let room = max_bytes - body.len();
            if n > room {
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
        drop(reader);
        let is_html = mime.contains("html") || (mime.is_empty() && looks_like_html(&body));
        let is_text = is_html
            || mime.starts_with("text/")
            || mime.contains("json")
            || mime.contains("xml")
            || mime.contains("javascript")
            || (mime.is_empty() && std::str::from_utf8(&body).is_ok());
        let mut text = if !is_text {
            format!("(binary content of type `{mime}`, {} bytes downloaded; not shown)", body.len())
        } else if is_html {
            let html = String::from_utf8_lossy(&body);
            let converter = htmd::HtmlToMarkdown::builder()
                .skip_tags(vec!["script", "style", "noscript", "svg", "head", "iframe"])
                .build();
            converter
                .convert(&html)
                .map_err(|err| failed(format!("converting the HTML of {url} failed: {err}")))?
        } else {
            String::from_utf8_lossy(&body).into_owned()
        };
        if text.len() > max_bytes {
            let mut cut = max_bytes;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            truncated = true;
        }
        let mut out =
            format!("URL: {url}\nStatus: {}\nContent-Type: {mime}\n\n{text}", status.as_u16());
        if truncated {
            out.push_str(&format!(
                "\n\n(cut at {max_bytes} bytes; call again with a larger max_bytes, up to \
                 {MAX_BYTES_CEILING}, to see more)"
            ));
        }
        if let Some(note) = network.as_ref().and_then(|it| it.note()) {
            out.push_str(&format!("\n\n{note}"));
        }
        let is_error = !status.is_success();
        Ok(ToolOutput {
            content: vec![codecoder_protocol::ContentItem::Text { text: out }],
            is_error,
            exit: None,
        })
    }
}

/// The host of an http(s) URL, lowercased; empty when there is none.
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or("", |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let host = if host_port.starts_with('[') {
        host_port.split_inclusive(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    host.to_ascii_lowercase()
}

fn looks_like_html(body: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&body[..body.len().min(1024)]).to_ascii_lowercase();
    head.contains("<html") || head.contains("<!doctype html")
}
