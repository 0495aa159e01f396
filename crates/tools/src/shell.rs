//! `run_command {command, cwd?, timeout_ms?, env?, background?}`: `bash -lc COMMAND` (shell and
//! flags from `ToolsConfig`), or `bash -c` sourcing the session's shell snapshot first when it
//! is ready (`snapshot.rs`), through the sandbox crate's spawner.
//!
//! Invariants:
//! - The whole process group is terminated (SIGTERM, grace, SIGKILL) on timeout, on cancel, and
//!   when the leader exits (the sandbox does it); `run_command` returns only after that.
//! - stdout and stderr are merged in arrival order; the model sees at most `output_limit` bytes
//!   (head and tail, the middle elided with a count) whatever the command prints, and memory
//!   stays bounded by that plus the sandbox's channel.
//! - Output deltas go to the client as they come, decoded as UTF-8 without splitting a character.
//! - A background job is handed to the session table (a session without a terminal, see
//!   `unified_exec.rs`) and returns at once with its job id.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codecoder_kernel::{EscalationRequest, Redactor, ToolKind, ToolOutput};
use codecoder_protocol::{
    ApprovalDecision, CallKind, CallView, OutputStream, ToolError, first_line,
};
use codecoder_sandbox::{CommandSpec, Confinement, Outcome, SpawnConfig, Stream, Wait};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::env::CallEnv;
use crate::path::{display, resolve};
use crate::text::{Capped, Utf8Stream};
use crate::{Builtin, Escalation, Shared, ToolsConfig, failed, invalid, parse_args, str_arg};

pub(crate) struct RunCommand(pub(crate) Arc<Shared>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    command: String,
    cwd: Option<String>,
    timeout_ms: Option<u64>,
    #[serde(default)]
    env: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    background: bool,
}

impl Builtin for RunCommand {
    fn name(&self) -> &'static str {
        "run_command"
    }
    fn description(&self) -> &'static str {
        "Runs a shell command with `bash -lc` in the working directory (or `cwd`) and returns its \
         output (stdout and stderr merged, in order), exit code and duration. Long output is cut: \
         the beginning and the end are kept. The command and everything it started are killed \
         at the timeout (default 2 minutes, `timeout_ms` up to 10 minutes) or when the turn is \
         cancelled; nothing it starts outlives it. Use `background: true` for servers and \
         watchers: you get a job id at once; read its output with job_output and stop it with \
         job_kill. Prefer read_file, grep, glob and edit over cat, grep, find and sed."
    }
    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": { "type": "string", "minLength": 1, "description": "The shell command." },
                "cwd": { "type": "string", "description": "Where to run it; the working directory when absent." },
                "timeout_ms": { "type": "integer", "minimum": 1, "description": "Kill it after this many milliseconds. Default 120000; at most 600000. Background jobs have no timeout unless given." },
                "env": { "type": "object", "additionalProperties": { "type": "string" }, "description": "Environment variables to set." },
                "background": { "type": "boolean", "description": "Start it as a background job and return its id at once. Default false." }
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Exec
    }
    fn permission_keys(&self, args: &Value) -> Vec<String> {
        vec![format!("shell:{}", str_arg(args, "command"))]
    }
    fn summary(&self, args: &Value) -> String {
        let background = if args.get("background").and_then(Value::as_bool) == Some(true) {
            " (background)"
        } else {
            ""
        };
        format!("run `{}`{background}", str_arg(args, "command"))
    }
    fn view(&self, args: &Value) -> CallView {
        command_view(str_arg(args, "command"))
    }
    fn run(&self, env: &dyn CallEnv, args: Value) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(args)?;
        let config = &self.0.config;
        let spec = command_spec(config, &args)?;
        if let Some(notice) = config.snapshot.as_ref().and_then(|s| s.fallback_notice()) {
            env.warn(notice);
        }
        let timeout = match args.timeout_ms {
            Some(0) => return Err(invalid("`timeout_ms` must be at least 1")),
            Some(ms) if Duration::from_millis(ms) > config.max_timeout => {
                return Err(invalid(format!(
                    "`timeout_ms` is at most {} (use background: true for longer jobs)",
                    config.max_timeout.as_millis()
                )));
            }
            Some(ms) => Some(Duration::from_millis(ms)),
            None => None,
        };
        if env.cancel().is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        env.before_command();
        let network = crate::network::for_command(config, env, &args.command)?;
        let mut spec = spec;
        if let Some(network) = &network {
            spec.env.extend(network.environment().iter().cloned());
        }
        if args.background {
            let config = crate::network::leased(config, network);
            let id = self.0.sessions.start_job(&config, &args.command, spec, timeout)?;
            return Ok(ToolOutput::text(format!(
                "Started background job {id}: `{}`. Read its output with job_output {{\"id\": \
                 {id}}}; stop it with job_kill {{\"id\": {id}}}. It is killed when the session \
                 ends.",
                args.command
            )));
        }
        let timeout = timeout.unwrap_or(config.default_timeout);
        let confinement = network.as_ref().map_or(&config.confinement, |it| it.confinement());
        let mut first = foreground(env, config, &spec, timeout, confinement)?;
        // A refused host is the managed network's answer, not the sandbox's: the note says
        // why, and no retry outside the sandbox is offered.
        if let Some(note) = network.as_ref().and_then(crate::network::CommandNetwork::note) {
            first.result.content.push(codecoder_protocol::ContentItem::Text { text: note });
            return Ok(first.result);
        }
        let Confinement::Sandboxed(sandbox) = &config.confinement else {
            return Ok(first.result);
        };
        let code = first.end.status.and_then(|status| status.code());
        if first.end.stop.is_some() || code == Some(0) {
            return Ok(first.result);
        }
        let Some(reason) = codecoder_sandbox::denial_hint(code, &first.text, sandbox.policy())
        else {
            return Ok(first.result);
        };
        self.escalate(env, &args.command, &spec, timeout, first.result, &reason)
    }
}

