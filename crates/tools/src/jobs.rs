//! Background jobs: `run_command {background: true}` starts one, `job_output {id}` reads what it
//! printed since the last read, `job_kill {id}` stops it.
//!
//! Invariants:
//! - Every job dies with its session: the `JobTable` belongs to one tool set, and dropping it
//!   kills every job's process group (all at once, then waits for each).
//! - A job's unread output is capped like a foreground command's (head and tail kept), so a
//!   chatty job never grows memory.
//! - Each job has one named thread (`job-N`) that owns its process; it is joined by `job_kill` or
//!   when the table drops.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use codecoder_kernel::{ToolKind, ToolOutput};
use codecoder_protocol::{CallKind, CallView, ToolError};
use codecoder_sandbox::{CommandSpec, Wait};
use codecoder_stdx::{JoinOnDrop, spawn_named};
use crossbeam_channel::Sender;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::env::CallEnv;
use crate::shell::{End, describe, start_child, wait_child};
use crate::text::Capped;
use crate::{Builtin, Shared, ToolsConfig, failed, parse_args};

/// The background jobs of one session.
pub(crate) struct JobTable {
    // A Mutex because calls of `run_command`, `job_output` and `job_kill` run on different tool
    // worker threads. It is held only to look up or insert a job: never across a channel
    // operation or a join.
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    jobs: BTreeMap<u64, Job>,
}

struct Job {
    command: String,
    timeout: Option<Duration>,
    started: Instant,
    state: Arc<Mutex<JobState>>,
    // Field order matters: `kill` drops (terminating the group) before `thread` joins.
    kill: Option<Sender<()>>,
    thread: Option<JoinOnDrop<()>>,
}

struct JobState {
    pid: u32,
    unread: Capped,
    total: u64,
    end: Option<Result<End, ToolError>>,
}

impl JobTable {
    pub(crate) fn new() -> Self {
        Self { inner: Mutex::new(Inner { next_id: 1, jobs: BTreeMap::new() }) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts `spec` as a job; returns its id.
    pub(crate) fn start(
        &self,
        config: &ToolsConfig,
        command: &str,
        spec: &CommandSpec,
        timeout: Option<Duration>,
    ) -> Result<u64, ToolError> {
        let running =
            self.lock().jobs.values().filter(|job| lock_state(&job.state).end.is_none()).count();
        if running >= config.max_jobs {
            return Err(failed(format!(
                "{running} background jobs are running, the most allowed: stop one with job_kill \
                 first"
            )));
        }
        let started = Instant::now();
        let child = start_child(config, spec)?;
        let state = Arc::new(Mutex::new(JobState {
            pid: child.pid(),
            unread: Capped::new(config.output_limit),
            total: 0,
            end: None,
        }));
        let (kill_tx, kill_rx) = crossbeam_channel::bounded::<()>(0);
        let mut inner = self.lock();
        let id = inner.next_id;
        inner.next_id += 1;
        let thread_state = Arc::clone(&state);
        let thread = spawn_named(format!("job-{id}"), move || {
            let wait = Wait::new()
                .kill_on(&kill_rx)
                .deadline(timeout.and_then(|timeout| started.checked_add(timeout)));
            let end = wait_child(child, started, &wait, &mut |chunk| {
                let mut state = lock_state(&thread_state);
                state.total += chunk.bytes.len() as u64;
                state.unread.push(&chunk.bytes);
            });
            lock_state(&thread_state).end = Some(end);
        })
        .map_err(|err| failed(format!("could not start a thread: {err}")))?;
        inner.jobs.insert(
            id,
            Job {
                command: command.to_owned(),
                timeout,
                started,
                state,
                kill: Some(kill_tx),
                thread: Some(thread),
            },
        );
        Ok(id)
    }

    /// The job's status and the output since the last read.
    fn read(&self, id: u64) -> Result<String, ToolError> {
        let (command, timeout, started, state) = {
            let inner = self.lock();
            let Some(job) = inner.jobs.get(&id) else {
                return Err(unknown_job(id, &inner));
            };
            (job.command.clone(), job.timeout, job.started, Arc::clone(&job.state))
        };
        let mut state = lock_state(&state);
        let unread = std::mem::replace(&mut state.unread, Capped::new(0));
        state.unread = Capped::new(unread.limit());
        let status = match &state.end {
            None => format!(
                "running (pid {}, {:.1} s so far, {} bytes of output in all)",
                state.pid,
                started.elapsed().as_secs_f64(),
                state.total
            ),
            Some(Ok(end)) => {
                let (words, _) = describe(end, timeout);
                format!("ended: {words} after {:.2} s", end.duration.as_secs_f64())
            }
            Some(Err(err)) => format!("failed: {err}"),
        };
        let mut text = format!("Job {id} `{command}`: {status}.\n");
        if unread.is_empty() {
            text.push_str("(no new output since the last job_output)\n");
        } else {
            text.push_str(&format!("New output ({} bytes):\n", unread.total()));
            text.push_str(&unread.render());
        }
        Ok(text)
    }

    /// Kills the job's process group and waits for it; the job's final status and output.
    fn kill(&self, id: u64) -> Result<String, ToolError> {
        let (kill, thread, was_running) = {
            let mut inner = self.lock();
            let Some(job) = inner.jobs.get_mut(&id) else {
                return Err(unknown_job(id, &inner));
            };
            // Lock order is always table, then job state; the job's thread takes only the
            // latter.
            let was_running = lock_state(&job.state).end.is_none();
            (job.kill.take(), job.thread.take(), was_running)
        };
        drop(kill);
        if let Some(thread) = thread {
            let _ = thread.join();
        }
        let report = self.read(id)?;
        let prefix = if was_running { "Killed. " } else { "The job had already ended. " };
        Ok(format!("{prefix}{report}"))
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let mut jobs = std::mem::take(&mut self.jobs);
        // Signal every job first so that their grace periods run at once, then join them.
        for job in jobs.values_mut() {
            job.kill.take();
        }
        drop(jobs);
    }
}

fn lock_state(state: &Mutex<JobState>) -> std::sync::MutexGuard<'_, JobState> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

fn unknown_job(id: u64, inner: &Inner) -> ToolError {
    let ids: Vec<String> = inner.jobs.keys().map(u64::to_string).collect();
    let known = if ids.is_empty() { "none".to_owned() } else { ids.join(", ") };
    failed(format!("there is no background job {id} (jobs of this session: {known})"))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IdArgs {
    id: u64,
}

fn id_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": { "type": "integer", "minimum": 1, "description": "The job id run_command returned." }
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
        self.0.jobs.read(args.id).map(ToolOutput::text)
    }
}

pub(crate) struct JobKill(pub(crate) Arc<Shared>);

impl Builtin for JobKill {
    fn name(&self) -> &'static str {
        "job_kill"
    }
    fn description(&self) -> &'static str {
        "Stops a background job: SIGTERM to its whole process group, SIGKILL after a grace \
         period. Returns its final status and unread output."
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
        self.0.jobs.kill(args.id).map(ToolOutput::text)
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
