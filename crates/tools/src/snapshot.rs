//! The shell snapshot: the user's login-shell set-up (exported variables, aliases, functions),
//! captured once per session so that commands run with a non-login `bash -c` that sources it
//! instead of paying the profile's start-up (`bash -lc`: pyenv, nvm, conda) on every command.
//!
//! At session start a named thread runs `SHELL -lc DUMP` once, under the session's confinement
//! and command environment, with a 10 s timeout; the agent writes the script it prints, by
//! itself, to a private file (0600) the session owns and removes when the snapshot is dropped.
//! The script holds:
//! - `shopt -s expand_aliases` (a non-interactive shell ignores aliases otherwise);
//! - `export` lines for the variables the profile added or changed relative to the command
//!   environment, minus the shell's own (`PWD`, `OLDPWD`, `SHLVL`, `_`), the sandbox's markers
//!   (`CODECODER_SANDBOX*`, set by the spawner for each command) and the names the
//!   secret filter withholds (so a key the profile exports is neither written to disk nor given
//!   to commands: the command environment policy applies to the profile's variables too);
//!   `unset` lines for the variables the profile removed;
//! - the aliases (`alias -p`) and functions (`declare -f`).
//!
//! Invariants:
//! - The first command is never delayed: until the snapshot is ready, or when it failed (the
//!   profile exits non-zero, or the shell is not bash), commands run with the configured login
//!   arguments (`-lc`), exactly as without a snapshot. When the login shell hung past the
//!   timeout, commands run with a plain `-c` instead: each would hang as long.
//! - A snapshot is used only while the rc files it was taken from (`~/.bashrc`, `~/.profile`,
//!   `~/.bash_profile`, `~/.bash_login`, `~/.zshrc`, `/etc/profile`, `/etc/bash.bashrc`) keep the
//!   modification times they had: a change is noticed with a `stat` per file before a command,
//!   and the snapshot is taken again (by that command, which then uses it).
//! - The user's command text is passed unchanged after a newline: `. 'SNAPSHOT'\nCOMMAND`, so
//!   its quoting, `set -e` and exit status are its own, and aliases the snapshot defines expand
//!   in it (bash reads a `-c` string one command at a time).

use std::ffi::{OsStr, OsString};
use std::io::Write as _;
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use codecoder_sandbox::{CommandSpec, Confinement, Environment, SpawnConfig};
use codecoder_stdx::{JoinOnDrop, spawn_named};

/// How long the login shell may take to print its set-up.
pub const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(10);

/// How a failure by timeout starts: the login shell hangs (or takes longer than any command
/// should wait), so commands do without it.
const TOOK_LONGER: &str = "the login shell took longer than";

/// Snapshots older than this are a crashed session's: removed when a session starts.
const STALE_AFTER: Duration = Duration::from_secs(3 * 24 * 3600);

/// The line that separates the profile's own output from the dump's sections.
const MARKER: &str = "__codecoder_snapshot_section__";

/// What the login shell runs after its profile: the exported variables as `NAME=VALUE\0`
/// records, the aliases, the functions, each section after a marker line.
const DUMP: &str = "printf '%s\\n' __codecoder_snapshot_section__
for __codecoder_name in $(compgen -e); do
  printf '%s=%s\\0' \"$__codecoder_name\" \"${!__codecoder_name}\"
done
printf '%s\\n' __codecoder_snapshot_section__
alias -p
printf '%s\\n' __codecoder_snapshot_section__
declare -f
";

/// The most bytes of the login shell's dump kept (a profile printing without end is cut).
const DUMP_LIMIT: usize = 16 * 1024 * 1024;

/// Variables the shell sets by itself: never carried over.
const SHELL_OWN: &[&str] = &["PWD", "OLDPWD", "SHLVL", "_", "__codecoder_name"];

/// The rc files whose modification times a snapshot depends on (`~/` is the command
/// environment's `HOME`).
const RC_FILES: &[&str] = &[
    "~/.bashrc",
    "~/.bash_profile",
    "~/.bash_login",
    "~/.profile",
    "~/.zshrc",
    "/etc/profile",
    "/etc/bash.bashrc",
];

/// Which variable names must not be carried over from the profile: `true` keeps the name.
pub type NameFilter = Arc<dyn Fn(&OsStr) -> bool + Send + Sync>;

