//! The prompt seam: `PromptBuilder` turns the session's projected history and the tool specs into
//! a `ModelRequest`. Prompt sections, AGENTS.md and caching live in the `context` crate; the
//! kernel only calls this.
//!
//! Invariant: a builder adds nothing model-visible that is not either fixed configuration
//! (instructions, tool specs) or the history it is given, so the log rebuilds every request.

use std::sync::Arc;

use codecoder_protocol::{Message, PromptSection, SessionId, StepId, TurnId, join_sections};

use crate::model::{ModelRequest, ToolSpec};

/// What a request is built from.
#[derive(Debug, Clone, Copy)]
pub struct PromptInput<'a> {
    /// The session.
    pub session_id: SessionId,
    /// The model id.
    pub model: &'a str,
    /// Extra instructions of this agent (a subagent type's), if any.
    pub agent_instructions: Option<&'a str>,
    /// The projected history, oldest first (shared messages; clone the `Arc`s).
    pub history: &'a [Arc<Message>],
    /// The tools the model may call.
    pub tools: &'a [ToolSpec],
    /// The turn.
    pub turn: TurnId,
    /// The step.
    pub step: StepId,
}

/// Builds requests.
pub trait PromptBuilder: Send + Sync {
    /// The request for this step.
    fn build(&self, input: &PromptInput<'_>) -> ModelRequest;
}

/// A builder with fixed instructions (tests, simple front-ends).
#[derive(Debug, Clone)]
pub struct StaticPrompt {
    /// The system prompt.
    pub instructions: String,
    /// A cap on generated tokens.
    pub max_output_tokens: Option<u32>,
}

impl PromptBuilder for StaticPrompt {
    fn build(&self, input: &PromptInput<'_>) -> ModelRequest {
        let mut sections = vec![PromptSection {
            name: "instructions".to_owned(),
            text: self.instructions.clone(),
        }];
        if let Some(extra) = input.agent_instructions {
            sections.push(PromptSection {
                name: "agent instructions".to_owned(),
                text: extra.to_owned(),
            });
        }
        let instructions = join_sections(&sections);
        ModelRequest {
            session_id: input.session_id,
            model: input.model.to_owned(),
            instructions,
            sections,
            history: input.history.to_vec(),
            tools: input.tools.to_vec(),
            max_output_tokens: self.max_output_tokens,
            output_schema: None,
            reasoning: Default::default(),
        }
    }
}
