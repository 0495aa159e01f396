//! Headless runs of the UI's hot paths for benchmarks (`crates/tui/benches`): token streams
//! applied to the app and drawn (on ratatui's `TestBackend`, or through crossterm into a byte
//! counter, which includes building the escape sequences a terminal would get), scrolling the
//! output pager, long transcripts, and `@` completion. Not part of the API (hidden from the
//! docs).
//!
//! Invariant: every run drives the code the UI runs (`App`, `run::draw`, the run loop's drain
//! and frame policy with its constants); only the terminal is replaced.

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use codecoder_protocol::{
    AgentEvent, AgentEventKind, CallKind, CallView, CommandExit, EventSource, OutputStream,
    SessionId, StepId, ToolCall, ToolCallId, ToolResult, ToolResultStatus, TurnId, TurnOutcome,
    Usage,
};
use crossbeam_channel::select;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::{Backend, ClearType, CrosstermBackend, TestBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use ratatui::{Terminal, TerminalOptions, Viewport};

use crate::app::App;
use crate::complete::FileIndex;
use crate::run::{DRAIN_BATCH, FRAME, FrameStats, draw, flush_history, viewport_height};
use crate::{Pricing, SessionInfo};

fn info(cwd: PathBuf) -> SessionInfo {
    SessionInfo {
        session_id: SessionId::new(),
        model: "gpt-5".to_owned(),
        provider: "openai".to_owned(),
        context_window: 400_000,
        cwd,
        pricing: Pricing::default(),
    }
}

fn new_app() -> App {
    let (tx, _rx) = crossbeam_channel::unbounded();
    App::new(info(PathBuf::from(".")), "on-request".to_owned(), tx)
}

fn event(app: &App, kind: AgentEventKind) -> AgentEvent {
    let source = EventSource { session_id: app.info.session_id, subagent_path: Vec::new() };
    AgentEvent { source, kind }
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// Streams `tokens` text deltas (a blank line every 400) through the app, `per_frame` deltas
/// between frames, on a `width`×`height` terminal with the UI's inline viewport.
///
/// # Errors
/// Only on a `TestBackend` IO error (none in practice).
#[doc(hidden)]
pub fn simulate_stream(
    tokens: usize,
    per_frame: usize,
    width: u16,
    height: u16,
) -> io::Result<FrameStats> {
    let mut app = new_app();
    let mut term = Terminal::with_options(
        TestBackend::new(width, height),
        TerminalOptions { viewport: Viewport::Inline(viewport_height(height)) },
    )?;
    let started = Instant::now();
    let mut stats = FrameStats::default();
    app.on_agent_event(event(&app, AgentEventKind::TurnStarted { turn: TurnId::FIRST }));
    let mut sent = 0;
    while sent < tokens {
        let batch = per_frame.min(tokens - sent);
        for i in sent..sent + batch {
            let delta = if i % 400 == 399 { "tok\n\n" } else { "tok " };
            app.on_agent_event(event(&app, text_delta(delta)));
        }
        sent += batch;
        stats.events += batch as u64;
        let frame_start = Instant::now();
        draw(&mut term, &mut app, false, 0)?;
        let took = micros(frame_start.elapsed());
        if stats.frames == 0 {
            stats.first_frame_us = micros(started.elapsed());
        }
        stats.frames += 1;
        stats.max_frame_us = stats.max_frame_us.max(took);
        stats.total_frame_us += took;
    }
    app.on_agent_event(event(&app, turn_done()));
    flush_history(&mut term, &mut app, false, 0)?;
    Ok(stats)
}

fn text_delta(delta: &str) -> AgentEventKind {
    AgentEventKind::TextDelta { turn: TurnId::FIRST, step: StepId::FIRST, delta: delta.to_owned() }
}

fn turn_done() -> AgentEventKind {
    AgentEventKind::TurnDone {
        turn: TurnId::FIRST,
        cancelled: false,
        outcome: TurnOutcome::Completed,
        usage: Usage::default(),
    }
}

/// Counts the bytes a terminal would be sent, and drops them.
#[derive(Debug, Default)]
struct Counter {
    bytes: std::rc::Rc<std::cell::Cell<u64>>,
}

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bytes.set(self.bytes.get() + buf.len() as u64);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A terminal of a fixed size that renders through crossterm's backend (every escape
/// sequence built and written) into a byte counter: the UI's real output path without a tty.
struct SinkBackend {
    inner: CrosstermBackend<Counter>,
    bytes: std::rc::Rc<std::cell::Cell<u64>>,
    size: Size,
    cursor: Position,
}

impl SinkBackend {
    fn new(width: u16, height: u16) -> Self {
        let counter = Counter::default();
        let bytes = std::rc::Rc::clone(&counter.bytes);
        Self {
            inner: CrosstermBackend::new(counter),
            bytes,
            size: Size { width, height },
            cursor: Position { x: 0, y: height.saturating_sub(1) },
        }
    }

    fn bytes(&self) -> u64 {
        self.bytes.get()
    }
}

impl Backend for SinkBackend {
    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        self.inner.draw(content)
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        self.inner.append_lines(n)
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        self.inner.hide_cursor()
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        Ok(self.cursor)
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        let position = position.into();
        self.cursor = position;
        self.inner.set_cursor_position(position)
    }

    fn clear(&mut self) -> io::Result<()> {
        self.inner.clear()
    }

    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        self.inner.clear_region(clear_type)
    }

    fn size(&self) -> io::Result<Size> {
        Ok(self.size)
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        Ok(WindowSize { columns_rows: self.size, pixels: Size { width: 0, height: 0 } })
    }

    fn flush(&mut self) -> io::Result<()> {
        Backend::flush(&mut self.inner)
    }

    fn scroll_region_up(
        &mut self,
        region: std::ops::Range<u16>,
        line_count: u16,
    ) -> io::Result<()> {
        self.inner.scroll_region_up(region, line_count)
    }

    fn scroll_region_down(
        &mut self,
        region: std::ops::Range<u16>,
        line_count: u16,
    ) -> io::Result<()> {
        self.inner.scroll_region_down(region, line_count)
    }
}

