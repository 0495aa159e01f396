//! `cargo bench -p codecoder-tui`: the UI's hot path under a 50,000-token stream (apply the
//! deltas, commit finished Markdown blocks above the inline viewport, draw the viewport), on
//! ratatui's `TestBackend` at 100×40 — per frame and in total. A real terminal adds the cost
//! of writing the escape sequences.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

fn main() {
    for per_frame in [50, 500, 5_000] {
        let started = std::time::Instant::now();
        let stats = codecoder_tui::simulate_stream(50_000, per_frame, 100, 40).unwrap();
        let total = started.elapsed();
        println!(
            "50k tokens, {per_frame} per frame: {} frames, total {:.1} ms, mean frame {:.2} ms, max frame {:.2} ms, first frame after {:.2} ms",
            stats.frames,
            total.as_secs_f64() * 1e3,
            stats.total_frame_us as f64 / stats.frames.max(1) as f64 / 1e3,
            stats.max_frame_us as f64 / 1e3,
            stats.first_frame_us as f64 / 1e3,
        );
    }
}
