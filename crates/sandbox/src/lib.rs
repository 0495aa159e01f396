//! The only crate that spawns processes (design.md "Layers"; `clippy.toml` forbids
//! `std::process::Command::new` everywhere else).
//!
//! A child runs in a process group of its own (the child's pid is the group id), with stdin
//! closed and stdout/stderr read by two named threads into a bounded channel. `Child::wait`
//! selects over that output, the exit status and what may stop it early ([`Wait`]: a cancel
//! receiver, a deadline and a kill receiver, together), so a stop is seen at once and no caller
//! needs a thread of its own to merge them. [`output`] and [`run`] are spawn-and-wait in one call
//! (collected, or streamed to a callback).
//!
//! Invariants:
//! - No orphan process: when a `Child` is cancelled, finishes, or is dropped, the whole group
//!   gets SIGTERM, then SIGKILL after the grace period if any member is still there, and so
//!   do the process groups of the leader's live descendants outside its group and each
//!   descendant by itself (`tree.rs`). The tree is frozen (SIGSTOP) before it is read from
//!   `/proc`, so nothing forks or leaves the group between the read and the signal: bubblewrap's
//!   `--new-session` puts the sandboxed tree in a session of its own, and a cancel during
//!   bubblewrap's start-up found its child (the pid namespace's init, which ignores SIGTERM)
//!   before it had asked to die with its parent (seen under load: the command outlived the
//!   cancel). Confined, the pid namespace (bubblewrap's, or the stage's under Landlock) then
//!   takes every process inside with it. Unconfined, a descendant that left the group is
//!   reached while its parent chain to the leader holds; one already reparented to init escapes.
//! - Nothing outlives a `kill -9` of codecoder either: every spawned child announces its group
//!   to a supervisor process started once per codecoder process (`reaper.rs`), which kills
//!   those groups, their sessions and their descendants when codecoder is gone.
//! - Only this crate spawns processes, and a `Confinement::Sandboxed` command never starts
//!   unconfined: if the backend cannot apply the policy, the stage exits 126 before the command
//!   runs.
//! - Every thread this crate starts is named and joined before `Child` is gone.
//!
//! Confinement: `Confinement::Sandboxed` wraps the command for a backend chosen by [`probe`]:
//! bubblewrap with a seccomp filter it installs itself (`--seccomp FD`), or Landlock plus the same
//! filter applied by a re-exec stage (Linux), or Seatbelt (macOS). The stage is the product's own
//! executable re-run with a hidden marker ([`run_stage_if_requested`]); it also serves bubblewrap
//! when the filter cannot be handed over on a pipe. Under bubblewrap the command runs in a pid namespace of its own
//! with `--die-with-parent`, so terminating the group of the outer `bwrap` still ends everything
//! inside; under Landlock the stage execs the command in place, keeping its pid and group.
//! Secrets stay unreadable under every backend: the policy's hidden paths (credential stores)
//! are masked (bubblewrap) or left out of the read grants (Landlock, Seatbelt).
//!
//! Environment: a child inherits the spawner's environment unless [`SpawnConfig::environment`]
//! gives one exactly (the command environment policy, `env_policy.rs`, which drops API keys and
//! tokens); then nothing else is inherited, and the spec's variables and the sandbox's own
//! (`CODECODER_SANDBOX`, …) go on top. The wrappers pass it through unchanged: bubblewrap and
//! the stage keep the environment they were started with (the stage is recognised by its
//! argument, not by a variable).

use std::ffi::OsString;
use std::io::{self, Read};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codecoder_stdx::{JoinOnDrop, spawn_named};
use crossbeam_channel::{Receiver, Sender, never, select};
use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

pub use crate::backend::{Backend, BackendPreference, Probe, Sandbox, probe};
pub use crate::collect::{Collected, output, run};
pub use crate::env_policy::{
    CORE_VARIABLES, CommandEnvironment, DEFAULT_EXCLUDES, EnvPolicy, Environment, Inherit,
    command_environment,
};
pub use crate::hint::denial_hint;
pub use crate::piped::{PipedChild, spawn_piped};
pub use crate::policy::{
    FsAccess, NetworkMode, NetworkProxy, RELAY_PORT, SandboxPolicy, default_hidden_paths,
    ensure_proxy_socket_root, proxy_environment, proxy_socket_root,
};
pub use crate::pty::{PtyInput, spawn_pty};
pub use crate::seatbelt::seatbelt_profile;
pub use crate::socks::{SOCKS_CONNECT_MARKER, git_ssh_command};
pub use crate::stage::{STAGE_MARKER, run_stage_if_requested};
pub use crate::tree::live_group_members;
pub use crate::wait::Wait;