fn sink_terminal(width: u16, height: u16) -> io::Result<Terminal<SinkBackend>> {
    Terminal::with_options(
        SinkBackend::new(width, height),
        TerminalOptions { viewport: Viewport::Inline(viewport_height(height)) },
    )
}

/// CPU time this thread has run, from the scheduler (nanoseconds; 0 where unavailable).
fn thread_cpu_ns() -> u64 {
    schedstat_ns("/proc/thread-self/schedstat")
}

/// CPU time all threads of this process have run, ended ones included (nanoseconds, at the
/// kernel's 10 ms tick; 0 where unavailable).
fn process_cpu_ns() -> u64 {
    let Ok(stat) = fs_err::read_to_string("/proc/self/stat") else { return 0 };
    // Fields after the command's closing parenthesis: state is the first, utime the 12th.
    let fields: Vec<&str> =
        stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().collect();
    let ticks = |at: usize| fields.get(at).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    (ticks(11) + ticks(12)) * 10_000_000
}

fn schedstat_ns(path: &str) -> u64 {
    fs_err::read_to_string(path)
        .ok()
        .and_then(|text| text.split_whitespace().next().and_then(|ns| ns.parse().ok()))
        .unwrap_or(0)
}

/// This process's resident set, in KiB (0 where unavailable).
#[doc(hidden)]
pub fn rss_kib() -> u64 {
    fs_err::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

/// A Markdown answer cut into model-sized tokens (about four characters each): prose, a
/// list and a fenced Rust block, over and over, so committed blocks are highlighted too.
fn answer_tokens(n: usize) -> Vec<String> {
    let section = "## Step\n\nThe function reads the configuration file once, then walks the tree and \
        keeps every path that matches the pattern. It returns the matches sorted, so the caller can \
        compare two runs line by line without sorting again.\n\n- the walk honours `.gitignore`\n- \
        symbolic links are not followed\n- errors name the path they came from\n\n```rust\nfn \
        matches(root: &Path, pattern: &str) -> Vec<PathBuf> {\n    let mut out = Vec::new();\n    \
        for entry in walk(root) {\n        if entry.matches(pattern) {\n            \
        out.push(entry.path());\n        }\n    }\n    out.sort();\n    out\n}\n```\n\n";
    let chars: Vec<char> = section.chars().collect();
    let pieces: Vec<String> = chars.chunks(4).map(|chunk| chunk.iter().collect()).collect();
    pieces.iter().cycle().take(n).cloned().collect()
}

/// What a paced stream cost.
#[doc(hidden)]
#[derive(Debug, Clone, Default)]
pub struct PacedReport {
    /// Tokens streamed (one `TextDelta` each).
    pub tokens: usize,
    /// Wall time from the first token to the last frame.
    pub wall: Duration,
    /// CPU time of the UI thread (applying events, drawing).
    pub ui_cpu: Duration,
    /// CPU time of the whole process (the UI thread and the feeding thread).
    pub process_cpu: Duration,
    /// Each frame's time (history flush + draw), in order.
    pub frames: Vec<Duration>,
    /// Bytes written to the terminal.
    pub bytes: u64,
    /// The most events found queued at once.
    pub max_batch: usize,
}

/// Streams an answer at `tokens_per_second` for `seconds` through the run loop's policy: a
/// feeding thread sends one `TextDelta` a token, the UI thread drains all queued events, then
/// draws at most once per `FRAME` when something changed, on a `width`×`height` terminal.
///
/// # Errors
/// On a thread spawn failure.
#[doc(hidden)]
pub fn paced_stream(
    tokens_per_second: u32,
    seconds: u32,
    width: u16,
    height: u16,
) -> io::Result<PacedReport> {
    let total = usize::try_from(tokens_per_second * seconds).unwrap_or(usize::MAX);
    let tokens = answer_tokens(total);
    let mut app = new_app();
    let mut term = sink_terminal(width, height)?;
    draw(&mut term, &mut app, false, 0)?;
    let (tx, events) = crossbeam_channel::bounded::<AgentEvent>(65_536);
    let source = EventSource { session_id: app.info.session_id, subagent_path: Vec::new() };
    let cpu_before = (thread_cpu_ns(), process_cpu_ns());
    let started = Instant::now();
    let feeder = codecoder_stdx::spawn_named("bench-feeder", move || {
        let send = |kind| tx.send(AgentEvent { source: source.clone(), kind }).is_ok();
        let _ = send(AgentEventKind::TurnStarted { turn: TurnId::FIRST });
        let rate = f64::from(tokens_per_second);
        let mut sent = 0;
        while sent < tokens.len() {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let due = ((started.elapsed().as_secs_f64() * rate) as usize).min(tokens.len());
            while sent < due {
                if !send(text_delta(&tokens[sent])) {
                    return;
                }
                sent += 1;
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        let _ = send(turn_done());
    })?;
    let mut report = PacedReport { tokens: total, ..PacedReport::default() };
    let ticker = crossbeam_channel::tick(FRAME);
    let mut last_draw: Option<Instant> = None;
    let mut open = true;
    while open {
        select! {
            recv(events) -> msg => match msg {
                Ok(event) => {
                    app.on_agent_event(event);
                    let mut batch = 1;
                    while batch < DRAIN_BATCH {
                        let Ok(event) = events.try_recv() else { break };
                        app.on_agent_event(event);
                        batch += 1;
                    }
                    report.max_batch = report.max_batch.max(batch);
                }
                Err(_) => open = false,
            },
            recv(ticker) -> _ => {}
        }
        let due = last_draw.is_none_or(|t| t.elapsed() >= FRAME);
        if app.dirty && (due || !open) {
            let frame_start = Instant::now();
            draw(&mut term, &mut app, false, 0)?;
            let now = Instant::now();
            report.frames.push(now.duration_since(frame_start));
            last_draw = Some(now);
        }
    }
    report.wall = started.elapsed();
    report.ui_cpu = Duration::from_nanos(thread_cpu_ns().saturating_sub(cpu_before.0));
    report.process_cpu = Duration::from_nanos(process_cpu_ns().saturating_sub(cpu_before.1));
    report.bytes = term.backend().bytes();
    drop(feeder);
    Ok(report)
}

/// A call of a tool that runs `command`, and its view as such a tool describes it (the UI draws
/// the card from the view; the tool's name is only its label).
fn call(id: &str, command: &str) -> (ToolCall, CallView) {
    let call = ToolCall {
        id: ToolCallId::new(id),
        name: "bench_command".to_owned(),
        args: serde_json::json!({ "command": command }),
    };
    let view = CallView {
        kind: CallKind::Execute,
        title: format!("Run `{command}`"),
        detail: format!("$ {command}"),
        command: Some(command.to_owned()),
        ..CallView::default()
    };
    (call, view)
}

/// Runs one command call through the app: started, `lines` lines of output streamed in
/// chunks of `chunk_lines` (a frame drawn after each when `term` is given), finished.
fn run_tool<B: Backend>(
    app: &mut App,
    term: &mut Terminal<B>,
    id: &str,
    lines: usize,
    chunk_lines: usize,
    frames: &mut Vec<Duration>,
) -> io::Result<()> {
    let (call, view) = call(id, "cargo build --workspace");
    let (turn, step) = (TurnId::FIRST, StepId::FIRST);
    app.on_agent_event(event(
        app,
        AgentEventKind::ToolStarted { turn, step, call: call.clone(), view: view.clone() },
    ));
    let mut chunk = String::new();
    for line in 0..lines {
        chunk.push_str(&format!(
            "   Compiling crate-{line:05} v0.{}.{} (/work/main/crates/crate-{line:05})\n",
            line % 7,
            line % 13
        ));
        if (line + 1) % chunk_lines == 0 || line + 1 == lines {
            let kind = AgentEventKind::ToolOutputDelta {
                call_id: call.id.clone(),
                stream: OutputStream::Stdout,
                chunk: std::mem::take(&mut chunk),
            };
            app.on_agent_event(event(app, kind));
            let frame_start = Instant::now();
            draw(term, app, false, 0)?;
            frames.push(frame_start.elapsed());
        }
    }
    let result = ToolResult {
        tool_call_id: call.id.clone(),
        content: vec![codecoder_protocol::ContentItem::Text {
            text: format!("({lines} lines of output)\n[exit code 0; 1.00 s]"),
        }],
        status: ToolResultStatus::Success,
        exit: Some(CommandExit { code: Some(0), signal: None, duration_ms: 1_000 }),
    };
    let kind = AgentEventKind::ToolFinished {
        turn,
        step,
        call_id: call.id.clone(),
        call,
        view,
        result: Ok(result),
        mcp_result: None,
    };
    app.on_agent_event(event(app, kind));
    Ok(())
}

/// What scrolling a long output cost.
#[doc(hidden)]
#[derive(Debug, Clone, Default)]
pub struct ScrollReport {
    /// Frames while the output streamed (50 lines between frames).
    pub streaming: Vec<Duration>,
    /// Each scroll keystroke's time: the key applied and the frame drawn.
    pub keystrokes: Vec<Duration>,
    /// The same keystrokes' CPU time on the UI thread (what load on the machine does not add).
    pub keystrokes_cpu: Vec<Duration>,
    /// Lines the pager held.
    pub lines: usize,
}

/// Streams a `lines`-line command output, opens the pager on it (Ctrl+O) and scrolls through
/// it: page down to the end, line by line, page up, home, end and back, a frame drawn after
/// each key, on a `width`×`height` terminal.
///
/// # Errors
/// On a terminal IO error (none in practice).
#[doc(hidden)]
pub fn scroll_output(lines: usize, width: u16, height: u16) -> io::Result<ScrollReport> {
    let mut app = new_app();
    let mut term = sink_terminal(width, height)?;
    let mut report = ScrollReport::default();
    app.on_agent_event(event(&app, AgentEventKind::TurnStarted { turn: TurnId::FIRST }));
    run_tool(&mut app, &mut term, "call_build", lines, 50, &mut report.streaming)?;
    app.on_agent_event(event(&app, turn_done()));
    draw(&mut term, &mut app, false, 0)?;
    let mut keys = vec![KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL)];
    keys.extend(std::iter::repeat_n(KeyEvent::from(KeyCode::PageDown), lines / 10));
    keys.extend(std::iter::repeat_n(KeyEvent::from(KeyCode::Up), 200));
    keys.extend(std::iter::repeat_n(KeyEvent::from(KeyCode::PageUp), 100));
    for _ in 0..20 {
        keys.push(KeyEvent::from(KeyCode::Home));
        keys.push(KeyEvent::from(KeyCode::End));
    }
    keys.extend(std::iter::repeat_n(KeyEvent::from(KeyCode::Down), 200));
    for key in keys {
        let (started, cpu) = (Instant::now(), thread_cpu_ns());
        app.on_key(key);
        draw(&mut term, &mut app, false, 0)?;
        report.keystrokes.push(started.elapsed());
        report.keystrokes_cpu.push(Duration::from_nanos(thread_cpu_ns().saturating_sub(cpu)));
    }
    report.lines = app.pager.as_ref().map_or(0, |pager| pager.output.preview.len());
    Ok(report)
}

/// Memory at one point of a long transcript.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default)]
pub struct MemorySample {
    /// Steps run so far.
    pub steps: usize,
    /// The process's resident set, KiB.
    pub rss_kib: u64,
    /// Bytes the app keeps of finished output (the pager's last output).
    pub kept_output_bytes: usize,
}

/// Runs `steps` steps through the app and draws each: a short answer (about 40 tokens), a
/// command with 20 lines of output; every `huge_every`-th command prints 5,000 lines instead.
/// Samples memory after each step count in `samples`.
///
/// # Errors
/// On a terminal IO error (none in practice).
#[doc(hidden)]
pub fn transcript_memory(
    steps: usize,
    huge_every: usize,
    samples: &[usize],
    width: u16,
    height: u16,
) -> io::Result<Vec<MemorySample>> {
    let mut app = new_app();
    let mut term = sink_terminal(width, height)?;
    let mut frames = Vec::new();
    let answer = answer_tokens(40);
    let mut out = Vec::new();
    app.on_agent_event(event(&app, AgentEventKind::TurnStarted { turn: TurnId::FIRST }));
    for step in 1..=steps {
        let kind = AgentEventKind::StepStarted { turn: TurnId::FIRST, step: StepId::FIRST };
        app.on_agent_event(event(&app, kind));
        for token in &answer {
            app.on_agent_event(event(&app, text_delta(token)));
        }
        let lines = if huge_every > 0 && step % huge_every == 0 { 5_000 } else { 20 };
        run_tool(&mut app, &mut term, &format!("call_{step}"), lines, 1_000, &mut frames)?;
        frames.clear();
        draw(&mut term, &mut app, false, 0)?;
        if samples.contains(&step) {
            out.push(MemorySample {
                steps: step,
                rss_kib: rss_kib(),
                kept_output_bytes: app
                    .last_output
                    .as_ref()
                    .map_or(0, |output| output.preview.heap_bytes()),
            });
        }
    }
    app.on_agent_event(event(&app, turn_done()));
    draw(&mut term, &mut app, false, 0)?;
    Ok(out)
}

/// Each keystroke's wall and UI-thread CPU time typing `@` and then `queries` (character by
/// character, then erased back to `@`), over `paths`: the key applied (completion included) and
/// the frame drawn. The first list is given, as the background walk would have sent it.
///
/// # Errors
/// On a terminal IO error (none in practice).
#[doc(hidden)]
pub fn at_completion(
    paths: Vec<String>,
    queries: &[&str],
    width: u16,
    height: u16,
) -> io::Result<(Vec<Duration>, Vec<Duration>)> {
    let mut app = new_app();
    app.files = FileIndex::fixed(paths);
    let mut term = sink_terminal(width, height)?;
    draw(&mut term, &mut app, false, 0)?;
    let mut times = (Vec::new(), Vec::new());
    let mut press = |app: &mut App, code: KeyCode, times: &mut (Vec<Duration>, Vec<Duration>)| {
        let (started, cpu) = (Instant::now(), thread_cpu_ns());
        app.on_key(KeyEvent::from(code));
        draw(&mut term, app, false, 0)?;
        times.0.push(started.elapsed());
        times.1.push(Duration::from_nanos(thread_cpu_ns().saturating_sub(cpu)));
        io::Result::Ok(())
    };
    for query in queries {
        press(&mut app, KeyCode::Char('@'), &mut times)?;
        for c in query.chars() {
            press(&mut app, KeyCode::Char(c), &mut times)?;
        }
        for _ in 0..=query.chars().count() {
            press(&mut app, KeyCode::Backspace, &mut times)?;
        }
    }
    Ok(times)
}

/// What building the background index cost.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default)]
pub struct IndexReport {
    /// From spawning the walker to the list arriving on the UI side.
    pub ready: Duration,
    /// The walk itself, on the walker thread.
    pub walk: Duration,
    /// Files listed.
    pub files: usize,
    /// Bytes the packed list holds.
    pub heap_bytes: usize,
}

/// Builds the background index of `root` and waits for its list.
#[doc(hidden)]
#[must_use]
pub fn index_build(root: PathBuf) -> IndexReport {
    let started = Instant::now();
    let mut index = FileIndex::spawn(root);
    while !index.poll() && started.elapsed() < Duration::from_secs(300) {
        std::thread::sleep(Duration::from_millis(1));
    }
    IndexReport {
        ready: started.elapsed(),
        walk: index.walk_time().unwrap_or_default(),
        files: index.list().map_or(0, |list| list.len()),
        heap_bytes: index.list().map_or(0, |list| list.heap_bytes()),
    }
}
