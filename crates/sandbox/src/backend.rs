//! Backend selection (`probe`) and the wrapping of a command for a backend (`Sandbox`).
//!
//! Invariants:
//! - `probe` does its work once per preference per process; later calls return the cached
//!   answer, so asking per command is free.
//! - A wrapped command is the same command: only the program and the arguments in front of it
//!   change, plus `CODECODER_SANDBOX` (and `CODECODER_SANDBOX_NETWORK_DISABLED`, or the proxy
//!   variables of a proxied network) in its environment.
//! - A proxied network never widens to the full network: under bubblewrap the command has an
//!   empty network namespace and the stage's relay; under Landlock the same when the stage can
//!   make the namespaces, else a TCP connect to the proxy's port only (without the proxy's TCP
//!   address, or on a kernel without Landlock's network rules, the network is off); under
//!   Seatbelt it is off.
//! - Bubblewrap is given `--die-with-parent` and its own pid namespace, so terminating the process
//!   group of the outer `bwrap` (what `Child` does) takes everything inside down with it, even
//!   the processes that `--new-session` put in a session of their own.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::env;
use crate::policy::Sockets;
use crate::policy::{
    FsAccess, NAME_SERVICE_DIRS, NetworkMode, RELAY_PORT, SandboxPolicy, existing_dirs,
    proxy_environment,
};
use crate::stage::{STAGE_MARKER, StageArgs};

pub use codecoder_protocol::BackendPreference;

/// An OS confinement mechanism that works on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// Bubblewrap namespaces plus the seccomp stage; holds the `bwrap` executable.
    Bwrap(PathBuf),
    /// Landlock plus the seccomp stage (and a mount namespace for the protected subpaths).
    Landlock,
    /// macOS `sandbox-exec` with a generated profile; holds the `sandbox-exec` executable.
    Seatbelt(PathBuf),
}

impl Backend {
    /// The short name children see in `CODECODER_SANDBOX`: `bwrap`, `landlock` or `seatbelt`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Bwrap(_) => "bwrap",
            Backend::Landlock => "landlock",
            Backend::Seatbelt(_) => "seatbelt",
        }
    }
}

/// The outcome of backend selection, for `codecoder doctor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The backend in use, or `None` when none works (commands then cannot be sandboxed).
    pub backend: Option<Backend>,
    /// One line per fact found: the bwrap path and version or why it is not used, the Landlock
    /// ABI or why not, whether mount namespaces are available to protect `.git`.
    pub notes: Vec<String>,
}

/// Finds the backend to use for `preference`. Probes once per preference and caches the answer.
pub fn probe(preference: BackendPreference) -> Probe {
    static AUTO: OnceLock<Probe> = OnceLock::new();
    static BWRAP: OnceLock<Probe> = OnceLock::new();
    static LANDLOCK: OnceLock<Probe> = OnceLock::new();
    let cell = match preference {
        BackendPreference::Auto => &AUTO,
        BackendPreference::Bwrap => &BWRAP,
        BackendPreference::Landlock => &LANDLOCK,
    };
    cell.get_or_init(|| probe_uncached(preference)).clone()
}

#[cfg(target_os = "macos")]
fn probe_uncached(preference: BackendPreference) -> Probe {
    let path = PathBuf::from("/usr/bin/sandbox-exec");
    match preference {
        BackendPreference::Auto if path.exists() => Probe {
            backend: Some(Backend::Seatbelt(path.clone())),
            notes: vec![format!("seatbelt: {}", path.display())],
        },
        BackendPreference::Auto => Probe {
            backend: None,
            notes: vec!["seatbelt: /usr/bin/sandbox-exec is missing".into()],
        },
        BackendPreference::Bwrap | BackendPreference::Landlock => Probe {
            backend: None,
            notes: vec!["bubblewrap and Landlock exist only on Linux; use `auto`".into()],
        },
    }
}

