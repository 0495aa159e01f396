//! The UI loop: terminal setup and restore, the input thread, the `select!` over agent events,
//! input and the frame tick, history flushing into the scrollback (`insert_before`), and the
//! effects slash commands ask for.
//!
//! Invariants:
//! - The terminal is restored exactly as found on every exit path: `TerminalGuard`'s drop on
//!   return or error, the panic hook on a panic (both call the same idempotent `restore`).
//! - All queued agent events are applied before a frame is drawn; frames are at most one per
//!   `FRAME` and only when something changed.
//! - The agent is shut down (`AgentHandle::shutdown`: Shutdown, wait for ShutdownComplete,
//!   join) before `run` returns, and before a replacement agent starts.

use std::io::{self, IsTerminal, Stdout, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use codecoder_app::AgentHandle;
use codecoder_protocol::{AgentCommand, AgentEvent};
use crossbeam_channel::{Receiver, select};
use crossterm::event::{
    DisableBracketedPaste, EnableBracketedPaste, Event, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::{cursor, execute, terminal};
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};
use ratatui::{Terminal, TerminalOptions, Viewport};

use crate::app::{App, Effect, Picker};
use crate::cells::{Cell, NoteKind, diff_lines_unbounded};
use crate::{Host, Session, SessionChoice, StartRequest, TuiConfig};

/// The shortest time between two frames (~60 fps).
pub(crate) const FRAME: Duration = Duration::from_millis(16);
/// Spinner speed.
const SPINNER_STEP: Duration = Duration::from_millis(80);
/// Agent events applied per batch before input is looked at again.
pub(crate) const DRAIN_BATCH: usize = 8192;
/// Logical lines per `insert_before` call.
const INSERT_CHUNK: usize = 200;

/// Frame statistics of one run (written as JSON to `TuiConfig::stats_path` at exit).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FrameStats {
    /// Frames drawn.
    pub frames: u64,
    /// Agent events applied.
    pub events: u64,
    /// Time from `run` being called to the first frame on screen, in microseconds.
    pub first_frame_us: u64,
    /// The slowest frame (history flush + draw), in microseconds.
    pub max_frame_us: u64,
    /// Sum of all frame times, in microseconds.
    pub total_frame_us: u64,
    /// The most events found queued at once (a growing number would mean a backlog).
    pub max_batch: u64,
}

static RESTORED: AtomicBool = AtomicBool::new(true);