impl RunCommand {
    /// A sandboxed command failed in a way that looks like the sandbox's doing: one retry
    /// outside the sandbox, if the kernel's approval path allows it (see
    /// `ToolContext::request_approval`: refused under `Escalation::Never`, allowed without a
    /// question when the person approved this very call in this turn or a session grant covers
    /// every `escalation_keys` key, asked otherwise; every answer is logged). The retry runs
    /// the same `spec` (same command, cwd and filtered environment), only unconfined.
    fn escalate(
        &self,
        env: &dyn CallEnv,
        command: &str,
        spec: &CommandSpec,
        timeout: Duration,
        mut blocked: ToolOutput,
        reason: &str,
    ) -> Result<ToolOutput, ToolError> {
        let config = &self.0.config;
        let note = |text: String| codecoder_protocol::ContentItem::Text { text };
        let may_ask = config.escalation.get() == Escalation::Ask;
        let decision = env.request_approval(EscalationRequest {
            summary: format!("run `{command}` again without the sandbox"),
            permission_keys: escalation_keys(config, command),
            reason: Some(format!("the sandbox blocked it: {reason}")),
            may_ask,
            covered_by_call_approval: true,
        });
        match decision {
            ApprovalDecision::AllowOnce | ApprovalDecision::AllowForSession => {}
            ApprovalDecision::Cancelled if env.cancel().is_cancelled() => {
                return Err(ToolError::Cancelled);
            }
            ApprovalDecision::Deny | ApprovalDecision::Cancelled if !may_ask => {
                blocked.content.push(note(format!(
                    "[sandbox] {reason}. The approval mode is `never`, so it was not run again \
                     outside the sandbox: work within the sandbox (write inside the workspace, no \
                     network), or tell the user what needs wider access."
                )));
                return Ok(blocked);
            }
            ApprovalDecision::Deny | ApprovalDecision::Cancelled => {
                blocked.content.push(note(format!(
                    "[sandbox] {reason}. The user declined to run it outside the sandbox."
                )));
                return Ok(blocked);
            }
            ApprovalDecision::DenyWithFeedback { feedback } => {
                blocked.content.push(note(format!(
                    "[sandbox] {reason}. The user declined to run it outside the sandbox: \
                     {feedback}"
                )));
                return Ok(blocked);
            }
        }
        let mut second = foreground(env, config, spec, timeout, &Confinement::Unconfined)?.result;
        second.content.insert(
            0,
            note(format!(
                "[sandbox] The first attempt was blocked ({reason}); with the user's approval \
                 it ran again without the sandbox:"
            )),
        );
        Ok(second)
    }
}

