//! Tool calls a model wrote into its message text (`tool_call_format`): Hermes/Qwen
//! `<tool_call>{…}</tool_call>`, Llama 3 `<|python_tag|>{…}` or a whole message of JSON, Mistral
//! `[TOOL_CALLS][…]` or `[TOOL_CALLS]name[ARGS]{…}`. Some servers pass these on as text when
//! their chat template does not extract them.
//!
//! `TextCalls` is a pure state machine fed text pieces: it returns the text that can be shown at
//! once and holds back anything that could be the start of a marker, so text is never shown and
//! then turned into a call. From a marker on (for Llama 3, from a message that opens with `{`)
//! everything is held to the end of the response, then parsed. `Filter` puts it between a Chat
//! parser and the kernel, on the neutral events, so streamed and whole answers go through the
//! same code.
//!
//! Invariants: only names of tools offered in the request become calls; text that looks like a
//! call but is not one (bad JSON, unknown tool, no name) is given back as text, unchanged, with a
//! note (a `Warning`); every call gets an id `call_text_<tag>_<n>` from its client's `CallIds`,
//! unique within the session: `n` counts the client's calls and `tag` is drawn once per client,
//! so the calls of a session resumed by another process do not reuse the ids in its log.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use codecoder_kernel::{ModelRequest, ResponseEvent};
use codecoder_protocol::{StopReason, ToolCallFormat, ToolCallId};
use serde_json::Value;

use crate::catalog;
use crate::config::{ProviderConfig, WireApi};

/// A format resolved for one model: what the parser looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `<tool_call>…</tool_call>` (Hermes and Qwen).
    Hermes,
    /// `<|python_tag|>…`, or a message that is one JSON object.
    Llama3,
    /// `[TOOL_CALLS]…`.
    Mistral,
}

const HERMES_OPEN: &str = "<tool_call>";
const HERMES_CLOSE: &str = "</tool_call>";
const PYTHON_TAG: &str = "<|python_tag|>";
const TOOL_CALLS: &str = "[TOOL_CALLS]";
/// End-of-message tokens some servers leave in a Llama 3 answer.
const LLAMA_END_TOKENS: &[&str] = &["<|eom_id|>", "<|eot_id|>"];

impl Format {
    /// The format of `setting` for `model`; `None` when nothing is parsed (off, or `auto` for a
    /// model the catalog names no format for).
    pub(crate) fn resolve(setting: ToolCallFormat, model: &str) -> Option<Self> {
        match setting {
            ToolCallFormat::Off => None,
            // The catalog names a form, never `auto` or `off`; either would parse nothing.
            ToolCallFormat::Auto => match catalog::tool_call_format(model)? {
                ToolCallFormat::Off | ToolCallFormat::Auto => None,
                named => Self::resolve(named, model),
            },
            ToolCallFormat::Hermes | ToolCallFormat::Qwen => Some(Self::Hermes),
            ToolCallFormat::Llama3 => Some(Self::Llama3),
            ToolCallFormat::Mistral => Some(Self::Mistral),
        }
    }

    fn marker(self) -> &'static str {
        match self {
            Self::Hermes => HERMES_OPEN,
            Self::Llama3 => PYTHON_TAG,
            Self::Mistral => TOOL_CALLS,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Hermes => "hermes",
            Self::Llama3 => "llama3",
            Self::Mistral => "mistral",
        }
    }
}

/// A call found in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TextCall {
    pub(crate) name: String,
    /// The arguments as JSON text (an object).
    pub(crate) arguments: String,
}

/// What is left at the end of a response.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Finish {
    /// Text still to show (held back, or what did not parse).
    pub(crate) text: String,
    pub(crate) calls: Vec<TextCall>,
    /// Why text that looked like a call stayed text.
    pub(crate) notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    /// Text goes out, but for a suffix that could start a marker.
    Passing,
    /// A marker (or Llama 3's opening `{`) was seen: everything is held to the end.
    Holding,
}

/// The state machine of one response.
#[derive(Debug, Clone)]
pub(crate) struct TextCalls {
    format: Format,
    tools: Vec<String>,
    mode: Mode,
    /// Text not yet given out.
    held: String,
    /// Whether anything but whitespace went out (Llama 3's bare JSON must open the message).
    shown_text: bool,
}

