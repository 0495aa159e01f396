//! The shell snapshot: the user's login-shell set-up (exported variables, aliases, functions),
//! captured once and shared by every session and process whose inputs are the same, so that
//! commands run with a non-login `bash -c` that sources it instead of paying the profile's
//! start-up (`bash -lc`: pyenv, nvm, conda) on every command, and a new session's first command
//! pays no login shell either.
//!
//! Taking one runs `SHELL -lc DUMP` under the session's confinement and command environment,
//! with a 10 s timeout; the agent writes the script it prints, by itself, to a private file
//! (0600, in a 0700 directory) named by the snapshot's key. The script holds:
//! - `shopt -s expand_aliases` (a non-interactive shell ignores aliases otherwise);
//! - `export` lines for the variables the profile added or changed relative to the command
//!   environment, minus the shell's own (`PWD`, `OLDPWD`, `SHLVL`, `_`), the sandbox's markers
//!   (`CODECODER_SANDBOX*`, set by the spawner for each command) and the names the
//!   secret filter withholds (so a key the profile exports is neither written to disk nor given
//!   to commands: the command environment policy applies to the profile's variables too);
//!   `unset` lines for the variables the profile removed; `PATH` is the command environment's
//!   whole, then the directories the profile added (a profile that resets it, as Debian's
//!   `/etc/profile` does, must not take a caller's virtualenv or CI tools away);
//! - the aliases (`alias -p`) and functions (`declare -f`).
//!
//! The key (a SHA-256, the file's name) covers everything the script depends on:
//! - the shell, the dump and the script's format;
//! - every profile file a bash login shell reads, present or absent, by path, size,
//!   modification time (ns) and inode: `/etc/profile`, `/etc/profile.d/` and its `*.sh`,
//!   `/etc/bash.bashrc`, `/etc/bashrc`, `~/.bash_profile`, `~/.bash_login`, `~/.profile`,
//!   `~/.bashrc`, `~/.bash_aliases` (`~` is the command environment's `HOME`). Files those
//!   source in turn (`nvm.sh`, …) are not followed;
//! - the command environment the login shell starts from, names and values (the script is a
//!   difference against it), minus the shell's own variables; of the variables that differ
//!   from one terminal or login to the next (`SSH_AUTH_SOCK`, `TMUX_PANE`, `WINDOWID`, …) only
//!   whether they are set. It holds no secret: the command environment policy has already
//!   dropped them, and only a hash of it is written;
//! - the name filter's policy, so a session whose policy withholds more never sources a script
//!   written under one that withholds less;
//! - the confinement's kind (none, or the sandbox backend's name), since a profile may behave
//!   differently inside a sandbox.
//!
//! The working directory is not part of it: a profile's set-up does not depend on where the
//! shell starts (`PWD` and `OLDPWD` are never carried over).
//!
//! Invariants:
//! - The first command is never delayed: a snapshot whose key matches is found at session start
//!   (a few `stat`s) and used at once; otherwise it is taken on a thread of its own and, until it
//!   is ready, or when it failed (the profile exits non-zero, or the shell is not bash),
//!   commands run with the configured login arguments (`-lc`), exactly as without a snapshot.
//!   When the login shell hung past the timeout, commands run with a plain `-c` instead: each
//!   would hang as long.
//! - A snapshot is used only while its key matches: before each command the profile files are
//!   looked at again (a `stat` each) and the script's file too; when a profile changed (or the
//!   file is gone), the command finds or takes the snapshot of the new key and uses it.
//! - Files are replaced whole: a script is written to a temporary file of its own and renamed
//!   into place, so a reader sees an old script or a new one, never a part. Processes taking the
//!   same snapshot are serialized by an `flock` on the directory, held while one takes it: the
//!   others then find its file and use it. One that waited past the timeout takes its own,
//!   which is just as good.
//! - Files nobody used for three days (each session that reuses a snapshot sets its
//!   modification time to now) are removed when a session takes a new one.
//! - The user's command text is passed unchanged after a newline: `. 'SNAPSHOT'\nCOMMAND`, so
//!   its quoting, `set -e` and exit status are its own, and aliases the snapshot defines expand
//!   in it (bash reads a `-c` string one command at a time).

use std::ffi::{OsStr, OsString};