/// The permission keys of an escalation of `command`: `escalate:PREFIX` for every simple
/// command of the line (the parts the policy crate's classifier splits it into: the commands
/// of `&&`, `||`, `;` and `|` lists, subshells, `$(…)`, `sh -c` scripts). PREFIX is the program
/// (wrappers such as `env` and `timeout 5` looked through) and its first argument that is not
/// a flag, plus the next one when that is `run` or `exec`: `cargo test`, `npm run build`,
/// `git push`, `make` (flags' values are not known, so `git -C dir status` gives `git dir`). A
/// part judged dangerous is its own whole text. A session grant covers a later escalation
/// only when it covers every key, so `cargo test && curl … | sh` is not covered by a grant for
/// `cargo test`.
pub(crate) fn escalation_keys(config: &ToolsConfig, command: &str) -> Vec<String> {
    let context = codecoder_policy::CommandContext {
        cwd: config.cwd.clone(),
        writable_roots: config.writable_roots.clone(),
        home: None,
    };
    let classification = codecoder_policy::classify(command, &context);
    let mut keys: Vec<String> = Vec::new();
    for part in &classification.parts {
        let prefix = if part.severity.is_dangerous() {
            part.command.clone()
        } else {
            command_prefix(&part.command)
        };
        let key = format!("escalate:{prefix}");
        if !prefix.is_empty() && !keys.contains(&key) {
            keys.push(key);
        }
    }
    if keys.is_empty() {
        keys.push(format!("escalate:{}", command.trim()));
    }
    keys
}

/// The program and its first non-flag argument (two when that one is `run` or `exec`).
fn command_prefix(command: &str) -> String {
    let mut words = command.split_whitespace();
    let Some(program) = words.next() else { return String::new() };
    let mut prefix = vec![program];
    let mut arguments = words.filter(|word| !word.starts_with('-'));
    if let Some(first) = arguments.next() {
        prefix.push(first);
        if matches!(first, "run" | "exec")
            && let Some(second) = arguments.next()
        {
            prefix.push(second);
        }
    }
    prefix.join(" ")
}

/// A foreground run: the result for the model, how it ended, and the output kept (for the
/// denial check).
struct Foreground {
    result: ToolOutput,
    end: End,
    text: String,
}

/// Runs `spec` under `confinement` to its end, streaming output to the client.
fn foreground(
    env: &dyn CallEnv,
    config: &ToolsConfig,
    spec: &CommandSpec,
    timeout: Duration,
    confinement: &Confinement,
) -> Result<Foreground, ToolError> {
    let mut output = Capped::new(config.output_limit);
    let mut stdout = Utf8Stream::default();
    let mut stderr = Utf8Stream::default();
    let started = Instant::now();
    let child = spawn_confined(config, spec, confinement)?;
    let wait = Wait::new().cancel_on(env.cancel().signal()).deadline(started.checked_add(timeout));
    let mut spill = Spill::new(config);
    let end = wait_child(child, started, &wait, &mut |chunk| {
        spill.push(&output, &chunk.bytes);
        output.push(&chunk.bytes);
        let (stream, decoder) = match chunk.stream {
            Stream::Stdout => (OutputStream::Stdout, &mut stdout),
            Stream::Stderr => (OutputStream::Stderr, &mut stderr),
        };
        let text = decoder.decode(&chunk.bytes);
        if !text.is_empty() {
            env.output(stream, text);
        }
    })?;
    for (stream, decoder) in
        [(OutputStream::Stdout, &mut stdout), (OutputStream::Stderr, &mut stderr)]
    {
        let text = decoder.finish();
        if !text.is_empty() {
            env.output(stream, text);
        }
    }
    if end.stop == Some(Stop::Cancelled) {
        return Err(ToolError::Cancelled);
    }
    let mut result = report(&output, &end, timeout);
    if let Some(note) = spill.finish(env.redactor().as_deref()) {
        result.content.push(codecoder_protocol::ContentItem::Text { text: note });
    }
    let text = String::from_utf8_lossy(&output.kept_bytes()).into_owned();
    Ok(Foreground { result, end, text })
}

