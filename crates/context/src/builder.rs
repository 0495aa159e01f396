//! `ContextBuilder`: the `PromptBuilder` the kernel calls once per step.
//!
//! The system prompt is the ordered sections base instructions, environment, AGENTS.md, any
//! sections the session adds (`with_section`: the skill catalogue), then the agent's own
//! instructions (a subagent type's) when present. Tool schemas go in
//! `ModelRequest.tools`; the history is the kernel's projection, with blob references inlined
//! when a resolver is given.
//!
//! Invariants (prefix stability: consecutive requests of a session extend each other byte for
//! byte, so provider prompt caches hit):
//! - The base sections are rendered once, in `ContextBuilder::new` (the date and git status are
//!   frozen then); a session's instructions are frozen at its first `build`.
//! - A blob is resolved at most once per builder (by its sha256) and the answer, including "not
//!   found", is kept, so a message looks the same in every later request.
//! - Nothing is truncated to fit: a request that does not fit the context window is an error
//!   (`check_fits`), never a silently shortened request.
//!
//! The exact tokenizer is slow to load, so nothing on the path to a request loads it: the
//! window check compares a byte bound (never below the estimate) with the room left, then the
//! cheap `estimate_tokens`; the section budgets count exactly only a section whose estimate is
//! close to a threshold (refusal in `new`, large-section warnings when `warnings` is first
//! called).

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use codecoder_kernel::{ModelRequest, PromptBuilder, PromptInput, ToolSpec};
use codecoder_protocol::{
    BlobRef, ContentItem, Message, MessageId, MessageItem, PromptSection, SessionId,
};
use codecoder_stdx::Clock;

use crate::agents_md::{AgentsMdConfig, AgentsMdLoader};
use crate::base::BASE_INSTRUCTIONS;
use crate::environment::{Environment, render_environment};
use crate::error::{Error, Result};
use crate::section::{Section, SectionPolicy, Warning};
use crate::tokens::estimate_tokens;

/// What every message costs beyond its content (role and framing), in tokens.
pub(crate) const MESSAGE_OVERHEAD_TOKENS: u64 = 4;
/// What an image is counted as, in tokens (a large image on current providers).
const IMAGE_TOKENS: u64 = 1_500;
/// The text before the joined AGENTS.md files.
const AGENTS_MD_PREAMBLE: &str =
    "# AGENTS.md\n\nThe project's instruction files, outermost first.\n\n";

/// The name of the section that describes where and when the session runs (working directory,
/// OS, shell, date, git status).
pub const ENVIRONMENT_SECTION: &str = "environment";

/// How prompts are assembled. No `Default`: start from `ContextConfig::standard`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextConfig {
    /// The model's context window, in tokens.
    pub context_window: u64,
    /// Tokens reserved for the answer (also sent as the request's output cap).
    pub max_output_tokens: u64,
    /// The first section.
    pub base_instructions: String,
    /// Which instruction files to read.
    pub agents_md: AgentsMdConfig,
    /// Section size thresholds.
    pub sections: SectionPolicy,
    /// A JSON Schema every answer's text must follow (`exec --output-schema`); `None` normally.
    pub output_schema: Option<serde_json::Value>,
    /// The reasoning settings every request carries (empty normally).
    pub reasoning: codecoder_protocol::ReasoningSettings,
}

impl ContextConfig {
    /// The standard base instructions, AGENTS.md from `home` and the project, standard sizes.
    pub fn standard(context_window: u64, max_output_tokens: u64, home: Option<PathBuf>) -> Self {
        Self {
            context_window,
            max_output_tokens,
            base_instructions: BASE_INSTRUCTIONS.to_owned(),
            agents_md: AgentsMdConfig::standard(home),
            sections: SectionPolicy::standard(),
            output_schema: None,
            reasoning: codecoder_protocol::ReasoningSettings::default(),
        }
    }
}

/// Inlines a blob the session log moved out of a message: its content, or `None` to keep the
/// reference (and its preview).
pub type BlobResolver = dyn Fn(&BlobRef) -> Option<ContentItem> + Send + Sync;

/// Per-builder memory; see the module invariants.
#[derive(Default)]
struct Caches {
    /// Each session's instructions, frozen at its first request.
    sessions: HashMap<SessionId, Arc<str>>,
    /// Blobs by sha256, as the resolver answered the first time.
    blobs: HashMap<String, Option<ContentItem>>,
    /// Message token counts, with the fingerprint of the content they were counted for.
    messages: HashMap<MessageId, (u64, u64)>,
    /// Token counts of long texts (instructions, tool JSON) by content hash.
    texts: HashMap<u64, u64>,
}