/// How to take a snapshot.
#[derive(Clone)]
pub struct SnapshotConfig {
    /// Where the script goes (its directory is created, 0700).
    pub path: PathBuf,
    /// The shell (must be bash: the dump uses `compgen`, `alias -p`, `declare -f`).
    pub shell: PathBuf,
    /// Where the login shell runs.
    pub cwd: PathBuf,
    /// The command environment the login shell starts from.
    pub environment: Environment,
    /// The confinement commands run under.
    pub confinement: Confinement,
    /// Names of the profile's variables that may be written to the snapshot.
    pub keep_name: NameFilter,
    /// The login shell's deadline.
    pub timeout: Duration,
}

impl std::fmt::Debug for SnapshotConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotConfig")
            .field("path", &self.path)
            .field("shell", &self.shell)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Where a snapshot stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotStatus {
    /// Being taken; commands use the login shell meanwhile.
    Pending,
    /// Ready at this path.
    Ready(PathBuf),
    /// Taking it failed; commands use the login shell.
    Failed(String),
}

#[derive(Debug)]
struct State {
    status: SnapshotStatus,
    /// The rc files' modification times when the snapshot was taken.
    stamp: Vec<Option<SystemTime>>,
}

/// A session's shell snapshot, shared by `run_command` and background jobs. Dropping it waits
/// for the thread taking it (bounded by the timeout) and removes the file.
#[derive(Debug)]
pub struct ShellSnapshot {
    config: SnapshotConfig,
    // A mutex because the taking thread and every command thread read and update it; it is
    // held only to read or replace the state, never across the shell's run.
    state: Arc<Mutex<State>>,
    // Serializes re-takes after an rc file changed, so parallel commands take it once.
    retake: Mutex<()>,
    thread: Mutex<Option<JoinOnDrop<()>>>,
    fallback_told: AtomicBool,
}

impl ShellSnapshot {
    /// Starts taking the snapshot on a thread of its own (`shell-snapshot`) and returns at once.
    pub fn start(config: SnapshotConfig) -> Arc<Self> {
        let state =
            Arc::new(Mutex::new(State { status: SnapshotStatus::Pending, stamp: Vec::new() }));
        let snapshot = Arc::new(Self {
            config: config.clone(),
            state: Arc::clone(&state),
            retake: Mutex::new(()),
            thread: Mutex::new(None),
            fallback_told: AtomicBool::new(false),
        });
        let spawned = spawn_named("shell-snapshot", move || {
            if let Some(dir) = config.path.parent() {
                remove_stale(dir, &config.path);
            }
            let stamp = rc_stamp(&config.environment);
            let status = take(&config);
            *state.lock().unwrap_or_else(PoisonError::into_inner) = State { status, stamp };
        });
        match spawned {
            Ok(handle) => {
                *snapshot.thread.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle);
            }
            Err(err) => snapshot.set(SnapshotStatus::Failed(format!("no thread: {err}")), vec![]),
        }
        snapshot
    }

    /// Takes the snapshot on this thread (tests, `codecoder doctor`).
    pub fn take_now(config: SnapshotConfig) -> Arc<Self> {
        let stamp = rc_stamp(&config.environment);
        let status = take(&config);
        Arc::new(Self {
            config,
            state: Arc::new(Mutex::new(State { status, stamp })),
            retake: Mutex::new(()),
            thread: Mutex::new(None),
            fallback_told: AtomicBool::new(false),
        })
    }

    /// Where it stands now.
    pub fn status(&self) -> SnapshotStatus {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).status.clone()
    }

    /// The first time it is asked after the snapshot failed: what to tell the person (commands
    /// run with the login shell). `None` otherwise.
    pub fn fallback_notice(&self) -> Option<String> {
        let SnapshotStatus::Failed(reason) = self.status() else { return None };
        if self.fallback_told.swap(true, Ordering::Relaxed) {
            return None;
        }
        Some(if reason.starts_with(TOOK_LONGER) {
            format!(
                "shell snapshot unavailable ({reason}): commands run with `bash -c`, without the \
                 profile's set-up (a login shell per command would take as long)"
            )
        } else {
            format!(
                "shell snapshot unavailable ({reason}): commands run with a login shell (`-lc`), \
                 which sources the profile every time"
            )
        })
    }

    /// Whether taking the snapshot timed out: the login shell hangs, or takes longer than a
    /// command should wait, so commands run without it (`-c`) rather than with `-lc`.
    pub fn login_shell_hangs(&self) -> bool {
        matches!(self.status(), SnapshotStatus::Failed(reason) if reason.starts_with(TOOK_LONGER))
    }

    fn set(&self, status: SnapshotStatus, stamp: Vec<Option<SystemTime>>) {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = State { status, stamp };
    }

    /// The script to source before a command, or `None` (use the login shell). Takes the
    /// snapshot again first when an rc file changed since.
    pub fn script_for_command(&self) -> Option<PathBuf> {
        let (path, stamp) = {
            let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            match &state.status {
                SnapshotStatus::Ready(path) => (path.clone(), state.stamp.clone()),
                SnapshotStatus::Pending | SnapshotStatus::Failed(_) => return None,
            }
        };
        if rc_stamp(&self.config.environment) == stamp {
            return Some(path);
        }
        let _retake = self.retake.lock().unwrap_or_else(PoisonError::into_inner);
        let now = rc_stamp(&self.config.environment);
        {
            let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.stamp == now {
                return match &state.status {
                    SnapshotStatus::Ready(path) => Some(path.clone()),
                    SnapshotStatus::Pending | SnapshotStatus::Failed(_) => None,
                };
            }
        }
        let status = take(&self.config);
        self.set(status.clone(), now);
        match status {
            SnapshotStatus::Ready(path) => Some(path),
            SnapshotStatus::Pending | SnapshotStatus::Failed(_) => None,
        }
    }
}

