//! The built-in tools (seed L3, issue 5): `read_file`, `write_file`, `edit`, `apply_patch`,
//! `list_dir`, `glob`,
//! `grep`, `run_command` with background jobs (`job_output`, `job_kill`), the interactive
//! sessions of `exec_command` and `write_stdin` (`unified_exec`), `update_plan`, `ask_user` and
//! `web_fetch`; and `exit_plan_mode` (`exit_plan_mode_tool`), registered by
//! the product beside them and offered only in plan mode. The product calls `builtin_tools(config)` and registers the result
//! in the kernel's `ToolRegistry`.
//!
//! Every tool is a `Builtin` (this crate's own trait, run against a `CallEnv`) wrapped in an
//! adapter that implements the kernel's `Tool`. The split exists so that tests and the argument
//! fuzzer can run a tool without a kernel; the kernel path and the test path run the same code.
//!
//! Edit tools get `ToolsConfig::after_edit` run after each successful change (`after_edit`):
//! formatters and a language server's diagnostics join their result.
//!
//! Invariants:
//! - No input makes a tool panic: arguments are checked against the tool's schema, then parsed
//!   into a typed struct; every failure is a `ToolError` or an `is_error` output that tells the
//!   model what to change.
//! - Relative paths resolve against `ToolsConfig::cwd`; mutating tools write only below a
//!   writable root, checked after symlinks are resolved (`path`).
//! - Processes are spawned only through `codecoder_sandbox`; background jobs belong to the tool
//!   set and are killed (whole process group) when the last tool of the set is dropped.

mod after_edit;
mod ask;
mod edit;
mod env;
mod files;
mod jobs;
mod network;
mod partial_json;
mod patch;
mod path;
mod plan;
mod plan_mode;
mod read;
mod search;
mod shell;
mod snapshot;
mod text;
mod unified_exec;
mod web;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use codecoder_kernel::{InputReader, Tool, ToolContext, ToolKind, ToolOutput};
use codecoder_protocol::{CallKind, CallView, ToolError};
use serde_json::Value;

pub use crate::after_edit::AfterEdit;
pub use crate::env::{CallEnv, StandaloneEnv};
pub use crate::files::FileAccess;
pub use crate::network::ManagedNetwork;
pub use crate::plan_mode::{
    EXIT_PLAN_MODE, PLAN_APPROVE, PLAN_EDITED_PREFIX, PLAN_KEEP_PLANNING, PlanReview, plan_review,
    plan_steps,
};
pub use crate::snapshot::{
    NameFilter, SNAPSHOT_TIMEOUT, ShellSnapshot, SnapshotConfig, SnapshotStatus,
};
use crate::unified_exec::SessionTable;
pub use crate::unified_exec::{SessionInfo, live_sessions, stop_session};