use std::io::Write as _;
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use codecoder_sandbox::{CommandSpec, Confinement, Environment, SpawnConfig};
use codecoder_stdx::{JoinOnDrop, spawn_named};
use sha2::{Digest as _, Sha256};

/// `caller`'s PATH, then the directories of `profile`'s that it lacks, in their order.
fn merged_path(caller: &[u8], profile: &[u8]) -> Vec<u8> {
    let mut merged = caller.to_vec();
    let known: Vec<&[u8]> = caller.split(|&b| b == b':').collect();
    for dir in profile.split(|&b| b == b':') {
        if !dir.is_empty() && !known.contains(&dir) {
            if !merged.is_empty() {
                merged.push(b':');
            }
            merged.extend_from_slice(dir);
        }
    }
    merged
}

#[cfg(test)]
mod tests;

/// How long the login shell may take to print its set-up.
pub const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(10);

/// How a failure by timeout starts: the login shell hangs (or takes longer than any command
/// should wait), so commands do without it.
const TOOK_LONGER: &str = "the login shell took longer than";

/// Snapshots nobody used for this long are removed when a session takes a new one.
const STALE_AFTER: Duration = Duration::from_secs(3 * 24 * 3600);

/// The script's format: part of the key, so a codecoder that writes scripts differently never
/// sources an older one's.
const FORMAT: &str = "codecoder shell snapshot 2";

/// How often a process waiting for another one's snapshot looks at the lock again.
const LOCK_POLL: Duration = Duration::from_millis(10);

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

/// Variables the shell sets by itself: never carried over, and not part of the key.
const SHELL_OWN: &[&str] = &["PWD", "OLDPWD", "SHLVL", "_", "__codecoder_name"];

/// Variables whose value differs from one terminal, login or process to the next: only whether
/// they are set is part of the key (a profile may test that, `[ -z "$SSH_AUTH_SOCK" ]`), so a new
/// terminal window still finds the snapshot. The script stays right for any value: a variable
/// the profile leaves alone is not in it (the command keeps its own value), and one the profile
/// sets is set by the script.
const VOLATILE: &[&str] = &[
    "ALACRITTY_WINDOW_ID",
    "COLUMNS",
    "GPG_TTY",
    "INVOCATION_ID",
    "ITERM_SESSION_ID",
    "JOURNAL_STREAM",
    "KITTY_PID",
    "KITTY_WINDOW_ID",
    "LINES",
    "SSH_AGENT_PID",
    "SSH_AUTH_SOCK",
    "SSH_CLIENT",
    "SSH_CONNECTION",
    "SSH_TTY",
    "STY",
    "TERM_PROGRAM_VERSION",
    "TERM_SESSION_ID",
    "TMUX",
    "TMUX_PANE",
    "VSCODE_GIT_IPC_HANDLE",
    "VSCODE_IPC_HOOK_CLI",
    "VSCODE_NONCE",
    "VSCODE_PID",
    "WEZTERM_PANE",
    "WINDOW",
    "WINDOWID",
    "XDG_SESSION_ID",
];

/// The files a bash login shell reads (directly, or through the distributions' stock
/// `/etc/profile` and `~/.bashrc`); `~/` is the command environment's `HOME`.
const PROFILE_FILES: &[&str] = &[
    "/etc/profile",
    "/etc/bash.bashrc",
    "/etc/bashrc",
    "~/.bash_profile",
    "~/.bash_login",
    "~/.profile",
    "~/.bashrc",
    "~/.bash_aliases",
];

/// Directories whose `*.sh` files `/etc/profile` sources: the directory (files added or
/// removed) and each file.
const PROFILE_DIRS: &[&str] = &["/etc/profile.d"];

/// Which variable names must not be carried over from the profile: `true` keeps the name.
pub type NameFilter = Arc<dyn Fn(&OsStr) -> bool + Send + Sync>;

/// How to take a snapshot.
#[derive(Clone)]
pub struct SnapshotConfig {
    /// The directory of the shared snapshots (created, 0700).
    pub dir: PathBuf,
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
    /// What tells `keep_name` apart from another filter (the policy it was made from): part of
    /// the key, so two filters that may decide differently never share a snapshot.
    pub keep_name_key: String,
    /// The login shell's deadline.
    pub timeout: Duration,
}