#[cfg(target_os = "linux")]
fn probe_uncached(preference: BackendPreference) -> Probe {
    let mut notes = Vec::new();
    let bwrap = match preference {
        BackendPreference::Auto | BackendPreference::Bwrap => probe_bwrap(&mut notes),
        BackendPreference::Landlock => None,
    };
    // Under `auto` Landlock is probed even when bwrap wins, so `doctor` shows both.
    let landlock = match preference {
        BackendPreference::Auto | BackendPreference::Landlock => probe_landlock(&mut notes),
        BackendPreference::Bwrap => false,
    };
    let backend = match bwrap {
        Some(path) => Some(Backend::Bwrap(path)),
        None => landlock.then_some(Backend::Landlock),
    };
    Probe { backend, notes }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn probe_uncached(_preference: BackendPreference) -> Probe {
    Probe { backend: None, notes: vec!["no sandbox backend exists for this OS".into()] }
}

/// Finds `bwrap` on `PATH` (never a relative entry, which would let a workspace provide it) and
/// checks that it can create the namespaces a sandbox needs.
#[cfg(target_os = "linux")]
fn probe_bwrap(notes: &mut Vec<String>) -> Option<PathBuf> {
    let path_var = std::env::var_os(codecoder_protocol::env::PATH).unwrap_or_default();
    let found = std::env::split_paths(&path_var)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join("bwrap"))
        .find(|candidate| candidate.is_file());
    let Some(path) = found else {
        notes.push("bwrap: not found on PATH (install the `bubblewrap` package)".into());
        return None;
    };
    let version = run_quiet(&path, &["--version"]).map(|out| out.trim().to_owned());
    let version = match version {
        Ok(version) => version,
        Err(err) => {
            notes.push(format!("bwrap: {} does not run: {err}", path.display()));
            return None;
        }
    };
    // The same mounts and namespaces a command gets, so a container that refuses any of them
    // (a `/proc` mount, say) is found here and not at the first command.
    let mut smoke: Vec<&str> = vec![
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--unshare-pid",
        "--unshare-net",
    ];
    if !nix::unistd::geteuid().is_root() {
        smoke.push("--unshare-user");
    }
    smoke.extend(["--die-with-parent", "--", "true"]);
    if let Err(err) = run_quiet(&path, &smoke) {
        notes.push(format!(
            "bwrap: {} ({version}) cannot create namespaces here: {err}",
            path.display()
        ));
        return None;
    }
    notes.push(format!("bwrap: {} ({version})", path.display()));
    notes.push(
        "bwrap: a proxied network is an empty network namespace (loopback only) whose one way out \
         is a relay to the proxy's unix socket; TCP only (no UDP, so no DNS but the proxy's)"
            .into(),
    );
    Some(path)
}

/// Runs a probe command to completion, returning its stdout or why it failed.
#[cfg(target_os = "linux")]
fn run_quiet(program: &Path, args: &[&str]) -> Result<String, String> {
    #[allow(clippy::disallowed_methods)] // This crate is the one place allowed to spawn processes.
    let output = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|err| err.to_string())?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Err(format!("{} ({})", stderr.trim(), output.status))
}