/// Assembles requests for one session and its subagents. Make one per session (new, resumed
/// or forked): the environment and AGENTS.md are read when it is made.
pub struct ContextBuilder {
    context_window: u64,
    max_output_tokens: u64,
    policy: SectionPolicy,
    sections: Vec<Section>,
    base: Arc<str>,
    agents_md_files: Vec<PathBuf>,
    /// Warnings known without counting (AGENTS.md cut or unreadable).
    file_warnings: Vec<Warning>,
    /// `file_warnings`, then large sections; computed on first use (it counts tokens).
    warnings: OnceLock<Vec<Warning>>,
    resolver: Option<Box<BlobResolver>>,
    output_schema: Option<serde_json::Value>,
    reasoning: codecoder_protocol::ReasoningSettings,
    // `build` takes `&self` and is called from the thread of every agent in the tree (root and
    // subagents), so the caches sit behind one mutex. It is never held while a blob is resolved.
    caches: Mutex<Caches>,
}

impl std::fmt::Debug for ContextBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextBuilder")
            .field("context_window", &self.context_window)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("sections", &self.sections)
            .finish_non_exhaustive()
    }
}

impl ContextBuilder {
    /// Renders the sections now (date from `clock`, AGENTS.md through `agents_md`). Fails when
    /// a section is over the refusal threshold or the output reserve fills the window.
    pub fn new(
        config: &ContextConfig,
        environment: &Environment,
        clock: &dyn Clock,
        agents_md: &AgentsMdLoader,
    ) -> Result<Self> {
        if config.max_output_tokens >= config.context_window {
            return Err(Error::InvalidWindow {
                context_window: config.context_window,
                max_output_tokens: config.max_output_tokens,
            });
        }
        let docs = agents_md.load(&config.agents_md, &environment.cwd);
        let mut texts = vec![
            ("base instructions", config.base_instructions.trim().to_owned()),
            (ENVIRONMENT_SECTION, render_environment(environment, clock)),
        ];
        if !docs.text.is_empty() {
            texts.push(("AGENTS.md", format!("{AGENTS_MD_PREAMBLE}{}", docs.text)));
        }
        let mut sections = Vec::new();
        for (name, text) in texts {
            if text.is_empty() {
                continue;
            }
            config.sections.refuse(name, &text)?;
            sections.push(Section { name: name.to_owned(), text });
        }
        let base: Vec<&str> = sections.iter().map(|section| section.text.as_str()).collect();
        Ok(Self {
            context_window: config.context_window,
            max_output_tokens: config.max_output_tokens,
            output_schema: config.output_schema.clone(),
            reasoning: config.reasoning,
            policy: config.sections,
            base: base.join("\n\n").into(),
            sections,
            agents_md_files: docs.files,
            file_warnings: docs.warnings,
            warnings: OnceLock::new(),
            resolver: None,
            caches: Mutex::new(Caches::default()),
        })
    }

    /// Inlines blob references of the history through `resolver` (see `BlobResolver`).
    #[must_use]
    pub fn with_blob_resolver(
        mut self,
        resolver: impl Fn(&BlobRef) -> Option<ContentItem> + Send + Sync + 'static,
    ) -> Self {
        self.resolver = Some(Box::new(resolver));
        self
    }

    /// Adds a section after the others (the skill catalogue, say), made once at session start
    /// like the rest; an empty `text` adds nothing. Fails when it is over the refusal threshold.
    pub fn with_section(mut self, name: &str, text: String) -> Result<Self> {
        if text.trim().is_empty() {
            return Ok(self);
        }
        self.policy.refuse(name, &text)?;
        self.sections.push(Section { name: name.to_owned(), text });
        let texts: Vec<&str> = self.sections.iter().map(|section| section.text.as_str()).collect();
        self.base = texts.join("\n\n").into();
        Ok(self)
    }

    /// The sections, in prompt order (without agent instructions).
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// What the person should know about the prompt: cut or unreadable AGENTS.md files, then
    /// sections over the warning threshold. The first call may load the tokenizer (~100 ms) when
    /// a section is close to the threshold; call it off the path to the first request.
    pub fn warnings(&self) -> &[Warning] {
        self.warnings.get_or_init(|| {
            let mut warnings = self.file_warnings.clone();
            for section in &self.sections {
                // The sections passed the refusal check in `new`, so only a warning can come.
                if let Ok(Some(warning)) = self.policy.check(&section.name, &section.text) {
                    warnings.push(warning);
                }
            }
            warnings
        })
    }

