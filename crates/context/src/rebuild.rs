//! Rebuilding a model request from a session log (design.md: "every request to a model can be
//! rebuilt byte-for-byte from the log").
//!
//! Requests are numbered from 1 over the whole session: request N is the one of the log's Nth
//! `step_start` (a step sends one request; a step run again after a broken stream sends the same
//! request again). Its history is the projection of every record before that `step_start`
//! (steered input, compactions and tool results included), with blob references inlined the way
//! `ContextBuilder` inlines them; everything else comes from the newest `context` record before
//! the request. Invariant: `rebuild_request` on a log the kernel wrote returns a request equal,
//! field for field, to the one the kernel sent, so its encoding is the body that was sent.

use std::sync::Arc;

use codecoder_kernel::ModelRequest;
use codecoder_protocol::{BlobRef, ContentItem, ContextRecord, RecordBody, SessionId};
use codecoder_session::{LoadedSession, Projection};

use crate::builder::inline_blobs;
use crate::error::{Error, Result};

/// What a blob reference inlines to (`None`: keep the reference), like a `BlobResolver` that
/// may borrow.
pub type ResolveBlob<'a> = dyn Fn(&BlobRef) -> Option<ContentItem> + 'a;

/// A request rebuilt from a log, with the context it was made under.
#[derive(Debug, Clone, PartialEq)]
pub struct RebuiltRequest {
    /// The request, as sent.
    pub request: ModelRequest,
    /// The `context` record it was made under (its provider names the wire API).
    pub context: ContextRecord,
    /// The seq of the request's `step_start`.
    pub step_seq: u64,
}

/// How many model requests the log holds (its `step_start` records).
pub fn request_count(loaded: &LoadedSession) -> usize {
    loaded.records().filter(|record| matches!(record.body, RecordBody::StepStart { .. })).count()
}

/// Request `number` (from 1) of `loaded`. Blob references in the history are inlined through
/// `resolve` when given (as the session's builder did), kept otherwise.
pub fn rebuild_request(
    loaded: &LoadedSession,
    number: usize,
    resolve: Option<&ResolveBlob<'_>>,
) -> Result<RebuiltRequest> {
    let mut projection = Projection::new();
    let mut seen = 0;
    let mut records = loaded.records();
    let step_seq = loop {
        let Some(record) = records.next() else {
            return Err(Error::NoSuchRequest { number, count: seen });
        };
        if let RecordBody::StepStart { .. } = record.body {
            seen += 1;
            if seen == number {
                break record.seq;
            }
        }
        projection.apply(record);
    };
    let history = projection.history().to_vec();
    // The step's own `context` record, when it wrote one, comes after its `step_start` and
    // before its response.
    let mut context = projection.context().cloned();
    for record in records {
        match &record.body {
            RecordBody::Context(step_context) => context = Some(step_context.clone()),
            RecordBody::AssistantMessage { .. }
            | RecordBody::StepEnd { .. }
            | RecordBody::TurnEnd { .. }
            | RecordBody::StepStart { .. } => break,
            _ => {}
        }
    }
    let context = context.ok_or(Error::NoContext { number })?;
    let history = history
        .iter()
        .map(|message| {
            Arc::new(match resolve {
                Some(resolve) => inline_blobs(message, resolve).into_owned(),
                None => message.clone(),
            })
        })
        .collect();
    let request = ModelRequest {
        session_id: session_of(loaded, step_seq),
        model: context.model.clone(),
        instructions: context.instructions(),
        sections: context.sections.clone(),
        history,
        tools: context.tools.clone(),
        max_output_tokens: context.max_output_tokens,
        output_schema: context.output_schema.clone(),
        reasoning: context.reasoning,
    };
    Ok(RebuiltRequest { request, context, step_seq })
}

/// The session a request at `seq` was sent for: a fork's copied records were the parent's.
fn session_of(loaded: &LoadedSession, seq: u64) -> SessionId {
    match &loaded.meta.forked_from {
        Some(origin) if seq <= origin.seq => origin.session_id,
        _ => loaded.meta.session_id,
    }
}