/// Reads the Landlock ABI by enforcing an empty-handed ruleset on a throwaway thread: Landlock
/// (without `all_threads`) and `PR_SET_NO_NEW_PRIVS` bind only the calling thread, which then
/// ends, and the status the crate reports names the kernel's ABI.
#[cfg(target_os = "linux")]
fn probe_landlock(notes: &mut Vec<String>) -> bool {
    use landlock::{ABI, Access, AccessFs, LandlockStatus, Ruleset, RulesetAttr, RulesetStatus};

    let status = std::thread::Builder::new()
        .name("sandbox-probe".into())
        .spawn(|| {
            let ruleset = Ruleset::default().handle_access(AccessFs::from_all(ABI::V1))?;
            ruleset.create()?.restrict_self()
        })
        .map_err(|err| err.to_string())
        .and_then(|handle| handle.join().map_err(|_| "the probe thread panicked".to_owned()));
    let status = match status {
        Ok(Ok(status)) => status,
        Ok(Err(err)) => {
            notes.push(format!("landlock: cannot be enforced: {err}"));
            return false;
        }
        Err(err) => {
            notes.push(format!("landlock: could not probe: {err}"));
            return false;
        }
    };
    match (status.ruleset, status.landlock) {
        (RulesetStatus::NotEnforced, _)
        | (_, LandlockStatus::NotEnabled | LandlockStatus::NotImplemented) => {
            notes.push("landlock: not enabled in this kernel (needs Linux ≥ 5.13 with `landlock` in the `lsm=` boot list)".into());
            false
        }
        (_, LandlockStatus::Available { effective_abi, kernel_abi }) => {
            let abi = kernel_abi.unwrap_or(effective_abi as i32);
            let mut note = format!("landlock: ABI {abi}");
            if abi < 4 {
                note.push_str(" (no network rules: seccomp alone blocks the network)");
            }
            if abi < 6 {
                note.push_str(" (no signal scoping)");
            }
            notes.push(note);
            notes.push(if abi >= 4 {
                let mut note =
                    "landlock: a proxied network is a network namespace of its own with a relay to \
                     the proxy, as under bwrap; where user namespaces are refused, TCP connect to \
                     the proxy's port only, but on any address (a server of another host on that \
                     port is reachable too); TCP only (no UDP, so no DNS but the proxy's)"
                        .to_owned();
                if abi < 6 {
                    note.push_str("; there, abstract unix sockets of the host stay reachable");
                }
                note
            } else {
                "landlock: a proxied network is a network namespace of its own with a relay to \
                 the proxy where user namespaces allow, and off where they are refused (Landlock's \
                 TCP rules need ABI 4)"
                    .into()
            });
            let root = nix::unistd::geteuid().is_root();
            let userns = fs_err::read_to_string("/proc/sys/kernel/unprivileged_userns_clone")
                .map_or(true, |text| text.trim() != "0");
            notes.push(if root || userns {
                "landlock: the protected paths (.git, .codecoder, …) are read-only bind mounts in a private mount namespace".into()
            } else {
                "landlock: user namespaces are off: the protected paths (.git, .codecoder, …) are left out of the path grants (no new entries directly inside a writable root)".into()
            });
            true
        }
    }
}

/// A backend ready to confine commands under one policy. Built once (after [`probe`]) and shared
/// through `Confinement::Sandboxed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    policy: SandboxPolicy,
    backend: Backend,
    stage_exe: PathBuf,
    no_namespaces: bool,
}

impl Sandbox {
    /// A sandbox for `policy` on `backend`; `stage_exe` is an executable whose `main` calls
    /// [`crate::run_stage_if_requested`] first (the product passes `std::env::current_exe()`).
    pub fn new(policy: SandboxPolicy, backend: Backend, stage_exe: PathBuf) -> Self {
        Sandbox { policy, backend, stage_exe, no_namespaces: false }
    }

    /// The same sandbox, but the Landlock backend never uses a mount namespace (its fallback
    /// when namespaces are refused, forced; for tests and diagnosis).
    #[must_use]
    pub fn without_namespaces(mut self) -> Self {
        self.no_namespaces = true;
        self
    }

    /// The policy.
    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// The backend.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// The stage executable.
    pub fn stage_exe(&self) -> &Path {
        &self.stage_exe
    }

    /// The program, arguments and extra environment that run `program args` confined, in `cwd`.
    pub(crate) fn wrap(
        &self,
        program: &OsString,
        args: &[OsString],
        cwd: Option<&Path>,
    ) -> Wrapped {
        self.wrap_as(program, args, cwd, false)
    }

    /// As [`Sandbox::wrap`], for a command whose stdin is a PTY it must take as its controlling
    /// terminal: the stage always runs (under bubblewrap too, whose `--new-session` leaves the
    /// command without a terminal) and takes it right before the exec. `taken` in the result
    /// says whether the stage does it; otherwise the spawner must (Seatbelt).
    pub(crate) fn wrap_tty(
        &self,
        program: &OsString,
        args: &[OsString],
        cwd: Option<&Path>,
    ) -> (Wrapped, bool) {
        let taken = !matches!(self.backend, Backend::Seatbelt(_));
        (self.wrap_as(program, args, cwd, true), taken)
    }

    /// `GIT_SSH_COMMAND` for a proxied command: ssh through the stage's SOCKS5 connect mode,
    /// since `ALL_PROXY` does not reach ssh (left out where the command's own environment names
    /// an ssh command: see `command_for`).
    fn git_ssh_var(&self) -> (OsString, OsString) {
        (
            codecoder_protocol::env::GIT_SSH_COMMAND.into(),
            crate::socks::git_ssh_command(&self.stage_exe).into(),
        )
    }