    /// The instruction files used, in prompt order.
    pub fn agents_md_files(&self) -> &[PathBuf] {
        &self.agents_md_files
    }

    /// The model's context window.
    pub fn context_window(&self) -> u64 {
        self.context_window
    }

    /// The tokens reserved for the answer.
    pub fn max_output_tokens(&self) -> u64 {
        self.max_output_tokens
    }

    /// Checks extra instructions (a subagent type's) against the section policy; call it when
    /// agent types are configured, since `build` cannot fail.
    pub fn check_section(&self, name: &str, text: &str) -> Result<Option<Warning>> {
        self.policy.check(name, text)
    }

    /// The instructions of `session_id`: frozen at the first call for that session, so later
    /// calls return the same text whatever `agent_instructions` they pass.
    pub fn instructions_for(
        &self,
        session_id: SessionId,
        agent_instructions: Option<&str>,
    ) -> Arc<str> {
        let mut caches = self.lock();
        let instructions = caches.sessions.entry(session_id).or_insert_with(|| {
            match agent_instructions.map(str::trim).filter(|extra| !extra.is_empty()) {
                Some(extra) => format!("{}\n\n# Agent instructions\n\n{extra}", self.base).into(),
                None => Arc::clone(&self.base),
            }
        });
        Arc::clone(instructions)
    }

    /// The estimated size of `request` in tokens: instructions, tool schemas as JSON, and the
    /// history's content (a blob reference counts its preview).
    pub fn estimate_tokens(&self, request: &ModelRequest) -> u64 {
        self.text_tokens(&request.instructions)
            + self.tools_tokens(&request.tools)
            + request.history.iter().map(|message| self.message_tokens(message)).sum::<u64>()
    }

    /// `Ok` when `request` fits the context window less the output reserve; otherwise an error
    /// saying how large it is and what to do.
    pub fn check_fits(&self, request: &ModelRequest) -> Result<()> {
        let bound = bytes(&request.instructions)
            + bytes(&tools_json(&request.tools))
            + request.history.iter().map(|message| message_bound(message)).sum::<u64>();
        if bound <= self.available() {
            return Ok(());
        }
        self.check_needed(&request.model, self.estimate_tokens(request))
    }

    /// The tokens a request may hold: the window less the output reserve.
    pub(crate) fn available(&self) -> u64 {
        self.context_window - self.max_output_tokens
    }

    /// `Ok` when `needed` tokens fit; the error names `model`.
    pub(crate) fn check_needed(&self, model: &str, needed: u64) -> Result<()> {
        let available = self.available();
        if needed <= available {
            return Ok(());
        }
        Err(Error::ContextWindowExceeded {
            model: model.to_owned(),
            needed,
            context_window: self.context_window,
            max_output_tokens: self.max_output_tokens,
            available,
        })
    }

    /// The session's frozen instructions when it has had a request, else the base sections.
    pub(crate) fn known_instructions(&self, session_id: SessionId) -> Arc<str> {
        let caches = self.lock();
        caches.sessions.get(&session_id).map_or_else(|| Arc::clone(&self.base), Arc::clone)
    }

    /// The history as the model will see it: blob references inlined where the resolver
    /// answers.
    pub(crate) fn resolve_history(&self, history: &[Arc<Message>]) -> Vec<Arc<Message>> {
        history
            .iter()
            .map(|message| match self.resolve_message(message) {
                // Nothing to inline: share the message as it is.
                Cow::Borrowed(_) => Arc::clone(message),
                Cow::Owned(resolved) => Arc::new(resolved),
            })
            .collect()
    }

