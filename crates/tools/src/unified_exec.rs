//! Interactive command sessions, with codex's tool names and arguments:
//! `exec_command {cmd, workdir?, tty?, yield_time_ms?, max_output_tokens?}` starts `cmd` the way
//! `run_command` does (the session's shell, sandbox and command environment) and returns what it
//! printed within `yield_time_ms`, with its exit code when it ended then, or a session id while
//! it runs; `write_stdin {session_id, chars, yield_time_ms?, max_output_tokens?}` types `chars`
//! into the session's terminal (empty `chars` only polls; control characters such as `\u0003`
//! for Ctrl-C work) and returns the output since the last call.
//!
//! Invariants:
//! - With `tty: true` the process keeps one PTY across calls (`codecoder_sandbox::spawn_pty`);
//!   without it, stdin is `/dev/null` and `write_stdin` only polls.
//! - Every session dies with its tool set: dropping the `SessionTable` kills every session's
//!   whole process tree (the sandbox's `Child` guarantees); so do a cancelled call on it, its
//!   end, and codecoder's own death (each session's owner thread spawned its process, which dies
//!   with that thread).
//! - Background jobs (`run_command {background: true}`, read by `job_output`, stopped by
//!   `job_kill`, see `jobs.rs`) are entries of the same table without a terminal: they share its
//!   ids (a job's id is its session id, one numbering), its bound, its kill on drop and `/ps`.
//!   A job also has a deadline (its timeout), is exempt from the idle sweep, and stays readable
//!   once ended until `/stop` or the table's end. `job_kill` ends any entry by its id, a
//!   session too (with or without a terminal): the one way to end a session without one.
//! - At most `ToolsConfig::max_sessions` entries of either kind run at once (and never more than
//!   `ToolsConfig::max_jobs`, the built-in ceiling).
//! - A session left alone longer than `ToolsConfig::session_idle_timeout` (no call reading or
//!   writing it, none waiting on it) is ended, its whole process tree killed, by the table's
//!   reaper: one named thread per table that sleeps until the earliest idle deadline, so it
//!   happens with no tool call at all. The model learns of it at its next process call (a note
//!   on the result, and an explanation when it names the session), and `/ps` no longer lists
//!   it. The reaper is joined when the table drops.
//! - A session's unread output is capped like a command's (head and tail kept), so a chatty
//!   process never grows memory; an ended session (not a job) is removed once its last output
//!   was read.
//! - `exec_command` is approved like `run_command` (the same `shell:` permission key and
//!   command view); `write_stdin` is read-only to the approval chain: it reaches only a session
//!   whose command line was approved.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

use codecoder_kernel::{ToolKind, ToolOutput};
use codecoder_protocol::{CallKind, CallView, ContentItem, OutputStream, ToolError, first_line};
use codecoder_sandbox::{CommandSpec, PtyInput, SpawnConfig, Wait};
use codecoder_stdx::{JoinOnDrop, spawn_named};
use crossbeam_channel::{Receiver, Sender, never, select};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::env::CallEnv;
use crate::shell::{End, Spill, command_exit, describe, shell_spec, wait_child};
use crate::text::Capped;
use crate::{Builtin, Shared, ToolsConfig, failed, invalid, parse_args, str_arg};

/// `exec_command`'s wait when the call gives none (codex's default).
const EXEC_YIELD: Duration = Duration::from_secs(10);
/// `write_stdin`'s wait when the call gives none (codex's default).
const WRITE_YIELD: Duration = Duration::from_millis(250);
/// The longest wait a call may ask for.
const MAX_YIELD: Duration = Duration::from_secs(30);
/// Bytes per token when `max_output_tokens` caps the output.
const BYTES_PER_TOKEN: usize = 4;
/// How many sessions ended for idleness a table remembers, to explain a later call naming one.
const IDLE_ENDS_KEPT: usize = 64;

/// The interactive sessions of one tool set.
pub(crate) struct SessionTable {
    // Field order matters: the reaper (its wake sender, then its thread) drops first, so its
    // thread ends and is joined before the sessions are killed by `Inner`'s drop.
    reaper: Option<Reaper>,
    // A Mutex because calls of `exec_command` and `write_stdin` run on different tool worker
    // threads, and the reaper on its own. It is held only to look up, insert or take out a
    // session: never across a channel operation, a write to a terminal, or a join. An Arc
    // because the reaper thread holds it too (never the table itself, which it would otherwise
    // keep alive and join from its own thread).
    inner: Arc<Mutex<Inner>>,
    idle_timeout: Duration,
}

