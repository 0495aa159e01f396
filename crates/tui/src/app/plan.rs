//! Plan mode in the UI: Shift+Tab cycles the permission mode (default → acceptEdits → plan),
//! and a plan the model presents (the question of the tool that leaves plan mode) is reviewed
//! here: `1` approves, `2` or typed feedback + Enter sends it back, Ctrl+G opens the plan in the
//! editor and Enter approves the edited text, Esc declines.
//!
//! Invariants: a plan review is answered through the question's one-shot reply like any
//! question (exactly once); leaving the editor with Esc keeps the review pending.

use codecoder_protocol::{AskUserAnswer, AskUserRequest};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{App, Effect, InputMode};

/// True for the question that presents a plan: its suggested answers are exactly approve and
/// keep planning.
pub(crate) fn is_plan_review(ask: &AskUserRequest) -> bool {
    matches!(ask.options.as_slice(), [approve, keep]
        if approve == codecoder_app::PLAN_APPROVE && keep == codecoder_app::PLAN_KEEP_PLANNING)
}

/// The status line's word for a permission mode; nothing for the default.
pub(crate) fn mode_badge(mode: &str) -> Option<&'static str> {
    match mode {
        "plan" => Some("⏸ plan mode"),
        "acceptEdits" => Some("⏵⏵ accept edits"),
        _ => None,
    }
}

impl App {
    /// Handles the keys of plan mode; true when the key was used.
    pub(crate) fn on_plan_key(&mut self, key: KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if self.mode == InputMode::PlanEdit {
            match key.code {
                KeyCode::Enter
                    if !key.modifiers.intersects(KeyModifiers::SHIFT | KeyModifiers::ALT) =>
                {
                    let text = self.editor.take();
                    self.mode = InputMode::Normal;
                    self.answer(AskUserAnswer::Answer {
                        text: format!("{}{}", codecoder_app::PLAN_EDITED_PREFIX, text.trim()),
                    });
                    return true;
                }
                KeyCode::Esc => {
                    self.mode = InputMode::Normal;
                    self.editor.clear();
                    return true;
                }
                _ => return false,
            }
        }
        match key.code {
            KeyCode::BackTab if self.approvals.is_empty() => {
                self.effects.push(Effect::CyclePermissionMode);
                true
            }
            KeyCode::Char('g') if ctrl && self.mode == InputMode::Normal => {
                let Some(plan) = self
                    .asks
                    .front()
                    .filter(|ask| is_plan_review(ask))
                    .map(|ask| ask.question.clone())
                else {
                    return false;
                };
                self.mode = InputMode::PlanEdit;
                self.editor.clear();
                self.editor.insert(&plan);
                true
            }
            _ => false,
        }
    }
}