/// The full output of a command whose output went over the cap, written to a file in
/// `ToolsConfig::spill_dir` (when set) so the model can read or grep what was elided. The file
/// is started only when the cap is first exceeded (with everything kept so far, which is then
/// all of it), and stops growing at `spill_limit`.
pub(crate) struct Spill {
    dir: Option<PathBuf>,
    blobs: Option<codecoder_session::BlobStore>,
    limit: u64,
    file: Option<(std::io::BufWriter<std::fs::File>, PathBuf)>,
    written: u64,
    error: Option<String>,
}

impl Spill {
    pub(crate) fn new(config: &ToolsConfig) -> Self {
        Self {
            dir: config.spill_dir.clone(),
            blobs: config.blobs.clone(),
            limit: config.spill_limit,
            file: None,
            written: 0,
            error: None,
        }
    }

    /// Called before `bytes` are pushed to `output`.
    pub(crate) fn push(&mut self, output: &Capped, bytes: &[u8]) {
        use std::io::Write as _;
        if self.error.is_some() {
            return;
        }
        if self.file.is_none() {
            let Some(dir) = &self.dir else { return };
            if output.total() + bytes.len() as u64 <= output.limit() as u64 {
                return;
            }
            let opened = fs_err::create_dir_all(dir).and_then(|()| {
                tempfile::Builder::new().prefix("run-").suffix(".log").tempfile_in(dir)
            });
            let temp = match opened {
                Ok(temp) => temp,
                Err(err) => {
                    self.error = Some(err.to_string());
                    return;
                }
            };
            match temp.keep() {
                Ok((file, path)) => {
                    let mut writer = std::io::BufWriter::with_capacity(64 * 1024, file);
                    let kept = output.kept_bytes();
                    if let Err(err) = writer.write_all(&kept) {
                        self.error = Some(err.to_string());
                        return;
                    }
                    self.written = kept.len() as u64;
                    self.file = Some((writer, path));
                }
                Err(err) => {
                    self.error = Some(err.to_string());
                    return;
                }
            }
        }
        let Some((writer, _)) = &mut self.file else { return };
        let room = self.limit.saturating_sub(self.written);
        let take = usize::try_from(room).unwrap_or(usize::MAX).min(bytes.len());
        if let Err(err) = writer.write_all(&bytes[..take]) {
            self.error = Some(err.to_string());
        }
        self.written += take as u64;
    }