/// What the built-in tools need to know. No `Default`: build it with `ToolsConfig::standard`
/// and change fields.
#[derive(Debug, Clone)]
pub struct ToolsConfig {
    /// The session's working directory: relative paths resolve against it, commands run in it.
    pub cwd: PathBuf,
    /// Mutating tools (`write_file`, `edit`) refuse paths outside these directories (after
    /// symlinks are resolved). Pass `/` to allow writes anywhere.
    pub writable_roots: Vec<PathBuf>,
    /// The writers' guard (`codecoder_policy::Guard` over `writable_roots` plus these paths,
    /// protected wherever they are: codecoder's home): a write whose real path is protected
    /// only through a symlink is refused. `None` turns the guard off (bypass,
    /// danger-full-access). Default: on, with no extra paths.
    pub protected_paths: Option<Vec<PathBuf>>,
    /// The shell `run_command` runs commands with: `SHELL SHELL_ARGS… COMMAND`. Default `bash`.
    pub shell: PathBuf,
    /// The arguments before the command. Default `["-lc"]` (a login shell, so the person's
    /// PATH and tool managers are set up); tests use `["-c"]` to stay independent of the
    /// machine's profile files.
    pub shell_args: Vec<String>,
    /// The session's shell snapshot: while it is ready, commands run as `SHELL -c '. SNAPSHOT
    /// <newline> COMMAND'` instead of `SHELL SHELL_ARGS… COMMAND`. Default `None`.
    pub snapshot: Option<Arc<ShellSnapshot>>,
    /// `run_command`'s timeout when the call gives none. Default 2 minutes.
    pub default_timeout: Duration,
    /// The largest `timeout_ms` a call may ask for. Default 10 minutes.
    pub max_timeout: Duration,
    /// Between SIGTERM and SIGKILL when a process group is terminated. Default 2 s.
    pub kill_grace: Duration,
    /// Bytes of command output the model sees (head and tail halves). Default 32 KiB.
    pub output_limit: usize,
    /// Where `run_command` saves the full output of a command whose output went over
    /// `output_limit` (the result names the file). `None` (the default): not saved. The
    /// product points it at a per-session directory it cleans up.
    pub spill_dir: Option<PathBuf>,
    /// When set, a spill file is moved into this content-addressed blob store once the command
    /// ends, and the note names its SHA-256 (the session log's blobs live there too).
    pub blobs: Option<codecoder_session::BlobStore>,
    /// The most bytes saved to one spill file. Default 256 MiB.
    pub spill_limit: u64,
    /// A ceiling on background jobs and `exec_command` sessions together running at once, over
    /// `max_sessions` (the bound a person configures). Default 16.
    pub max_jobs: usize,
    /// `exec_command` sessions and background jobs together running at once (they are entries
    /// of one table, with one numbering). Default 8.
    pub max_sessions: usize,
    /// An `exec_command` session no call touched for this long is ended at the next session
    /// or job call; background jobs are exempt. Default 30 minutes.
    pub session_idle_timeout: Duration,
    /// `read_file`'s default line count. Default 2,000.
    pub read_line_limit: usize,
    /// `read_file`'s output cap in bytes. Default 256 KiB.
    pub read_byte_limit: usize,
    /// Images larger than this are described, not returned. Default 5 MiB.
    pub image_limit: u64,
    /// `grep` and `glob` results shown when the call gives no `head_limit`. Default 200.
    pub search_limit: usize,
    /// `web_fetch`'s default download cap. Default 1 MiB; a call may raise it to 10 MiB.
    pub web_max_bytes: usize,
    /// `web_fetch`'s whole-request timeout. Default 30 s.
    pub web_timeout: Duration,
    /// The OS sandbox `run_command` and background jobs run in. Default `Unconfined`.
    pub confinement: codecoder_sandbox::Confinement,
    /// The environment `run_command` and background jobs start from (the call's `env` goes on
    /// top). Default `Inherited`; the product passes the command environment policy's result.
    pub environment: codecoder_sandbox::Environment,
    /// What happens when a sandboxed command fails in a way that looks like the sandbox's
    /// doing. Default `Never` (the failure goes back to the model with the reason). Shared: a
    /// change of approval mode mid-session reaches the tools already registered.
    pub escalation: EscalationSetting,
    /// Where the file tools read and write text when not the disk (an ACP client's buffers).
    /// Default `None`: the local filesystem.
    pub file_access: Option<Arc<dyn FileAccess>>,
    /// Run after each successful `write_file`, `edit` and `apply_patch` on the paths they
    /// changed; its text joins the result (formatters, diagnostics). Default `None`.
    pub after_edit: Option<Arc<dyn AfterEdit>>,
    /// The session's managed network: a sandboxed command whose policy has the network off
    /// reaches it through this proxy, host by host (`network.rs`). Default `None`: the network
    /// stays off.
    pub network: Option<Arc<ManagedNetwork>>,
    /// The endpoints of one command's managed network, held by the copy of the configuration
    /// an `exec_command` session's or a background job's owner thread keeps, so that they live
    /// as long as its process. `None` in the session's configuration.
    pub(crate) network_lease: Option<Arc<network::CommandNetwork>>,
}

/// A shared, changeable `Escalation`.
#[derive(Debug, Clone)]
pub struct EscalationSetting(Arc<std::sync::atomic::AtomicBool>);

impl EscalationSetting {
    /// A setting holding `escalation`.
    pub fn new(escalation: Escalation) -> Self {
        Self(Arc::new(std::sync::atomic::AtomicBool::new(escalation == Escalation::Ask)))
    }

    /// The current answer.
    pub fn get(&self) -> Escalation {
        if self.0.load(std::sync::atomic::Ordering::Relaxed) {
            Escalation::Ask
        } else {
            Escalation::Never
        }
    }

    /// Changes it for every holder.
    pub fn set(&self, escalation: Escalation) {
        self.0.store(escalation == Escalation::Ask, std::sync::atomic::Ordering::Relaxed);
    }
}