/// The thread that ends idle sessions, and the sender that wakes it when a deadline may have
/// come nearer (a session registered, a call on one finished). Dropping `wake` ends it.
struct Reaper {
    wake: Sender<()>,
    _thread: JoinOnDrop<()>,
}

struct Inner {
    sessions: BTreeMap<u64, Session>,
    /// Sessions the reaper ended, oldest first (at most `IDLE_ENDS_KEPT`): a call naming one
    /// is told why it is gone.
    idle_ends: Vec<IdleEnd>,
    /// Of those, the ones the model was not told of yet (a note on its next process call).
    untold: Vec<u64>,
}

/// A session ended for idleness.
struct IdleEnd {
    id: u64,
    command: String,
    idle: Duration,
}

/// Session ids are unique in the process (a subagent's tool set has a table of its own), so
/// `/stop N` names one session whichever table holds it. They start at 1.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Every live table, for `/ps` and `/stop` (`live_sessions`, `stop_session`): a global because
/// the person's view of the processes spans every tool set of the process. Weak, so a table
/// still dies with its tool set; the lock is held only to register or copy the list.
fn tables() -> &'static Mutex<Vec<Weak<SessionTable>>> {
    static TABLES: OnceLock<Mutex<Vec<Weak<SessionTable>>>> = OnceLock::new();
    TABLES.get_or_init(|| Mutex::new(Vec::new()))
}

fn live_tables() -> Vec<Arc<SessionTable>> {
    let mut tables = tables().lock().unwrap_or_else(PoisonError::into_inner);
    tables.retain(|table| table.strong_count() > 0);
    tables.iter().filter_map(Weak::upgrade).collect()
}

/// The `exec_command` sessions and background jobs running in this process, by session id.
pub fn live_sessions() -> Vec<SessionInfo> {
    let mut sessions: Vec<SessionInfo> =
        live_tables().iter().flat_map(|table| table.list()).collect();
    sessions.sort_by_key(|session| session.id);
    sessions
}

/// Ends session `id` (its whole process tree) wherever it runs; false when there is none.
pub fn stop_session(id: u64) -> bool {
    live_tables().iter().any(|table| table.stop(id))
}

struct Session {
    command: String,
    started: Instant,
    /// The terminal's writing end (`tty: true` only). A Mutex because two `write_stdin` calls
    /// may run at once; held only for one write.
    input: Option<Arc<Mutex<PtyInput>>>,
    state: Arc<Mutex<State>>,
    /// A message (or the disconnect, at the end) each time `state` changes.
    changed: Receiver<()>,
    /// Set when the entry is a background job.
    job: Option<Job>,
    // Field order matters: `kill` drops (terminating the process tree) before the owner thread
    // is joined by its handle's drop.
    kill: Option<Sender<()>>,
    _thread: JoinOnDrop<()>,
}

/// What a background job has beyond a session.
struct Job {
    timeout: Option<Duration>,
}

struct State {
    pid: u32,
    unread: Capped,
    /// Bytes of output in all.
    total: u64,
    /// The whole of the unread output once it passed the cap (`run_command`'s spill file, a
    /// blob once read), so the elided middle stays readable. None for a job, whose replies
    /// never name a spill file.
    spill: Option<Spill>,
    end: Option<Result<End, ToolError>>,
    last_used: Instant,
    /// Calls waiting on or writing to the session now: a session in use is never idle.
    busy: u32,
}

/// A live session as `/ps` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// The id `write_stdin` takes.
    pub id: u64,
    /// The command line.
    pub command: String,
    /// The leader's pid.
    pub pid: u32,
    /// Whether it runs on a terminal.
    pub tty: bool,
    /// The id `job_output` and `job_kill` take (the session id), when it is a background job.
    pub job: Option<u64>,
    /// Seconds since it started.
    pub seconds: u64,
}

impl SessionTable {
    /// A table whose sessions end after `idle_timeout` without use, registered for
    /// `live_sessions` and `stop_session`. Should its reaper thread fail to start, idle sessions
    /// are still ended at the next process call (`sweep`).
    pub(crate) fn new(idle_timeout: Duration) -> Arc<Self> {
        let inner = Arc::new(Mutex::new(Inner {
            sessions: BTreeMap::new(),
            idle_ends: Vec::new(),
            untold: Vec::new(),
        }));
        // One message is enough: a pending wake already makes the reaper look again.
        let (wake, woken) = crossbeam_channel::bounded(1);
        let reaped = Arc::clone(&inner);
        let thread = spawn_named("exec-session-reaper".to_owned(), move || {
            reap_idle(&reaped, &woken, idle_timeout);
        });
        let reaper = thread.ok().map(|thread| Reaper { wake, _thread: thread });
        let table = Arc::new(Self { reaper, inner, idle_timeout });
        tables().lock().unwrap_or_else(PoisonError::into_inner).push(Arc::downgrade(&table));
        table
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        lock_inner(&self.inner)
    }