mod backend;
mod collect;
pub mod env;
mod env_policy;
mod hint;
mod piped;
mod policy;
mod pty;
#[cfg(target_os = "linux")]
mod reaper;
#[cfg(target_os = "linux")]
mod relay;
mod seatbelt;
#[cfg(target_os = "linux")]
mod seccomp;
mod socks;
mod stage;
mod sweep;
mod tree;
mod wait;

/// The sandbox crate's error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The program could not be started.
    #[error("could not start `{program}`: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// What the OS said.
        source: io::Error,
    },
    /// A helper thread could not be started.
    #[error("could not start a thread: {0}")]
    Thread(io::Error),
    /// The child's exit status never arrived (its waiter thread died).
    #[error("lost track of process {pid}")]
    Lost {
        /// The child's pid.
        pid: u32,
    },
}

/// The sandbox crate's result.
pub type Result<T> = std::result::Result<T, Error>;

/// How a process is confined.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Confinement {
    /// No OS sandbox: the process runs with the agent's rights (danger-full-access).
    Unconfined,
    /// Run under an OS sandbox: the policy, the backend and the stage executable.
    Sandboxed(Arc<Sandbox>),
}

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    /// The program (looked up in `PATH` when it has no slash).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The working directory; the agent's own when `None`.
    pub cwd: Option<PathBuf>,
    /// Variables set on top of the environment the spawn starts from
    /// ([`SpawnConfig::environment`]).
    pub env: Vec<(OsString, OsString)>,
    /// Bytes written to the child's stdin (by a thread of its own), which is then closed.
    /// `None`: stdin is `/dev/null`.
    pub stdin: Option<Vec<u8>>,
}

impl CommandSpec {
    /// A spec for `program args…` in the current directory.
    pub fn new<I, S>(program: impl Into<OsString>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            cwd: None,
            env: Vec::new(),
            stdin: None,
        }
    }
}

/// How to run it.
#[derive(Debug, Clone)]
pub struct SpawnConfig {
    /// Time between SIGTERM and SIGKILL when the group is terminated.
    pub kill_grace: Duration,
    /// Capacity of the output channel, in chunks; a full channel pauses the readers (and so,
    /// through the pipe, the child).
    pub output_capacity: usize,
    /// The OS confinement.
    pub confinement: Confinement,
    /// The environment the child starts from: the spawner's own, or exactly a computed one
    /// (the command environment policy's, [`command_environment`]). The spec's variables and
    /// the sandbox's own go on top of it.
    pub environment: Environment,
    /// Whether the child gets SIGKILL when the thread that spawns it ends (`die_with_parent`):
    /// for a child owned by a thread of its own (an interactive session), so it dies with
    /// codecoder even on `kill -9`. Only where no reaper runs (`reaper.rs`): the reaper ends
    /// every spawned group with codecoder, and the signal would race it. Default false.
    pub die_with_thread: bool,
}

impl SpawnConfig {
    /// Two seconds of grace, 64 chunks of output buffered, unconfined, the spawner's
    /// environment.
    pub fn standard() -> Self {
        Self {
            kill_grace: Duration::from_secs(2),
            output_capacity: 64,
            confinement: Confinement::Unconfined,
            environment: Environment::Inherited,
            die_with_thread: false,
        }
    }
}

/// How long a stopped wait keeps delivering output after the group is gone (only a process
/// that left the group and holds a pipe makes it wait that long).
const DRAIN_LIMIT: Duration = Duration::from_millis(100);

/// How long termination waits for a stop signal to take effect on a group before it reads the
/// group's tree anyway (a member in uninterruptible sleep stops only when it wakes).
const FREEZE_LIMIT: Duration = Duration::from_millis(100);

/// Which stream a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Bytes read from one of the child's streams (at most 8 KiB, not split on characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputChunk {
    /// Where it came from.
    pub stream: Stream,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// How `Child::wait` ended. In every case but `Exited` the group was terminated, and the output
/// read until it was gone was delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The process exited by itself; all its output was delivered.
    Exited(ExitStatus),
    /// [`Wait::cancel`] fired.
    Cancelled,
    /// [`Wait::deadline`] passed.
    TimedOut,
    /// [`Wait::kill`] fired.
    Killed,
}