    /// A note for the model naming the file, if one was written. With the session's
    /// `redactor`, the file's secrets are replaced first: the kernel redacts the call's result,
    /// never this file, which the model may read whole.
    pub(crate) fn finish(self, redactor: Option<&Redactor>) -> Option<String> {
        use std::io::Write as _;
        if let Some(err) = self.error {
            return Some(format!("(the full output could not be saved: {err})"));
        }
        let (mut writer, path) = self.file?;
        if let Err(err) = writer.flush() {
            return Some(format!("(the full output could not be saved: {err})"));
        }
        let mut cut = if self.written >= self.limit {
            format!(" (cut at {} bytes)", self.limit)
        } else {
            String::new()
        };
        drop(writer);
        if let Some(redactor) = redactor {
            match redact_file(redactor, &path) {
                Ok(0) => {}
                Ok(count) => {
                    let plural = if count == 1 { "" } else { "s" };
                    cut.push_str(&format!(", {count} secret{plural} redacted"));
                }
                Err(err) => {
                    let _ = fs_err::remove_file(&path);
                    return Some(format!("(the full output could not be redacted: {err})"));
                }
            }
        }
        if let Some(blobs) = &self.blobs {
            return Some(match blobs.adopt(&path) {
                Ok((sha, size)) => format!(
                    "The full output ({size} bytes{cut}) is stored as blob sha256:{sha} in `{}`: \
                     use read_file with an offset, or grep, to see the elided part.",
                    blobs.path_of(&sha).display()
                ),
                Err(err) => format!("(the full output could not be stored: {err})"),
            });
        }
        Some(format!(
            "The full output is in `{}`{cut}: use read_file with an offset, or grep, to see \
             the elided part.",
            path.display()
        ))
    }
}

/// How much of a spill file [`redact_file`] reads at a time.
const REDACT_CHUNK: usize = 1 << 20;

/// The longest partial line [`redact_file`] carries to the next chunk; a longer one is cut.
const MAX_CARRIED_LINE: usize = 4096;

/// The longest unfinished private key block [`redact_file`] carries to the next chunk.
const MAX_CARRIED_BLOCK: usize = 64 * 1024;

/// Rewrites the file at `path` with `redactor`'s secrets replaced, reading it in chunks of
/// [`REDACT_CHUNK`] so a spill of hundreds of megabytes is never held whole. Each chunk is
/// redacted up to its last line end (secrets other than key blocks hold none), and a private
/// key block not yet ended is carried to the next chunk whole, as `ToolContext::output` does
/// for streamed output. The file is replaced only when something was found, so bytes that
/// are not UTF-8 stay as they were unless a secret shares their line. Returns the count.
fn redact_file(redactor: &Redactor, path: &Path) -> std::io::Result<usize> {
    use std::io::{Read as _, Write as _};
    let mut reader = fs_err::File::open(path)?;
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let temp = tempfile::Builder::new().prefix("redact-").tempfile_in(dir)?;
    let mut writer = std::io::BufWriter::with_capacity(64 * 1024, temp.as_file());
    let mut pending: Vec<u8> = Vec::new();
    let mut buffer = vec![0; REDACT_CHUNK];
    let mut count = 0;
    loop {
        let read = reader.read(&mut buffer)?;
        pending.extend_from_slice(&buffer[..read]);
        let at = if read == 0 { pending.len() } else { redact_point(&pending) };
        let ready = &pending[..at];
        let lossy = String::from_utf8_lossy(ready);
        let (redacted, found) = redactor.redact(&lossy);
        if found == 0 {
            writer.write_all(ready)?;
        } else {
            writer.write_all(redacted.as_bytes())?;
        }
        count += found;
        pending.drain(..at);
        if read == 0 {
            break;
        }
    }
    writer.flush()?;
    drop(writer);
    if count > 0 {
        temp.persist(path).map_err(|err| err.error)?;
    }
    Ok(count)
}

/// Where to cut `pending` (bytes of a spill file not yet redacted) so what comes before can be
/// redacted on its own: after its last line end, unless the partial line left is longer than
/// [`MAX_CARRIED_LINE`] (then at a character boundary near the end), and before a private key
/// block that has not ended (unless longer than [`MAX_CARRIED_BLOCK`]).
fn redact_point(pending: &[u8]) -> usize {
    let mut cut =
        pending.iter().rposition(|&byte| matches!(byte, b'\n' | b'\r')).map_or(0, |at| at + 1);
    if pending.len() - cut > MAX_CARRIED_LINE {
        // Before a character the chunk cut in two, if it ends with one.
        cut = match std::str::from_utf8(&pending[cut..]) {
            Err(err) if err.error_len().is_none() => cut + err.valid_up_to(),
            _ => pending.len(),
        };
    }
    let begin_marker = b"-----BEGIN ";
    if let Some(begin) = pending[..cut].windows(begin_marker.len()).rposition(|w| w == begin_marker)
    {
        let block = &pending[begin..];
        let first_line =
            block.split(|&byte| matches!(byte, b'\n' | b'\r')).next().unwrap_or_default();
        let names_private_key = first_line.windows(16).any(|w| w == b"PRIVATE KEY-----");
        let ended = block.windows(9).any(|w| w == b"-----END ");
        if names_private_key && !ended && block.len() <= MAX_CARRIED_BLOCK {
            cut = begin;
        }
    }
    cut
}