    /// Makes the reaper look at the deadlines again.
    fn wake_reaper(&self) {
        if let Some(reaper) = &self.reaper {
            // A full channel means a wake is pending already.
            let _ = reaper.wake.try_send(());
        }
    }

    /// Ends a call's use of session `id` (see `State::busy`): its idle time starts now.
    fn release(&self, id: u64) {
        let state = self.lock().sessions.get(&id).map(|session| Arc::clone(&session.state));
        if let Some(state) = state {
            let mut state = lock_state(&state);
            state.busy = state.busy.saturating_sub(1);
            state.last_used = Instant::now();
        }
        self.wake_reaper();
    }

    /// A note on the sessions ended for idleness the model was not told of yet, once.
    pub(crate) fn take_idle_note(&self) -> Option<String> {
        let mut inner = self.lock();
        let untold = std::mem::take(&mut inner.untold);
        let lines: Vec<String> = untold
            .iter()
            .filter_map(|id| inner.idle_ends.iter().find(|end| end.id == *id))
            .map(idle_words)
            .collect();
        (!lines.is_empty()).then(|| format!("Note: {}", lines.join("; ")))
    }

    /// The sessions still running, oldest first.
    pub(crate) fn list(&self) -> Vec<SessionInfo> {
        let inner = self.lock();
        inner
            .sessions
            .iter()
            .filter_map(|(&id, session)| {
                let state = lock_state(&session.state);
                state.end.is_none().then(|| SessionInfo {
                    id,
                    command: session.command.clone(),
                    pid: state.pid,
                    tty: session.input.is_some(),
                    job: session.job.as_ref().map(|_| id),
                    seconds: session.started.elapsed().as_secs(),
                })
            })
            .collect()
    }

    /// Ends session `id` (its whole process tree) and forgets it, a job included; false when
    /// there is none.
    pub(crate) fn stop(&self, id: u64) -> bool {
        let session = self.lock().sessions.remove(&id);
        // Dropped (killed and joined) outside the lock.
        session.is_some()
    }

    /// Ends the sessions left alone longer than the idle timeout now, as the reaper does when
    /// their time comes (for a table whose reaper could not start).
    pub(crate) fn sweep(&self) {
        if self.reaper.is_none() {
            sweep_idle(&self.inner, self.idle_timeout);
        }
    }

    /// Starts `cmd` as a session; returns its id.
    fn start(
        &self,
        config: &ToolsConfig,
        cmd: &str,
        workdir: Option<&str>,
        tty: bool,
    ) -> Result<u64, ToolError> {
        self.sweep();
        self.check_room(config)?;
        let mut spec = shell_spec(config, cmd, workdir)?;
        // A proxy inspecting TLS has its session CA trusted by the command's clients.
        if let Some(network) = &config.network_lease {
            spec.env.extend(network.environment().iter().cloned());
        }
        self.spawn(config, cmd, spec, tty, None)
    }

    /// Starts `spec` as a background job (no terminal, ended at `timeout` if given); returns
    /// its job id.
    pub(crate) fn start_job(
        &self,
        config: &ToolsConfig,
        command: &str,
        spec: CommandSpec,
        timeout: Option<Duration>,
    ) -> Result<u64, ToolError> {
        self.sweep();
        self.check_room(config)?;
        self.spawn(config, command, spec, false, Some(timeout))
    }

    /// Refuses another entry when `max_sessions` (or the `max_jobs` ceiling) entries of either
    /// kind run, naming them and the ways to end one.
    fn check_room(&self, config: &ToolsConfig) -> Result<(), ToolError> {
        let bound = config.max_sessions.min(config.max_jobs);
        let running: Vec<String> = self
            .list()
            .iter()
            .map(|entry| {
                let kind = match (entry.job, entry.tty) {
                    (Some(_), _) => "background job",
                    (None, true) => "terminal session",
                    (None, false) => "session",
                };
                format!("{kind} {} `{}`", entry.id, first_line(&entry.command, 40))
            })
            .collect();
        if running.len() < bound {
            return Ok(());
        }
        Err(failed(format!(
            "{} command sessions and background jobs are running ({}), the most allowed \
             ([shell] max_sessions counts both): end one first with job_kill {{\"id\": ID}}, \
             which ends either kind, or let one finish (a terminal session also ends on \
             Ctrl-C, `\\u0003`, or `exit` sent with write_stdin)",
            running.len(),
            running.join(", ")
        )))
    }

