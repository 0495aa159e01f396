//! What a server asks while one of its tools runs, answered on the calling thread: progress
//! shown to the person, a form asked field by field (`elicitation/create`), a sampling request
//! answered by the session's own model (`sampling/createMessage`).
//!
//! Invariants: a form is accepted only when every field asked was answered with a value of its
//! type (an empty answer or `-` takes the field's default, or leaves an optional field out); any
//! declined question, or an answer that is not of the field's type, declines the whole form; a sampling request is a real
//! request to the session's provider with no tools, and the call's cancel stops it.

use std::convert::Infallible;
use std::sync::Arc;

use codecoder_kernel::{ModelClient, ModelRequest, ResponseEvent};
use codecoder_protocol::{Message, MessageItem, Role, SessionId, StopReason};
use crossbeam_channel::{Receiver, select};
use serde_json::{Map, Value, json};

use crate::client::Interaction;

/// The calling side of a tool call: where progress goes, who answers questions.
pub trait CallHost {
    /// A progress line for the person (not for the model).
    fn progress(&self, line: &str);
    /// Asks the person; `None` when declined (or when no one can answer).
    fn ask(&self, question: &str, options: Vec<String>) -> Option<String>;
}

/// A host with no person: progress is dropped, questions are declined.
pub struct NoHost;

impl CallHost for NoHost {
    fn progress(&self, _line: &str) {}

    fn ask(&self, _question: &str, _options: Vec<String>) -> Option<String> {
        None
    }
}

/// The session's model, for servers allowed to sample.
pub struct Sampler {
    /// The session's provider.
    pub client: Arc<dyn ModelClient>,
    /// The session's model id.
    pub model: String,
    /// The session (for the provider's cache keys).
    pub session_id: SessionId,
}

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampler").field("model", &self.model).finish_non_exhaustive()
    }
}

/// Answers one interaction on the calling thread.
pub(crate) fn serve(
    interaction: Interaction,
    host: &dyn CallHost,
    sampler: Option<&Sampler>,
    cancel: &Receiver<Infallible>,
) {
    match interaction {
        Interaction::Progress(line) => host.progress(&line),
        Interaction::Elicit { message, schema, reply } => {
            let _ = reply.send(elicit(&message, &schema, host));
        }
        Interaction::Sample { params, reply } => {
            let answer = match sampler {
                Some(sampler) => sample(sampler, &params, cancel),
                None => {
                    Err("codecoder declined the sampling request: no model to answer it".to_owned())
                }
            };
            let _ = reply.send(answer);
        }
    }
}

/// A form asked field by field: the `ElicitResult` as JSON.
pub fn elicit(message: &str, schema: &Value, host: &dyn CallHost) -> Value {
    let decline = json!({"action": "decline"});
    let empty = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if properties.is_empty() {
        return match host.ask(message, vec!["Accept".to_owned(), "Decline".to_owned()]) {
            Some(answer) if answer.eq_ignore_ascii_case("accept") => {
                json!({"action": "accept", "content": {}})
            }
            _ => decline,
        };
    }
    let mut content = Map::new();
    for (name, field) in properties {
        let label = field.get("title").and_then(Value::as_str).unwrap_or(name);
        let mut question = format!("{message}\n{label}");
        if let Some(description) = field.get("description").and_then(Value::as_str) {
            question.push_str(&format!(" ({description})"));
        }
        let kind = field.get("type").and_then(Value::as_str).unwrap_or("string");
        let choices = match (kind, field.get("items")) {
            ("array", Some(items)) => field_choices(items),
            _ => field_choices(field),
        };
        if kind == "array" {
            question.push_str(" (one or more, separated by commas)");
        }
        match field.get("default") {
            Some(default) => {
                let shown = default.as_str().map_or_else(|| default.to_string(), str::to_owned);
                question.push_str(&format!(" [default: {shown}; answer - to keep it]"));
            }
            None if !required.contains(&name.as_str()) => {
                question.push_str(" [optional; answer - to skip]");
            }
            None => {}
        }
        let options = if kind == "boolean" {
            vec!["true".to_owned(), "false".to_owned()]
        } else {
            choices.iter().map(|(_, title)| title.clone()).collect()
        };
        let Some(answer) = host.ask(&question, options) else { return decline };
        let answer = match answer.trim() {
            "-" => "",
            answer => answer,
        };
        if answer.is_empty() {
            if let Some(default) = field.get("default") {
                content.insert(name.clone(), default.clone());
                continue;
            }
            if !required.contains(&name.as_str()) {
                continue;
            }
        }
        let choose = |answer: &str| {
            choices
                .iter()
                .find(|(value, title)| title == answer || value == answer)
                .map(|(value, _)| Value::String(value.clone()))
        };
        let value = match kind {
            "array" => answer
                .split(',')
                .map(str::trim)
                .filter(|part| !part.is_empty())
                .map(|part| {
                    if choices.is_empty() {
                        Some(Value::String(part.to_owned()))
                    } else {
                        choose(part)
                    }
                })
                .collect::<Option<Vec<Value>>>()
                .map(Value::Array),
            "number" => answer.parse::<f64>().ok().map(|n| json!(n)),
            "integer" => answer.parse::<i64>().ok().map(|n| json!(n)),
            "boolean" => match answer.to_ascii_lowercase().as_str() {
                "true" | "yes" | "y" => Some(Value::Bool(true)),
                "false" | "no" | "n" => Some(Value::Bool(false)),
                _ => None,
            },
            _ if !choices.is_empty() => choose(answer),
            _ => Some(Value::String(answer.to_owned())),
        };
        let Some(value) = value else { return decline };
        content.insert(name.clone(), value);
    }
    json!({"action": "accept", "content": content})
}