/// The spec for `SHELL -lc COMMAND` in `cwd` (relative to the session's), as `run_command`
/// runs it: `exec_command`'s sessions start their commands the same way.
pub(crate) fn shell_spec(
    config: &ToolsConfig,
    command: &str,
    cwd: Option<&str>,
) -> Result<CommandSpec, ToolError> {
    let args = Args {
        command: command.to_owned(),
        cwd: cwd.map(str::to_owned),
        timeout_ms: None,
        env: std::collections::BTreeMap::new(),
        background: false,
    };
    command_spec(config, &args)
}

/// The spec for `SHELL -lc COMMAND` (or `SHELL -c '. SNAPSHOT<newline>COMMAND'` while the
/// session's shell snapshot is ready), with the call's cwd and environment checked.
fn command_spec(config: &ToolsConfig, args: &Args) -> Result<CommandSpec, ToolError> {
    let command = &args.command;
    if command.trim().is_empty() {
        return Err(invalid("`command` is empty"));
    }
    if command.contains('\0') {
        return Err(invalid("`command` contains a NUL byte"));
    }
    let cwd: PathBuf = match args.cwd.as_deref() {
        Some(raw) => resolve(&config.cwd, raw)?,
        None => config.cwd.clone(),
    };
    let shown = display(&config.cwd, &cwd);
    match fs_err::metadata(&cwd) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(failed(format!("`cwd` `{shown}` is not a directory"))),
        Err(_) => return Err(failed(format!("`cwd` `{shown}` does not exist"))),
    }
    let mut env = Vec::new();
    for (key, value) in &args.env {
        if key.is_empty() || key.contains(['=', '\0']) || value.contains('\0') {
            return Err(invalid(format!(
                "`env.{key}`: names must be non-empty without `=` or NUL, values without NUL"
            )));
        }
        env.push((OsString::from(key), OsString::from(value)));
    }
    let script = config.snapshot.as_ref().and_then(|snapshot| snapshot.script_for_command());
    let shell_args = match script {
        Some(script) => crate::snapshot::wrap_command(&script, command),
        // The login shell hung when the snapshot was taken: it would hang every command too.
        None if config.snapshot.as_ref().is_some_and(|s| s.login_shell_hangs()) => {
            vec![OsString::from("-c"), OsString::from(command.as_str())]
        }
        None => {
            let mut shell_args: Vec<OsString> =
                config.shell_args.iter().map(OsString::from).collect();
            shell_args.push(OsString::from(command.as_str()));
            shell_args
        }
    };
    Ok(CommandSpec {
        program: config.shell.clone().into_os_string(),
        args: shell_args,
        cwd: Some(cwd),
        env,
        stdin: None,
    })
}

/// Why a process group was stopped before it exited by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Cancelled,
    Killed,
    TimedOut,
}

/// How a command ended.
#[derive(Debug, Clone, Copy)]
pub(crate) struct End {
    pub(crate) status: Option<std::process::ExitStatus>,
    pub(crate) stop: Option<Stop>,
    pub(crate) duration: Duration,
}