impl TextCalls {
    pub(crate) fn new(format: Format, tools: Vec<String>) -> Self {
        Self { format, tools, mode: Mode::Passing, held: String::new(), shown_text: false }
    }

    /// Takes one piece of text; returns what can be shown now.
    pub(crate) fn push(&mut self, piece: &str) -> String {
        self.held.push_str(piece);
        if self.mode == Mode::Holding {
            return String::new();
        }
        if self.format == Format::Llama3 && !self.shown_text {
            let start = self.held.trim_start();
            if start.is_empty() {
                return String::new();
            }
            if start.starts_with('{') {
                self.mode = Mode::Holding;
                return String::new();
            }
        }
        let marker = self.format.marker();
        if let Some(at) = self.held.find(marker) {
            self.mode = Mode::Holding;
            let rest = self.held.split_off(at);
            let shown = std::mem::replace(&mut self.held, rest);
            self.note_shown(&shown);
            return shown;
        }
        let keep = partial_marker_len(&self.held, marker);
        let rest = self.held.split_off(self.held.len() - keep);
        let shown = std::mem::replace(&mut self.held, rest);
        self.note_shown(&shown);
        shown
    }

    fn note_shown(&mut self, shown: &str) {
        self.shown_text |= !shown.trim().is_empty();
    }

    /// Ends the response: parses what was held.
    pub(crate) fn finish(self) -> Finish {
        let held = self.held;
        match self.mode {
            Mode::Passing => Finish { text: held, ..Finish::default() },
            Mode::Holding => {
                let parsed = match self.format {
                    Format::Hermes => parse_hermes(&held, &self.tools),
                    Format::Llama3 => parse_llama3(&held, &self.tools),
                    Format::Mistral => parse_mistral(&held, &self.tools),
                };
                match parsed {
                    Ok(Parsed { text, calls }) => Finish { text, calls, notes: Vec::new() },
                    Err(Failure::Quiet) => Finish { text: held, ..Finish::default() },
                    Err(Failure::Noted(why)) => {
                        let note = format!(
                            "the model wrote text that looks like a {} tool call but is not one ({why}); it was kept as text",
                            self.format.name()
                        );
                        Finish { text: held, calls: Vec::new(), notes: vec![note] }
                    }
                }
            }
        }
    }
}

/// The length of the longest suffix of `text` that is a proper prefix of `marker`.
fn partial_marker_len(text: &str, marker: &str) -> usize {
    (1..marker.len().min(text.len() + 1))
        .rev()
        .find(|&n| text.is_char_boundary(text.len() - n) && text.ends_with(&marker[..n]))
        .unwrap_or(0)
}

/// Calls, and the text around them.
#[derive(Debug)]
struct Parsed {
    text: String,
    calls: Vec<TextCall>,
}

#[derive(Debug)]
enum Failure {
    /// Not a call, and nothing suggests it was meant as one (a JSON answer).
    Quiet,
    /// Meant as a call, but not one: why.
    Noted(String),
}

/// Reads one JSON value at the start of `text` (after whitespace); returns it and the rest.
fn json_prefix(text: &str) -> Result<(Value, &str), String> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    match values.next() {
        Some(Ok(value)) => {
            let end = values.byte_offset();
            Ok((value, &text[end..]))
        }
        Some(Err(err)) => Err(format!("bad JSON: {err}")),
        None => Err("no JSON after the marker".to_owned()),
    }
}

/// A call object: `name` and `arguments` (or `parameters`), the arguments an object or JSON
/// text of one; no arguments is `{}`.
fn call_of(value: &Value, tools: &[String]) -> Result<TextCall, String> {
    let Some(object) = value.as_object() else {
        return Err("not a JSON object".to_owned());
    };
    let name = match object.get("name") {
        Some(Value::String(name)) if !name.is_empty() => name,
        _ => return Err("no tool name".to_owned()),
    };
    if !tools.iter().any(|tool| tool == name) {
        return Err(format!("unknown tool `{name}`"));
    }
    let arguments = match object.get("arguments").or_else(|| object.get("parameters")) {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(value @ Value::Object(_)) => value.to_string(),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(_)) => text.clone(),
            _ => return Err(format!("the arguments of `{name}` are not a JSON object")),
        },
        Some(_) => return Err(format!("the arguments of `{name}` are not a JSON object")),
    };
    Ok(TextCall { name: name.clone(), arguments })
}