    /// Spawns `spec` on an owner thread of its own and registers it: a session, or a job when
    /// `job` holds its timeout. Returns its id (a job's too).
    fn spawn(
        &self,
        config: &ToolsConfig,
        cmd: &str,
        spec: CommandSpec,
        tty: bool,
        job: Option<Option<Duration>>,
    ) -> Result<u64, ToolError> {
        let started = Instant::now();
        let state = Arc::new(Mutex::new(State {
            pid: 0,
            unread: Capped::new(config.output_limit),
            total: 0,
            spill: job.is_none().then(|| Spill::new(config)),
            end: None,
            last_used: started,
            // A session is in use by the `exec_command` call that starts it until that call's
            // wait ends (`release`).
            busy: u32::from(job.is_none()),
        }));
        let (kill_tx, kill_rx) = crossbeam_channel::bounded::<()>(0);
        let (changed_tx, changed) = crossbeam_channel::bounded::<()>(1);
        let (ready_tx, ready) = crossbeam_channel::bounded(1);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let job = job.map(|timeout| Job { timeout });
        let name = match &job {
            Some(_) => format!("job-{id}"),
            None => format!("exec-session-{id}"),
        };
        let deadline = job
            .as_ref()
            .and_then(|job| job.timeout)
            .and_then(|timeout| started.checked_add(timeout));
        let thread_state = Arc::clone(&state);
        let thread_config = config.clone();
        // The command's managed-network endpoints, open until its process has ended.
        let network_lease = config.network_lease.clone();
        // The thread spawns the process itself: the process dies with the thread that started
        // it (the sandbox's parent-death signal), so this thread must live as long as it.
        let thread = spawn_named(name, move || {
            let spawn_config = SpawnConfig {
                kill_grace: thread_config.kill_grace,
                confinement: thread_config.confinement.clone(),
                environment: thread_config.environment.clone(),
                die_with_thread: true,
                ..SpawnConfig::standard()
            };
            let spawned = if tty {
                codecoder_sandbox::spawn_pty(&spec, &spawn_config)
                    .map(|(child, input)| (child, Some(input)))
            } else {
                codecoder_sandbox::spawn(&spec, &spawn_config).map(|child| (child, None))
            }
            .map_err(|err| failed(err.to_string()));
            let (child, input) = match spawned {
                Ok(spawned) => spawned,
                Err(err) => {
                    let _ = ready_tx.send(Err(err));
                    return;
                }
            };
            lock_state(&thread_state).pid = child.pid();
            let _ = ready_tx.send(Ok(input));
            let wait = Wait::new().kill_on(&kill_rx).deadline(deadline);
            let end = wait_child(child, started, &wait, &mut |chunk| {
                let mut guard = lock_state(&thread_state);
                let state = &mut *guard;
                state.total += chunk.bytes.len() as u64;
                if let Some(spill) = &mut state.spill {
                    spill.push(&state.unread, &chunk.bytes);
                }
                state.unread.push(&chunk.bytes);
                drop(guard);
                let _ = changed_tx.try_send(());
            });
            lock_state(&thread_state).end = Some(end);
            drop(network_lease);
            // Dropping `changed_tx` wakes every waiter for the last time.
        })
        .map_err(|err| failed(format!("could not start a thread: {err}")))?;
        let input = match ready.recv() {
            Ok(Ok(input)) => input,
            Ok(Err(err)) => return Err(err),
            Err(_) => return Err(failed("the session's thread ended before its process started")),
        };
        let mut inner = self.lock();
        inner.sessions.insert(
            id,
            Session {
                command: cmd.to_owned(),
                started,
                input: input.map(|input| Arc::new(Mutex::new(input))),
                state,
                changed,
                job,
                kill: Some(kill_tx),
                _thread: thread,
            },
        );
        drop(inner);
        self.wake_reaper();
        Ok(id)
    }

