//! A headless run of the UI's hot path for benchmarks: a long token stream applied to the app
//! in frame-sized batches, each frame flushing finished cells above an inline viewport and
//! drawing it on ratatui's `TestBackend`. Not part of the API (hidden from the docs).

use std::time::Instant;

use codecoder_protocol::{AgentEvent, AgentEventKind, EventSource, SessionId, StepId, TurnId};
use ratatui::backend::TestBackend;
use ratatui::{Terminal, TerminalOptions, Viewport};

use crate::app::App;
use crate::run::{FrameStats, draw, flush_history};
use crate::{Pricing, SessionInfo};

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
) -> std::io::Result<FrameStats> {
    let session_id = SessionId::new();
    let info = SessionInfo {
        session_id,
        model: "gpt-5".to_owned(),
        provider: "openai".to_owned(),
        context_window: 400_000,
        cwd: std::path::PathBuf::from("."),
        pricing: Pricing::default(),
        usage_so_far: codecoder_protocol::Usage::default(),
        context_tokens: 0,
    };
    let (tx, _rx) = crossbeam_channel::unbounded();
    let mut app = App::new(info, "on-request".to_owned(), tx);
    let mut term = Terminal::with_options(
        TestBackend::new(width, height),
        TerminalOptions { viewport: Viewport::Inline(crate::run::viewport_height(height)) },
    )?;
    let event =
        |kind| AgentEvent { source: EventSource { session_id, subagent_path: Vec::new() }, kind };
    let started = Instant::now();
    let mut stats = FrameStats::default();
    app.on_agent_event(event(AgentEventKind::TurnStarted { turn: TurnId::FIRST }));
    let mut sent = 0;
    while sent < tokens {
        let batch = per_frame.min(tokens - sent);
        for i in sent..sent + batch {
            let delta = if i % 400 == 399 { "tok\n\n" } else { "tok " };
            app.on_agent_event(event(AgentEventKind::TextDelta {
                turn: TurnId::FIRST,
                step: StepId::FIRST,
                delta: delta.to_owned(),
            }));
        }
        sent += batch;
        stats.events += batch as u64;
        let frame_start = Instant::now();
        draw(&mut term, &mut app, false, 0)?;
        let took = u64::try_from(frame_start.elapsed().as_micros()).unwrap_or(u64::MAX);
        if stats.frames == 0 {
            stats.first_frame_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        }
        stats.frames += 1;
        stats.max_frame_us = stats.max_frame_us.max(took);
        stats.total_frame_us += took;
    }
    app.on_agent_event(event(AgentEventKind::TurnDone {
        turn: TurnId::FIRST,
        cancelled: false,
        outcome: codecoder_protocol::TurnOutcome::Completed,
        usage: codecoder_protocol::Usage::default(),
    }));
    flush_history(&mut term, &mut app, false, 0)?;
    Ok(stats)
}