    /// `message` with its blob references inlined where the resolver answers (borrowed when
    /// there is nothing to inline).
    pub(crate) fn resolve_message<'a>(&self, message: &'a Message) -> Cow<'a, Message> {
        let Some(resolver) = &self.resolver else {
            return Cow::Borrowed(message);
        };
        inline_blobs(message, &|blob| self.resolve_blob(resolver, blob))
    }

    /// The blob's content as first resolved.
    fn resolve_blob(&self, resolver: &BlobResolver, blob: &BlobRef) -> Option<ContentItem> {
        if let Some(known) = self.lock().blobs.get(&blob.sha256) {
            return known.clone();
        }
        let resolved = resolver(blob);
        // Another thread may have resolved it meanwhile: the first answer stays.
        self.lock().blobs.entry(blob.sha256.clone()).or_insert(resolved).clone()
    }

    /// The tokens of a text, counted once per distinct content.
    pub(crate) fn text_tokens(&self, text: &str) -> u64 {
        let mut hasher = DefaultHasher::new();
        text.hash(&mut hasher);
        let key = hasher.finish();
        if let Some(&tokens) = self.lock().texts.get(&key) {
            return tokens;
        }
        let tokens = estimate_tokens(text);
        self.lock().texts.insert(key, tokens);
        tokens
    }

    /// The tokens of the tool schemas, as JSON.
    pub(crate) fn tools_tokens(&self, tools: &[ToolSpec]) -> u64 {
        if tools.is_empty() {
            return 0;
        }
        self.text_tokens(&tools_json(tools))
    }

    /// The tokens of one message, counted once per message and content.
    pub(crate) fn message_tokens(&self, message: &Message) -> u64 {
        let fingerprint = fingerprint(&message.items);
        if let Some(&(known, tokens)) = self.lock().messages.get(&message.id)
            && known == fingerprint
        {
            return tokens;
        }
        let tokens = MESSAGE_OVERHEAD_TOKENS + message.items.iter().map(item_tokens).sum::<u64>();
        self.lock().messages.insert(message.id, (fingerprint, tokens));
        tokens
    }

    fn lock(&self) -> MutexGuard<'_, Caches> {
        self.caches.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ContextBuilder {
    /// The named sections `instructions` (as `instructions_for` made it) is made of: the base
    /// sections, then the agent's own instructions when they were added.
    fn sections_of(&self, instructions: &str) -> Vec<PromptSection> {
        let mut sections: Vec<PromptSection> = self
            .sections
            .iter()
            .map(|section| PromptSection { name: section.name.clone(), text: section.text.clone() })
            .collect();
        if let Some(extra) =
            instructions.strip_prefix(&*self.base).and_then(|rest| rest.strip_prefix("\n\n"))
        {
            sections.push(PromptSection {
                name: "agent instructions".to_owned(),
                text: extra.to_owned(),
            });
        }
        sections
    }
}

impl PromptBuilder for ContextBuilder {
    fn build(&self, input: &PromptInput<'_>) -> ModelRequest {
        let instructions = self.instructions_for(input.session_id, input.agent_instructions);
        ModelRequest {
            session_id: input.session_id,
            model: input.model.to_owned(),
            sections: self.sections_of(&instructions),
            instructions: instructions.to_string(),
            history: self.resolve_history(input.history),
            tools: input.tools.to_vec(),
            max_output_tokens: Some(u32::try_from(self.max_output_tokens).unwrap_or(u32::MAX)),
            output_schema: self.output_schema.clone(),
            reasoning: self.reasoning,
        }
    }
}

/// The tool schemas as JSON, as they are counted.
pub(crate) fn tools_json(tools: &[ToolSpec]) -> String {
    if tools.is_empty() {
        return String::new();
    }
    let json: Vec<serde_json::Value> = tools
        .iter()
        .map(|tool| {
            serde_json::json!({
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.schema,
            })
        })
        .collect();
    serde_json::Value::Array(json).to_string()
}

/// The length of `text` in bytes: an upper bound of its token count.
pub(crate) fn bytes(text: &str) -> u64 {
    u64::try_from(text.len()).unwrap_or(u64::MAX)
}

/// An upper bound of `message_tokens` without counting: bytes for text, as counted for the rest.
pub(crate) fn message_bound(message: &Message) -> u64 {
    MESSAGE_OVERHEAD_TOKENS
        + message
            .items
            .iter()
            .map(|item| match item {
                MessageItem::Text { text } => bytes(text),
                MessageItem::Reasoning(reasoning) => bytes(&reasoning.text),
                MessageItem::ToolCall(call) => {
                    let args = match &call.args {
                        serde_json::Value::String(raw) => bytes(raw),
                        args => bytes(&args.to_string()),
                    };
                    bytes(&call.name) + args
                }
                MessageItem::ToolResult(result) => result.content.iter().map(content_bound).sum(),
                MessageItem::Image(_) => IMAGE_TOKENS,
                MessageItem::BlobRef(blob) => bytes(&blob.preview),
            })
            .sum::<u64>()
}

/// An upper bound of `content_tokens` without counting.
pub(crate) fn content_bound(content: &ContentItem) -> u64 {
    match content {
        ContentItem::Text { text } => bytes(text),
        ContentItem::Image(_) => IMAGE_TOKENS,
        ContentItem::BlobRef(blob) => bytes(&blob.preview),
    }
}