impl std::fmt::Debug for SnapshotConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotConfig")
            .field("dir", &self.dir)
            .field("shell", &self.shell)
            .field("keep_name_key", &self.keep_name_key)
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

/// One profile file as the key sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    path: PathBuf,
    /// Size, modification time (ns since the epoch) and inode; `None`: absent.
    seen: Option<(u64, i128, u64)>,
}

/// The profile files, in a fixed order.
type Stamp = Vec<FileStamp>;

#[derive(Debug)]
struct State {
    status: SnapshotStatus,
    /// The profile files when the snapshot was looked up or taken.
    stamp: Stamp,
    /// Whether the ready snapshot was found rather than taken by this one.
    reused: bool,
}

/// A session's shell snapshot, shared by `run_command` and background jobs. Dropping it waits
/// for the thread taking it (bounded by the timeout); the file stays for other sessions.
#[derive(Debug)]
pub struct ShellSnapshot {
    config: SnapshotConfig,
    // A mutex because the taking thread and every command thread read and update it; it is
    // held only to read or replace the state, never across the shell's run.
    state: Arc<Mutex<State>>,
    // Serializes re-takes after a profile file changed, so parallel commands take it once.
    retake: Mutex<()>,
    thread: Mutex<Option<JoinOnDrop<()>>>,
    fallback_told: AtomicBool,
}

impl ShellSnapshot {
    /// Uses the shared snapshot whose key matches when there is one; otherwise starts taking it
    /// on a thread of its own (`shell-snapshot`) and returns at once.
    pub fn start(config: SnapshotConfig) -> Arc<Self> {
        let stamp = profile_stamp(&config.environment);
        let path = snapshot_path(&config, &stamp);
        if reuse(&path) {
            return Self::with_state(
                config,
                State { status: SnapshotStatus::Ready(path), stamp, reused: true },
            );
        }
        let snapshot = Self::with_state(
            config.clone(),
            State { status: SnapshotStatus::Pending, stamp: stamp.clone(), reused: false },
        );
        let state = Arc::clone(&snapshot.state);
        let spawned = spawn_named("shell-snapshot", move || {
            let (status, reused) = make(&config, &path);
            *state.lock().unwrap_or_else(PoisonError::into_inner) = State { status, stamp, reused };
        });
        match spawned {
            Ok(handle) => {
                *snapshot.thread.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle);
            }
            Err(err) => {
                let mut state = snapshot.state.lock().unwrap_or_else(PoisonError::into_inner);
                state.status = SnapshotStatus::Failed(format!("no thread: {err}"));
            }
        }
        snapshot
    }

    /// Uses the shared snapshot whose key matches, or takes it on this thread (tests,
    /// `codecoder doctor`).
    pub fn take_now(config: SnapshotConfig) -> Arc<Self> {
        let stamp = profile_stamp(&config.environment);
        let path = snapshot_path(&config, &stamp);
        let (status, reused) =
            if reuse(&path) { (SnapshotStatus::Ready(path), true) } else { make(&config, &path) };
        Self::with_state(config, State { status, stamp, reused })
    }

    fn with_state(config: SnapshotConfig, state: State) -> Arc<Self> {
        Arc::new(Self {
            config,
            state: Arc::new(Mutex::new(state)),
            retake: Mutex::new(()),
            thread: Mutex::new(None),
            fallback_told: AtomicBool::new(false),
        })
    }

    /// Where it stands now.
    pub fn status(&self) -> SnapshotStatus {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).status.clone()
    }

    /// Whether the snapshot in use was found ready (taken earlier, by this process or another)
    /// rather than taken for this one.
    pub fn reused(&self) -> bool {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).reused
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

    /// The script to source before a command, or `None` (use the login shell). When a profile
    /// file changed since (or the script's file is gone), finds or takes the snapshot of the new
    /// key first.
    pub fn script_for_command(&self) -> Option<PathBuf> {
        let (path, stamp) = {
            let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            match &state.status {
                SnapshotStatus::Ready(path) => (path.clone(), state.stamp.clone()),
                SnapshotStatus::Pending | SnapshotStatus::Failed(_) => return None,
            }
        };
        if profile_stamp(&self.config.environment) == stamp && path.is_file() {
            return Some(path);
        }
        let _retake = self.retake.lock().unwrap_or_else(PoisonError::into_inner);
        // Another command may have done it meanwhile: then the new key's file is there.
        let now = profile_stamp(&self.config.environment);
        let path = snapshot_path(&self.config, &now);
        let (status, reused) = if reuse(&path) {
            (SnapshotStatus::Ready(path), true)
        } else {
            make(&self.config, &path)
        };
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) =
            State { status: status.clone(), stamp: now, reused };
        match status {
            SnapshotStatus::Ready(path) => Some(path),
            SnapshotStatus::Pending | SnapshotStatus::Failed(_) => None,
        }
    }
}