/// Spawns `spec` in a process group of its own, under the session's confinement.
fn spawn_confined(
    config: &ToolsConfig,
    spec: &CommandSpec,
    confinement: &Confinement,
) -> Result<codecoder_sandbox::Child, ToolError> {
    let spawn_config = SpawnConfig {
        kill_grace: config.kill_grace,
        confinement: confinement.clone(),
        environment: config.environment.clone(),
        ..SpawnConfig::standard()
    };
    codecoder_sandbox::spawn(spec, &spawn_config).map_err(|err| failed(err.to_string()))
}

/// Waits for `child`, handing output chunks to `on_output`, until it exits or `wait` stops it
/// (its cancel, kill or deadline; the sandbox then terminates the group). The group is gone
/// when this returns.
pub(crate) fn wait_child<C, K>(
    mut child: codecoder_sandbox::Child,
    started: Instant,
    wait: &Wait<'_, C, K>,
    on_output: &mut dyn FnMut(&codecoder_sandbox::OutputChunk),
) -> Result<End, ToolError> {
    let outcome = child.wait(wait, on_output);
    drop(child);
    let duration = started.elapsed();
    let (status, stop) = match outcome {
        Ok(Outcome::Exited(status)) => (Some(status), None),
        Ok(Outcome::Cancelled) => (None, Some(Stop::Cancelled)),
        Ok(Outcome::TimedOut) => (None, Some(Stop::TimedOut)),
        Ok(Outcome::Killed) => (None, Some(Stop::Killed)),
        Err(err) => return Err(failed(err.to_string())),
    };
    Ok(End { status, stop, duration })
}

/// The model's view of a finished foreground command.
fn report(output: &Capped, end: &End, timeout: Duration) -> ToolOutput {
    let mut text = if output.is_empty() { "(no output)\n".to_owned() } else { output.render() };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let seconds = end.duration.as_secs_f64();
    let (status, is_error) = describe(end, Some(timeout));
    text.push_str(&format!("[{status}; {seconds:.2} s]"));
    ToolOutput {
        content: vec![codecoder_protocol::ContentItem::Text { text }],
        is_error,
        exit: Some(command_exit(end)),
    }
}

/// How a command ended, as data: its exit code or signal (neither when it was stopped) and
/// its wall time.
pub(crate) fn command_exit(end: &End) -> codecoder_protocol::CommandExit {
    let (code, signal) = match (end.stop, end.status) {
        (None, Some(status)) => (status.code(), status.signal()),
        _ => (None, None),
    };
    codecoder_protocol::CommandExit {
        code,
        signal,
        duration_ms: u64::try_from(end.duration.as_millis()).unwrap_or(u64::MAX),
    }
}

/// How a command ended, in words, and whether that is a failure.
pub(crate) fn describe(end: &End, timeout: Option<Duration>) -> (String, bool) {
    match (end.stop, end.status) {
        (Some(Stop::TimedOut), _) => {
            let limit = timeout.map_or(0, |timeout| timeout.as_millis());
            (
                format!(
                    "timed out after {limit} ms: the command and its process group were killed"
                ),
                true,
            )
        }
        (Some(Stop::Cancelled), _) => ("cancelled: the process group was killed".to_owned(), true),
        (Some(Stop::Killed), _) => ("killed by job_kill".to_owned(), true),
        (None, Some(status)) => match (status.code(), status.signal()) {
            (Some(0), _) => ("exit code 0".to_owned(), false),
            (Some(code), _) => (format!("exit code {code}"), true),
            (None, Some(signal)) => (format!("killed by signal {signal}"), true),
            (None, None) => ("ended".to_owned(), true),
        },
        (None, None) => ("ended".to_owned(), true),
    }
}

/// The call view of a shell command, the same for every tool that runs one (`run_command`,
/// `exec_command`), so every front-end shows them alike.
pub(crate) fn command_view(command: &str) -> CallView {
    CallView {
        kind: CallKind::Execute,
        title: format!("Run `{command}`"),
        detail: format!("$ {}", first_line(command, 200)),
        command: Some(command.to_owned()),
        ..CallView::default()
    }
}