/// `message` with its blob references replaced by what `resolve` answers for them (kept where it
/// answers `None`); borrowed when it has none. The one rule by which a request's history inlines
/// blobs, for the builder and for requests rebuilt from a log.
pub(crate) fn inline_blobs<'a>(
    message: &'a Message,
    resolve: &dyn Fn(&BlobRef) -> Option<ContentItem>,
) -> Cow<'a, Message> {
    if !has_blob(message) {
        return Cow::Borrowed(message);
    }
    let items = message
        .items
        .iter()
        .map(|item| match item {
            MessageItem::BlobRef(blob) => match resolve(blob) {
                Some(ContentItem::Text { text }) => MessageItem::Text { text },
                Some(ContentItem::Image(image)) => MessageItem::Image(image),
                Some(ContentItem::BlobRef(blob)) => MessageItem::BlobRef(blob),
                None => item.clone(),
            },
            MessageItem::ToolResult(result) => {
                let mut result = result.clone();
                for content in &mut result.content {
                    if let ContentItem::BlobRef(blob) = content
                        && let Some(resolved) = resolve(blob)
                    {
                        *content = resolved;
                    }
                }
                MessageItem::ToolResult(result)
            }
            MessageItem::Text { .. }
            | MessageItem::Reasoning(_)
            | MessageItem::ToolCall(_)
            | MessageItem::Image(_) => item.clone(),
        })
        .collect();
    Cow::Owned(Message { id: message.id, role: message.role, items })
}

/// Whether any item of `message` is a blob reference.
fn has_blob(message: &Message) -> bool {
    message.items.iter().any(|item| match item {
        MessageItem::BlobRef(_) => true,
        MessageItem::ToolResult(result) => {
            result.content.iter().any(|content| matches!(content, ContentItem::BlobRef(_)))
        }
        MessageItem::Text { .. }
        | MessageItem::Reasoning(_)
        | MessageItem::ToolCall(_)
        | MessageItem::Image(_) => false,
    })
}

/// A cheap summary of a message's content (kinds and lengths) that tells an inlined blob from
/// its reference.
fn fingerprint(items: &[MessageItem]) -> u64 {
    let mut hasher = DefaultHasher::new();
    for item in items {
        match item {
            MessageItem::Text { text } => (0_u8, text.len()).hash(&mut hasher),
            MessageItem::Reasoning(reasoning) => (1_u8, reasoning.text.len()).hash(&mut hasher),
            MessageItem::ToolCall(call) => (2_u8, call.name.len()).hash(&mut hasher),
            MessageItem::ToolResult(result) => {
                3_u8.hash(&mut hasher);
                for content in &result.content {
                    content_fingerprint(content).hash(&mut hasher);
                }
            }
            MessageItem::Image(image) => (4_u8, image.data_base64.len()).hash(&mut hasher),
            MessageItem::BlobRef(blob) => (5_u8, blob.preview.len()).hash(&mut hasher),
        }
    }
    hasher.finish()
}

fn content_fingerprint(content: &ContentItem) -> (u8, usize) {
    match content {
        ContentItem::Text { text } => (0, text.len()),
        ContentItem::Image(image) => (1, image.data_base64.len()),
        ContentItem::BlobRef(blob) => (2, blob.preview.len()),
    }
}

/// The tokens of one message item.
fn item_tokens(item: &MessageItem) -> u64 {
    match item {
        MessageItem::Text { text } => estimate_tokens(text),
        MessageItem::Reasoning(reasoning) => estimate_tokens(&reasoning.text),
        MessageItem::ToolCall(call) => {
            let args = match &call.args {
                serde_json::Value::String(raw) => estimate_tokens(raw),
                args => estimate_tokens(&args.to_string()),
            };
            estimate_tokens(&call.name) + args
        }
        MessageItem::ToolResult(result) => result.content.iter().map(content_tokens).sum(),
        MessageItem::Image(_) => IMAGE_TOKENS,
        MessageItem::BlobRef(blob) => estimate_tokens(&blob.preview),
    }
}

/// The tokens of one content item.
pub(crate) fn content_tokens(content: &ContentItem) -> u64 {
    match content {
        ContentItem::Text { text } => estimate_tokens(text),
        ContentItem::Image(_) => IMAGE_TOKENS,
        ContentItem::BlobRef(blob) => estimate_tokens(&blob.preview),
    }
}