    fn wrap_as(
        &self,
        program: &OsString,
        args: &[OsString],
        cwd: Option<&Path>,
        tty: bool,
    ) -> Wrapped {
        let mut env_vars = vec![(env::CODECODER_SANDBOX.into(), self.backend.name().into())];
        let landlock = matches!(self.backend, Backend::Landlock);
        let mut relay = None;
        let mut proxy_port = None;
        let sockets = match (self.policy.network_mode(), &self.backend) {
            (NetworkMode::Full, _) => Sockets::Any,
            (NetworkMode::Proxied(proxy), Backend::Bwrap(_)) => {
                relay = Some(proxy.socket.clone());
                let address = std::net::SocketAddr::from(([127, 0, 0, 1], RELAY_PORT));
                env_vars.extend(proxy_vars(address));
                env_vars.push(self.git_ssh_var());
                Sockets::UnixAndTcp
            }
            // The stage gives the command a network namespace of its own with the relay when
            // it can make one (and points the variables there); otherwise a connect to the
            // proxy's TCP port only; otherwise the network is off.
            (NetworkMode::Proxied(proxy), Backend::Landlock)
                if proxy.tcp.is_some() || !self.no_namespaces =>
            {
                if !self.no_namespaces {
                    relay = Some(proxy.socket.clone());
                }
                proxy_port = proxy.tcp.map(|address| address.port());
                let relay_address = std::net::SocketAddr::from(([127, 0, 0, 1], RELAY_PORT));
                env_vars.extend(proxy_vars(proxy.tcp.unwrap_or(relay_address)));
                env_vars.push(self.git_ssh_var());
                Sockets::UnixAndTcp
            }
            (NetworkMode::Off | NetworkMode::Proxied(_), _) => {
                env_vars.push((env::CODECODER_SANDBOX_NETWORK_DISABLED.into(), "1".into()));
                Sockets::Unix
            }
        };
        let mut command = vec![program.clone()];
        command.extend(args.iter().cloned());
        let stage = StageArgs {
            landlock,
            network: sockets,
            relay: relay.clone(),
            proxy_port,
            access: self.policy.access,
            writable_roots: self.policy.existing_writable_roots(),
            protected: if landlock { self.policy.protected_subpaths() } else { Vec::new() },
            hidden: if landlock { self.policy.existing_hidden_paths() } else { Vec::new() },
            no_namespaces: self.no_namespaces,
            tty,
            command,
        };
        let mut stage_argv = vec![self.stage_exe.clone().into_os_string(), STAGE_MARKER.into()];
        stage_argv.extend(stage.encode());
        match &self.backend {
            Backend::Landlock => {
                let mut stage_argv = stage_argv.into_iter();
                let program = stage_argv.next().unwrap_or_default();
                Wrapped { program, args: stage_argv.collect(), env: env_vars, keep: None }
            }
            Backend::Bwrap(bwrap) => {
                let mut argv = bwrap_args(&self.policy, cwd);
                // bwrap itself installs the filter (after PR_SET_NO_NEW_PRIVS, right before it
                // execs the command) when handed the compiled program on a descriptor: that
                // saves exec'ing the stage, a third of bwrap's added time. Without the
                // descriptor (pipe creation failed), the stage does it.
                // A terminal is taken by the stage, so a PTY session always goes through it; so
                // does a proxied network, whose relay the stage starts.
                let fd = if tty || relay.is_some() { None } else { seccomp_fd(sockets) };
                match fd {
                    Some(fd) => {
                        argv.push("--seccomp".into());
                        argv.push(std::os::fd::AsRawFd::as_raw_fd(&fd).to_string().into());
                        argv.push("--".into());
                        argv.push(program.clone());
                        argv.extend(args.iter().cloned());
                        Wrapped {
                            program: bwrap.clone().into_os_string(),
                            args: argv,
                            env: env_vars,
                            keep: Some(fd),
                        }
                    }
                    None => {
                        argv.push("--".into());
                        argv.extend(stage_argv);
                        Wrapped {
                            program: bwrap.clone().into_os_string(),
                            args: argv,
                            env: env_vars,
                            keep: None,
                        }
                    }
                }
            }
            Backend::Seatbelt(sandbox_exec) => {
                let mut argv: Vec<OsString> =
                    vec!["-p".into(), crate::seatbelt_profile(&self.policy).into(), "--".into()];
                argv.push(program.clone());
                argv.extend(args.iter().cloned());
                Wrapped {
                    program: sandbox_exec.clone().into_os_string(),
                    args: argv,
                    env: env_vars,
                    keep: None,
                }
            }
        }
    }
}

