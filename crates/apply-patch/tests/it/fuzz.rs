//! Property tests (placeholder).
