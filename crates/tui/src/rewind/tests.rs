//! `/undo` and `/rewind`: what the commands ask for, and what the UI does with the host's answer
//! (asks before overwriting files changed outside codecoder; sends the rewind to the agent).

use std::path::{Path, PathBuf};

use codecoder_app::{RewindOutcome, RewindPoint, RewindRequest};
use codecoder_protocol::{AgentCommand, RewindRecord, TurnId};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::app::Effect;
use crate::cells::Cell;
use crate::testing::{app, turn_started};
use crate::{Host, Session, SessionSummary, StartRequest};

/// A host whose rewinds answer from a list, recording the requests.
struct FakeHost {
    outcomes: Vec<RewindOutcome>,
    requests: Vec<RewindRequest>,
}

impl Host for FakeHost {
    fn start(&mut self, _request: &StartRequest) -> anyhow::Result<Session> {
        anyhow::bail!("not here")
    }
    fn sessions(&mut self) -> anyhow::Result<Vec<SessionSummary>> {
        Ok(Vec::new())
    }
    fn diff(&mut self, _cwd: &Path) -> anyhow::Result<String> {
        Ok(String::new())
    }
    fn init_agents_md(&mut self, _cwd: &Path) -> anyhow::Result<String> {
        Ok(String::new())
    }
    fn rewind_points(&mut self, _log: &Path) -> anyhow::Result<Vec<RewindPoint>> {
        Ok(vec![RewindPoint {
            turn: TurnId::new(2),
            text: "the second prompt".to_owned(),
            conversation: true,
            files: true,
        }])
    }
    fn rewind(&mut self, _log: &Path, request: &RewindRequest) -> anyhow::Result<RewindOutcome> {
        self.requests.push(*request);
        Ok(self.outcomes.remove(0))
    }
}

fn notes(cells: &[Cell]) -> Vec<String> {
    cells
        .iter()
        .filter_map(|cell| match cell {
            Cell::Note { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_commands_parse_into_rewind_requests() {
    let (mut app, _rx) = app();
    app.slash("/undo");
    app.slash("/undo force");
    app.slash("/rewind");
    app.slash("/rewind 3");
    app.slash("/rewind 2 files force");
    app.slash("/rewind 1 conversation");
    let turn = |n| Some(TurnId::new(n));
    assert_eq!(
        app.take_effects(),
        [
            Effect::Rewind(RewindRequest {
                turn: None,
                conversation: false,
                files: true,
                force: false
            }),
            Effect::Rewind(RewindRequest {
                turn: None,
                conversation: false,
                files: true,
                force: true
            }),
            Effect::RewindList,
            Effect::Rewind(RewindRequest {
                turn: turn(3),
                conversation: true,
                files: true,
                force: false
            }),
            Effect::Rewind(RewindRequest {
                turn: turn(2),
                conversation: false,
                files: true,
                force: true
            }),
            Effect::Rewind(RewindRequest {
                turn: turn(1),
                conversation: true,
                files: false,
                force: false
            }),
        ]
    );
    app.slash("/rewind 0");
    app.slash("/rewind two");
    app.slash("/undo please");
    app.on_agent_event(turn_started());
    app.slash("/undo");
    assert!(app.take_effects().is_empty());
    let texts = notes(&app.take_history());
    assert!(texts[0].starts_with("usage: /rewind N"), "{texts:?}");
    assert!(texts[1].starts_with("usage: /rewind N"), "{texts:?}");
    assert!(texts[2].contains("no argument but `force`"), "{texts:?}");
    assert!(texts[3].contains("a turn is running"), "{texts:?}");
}

#[test]
fn conflicts_are_asked_about_and_a_done_rewind_goes_to_the_agent() {
    let (mut app, rx) = app();
    let log = PathBuf::from("/sessions/x.jsonl");
    let record = RewindRecord {
        turn: TurnId::new(2),
        conversation: true,
        files: true,
        restored: vec!["/w/a.txt".to_owned()],
        skipped: Vec::new(),
    };
    let mut host = FakeHost {
        outcomes: vec![
            RewindOutcome::Conflicts(vec![PathBuf::from("/w/a.txt")]),
            RewindOutcome::Done {
                record: record.clone(),
                report: Some(codecoder_session::checkpoint::RewindReport {
                    restored: vec![PathBuf::from("/w/a.txt")],
                    skipped: Vec::new(),
                }),
            },
        ],
        requests: Vec::new(),
    };
    let request =
        RewindRequest { turn: Some(TurnId::new(2)), conversation: true, files: true, force: false };
    super::perform(&mut host, &mut app, Some(&log), &request);
    assert!(rx.try_recv().is_err(), "nothing is sent before the person says so");
    let texts = notes(&app.take_history());
    assert!(texts[0].contains("changed outside codecoder") && texts[0].contains("/w/a.txt"));
    assert!(texts[0].contains("`/rewind 2 both force`"), "{texts:?}");
    assert!(texts[0].contains("[y] yes"), "{texts:?}");
    // `n` declines; asked again, `y` queues the same rewind, forced.
    app.on_key(KeyEvent::new(KeyCode::Char('n'), KeyModifiers::NONE));
    assert!(app.take_effects().is_empty());
    assert!(notes(&app.take_history())[0].contains("nothing restored"));
    host.outcomes.insert(0, RewindOutcome::Conflicts(vec![PathBuf::from("/w/a.txt")]));
    super::perform(&mut host, &mut app, Some(&log), &request);
    app.take_history();
    app.on_key(KeyEvent::new(KeyCode::Char('y'), KeyModifiers::NONE));
    let forced_effect = Effect::Rewind(RewindRequest { force: true, ..request });
    assert_eq!(app.take_effects(), [forced_effect]);
    assert!(app.editor.is_empty(), "the answer is not typed into the editor");

    let forced = RewindRequest { force: true, ..request };
    super::perform(&mut host, &mut app, Some(&log), &forced);
    assert_eq!(rx.try_recv().unwrap(), AgentCommand::Rewind(record));
    let texts = notes(&app.take_history());
    assert!(texts[0].contains("restored 1 file(s) as they were before turn 2"), "{texts:?}");
    assert!(texts[0].contains("conversation rewound to before turn 2"), "{texts:?}");
    assert_eq!(app.editor.text(), "the second prompt", "the prompt returns to the editor");
    assert_eq!(host.requests, [request, request, forced]);

    super::perform(&mut host, &mut app, None, &request);
    assert!(notes(&app.take_history())[0].contains("keeps no log"));
}