/// [`proxy_environment`] as the wrapped command's variables.
fn proxy_vars(address: std::net::SocketAddr) -> impl Iterator<Item = (OsString, OsString)> {
    proxy_environment(address).into_iter().map(|(name, value)| (name.into(), value.into()))
}

/// A command wrapped for its backend.
pub(crate) struct Wrapped {
    /// What to execute.
    pub(crate) program: OsString,
    /// Its arguments.
    pub(crate) args: Vec<OsString>,
    /// Variables the confined command sees.
    pub(crate) env: Vec<(OsString, OsString)>,
    /// A descriptor the child inherits (the seccomp program for bwrap); the parent closes it
    /// once the child is started.
    pub(crate) keep: Option<std::os::fd::OwnedFd>,
}

/// The compiled seccomp program (raw `sock_filter` array, as bwrap's `--seccomp FD` reads it)
/// for `sockets`, compiled once per process.
#[cfg(target_os = "linux")]
fn seccomp_bytes(sockets: Sockets) -> Option<&'static [u8]> {
    static PROGRAMS: OnceLock<[Option<Vec<u8>>; 3]> = OnceLock::new();
    let programs = PROGRAMS.get_or_init(|| {
        Sockets::ALL.map(|sockets| {
            let program = crate::seccomp::build(sockets).ok()?;
            let mut bytes = Vec::with_capacity(program.len() * 8);
            for filter in program {
                bytes.extend_from_slice(&filter.code.to_ne_bytes());
                bytes.push(filter.jt);
                bytes.push(filter.jf);
                bytes.extend_from_slice(&filter.k.to_ne_bytes());
            }
            Some(bytes)
        })
    });
    programs[sockets.index()].as_deref()
}

#[cfg(not(target_os = "linux"))]
fn seccomp_bytes(_sockets: Sockets) -> Option<&'static [u8]> {
    None
}

/// A pipe's read end holding the seccomp program, inheritable by the next child. The program
/// is a few hundred bytes, far below a pipe's buffer, so writing it never blocks.
fn seccomp_fd(sockets: Sockets) -> Option<std::os::fd::OwnedFd> {
    use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
    let bytes = seccomp_bytes(sockets)?;
    let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).ok()?;
    let written = nix::unistd::write(&write, bytes).ok()?;
    if written != bytes.len() {
        return None;
    }
    drop(write);
    fcntl(&read, FcntlArg::F_SETFD(FdFlag::empty())).ok()?;
    Some(read)
}

/// The regular files in the directory of a proxy's `socket` (never its sockets).
fn proxy_files(socket: &Path) -> Vec<std::path::PathBuf> {
    let Some(dir) = socket.parent() else { return Vec::new() };
    let Ok(entries) = fs_err::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<std::path::PathBuf> = entries
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_file()))
        .map(|entry| entry.path())
        .collect();
    files.sort();
    files
}