    /// Entry `job_id`'s status (a job's, or a session's) and the output since the last read.
    pub(crate) fn read_job(&self, job_id: u64) -> Result<String, ToolError> {
        let (command, timeout, started, state, is_job) = {
            let inner = self.lock();
            let Some(session) = inner.sessions.get(&job_id) else {
                return Err(unknown_job(job_id, &inner));
            };
            let timeout = session.job.as_ref().and_then(|job| job.timeout);
            let is_job = session.job.is_some();
            (session.command.clone(), timeout, session.started, Arc::clone(&session.state), is_job)
        };
        let mut state = lock_state(&state);
        let limit = state.unread.limit();
        let unread = std::mem::replace(&mut state.unread, Capped::new(limit));
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
        let kind = if is_job { "Job" } else { "Session" };
        let mut text = format!("{kind} {job_id} `{command}`: {status}.\n");
        if unread.is_empty() {
            text.push_str("(no new output since the last job_output)\n");
        } else {
            text.push_str(&format!("New output ({} bytes):\n", unread.total()));
            text.push_str(&unread.render());
        }
        Ok(text)
    }

    /// Kills entry `job_id`'s process tree (a job's, or a session's with or without a
    /// terminal) and waits for its end; its final status and unread output. An ended job stays
    /// readable; an ended session is forgotten, as once its last output is read.
    pub(crate) fn kill_job(&self, job_id: u64) -> Result<String, ToolError> {
        let (kill, changed, was_running, is_job) = {
            let mut inner = self.lock();
            let Some(session) = inner.sessions.get_mut(&job_id) else {
                return Err(unknown_job(job_id, &inner));
            };
            // Lock order is always table, then entry state; the owner thread takes only the
            // latter.
            let was_running = lock_state(&session.state).end.is_none();
            (session.kill.take(), session.changed.clone(), was_running, session.job.is_some())
        };
        drop(kill);
        // The owner thread drops its sender once the end is recorded.
        while changed.recv().is_ok() {}
        let report = self.read_job(job_id)?;
        if !is_job {
            self.stop(job_id);
        }
        let prefix = match (was_running, is_job) {
            (true, _) => "Killed. ",
            (false, true) => "The job had already ended. ",
            (false, false) => "The session had already ended. ",
        };
        Ok(format!("{prefix}{report}"))
    }

    /// Writes `chars` to session `id`'s terminal.
    fn write(&self, id: u64, chars: &str) -> Result<(), ToolError> {
        let input = {
            let inner = self.lock();
            let Some(session) = inner.sessions.get(&id) else {
                return Err(unknown_session(id, &inner));
            };
            let mut state = lock_state(&session.state);
            state.last_used = Instant::now();
            // In use until the `collect` that follows ends (`release`).
            state.busy += 1;
            drop(state);
            session.input.clone()
        };
        if chars.is_empty() {
            return Ok(());
        }
        let Some(input) = input else {
            self.release(id);
            return Err(failed(format!(
                "session {id} has no terminal (it was started without `tty: true`), so its \
                 stdin is closed: poll it with empty `chars`, end it with job_kill \
                 {{\"id\": {id}}}, or start the command again with `tty: true`"
            )));
        };
        let mut input = input.lock().unwrap_or_else(PoisonError::into_inner);
        // A session that ended has no reader left: the write fails with EIO, which the read
        // that follows explains.
        let _ = input.write(chars.as_bytes());
        Ok(())
    }

    /// Waits up to `yield_time` for session `id` to end (or the call to be cancelled, which
    /// ends the session), then takes its unread output and ends the call's use of it
    /// (`release`). An ended session is forgotten. The reply's wall time counts from
    /// `call_started`, the start of the call (codex's), not of the session.
    fn collect(
        &self,
        config: &ToolsConfig,
        env: &dyn CallEnv,
        call: Collect,
    ) -> Result<ToolOutput, ToolError> {
        let id = call.id;
        let result = self.wait_and_take(config, env, call);
        // The note is taken while the session is still in use, so it never tells of the
        // session this very result reports running.
        let note = self.take_idle_note();
        self.release(id);
        let mut result = result?;
        if let Some(note) = note {
            result.content.push(ContentItem::Text { text: note });
        }
        Ok(result)
    }