impl Drop for ShellSnapshot {
    fn drop(&mut self) {
        drop(self.thread.lock().unwrap_or_else(PoisonError::into_inner).take());
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

/// Takes the snapshot into `path` unless another process did while this one waited for the
/// directory's lock; removes stale snapshots first. Returns the status and whether it was
/// found rather than taken.
fn make(config: &SnapshotConfig, path: &Path) -> (SnapshotStatus, bool) {
    if let Err(err) = private_dir(&config.dir) {
        return (
            SnapshotStatus::Failed(format!("the snapshot could not be written: {err}")),
            false,
        );
    }
    let _lock = lock_dir(&config.dir, config.timeout);
    if reuse(path) {
        return (SnapshotStatus::Ready(path.to_owned()), true);
    }
    remove_stale(&config.dir);
    match take_inner(config, path) {
        Ok(()) => (SnapshotStatus::Ready(path.to_owned()), false),
        Err(reason) => (SnapshotStatus::Failed(reason), false),
    }
}

fn take_inner(config: &SnapshotConfig, path: &Path) -> Result<(), String> {
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
    write_private(path, &script).map_err(|err| format!("the snapshot could not be written: {err}"))
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
        b"# codecoder shell snapshot (the login shell's set-up), shared by sessions while the profile \
files and the environment are unchanged.\n\
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
        // PATH: the caller's comes first, whole (a CI job's or an SDK's tools, a virtualenv),
        // then what the profile added; a login profile that resets PATH (Debian's
        // /etc/profile) must not take the caller's directories away.
        let merged;
        let value = match base.iter().find(|(n, _)| n == name) {
            Some((_, caller)) if name == OsStr::new("PATH") => {
                merged = merged_path(caller.as_bytes(), value.as_bytes());
                OsStr::from_bytes(&merged)
            }
            _ => value,
        };
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

/// Creates `dir` (0700) unless it exists.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    fs_err::create_dir_all(dir)?;
    let meta = fs_err::metadata(dir)?;
    if meta.permissions().mode() & 0o777 != 0o700 {
        fs_err::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Writes `script` to `path` (0600) whole: to a temporary file of this writer's own, renamed
/// into place.
fn write_private(path: &Path, script: &[u8]) -> std::io::Result<()> {
    use fs_err::os::unix::fs::OpenOptionsExt as _;
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let n = WRITES.fetch_add(1, Ordering::Relaxed);
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".{}-{n}.tmp", std::process::id()));
    let temp = PathBuf::from(temp);
    let written = (|| {
        let mut file =
            fs_err::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temp)?;
        file.write_all(script)?;
        drop(file);
        fs_err::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = fs_err::remove_file(&temp);
    }
    written
}

/// Whether a snapshot is ready at `path`; if so, marks it used now (so it is not stale).
fn reuse(path: &Path) -> bool {
    let Ok(file) = fs_err::File::open(path) else { return false };
    match file.metadata() {
        Ok(meta) if meta.is_file() && meta.len() > 0 => {}
        Ok(_) | Err(_) => return false,
    }
    // Best effort: a snapshot whose time could not be set is at worst taken again in 3 days.
    let _ = file.set_modified(SystemTime::now());
    true
}

/// Waits (up to `timeout`, polling) for the exclusive `flock` on `dir`, held until the returned
/// file is dropped. `None` when it could not be had: the caller goes on without it.
fn lock_dir(dir: &Path, timeout: Duration) -> Option<fs_err::File> {
    let file = fs_err::File::open(dir).ok()?;
    let deadline = Instant::now() + timeout;
    loop {
        match file.file().try_lock() {
            Ok(()) => return Some(file),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(LOCK_POLL);
            }
            Err(_) => return None,
        }
    }
}

/// Where the snapshot for `stamp` (and the rest of `config`'s key) lives.
fn snapshot_path(config: &SnapshotConfig, stamp: &[FileStamp]) -> PathBuf {
    config.dir.join(format!("{}.sh", key(config, stamp)))
}

/// The key of a snapshot: a SHA-256 (128 bits of it, in hex) over everything its script
/// depends on, each field length-prefixed.
fn key(config: &SnapshotConfig, stamp: &[FileStamp]) -> String {
    fn field(hasher: &mut Sha256, bytes: &[u8]) {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    let mut hasher = Sha256::new();
    field(&mut hasher, FORMAT.as_bytes());
    field(&mut hasher, DUMP.as_bytes());
    field(&mut hasher, config.shell.as_os_str().as_bytes());
    let confinement = match &config.confinement {
        Confinement::Unconfined => "unconfined",
        Confinement::Sandboxed(sandbox) => sandbox.backend().name(),
        _ => "other",
    };
    field(&mut hasher, confinement.as_bytes());
    field(&mut hasher, config.keep_name_key.as_bytes());
    let inherited: Vec<(OsString, OsString)>;
    let vars: &[(OsString, OsString)] = match &config.environment {
        Environment::Exactly(vars) => vars,
        Environment::Inherited => {
            inherited = std::env::vars_os().collect();
            &inherited
        }
    };
    let mut vars: Vec<&(OsString, OsString)> = vars
        .iter()
        .filter(|(name, _)| !SHELL_OWN.iter().any(|own| OsStr::new(own) == name))
        .collect();
    vars.sort();
    field(&mut hasher, &(vars.len() as u64).to_le_bytes());
    for (name, value) in vars {
        field(&mut hasher, name.as_bytes());
        if VOLATILE.iter().any(|volatile| OsStr::new(volatile) == name) {
            field(&mut hasher, b"set");
        } else {
            field(&mut hasher, value.as_bytes());
        }
    }
    field(&mut hasher, &(stamp.len() as u64).to_le_bytes());
    for file in stamp {
        field(&mut hasher, file.path.as_os_str().as_bytes());
        let seen = match file.seen {
            Some((size, mtime, inode)) => format!("{size} {mtime} {inode}"),
            None => "absent".to_owned(),
        };
        field(&mut hasher, seen.as_bytes());
    }
    let digest = hasher.finalize();
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// The profile files as they are now, in a fixed order.
fn profile_stamp(environment: &Environment) -> Stamp {
    let home: Option<PathBuf> = match environment {
        Environment::Exactly(vars) => vars
            .iter()
            .find(|(n, _)| n == codecoder_protocol::env::HOME)
            .map(|(_, v)| PathBuf::from(v)),
        Environment::Inherited => {
            std::env::var_os(codecoder_protocol::env::HOME).map(PathBuf::from)
        }
    };
    let look = |path: PathBuf| {
        let seen = fs_err::metadata(&path).ok().map(|meta| {
            let mtime = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
            (meta.len(), mtime, meta.ino())
        });
        FileStamp { path, seen }
    };
    let mut stamp: Stamp = PROFILE_FILES
        .iter()
        .filter_map(|file| match (file.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => Some(home.join(rest)),
            (Some(_), None) => None,
            (None, _) => Some(PathBuf::from(file)),
        })
        .map(look)
        .collect();
    for dir in PROFILE_DIRS {
        let dir = Path::new(dir);
        stamp.push(look(dir.to_owned()));
        let Ok(entries) = fs_err::read_dir(dir) else { continue };
        let mut scripts: Vec<PathBuf> = entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension() == Some(OsStr::new("sh")))
            .collect();
        scripts.sort();
        stamp.extend(scripts.into_iter().map(look));
    }
    stamp
}

/// Removes the snapshots (and temporary files left by writers that died) in `dir` nobody used
/// for [`STALE_AFTER`].
fn remove_stale(dir: &Path) {
    let Ok(entries) = fs_err::read_dir(dir) else { return };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let path = entry.path();
        let ours =
            [OsStr::new("sh"), OsStr::new("tmp")].contains(&path.extension().unwrap_or_default());
        let old = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .ok()
            .and_then(|modified| now.duration_since(modified).ok())
            .is_some_and(|age| age > STALE_AFTER);
        if old && ours {
            let _ = fs_err::remove_file(&path);
        }
    }
}
