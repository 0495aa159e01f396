//! `ask_user {question, options?}`: a question to the person through the kernel's reply
//! one-shot (`ToolContext::ask_user`); the call blocks until the answer, a decline or a cancel.
//!
//! Invariant: a cancel while waiting returns `ToolError::Cancelled` at once (the kernel's
//! `ask_user` selects over the cancel signal).

use codecoder_kernel::{ToolKind, ToolOutput};
use codecoder_protocol::{AskUserAnswer, CallKind, CallView, ToolError, first_line};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::env::CallEnv;
use crate::{Builtin, invalid, parse_args, str_arg};

/// Suggested answers allowed at most.
const MAX_OPTIONS: usize = 10;

pub(crate) struct AskUser;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    question: String,
    #[serde(default)]
    options: Vec<String>,
}

impl Builtin for AskUser {
    fn name(&self) -> &'static str {
        "ask_user"
    }
    fn description(&self) -> &'static str {
        "Asks the user a question and waits for the answer. Give `options` (up to 10 short \
         answers) when the choice is among known alternatives; the user may still answer \
         freely. Ask only when you cannot find the answer yourself."
    }
    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "question": { "type": "string", "minLength": 1, "description": "The question." },
                "options": { "type": "array", "items": { "type": "string", "minLength": 1 }, "maxItems": MAX_OPTIONS, "description": "Suggested answers." }
            },
            "required": ["question"],
            "additionalProperties": false
        })
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Interactive
    }
    fn summary(&self, args: &Value) -> String {
        format!("ask: {}", str_arg(args, "question"))
    }
    fn view(&self, args: &Value) -> CallView {
        CallView {
            kind: CallKind::Ask,
            title: self.name().to_owned(),
            detail: first_line(str_arg(args, "question"), 120),
            ..CallView::default()
        }
    }
    fn run(&self, env: &dyn CallEnv, args: Value) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(args)?;
        let question = args.question.trim();
        if question.is_empty() {
            return Err(invalid("`question` is empty"));
        }
        if args.options.len() > MAX_OPTIONS {
            return Err(invalid(format!("`options` allows at most {MAX_OPTIONS} answers")));
        }
        if args.options.iter().any(|option| option.trim().is_empty()) {
            return Err(invalid("`options` has an empty answer"));
        }
        match env.ask_user(question.to_owned(), args.options)? {
            AskUserAnswer::Answer { text } => {
                Ok(ToolOutput::text(format!("The user answered: {text}")))
            }
            AskUserAnswer::Declined => Ok(ToolOutput::text(
                "The user declined to answer. Go on with your best judgement, or stop and say \
                 what you need.",
            )),
            AskUserAnswer::Unavailable { reason } => Ok(ToolOutput::text(format!(
                "The question could not be asked: {reason}. No one will answer questions in this \
                 session; go on with your best judgement, or stop and say what you need."
            ))),
        }
    }
}