/// `run_command`'s answer to a sandbox denial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escalation {
    /// Ask the person once whether to run it again without the sandbox (on-request,
    /// untrusted).
    Ask,
    /// Never retry; tell the model why it failed (never).
    Never,
}

impl ToolsConfig {
    /// The defaults listed on each field.
    pub fn standard(cwd: impl Into<PathBuf>, writable_roots: Vec<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            writable_roots,
            protected_paths: Some(Vec::new()),
            shell: PathBuf::from("bash"),
            shell_args: vec!["-lc".to_owned()],
            snapshot: None,
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
            kill_grace: Duration::from_secs(2),
            output_limit: 32 * 1024,
            spill_dir: None,
            blobs: None,
            spill_limit: 256 * 1024 * 1024,
            max_jobs: 16,
            max_sessions: 8,
            session_idle_timeout: Duration::from_secs(30 * 60),
            read_line_limit: 2000,
            read_byte_limit: 256 * 1024,
            image_limit: 5 * 1024 * 1024,
            search_limit: 200,
            web_max_bytes: 1024 * 1024,
            web_timeout: Duration::from_secs(30),
            confinement: codecoder_sandbox::Confinement::Unconfined,
            environment: codecoder_sandbox::Environment::Inherited,
            escalation: EscalationSetting::new(Escalation::Never),
            file_access: None,
            after_edit: None,
            network: None,
            network_lease: None,
        }
    }
}

/// The built-in tools, in the order the model sees them. The session table (`exec_command`'s
/// sessions and `run_command`'s background jobs) is shared by the tools of the set; its
/// processes die when the last of them is dropped.
pub fn builtin_tools(config: ToolsConfig) -> Vec<Arc<dyn Tool>> {
    let (after_edit, cwd) = (config.after_edit.clone(), config.cwd.clone());
    builtins(config)
        .into_iter()
        .map(|builtin| after_edit::wrap(builtin, after_edit.as_ref(), &cwd))
        .map(|builtin| Arc::new(Adapter(builtin)) as Arc<dyn Tool>)
        .collect()
}

/// `exit_plan_mode`, offered while `permission` is in plan mode: the model presents its plan
/// and the person's approval leaves plan mode (see `plan_mode`).
pub fn exit_plan_mode_tool(permission: codecoder_policy::PermissionSwitch) -> Arc<dyn Tool> {
    Arc::new(Adapter(Arc::new(plan_mode::ExitPlanMode { permission })))
}

/// `exit_plan_mode` as a `Builtin` (tests).
pub fn exit_plan_mode_builtin(permission: codecoder_policy::PermissionSwitch) -> Arc<dyn Builtin> {
    Arc::new(plan_mode::ExitPlanMode { permission })
}

/// The same tools as `Builtin`s, for running them without a kernel (tests, fuzzing).
pub fn builtins(config: ToolsConfig) -> Vec<Arc<dyn Builtin>> {
    let sessions = SessionTable::new(config.session_idle_timeout);
    let shared = Arc::new(Shared { config, sessions });
    vec![
        Arc::new(read::ReadFile { shared: Arc::clone(&shared), index: read::LineIndex::default() }),
        Arc::new(edit::WriteFile(Arc::clone(&shared))),
        Arc::new(edit::Edit(Arc::clone(&shared))),
        Arc::new(patch::ApplyPatch(Arc::clone(&shared))),
        Arc::new(search::ListDir(Arc::clone(&shared))),
        Arc::new(search::Glob(Arc::clone(&shared))),
        Arc::new(search::Grep(Arc::clone(&shared))),
        Arc::new(shell::RunCommand(Arc::clone(&shared))),
        Arc::new(jobs::JobOutput(Arc::clone(&shared))),
        Arc::new(jobs::JobKill(Arc::clone(&shared))),
        Arc::new(unified_exec::ExecCommand(Arc::clone(&shared))),
        Arc::new(unified_exec::WriteStdin(Arc::clone(&shared))),
        Arc::new(plan::UpdatePlan),
        Arc::new(ask::AskUser),
        Arc::new(web::WebFetch(shared)),
    ]
}

/// State shared by the tools of one set (one session).
pub(crate) struct Shared {
    pub(crate) config: ToolsConfig,
    pub(crate) sessions: Arc<SessionTable>,
}