impl Drop for ShellSnapshot {
    fn drop(&mut self) {
        drop(self.thread.lock().unwrap_or_else(PoisonError::into_inner).take());
        let _ = fs_err::remove_file(&self.config.path);
    }
}

/// The command line for `command` with the snapshot at `script`: `-c`, `. 'SCRIPT'\nCOMMAND`.
pub(crate) fn wrap_command(script: &Path, command: &str) -> Vec<OsString> {
    let mut line = b". ".to_vec();
    line.extend_from_slice(&single_quoted(script.as_os_str().as_bytes()));
    line.push(b'\n');
    line.extend_from_slice(command.as_bytes());
    vec![OsString::from("-c"), OsString::from_vec(line)]
}

fn take(config: &SnapshotConfig) -> SnapshotStatus {
    match take_inner(config) {
        Ok(()) => SnapshotStatus::Ready(config.path.clone()),
        Err(reason) => SnapshotStatus::Failed(reason),
    }
}

fn take_inner(config: &SnapshotConfig) -> Result<(), String> {
    if config.shell.file_name() != Some(OsStr::new("bash")) {
        return Err(format!("`{}` is not bash", config.shell.display()));
    }
    let mut spec = CommandSpec::new(config.shell.as_os_str(), ["-lc", DUMP]);
    spec.cwd = Some(config.cwd.clone());
    let spawn_config = SpawnConfig {
        confinement: config.confinement.clone(),
        environment: config.environment.clone(),
        ..SpawnConfig::standard()
    };
    let wait = codecoder_sandbox::Wait::within(config.timeout);
    let collected = codecoder_sandbox::output(&spec, &spawn_config, &wait, DUMP_LIMIT)
        .map_err(|err| format!("the login shell could not run: {err}"))?;
    if !collected.success() {
        return Err(match collected.outcome {
            codecoder_sandbox::Outcome::Exited(status) => {
                format!("the login shell failed ({status})")
            }
            codecoder_sandbox::Outcome::TimedOut
            | codecoder_sandbox::Outcome::Cancelled
            | codecoder_sandbox::Outcome::Killed => {
                format!("{TOOK_LONGER} {} s", config.timeout.as_secs())
            }
        });
    }
    let script = render(&collected.stdout, &config.environment, &*config.keep_name)
        .ok_or_else(|| "the login shell did not print its set-up".to_owned())?;
    write_private(&config.path, &script)
        .map_err(|err| format!("the snapshot could not be written: {err}"))
}