    fn wait_and_take(
        &self,
        config: &ToolsConfig,
        env: &dyn CallEnv,
        call: Collect,
    ) -> Result<ToolOutput, ToolError> {
        let Collect { id, call_started, yield_time, max_output_tokens } = call;
        let (state, changed, command, is_job) = {
            let inner = self.lock();
            let Some(session) = inner.sessions.get(&id) else {
                return Err(unknown_session(id, &inner));
            };
            (
                Arc::clone(&session.state),
                session.changed.clone(),
                session.command.clone(),
                session.job.is_some(),
            )
        };
        let deadline = crossbeam_channel::at(Instant::now() + yield_time);
        let mut changed = changed;
        loop {
            if lock_state(&state).end.is_some() {
                break;
            }
            select! {
                recv(changed) -> message => {
                    if message.is_err() {
                        changed = crossbeam_channel::never();
                    }
                },
                recv(env.cancel().signal()) -> _ => {
                    self.stop(id);
                    return Err(ToolError::Cancelled);
                },
                recv(deadline) -> _ => break,
            }
        }
        let (unread, spill, end) = {
            let mut state = lock_state(&state);
            state.last_used = Instant::now();
            let limit = state.unread.limit();
            let spill = match &mut state.spill {
                Some(spill) => Some(std::mem::replace(spill, Spill::new(config))),
                None => None,
            };
            (std::mem::replace(&mut state.unread, Capped::new(limit)), spill, state.end.clone())
        };
        // The client sees what the call read as the call's output (the TUI's card, exec
        // --json's aggregated output), as `run_command`'s stream.
        if !unread.is_empty() {
            env.output(OutputStream::Stdout, unread.render());
        }
        if end.is_some() && !is_job {
            // Joins its thread; the process tree is already gone. A job stays for job_output.
            self.stop(id);
        }
        let end = end.transpose()?;
        let mut result =
            report(id, &command, call_started, &unread, end.as_ref(), max_output_tokens);
        let redactor = env.redactor();
        if let Some(note) = spill.and_then(|spill| spill.finish(redactor.as_deref())) {
            result.content.push(ContentItem::Text { text: note });
        }
        Ok(result)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let mut sessions = std::mem::take(&mut self.sessions);
        // Signal every session first so that their grace periods run at once, then join them.
        for session in sessions.values_mut() {
            session.kill.take();
        }
        drop(sessions);
    }
}