/// A running process group. Dropping it terminates the group and joins its threads.
#[derive(Debug)]
pub struct Child {
    pid: u32,
    kill_grace: Duration,
    // Receivers come before the thread handles: `Drop` replaces them first so that a reader
    // blocked on a full channel sees the disconnect and ends.
    output: Receiver<OutputChunk>,
    exit: Receiver<ExitStatus>,
    status: Option<ExitStatus>,
    terminated: bool,
    /// Process groups of the leader's descendants outside its own group, found when the group
    /// is terminated: bubblewrap's `--new-session` puts the sandboxed tree in a session of its
    /// own, which a signal to the leader's group does not reach.
    other_groups: Vec<u32>,
    /// The group's members and their descendants found when the group is terminated, each
    /// signalled by itself too: one may leave its group (`setsid`) after the signal to the
    /// group, or ignore it.
    tracked: Vec<tree::Tracked>,
    readers: Vec<JoinOnDrop<()>>,
    waiter: Option<JoinOnDrop<()>>,
    /// The protected names absent when a confined command started, with its policy: swept once
    /// the command's tree is gone (`sweep.rs`).
    sweep: Option<(sweep::Sweep, SandboxPolicy)>,
}

/// The command that runs `program args` (the spec's, or the sandbox's wrapper of them) for
/// `spec` under `config`: its directory and environment. A computed environment replaces the
/// inherited one whole (under a sandbox it passes through the wrapper untouched: bubblewrap and
/// the stage hand their environment to the command); `extra` comes next, then the spec's
/// variables, and the sandbox's own last, so a spec cannot pretend to be unconfined. Stdio, the
/// process group and what runs before exec are the caller's.
pub(crate) fn command_for(
    program: &OsString,
    args: &[OsString],
    spec: &CommandSpec,
    config: &SpawnConfig,
    extra: &[(&str, String)],
    sandbox_env: &[(OsString, OsString)],
) -> std::process::Command {
    #[allow(clippy::disallowed_methods)] // This crate is the one place allowed to spawn processes.
    let mut command = std::process::Command::new(program);
    command.args(args);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    if let Environment::Exactly(vars) = &config.environment {
        command.env_clear();
        command.envs(vars.iter().map(|(key, value)| (key, value)));
    }
    for (key, value) in extra {
        command.env(key, value);
    }
    for (key, value) in spec.env.iter().chain(sandbox_env) {
        // The sandbox's ssh command for a proxied network yields to one the user set.
        if key == codecoder_protocol::env::GIT_SSH_COMMAND && names_ssh_command(&command, config) {
            continue;
        }
        command.env(key, value);
    }
    command
}

/// True when `command`'s environment (set on it, or inherited when not computed) already names
/// git's ssh command (`GIT_SSH_COMMAND` or `GIT_SSH`).
fn names_ssh_command(command: &std::process::Command, config: &SpawnConfig) -> bool {
    use codecoder_protocol::env::{GIT_SSH, GIT_SSH_COMMAND};
    [GIT_SSH_COMMAND, GIT_SSH].iter().any(|name| {
        let set = command.get_envs().find(|(key, _)| *key == std::ffi::OsStr::new(name));
        match set {
            Some((_, value)) => value.is_some(),
            None => {
                !matches!(config.environment, Environment::Exactly(_))
                    && std::env::var_os(name).is_some()
            }
        }
    })
}

impl Child {
    /// The handle of group `pid`, just started, with the senders its waiter and readers feed.
    pub(crate) fn started(
        pid: u32,
        config: &SpawnConfig,
    ) -> (Self, Sender<ExitStatus>, Sender<OutputChunk>) {
        let (exit_tx, exit) = crossbeam_channel::bounded(1);
        let (output_tx, output) = crossbeam_channel::bounded(config.output_capacity.max(1));
        let child = Self {
            pid,
            kill_grace: config.kill_grace,
            output,
            exit,
            status: None,
            terminated: false,
            other_groups: Vec::new(),
            tracked: Vec::new(),
            readers: Vec::new(),
            waiter: None,
            sweep: None,
        };
        (child, exit_tx, output_tx)
    }

