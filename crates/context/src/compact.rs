//! `ContextCompactor`: the kernel's `Compactor`, with this crate's token estimates.
//!
//! - When: the next request (instructions, tools, history, input), estimated exactly as
//!   `ContextWindowGuard` estimates it, passes the limit (`model_auto_compact_token_limit`,
//!   default 90 % of the window less the output reserve).
//! - The summary request: the history, then our handoff prompt, without tools. When that would
//!   not fit the window less the output reserve, the oldest tool outputs are replaced by a
//!   stub first (the call/result pairs stay), then the oldest large tool arguments, then the
//!   oldest texts and reasoning, until it fits.
//! - The replacement history: the previous summaries (only when no new summary was written),
//!   the most recent user messages within a budget (20k tokens, or a quarter of the window
//!   when that is less), one message carrying verbatim what must survive (the newest plan, the
//!   files read and edited, the hooks' context), and the summary marked by `SUMMARY_PREFIX`.
//!   What a call read, edited or planned is read from its view (`CallViewer`, the session's
//!   tools describing their calls), never from tool names or arguments.
//!
//! Invariants: everything here is a pure function of the history (and the builder's caches,
//! which only speed counting); messages it changes get new ids, so no cache or shared history
//! mistakes a changed message for the one it replaced; the replacement holds only user
//! messages, so no tool call is left without its result.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use codecoder_kernel::{Compactor, StepInfo, SummaryRequest, ToolSpec};
use codecoder_protocol::{
    CallKind, CallView, ContentItem, Message, MessageItem, Role, SessionId, UserInput,
};
use serde_json::Value;

use crate::builder::ContextBuilder;
use crate::window::ContextWindowGuard;

/// The summary request's prompt (codex's "context checkpoint", in our words).
pub const SUMMARY_PROMPT: &str = "You are performing a context checkpoint. The conversation so far \
is about to be replaced by your summary, and another model (or you, without this history) will \
continue the work from it. Write a handoff summary: the task and the user's constraints and \
preferences; the progress so far and the decisions made, with their reasons; what remains to do, \
in order; the files read, created or changed, and anything about them the next model must know \
(names, functions, commands that work). Be concise and concrete; do not call tools.";

/// What marks a summary in the replacement history (and how earlier ones are recognised).
pub const SUMMARY_PREFIX: &str = "Another language model started to solve this problem and \
produced a summary of its work so far. Use it to continue the task without redoing what is done:";

/// What marks the message carrying the plan, files and hook context over a compaction.
pub const CARRYOVER_PREFIX: &str = "<carried-over-context>";

/// Tokens of recent user messages a replacement keeps at most.
const USER_MESSAGES_BUDGET: u64 = 20_000;

/// Bytes of tool arguments left alone when the summary request is trimmed.
const SMALL_ARGUMENTS: usize = 256;

/// Entries per file list in the carried-over context.
const MAX_FILES: usize = 200;

/// Bytes of the newest plan carried over.
const MAX_PLAN_BYTES: usize = 8_000;

/// What a tool call is, from its tool's name and arguments (a session's `ToolRegistry::view`):
/// the compactor reads from it the files a call read or edited and the plan it states.
pub type CallViewer = Arc<dyn Fn(&str, &Value) -> CallView + Send + Sync>;

/// Compacts with `ContextBuilder`'s estimates. Register it as `AgentDeps::compactor`.
pub struct ContextCompactor {
    builder: Arc<ContextBuilder>,
    guard: ContextWindowGuard,
    limit: u64,
    viewer: CallViewer,
}

impl fmt::Debug for ContextCompactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextCompactor")
            .field("builder", &self.builder)
            .field("guard", &self.guard)
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl ContextCompactor {
    /// A compactor for requests built by `builder` for `model` with `tools`; `limit` is the
    /// auto-compaction limit in tokens (`None`: the default, see `default_limit`); `viewer`
    /// says what the history's tool calls are.
    pub fn new(
        builder: Arc<ContextBuilder>,
        model: impl Into<String>,
        tools: Vec<ToolSpec>,
        limit: Option<u64>,
        viewer: CallViewer,
    ) -> Self {
        let guard = ContextWindowGuard::new(Arc::clone(&builder), model, tools);
        let available = builder.available();
        let limit = limit.unwrap_or_else(|| default_limit(available)).min(available);
        Self { builder, guard, limit, viewer }
    }

    /// The auto-compaction limit in tokens.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The estimated tokens of one message as the model sees it.
    fn tokens(&self, message: &Message) -> u64 {
        self.builder.message_tokens(&self.builder.resolve_message(message))
    }
}

/// The default auto-compaction limit: 90 % of what a request may hold (the window less the
/// output reserve).
pub fn default_limit(available: u64) -> u64 {
    available / 10 * 9
}

impl Compactor for ContextCompactor {
    fn should_compact(&self, info: &StepInfo<'_>, input: &[UserInput]) -> bool {
        if self.guard.bound(info, input) <= self.limit {
            return false;
        }
        self.guard.estimate(info, input) > self.limit
    }

