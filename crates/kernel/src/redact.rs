//! Secret redaction: what a tool returns is scanned for known secret shapes and for the values of
//! the secrets the session knows, and each is replaced by `[REDACTED:<kind>]` before the model,
//! the session log or a client sees it.
//!
//! The shapes: OpenAI keys (`sk-…`, `sk-proj-…`), Anthropic keys (`sk-ant-…`), Google API keys
//! (`AIza…`), GitHub tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`), GitLab tokens
//! (`glpat-`), Slack tokens (`xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-`) and webhook URLs, AWS
//! access key ids (`AKIA`/`ASIA` and 16 more) and secret access keys written next to their usual
//! names (only the value is replaced), and PEM private key blocks (to the end of the text when
//! the block is cut short). The values are the ones handed to [`Redactor::new`]: the environment
//! variables withheld from commands as secrets and the provider's key, each replaced by
//! `[REDACTED:env:<NAME>]`.
//!
//! Invariants:
//! - One pass over the text: the shapes and the values are one regular expression (leftmost
//!   first, values before shapes), so the cost is linear in the text whatever the number of
//!   values.
//! - Shapes are tight (fixed prefixes, a minimum length, and for the generic bodies a mix of
//!   digits and both cases), so hex hashes, UUIDs, base64 and ordinary identifiers are left
//!   alone.
//! - A value shorter than [`MIN_VALUE_LEN`] is not looked for: too short to be a secret worth
//!   hiding, too likely to be an ordinary word.

use std::borrow::Cow;
use std::collections::HashMap;

use codecoder_protocol::{ContentItem, Message, MessageItem, ToolError};
use regex::Regex;

use crate::error::Result;

/// The shortest secret value [`Redactor::new`] looks for.
pub const MIN_VALUE_LEN: usize = 8;

/// The shapes, one alternative each (the order matters where prefixes overlap: Anthropic's
/// `sk-ant-` before OpenAI's `sk-`). `(?-u:\b)` is an ASCII word boundary, which keeps the
/// fast automaton usable on text that is not ASCII.
const SHAPES: &[&str] = &[
    r"(?-u:\b)sk-ant-[a-z]+[0-9]*-[A-Za-z0-9_-]{32,}",
    r"(?-u:\b)sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}",
    r"(?-u:\b)AIza[0-9A-Za-z_-]{35,}",
    r"(?-u:\b)gh[pousr]_[A-Za-z0-9]{36,}",
    r"(?-u:\b)github_pat_[A-Za-z0-9_]{22,}",
    r"(?-u:\b)glpat-[A-Za-z0-9_-]{20,}",
    r"(?-u:\b)xox[abprs]-[A-Za-z0-9-]{10,}",
    r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{8,}",
    r"(?-u:\b)(?:AKIA|ASIA)[0-9A-Z]{16}(?-u:\b)",
    r#"(?:aws_secret_access_key|AWS_SECRET_ACCESS_KEY|secret_access_key|SECRET_ACCESS_KEY|SecretAccessKey|aws_secret_key|AWS_SECRET_KEY)["']?[ \t]*(?::|=|=>)[ \t]*["']?[A-Za-z0-9/+]{40,}"#,
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----",
];

/// The kind of a private key block; the expression finds its first line, `block_end` its end.
const PRIVATE_KEY: &str = "private-key";

/// The length of an AWS secret access key.
const AWS_SECRET_LEN: usize = 40;

/// A secret value to look for, and the name it goes by in the replacement.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    /// The name (an environment variable's), shown in the replacement.
    pub name: String,
    /// The value, never shown.
    pub value: String,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secret").field("name", &self.name).finish_non_exhaustive()
    }
}

/// Finds and replaces secrets in text. Cheap to share (`Arc`); built once per session.
pub struct Redactor {
    regex: Regex,
    /// Value → the name it is replaced by.
    values: HashMap<String, String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&str> = self.values.values().map(String::as_str).collect();
        names.sort_unstable();
        f.debug_struct("Redactor").field("values", &names).finish_non_exhaustive()
    }
}

