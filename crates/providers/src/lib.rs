//! Model providers over real HTTP (design.md "Models"; seed L2.1).
//!
//! `HttpModelClient` implements the kernel's `ModelClient` for three wire APIs: OpenAI
//! Responses, OpenAI-compatible Chat Completions and Anthropic Messages. Retries, backoff, the
//! idle timeout and token accounting live here; the kernel never sees a retry. Wire JSON stays
//! private to each adapter module. `ProviderConfig` describes a provider (codex's
//! `model_providers` shape) and `ProviderConfig::preset` gives the built-in ones.

mod anthropic;
mod catalog;
mod chat;
mod client;
mod config;
mod discovery;
mod error;
mod memory;
mod responses;
mod sse;
mod text_calls;
mod watchdog;
mod whole;
mod wire;
mod workers;

pub use catalog::{
    ModelInfo, UNKNOWN_MODEL, adaptive_thinking, catalog_models, model_info, tool_call_format,
};
pub use client::{HttpModelClient, encode_request};
pub use codecoder_protocol::{ReasoningEffort, ReasoningSettings, ReasoningSummary};
pub use config::{
    DEFAULT_MAX_RETRIES, DEFAULT_STREAM_IDLE_TIMEOUT_MS, PRESET_IDS, ProviderConfig,
    ToolCallFormat, WireApi,
};
pub use discovery::{
    DISCOVERY_TIMEOUT, ModelList, OLLAMA_DEFAULT_CONTEXT, ServedModel, ServerWindow,
    context_window, is_cloud, list_models, server_root,
};
pub use error::{Error, Server, Unreachable};
pub use memory::{ProviderMemory, ServerKey};

#[cfg(test)]
mod tests;

/// Decodes and parses a whole SSE body of `api` in memory; returns the number of events
/// produced. For the benchmark only: it measures parsing without the network.
#[doc(hidden)]
pub fn parse_sse_body(api: WireApi, body: &[u8], chunk: usize) -> Result<usize, Error> {
    let mut parser = wire::parser(api);
    let mut decoder = sse::SseDecoder::new();
    let mut events = 0;
    for piece in body.chunks(chunk.max(1)) {
        decoder.push(piece, &mut |event| {
            parser.on_event(event, &mut |_| events += 1)?;
            Ok(())
        })?;
    }
    Ok(events)
}
