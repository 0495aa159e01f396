//! The writer thread: the only code that writes to the client. One message per line, flushed
//! at once; notifications the client opted out of (`optOutNotificationMethods`) are dropped
//! here, so no producer needs to know about them.
//!
//! Invariant: a line is written whole or not at all from the client's point of view (one
//! `write_all` of the line with its newline); after a write error nothing more is written and
//! the thread ends, so producers' sends fail instead of blocking.

use std::collections::HashSet;
use std::io::Write;

use crossbeam_channel::Receiver;

use crate::types::{RequestId, ServerNotification, ServerRequest};
use crate::wire::{Outgoing, RpcError, encode};

/// What the writer is given.
pub(crate) enum WriterMsg {
    /// A notification.
    Notification(ServerNotification),
    /// A result.
    Response {
        /// The request's id.
        id: RequestId,
        /// The result.
        result: serde_json::Value,
    },
    /// An error answer.
    Error {
        /// The request's id, `None` when it could not be read.
        id: Option<RequestId>,
        /// The error.
        error: RpcError,
    },
    /// A request to the client.
    Request {
        /// Its id.
        id: RequestId,
        /// The request.
        request: ServerRequest,
    },
    /// From now on, drop notifications of these methods.
    OptOut(Vec<String>),
}

/// Writes what arrives until every sender is gone or the client stops reading.
pub(crate) fn run(mut output: Box<dyn Write + Send>, messages: &Receiver<WriterMsg>) {
    let mut opted_out: HashSet<String> = HashSet::new();
    for message in messages {
        let outgoing = match message {
            WriterMsg::OptOut(methods) => {
                opted_out.extend(methods);
                continue;
            }
            WriterMsg::Notification(notification) => {
                if opted_out.contains(notification.method()) {
                    continue;
                }
                Outgoing::Notification(notification)
            }
            WriterMsg::Response { id, result } => Outgoing::Response { id, result },
            WriterMsg::Error { id, error } => Outgoing::Error { id, error },
            WriterMsg::Request { id, request } => Outgoing::Request { id, request },
        };
        let mut line = encode(&outgoing);
        line.push('\n');
        if output.write_all(line.as_bytes()).and_then(|()| output.flush()).is_err() {
            return;
        }
    }
}
