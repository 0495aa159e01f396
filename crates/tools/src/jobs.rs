//! `job_output {id}` and `job_kill {id}`, the tools of background jobs: `run_command
//! {background: true}` starts one as an entry of the session table (`unified_exec.rs`), which
//! gives it an id of the same numbering as `exec_command` sessions; `job_output` reads what it
//! printed since the last read, `job_kill` stops it (or a session, named by its id).
//!
//! Invariants:
//! - A job is an `exec_command` session without a terminal: it dies with the tool set, counts
//!   towards the same bound, is listed by `/ps`, and its process belongs to its own owner thread
//!   (`job-N`), never to the tool worker that started it.
//! - A job's unread output is capped like a foreground command's (head and tail kept), so a
//!   chatty job never grows memory.
//! - An ended job stays readable (and `job_kill` says it had already ended) until `/stop` or the
//!   session's end.

use std::sync::Arc;

use codecoder_kernel::{ToolKind, ToolOutput};
use codecoder_protocol::{CallKind, CallView, ToolError};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::env::CallEnv;
use crate::{Builtin, Shared, parse_args};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IdArgs {
    id: u64,
}

fn id_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": { "type": "integer", "minimum": 1, "description": "The job id run_command returned (job_kill also takes an exec_command session ID: jobs and sessions share one numbering)." }
        },
        "required": ["id"],
        "additionalProperties": false
    })
}

pub(crate) struct JobOutput(pub(crate) Arc<Shared>);

impl Builtin for JobOutput {
    fn name(&self) -> &'static str {
        "job_output"
    }
    fn description(&self) -> &'static str {
        "Shows a background job's status (running, or how it ended) and the output it printed \
         since the last job_output call (long output keeps its beginning and end)."
    }
    fn schema(&self) -> Value {
        id_schema()
    }
    fn kind(&self) -> ToolKind {
        ToolKind::ReadOnly
    }
    fn summary(&self, args: &Value) -> String {
        format!("output of job {}", args.get("id").map(Value::to_string).unwrap_or_default())
    }
    fn view(&self, args: &Value) -> CallView {
        job_view(self.name(), args)
    }
    fn run(&self, _env: &dyn CallEnv, args: Value) -> Result<ToolOutput, ToolError> {
        let args: IdArgs = parse_args(args)?;
        let sessions = &self.0.sessions;
        sessions.sweep();
        let mut text = sessions.read_job(args.id)?;
        if let Some(note) = sessions.take_idle_note() {
            text.push_str(&format!("\n{note}\n"));
        }
        Ok(ToolOutput::text(text))
    }
}

pub(crate) struct JobKill(pub(crate) Arc<Shared>);

impl Builtin for JobKill {
    fn name(&self) -> &'static str {
        "job_kill"
    }
    fn description(&self) -> &'static str {
        "Stops a background job, or an exec_command session (with or without a terminal) by its \
         session ID: SIGTERM to its whole process group, SIGKILL after a grace period. Returns \
         its final status and unread output."
    }
    fn schema(&self) -> Value {
        id_schema()
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Exec
    }
    fn summary(&self, args: &Value) -> String {
        format!("kill job {}", args.get("id").map(Value::to_string).unwrap_or_default())
    }
    fn view(&self, args: &Value) -> CallView {
        job_view(self.name(), args)
    }
    fn run(&self, _env: &dyn CallEnv, args: Value) -> Result<ToolOutput, ToolError> {
        let args: IdArgs = parse_args(args)?;
        let sessions = &self.0.sessions;
        sessions.sweep();
        let mut text = sessions.kill_job(args.id)?;
        if let Some(note) = sessions.take_idle_note() {
            text.push_str(&format!("\n{note}\n"));
        }
        Ok(ToolOutput::text(text))
    }
}

/// The view of a call on a background job: the job's id as its detail.
fn job_view(name: &str, args: &Value) -> CallView {
    CallView {
        kind: CallKind::Execute,
        title: name.to_owned(),
        detail: args.get("id").map(Value::to_string).unwrap_or_default(),
        ..CallView::default()
    }
}