fn lock_state(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

fn lock_inner(inner: &Mutex<Inner>) -> std::sync::MutexGuard<'_, Inner> {
    inner.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The reaper's loop: ends the idle sessions, sleeps until the next one may be idle (or
/// forever, with none), and again when woken; returns when `woken` disconnects.
fn reap_idle(inner: &Mutex<Inner>, woken: &Receiver<()>, idle_timeout: Duration) {
    loop {
        let next = sweep_idle(inner, idle_timeout);
        let deadline = next.map_or_else(never, crossbeam_channel::at);
        select! {
            recv(woken) -> message => {
                if message.is_err() {
                    return;
                }
            },
            recv(deadline) -> _ => {},
        }
    }
}

/// Ends the sessions (not jobs) nobody used for `idle_timeout`, killing their process trees
/// outside the lock; returns when the next of the others will be idle.
fn sweep_idle(inner: &Mutex<Inner>, idle_timeout: Duration) -> Option<Instant> {
    let now = Instant::now();
    let mut next: Option<Instant> = None;
    let ended: Vec<Session> = {
        let mut inner = lock_inner(inner);
        let mut idle = Vec::new();
        for (&id, session) in &inner.sessions {
            if session.job.is_some() {
                continue;
            }
            let state = lock_state(&session.state);
            if state.busy > 0 {
                continue;
            }
            match state.last_used.checked_add(idle_timeout) {
                Some(due) if due <= now => idle.push((id, now.duration_since(state.last_used))),
                Some(due) => next = Some(next.map_or(due, |next| next.min(due))),
                None => {}
            }
        }
        let mut ended = Vec::new();
        for (id, idle) in idle {
            if let Some(session) = inner.sessions.remove(&id) {
                inner.idle_ends.push(IdleEnd { id, command: session.command.clone(), idle });
                inner.untold.push(id);
                ended.push(session);
            }
        }
        let excess = inner.idle_ends.len().saturating_sub(IDLE_ENDS_KEPT);
        inner.idle_ends.drain(..excess);
        ended
    };
    // Dropping a session kills its process tree and joins its owner thread.
    drop(ended);
    next
}

/// How a session ended for idleness is told to the model.
fn idle_words(end: &IdleEnd) -> String {
    format!(
        "command session {} (`{}`) was ended after {} s without use (the idle timeout, \
         [shell] session_idle_timeout_secs); its processes were killed",
        end.id,
        first_line(&end.command, 80),
        end.idle.as_secs()
    )
}

/// Why `job_output` or `job_kill` names no entry: the ids there are (jobs and sessions share
/// one numbering), or the idle end of a session.
fn unknown_job(id: u64, inner: &Inner) -> ToolError {
    if inner.idle_ends.iter().any(|end| end.id == id) {
        return unknown_session(id, inner);
    }
    let ids: Vec<String> = inner.sessions.keys().map(u64::to_string).collect();
    let known = if ids.is_empty() { "none".to_owned() } else { ids.join(", ") };
    failed(format!(
        "there is no background job or command session {id} (jobs and sessions of this \
         conversation: {known})"
    ))
}

fn unknown_session(id: u64, inner: &Inner) -> ToolError {
    if let Some(end) = inner.idle_ends.iter().find(|end| end.id == id) {
        return failed(format!(
            "{}: start the command again with exec_command if it is still needed",
            idle_words(end)
        ));
    }
    let ids: Vec<String> = inner.sessions.keys().map(u64::to_string).collect();
    let known = if ids.is_empty() { "none".to_owned() } else { ids.join(", ") };
    failed(format!(
        "there is no command session {id} (it ended and its output was read, or it never \
         existed; sessions running: {known})"
    ))
}

/// What a call collecting a session's output asks for.
struct Collect {
    /// The session.
    id: u64,
    /// When the call began: its reply's wall time counts from here.
    call_started: Instant,
    /// The longest wait for the session's end.
    yield_time: Duration,
    max_output_tokens: Option<u64>,
}

/// The model's view of a session after a call: the call's wall time, exit code or session
/// id, output.
fn report(
    id: u64,
    command: &str,
    call_started: Instant,
    unread: &Capped,
    end: Option<&End>,
    max_output_tokens: Option<u64>,
) -> ToolOutput {
    let mut output = unread.render();
    if let Some(tokens) = max_output_tokens {
        let limit = usize::try_from(tokens).unwrap_or(usize::MAX).saturating_mul(BYTES_PER_TOKEN);
        if output.len() > limit {
            let mut capped = Capped::new(limit);
            capped.push(output.as_bytes());
            output = capped.render();
        }
    }
    let wall = call_started.elapsed().as_secs_f64();
    let mut text = format!("Wall time: {wall:.4} seconds\n");
    let (exit, is_error) = match end {
        Some(end) => {
            let exit = command_exit(end);
            match exit.code {
                Some(code) => text.push_str(&format!("Process exited with code {code}\n")),
                None => {
                    let (words, _) = describe(end, None);
                    text.push_str(&format!("Process ended: {words}\n"));
                }
            }
            (Some(exit), describe(end, None).1)
        }
        None => {
            text.push_str(&format!(
                "Process running with session ID {id} (`{}`)\n",
                first_line(command, 80)
            ));
            (None, false)
        }
    };
    text.push_str(&format!("Original token count: {}\n", unread.total().div_ceil(4)));
    text.push_str("Output:\n");
    text.push_str(&output);
    ToolOutput { content: vec![ContentItem::Text { text }], is_error, exit }
}

/// A wait given in milliseconds, capped at `MAX_YIELD`.
fn yield_time(ms: Option<u64>, default: Duration) -> Duration {
    ms.map_or(default, Duration::from_millis).min(MAX_YIELD)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecArgs {
    cmd: String,
    workdir: Option<String>,
    #[serde(default)]
    tty: bool,
    yield_time_ms: Option<u64>,
    max_output_tokens: Option<u64>,
}

pub(crate) struct ExecCommand(pub(crate) Arc<Shared>);

impl Builtin for ExecCommand {
    fn name(&self) -> &'static str {
        "exec_command"
    }
    fn description(&self) -> &'static str {
        "Runs a command in a shell (as run_command does, in the same sandbox) and returns its \
         output after `yield_time_ms`, or sooner when it exits. If it is still running, the \
         result gives a session ID: send it input, or poll it with empty `chars`, with \
         write_stdin. With `tty: true` it runs on a terminal: use that for REPLs, prompts \
         (passwords included), and anything interactive; Ctrl-C is `\\u0003`, end of input \
         `\\u0004`. Sessions end with the conversation."
    }
    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "cmd": { "type": "string", "minLength": 1, "description": "Shell command to execute." },
                "workdir": { "type": "string", "description": "The working directory to run it in; the session's when absent." },
                "tty": { "type": "boolean", "description": "Whether to run it on a terminal (a PTY), so that write_stdin can type into it. Default false." },
                "yield_time_ms": { "type": "integer", "minimum": 0, "description": "How long to wait for output before returning (default 10000, at most 30000)." },
                "max_output_tokens": { "type": "integer", "minimum": 1, "description": "The most output tokens to return; the middle of longer output is elided." }
            },
            "required": ["cmd"],
            "additionalProperties": false
        })
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Exec
    }
    fn permission_keys(&self, args: &Value) -> Vec<String> {
        vec![format!("shell:{}", str_arg(args, "cmd"))]
    }
    fn summary(&self, args: &Value) -> String {
        format!("run `{}`", str_arg(args, "cmd"))
    }
    fn view(&self, args: &Value) -> CallView {
        crate::shell::command_view(str_arg(args, "cmd"))
    }
    fn run(&self, env: &dyn CallEnv, args: Value) -> Result<ToolOutput, ToolError> {
        let args: ExecArgs = parse_args(args)?;
        if args.cmd.trim().is_empty() {
            return Err(invalid("`cmd` is empty"));
        }
        if env.cancel().is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        env.before_command();
        let sessions = &self.0.sessions;
        let network = crate::network::for_command(&self.0.config, env, &args.cmd)?;
        let config = crate::network::leased(&self.0.config, network);
        let call_started = Instant::now();
        let id = sessions.start(&config, &args.cmd, args.workdir.as_deref(), args.tty)?;
        let call = Collect {
            id,
            call_started,
            yield_time: yield_time(args.yield_time_ms, EXEC_YIELD),
            max_output_tokens: args.max_output_tokens,
        };
        let mut result = sessions.collect(&self.0.config, env, call)?;
        if let Some(note) = config.network_lease.as_ref().and_then(|lease| lease.note()) {
            result.content.push(ContentItem::Text { text: note });
        }
        Ok(result)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    session_id: u64,
    #[serde(default)]
    chars: String,
    yield_time_ms: Option<u64>,
    max_output_tokens: Option<u64>,
}