/// Appends `piece` to `text` unless it is only whitespace.
fn keep_text(text: &mut String, piece: &str) {
    if !piece.trim().is_empty() {
        text.push_str(piece);
    }
}

/// `<tool_call>{…}</tool_call>`, one or several, with text between and after. A block without
/// its closing tag runs to the end.
fn parse_hermes(held: &str, tools: &[String]) -> Result<Parsed, Failure> {
    let mut parsed = Parsed { text: String::new(), calls: Vec::new() };
    let mut rest = held;
    while let Some(at) = rest.find(HERMES_OPEN) {
        keep_text(&mut parsed.text, &rest[..at]);
        let body = &rest[at + HERMES_OPEN.len()..];
        let (inner, after) = match body.find(HERMES_CLOSE) {
            Some(end) => (&body[..end], &body[end + HERMES_CLOSE.len()..]),
            None => (body, ""),
        };
        let (value, trailing) = json_prefix(inner).map_err(Failure::Noted)?;
        if !trailing.trim().is_empty() {
            return Err(Failure::Noted("text after the JSON inside <tool_call>".to_owned()));
        }
        parsed.calls.push(call_of(&value, tools).map_err(Failure::Noted)?);
        rest = after;
    }
    keep_text(&mut parsed.text, rest);
    Ok(parsed)
}

/// `<|python_tag|>{…}` (several separated by `;` or by further tags), or the whole message as
/// `{…}` (also several separated by `;`).
fn parse_llama3(held: &str, tools: &[String]) -> Result<Parsed, Failure> {
    let mut body = held.to_owned();
    for token in LLAMA_END_TOKENS {
        body = body.replace(token, "");
    }
    let tagged = body.contains(PYTHON_TAG);
    let (before, calls_text) = match body.find(PYTHON_TAG) {
        Some(at) => (&body[..at], &body[at + PYTHON_TAG.len()..]),
        None => ("", body.as_str()),
    };
    let fail = |why: String| {
        // A message that is JSON but names no call is an answer in JSON, not a failed call.
        if tagged || calls_text.contains("\"name\"") { Failure::Noted(why) } else { Failure::Quiet }
    };
    let mut parsed = Parsed { text: String::new(), calls: Vec::new() };
    keep_text(&mut parsed.text, before);
    let mut rest = calls_text;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ';');
        if let Some(after) = rest.strip_prefix(PYTHON_TAG) {
            rest = after;
            continue;
        }
        if rest.is_empty() {
            break;
        }
        let (value, after) = json_prefix(rest).map_err(fail)?;
        parsed.calls.push(call_of(&value, tools).map_err(fail)?);
        rest = after;
    }
    if parsed.calls.is_empty() {
        return Err(fail("no JSON after the marker".to_owned()));
    }
    Ok(parsed)
}

/// `[TOOL_CALLS] [{…}, …]` or `[TOOL_CALLS]name[ARGS]{…}` (optionally `name[CALL_ID]id[ARGS]`),
/// repeated; text after the calls is kept.
fn parse_mistral(held: &str, tools: &[String]) -> Result<Parsed, Failure> {
    const ARGS: &str = "[ARGS]";
    const CALL_ID: &str = "[CALL_ID]";
    let mut parsed = Parsed { text: String::new(), calls: Vec::new() };
    let Some(at) = held.find(TOOL_CALLS) else {
        return Err(Failure::Quiet);
    };
    keep_text(&mut parsed.text, &held[..at]);
    let mut rest = &held[at..];
    while let Some(after) = rest.trim_start().strip_prefix(TOOL_CALLS) {
        let body = after.trim_start();
        if body.starts_with('[') {
            let (value, after) = json_prefix(body).map_err(Failure::Noted)?;
            let Some(items) = value.as_array() else {
                return Err(Failure::Noted("not a JSON array".to_owned()));
            };
            if items.is_empty() {
                return Err(Failure::Noted("no calls in the array".to_owned()));
            }
            for item in items {
                parsed.calls.push(call_of(item, tools).map_err(Failure::Noted)?);
            }
            rest = after;
        } else {
            let Some(args_at) = body.find(ARGS) else {
                return Err(Failure::Noted("neither a JSON array nor name[ARGS]".to_owned()));
            };
            let head = &body[..args_at];
            let name = head.split(CALL_ID).next().unwrap_or(head).trim();
            let (arguments, after) =
                json_prefix(&body[args_at + ARGS.len()..]).map_err(Failure::Noted)?;
            let value = serde_json::json!({ "name": name, "arguments": arguments });
            parsed.calls.push(call_of(&value, tools).map_err(Failure::Noted)?);
            rest = after;
        }
    }
    keep_text(&mut parsed.text, rest.trim_end_matches("</s>"));
    Ok(parsed)
}