/// The bubblewrap options (before `--`) for `policy`: read-only `/` (or read-write under full
/// access), fresh `/dev` and `/proc`, the writable roots bound read-write, the protected
/// subpaths re-bound read-only, hidden directories covered by an empty mode-000 tmpfs and hidden
/// files by an empty mode-000 file, no network unless allowed (a proxied network: loopback only,
/// with the proxy's socket bound in), capabilities dropped, its own pid namespace and session,
/// killed with its parent.
pub(crate) fn bwrap_args(policy: &SandboxPolicy, cwd: Option<&Path>) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    let mut push = |items: &[&std::ffi::OsStr]| args.extend(items.iter().map(OsString::from));
    match policy.access {
        FsAccess::FullAccess => push(&["--bind".as_ref(), "/".as_ref(), "/".as_ref()]),
        FsAccess::ReadOnly | FsAccess::WorkspaceWrite => {
            push(&["--ro-bind".as_ref(), "/".as_ref(), "/".as_ref()]);
        }
    }
    push(&["--dev".as_ref(), "/dev".as_ref(), "--proc".as_ref(), "/proc".as_ref()]);
    for root in policy.existing_writable_roots() {
        push(&["--bind".as_ref(), root.as_os_str(), root.as_os_str()]);
    }
    for path in policy.protected_subpaths() {
        push(&["--ro-bind".as_ref(), path.as_os_str(), path.as_os_str()]);
    }
    let null_fd = devnull_fd();
    for path in policy.existing_hidden_paths() {
        if path.is_dir() {
            push(&["--perms".as_ref(), "0000".as_ref(), "--tmpfs".as_ref(), path.as_os_str()]);
            push(&["--remount-ro".as_ref(), path.as_os_str()]);
        } else if let Some(fd) = &null_fd {
            let fd = OsString::from(fd);
            push(&["--perms".as_ref(), "0000".as_ref(), "--ro-bind-data".as_ref(), &fd]);
            push(&[path.as_os_str()]);
        } else {
            push(&["--ro-bind".as_ref(), "/dev/null".as_ref(), path.as_os_str()]);
        }
    }
    // Every proxy's sockets are covered (another session's proxy may allow what this one does
    // not); a proxied command's own socket is bound back below, before the cover is made
    // read-only.
    let socket_root = crate::proxy_socket_root();
    let socket_root = socket_root.is_dir().then_some(socket_root);
    if let Some(root) = &socket_root {
        push(&["--tmpfs".as_ref(), root.as_os_str()]);
    }
    match policy.network_mode() {
        NetworkMode::Full => {}
        NetworkMode::Off => push(&["--unshare-net".as_ref()]),
        NetworkMode::Proxied(proxy) => {
            push(&["--unshare-net".as_ref()]);
            // Bound last, so no hidden path's mask covers it; a socket that is gone leaves the
            // relay nothing to reach, which the relay's clients see as a closed connection.
            // No name service but the proxy's: the host's resolver sockets are covered.
            for dir in existing_dirs(&NAME_SERVICE_DIRS) {
                push(&["--tmpfs".as_ref(), dir.as_os_str(), "--remount-ro".as_ref()]);
                push(&[dir.as_os_str()]);
            }
            if proxy.socket.exists() {
                let socket = proxy.socket.as_os_str();
                push(&["--bind".as_ref(), socket, socket]);
            }
            // The proxy's regular files beside its socket (the certificate of an inspecting
            // proxy's CA and the bundle holding it, which the command's variables name),
            // read-only.
            for file in proxy_files(&proxy.socket) {
                push(&["--ro-bind".as_ref(), file.as_os_str(), file.as_os_str()]);
            }
        }
    }
    if let Some(root) = &socket_root {
        push(&["--remount-ro".as_ref(), root.as_os_str()]);
    }
    if !nix::unistd::geteuid().is_root() {
        push(&["--unshare-user".as_ref()]);
    }
    push(&[
        "--unshare-pid".as_ref(),
        "--unshare-ipc".as_ref(),
        "--cap-drop".as_ref(),
        "ALL".as_ref(),
        "--die-with-parent".as_ref(),
        "--new-session".as_ref(),
    ]);
    if let Some(cwd) = cwd {
        push(&["--chdir".as_ref(), cwd.as_os_str()]);
    }
    args
}

/// A read-only descriptor of `/dev/null` without close-on-exec, opened once and kept for the
/// life of the process: bwrap's `--ro-bind-data FD` reads it (to its immediate end) to make the
/// empty file that covers a hidden file. Every child inherits it, which is harmless: it can only
/// read nothing. `None` when `/dev/null` cannot be opened; hidden files are then covered with
/// `/dev/null` itself (readable, but empty).
fn devnull_fd() -> Option<String> {
    use std::os::fd::{AsRawFd, OwnedFd};

    static FD: OnceLock<Option<OwnedFd>> = OnceLock::new();
    let fd = FD.get_or_init(|| {
        nix::fcntl::open("/dev/null", nix::fcntl::OFlag::O_RDONLY, nix::sys::stat::Mode::empty())
            .ok()
    });
    fd.as_ref().map(|fd| fd.as_raw_fd().to_string())
}

#[cfg(test)]
mod tests;