impl Redactor {
    /// A redactor for the shapes and `secrets`' values (those shorter than [`MIN_VALUE_LEN`],
    /// after trimming, are left out). Fails only if the expression cannot be built (it is made
    /// of fixed shapes and escaped values, so only a size limit could refuse it).
    pub fn new(secrets: impl IntoIterator<Item = Secret>) -> Result<Self> {
        let mut values: HashMap<String, String> = HashMap::new();
        for secret in secrets {
            let value = secret.value.trim();
            if value.len() >= MIN_VALUE_LEN {
                values.entry(value.to_owned()).or_insert(secret.name);
            }
        }
        // Longest first, so a value that starts another is not found in its place.
        let mut literals: Vec<&String> = values.keys().collect();
        literals.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        let alternatives: Vec<String> = literals
            .into_iter()
            .map(|value| regex::escape(value))
            .chain(SHAPES.iter().map(|shape| (*shape).to_owned()))
            .collect();
        let regex = Regex::new(&alternatives.join("|"))?;
        Ok(Self { regex, values })
    }

    /// `text` with every secret replaced, and how many were. Borrowed when nothing was found.
    pub fn redact<'a>(&self, text: &'a str) -> (Cow<'a, str>, usize) {
        let mut out = String::new();
        let mut copied = 0;
        let mut count = 0;
        let mut at = 0;
        while let Some(found) = self.regex.find_at(text, at) {
            at = found.end();
            let Some((start, replacement)) = self.replacement(found.as_str()) else {
                continue;
            };
            let end = if replacement == PRIVATE_KEY { block_end(text, found.end()) } else { at };
            out.push_str(&text[copied..found.start() + start]);
            out.push_str("[REDACTED:");
            out.push_str(&replacement);
            out.push(']');
            copied = end;
            at = end;
            count += 1;
        }
        if count == 0 {
            return (Cow::Borrowed(text), 0);
        }
        out.push_str(&text[copied..]);
        (Cow::Owned(out), count)
    }

    /// Redacts the text items of `content` in place; returns how many secrets were replaced.
    pub fn redact_content(&self, content: &mut [ContentItem]) -> usize {
        let mut total = 0;
        for item in content {
            match item {
                ContentItem::Text { text } => {
                    let (redacted, count) = self.redact(text);
                    if let Cow::Owned(redacted) = redacted {
                        *text = redacted;
                    }
                    total += count;
                }
                ContentItem::Image(_) | ContentItem::BlobRef(_) => {}
            }
        }
        total
    }

    /// Redacts the text of a tool's error in place (a failing tool's message may quote what it
    /// read); returns how many secrets were replaced.
    pub fn redact_error(&self, err: &mut ToolError) -> usize {
        match err {
            ToolError::UnknownTool { name: text }
            | ToolError::InvalidArguments { message: text }
            | ToolError::PermissionDenied { reason: text }
            | ToolError::Failed { message: text }
            | ToolError::Panicked { message: text } => {
                let (redacted, count) = self.redact(text);
                if let Cow::Owned(redacted) = redacted {
                    *text = redacted;
                }
                count
            }
            ToolError::TimedOut { .. } | ToolError::Cancelled => 0,
        }
    }

    /// Redacts an assistant message's text and its tool calls' arguments in place, for the log
    /// (the calls themselves run with what the model wrote); returns how many secrets were
    /// replaced.
    pub fn redact_message(&self, message: &mut Message) -> usize {
        let mut total = 0;
        for item in &mut message.items {
            match item {
                MessageItem::Text { text } => {
                    let (redacted, count) = self.redact(text);
                    if let Cow::Owned(redacted) = redacted {
                        *text = redacted;
                    }
                    total += count;
                }
                MessageItem::ToolCall(call) => total += self.redact_json(&mut call.args),
                MessageItem::Reasoning(_)
                | MessageItem::ToolResult(_)
                | MessageItem::Image(_)
                | MessageItem::BlobRef(_) => {}
            }
        }
        total
    }

    /// Redacts every string of a JSON value in place (an MCP server's result as it sent it);
    /// returns how many secrets were replaced.
    pub fn redact_json(&self, value: &mut serde_json::Value) -> usize {
        match value {
            serde_json::Value::String(text) => {
                let (redacted, count) = self.redact(text);
                if let Cow::Owned(redacted) = redacted {
                    *text = redacted;
                }
                count
            }
            serde_json::Value::Array(items) => items.iter_mut().map(|v| self.redact_json(v)).sum(),
            serde_json::Value::Object(map) => map.values_mut().map(|v| self.redact_json(v)).sum(),
            serde_json::Value::Null | serde_json::Value::Bool(_) | serde_json::Value::Number(_) => {
                0
            }
        }
    }

    /// For a match: where the secret starts within it and the replacement's kind, or `None`
    /// when the match is not a secret after all (a shape's finer checks refuse it).
    fn replacement(&self, found: &str) -> Option<(usize, String)> {
        if let Some(name) = self.values.get(found) {
            return Some((0, format!("env:{name}")));
        }
        let kind = if found.starts_with("-----BEGIN") {
            PRIVATE_KEY
        } else if found.starts_with("sk-ant-") {
            "anthropic-key"
        } else if let Some(rest) = found.strip_prefix("sk-") {
            let body = rest
                .strip_prefix("proj-")
                .or_else(|| rest.strip_prefix("svcacct-"))
                .or_else(|| rest.strip_prefix("admin-"))
                .unwrap_or(rest);
            if !mixed(body) {
                return None;
            }
            "openai-key"
        } else if found.starts_with("AIza") {
            if found.len() != 39 {
                return None;
            }
            "google-api-key"
        } else if found.starts_with("gh") || found.starts_with("github_pat_") {
            "github-token"
        } else if found.starts_with("glpat-") {
            "gitlab-token"
        } else if found.starts_with("https://hooks.slack.com/") {
            "slack-webhook"
        } else if found.starts_with("xox") {
            if !found.bytes().any(|b| b.is_ascii_digit()) {
                return None;
            }
            "slack-token"
        } else if found.starts_with("AKIA") || found.starts_with("ASIA") {
            "aws-access-key-id"
        } else {
            // A secret access key after its name: only the 40 characters of the value, and
            // only when exactly 40 (the run is greedy, so a longer one is something else).
            let value_len = found.bytes().rev().take_while(|b| is_aws_secret_byte(*b)).count();
            if value_len != AWS_SECRET_LEN || !mixed(&found[found.len() - value_len..]) {
                return None;
            }
            return Some((found.len() - value_len, "aws-secret-access-key".to_owned()));
        };
        Some((0, kind.to_owned()))
    }
}