/// The machine for a request to `config`: the format and the offered tools' names. `None` when
/// nothing is to be parsed (no format, no tools offered, or not Chat Completions).
pub(crate) fn for_request(config: &ProviderConfig, request: &ModelRequest) -> Option<TextCalls> {
    if request.tools.is_empty() || config.wire_api != WireApi::Chat {
        return None;
    }
    let format = Format::resolve(config.tool_call_format, &request.model)?;
    Some(TextCalls::new(format, request.tools.iter().map(|tool| tool.name.clone()).collect()))
}

/// The ids a client gives the tool calls it finds in text, shared by its requests.
#[derive(Debug, Clone)]
pub(crate) struct CallIds {
    tag: u32,
    next: Arc<AtomicU64>,
}

impl CallIds {
    /// Ids `call_text_<tag>_0`, `call_text_<tag>_1`, … (`tag` in hex).
    pub(crate) fn new(tag: u32) -> Self {
        Self { tag, next: Arc::new(AtomicU64::new(0)) }
    }

    fn next(&self) -> ToolCallId {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        ToolCallId::new(format!("call_text_{:08x}_{n}", self.tag))
    }
}

/// `TextCalls` on a stream of neutral events: text goes through the machine; at `Completed`
/// what was held becomes text, calls (`ToolCallStart`/`ToolCallArgsDelta`/`ToolCallDone`) and
/// warnings, and a response that made calls stops for tool use.
#[derive(Debug)]
pub(crate) struct Filter {
    machine: Option<TextCalls>,
    ids: CallIds,
}

impl Filter {
    pub(crate) fn new(machine: TextCalls, ids: CallIds) -> Self {
        Self { machine: Some(machine), ids }
    }

    /// Passes `event` on through `out`, translated.
    pub(crate) fn on_event(&mut self, event: ResponseEvent, out: &mut dyn FnMut(ResponseEvent)) {
        let Some(machine) = &mut self.machine else {
            out(event);
            return;
        };
        match event {
            ResponseEvent::TextDelta(text) => {
                let shown = machine.push(&text);
                if !shown.is_empty() {
                    out(ResponseEvent::TextDelta(shown));
                }
            }
            ResponseEvent::Completed { stop_reason } => {
                let Some(machine) = self.machine.take() else { return };
                let finish = machine.finish();
                for note in finish.notes {
                    out(ResponseEvent::Warning(note));
                }
                if !finish.text.is_empty() {
                    out(ResponseEvent::TextDelta(finish.text));
                }
                let made_calls = !finish.calls.is_empty();
                for call in finish.calls {
                    let id = self.ids.next();
                    out(ResponseEvent::ToolCallStart { id: id.clone(), name: call.name });
                    out(ResponseEvent::ToolCallArgsDelta { id: id.clone(), delta: call.arguments });
                    out(ResponseEvent::ToolCallDone { id });
                }
                let stop_reason = match stop_reason {
                    StopReason::EndTurn | StopReason::Other if made_calls => StopReason::ToolUse,
                    other => other,
                };
                out(ResponseEvent::Completed { stop_reason });
            }
            other => out(other),
        }
    }
}

#[cfg(test)]
mod tests;