    fn history_tokens(&self, history: &[Message]) -> u64 {
        history.iter().map(|message| self.tokens(message)).sum()
    }

    fn summary_request(
        &self,
        session_id: SessionId,
        history: &[Message],
        focus: Option<&str>,
    ) -> SummaryRequest {
        let prompt = match focus.map(str::trim).filter(|focus| !focus.is_empty()) {
            Some(focus) => format!("{SUMMARY_PROMPT}\n\nFocus the summary on: {focus}"),
            None => SUMMARY_PROMPT.to_owned(),
        };
        let fixed = self.builder.text_tokens(&self.builder.known_instructions(session_id))
            + self.builder.text_tokens(&prompt)
            + crate::builder::MESSAGE_OVERHEAD_TOKENS;
        let budget = self.builder.available().saturating_sub(fixed);
        let mut sizes: Vec<u64> = history.iter().map(|message| self.tokens(message)).collect();
        let mut total: u64 = sizes.iter().sum();
        if total <= budget {
            return SummaryRequest { prompt, trimmed: None };
        }
        let mut trimmed = history.to_vec();
        for pass in [Pass::ToolOutputs, Pass::ToolArguments, Pass::Texts] {
            for index in 0..trimmed.len() {
                if total <= budget {
                    break;
                }
                if let Some(stubbed) = stub(&trimmed[index], pass) {
                    let tokens = self.tokens(&stubbed);
                    total = total - sizes[index] + tokens;
                    sizes[index] = tokens;
                    trimmed[index] = stubbed;
                }
            }
        }
        SummaryRequest { prompt, trimmed: Some(trimmed) }
    }

    fn replacement(
        &self,
        history: &[Message],
        summary: Option<&str>,
        why: &str,
        extra_context: &[String],
    ) -> Vec<Message> {
        let mut out = Vec::new();
        if summary.is_none() {
            // Nothing replaces the earlier summaries: they stay.
            out.extend(
                history
                    .iter()
                    .filter(|message| first_text(message).is_some_and(is_summary))
                    .cloned(),
            );
        }
        let budget = USER_MESSAGES_BUDGET.min(self.builder.context_window() / 4);
        out.extend(self.recent_user_messages(history, budget));
        if let Some(carried) = carryover(history, extra_context, self.viewer.as_ref()) {
            out.push(Message::user_text(carried));
        }
        let last = match summary {
            Some(summary) => format!("{SUMMARY_PREFIX}\n\n{}", summary.trim()),
            None => format!(
                "{SUMMARY_PREFIX}\n\n(No summary: {why}. The earlier conversation was trimmed; \
                 the messages above are the user's most recent ones and what was carried over. \
                 Check the files' current state before relying on earlier work.)"
            ),
        };
        out.push(Message::user_text(last));
        out
    }
}

impl ContextCompactor {
    /// The newest user messages (not summaries, prompts or carried-over context) within
    /// `budget` tokens, oldest first; the oldest one kept may be cut to fit.
    fn recent_user_messages(&self, history: &[Message], budget: u64) -> Vec<Message> {
        let mut kept = Vec::new();
        let mut left = budget;
        for message in history.iter().rev() {
            if message.role != Role::User {
                continue;
            }
            let Some(text) = user_text(message) else { continue };
            if is_summary(&text)
                || text.starts_with(CARRYOVER_PREFIX)
                || text == SUMMARY_PROMPT
                || text.starts_with(&format!("{SUMMARY_PROMPT}\n\n"))
            {
                continue;
            }
            let tokens = self.builder.text_tokens(&text) + crate::builder::MESSAGE_OVERHEAD_TOKENS;
            if tokens <= left {
                left -= tokens;
                kept.push(Message::user_text(text));
                continue;
            }
            // Cut by bytes, four to a token (a conservative ratio for prose and code).
            let keep = usize::try_from(left.saturating_mul(3)).unwrap_or(usize::MAX);
            if keep > 200 {
                let cut = floor_char_boundary(&text, keep);
                kept.push(Message::user_text(format!(
                    "{}\n[… the rest of this message was cut at compaction]",
                    &text[..cut]
                )));
            }
            break;
        }
        kept.reverse();
        kept
    }
}

/// What a trimming pass replaces.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    ToolOutputs,
    ToolArguments,
    Texts,
}