/// Where the private key block whose first line ends at `from` ends: after its `-----END …
/// PRIVATE KEY-----` line, or at the end of `text` when the block was cut short. (Found here
/// rather than by the expression: a lazy run to the end marker inside the one alternation
/// makes the whole scan several times slower.)
fn block_end(text: &str, from: usize) -> usize {
    let mut at = from;
    while let Some(found) = text[at..].find("-----END ") {
        let marker = at + found + "-----END ".len();
        let rest = &text[marker..];
        let label = rest
            .bytes()
            .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b' ')
            .count();
        if rest[..label].ends_with("PRIVATE KEY") && rest[label..].starts_with("-----") {
            return marker + label + "-----".len();
        }
        at = marker;
    }
    text.len()
}

fn is_aws_secret_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'/' || b == b'+'
}

/// Whether a generated-looking body: at least one digit, one upper-case and one lower-case
/// letter (an ordinary identifier or a hex hash lacks one of them).
fn mixed(body: &str) -> bool {
    let bytes = body.as_bytes();
    bytes.iter().any(u8::is_ascii_digit)
        && bytes.iter().any(u8::is_ascii_uppercase)
        && bytes.iter().any(u8::is_ascii_lowercase)
}

/// The note added to a result whose text had `count` secrets replaced.
pub fn redaction_note(count: usize) -> String {
    match count {
        1 => "(1 secret redacted)".to_owned(),
        _ => format!("({count} secrets redacted)"),
    }
}

#[cfg(test)]
mod tests;