/// The snapshot script from the dump's output, or `None` when the sections are missing.
pub(crate) fn render(
    output: &[u8],
    base: &Environment,
    keep_name: &dyn Fn(&OsStr) -> bool,
) -> Option<Vec<u8>> {
    let marker = format!("{MARKER}\n");
    let marker = marker.as_bytes();
    let mut parts = Vec::new();
    let mut rest = output;
    for _ in 0..3 {
        let at = find(rest, marker)?;
        parts.push(&rest[..at]);
        rest = &rest[at + marker.len()..];
    }
    let (variables, aliases, functions) = (parts[1], parts[2], rest);

    let base: Vec<(OsString, OsString)> = match base {
        Environment::Exactly(vars) => vars.to_vec(),
        Environment::Inherited => std::env::vars_os().collect(),
    };
    let mut script =
        b"# codecoder shell snapshot (the login shell's set-up); removed with the session.\n\
shopt -s expand_aliases\n"
            .to_vec();
    let mut seen = Vec::new();
    for record in variables.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let Some(eq) = record.iter().position(|&b| b == b'=') else { continue };
        let name = OsStr::from_bytes(&record[..eq]);
        let value = OsStr::from_bytes(&record[eq + 1..]);
        seen.push(name.to_owned());
        // The sandbox's own markers describe the run that took the snapshot, not the command
        // (an escalated retry runs outside the sandbox).
        let sandbox_own = [
            codecoder_sandbox::env::CODECODER_SANDBOX,
            codecoder_sandbox::env::CODECODER_SANDBOX_NETWORK_DISABLED,
        ];
        if SHELL_OWN.iter().chain(&sandbox_own).any(|own| OsStr::new(own) == name)
            || !keep_name(name)
        {
            continue;
        }
        if base.iter().any(|(n, v)| n == name && v == value) {
            continue;
        }
        script.extend_from_slice(b"export ");
        script.extend_from_slice(name.as_bytes());
        script.push(b'=');
        script.extend_from_slice(&single_quoted(value.as_bytes()));
        script.push(b'\n');
    }
    for (name, _) in &base {
        let valid = name.as_bytes().first().is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
            && name.as_bytes().iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_');
        if valid
            && !seen.contains(name)
            && !SHELL_OWN.iter().any(|own| OsStr::new(own) == name.as_os_str())
        {
            script.extend_from_slice(b"unset ");
            script.extend_from_slice(name.as_bytes());
            script.push(b'\n');
        }
    }
    script.extend_from_slice(aliases);
    script.extend_from_slice(functions);
    Some(script)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

/// `'text'`, with each `'` written as `'\''`.
fn single_quoted(text: &[u8]) -> Vec<u8> {
    let mut out = vec![b'\''];
    for &b in text {
        if b == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(b);
        }
    }
    out.push(b'\'');
    out
}

fn write_private(path: &Path, script: &[u8]) -> std::io::Result<()> {
    use fs_err::os::unix::fs::OpenOptionsExt as _;
    use std::os::unix::fs::PermissionsExt as _;
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir)?;
        fs_err::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let temp = path.with_extension("tmp");
    let mut file = fs_err::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)?;
    file.write_all(script)?;
    drop(file);
    fs_err::rename(&temp, path)
}

/// The rc files' modification times (`None`: absent).
fn rc_stamp(environment: &Environment) -> Vec<Option<SystemTime>> {
    let home: Option<PathBuf> = match environment {
        Environment::Exactly(vars) => vars
            .iter()
            .find(|(n, _)| n == codecoder_protocol::env::HOME)
            .map(|(_, v)| PathBuf::from(v)),
        Environment::Inherited => {
            std::env::var_os(codecoder_protocol::env::HOME).map(PathBuf::from)
        }
    };
    RC_FILES
        .iter()
        .map(|file| {
            let path = match (file.strip_prefix("~/"), &home) {
                (Some(rest), Some(home)) => home.join(rest),
                (Some(_), None) => return None,
                (None, _) => PathBuf::from(file),
            };
            fs_err::metadata(path).and_then(|meta| meta.modified()).ok()
        })
        .collect()
}

/// Removes the snapshots in `dir` older than [`STALE_AFTER`] (left by sessions that did not
/// end normally), other than `keep`.
fn remove_stale(dir: &Path, keep: &Path) {
    let Ok(entries) = fs_err::read_dir(dir) else { return };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let path = entry.path();
        let old = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .ok()
            .and_then(|modified| now.duration_since(modified).ok())
            .is_some_and(|age| age > STALE_AFTER);
        if old && path != keep && path.extension() == Some(OsStr::new("sh")) {
            let _ = fs_err::remove_file(&path);
        }
    }
}