/// `message` with what `pass` replaces stubbed out (a new id), or `None` when it has nothing
/// of the kind.
fn stub(message: &Message, pass: Pass) -> Option<Message> {
    let mut changed = false;
    let items = message
        .items
        .iter()
        .filter_map(|item| match (pass, item) {
            (Pass::ToolOutputs, MessageItem::ToolResult(result)) => {
                let stubbed = [ContentItem::Text { text: DROPPED_OUTPUT.to_owned() }];
                if result.content == stubbed {
                    return Some(item.clone());
                }
                changed = true;
                let mut result = result.clone();
                result.content = stubbed.to_vec();
                Some(MessageItem::ToolResult(result))
            }
            (Pass::ToolArguments, MessageItem::ToolCall(call))
                if call.args.to_string().len() > SMALL_ARGUMENTS =>
            {
                changed = true;
                let mut call = call.clone();
                call.args = serde_json::json!({ "omitted": DROPPED_ARGUMENTS });
                Some(MessageItem::ToolCall(call))
            }
            (Pass::Texts, MessageItem::Reasoning(_)) => {
                changed = true;
                None
            }
            (Pass::Texts, MessageItem::Text { text }) if text != DROPPED_TEXT => {
                changed = true;
                Some(MessageItem::Text { text: DROPPED_TEXT.to_owned() })
            }
            (Pass::Texts, MessageItem::Image(_) | MessageItem::BlobRef(_)) => {
                changed = true;
                Some(MessageItem::Text { text: DROPPED_TEXT.to_owned() })
            }
            _ => Some(item.clone()),
        })
        .collect();
    changed.then(|| Message::new(message.role, items))
}

const DROPPED_OUTPUT: &str = "[tool output dropped to fit the summary request]";
const DROPPED_ARGUMENTS: &str = "arguments dropped to fit the summary request";
const DROPPED_TEXT: &str = "[dropped to fit the summary request]";

/// Whether `text` is a summary a compaction wrote.
fn is_summary(text: &str) -> bool {
    text.starts_with(SUMMARY_PREFIX)
}

/// The first text item of a message.
fn first_text(message: &Message) -> Option<&str> {
    message.items.iter().find_map(|item| match item {
        MessageItem::Text { text } => Some(text.as_str()),
        _ => None,
    })
}

/// The text items of a user message joined (`None` when it has none).
fn user_text(message: &Message) -> Option<String> {
    let texts: Vec<&str> = message
        .items
        .iter()
        .filter_map(|item| match item {
            MessageItem::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// The carried-over context: the newest plan, the files read and edited, the hooks' context
/// (`None` when there is none of it). `viewer` says what each call is.
pub(crate) fn carryover(
    history: &[Message],
    extra_context: &[String],
    viewer: &(dyn Fn(&str, &Value) -> CallView + Send + Sync),
) -> Option<String> {
    let mut plan: Option<&Value> = None;
    let mut read = BTreeSet::new();
    let mut edited = BTreeSet::new();
    for message in history {
        if let Some(text) = first_text(message)
            && let Some(carried) = text.strip_prefix(CARRYOVER_PREFIX)
        {
            // An earlier compaction's lists carry on.
            collect_listed(carried, "Files read:", &mut read);
            collect_listed(carried, "Files edited:", &mut edited);
        }
        for call in message.tool_calls() {
            let view = viewer(&call.name, &call.args);
            // A call that states a plan (an update, or a plan presented in plan mode) gives the
            // plan until a newer one; its arguments are the plan as the model wrote it.
            if view.plan.is_some() {
                plan = Some(&call.args);
            }
            // A view's paths are the files the call names, move destinations included.
            match view.kind {
                CallKind::Read => read.extend(view.paths),
                CallKind::Edit => edited.extend(view.paths),
                CallKind::Search
                | CallKind::Execute
                | CallKind::Fetch
                | CallKind::Plan
                | CallKind::Ask
                | CallKind::Agent
                | CallKind::Mcp { .. }
                | CallKind::Other => {}
            }
        }
    }
    if plan.is_none() && read.is_empty() && edited.is_empty() && extra_context.is_empty() {
        return None;
    }
    let mut out = String::from(CARRYOVER_PREFIX);
    out.push_str("\nKept verbatim over a compaction of the conversation.\n");
    if let Some(plan) = plan {
        let text = serde_json::to_string_pretty(plan).unwrap_or_default();
        let cut = floor_char_boundary(&text, MAX_PLAN_BYTES);
        out.push_str("\nThe current plan (the newest update_plan or exit_plan_mode):\n");
        out.push_str(&text[..cut]);
        out.push('\n');
    }
    for (title, files) in [("Files read:", &read), ("Files edited:", &edited)] {
        if files.is_empty() {
            continue;
        }
        out.push('\n');
        out.push_str(title);
        out.push('\n');
        for file in files.iter().rev().take(MAX_FILES) {
            out.push_str("- ");
            out.push_str(file);
            out.push('\n');
        }
    }
    for context in extra_context {
        out.push_str("\n<session-start-hook>\n");
        out.push_str(context);
        out.push_str("\n</session-start-hook>\n");
    }
    out.push_str("</carried-over-context>");
    Some(out)
}

/// The `- path` lines under `title` in an earlier carried-over context.
fn collect_listed(text: &str, title: &str, into: &mut BTreeSet<String>) {
    let Some(start) = text.find(title) else { return };
    for line in text[start + title.len()..].lines().skip(1) {
        match line.strip_prefix("- ") {
            Some(path) => {
                into.insert(path.to_owned());
            }
            None => break,
        }
    }
}

/// The largest char boundary of `text` at or below `at`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}
