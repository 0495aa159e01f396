//! `/undo` and `/rewind`: taking files and the conversation back to before a turn.
//!
//! `/undo [force]` restores the files the newest turn (not undone yet) changed. `/rewind` lists
//! the turns whose prompt can be gone back to; `/rewind N [both|conversation|files] [force]`
//! goes back to before turn N: the files of turn N and every later turn are restored (newest
//! first) and/or the conversation is cut back so the next request no longer carries them (turn
//! N's prompt returns to the editor). The host restores the files; the agent logs the `rewind`
//! record and rebuilds its history from it.
//!
//! Invariant: a file changed outside codecoder since its turn is never overwritten without the
//! person saying so: the first attempt restores nothing, names those files and asks (`y` on an
//! empty editor restores them anyway, `n` or Esc leaves everything; the same command with
//! `force` does too).

use std::path::Path;

use codecoder_app::{RewindOutcome, RewindRequest};
use codecoder_protocol::{AgentCommand, TurnId};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::Host;
use crate::app::{App, Effect};
use crate::cells::NoteKind;

/// How `/rewind` is used.
const REWIND_USAGE: &str = "usage: /rewind N [both|conversation|files] [force] — back to before turn N (`/rewind` lists the turns)";

/// `/undo [force]`.
pub(crate) fn slash_undo(app: &mut App, arg: &str) {
    if app.turn_running {
        app.note(NoteKind::Warning, "a turn is running: cancel it (Esc) first");
        return;
    }
    let force = match arg {
        "" => false,
        "force" => true,
        other => {
            app.note(
                NoteKind::Warning,
                format!("/undo takes no argument but `force` (got `{other}`)"),
            );
            return;
        }
    };
    let request = RewindRequest { turn: None, conversation: false, files: true, force };
    app.push_effect(Effect::Rewind(request));
}

/// `/rewind`, `/rewind N [both|conversation|files] [force]`.
pub(crate) fn slash_rewind(app: &mut App, arg: &str) {
    if app.turn_running {
        app.note(NoteKind::Warning, "a turn is running: cancel it (Esc) first");
        return;
    }
    let mut words = arg.split_whitespace();
    let Some(turn) = words.next() else {
        app.push_effect(Effect::RewindList);
        return;
    };
    let Ok(turn) = turn.parse::<u32>() else {
        app.note(NoteKind::Warning, REWIND_USAGE);
        return;
    };
    if turn == 0 {
        app.note(NoteKind::Warning, REWIND_USAGE);
        return;
    }
    let (mut conversation, mut files, mut force) = (true, true, false);
    for word in words {
        match word {
            "both" => (conversation, files) = (true, true),
            "conversation" => (conversation, files) = (true, false),
            "files" | "code" => (conversation, files) = (false, true),
            "force" => force = true,
            _ => {
                app.note(NoteKind::Warning, REWIND_USAGE);
                return;
            }
        }
    }
    let request = RewindRequest { turn: Some(TurnId::new(turn)), conversation, files, force };
    app.push_effect(Effect::Rewind(request));
}

/// Lists the turns `/rewind` can go back to.
pub(crate) fn list(host: &mut dyn Host, app: &mut App, log: Option<&Path>) {
    let Some(log) = log else {
        app.note(NoteKind::Warning, "this session keeps no log: nothing to rewind");
        return;
    };
    match host.rewind_points(log) {
        Ok(points) if points.is_empty() => {
            app.note(NoteKind::Info, "no earlier prompt to rewind to")
        }
        Ok(points) => {
            let mut text =
                String::from("rewind to before one of these prompts with `/rewind N`:\n");
            for point in points {
                let first_line = point.text.lines().next().unwrap_or_default();
                let short: String = first_line.chars().take(70).collect();
                let files = if point.files { " · files changed since" } else { "" };
                text.push_str(&format!("  {}  › {short}{files}\n", point.turn));
            }
            text.push_str("then choose: both (default), conversation or files; add `force` to restore files changed outside codecoder too");
            app.note(NoteKind::Info, text);
        }
        Err(err) => app.note(NoteKind::Error, format!("/rewind: {err:#}")),
    }
}

/// The answer to "restore them anyway?": `y` or `n` (or Esc) on an empty editor while a rewind
/// waits. True when the key was the answer.
pub(crate) fn on_confirm_key(app: &mut App, key: KeyEvent) -> bool {
    if app.pending_rewind.is_none()
        || !app.editor.is_empty()
        || key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
    {
        return false;
    }
    match key.code {
        KeyCode::Char('y' | 'Y') => {
            if let Some(request) = app.pending_rewind.take() {
                app.push_effect(Effect::Rewind(request));
            }
            true
        }
        KeyCode::Char('n' | 'N') | KeyCode::Esc => {
            app.pending_rewind = None;
            app.note(NoteKind::Info, "nothing restored");
            true
        }
        _ => false,
    }
}

/// Carries out `/undo` or `/rewind N …`.
pub(crate) fn perform(
    host: &mut dyn Host,
    app: &mut App,
    log: Option<&Path>,
    request: &RewindRequest,
) {
    let command = if request.turn.is_some() { "/rewind" } else { "/undo" };
    let Some(log) = log else {
        app.note(
            NoteKind::Warning,
            format!("{command}: this session keeps no log: nothing to restore"),
        );
        return;
    };
    // The prompt of the turn rewound to, for the editor (read before the record is logged).
    let prompt = match request.turn {
        Some(turn) if request.conversation => host
            .rewind_points(log)
            .ok()
            .and_then(|points| points.into_iter().find(|point| point.turn == turn))
            .map(|point| point.text),
        Some(_) | None => None,
    };
    match host.rewind(log, request) {
        Ok(RewindOutcome::Conflicts(paths)) => {
            let mut text = format!(
                "{command}: nothing restored yet — these files changed outside codecoder since; restoring them loses those changes:\n"
            );
            for path in &paths {
                text.push_str(&format!("  {}\n", path.display()));
            }
            let again = match request.turn {
                None => "/undo force".to_owned(),
                Some(turn) => {
                    let what = match (request.conversation, request.files) {
                        (true, true) => "both",
                        (true, false) => "conversation",
                        (false, _) => "files",
                    };
                    format!("/rewind {turn} {what} force")
                }
            };
            text.push_str(&format!(
                "restore them anyway? [y] yes · [n] no, leave everything as it is (or `{again}`)"
            ));
            app.pending_rewind = Some(RewindRequest { force: true, ..*request });
            app.note(NoteKind::Warning, text);
        }
        Ok(RewindOutcome::Done { record, report }) => {
            let turn = record.turn;
            let conversation = record.conversation;
            let mut text = String::new();
            if let Some(report) = &report {
                text.push_str(&format!(
                    "restored {} file(s) as they were before turn {turn}",
                    report.restored.len()
                ));
                for path in &report.restored {
                    text.push_str(&format!("\n  {}", path.display()));
                }
            }
            if conversation {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&format!(
                    "conversation rewound to before turn {turn}: the model no longer sees it or what followed"
                ));
            }
            app.send_command(AgentCommand::Rewind(record));
            if let Some(prompt) = prompt
                && app.editor.is_empty()
            {
                app.editor.insert(&prompt);
            }
            app.note(NoteKind::Info, text);
        }
        Err(err) => app.note(NoteKind::Error, format!("{command}: {err:#}")),
    }
}

#[cfg(test)]
mod tests;