/// A built-in tool: the kernel's `Tool` minus the `ToolContext`, so it can run without a kernel.
pub trait Builtin: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &'static str;
    /// What it does, for the model.
    fn description(&self) -> &'static str;
    /// The JSON Schema of its arguments.
    fn schema(&self) -> Value;
    /// How much it can change.
    fn kind(&self) -> ToolKind;
    /// The keys a session grant covers.
    fn permission_keys(&self, args: &Value) -> Vec<String> {
        let _ = args;
        vec![self.name().to_owned()]
    }
    /// One line for the person.
    fn summary(&self, args: &Value) -> String;
    /// What a call is, for front-ends and the policy (the kernel's `Tool::view`; `read_only` is
    /// filled in from `kind`).
    fn view(&self, args: &Value) -> CallView;
    /// Whether the model is offered the tool now (default: always).
    fn offered(&self) -> bool {
        true
    }
    /// What the schema cannot say about the arguments (the kernel's `Tool::check`; default:
    /// nothing more to check).
    fn check(&self, args: &Value) -> Result<(), String> {
        let _ = args;
        Ok(())
    }
    /// A reader of the call while the model writes it (the kernel's `Tool::input_reader`;
    /// default: none).
    fn input_reader(&self) -> Option<Box<dyn InputReader>> {
        None
    }
    /// Runs the call (arguments already checked against the schema by `run_checked`).
    fn run(&self, env: &dyn CallEnv, args: Value) -> Result<ToolOutput, ToolError>;
}

/// Checks `args` against the tool's schema and its own check, then runs it: what the kernel does
/// before and at `execute`.
pub fn run_checked(
    tool: &dyn Builtin,
    env: &dyn CallEnv,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    if let Err(message) =
        codecoder_kernel::validate_schema(&tool.schema(), &args).and_then(|()| tool.check(&args))
    {
        return Err(ToolError::InvalidArguments { message });
    }
    tool.run(env, args)
}

/// A built-in's view of a call, read-only as its kind says.
pub fn view_of(tool: &dyn Builtin, args: &Value) -> CallView {
    CallView { read_only: tool.kind() == ToolKind::ReadOnly, ..tool.view(args) }
}

/// The view of a call on one file or directory: titled `{verb} {path}`, the path its detail
/// and its only path.
pub(crate) fn path_view(kind: CallKind, verb: &str, path: &str) -> CallView {
    CallView {
        kind,
        title: format!("{verb} {path}"),
        detail: path.to_owned(),
        paths: if path.is_empty() { Vec::new() } else { vec![path.to_owned()] },
        ..CallView::default()
    }
}

/// `text`'s lines, each prefixed with `mark` and ending in `\n` (a diff's added or removed
/// lines).
pub(crate) fn marked_lines(text: &str, mark: char) -> String {
    text.lines().map(|line| format!("{mark}{line}\n")).collect()
}

struct Adapter(Arc<dyn Builtin>);

impl Tool for Adapter {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn description(&self) -> &str {
        self.0.description()
    }
    fn schema(&self) -> Value {
        self.0.schema()
    }
    fn kind(&self) -> ToolKind {
        self.0.kind()
    }
    fn permission_keys(&self, args: &Value) -> Vec<String> {
        self.0.permission_keys(args)
    }
    fn summary(&self, args: &Value) -> String {
        self.0.summary(args)
    }
    fn view(&self, args: &Value) -> CallView {
        view_of(self.0.as_ref(), args)
    }
    fn offered(&self) -> bool {
        self.0.offered()
    }
    fn check(&self, args: &Value) -> Result<(), String> {
        self.0.check(args)
    }
    fn input_reader(&self) -> Option<Box<dyn InputReader>> {
        self.0.input_reader()
    }
    fn execute(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        run_checked(self.0.as_ref(), ctx, args)
    }
}

/// Parses checked arguments into a tool's argument struct; a mismatch is an error the model
/// can act on.
pub(crate) fn parse_args<T: serde::de::DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args)
        .map_err(|err| ToolError::InvalidArguments { message: err.to_string() })
}

/// A `ToolError::InvalidArguments` with this message.
pub(crate) fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::InvalidArguments { message: message.into() }
}

/// A `ToolError::Failed` with this message.
pub(crate) fn failed(message: impl Into<String>) -> ToolError {
    ToolError::Failed { message: message.into() }
}

/// The string field `name` of `args`, or `""`: for summaries and permission keys, which see
/// unchecked arguments.
pub(crate) fn str_arg<'a>(args: &'a Value, name: &str) -> &'a str {
    args.get(name).and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests;