pub(crate) struct WriteStdin(pub(crate) Arc<Shared>);

impl Builtin for WriteStdin {
    fn name(&self) -> &'static str {
        "write_stdin"
    }
    fn description(&self) -> &'static str {
        "Writes characters to a running exec_command session's terminal and returns the output \
         since the last call, after `yield_time_ms`. Empty `chars` only polls. End a line with \
         `\\n`; Ctrl-C is `\\u0003`."
    }
    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "session_id": { "type": "integer", "minimum": 1, "description": "The session ID exec_command returned." },
                "chars": { "type": "string", "description": "Bytes to write to its stdin; may be empty to poll." },
                "yield_time_ms": { "type": "integer", "minimum": 0, "description": "How long to wait for output before returning (default 250, at most 30000)." },
                "max_output_tokens": { "type": "integer", "minimum": 1, "description": "The most output tokens to return; the middle of longer output is elided." }
            },
            "required": ["session_id"],
            "additionalProperties": false
        })
    }
    fn kind(&self) -> ToolKind {
        // The session's command line was approved when it started; what is typed into it is
        // that approved program's input.
        ToolKind::ReadOnly
    }
    fn summary(&self, args: &Value) -> String {
        let id = args.get("session_id").map(Value::to_string).unwrap_or_default();
        match str_arg(args, "chars") {
            "" => format!("poll session {id}"),
            chars => format!("write {chars:?} to session {id}"),
        }
    }
    fn view(&self, args: &Value) -> CallView {
        let id = args.get("session_id").map(Value::to_string).unwrap_or_default();
        let chars = str_arg(args, "chars");
        let title = if chars.is_empty() {
            format!("Poll session {id}")
        } else {
            format!("Write to session {id}")
        };
        CallView {
            kind: CallKind::Execute,
            title,
            detail: format!("{chars:?}"),
            ..CallView::default()
        }
    }
    fn run(&self, env: &dyn CallEnv, args: Value) -> Result<ToolOutput, ToolError> {
        let args: WriteArgs = parse_args(args)?;
        let call_started = Instant::now();
        let sessions = &self.0.sessions;
        sessions.sweep();
        sessions.write(args.session_id, &args.chars)?;
        let call = Collect {
            id: args.session_id,
            call_started,
            yield_time: yield_time(args.yield_time_ms, WRITE_YIELD),
            max_output_tokens: args.max_output_tokens,
        };
        sessions.collect(&self.0.config, env, call)
    }
}

#[cfg(test)]
mod tests;