/// Puts the terminal back: cooked mode, cursor shown, paste and key flags off. Idempotent.
fn restore() {
    if RESTORED.swap(true, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    let _ = execute!(out, PopKeyboardEnhancementFlags, DisableBracketedPaste, cursor::Show);
    let _ = terminal::disable_raw_mode();
    let _ = out.flush();
}

/// Raw mode and friends for the UI's lifetime; restores on drop and on panic.
struct TerminalGuard;

impl TerminalGuard {
    fn enter() -> anyhow::Result<Self> {
        terminal::enable_raw_mode().context("switching the terminal to raw mode")?;
        RESTORED.store(false, Ordering::SeqCst);
        let guard = Self;
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        // Shift+Enter is only distinguishable with the kitty keyboard protocol; terminals that
        // do not speak it ignore the request.
        execute!(
            io::stdout(),
            EnableBracketedPaste,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )
        .context("setting up the terminal")?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
        // The hook installed in `enter` stays (it only restores once, then defers); taking it
        // back would drop whatever another thread installed meanwhile.
    }
}

pub(crate) fn viewport_height(rows: u16) -> u16 {
    (rows / 2).max(8).min(rows)
}

/// Runs the UI on `session` until the person quits. Needs a terminal on stdin and stdout.
///
/// # Errors
/// When stdin or stdout is not a terminal (nothing is drawn then), or on terminal IO errors.
pub fn run(config: TuiConfig, session: Session, host: &mut dyn Host) -> anyhow::Result<()> {
    let started = Instant::now();
    if !io::stdin().is_terminal() || !io::stdout().is_terminal() {
        anyhow::bail!(
            "the interactive UI needs a terminal; use `codecoder exec` for pipes and scripts"
        );
    }
    crate::highlight::preload();
    let guard = TerminalGuard::enter()?;
    let (_, rows) = terminal::size().context("reading the terminal size")?;
    let backend = CrosstermBackend::new(io::stdout());
    let mut term = Terminal::with_options(
        backend,
        TerminalOptions { viewport: Viewport::Inline(viewport_height(rows)) },
    )
    .context("creating the inline viewport")?;

    let stop = Arc::new(AtomicBool::new(false));
    let (input_tx, input_rx) = crossbeam_channel::bounded::<Event>(256);
    let input_thread = {
        let stop = Arc::clone(&stop);
        codecoder_stdx::spawn_named("tui-input", move || {
            while !stop.load(Ordering::SeqCst) {
                match crossterm::event::poll(Duration::from_millis(50)) {
                    Ok(true) => match crossterm::event::read() {
                        Ok(event) => {
                            if input_tx.send(event).is_err() {
                                break;
                            }
                        }
                        Err(_) => break,
                    },
                    Ok(false) => {}
                    Err(_) => break,
                }
            }
        })?
    };

    let mut stats = FrameStats::default();
    let result = ui_loop(&config, session, host, &mut term, &input_rx, started, &mut stats);
    stop.store(true, Ordering::SeqCst);
    drop(input_rx);
    let _ = input_thread.join();
    let _ = term.show_cursor();
    drop(guard);
    if let Some(path) = &config.stats_path {
        let json = serde_json::json!({
            "frames": stats.frames,
            "events": stats.events,
            "first_frame_us": stats.first_frame_us,
            "max_frame_us": stats.max_frame_us,
            "total_frame_us": stats.total_frame_us,
            "max_batch": stats.max_batch,
        });
        fs_err::write(path, json.to_string())?;
    }
    result
}

#[allow(clippy::too_many_lines)] // One select loop; splitting it would scatter the state.
fn ui_loop(
    config: &TuiConfig,
    session: Session,
    host: &mut dyn Host,
    term: &mut Terminal<CrosstermBackend<Stdout>>,
    input_rx: &Receiver<Event>,
    started: Instant,
    stats: &mut FrameStats,
) -> anyhow::Result<()> {
    let Session { agent, info, history, notices: _ } = session;
    let mut agent = Some(agent);
    let mut app = App::new(info, config.approval_mode.clone(), agent_cmd(agent.as_ref()));
    app.skills.clone_from(&config.skills);
    app.commands.clone_from(&config.commands);
    app.push(header(&app));
    app.replay(history);
    if let Some(prompt) = &config.initial_prompt {
        app.send_text(prompt.clone());
    }
    if config.open_resume_picker {
        app.open_resume_picker();
    }
    let ticker = crossbeam_channel::tick(FRAME);
    let never = crossbeam_channel::never::<AgentEvent>();
    let mut last_draw: Option<Instant> = None;
    let mut last_spinner = 0usize;
    // The person left with /quit, /exit or the keys that quit (SessionEnd `prompt_input_exit`),
    // rather than the terminal's input closing under the UI.
    let mut left_prompt = false;
    loop {
        let events = agent.as_ref().map_or(&never, |a| &a.events);
        select! {
            recv(events) -> msg => match msg {
                Ok(event) => {
                    app.on_agent_event(event);
                    let mut batch = 1u64;
                    while batch < DRAIN_BATCH as u64 {
                        let Ok(event) = events.try_recv() else { break };
                        app.on_agent_event(event);
                        batch += 1;
                    }
                    stats.events += batch;
                    stats.max_batch = stats.max_batch.max(batch);
                }
                Err(_) => {
                    if let Some(handle) = agent.take() {
                        let _ = handle.join();
                    }
                    app.note(NoteKind::Error, "the agent stopped; /new starts another, /quit leaves");
                }
            },
            recv(input_rx) -> msg => match msg {
                Ok(Event::Key(key)) => app.on_key(key),
                Ok(Event::Paste(text)) => app.on_paste(&text),
                Ok(Event::Resize(..)) => {
                    term.autoresize()?;
                    app.dirty = true;
                }
                Ok(_) => {}
                Err(_) => break,
            },
            recv(ticker) -> _ => {
                let spinner = spinner_frame(started);
                if app.poll_files() {
                    app.dirty = true;
                }
                if app.busy() && spinner != last_spinner {
                    last_spinner = spinner;
                    app.dirty = true;
                }
            },
        }
        sync_permission_mode(&mut app, host);
        let mut quit = false;
        for effect in app.take_effects() {
            match effect {
                Effect::Quit => quit = true,
                Effect::Start(request) => {
                    // `/new` clears the session: hooks see SessionEnd `clear` for the old one and
                    // SessionStart `clear` for the new one.
                    let clear = request.session == SessionChoice::New;
                    if let Some(old) = agent.take() {
                        if clear {
                            old.ends_because("clear");
                        }
                        // The next session starts however the old loop ended.
                        let _ = old.shutdown();
                    }
                    let old_id = app.info.session_id.to_string();
                    match host.start(&request) {
                        Ok(session) => {
                            let verb = match &request.session {
                                SessionChoice::New => "new session",
                                SessionChoice::Resume(_) => "resumed session",
                                SessionChoice::Fork(_) => "forked into session",
                            };
                            let Session { agent: new_agent, info, history, notices } = session;
                            if clear {
                                new_agent.starts_after_clear();
                            }
                            app.switch_session(info, new_agent.cmd.clone());
                            for notice in notices {
                                app.note(NoteKind::Warning, notice);
                            }
                            agent = Some(new_agent);
                            // The same conversation is already on screen after a fork or a
                            // model/provider switch; only another session's past is replayed.
                            let same = match &request.session {
                                SessionChoice::Resume(id) => *id == old_id,
                                SessionChoice::Fork(_) => true,
                                SessionChoice::New => false,
                            };
                            if !same {
                                app.replay(history);
                            }
                            app.note(
                                NoteKind::Info,
                                format!(
                                    "{verb} {} · model {}",
                                    app.info.session_id, app.info.model
                                ),
                            );
                        }
                        Err(err) => {
                            app.note(NoteKind::Error, format!("could not start: {err:#}"));
                            // Back to where we were, so the person is not left without an agent.
                            let back = StartRequest {
                                session: SessionChoice::Resume(old_id),
                                model: None,
                                provider: None,
                                reasoning_effort: None,
                            };
                            match host.start(&back) {
                                Ok(session) => {
                                    app.switch_session(session.info, session.agent.cmd.clone());
                                    agent = Some(session.agent);
                                }
                                Err(err) => app.note(NoteKind::Error, format!("could not resume the previous session either: {err:#}; /new starts another")),
                            }
                        }
                    }
                }
                Effect::SetApprovalMode(mode) => match host.set_approval_mode(&mode) {
                    Ok(label) => {
                        app.note(NoteKind::Info, format!("approval mode: {label}"));
                        app.approval_mode = label;
                    }
                    Err(err) => app.note(NoteKind::Error, format!("/approvals: {err:#}")),
                },
                Effect::CyclePermissionMode => match host.cycle_permission_mode() {
                    Ok(mode) => {
                        app.note(NoteKind::Info, format!("permission mode: {mode}"));
                        app.permission_mode = mode;
                    }
                    Err(err) => app.note(NoteKind::Error, format!("Shift+Tab: {err:#}")),
                },
                Effect::ListSessions => match host.sessions() {
                    Ok(items) => app.picker = Some(Picker { items, selected: 0 }),
                    Err(err) => {
                        app.note(NoteKind::Error, format!("could not list sessions: {err:#}"))
                    }
                },
                Effect::Diff => match host.diff(&app.info.cwd) {
                    Ok(text) if text.trim().is_empty() => {
                        app.note(NoteKind::Info, "no changes (git diff is empty)")
                    }
                    Ok(text) => app.push(Cell::Lines { lines: diff_lines_unbounded(&text) }),
                    Err(err) => app.note(NoteKind::Error, format!("/diff: {err:#}")),
                },
                Effect::Hooks { approve } => match host.hooks(approve) {
                    Ok(text) => app.note(NoteKind::Info, text.trim_end().to_owned()),
                    Err(err) => app.note(NoteKind::Error, format!("/hooks: {err:#}")),
                },
                Effect::Init => match host.init_agents_md(&app.info.cwd) {
                    Ok(message) => app.note(NoteKind::Info, message),
                    Err(err) => app.note(NoteKind::Error, format!("/init: {err:#}")),
                },
                Effect::Rewind(request) => {
                    let log = agent.as_ref().and_then(|agent| agent.session_path());
                    crate::rewind::perform(host, &mut app, log, &request);
                }
                Effect::RewindList => {
                    let log = agent.as_ref().and_then(|agent| agent.session_path());
                    crate::rewind::list(host, &mut app, log);
                }
            }
        }
        if quit {
            left_prompt = true;
            break;
        }
        let due = last_draw.is_none_or(|t| t.elapsed() >= FRAME);
        if app.dirty && due {
            let frame_start = Instant::now();
            draw(term, &mut app, config.no_color, spinner_frame(started))?;
            let now = Instant::now();
            let took =
                u64::try_from(now.duration_since(frame_start).as_micros()).unwrap_or(u64::MAX);
            if stats.frames == 0 {
                stats.first_frame_us =
                    u64::try_from(now.duration_since(started).as_micros()).unwrap_or(u64::MAX);
                // `@` completion answers from a list walked in the background, started once
                // the first frame is up so the walk does not delay it.
                if !app.files.is_live() {
                    app.files = crate::complete::FileIndex::spawn(app.info.cwd.clone());
                }
            }
            stats.frames += 1;
            stats.max_frame_us = stats.max_frame_us.max(took);
            stats.total_frame_us += took;
            last_draw = Some(now);
        }
    }
    // Leave the whole transcript in the scrollback and the cursor under it.
    app.flush_live();
    flush_history(term, &mut app, config.no_color, 0)?;
    term.clear()?;
    if let Some(handle) = agent.take() {
        if left_prompt {
            handle.ends_because("prompt_input_exit");
        }
        // The UI is leaving and has nowhere left to show a loop's panic message.
        let _ = handle.shutdown();
    }
    Ok(())
}

fn agent_cmd(agent: Option<&AgentHandle>) -> crossbeam_channel::Sender<AgentCommand> {
    match agent {
        Some(agent) => agent.cmd.clone(),
        None => crossbeam_channel::bounded(0).0,
    }
}

/// Shows the session's permission mode as it is now (approving a plan leaves plan mode).
fn sync_permission_mode(app: &mut App, host: &dyn Host) {
    if let Some(mode) = host.permission_mode()
        && mode != app.permission_mode
    {
        app.permission_mode = mode;
        app.dirty = true;
    }
}

fn spinner_frame(started: Instant) -> usize {
    usize::try_from(started.elapsed().as_millis() / SPINNER_STEP.as_millis()).unwrap_or(0)
}

fn header(app: &App) -> Cell {
    let dim = Style::default().fg(Color::DarkGray);
    Cell::Lines {
        lines: vec![
            Line::from(vec![
                Span::styled("codecoder", Style::default().add_modifier(Modifier::BOLD)),
                Span::styled(format!(" · {} · {}", app.info.model, app.info.cwd.display()), dim),
            ]),
            Line::styled(
                format!("session {} · /help for keys and commands", app.info.session_id),
                dim,
            ),
        ],
    }
}

/// Clears colours from a buffer (NO_COLOR), keeping bold, italic and reverse.
fn decolor(buf: &mut Buffer) {
    for cell in &mut buf.content {
        cell.set_fg(Color::Reset);
        cell.set_bg(Color::Reset);
    }
}

pub(crate) fn flush_history<B: Backend>(
    term: &mut Terminal<B>,
    app: &mut App,
    no_color: bool,
    frame: usize,
) -> io::Result<()> {
    let now = Instant::now();
    let width = term.get_frame().area().width.max(1);
    for cell in app.take_history() {
        let lines = cell.lines(now, frame);
        for chunk in lines.chunks(INSERT_CHUNK) {
            let paragraph = Paragraph::new(chunk.to_vec()).wrap(Wrap { trim: false });
            let height = u16::try_from(paragraph.line_count(width)).unwrap_or(u16::MAX);
            if height == 0 {
                continue;
            }
            term.insert_before(height, |buf| {
                paragraph.render(buf.area, buf);
                if no_color {
                    decolor(buf);
                }
            })?;
        }
    }
    Ok(())
}

pub(crate) fn draw<B: Backend>(
    term: &mut Terminal<B>,
    app: &mut App,
    no_color: bool,
    frame: usize,
) -> io::Result<()> {
    term.autoresize()?;
    flush_history(term, app, no_color, frame)?;
    let now = Instant::now();
    let mut live_rows = 0;
    term.draw(|f| {
        let area = f.area();
        let drawn = crate::view::render(app, now, frame, area, f.buffer_mut());
        live_rows = drawn.live_rows;
        if no_color {
            decolor(f.buffer_mut());
        }
        if let Some(position) = drawn.cursor {
            f.set_cursor_position(position);
        }
    })?;
    // The pager pages by what it showed: its rows less the title and the footer.
    if let Some(pager) = &mut app.pager {
        pager.page = usize::from(live_rows.saturating_sub(2)).max(1);
    }
    app.dirty = false;
    Ok(())
}

#[cfg(test)]
mod tests;
