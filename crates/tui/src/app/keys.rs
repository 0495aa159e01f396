//! How key presses and pastes change the TUI's state: the editor, the pickers, approvals and
//! questions answered, Ctrl+C, and the `@path` completion they open.

use codecoder_protocol::{AgentCommand, ApprovalDecision, AskUserAnswer};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::app::{App, COMMANDS, Completion, Effect, InputMode};
use crate::cells::{NoteKind, truncate};
use crate::complete::FileIndex;
use crate::pager::{Pager, PagerKey};
use crate::{SessionChoice, StartRequest};

impl App {
    /// Applies a paste.
    pub(crate) fn on_paste(&mut self, text: &str) {
        self.dirty = true;
        self.editor.insert(text);
        self.update_completion();
    }

    /// Applies one key press.
    pub(crate) fn on_key(&mut self, key: KeyEvent) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        self.dirty = true;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if !(ctrl && key.code == KeyCode::Char('c')) {
            self.quit_armed = false;
        }
        if self.picker.is_some() {
            self.on_picker_key(key);
            return;
        }
        if let Some(pager) = &mut self.pager {
            if pager.on_key(key) == PagerKey::Close
                && let Some(pager) = self.pager.take()
                && self.last_output.is_none()
            {
                // Back to where Ctrl+O took it from, unless a newer output came meanwhile.
                self.last_output = Some(pager.output);
            }
            return;
        }
        if self.on_plan_key(key) {
            self.update_completion();
            return;
        }
        if crate::rewind::on_confirm_key(self, key) {
            return;
        }
        if self.mode == InputMode::Normal && !self.approvals.is_empty() && !ctrl {
            let decision = match key.code {
                KeyCode::Char('y') => Some(ApprovalDecision::AllowOnce),
                KeyCode::Char('a') => Some(ApprovalDecision::AllowForSession),
                KeyCode::Char('n') => Some(ApprovalDecision::Deny),
                KeyCode::Char('f') => {
                    self.mode = InputMode::Feedback;
                    self.editor.clear();
                    None
                }
                _ => None,
            };
            if let Some(decision) = decision {
                self.decide(decision);
            }
            if !matches!(key.code, KeyCode::Esc) {
                return;
            }
        }
        if let Some(menu) = &mut self.completion {
            match key.code {
                KeyCode::Up => {
                    menu.selected =
                        menu.selected.checked_sub(1).unwrap_or(menu.items.len().saturating_sub(1));
                    return;
                }
                KeyCode::Down => {
                    menu.selected = (menu.selected + 1) % menu.items.len().max(1);
                    return;
                }
                KeyCode::Tab | KeyCode::Enter if !key.modifiers.contains(KeyModifiers::SHIFT) => {
                    if let Some((text, _)) = menu.items.get(menu.selected).cloned() {
                        let slash = text.starts_with('/');
                        self.editor.replace_current_word(&text);
                        self.completion = None;
                        if slash && key.code == KeyCode::Enter {
                            self.submit();
                        } else if !text.ends_with('/') {
                            self.editor.insert(" ");
                        } else {
                            self.update_completion();
                        }
                    }
                    return;
                }
                KeyCode::Esc => {
                    self.completion = None;
                    return;
                }
                _ => {}
            }
        }
        match key.code {
            KeyCode::Char('c') if ctrl => self.ctrl_c(),
            KeyCode::Char('d') if ctrl => {
                if self.editor.is_empty() && !self.turn_running {
                    self.effects.push(Effect::Quit);
                }
            }
            KeyCode::Char('t') if ctrl => {
                self.show_reasoning = !self.show_reasoning;
                let state = if self.show_reasoning { "shown in full" } else { "collapsed" };
                self.note(NoteKind::Info, format!("reasoning is now {state}"));
            }
            KeyCode::Char('o') if ctrl => match self.last_output.take() {
                Some(output) => self.pager = Some(Pager::new(output)),
                None => self.note(NoteKind::Info, "no tool output to show yet (Ctrl+O)"),
            },
            KeyCode::Char('j') if ctrl => self.editor.insert("\n"),
            KeyCode::Char('w') if ctrl => self.editor.delete_word(),
            KeyCode::Char('u') if ctrl => self.editor.clear(),
            KeyCode::Char('a') if ctrl => self.editor.home(),
            KeyCode::Char('e') if ctrl => self.editor.end(),
            KeyCode::Enter if key.modifiers.intersects(KeyModifiers::SHIFT | KeyModifiers::ALT) => {
                self.editor.insert("\n");
            }
            KeyCode::Enter => self.enter(),
            KeyCode::Esc => self.escape(),
            KeyCode::Char(c) if !ctrl => {
                if let (Some(digit), true, true) =
                    (c.to_digit(10), self.editor.is_empty(), self.mode == InputMode::Normal)
                    && let Some(ask) = self.asks.front()
                    && let Some(option) = usize::try_from(digit)
                        .ok()
                        .and_then(|d| d.checked_sub(1))
                        .and_then(|i| ask.options.get(i))
                        .cloned()
                {
                    self.answer(AskUserAnswer::Answer { text: option });
                    return;
                }
                let mut buf = [0u8; 4];
                self.editor.insert(c.encode_utf8(&mut buf));
            }
            KeyCode::Backspace => self.editor.backspace(),
            KeyCode::Delete => self.editor.delete(),
            KeyCode::Left => self.editor.left(),
            KeyCode::Right => self.editor.right(),
            KeyCode::Home => self.editor.home(),
            KeyCode::End => self.editor.end(),
            KeyCode::Up => self.editor.up(),
            KeyCode::Down => self.editor.down(),
            KeyCode::Tab => {}
            _ => return,
        }
        self.update_completion();
    }

    fn on_picker_key(&mut self, key: KeyEvent) {
        let Some(picker) = &mut self.picker else { return };
        match key.code {
            KeyCode::Up => picker.selected = picker.selected.saturating_sub(1),
            KeyCode::Down => {
                picker.selected = (picker.selected + 1).min(picker.items.len().saturating_sub(1));
            }
            KeyCode::Enter => {
                let chosen = picker.items.get(picker.selected).map(|s| s.id.clone());
                self.picker = None;
                if let Some(id) = chosen {
                    self.start(StartRequest {
                        session: SessionChoice::Resume(id),
                        model: None,
                        provider: None,
                        reasoning_effort: None,
                    });
                }
            }
            KeyCode::Esc => self.picker = None,
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.picker = None
            }
            _ => {}
        }
    }

    fn enter(&mut self) {
        if self.mode == InputMode::Feedback {
            let feedback = self.editor.take();
            self.mode = InputMode::Normal;
            self.decide(ApprovalDecision::DenyWithFeedback { feedback });
            return;
        }
        if !self.asks.is_empty() {
            let text = self.editor.take();
            if !text.trim().is_empty() {
                self.answer(AskUserAnswer::Answer { text });
            }
            return;
        }
        self.submit();
    }

    fn escape(&mut self) {
        if self.mode == InputMode::Feedback {
            self.mode = InputMode::Normal;
            self.editor.clear();
            return;
        }
        if !self.asks.is_empty() {
            self.answer(AskUserAnswer::Declined);
            return;
        }
        if self.turn_running {
            self.send(AgentCommand::Cancel);
        }
    }

    fn ctrl_c(&mut self) {
        if self.mode == InputMode::Feedback {
            self.mode = InputMode::Normal;
            self.editor.clear();
            return;
        }
        if !self.editor.is_empty() {
            self.editor.clear();
            return;
        }
        if self.turn_running {
            self.send(AgentCommand::Cancel);
            return;
        }
        if self.quit_armed {
            self.effects.push(Effect::Quit);
        } else {
            self.quit_armed = true;
        }
    }

    fn decide(&mut self, decision: ApprovalDecision) {
        let Some(request) = self.approvals.pop_front() else { return };
        let what = match &decision {
            ApprovalDecision::AllowOnce => "✓ allowed once".to_owned(),
            ApprovalDecision::AllowForSession => {
                format!("✓ allowed for this session ({})", request.permission_keys.join(", "))
            }
            ApprovalDecision::Deny => "✗ denied".to_owned(),
            ApprovalDecision::DenyWithFeedback { feedback } => {
                format!("✗ denied with feedback: {}", truncate(feedback, 200))
            }
            ApprovalDecision::Cancelled => "cancelled".to_owned(),
        };
        let summary = request.summary.clone();
        if !request.reply.send(decision) {
            self.note(NoteKind::Warning, format!("{summary}: the request was withdrawn"));
            return;
        }
        self.note(NoteKind::Info, format!("{what}: {summary}"));
    }

    pub(super) fn answer(&mut self, answer: AskUserAnswer) {
        let Some(request) = self.asks.pop_front() else { return };
        let shown = match &answer {
            AskUserAnswer::Answer { text } => {
                format!("{} → {}", request.question, truncate(text, 200))
            }
            AskUserAnswer::Declined | AskUserAnswer::Unavailable { .. } => {
                format!("{} → (declined)", request.question)
            }
        };
        if request.reply.send(answer) {
            self.note(NoteKind::Info, shown);
        }
    }

    /// Takes a file list the background walk finished, updating an open `@` menu; true when
    /// the screen should be redrawn.
    pub(crate) fn poll_files(&mut self) -> bool {
        if !self.files.poll() {
            return false;
        }
        if self.editor.current_word().1.starts_with('@') {
            self.update_completion();
            return true;
        }
        false
    }

    /// Recomputes the completion menu for the word before the cursor.
    pub(crate) fn update_completion(&mut self) {
        let (start, word) = self.editor.current_word();
        let items: Vec<(String, String)> = if word.starts_with('/') && start == 0 {
            COMMANDS
                .iter()
                .filter(|(name, _)| name.starts_with(word) && *name != word)
                .map(|(name, help)| ((*name).to_owned(), (*help).to_owned()))
                .collect()
        } else if let Some(query) = word.strip_prefix('@') {
            let query = query.to_owned();
            if !self.files.is_live() && self.files.list().is_none() {
                self.files = FileIndex::spawn(self.info.cwd.clone());
            }
            self.files
                .complete(&query, 8)
                .into_iter()
                .map(|path| (format!("@{path}"), String::new()))
                .collect()
        } else if let Some(query) = word.strip_prefix('$') {
            self.skills
                .iter()
                .filter(|skill| skill.starts_with(query))
                .map(|skill| (format!("${skill}"), String::new()))
                .collect()
        } else {
            Vec::new()
        };
        self.completion = (!items.is_empty()).then_some(Completion { items, selected: 0 });
    }
}