    /// Notes the protected names absent now under `confinement`'s policy, to be swept when the
    /// command has ended; taken before the command starts, so that nothing it creates counts as
    /// there before it.
    pub(crate) fn sweep_before(confinement: &Confinement) -> Option<(sweep::Sweep, SandboxPolicy)> {
        match confinement {
            Confinement::Sandboxed(sandbox) => {
                let policy = sandbox.policy();
                sweep::Sweep::before(policy).map(|sweep| (sweep, policy.clone()))
            }
            Confinement::Unconfined => None,
        }
    }

    /// Once the command's tree is gone: removes what it created at the protected names that
    /// were absent, and hands the report to `on_output` as stderr. Runs at most once.
    fn sweep_after(&mut self, on_output: &mut dyn FnMut(&OutputChunk)) {
        let Some((sweep, policy)) = self.sweep.take() else { return };
        let swept = sweep.after(&policy);
        if !swept.is_empty() {
            let bytes = sweep::report(&swept).into_bytes();
            on_output(&OutputChunk { stream: Stream::Stderr, bytes });
        }
    }
}

/// Starts `spec` in a new process group.
pub fn spawn(spec: &CommandSpec, config: &SpawnConfig) -> Result<Child> {
    let sweep = Child::sweep_before(&config.confinement);
    let (program, args, sandbox_env, inherited) = match &config.confinement {
        Confinement::Unconfined => (spec.program.clone(), spec.args.clone(), Vec::new(), None),
        Confinement::Sandboxed(sandbox) => {
            let wrapped = sandbox.wrap(&spec.program, &spec.args, spec.cwd.as_deref());
            (wrapped.program, wrapped.args, wrapped.env, wrapped.keep)
        }
    };
    let mut command = command_for(&program, &args, spec, config, &[], &sandbox_env);
    let stdin = if spec.stdin.is_some() { Stdio::piped() } else { Stdio::null() };
    command.stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    // The reaper ends the group with codecoder; only without one does the child die with its
    // thread (a parent-death signal would race the reaper, see `reaper.rs`).
    let supervised = reaper::watch(&mut command);
    if config.die_with_thread && !supervised {
        die_with_parent(&mut command);
    }
    let spawned = command.spawn();
    // The child has its copy of the descriptor (or failed to start); ours goes.
    drop(inherited);
    let mut child = spawned.map_err(|source| Error::Spawn {
        program: spec.program.to_string_lossy().into_owned(),
        source,
    })?;
    let pid = child.id();
    live_groups::insert(pid);
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let stdin = child.stdin.take().zip(spec.stdin.clone());

    // From here on the group exists: build a `Child` at once so that any early return below
    // still terminates it on drop.
    let (mut handle, exit_tx, output_tx) = Child::started(pid, config);
    handle.sweep = sweep;
    let waiter = spawn_named(format!("sandbox-wait-{pid}"), move || {
        if let Ok(status) = child.wait() {
            let _ = exit_tx.send(status);
        }
    });
    match waiter {
        Ok(waiter) => handle.waiter = Some(waiter),
        Err(err) => {
            // Without a waiter nobody reaps the child; kill it and give up.
            handle.signal(Signal::SIGKILL);
            return Err(Error::Thread(err));
        }
    }
    if let Some((mut pipe, bytes)) = stdin {
        // A child that exits without reading gives EPIPE here; that is its business.
        let writer = spawn_named(format!("sandbox-stdin-{pid}"), move || {
            let _ = std::io::Write::write_all(&mut pipe, &bytes);
        })
        .map_err(Error::Thread)?;
        handle.readers.push(writer);
    }
    if let Some(stdout) = stdout {
        handle.readers.push(spawn_reader(pid, Stream::Stdout, stdout, output_tx.clone())?);
    }
    if let Some(stderr) = stderr {
        handle.readers.push(spawn_reader(pid, Stream::Stderr, stderr, output_tx)?);
    }
    Ok(handle)
}

/// Makes this process's environment and memory unreadable to the other processes of its user
/// (`PR_SET_DUMPABLE` 0, as codex's process hardening does): a command run without a sandbox
/// cannot read the agent's API keys from `/proc/<agent pid>/environ` or attach to it. A child
/// is dumpable again once it execs. It also means no core dumps. A no-op off Linux.
pub fn protect_process() -> io::Result<()> {
    #[cfg(target_os = "linux")]
    nix::sys::prctl::set_dumpable(false).map_err(io::Error::from)?;
    Ok(())
}

