//! `ClientFiles`: the tools' `FileAccess` through the ACP client (`fs/read_text_file`,
//! `fs/write_text_file`), so an editor's unsaved buffers are what the model reads and edits.
//!
//! Invariants: only what the client advertised in `initialize` goes to it (the rest answers
//! `None`/`false`, and the tools use the disk); a call blocks the tool's worker thread, never
//! the connection's: the answer comes back on a one-shot channel from the SDK's response
//! callback, and the turn's cancel ends the wait.

use std::fmt;
use std::path::Path;
use std::sync::OnceLock;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema as acp;
use codecoder_app::{CancelToken, FileAccess};

/// The client's file system, for one session.
pub(crate) struct ClientFiles {
    pub(crate) connection: ConnectionTo<Client>,
    /// Set once the session exists (its id is the log's, known only after it starts).
    pub(crate) session_id: OnceLock<String>,
    pub(crate) read: bool,
    pub(crate) write: bool,
}

impl fmt::Debug for ClientFiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientFiles")
            .field("session_id", &self.session_id.get())
            .field("read", &self.read)
            .field("write", &self.write)
            .finish_non_exhaustive()
    }
}

impl ClientFiles {
    /// Sends `request` and waits for its answer, or the cancel.
    fn ask<R>(&self, request: R, cancel: &CancelToken) -> Result<R::Response, String>
    where
        R: agent_client_protocol::JsonRpcRequest,
        R::Response: Send + 'static,
    {
        let (sender, receiver) = crossbeam_channel::bounded(1);
        self.connection
            .send_request(request)
            .on_receiving_result(move |result| {
                // One answer into a channel of one: never blocks the dispatch loop.
                let _ = sender.try_send(result);
                futures::future::ready(Ok(()))
            })
            .map_err(|err| format!("the editor's connection is closed: {}", err.message))?;
        crossbeam_channel::select! {
            recv(receiver) -> answer => match answer {
                Ok(Ok(response)) => Ok(response),
                Ok(Err(err)) => Err(format!("the editor answered with an error: {}", err.message)),
                Err(_) => Err("the editor's connection closed before it answered".to_owned()),
            },
            recv(cancel.signal()) -> _ => Err("cancelled".to_owned()),
        }
    }

    fn session_id(&self) -> Result<String, String> {
        self.session_id.get().cloned().ok_or_else(|| "the session has not started".to_owned())
    }
}

impl FileAccess for ClientFiles {
    fn read_text(&self, path: &Path, cancel: &CancelToken) -> Result<Option<String>, String> {
        if !self.read {
            return Ok(None);
        }
        let request = acp::ReadTextFileRequest::new(self.session_id()?, path);
        let response = self
            .ask(request, cancel)
            .map_err(|err| format!("reading `{}` through the editor: {err}", path.display()))?;
        Ok(Some(response.content))
    }

    fn write_text(&self, path: &Path, content: &str, cancel: &CancelToken) -> Result<bool, String> {
        if !self.write {
            return Ok(false);
        }
        let request = acp::WriteTextFileRequest::new(self.session_id()?, path, content);
        self.ask(request, cancel)
            .map_err(|err| format!("writing `{}` through the editor: {err}", path.display()))?;
        Ok(true)
    }
}