/// An enum field's (value, title) pairs: `enum` (+ `enumNames`) or `oneOf` of `const`/`title`.
fn field_choices(field: &Value) -> Vec<(String, String)> {
    if let Some(values) = field.get("enum").and_then(Value::as_array) {
        let names = field.get("enumNames").and_then(Value::as_array);
        return values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let value = v.as_str()?.to_owned();
                let title = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .map_or_else(|| value.clone(), str::to_owned);
                Some((value, title))
            })
            .collect();
    }
    field
        .get("oneOf")
        .or_else(|| field.get("anyOf"))
        .and_then(Value::as_array)
        .map(|options| {
            options
                .iter()
                .filter_map(|o| {
                    let value = o.get("const")?.as_str()?.to_owned();
                    let title = o
                        .get("title")
                        .and_then(Value::as_str)
                        .map_or_else(|| value.clone(), str::to_owned);
                    Some((value, title))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A sampling request answered by the session's model: the `CreateMessageResult` as JSON.
fn sample(
    sampler: &Sampler,
    params: &Value,
    cancel: &Receiver<Infallible>,
) -> Result<Value, String> {
    let mut history = Vec::new();
    for message in params.get("messages").and_then(Value::as_array).into_iter().flatten() {
        let role = match message.get("role").and_then(Value::as_str) {
            Some("assistant") => Role::Assistant,
            _ => Role::User,
        };
        let blocks = match message.get("content") {
            Some(Value::Array(blocks)) => blocks.clone(),
            Some(block) => vec![block.clone()],
            None => Vec::new(),
        };
        let text: Vec<&str> = blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        if text.is_empty() {
            return Err(
                "codecoder declined the sampling request: only text messages are supported"
                    .to_owned(),
            );
        }
        history
            .push(Arc::new(Message::new(role, vec![MessageItem::Text { text: text.join("\n") }])));
    }
    if history.is_empty() {
        return Err("codecoder declined the sampling request: it has no messages".to_owned());
    }
    let max_output_tokens =
        params.get("maxTokens").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok());
    let request = ModelRequest {
        session_id: sampler.session_id,
        model: sampler.model.clone(),
        instructions: params.get("systemPrompt").and_then(Value::as_str).unwrap_or("").to_owned(),
        sections: Vec::new(),
        history,
        tools: Vec::new(),
        max_output_tokens,
        output_schema: None,
        reasoning: codecoder_protocol::ReasoningSettings::default(),
    };
    let stream = sampler
        .client
        .stream(request)
        .map_err(|err| format!("the session's model could not be asked: {err}"))?;
    let mut text = String::new();
    let stop = loop {
        select! {
            recv(stream.events()) -> event => match event {
                Ok(ResponseEvent::TextDelta(delta)) => text.push_str(&delta),
                Ok(ResponseEvent::Completed { stop_reason }) => break stop_reason,
                Ok(ResponseEvent::Error(err)) => return Err(format!("the session's model failed: {err}")),
                Ok(_) => {}
                Err(_) => return Err("the session's model stream ended early".to_owned()),
            },
            recv(cancel) -> _ => return Err("the call was cancelled".to_owned()),
        }
    };
    let stop_reason = match stop {
        StopReason::MaxTokens => "maxTokens",
        StopReason::EndTurn | StopReason::ToolUse | StopReason::Other => "endTurn",
    };
    Ok(json!({
        "role": "assistant",
        "content": {"type": "text", "text": text},
        "model": sampler.model,
        "stopReason": stop_reason,
    }))
}