fn spawn_reader(
    pid: u32,
    stream: Stream,
    mut pipe: impl Read + Send + 'static,
    tx: Sender<OutputChunk>,
) -> Result<JoinOnDrop<()>> {
    let name = match stream {
        Stream::Stdout => format!("sandbox-out-{pid}"),
        Stream::Stderr => format!("sandbox-err-{pid}"),
    };
    spawn_named(name, move || {
        let mut buf = vec![0u8; 8192];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if tx.send(OutputChunk { stream, bytes: buf[..n].to_vec() }).is_err() {
                        break;
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    })
    .map_err(Error::Thread)
}

impl Child {
    /// The child's pid, which is also its process-group id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Waits for the process to exit, handing each output chunk to `on_output` as it comes.
    /// When one of `wait`'s signals fires first (its cancel or kill receiver yields a message or
    /// disconnects, or its deadline passes), the group is terminated, the output read until it
    /// is gone is delivered, and the outcome says which signal it was (kill before cancel before
    /// the deadline when several fired). After the leader exits, what is left of its group is
    /// terminated too (no background process outlives its command) and the rest of the output
    /// is drained.
    ///
    /// # Errors
    /// When the exit status is lost (the waiter thread died).
    pub fn wait<C, K>(
        &mut self,
        wait: &Wait<'_, C, K>,
        on_output: &mut dyn FnMut(&OutputChunk),
    ) -> Result<Outcome> {
        let (no_cancel, no_kill) = (never(), never());
        let cancel = wait.cancel.unwrap_or(&no_cancel);
        let kill = wait.kill.unwrap_or(&no_kill);
        let deadline = wait.deadline.map_or_else(never, crossbeam_channel::at);
        let mut output = self.output.clone();
        let mut output_open = true;
        let mut exit = self.exit.clone();
        loop {
            if self.status.is_some() && !output_open {
                break;
            }
            let stop = select! {
                recv(output) -> chunk => {
                    match chunk {
                        Ok(chunk) => on_output(&chunk),
                        Err(_) => {
                            output = never();
                            output_open = false;
                        }
                    }
                    None
                },
                recv(exit) -> status => {
                    exit = never();
                    match status {
                        Ok(status) => self.status = Some(status),
                        Err(_) => return Err(Error::Lost { pid: self.pid }),
                    }
                    // The leader is gone; stragglers holding the pipes would keep the output
                    // open forever.
                    self.terminate();
                    None
                },
                recv(kill) -> _ => Some(Outcome::Killed),
                recv(cancel) -> _ => Some(Outcome::Cancelled),
                recv(deadline) -> _ => Some(Outcome::TimedOut),
            };
            if let Some(stop) = stop {
                let stop = wait.stopped_by(stop);
                self.terminate();
                if output_open {
                    self.drain(on_output);
                }
                self.sweep_after(on_output);
                return Ok(stop);
            }
        }
        self.sweep_after(on_output);
        match self.status {
            Some(status) => Ok(Outcome::Exited(status)),
            None => Err(Error::Lost { pid: self.pid }),
        }
    }

    /// Hands over the output still buffered or in the pipes once the group is terminated: the
    /// readers end when the last writer is gone, which is at once unless a process that left
    /// the group holds a pipe; that one is not waited for longer than `DRAIN_LIMIT`.
    fn drain(&self, on_output: &mut dyn FnMut(&OutputChunk)) {
        let deadline = Instant::now() + DRAIN_LIMIT;
        while let Ok(chunk) = self.output.recv_deadline(deadline) {
            on_output(&chunk);
        }
    }

    /// Terminates the group: SIGTERM, then SIGKILL once the grace period is over if any member
    /// is left. Returns when the leader has been reaped and the group is empty (or after the
    /// grace period plus one second when a member is stuck in the kernel). Idempotent.
    ///
    /// On Linux the tree is frozen first (SIGSTOP, which a pid namespace's init cannot ignore
    /// from outside) and read from `/proc`, so nothing in it can fork or leave the group between
    /// the read and the signal; the descendants in other groups, and each descendant itself,
    /// are signalled too. A cancel that comes while bubblewrap is still setting up needs this:
    /// its sandboxed child, the pid namespace's init, ignores SIGTERM and may not yet have asked
    /// to die with its parent, nor made its own session. Once the leader is reaped, such an init
    /// among its children is killed, as its parent-death signal would have done.
    pub fn terminate(&mut self) {
        if self.terminated {
            return;
        }
        self.terminated = true;
        if cfg!(target_os = "linux") {
            self.freeze();
        }
        if !self.alive() {
            live_groups::remove(self.pid);
            return;
        }
        self.signal(Signal::SIGTERM);
        self.signal(Signal::SIGCONT);
        let deadline = Instant::now() + self.kill_grace;
        if self.wait_gone(deadline) {
            live_groups::remove(self.pid);
            return;
        }
        // What the survivors started since the freeze, out of the group, goes too.
        if cfg!(target_os = "linux") {
            self.track_more();
        }
        self.signal(Signal::SIGKILL);
        if self.wait_gone(Instant::now() + Duration::from_secs(1)) {
            live_groups::remove(self.pid);
        }
    }

    /// Stops the leader's group, reads the group's tree (its members and their descendants),
    /// stops the other groups found in it and reads the tree again, until no new group turns up (bounded: a tree that keeps making
    /// sessions faster than it is read is cut off at the last read).
    fn freeze(&mut self) {
        // An empty group (a command that ended cleanly, its leader reaped) has no tree left to
        // read: the common case, answered without reading `/proc`.
        if killpg(self.group(), Signal::SIGSTOP) == Err(Errno::ESRCH) {
            return;
        }
        tree::wait_stopped(self.pid, FREEZE_LIMIT);
        for _ in 0..8 {
            self.tracked = tree::group_tree(self.pid);
            let mut new_groups = Vec::new();
            for process in &self.tracked {
                let group = process.pgrp;
                if group != self.pid
                    && group != 0
                    && !self.other_groups.contains(&group)
                    && !new_groups.contains(&group)
                {
                    new_groups.push(group);
                }
            }
            if new_groups.is_empty() {
                return;
            }
            for &group in &new_groups {
                if let Ok(pgid) = i32::try_from(group) {
                    let _ = killpg(Pid::from_raw(pgid), Signal::SIGSTOP);
                    tree::wait_stopped(group, FREEZE_LIMIT);
                }
            }
            self.other_groups.extend(new_groups);
        }
    }

    /// Adds what the group and the tracked processes hold now and was not tracked yet, and its
    /// groups.
    fn track_more(&mut self) {
        let roots: Vec<u32> = self.tracked.iter().map(|p| p.pid).collect();
        for process in tree::group_tree(self.pid).into_iter().chain(tree::tree_of(&roots)) {
            if !self.tracked.iter().any(|known| known.pid == process.pid) {
                if process.pgrp != self.pid && !self.other_groups.contains(&process.pgrp) {
                    self.other_groups.push(process.pgrp);
                }
                self.tracked.push(process);
            }
        }
    }

    fn group(&self) -> Pid {
        Pid::from_raw(i32::try_from(self.pid).unwrap_or(i32::MAX))
    }

    fn signal(&self, signal: Signal) {
        for &group in std::iter::once(&self.pid).chain(&self.other_groups) {
            let Ok(pgid) = i32::try_from(group) else { continue };
            // ESRCH (group already empty) is the expected race; nothing else can be done about
            // other errors here.
            let _ = killpg(Pid::from_raw(pgid), signal);
        }
        for process in &self.tracked {
            process.signal(signal);
        }
    }

    /// Whether anything of the command is left: a live member of its groups, or a tracked
    /// descendant.
    fn alive(&self) -> bool {
        std::iter::once(&self.pid)
            .chain(&self.other_groups)
            .any(|&group| process_group_alive(group))
            || self.tracked.iter().any(tree::Tracked::alive)
    }
}

/// Whether process group `group` has a live member.
fn process_group_alive(group: u32) -> bool {
    let Ok(pgid) = i32::try_from(group) else { return false };
    // Signal 0 checks existence only. A reaped leader with no member left gives ESRCH: the
    // common, cheap answer.
    if matches!(killpg(Pid::from_raw(pgid), None), Err(Errno::ESRCH)) {
        return false;
    }
    // Otherwise members may be zombies waiting for init to reap them (some container inits
    // reap late); they are dead, so only live members count.
    if cfg!(target_os = "linux") {
        return !live_group_members(group).is_empty();
    }
    true
}

impl Child {
    /// Waits for the leader's exit status, then polls until nothing of the command is left.
    /// Returns false at the deadline.
    fn wait_gone(&mut self, deadline: Instant) -> bool {
        if self.status.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.exit.recv_timeout(left) {
                Ok(status) => self.status = Some(status),
                Err(_) => return false,
            }
        }
        // The leader is reaped: a pid namespace's init it started dies now, as its parent-death
        // signal says (it may not have set it yet when the leader died).
        for process in &self.tracked {
            if process.ppid == self.pid && process.namespace_init() {
                process.signal(Signal::SIGKILL);
            }
        }
        // Members other than the leader (reparented to init) are polled: there is no channel
        // for their exit. The back-off keeps this cheap; it runs only during termination.
        let mut pause = Duration::from_micros(200);
        loop {
            if !self.alive() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.terminate();
        // Nobody reads the output any more: the report has no reader, the removal still counts.
        self.sweep_after(&mut |_| {});
        // Disconnect the output so readers blocked on a full channel end, then let the fields'
        // own drops join the threads.
        self.output = never();
        self.exit = never();
    }
}

/// Starts `program` with `args` detached from this process, for a program the person keeps
/// using after codecoder exits (a browser opening a URL): stdin, stdout and stderr are
/// `/dev/null`, it runs in a process group of its own, and it is neither tracked, killed nor
/// waited for. A `/bin/sh` in between starts it in the background and exits at once (that shell
/// is reaped here), so the program is adopted by init and leaves no zombie behind.
///
/// # Errors
/// When the shell cannot be started or fails.
pub fn spawn_detached(program: &std::ffi::OsStr, args: &[std::ffi::OsString]) -> Result<()> {
    #[allow(clippy::disallowed_methods)] // This crate is the one place allowed to spawn processes.
    let mut command = std::process::Command::new("/bin/sh");
    command
        .arg("-c")
        .arg("\"$@\" </dev/null >/dev/null 2>&1 &")
        .arg("sh")
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let status = command
        .status()
        .map_err(|source| Error::Spawn { program: "/bin/sh".to_owned(), source })?;
    if status.success() {
        return Ok(());
    }
    Err(Error::Spawn {
        program: program.to_string_lossy().into_owned(),
        source: std::io::Error::other(format!("the shell starting it failed ({status})")),
    })
}

/// SIGKILLs every process group this process started that may still be alive. For a last-resort
/// exit (a second Ctrl-C) that will not run the `Child` drop guards.
pub fn kill_all() {
    for pgid in live_groups::snapshot() {
        if let Ok(pgid) = i32::try_from(pgid) {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }
}

/// The process groups started and not yet seen gone. A global because a last-resort exit must
/// reach every child, whichever thread started it; the lock is held only to insert, remove or
/// copy the set.
mod live_groups {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};

    fn set() -> &'static Mutex<HashSet<u32>> {
        static SET: OnceLock<Mutex<HashSet<u32>>> = OnceLock::new();
        SET.get_or_init(|| Mutex::new(HashSet::new()))
    }

    pub(super) fn insert(pgid: u32) {
        if let Ok(mut set) = set().lock() {
            set.insert(pgid);
        }
    }

    pub(super) fn remove(pgid: u32) {
        if let Ok(mut set) = set().lock() {
            set.remove(&pgid);
        }
        super::reaper::forget(pgid);
    }

    pub(super) fn snapshot() -> Vec<u32> {
        set().lock().map(|set| set.iter().copied().collect()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;

/// Where there is no `/proc` to read, no supervisor ends the processes of a killed codecoder
/// (`reaper.rs`, Linux): spawns are as they were.
#[cfg(not(target_os = "linux"))]
mod reaper {
    pub(crate) fn watch(_command: &mut std::process::Command) -> bool {
        false
    }
    pub(crate) fn supervise() -> bool {
        false
    }
    pub(crate) fn announce_on_exec(_command: &mut std::process::Command) {}
    pub(crate) fn forget(_pgid: u32) {}
}

/// Arranges for the process `command` starts to be killed (SIGKILL) when the thread that
/// spawns it ends (Linux's `PR_SET_PDEATHSIG`; nothing elsewhere). For long-lived helper
/// processes spawned outside the sandbox, such as MCP servers, from a thread that lives as long
/// as they should.
#[allow(unsafe_code)]
pub fn die_with_parent(command: &mut std::process::Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: the closure runs in the forked child before exec and only makes one
        // async-signal-safe system call (prctl), allocating nothing.
        unsafe {
            command.pre_exec(|| {
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                    .map_err(std::io::Error::from)
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}
